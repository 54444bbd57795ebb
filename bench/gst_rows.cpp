// SPDX-License-Identifier: LGPL-2.1-or-later
// The rows measured through GStreamer pipelines (bench_pipeline.h runs
// them): what each row feeds which element, and what it is compared with.
#include "gst_rows.h"

#include <algorithm>
#include <thread>

#include "bench_pipeline.h"

namespace bench {

namespace {

constexpr long kElementAhead = 24;  // frames pushed ahead of the sink (max-inflight is <= 16)
constexpr long kCpuAhead = 2;       // enough for a synchronous element never to wait
const char kNoPlugin[] = "cudagray plugin not found (set GST_PLUGIN_PATH to build/plugin)";

}  // namespace

const Upstream kToHost[] = {
    {"pinned", "upstream in its pinned pool", "raw:pinned", "", true, false, false},
    {"pageable", "pageable upstream", "raw:pinned", "raw:staging", false, false, false},
    {"device", "upstream in CUDA memory (zero-copy)", "raw:device", "element:pinned:", false, true,
     false},
};
const Upstream kToDevice[] = {
    {"device-to-device", "CUDA memory in, GRAY8 CUDA memory out", "kernel:RGB",
     "element:device:", false, true, true},
    {"pinned-to-device", "upstream in its pinned pool, GRAY8 CUDA memory out", "raw:pinned",
     "element:pinned:", true, false, true},
};

std::string cudagray_cuda(int device, bool gray_on_device) {
  return "cudagray name=dut backend=cuda cuda-device-id=" + std::to_string(device) +
         (gray_on_device ? " ! video/x-raw(memory:CUDAMemory),format=GRAY8" : "");
}

bool element_usable(const Elements &elements, const CudaState &cuda, const Row &all,
                    std::vector<Row> *rows) {
  if (elements.cudagray && cuda.usable) return true;
  record(rows, all.skip(elements.cudagray ? "skipped: " + cuda.reason
                                          : std::string("n/a: ") + kNoPlugin));
  return false;
}

Elements inspect_elements() {
  Elements e;
  if (GstElementFactory *factory = gst_element_factory_find("cudagray")) {
    e.cudagray = true;
    if (GstPlugin *plugin = gst_plugin_feature_get_plugin(GST_PLUGIN_FEATURE(factory))) {
      if (const gchar *file = gst_plugin_get_filename(plugin)) e.cudagray_file = file;
      gst_object_unref(plugin);
    }
    if (GstElement *element = gst_element_factory_create(factory, nullptr)) {
      gst_object_ref_sink(element);
      if (GParamSpec *spec =
              g_object_class_find_property(G_OBJECT_GET_CLASS(element), "max-inflight")) {
        e.max_inflight = true;
        gchar *text = g_strdup_value_contents(g_param_spec_get_default_value(spec));
        e.max_inflight_default = text;
        g_free(text);
      }
      gst_object_unref(element);
    }
    gst_object_unref(factory);
  }
  if (GstElementFactory *factory = gst_element_factory_find("videoconvert")) {
    e.videoconvert = true;
    gst_object_unref(factory);
  }
  return e;
}

void element_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const CudaState &cuda, std::vector<Row> *rows) {
  if (!element_usable(elements, cuda,
                      Row(size, "element", "element:*", "cudagray backend=cuda (all upstreams)"),
                      rows))
    return;
  FrameRing pageable;
  add_pageable_frames(&pageable, size, options, 7000);
  // Frames already on the GPU, when GStreamer's CUDA library can make them.
#ifdef CUDAGRAY_HAVE_GST_CUDA
  std::unique_ptr<SharedCudaContext> context;
  std::unique_ptr<CudaMemoryFrames> on_device;
  std::string why_no_device;
  try {
    context = std::make_unique<SharedCudaContext>(options.device);
    on_device = std::make_unique<CudaMemoryFrames>(size, options.rotate_bytes, *context);
  } catch (const Unavailable &e) {
    why_no_device = std::string("n/a: ") + e.what();
  } catch (const std::exception &e) {
    why_no_device = std::string("failed: ") + e.what();
  }
#else
  const std::string why_no_device = "n/a: bench built without gstreamer-cuda-1.0";
#endif
  // max-inflight 1 and the default (0) for each upstream, then those asked for
  std::vector<std::pair<Upstream, int>> cases;
  for (const auto &upstreams : {std::vector<Upstream>(std::begin(kToHost), std::end(kToHost)),
                                std::vector<Upstream>(std::begin(kToDevice), std::end(kToDevice))})
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
    const std::string peer = u.peer;
    row.peer = !peer.empty() && peer.back() == ':' ? peer + n : peer;
    if ((u.cuda_memory || u.gray_on_device) && !why_no_device.empty()) {
      record(rows, row.skip(why_no_device));
      continue;
    }
    record(rows, row, [&](Row &r) {
      BenchPipeline p(cudagray_cuda(options.device, u.gray_on_device), size, u.cuda_memory);
      if (inflight > 0) p.set_dut_property("max-inflight", std::to_string(inflight).c_str());
      FrameRing *ring = &pageable;
#ifdef CUDAGRAY_HAVE_GST_CUDA
      if (u.cuda_memory) context->share_with(p.dut()), ring = &on_device->ring();
#endif
      p.play();
      std::unique_ptr<Feed> feed =
          u.pinned_pool ? std::make_unique<Feed>(p, pageable, size, options)
                        : std::make_unique<Feed>(*ring, u.cuda_memory ? "CUDA memory" : "pageable");
      time_throughput(p, *feed, options, kElementAhead, r);
      r.note = join({feed->note(), stats_note(p.dut()), p.warnings_note()});
    });
  }
}

void latency_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const CudaState &cuda, std::vector<Row> *rows) {
  if (!element_usable(elements, cuda,
                      Row(size, "latency", "latency:*", "cudagray single-frame latency"), rows))
    return;
  FrameRing pageable;
  add_pageable_frames(&pageable, size, options, 9000);
  for (const bool pinned : {true, false}) {
    Row row(size, "latency", std::string("latency:") + (pinned ? "pinned" : "pageable"),
            std::string("cudagray cuda latency, ") + (pinned ? "pinned pool" : "pageable") +
                ", max-inflight 1, push to sink",
            "RGB", 4.0 * size.pixels());
    row.ceiling = "raw:latency";
    row.versus_videoconvert = false;
    record(rows, row, [&](Row &r) {
      BenchPipeline p(cudagray_cuda(options.device, false), size);
      if (elements.max_inflight) p.set_dut_property("max-inflight", "1");
      p.play();
      std::unique_ptr<Feed> feed = pinned ? std::make_unique<Feed>(p, pageable, size, options)
                                          : std::make_unique<Feed>(pageable, "pageable");
      time_latency(p, *feed, options, r);
      r.note = join({r.note, feed->note(),
                     elements.max_inflight ? "" : "element has no max-inflight property",
                     stats_note(p.dut()), p.warnings_note()});
    });
  }
}

void cpu_rows(const FrameSize &size, const Options &options, const Elements &elements,
              std::vector<Row> *rows) {
  struct Variant {
    const char *key, *what, *middle, *ceiling;
    bool available;
  };
  const Variant variants[] = {
      {"videoconvert:1", "videoconvert n-threads=1",
       "videoconvert name=dut n-threads=1 ! video/x-raw,format=GRAY8", "", elements.videoconvert},
      {"videoconvert:all", "videoconvert n-threads=0 (all cores)",
       "videoconvert name=dut n-threads=0 ! video/x-raw,format=GRAY8", "videoconvert:1",
       elements.videoconvert},
      {"cudagray:cpu", "cudagray backend=cpu", "cudagray name=dut backend=cpu", "videoconvert:1",
       elements.cudagray},
  };
  const std::string cores =
      std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " cores";
  FrameRing pageable;
  add_pageable_frames(&pageable, size, options, 10000);
  for (const Variant &v : variants) {
    const std::string key = v.key;
    Row row(size, "cpu", key, v.what, "RGB", 4.0 * size.pixels());
    row.ceiling = v.ceiling;
    if (!v.available) {
      record(rows, row.skip(std::string("n/a: ") +
                            (key == "cudagray:cpu" ? kNoPlugin : "videoconvert not found")));
      continue;
    }
    record(rows, row, [&](Row &r) {
      BenchPipeline p(v.middle, size);
      p.play();
      Feed feed(pageable, "pageable");
      time_throughput(p, feed, options, kCpuAhead, r);
      r.note = join({feed.note(), key == "videoconvert:all" ? cores : "",
                     key == "cudagray:cpu" ? stats_note(p.dut()) : "", p.warnings_note()});
    });
  }
}

}  // namespace bench
