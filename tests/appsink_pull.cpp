// SPDX-License-Identifier: LGPL-2.1-or-later
// appsink's own cost for tests/python_perf.py: runs a gst-launch-1.0
// description ending in `appsink name=sink`, pulls every sample and maps its
// frame as the Python module does, and prints the frame count.
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdio>

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  if (argc != 2) {
    fprintf(stderr, "usage: %s 'DESCRIPTION ! appsink name=sink'\n", argv[0]);
    return 2;
  }
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch(argv[1], &error);
  if (!pipeline) {
    fprintf(stderr, "%s\n", error->message);
    return 2;
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  guint64 frames = 0;
  while (GstSample *sample = gst_app_sink_pull_sample(GST_APP_SINK(sink))) {
    GstVideoInfo info;
    GstVideoFrame frame;
    if (gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) &&
        gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
      frames++;
      gst_video_frame_unmap(&frame);
    }
    gst_sample_unref(sample);
  }
  GstMessage *failed = gst_bus_pop_filtered(GST_ELEMENT_BUS(pipeline), GST_MESSAGE_ERROR);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  printf("%" G_GUINT64_FORMAT "\n", frames);
  const int status = failed ? 1 : 0;
  if (failed) gst_message_unref(failed);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return status;
}
