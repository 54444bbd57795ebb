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
const char kNoVideoscale[] = "n/a: videoscale not found";

// What becomes of the element's GRAY8: kept at the source's size, in system
// memory or left in CUDA memory, or made kScaledOutput in system memory,
// by cudagray in the same pass or by videoscale on all cores after it.
enum class Out { Host, Device, Scaled, Videoscaled };

// Where the element rows' frames come from and go to, and what each is
// compared with (a ceiling or peer ending in ':' is of the same max-inflight).
struct Upstream {
  const char *key, *what, *ceiling, *peer;
  bool pinned_pool, cuda_memory;
  Out out = Out::Host;
};
// GRAY8 in system memory from every upstream, then left in CUDA memory (no
// download), from CUDA memory and from the pinned pool.
const std::vector<Upstream> kToHost = {
    {"pinned", "upstream in its pinned pool", "raw:pinned", "", true, false},
    {"pageable", "pageable upstream", "raw:pinned", "raw:staging", false, false},
    {"device", "upstream in CUDA memory (zero-copy)", "raw:device", "element:pinned:", false, true},
};
const std::vector<Upstream> kToDevice = {
    {"device-to-device", "CUDA memory in, GRAY8 CUDA memory out", "kernel:RGB",
     "element:device:", false, true, Out::Device},
    {"pinned-to-device", "upstream in its pinned pool, GRAY8 CUDA memory out", "raw:pinned",
     "element:pinned:", true, false, Out::Device},
};
// The same upstreams scaled: from system memory the upload bounds both the
// scaled and the same-size row; from CUDA memory the kernel and the small
// download do (raw:device:scaled).
const std::vector<Upstream> kScaled = {
    {"pinned", "upstream in its pinned pool, scaled in the same pass",
     "element:pinned:", "scaled:pinned-videoscale:", true, false, Out::Scaled},
    {"pinned-videoscale", "upstream in its pinned pool, then videoscale n-threads=0", "", "", true,
     false, Out::Videoscaled},
    {"pageable", "pageable upstream, scaled in the same pass",
     "element:pageable:", "scaled:pageable-videoscale:", false, false, Out::Scaled},
    {"pageable-videoscale", "pageable upstream, then videoscale n-threads=0", "", "", false, false,
     Out::Videoscaled},
    {"device", "upstream in CUDA memory, scaled in the same pass", "raw:device:scaled",
     "scaled:device-videoscale:", false, true, Out::Scaled},
    {"device-videoscale", "upstream in CUDA memory, then videoscale n-threads=0", "", "", false,
     true, Out::Videoscaled},
};

// GRAY8 caps at size, in system memory.
std::string gray_caps(const FrameSize &size) {
  return "video/x-raw,format=GRAY8,width=" + std::to_string(size.width) +
         ",height=" + std::to_string(size.height);
}

// What follows cudagray in a pipeline of frames of size for out.
std::string after_cudagray(Out out, const FrameSize &size) {
  switch (out) {
    case Out::Device: return " ! video/x-raw(memory:CUDAMemory),format=GRAY8";
    case Out::Scaled: return " ! " + gray_caps(kScaledOutput);
    case Out::Videoscaled:  // the source's size first, or cudagray would scale
      return " ! " + gray_caps(size) + " ! videoscale n-threads=0 ! " + gray_caps(kScaledOutput);
    case Out::Host: break;
  }
  return "";
}

// Bytes a row moves a frame: RGB in, GRAY8 out (the scaled rows' at
// kScaledOutput).
double rgb_to_gray_bytes(const FrameSize &size, const std::string &group) {
  return 3.0 * size.pixels() + (group == "scaled" ? kScaledOutput : size).pixels();
}

std::string cores_note() {
  return std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " cores";
}

// Whether the element rows on CUDA can run; if not, records all as one row
// saying why.
bool element_usable(const Elements &elements, const std::string &no_cuda, const Row &all,
                    std::vector<Row> *rows) {
  if (elements.cudagray && no_cuda.empty()) return true;
  record(rows, all.skip(elements.cudagray ? "skipped: " + no_cuda : kNoPlugin));
  return false;
}

// count "cudagray name=dut backend=cuda" pipelines of frames of size fed
// from upstream u, pipeline i on devices[i % size] with that device's
// context (contexts[k] is devices[k]'s), if any; max-inflight set when
// above 0.
Run cudagray_run(const Upstream &u, const FrameSize &size, int count,
                 const std::vector<int> &devices, const SharedCudaContexts &contexts,
                 int max_inflight) {
  Run run;
  for (int i = 0; i < count; ++i)
    run.middles.push_back(
        "cudagray name=dut backend=cuda cuda-device-id=" +
        std::to_string(devices[i % devices.size()]) +
        (max_inflight > 0 ? " max-inflight=" + std::to_string(max_inflight) : "") +
        after_cudagray(u.out, size));
  run.contexts.assign(contexts.begin(),
                      contexts.begin() + std::min(contexts.size(), devices.size()));
  run.devices = devices;
  run.pool = u.pinned_pool;
  run.cuda_memory = u.cuda_memory;
  return run;
}

// One row of cudagray backend=cuda fed from u on options.device, keyed
// "<group>:<u.key>:<max-inflight or default>".
void element_row(const FrameSize &size, const Options &options, const Elements &elements,
                 const SharedCudaContexts &contexts, const std::string &why_no_context,
                 const std::string &group, const Upstream &u, int inflight,
                 std::vector<Row> *rows) {
  const std::string n = inflight == 0 ? "default" : std::to_string(inflight);
  const auto of_same_inflight = [&](std::string key) {
    return !key.empty() && key.back() == ':' ? key + n : key;
  };
  Row row(size, group, group + ":" + u.key + ":" + n,
          std::string("cudagray cuda, ") + u.what + ", max-inflight " +
              (inflight > 0            ? std::to_string(inflight)
               : elements.max_inflight ? "default (" + elements.max_inflight_default + ")"
                                       : "(none)"),
          "RGB", rgb_to_gray_bytes(size, group));
  row.ceiling = of_same_inflight(u.ceiling);
  row.peer = of_same_inflight(u.peer);
  if ((u.cuda_memory || u.out == Out::Device) && contexts.empty())
    row.skipped = why_no_context;
  else if (inflight > 0 && !elements.max_inflight)
    row.skipped = "n/a: the element has no property max-inflight";
  else if (u.out == Out::Videoscaled && !elements.videoscale)
    row.skipped = kNoVideoscale;
  Run run = cudagray_run(u, size, 1, {options.device}, contexts, inflight);
  run.ahead = kElementAhead;
  record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
}

// A row of one element on the CPU fed pageable RGB frames.
struct CpuRow {
  std::string key, what, middle, ceiling, peer;
  const char *unavailable;  // why it cannot run here, or null
  std::string note;
};

void cpu_row(const FrameSize &size, const Options &options, const std::string &group,
             const CpuRow &v, std::vector<Row> *rows) {
  Row row(size, group, v.key, v.what, "RGB", rgb_to_gray_bytes(size, group));
  row.ceiling = v.ceiling;
  row.peer = v.peer;
  if (v.unavailable) row.skipped = v.unavailable;
  Run run;
  run.middles = {v.middle};
  run.ahead = kCpuAhead;
  run.note = v.note;
  record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
}

CpuRow cudagray_cpu(const Elements &elements) {
  return {"cudagray:cpu",
          "cudagray backend=cpu",
          "cudagray name=dut backend=cpu",
          "videoconvert:1",
          "",
          elements.cudagray ? nullptr : kNoPlugin,
          ""};
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
  for (const auto &[name, found] :
       {std::pair{"videoconvert", &e.videoconvert}, std::pair{"videoscale", &e.videoscale},
        std::pair{"videoconvertscale", &e.videoconvertscale}})
    if (GstElementFactory *factory = gst_element_factory_find(name)) {
      *found = true;
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
  for (const auto &[u, inflight] : cases)
    element_row(size, options, elements, contexts, why_no_context, "element", u, inflight, rows);
}

void scaled_rows(const FrameSize &size, const Options &options, const Elements &elements,
                 const std::string &no_cuda, std::vector<Row> *rows) {
  // on the CPU first: they run anywhere
  const char *no_plugin = elements.cudagray ? nullptr : kNoPlugin;
  const CpuRow on_cpu[] = {
      {"scaled:videoconvertscale", "videoconvertscale n-threads=0 (all cores)",
       "videoconvertscale name=dut n-threads=0 ! " + gray_caps(kScaledOutput), "", "",
       elements.videoconvertscale ? nullptr : "n/a: videoconvertscale not found", cores_note()},
      {"scaled:cpu", "cudagray backend=cpu, scaled in the same pass",
       "cudagray name=dut backend=cpu" + after_cudagray(Out::Scaled, size), "cudagray:cpu",
       "scaled:cpu-videoscale", no_plugin, ""},
      {"scaled:cpu-videoscale", "cudagray backend=cpu, then videoscale n-threads=0",
       "cudagray name=dut backend=cpu" + after_cudagray(Out::Videoscaled, size), "", "",
       no_plugin             ? no_plugin
       : elements.videoscale ? nullptr
                             : kNoVideoscale,
       ""},
  };
  for (const CpuRow &v : on_cpu) cpu_row(size, options, "scaled", v, rows);
  if (!options.wants("cpu")) cpu_row(size, options, "cpu", cudagray_cpu(elements), rows);

  if (!element_usable(elements, no_cuda,
                      Row(size, "scaled", "scaled:*",
                          "cudagray backend=cuda scaled, its peers, same-size rows and ceiling"),
                      rows))
    return;
  std::string why_no_context;
  const SharedCudaContexts contexts = shared_contexts({options.device}, &why_no_context);
  for (const Upstream &u : kScaled)
    element_row(size, options, elements, contexts, why_no_context, "scaled", u, 0, rows);
  if (!options.wants("element"))  // the same-size rows the scaled ones are compared with
    for (const Upstream &u : kToHost)
      element_row(size, options, elements, contexts, why_no_context, "element", u, 0, rows);
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
    Run run = cudagray_run(kToHost[pinned ? 0 : 1], size, 1, {options.device}, {},
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
              u.cuda_memory ? (u.out == Out::Device ? "kernel:RGB" : "copy:d2h") : "raw:pinned";
        if (u.cuda_memory && contexts.empty()) row.skipped = why_no_context;
        Run run = cudagray_run(u, size, count, devices, contexts, 0);
        run.ahead = kStreamAhead;
        run.paced_fps = options.paced_fps;
        record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
      }
}

void cpu_rows(const FrameSize &size, const Options &options, const Elements &elements,
              std::vector<Row> *rows) {
  const char *no_videoconvert = elements.videoconvert ? nullptr : "n/a: videoconvert not found";
  const CpuRow variants[] = {
      {"videoconvert:1", "videoconvert n-threads=1",
       "videoconvert name=dut n-threads=1 ! video/x-raw,format=GRAY8", "", "", no_videoconvert, ""},
      {"videoconvert:all", "videoconvert n-threads=0 (all cores)",
       "videoconvert name=dut n-threads=0 ! video/x-raw,format=GRAY8", "videoconvert:1", "",
       no_videoconvert, cores_note()},
      cudagray_cpu(elements),
  };
  for (const CpuRow &v : variants) cpu_row(size, options, "cpu", v, rows);
}

}  // namespace bench
