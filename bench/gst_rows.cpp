// SPDX-License-Identifier: LGPL-2.1-or-later
// The rows measured through GStreamer pipelines (time_pipelines runs them):
// what each row feeds which element, and what it is compared with.
#include <gst/gst.h>

#include <algorithm>
#include <thread>

#include "bench_pipeline.h"

namespace bench {

namespace {

constexpr long kElementAhead = 24;     // frames pushed ahead of the sink (max-inflight is <= 16)
constexpr long kStreamAhead = 8;       // frames a stream keeps ahead of its sink when flat out
constexpr long kCpuAhead = 2;          // enough for a synchronous element never to wait
constexpr long kLatencySamples = 100;  // lone frames measured, at least
const char kNoPlugin[] = "n/a: cudagray plugin not found (set GST_PLUGIN_PATH to build/plugin)";

// Where the element rows' frames come from and go to, and what each is
// compared with (a peer ending in ':' is of the same max-inflight).
struct Upstream {
  const char *key, *what, *ceiling, *peer;
  bool pinned_pool, cuda_memory, gray_on_device;
};
// GRAY8 in system memory from every upstream, then left in CUDA memory (no
// download), from CUDA memory and from the pinned pool.
const std::vector<Upstream> kToHost = {
    {"pinned", "upstream in its pinned pool", "raw:pinned", "", true, false, false},
    {"pageable", "pageable upstream", "raw:pinned", "raw:staging", false, false, false},
    {"device", "upstream in CUDA memory (zero-copy)", "raw:device", "element:pinned:", false, true,
     false},
};
const std::vector<Upstream> kToDevice = {
    {"device-to-device", "CUDA memory in, GRAY8 CUDA memory out", "kernel:RGB",
     "element:device:", false, true, true},
    {"pinned-to-device", "upstream in its pinned pool, GRAY8 CUDA memory out", "raw:pinned",
     "element:pinned:", true, false, true},
};

// Whether the element rows on CUDA can run; if not, records all as one row
// saying why.
bool element_usable(const Elements &elements, const std::string &no_cuda, const Row &all,
                    std::vector<Row> *rows) {
  if (elements.cudagray && no_cuda.empty()) return true;
  record(rows, all.skip(elements.cudagray ? "skipped: " + no_cuda : kNoPlugin));
  return false;
}

// count "cudagray name=dut backend=cuda" pipelines fed from upstream u,
// pipeline i on devices[i % size] with that device's context (contexts[k]
// is devices[k]'s), if any; max-inflight set when above 0.
Run cudagray_run(const Upstream &u, int count, const std::vector<int> &devices,
                 const SharedCudaContexts &contexts, int max_inflight) {
  Run run;
  for (int i = 0; i < count; ++i)
    run.middles.push_back(
        "cudagray name=dut backend=cuda cuda-device-id=" +
        std::to_string(devices[i % devices.size()]) +
        (max_inflight > 0 ? " max-inflight=" + std::to_string(max_inflight) : "") +
        (u.gray_on_device ? " ! video/x-raw(memory:CUDAMemory),format=GRAY8" : ""));
  run.contexts.assign(contexts.begin(),
                      contexts.begin() + std::min(contexts.size(), devices.size()));
  run.devices = devices;
  run.pool = u.pinned_pool;
  run.cuda_memory = u.cuda_memory;
  return run;
}

}  // namespace

Elements inspect_elements() {
  Elements e;
  if (GstElement *element = gst_element_factory_make("cudagray", nullptr)) {
    gst_object_ref_sink(element);
    e.cudagray = true;
    GstPluginFeature *factory = GST_PLUGIN_FEATURE(gst_element_get_factory(element));
    if (GstPlugin *plugin = gst_plugin_feature_get_plugin(factory)) {
      if (const gchar *file = gst_plugin_get_filename(plugin)) e.cudagray_file = file;
      gst_object_unref(plugin);
    }
    if (GParamSpec *spec =
            g_object_class_find_property(G_OBJECT_GET_CLASS(element), "max-inflight")) {
      e.max_inflight = true;
      gchar *text = g_strdup_value_contents(g_param_spec_get_default_value(spec));
      e.max_inflight_default = text;
      g_free(text);
    }
    gst_object_unref(element);
  }
  if (GstElementFactory *factory = gst_element_factory_find("videoconvert")) {
    e.videoconvert = true;
    gst_object_unref(factory);
  }
  return e;
}

void element_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const std::string &no_cuda, std::vector<Row> *rows) {
  if (!element_usable(elements, no_cuda,
                      Row(size, "element", "element:*", "cudagray backend=cuda (all upstreams)"),
                      rows))
    return;
  std::string why_no_context;
  const SharedCudaContexts contexts = shared_contexts({options.device}, &why_no_context);
  // max-inflight 1 and the default (0) for each upstream, then those asked for
  std::vector<std::pair<Upstream, int>> cases;
  for (const std::vector<Upstream> &upstreams : {kToHost, kToDevice})
    for (const std::vector<int> &values : {std::vector<int>{1, 0}, options.inflight})
      for (const Upstream &u : upstreams)
        for (const int n : values) cases.push_back({u, n});
  for (const auto &[u, inflight] : cases) {
    const std::string n = inflight == 0 ? "default" : std::to_string(inflight);
    Row row(size, "element", std::string("element:") + u.key + ":" + n,
            std::string("cudagray cuda, ") + u.what + ", max-inflight " +
                (inflight > 0            ? std::to_string(inflight)
                 : elements.max_inflight ? "default (" + elements.max_inflight_default + ")"
                                         : "(none)"),
            "RGB", 4.0 * size.pixels());
    row.ceiling = u.ceiling;
    row.peer = u.peer;
    if (!row.peer.empty() && row.peer.back() == ':') row.peer += n;
    if ((u.cuda_memory || u.gray_on_device) && contexts.empty())
      row.skipped = why_no_context;
    else if (inflight > 0 && !elements.max_inflight)
      row.skipped = "n/a: the element has no property max-inflight";
    Run run = cudagray_run(u, 1, {options.device}, contexts, inflight);
    run.ahead = kElementAhead;
    record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
  }
}

void latency_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const std::string &no_cuda, std::vector<Row> *rows) {
  if (!element_usable(elements, no_cuda,
                      Row(size, "latency", "latency:*", "cudagray single-frame latency"), rows))
    return;
  for (const bool pinned : {true, false}) {
    Row row(size, "latency", std::string("latency:") + (pinned ? "pinned" : "pageable"),
            std::string("cudagray cuda latency, ") + (pinned ? "pinned pool" : "pageable") +
                ", max-inflight 1, push to sink",
            "RGB", 4.0 * size.pixels());
    row.ceiling = "raw:latency";
    // ahead stays 1: one lone frame at a time
    Run run = cudagray_run(kToHost[pinned ? 0 : 1], 1, {options.device}, {},
                           elements.max_inflight ? 1 : 0);
    run.min_frames = kLatencySamples;
    if (!elements.max_inflight) run.note = "element has no max-inflight property";
    record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
  }
}

void stream_rows(const FrameSize &size, const Options &options, const Elements &elements,
                 const std::string &no_cuda, std::vector<Row> *rows) {
  if (options.streams.empty() ||
      !element_usable(elements, no_cuda, Row(size, "streams", "streams:*", "cudagray streams"),
                      rows))
    return;
  std::string why_no_context;
  const SharedCudaContexts contexts = shared_contexts(options.devices, &why_no_context);
  const std::string paced =
      options.paced_fps > 0 ? " at " + format_double(options.paced_fps, 0) + " fps each" : "";
  // one GPU, then every GPU with as many streams on each
  std::vector<std::vector<int>> spreads = {{options.devices.front()}};
  if (options.devices.size() > 1) spreads.push_back(options.devices);
  for (const int n : options.streams)
    for (const std::vector<int> &devices : spreads)
      for (const Upstream &u : {kToHost[0], kToHost[1], kToHost[2], kToDevice[0]}) {
        const int gpus = static_cast<int>(devices.size()), count = n * gpus;
        const std::string base = std::string("streams:") + u.key + ":";
        Row row(size, "streams",
                base + std::to_string(count) +
                    (gpus > 1 ? ":" + std::to_string(gpus) + "gpu" : "") +
                    (paced.empty() ? "" : ":paced"),
                std::to_string(count) + " streams" + paced + " on " + std::to_string(gpus) +
                    " GPU" + (gpus > 1 ? "s, " : ", ") + u.what,
                "RGB", 4.0 * size.pixels());
        row.load.streams = count;
        row.load.gpus = gpus;
        if (gpus > 1)
          row.peer = base + std::to_string(n) + (paced.empty() ? "" : ":paced");
        else if (paced.empty())
          row.ceiling =
              u.cuda_memory ? (u.gray_on_device ? "kernel:RGB" : "copy:d2h") : "raw:pinned";
        if (u.cuda_memory && contexts.empty()) row.skipped = why_no_context;
        Run run = cudagray_run(u, count, devices, contexts, 0);
        run.ahead = kStreamAhead;
        run.paced_fps = options.paced_fps;
        record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
      }
}

void cpu_rows(const FrameSize &size, const Options &options, const Elements &elements,
              std::vector<Row> *rows) {
  struct Variant {
    const char *key, *what, *middle, *ceiling, *unavailable;  // unavailable: why, or null
    std::string note;
  };
  const char *no_videoconvert = elements.videoconvert ? nullptr : "n/a: videoconvert not found";
  const Variant variants[] = {
      {"videoconvert:1", "videoconvert n-threads=1",
       "videoconvert name=dut n-threads=1 ! video/x-raw,format=GRAY8", "", no_videoconvert, ""},
      {"videoconvert:all", "videoconvert n-threads=0 (all cores)",
       "videoconvert name=dut n-threads=0 ! video/x-raw,format=GRAY8", "videoconvert:1",
       no_videoconvert,
       std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " cores"},
      {"cudagray:cpu", "cudagray backend=cpu", "cudagray name=dut backend=cpu", "videoconvert:1",
       elements.cudagray ? nullptr : kNoPlugin, ""},
  };
  for (const Variant &v : variants) {
    Row row(size, "cpu", v.key, v.what, "RGB", 4.0 * size.pixels());
    row.ceiling = v.ceiling;
    if (v.unavailable) row.skipped = v.unavailable;
    Run run;
    run.middles = {v.middle};
    run.ahead = kCpuAhead;
    run.note = v.note;
    record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
  }
}

}  // namespace bench
