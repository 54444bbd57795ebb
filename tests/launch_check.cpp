// SPDX-License-Identifier: LGPL-2.1-or-later
// gst-launch-check: a stand-in for gst-launch-1.0 under which the commands
// of the README and docs/*.md and the scripts in pipelines/ run in tests
// (tests/test_readme.sh puts it on PATH as gst-launch-1.0). It takes the
// same command line and runs the pipeline the same way, with these
// differences, each announced on stderr with "check:":
//  - a pipeline that would not end by itself (a live source, a test source
//    without num-buffers) is stopped once every cudagray in it has converted
//    CUDAGRAY_CHECK_FRAMES frames (default 30), with EOS first under -e;
//    one without cudagray runs until SIGINT/SIGTERM (a background sender);
//  - a hardware decoder this machine lacks (nvh264dec, nvh265dec, nvjpegdec) is
//    replaced by a software one; a display sink without a display by
//    fakesink sync=true;
//  - a pipeline reading from a network host other than this one, or from a
//    camera that is not there, is parsed (every element must exist) but not
//    run;
//  - once playing it prints the pipeline's latency, and at the end every
//    sink's rendered and dropped buffers, QoS messages, and each cudagray's
//    frames.
// Exit status: 0 at EOS or when stopped as above, 1 after an error, a parse
// failure or CUDAGRAY_CHECK_TIMEOUT seconds (default 120) without an end.
#include <glib-unix.h>
#include <gst/base/gstbasesink.h>
#include <gst/base/gstbasesrc.h>
#include <gst/gst.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool has_factory(const char *name) {
  GstElementFactory *f = gst_element_factory_find(name);
  if (f) gst_object_unref(f);
  return f != nullptr;
}

// Hardware decoders and the software decoders to use when they are absent.
const std::vector<std::pair<std::string, std::vector<const char *>>> kHardware = {
    {"nvh264dec", {"avdec_h264", "openh264dec"}},
    {"nvh265dec", {"avdec_h265", "libde265dec"}},
    {"nvjpegdec", {"jpegdec"}},
    {"nvv4l2decoder", {"decodebin"}},
};
const std::vector<std::string> kDisplaySinks = {"autovideosink", "xvimagesink", "ximagesink",
                                                "glimagesink",   "waylandsink", "gtksink"};

std::vector<std::string> substitute(const std::vector<std::string> &args) {
  const bool display = std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY");
  std::vector<std::string> out;
  for (const std::string &a : args) {
    bool done = false;
    for (const auto &[hw, soft] : kHardware) {
      if (a != hw || has_factory(hw.c_str())) continue;
      for (const char *s : soft)
        if (has_factory(s)) {
          std::fprintf(
              stderr,
              "check: %s is not available here (it needs an NVIDIA GPU and driver); using %s\n",
              hw.c_str(), s);
          out.push_back(s);
          done = true;
          break;
        }
    }
    if (!done && !display)
      for (const std::string &sink : kDisplaySinks)
        if (a == sink) {
          std::fprintf(stderr, "check: no display; %s replaced by fakesink sync=true\n", a.c_str());
          out.push_back("fakesink");
          out.push_back("sync=true");
          done = true;
          break;
        }
    if (!done) out.push_back(a);
  }
  return out;
}

std::vector<GstElement *> elements_of(GstElement *pipeline) {
  std::vector<GstElement *> all;
  GstIterator *it = gst_bin_iterate_recurse(GST_BIN(pipeline));
  GValue item = G_VALUE_INIT;
  while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
    all.push_back(GST_ELEMENT(g_value_get_object(&item)));  // the pipeline keeps them alive
    g_value_reset(&item);
  }
  g_value_unset(&item);
  gst_iterator_free(it);
  return all;
}

std::string factory_name(GstElement *e) {
  GstElementFactory *f = gst_element_get_factory(e);
  return f ? GST_OBJECT_NAME(f) : "";
}

std::string string_property(GstElement *e, const char *name) {
  if (!g_object_class_find_property(G_OBJECT_GET_CLASS(e), name)) return "";
  gchar *v = nullptr;
  g_object_get(e, name, &v, nullptr);
  std::string s = v ? v : "";
  g_free(v);
  return s;
}

bool local_host(const std::string &host) {
  return host.empty() || host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1" ||
         host == "[::1]" || host == "0.0.0.0";
}

// Why this pipeline cannot run here, or "" when it can.
std::string cannot_run(GstElement *pipeline) {
  for (GstElement *e : elements_of(pipeline)) {
    for (const char *prop : {"location", "uri"}) {
      const std::string v = string_property(e, prop);
      const size_t scheme = v.find("://");
      if (scheme == std::string::npos || v.rfind("file://", 0) == 0) continue;
      std::string host = v.substr(scheme + 3);
      host = host.substr(0, host.find_first_of("/:"));
      const size_t at = host.find('@');
      if (at != std::string::npos) host = host.substr(at + 1);
      if (!local_host(host)) return "the network source " + v + " cannot be reached from tests";
    }
    if (factory_name(e) == "udpsink" && !local_host(string_property(e, "host")))
      return "udpsink sends to " + string_property(e, "host") + ", not this machine";
    if (factory_name(e) == "v4l2src") {
      const std::string device = string_property(e, "device");
      struct stat st;
      if (stat(device.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) ||
          access(device.c_str(), R_OK) != 0)
        return "no camera at " + device;
    }
  }
  return "";
}

bool is_source(GstElement *e) { return e->numsinkpads == 0 && e->numsrcpads > 0; }

// Whether some source would go on for ever: live, or a test source without num-buffers.
bool endless(GstElement *pipeline) {
  for (GstElement *e : elements_of(pipeline)) {
    if (!is_source(e) || !GST_IS_BASE_SRC(e)) continue;
    if (gst_base_src_is_live(GST_BASE_SRC(e))) return true;
    const std::string f = factory_name(e);
    if (f == "videotestsrc" || f == "audiotestsrc") {
      gint n = 0;
      g_object_get(e, "num-buffers", &n, nullptr);
      if (n < 0) return true;
    }
  }
  return false;
}

guint64 cudagray_frames(GstElement *e) {
  GstStructure *stats = nullptr;
  g_object_get(e, "stats", &stats, nullptr);
  guint64 frames = 0;
  if (stats) gst_structure_get_uint64(stats, "frames", &frames);
  if (stats) gst_structure_free(stats);
  return frames;
}

struct Run {
  GstElement *pipeline;
  GMainLoop *loop;
  bool eos_on_shutdown = false;
  bool endless = false;
  bool stopping = false;
  bool latency_printed = false;
  int status = 0;
  int qos = 0;
  guint64 frames_wanted = 30;
  std::vector<GstElement *> grays;
};

void stop(Run &run, const char *why) {
  if (run.stopping) return;
  run.stopping = true;
  std::fprintf(stderr, "check: stopping (%s)%s\n", why, run.eos_on_shutdown ? ": sending EOS" : "");
  if (run.eos_on_shutdown)
    gst_element_send_event(run.pipeline, gst_event_new_eos());
  else
    g_main_loop_quit(run.loop);
}

void print_latency(Run &run) {
  GstQuery *q = gst_query_new_latency();
  if (gst_element_query(run.pipeline, q)) {
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency(q, &live, &min, &max);
    std::printf("check: latency live=%d min=%" G_GUINT64_FORMAT " max=%s\n", live, min,
                GST_CLOCK_TIME_IS_VALID(max) ? std::to_string(max).c_str() : "none");
  } else {
    std::printf("check: latency query failed\n");
  }
  gst_query_unref(q);
}

gboolean on_message(GstBus *, GstMessage *msg, gpointer data) {
  Run &run = *static_cast<Run *>(data);
  switch (GST_MESSAGE_TYPE(msg)) {
    case GST_MESSAGE_ERROR:
    case GST_MESSAGE_WARNING: {
      const bool error = GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR;
      GError *err = nullptr;
      gchar *debug = nullptr;
      if (error)
        gst_message_parse_error(msg, &err, &debug);
      else
        gst_message_parse_warning(msg, &err, &debug);
      gchar *path = gst_object_get_path_string(msg->src);
      std::fprintf(stderr, "%s: from element %s: %s\n%s\n", error ? "ERROR" : "WARNING", path,
                   err->message, debug ? debug : "");
      g_free(path);
      g_free(debug);
      g_error_free(err);
      if (error) {
        run.status = 1;
        g_main_loop_quit(run.loop);
      }
      break;
    }
    case GST_MESSAGE_EOS:
      std::printf("Got EOS from element \"%s\".\n", GST_OBJECT_NAME(msg->src));
      g_main_loop_quit(run.loop);
      break;
    case GST_MESSAGE_QOS: ++run.qos; break;
    case GST_MESSAGE_LATENCY: gst_bin_recalculate_latency(GST_BIN(run.pipeline)); break;
    case GST_MESSAGE_STATE_CHANGED:
      if (GST_MESSAGE_SRC(msg) == GST_OBJECT(run.pipeline) && !run.latency_printed) {
        GstState state;
        gst_message_parse_state_changed(msg, nullptr, &state, nullptr);
        if (state == GST_STATE_PLAYING) {
          run.latency_printed = true;
          print_latency(run);
        }
      }
      break;
    default: break;
  }
  return G_SOURCE_CONTINUE;
}

gboolean poll_frames(gpointer data) {
  Run &run = *static_cast<Run *>(data);
  if (!run.endless || run.grays.empty() || run.stopping) return G_SOURCE_CONTINUE;
  for (GstElement *g : run.grays)
    if (cudagray_frames(g) < run.frames_wanted) return G_SOURCE_CONTINUE;
  stop(run, (std::to_string(run.frames_wanted) + " frames converted").c_str());
  return G_SOURCE_CONTINUE;
}

gboolean on_signal(gpointer data) {
  stop(*static_cast<Run *>(data), "signal");
  return G_SOURCE_CONTINUE;
}

gboolean on_timeout(gpointer data) {
  Run &run = *static_cast<Run *>(data);
  std::fprintf(stderr, "check: no end after CUDAGRAY_CHECK_TIMEOUT seconds\n");
  run.status = 1;
  g_main_loop_quit(run.loop);
  return G_SOURCE_REMOVE;
}

void print_summary(Run &run) {
  for (GstElement *e : elements_of(run.pipeline)) {
    if (GST_IS_BASE_SINK(e)) {
      GstStructure *stats = nullptr;
      g_object_get(e, "stats", &stats, nullptr);
      guint64 rendered = 0, dropped = 0;
      gst_structure_get_uint64(stats, "rendered", &rendered);
      gst_structure_get_uint64(stats, "dropped", &dropped);
      gst_structure_free(stats);
      std::printf("check: sink %s rendered %" G_GUINT64_FORMAT " dropped %" G_GUINT64_FORMAT "\n",
                  GST_OBJECT_NAME(e), rendered, dropped);
    }
  }
  for (GstElement *g : run.grays)
    std::printf("check: cudagray %s frames %" G_GUINT64_FORMAT "\n", GST_OBJECT_NAME(g),
                cudagray_frames(g));
  std::printf("check: qos messages %d\n", run.qos);
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  Run run{};
  std::vector<std::string> args;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i)
    if (!std::strcmp(argv[i], "-e") || !std::strcmp(argv[i], "--eos-on-shutdown"))
      run.eos_on_shutdown = true;
  for (; i < argc; ++i) args.push_back(argv[i]);
  args = substitute(args);
  std::vector<const char *> argvn;
  for (const std::string &a : args) argvn.push_back(a.c_str());
  argvn.push_back(nullptr);

  GError *error = nullptr;
  GstElement *parsed =
      gst_parse_launchv_full(argvn.data(), nullptr, GST_PARSE_FLAG_FATAL_ERRORS, &error);
  if (!parsed) {
    std::fprintf(stderr, "ERROR: pipeline could not be constructed: %s.\n",
                 error ? error->message : "?");
    g_clear_error(&error);
    return 1;
  }
  run.pipeline = parsed;
  if (!GST_IS_PIPELINE(parsed)) {
    run.pipeline = gst_pipeline_new(nullptr);
    gst_bin_add(GST_BIN(run.pipeline), parsed);
  }
  const std::string why_not = cannot_run(run.pipeline);
  if (!why_not.empty()) {
    std::printf("check: parsed, not run: %s\n", why_not.c_str());
    gst_object_unref(run.pipeline);
    return 0;
  }
  for (GstElement *e : elements_of(run.pipeline))
    if (factory_name(e) == "cudagray") run.grays.push_back(e);
  run.endless = endless(run.pipeline);
  if (const char *n = std::getenv("CUDAGRAY_CHECK_FRAMES"))
    run.frames_wanted = std::strtoull(n, nullptr, 10);
  const char *t = std::getenv("CUDAGRAY_CHECK_TIMEOUT");
  const guint timeout_s = t ? guint(std::atoi(t)) : 120;

  run.loop = g_main_loop_new(nullptr, FALSE);
  GstBus *bus = gst_element_get_bus(run.pipeline);
  gst_bus_add_watch(bus, on_message, &run);
  g_timeout_add(20, poll_frames, &run);
  g_timeout_add_seconds(timeout_s, on_timeout, &run);
  g_unix_signal_add(SIGINT, on_signal, &run);
  g_unix_signal_add(SIGTERM, on_signal, &run);

  std::printf("Setting pipeline to PLAYING ...\n");
  if (gst_element_set_state(run.pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    std::fprintf(stderr, "ERROR: pipeline doesn't want to play.\n");
    run.status = 1;
    // the error message on the bus says why
    if (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
      on_message(bus, msg, &run);
      gst_message_unref(msg);
    }
  } else {
    g_main_loop_run(run.loop);
  }
  print_summary(run);
  gst_element_set_state(run.pipeline, GST_STATE_NULL);
  gst_bus_remove_watch(bus);
  gst_object_unref(bus);
  gst_object_unref(run.pipeline);
  std::printf("check: exit %d\n", run.status);
  return run.status;
}
