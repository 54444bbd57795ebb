// SPDX-License-Identifier: LGPL-2.1-or-later
// An application hands its own RGB frames to cudagray and reads the GRAY8
// frames back: appsrc → cudagray → appsink.
//
//   appsrc-roundtrip [key=value ...]
//   e.g. appsrc-roundtrip backend=cpu matrix=bt709
//
// key=value pairs are cudagray properties. The program makes 30 frames of
// 640x360 RGB, converts them, checks every gray pixel against the formula in
// docs/formats.md (computed here from the weights the element reports, not by
// calling cudagray's code), prints the element's `stats` and exits 0 when
// every pixel matches, 1 otherwise.
//
// Build it outside this project with (one line):
//   g++ -std=c++17 appsrc_roundtrip.cpp -o appsrc-roundtrip
//       $(pkg-config --cflags --libs gstreamer-app-1.0 gstreamer-video-1.0)
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

constexpr int kWidth = 640, kHeight = 360, kFrames = 30, kFps = 30;

// The input picture: red grows left to right, green top to bottom, blue
// changes with the frame number, so every frame is different.
void draw_frame(uint8_t *rgb, int index) {
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      uint8_t *p = rgb + (size_t(y) * kWidth + x) * 3;
      p[0] = uint8_t(x * 255 / (kWidth - 1));
      p[1] = uint8_t(y * 255 / (kHeight - 1));
      p[2] = uint8_t(x + y + 8 * index);
    }
}

// appsrc asks for data from its streaming thread: give it the next frame,
// or end the stream.
void need_data(GstAppSrc *src, guint, gpointer user_data) {
  int &next = *static_cast<int *>(user_data);
  if (next == kFrames) {
    gst_app_src_end_of_stream(src);
    return;
  }
  GstBuffer *buf = gst_buffer_new_allocate(nullptr, size_t(kWidth) * kHeight * 3, nullptr);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  draw_frame(map.data, next);
  gst_buffer_unmap(buf, &map);
  GST_BUFFER_PTS(buf) = gst_util_uint64_scale(next, GST_SECOND, kFps);
  GST_BUFFER_DURATION(buf) = gst_util_uint64_scale(1, GST_SECOND, kFps);
  ++next;
  gst_app_src_push_buffer(src, buf);  // takes the buffer
}

// The Q16 weights of docs/formats.md's formula for the coefficients in use.
struct Weights {
  long r, g, b;
};
Weights weights_of(GstElement *gray) {
  gchar *text = nullptr;
  gint matrix = 0;
  g_object_get(gray, "weights", &text, "matrix", &matrix, nullptr);
  double kr = 0, kg = 0, kb = 0;
  std::sscanf(text, "%lf,%lf,%lf", &kr, &kg, &kb);
  g_free(text);
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(gray), "matrix");
  GEnumClass *matrices = G_ENUM_CLASS(g_type_class_ref(spec->value_type));
  const bool custom = std::strcmp(g_enum_get_value(matrices, matrix)->value_nick, "custom") == 0;
  g_type_class_unref(matrices);
  Weights w{std::lround(kr * 65536), std::lround(kg * 65536), std::lround(kb * 65536)};
  if (!custom) w.g = 65536 - w.r - w.b;  // the standard matrices keep white at 255
  return w;
}

// Compares a GRAY8 frame with the formula applied to the input frame;
// returns the number of pixels that differ and prints the first one.
long check_frame(GstSample *sample, int index, const Weights &w, const uint8_t *rgb) {
  GstVideoInfo info;
  GstVideoFrame frame;
  if (!gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) ||
      !gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
    std::fprintf(stderr, "frame %d: cannot map the output\n", index);
    return 1;
  }
  const auto *gray = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);  // rows may be padded
  long wrong = 0;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      const uint8_t *p = rgb + (size_t(y) * kWidth + x) * 3;
      const long expected = std::min(255L, (w.r * p[0] + w.g * p[1] + w.b * p[2] + 32768) >> 16);
      const int got = gray[size_t(y) * stride + x];
      if (got != expected && wrong++ == 0)
        std::fprintf(stderr, "frame %d pixel (%d,%d) RGB %d,%d,%d: gray %d, expected %ld\n", index,
                     x, y, p[0], p[1], p[2], got, expected);
    }
  gst_video_frame_unmap(&frame);
  return wrong;
}

// Prints the warnings on the bus; returns false after printing an error.
bool drain_bus(GstBus *bus) {
  while (GstMessage *msg =
             gst_bus_pop_filtered(bus, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
    GError *err = nullptr;
    gchar *debug = nullptr;
    const bool error = GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR;
    if (error)
      gst_message_parse_error(msg, &err, &debug);
    else
      gst_message_parse_warning(msg, &err, &debug);
    std::fprintf(stderr, "%s from %s: %s\n", error ? "error" : "warning", GST_OBJECT_NAME(msg->src),
                 err->message);
    if (debug) std::fprintf(stderr, "  (%s)\n", debug);
    g_error_free(err);
    g_free(debug);
    gst_message_unref(msg);
    if (error) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);

  GstElement *pipeline = gst_pipeline_new("roundtrip");
  GstElement *src = gst_element_factory_make("appsrc", "src");
  GstElement *gray = gst_element_factory_make("cudagray", "gray");
  GstElement *sink = gst_element_factory_make("appsink", "sink");
  if (!gray) {
    std::fprintf(stderr, "no cudagray element: install the plugin or set GST_PLUGIN_PATH\n");
    return 1;
  }
  for (int i = 1; i < argc; ++i) {  // key=value → cudagray property
    const char *eq = std::strchr(argv[i], '=');
    if (!eq) {
      std::fprintf(stderr, "usage: %s [key=value ...]\n", argv[0]);
      return 2;
    }
    const std::string key(argv[i], size_t(eq - argv[i]));
    if (!g_object_class_find_property(G_OBJECT_GET_CLASS(gray), key.c_str())) {
      std::fprintf(stderr, "cudagray has no property %s\n", key.c_str());
      return 2;
    }
    gst_util_set_object_arg(G_OBJECT(gray), key.c_str(), eq + 1);
  }

  GstCaps *caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "RGB", "width",
                                      G_TYPE_INT, kWidth, "height", G_TYPE_INT, kHeight,
                                      "framerate", GST_TYPE_FRACTION, kFps, 1, nullptr);
  g_object_set(src, "caps", caps, "format", GST_FORMAT_TIME, nullptr);
  gst_caps_unref(caps);
  int next_frame = 0;
  GstAppSrcCallbacks callbacks = {};
  callbacks.need_data = need_data;
  gst_app_src_set_callbacks(GST_APP_SRC(src), &callbacks, &next_frame, nullptr);
  // Take every frame, as fast as it comes (no clock sync, no dropping).
  g_object_set(sink, "sync", FALSE, nullptr);

  gst_bin_add_many(GST_BIN(pipeline), src, gray, sink, nullptr);
  if (!gst_element_link_many(src, gray, sink, nullptr)) {
    std::fprintf(stderr, "cannot link appsrc ! cudagray ! appsink\n");
    return 1;
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  int status = 0;
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    drain_bus(bus);
    std::fprintf(stderr, "the pipeline does not start\n");
    status = 1;
  }

  const Weights w = weights_of(gray);
  std::printf("weights in use (Q16): R %ld, G %ld, B %ld\n", w.r, w.g, w.b);
  uint8_t *rgb = new uint8_t[size_t(kWidth) * kHeight * 3];
  int frames = 0;
  long wrong = 0;
  while (status == 0) {
    GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
    if (!drain_bus(bus)) status = 1;
    if (!sample) {
      if (!gst_app_sink_is_eos(GST_APP_SINK(sink)) && status == 0) {
        std::fprintf(stderr, "no frame for 10 s\n");
        status = 1;
      }
      break;
    }
    draw_frame(rgb, frames);  // the same picture again, to compare with
    wrong += check_frame(sample, frames, w, rgb);
    ++frames;
    gst_sample_unref(sample);
  }
  delete[] rgb;

  GstStructure *stats = nullptr;
  g_object_get(gray, "stats", &stats, nullptr);
  gchar *text = gst_structure_to_string(stats);
  std::printf("stats: %s\n", text);
  g_free(text);
  gst_structure_free(stats);

  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  if (status == 0 && frames != kFrames) {
    std::fprintf(stderr, "got %d frames of %d\n", frames, kFrames);
    status = 1;
  }
  if (status == 0 && wrong > 0) {
    std::fprintf(stderr, "%ld pixels differ from the formula\n", wrong);
    status = 1;
  }
  if (status == 0)
    std::printf("%d frames of %dx%d RGB converted; all %ld gray pixels match the formula\n", frames,
                kWidth, kHeight, long(frames) * kWidth * kHeight);
  return status;
}
