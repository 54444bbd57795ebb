// SPDX-License-Identifier: LGPL-2.1-or-later
// A pipeline from a gst-launch-1.0 style description, run to its end with
// the bus watched: what an application does to embed cudagray in a pipeline
// it describes as text.
//
//   cudagray-launch [PIPELINE DESCRIPTION]
//   e.g. cudagray-launch "filesrc location=in.mp4 ! decodebin ! videoconvert ! cudagray ! fakesink"
//
// Without a description it runs a short test pattern through cudagray.
// Exit status: 0 at end of stream, 1 after an error message on the bus (the
// error, the element that posted it and its debug text are printed), 2 when
// the description does not parse (a typo, or an element that is not
// installed). Ctrl-C sends end-of-stream, so files being written are
// finished. Warnings are printed and the pipeline goes on. At the end the
// `stats` of every cudagray element are printed.
#include <glib-unix.h>
#include <gst/gst.h>

#include <csignal>
#include <cstdio>
#include <string>

namespace {

const char *kDefault =
    "videotestsrc num-buffers=60 ! video/x-raw,width=1280,height=720 ! videoconvert ! "
    "cudagray ! videoconvert ! fakesink";

struct App {
  GMainLoop *loop;
  GstElement *pipeline;
  int status = 0;
};

void print_message(GstMessage *msg, const char *kind) {
  GError *err = nullptr;
  gchar *debug = nullptr;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR)
    gst_message_parse_error(msg, &err, &debug);
  else
    gst_message_parse_warning(msg, &err, &debug);
  gchar *path = gst_object_get_path_string(msg->src);
  std::fprintf(stderr, "%s from %s: %s\n", kind, path, err->message);
  if (debug) std::fprintf(stderr, "  debug: %s\n", debug);
  g_free(path);
  g_free(debug);
  g_error_free(err);
}

gboolean on_message(GstBus *, GstMessage *msg, gpointer data) {
  App &app = *static_cast<App *>(data);
  switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
      print_message(msg, "error");
      app.status = 1;
      g_main_loop_quit(app.loop);
      break;
    case GST_MESSAGE_WARNING: print_message(msg, "warning"); break;
    case GST_MESSAGE_EOS:
      std::printf("end of stream\n");
      g_main_loop_quit(app.loop);
      break;
    case GST_MESSAGE_LATENCY:
      // A live pipeline's latency changed (a live source, or cudagray's frames
      // in flight): let the pipeline redistribute it, as gst-launch-1.0 does.
      gst_bin_recalculate_latency(GST_BIN(app.pipeline));
      break;
    default: break;
  }
  return G_SOURCE_CONTINUE;
}

gboolean on_interrupt(gpointer data) {
  App &app = *static_cast<App *>(data);
  std::fprintf(stderr, "interrupted: sending end-of-stream\n");
  gst_element_send_event(app.pipeline, gst_event_new_eos());
  return G_SOURCE_CONTINUE;  // a second Ctrl-C gets here too; EOS is still on its way
}

void print_stats(GstElement *pipeline) {
  GstIterator *it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    GstElement *e = GST_ELEMENT(g_value_get_object(&item));
    GstElementFactory *f = gst_element_get_factory(e);
    if (f && g_str_equal(GST_OBJECT_NAME(f), "cudagray")) {
      GstStructure *stats = nullptr;
      g_object_get(e, "stats", &stats, nullptr);
      gchar *text = gst_structure_to_string(stats);
      std::printf("%s stats: %s\n", GST_OBJECT_NAME(e), text);
      g_free(text);
      gst_structure_free(stats);
    }
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  std::string description;
  for (int i = 1; i < argc; ++i) description += std::string(i > 1 ? " " : "") + argv[i];
  if (description.empty()) description = kDefault;

  // FATAL_ERRORS: a missing element or property fails here rather than
  // giving back a pipeline with a hole in it.
  GError *error = nullptr;
  GstElement *parsed =
      gst_parse_launch_full(description.c_str(), nullptr, GST_PARSE_FLAG_FATAL_ERRORS, &error);
  if (!parsed) {
    std::fprintf(stderr, "cannot build the pipeline: %s\n", error->message);
    if (g_error_matches(error, GST_PARSE_ERROR, GST_PARSE_ERROR_NO_SUCH_ELEMENT))
      std::fprintf(stderr,
                   "  is the plugin installed? (for cudagray: GST_PLUGIN_PATH or meson install)\n");
    g_error_free(error);
    return 2;
  }
  // A description with one element gives that element; put it in a pipeline.
  GstElement *pipeline = parsed;
  if (!GST_IS_PIPELINE(parsed)) {
    pipeline = gst_pipeline_new(nullptr);
    gst_bin_add(GST_BIN(pipeline), parsed);
  }

  App app{g_main_loop_new(nullptr, FALSE), pipeline};
  GstBus *bus = gst_element_get_bus(pipeline);
  const guint watch = gst_bus_add_watch(bus, on_message, &app);
  const guint sigint = g_unix_signal_add(SIGINT, on_interrupt, &app);

  std::printf("running: %s\n", description.c_str());
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    // The element that failed has normally posted why on the bus.
    if (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
      print_message(msg, "error");
      gst_message_unref(msg);
    } else {
      std::fprintf(stderr, "error: the pipeline does not start\n");
    }
    app.status = 1;
  } else {
    g_main_loop_run(app.loop);
  }

  print_stats(pipeline);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  g_source_remove(sigint);
  g_source_remove(watch);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  g_main_loop_unref(app.loop);
  return app.status;
}
