// SPDX-License-Identifier: LGPL-2.1-or-later
// appsrc ! <element> ! fakesink, one process, frames rotated from a set the
// bench keeps referenced. Throughput is the rate at which frames reach the
// sink after a warm-up, with upstream kept a few frames ahead so that the
// element never waits for input; latency is from the push of a lone frame to
// its arrival at the sink.
#include "bench_pipeline.h"

#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>

#include <algorithm>
#include <cmath>

#ifdef CUDAGRAY_HAVE_CUDA
#include "cuda_rows.h"
#endif
#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

namespace bench {

namespace {

using namespace std::chrono_literals;

constexpr long kWarmupFrames = 20;      // the window starts after this many arrivals,
constexpr auto kWarmupTime = 250ms;     // or this long after the first for slow rows,
constexpr long kMinWarmup = 2;          // but never before this many
constexpr long kMinFrames = 10;         // measured frames, at least
constexpr long kMaxFrames = 200000;     // measured frames, at most
constexpr long kMaxAhead = 32;          // if an element holds more frames than `ahead`
constexpr auto kHoldSuspicion = 500ms;  // nothing out for this long (or 4 frame times): feed more
constexpr auto kStallTime = 30s;        // no arrival for this long: the row fails
constexpr auto kLoneFrameTime = 5s;     // one frame pushed alone must arrive within this
constexpr GstClockTime kEosTime = 120 * GST_SECOND;

GstVideoInfo rgb_info(const FrameSize &size) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, size.width, size.height);
  return info;
}

// What CUDA says about the memory of a buffer ("pinned", "pageable").
std::string memory_kind(GstBuffer *buffer) {
#ifdef CUDAGRAY_HAVE_CUDA
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return "unmappable";
  const std::string kind = host_memory_kind(map.data);
  gst_buffer_unmap(buffer, &map);
  return kind;
#else
  (void)buffer;
  return "unknown (no CUDA in this build)";
#endif
}

}  // namespace

void ArrivalLog::pushed() {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  pushes_.push_back(now);
}

void ArrivalLog::add() {
  const Clock::time_point now = Clock::now();
  update([&](Counts &c) {
    timeline_.arrivals.push_back(now);
    if (!pushes_.empty()) {
      timeline_.latency_us.push_back(
          std::chrono::duration<double, std::micro>(now - pushes_.front()).count());
      pushes_.pop_front();
    }
    if (c.frames == 0) c.first = now;
    if (c.window_start < 0 && c.frames >= kMinWarmup &&
        (c.frames >= kWarmupFrames || now - c.first >= kWarmupTime))
      c.window_start = c.frames, c.window_start_time = now;
    c.last = now;
    ++c.frames;
  });
}

ArrivalLog::Counts ArrivalLog::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

ArrivalLog::Timeline ArrivalLog::timeline() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeline_;
}

bool ArrivalLog::wait_for(long n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return counts_.frames >= n; });
}

BenchPipeline::BenchPipeline(const std::string &middle, const FrameSize &size, bool cuda_memory,
                             bool live)
    : pipeline_("appsrc name=src ! " + middle +
                " ! fakesink name=sink sync=false async=false enable-last-sample=false") {
  GstVideoInfo info = rgb_info(size);
  GstCaps *caps = gst_video_info_to_caps(&info);
  if (cuda_memory)
    gst_caps_set_features_simple(caps, gst_caps_features_new_single("memory:CUDAMemory"));
  // Unbounded appsrc queue: the bench itself keeps it a few frames deep.
  g_object_set(pipeline_.by_name("src"), "caps", caps, "format", GST_FORMAT_TIME, "is-live", live,
               "block", FALSE, "max-bytes", static_cast<guint64>(0), "emit-signals", FALSE,
               nullptr);
  gst_caps_unref(caps);
  GstPad *pad = gst_element_get_static_pad(pipeline_.by_name("sink"), "sink");
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *, gpointer log) {
        static_cast<ArrivalLog *>(log)->add();
        return GST_PAD_PROBE_OK;
      },
      &arrivals_, nullptr);
  gst_object_unref(pad);
}

void BenchPipeline::set_dut_property(const char *name, const char *value) {
  GstElement *element = dut();
  if (!element || !g_object_class_find_property(G_OBJECT_GET_CLASS(element), name))
    throw Unavailable(std::string("the element has no property ") + name);
  gst_util_set_object_arg(G_OBJECT(element), name, value);
}

void BenchPipeline::play() {
  if (pipeline_.play() != GST_STATE_CHANGE_FAILURE) return;
  throw_if_bus_error();
  throw std::runtime_error("the pipeline did not start");
}

void BenchPipeline::push(GstBuffer *buffer) {
  arrivals_.pushed();
  const GstFlowReturn flow = pipeline_.push("src", buffer);
  if (flow == GST_FLOW_OK) return;
  throw_if_bus_error();
  throw std::runtime_error(std::string("appsrc refused a buffer: ") + gst_flow_get_name(flow));
}

void BenchPipeline::throw_if_bus_error() {
  const harness::BusLog log(pipeline_.bus());
  for (const harness::BusMessage &w : log.warnings) warnings_.push_back(w.text);
  if (!log.errors.empty()) throw std::runtime_error(log.errors.front().text);
}

void BenchPipeline::end() {
  pipeline_.end_of_stream("src");
  harness::BusLog log;
  const GstMessageType end = pipeline_.wait_end(kEosTime, &log);
  for (const harness::BusMessage &w : log.warnings) warnings_.push_back(w.text);
  if (end == GST_MESSAGE_ERROR) throw std::runtime_error(log.errors.front().text);
  if (end != GST_MESSAGE_EOS) throw std::runtime_error("no end of stream within the time limit");
}

std::string BenchPipeline::warnings_note() const {
  return warnings_.empty() ? "" : "warning: " + warnings_.front();
}

GstQuery *BenchPipeline::ask_for_pool(GstBuffer *priming) {
  push(priming);
  if (!arrivals_.wait_for(1, kLoneFrameTime)) {
    throw_if_bus_error();
    throw std::runtime_error("the priming frame did not reach the sink within 5 s");
  }
  GstPad *pad = gst_element_get_static_pad(pipeline_.by_name("src"), "src");
  GstCaps *caps = gst_pad_get_current_caps(pad);
  GstQuery *query = gst_query_new_allocation(caps, TRUE);
  if (caps) gst_caps_unref(caps);
  const bool answered = gst_pad_peer_query(pad, query);
  gst_object_unref(pad);
  if (answered) return query;
  gst_query_unref(query);
  throw Unavailable("the element did not answer the ALLOCATION query");
}

void add_pageable_frames(FrameRing *ring, const FrameSize &size, const Options &options,
                         uint64_t seed) {
  const size_t bytes = frame_bytes(PixelLayout::RGB, size);
  const size_t count = rotation_count(bytes, options.rotate_bytes);
  for (size_t i = 0; i < count; ++i) {
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
    if (!buffer) throw std::bad_alloc();
    ring->add(buffer);
    harness::fill_buffer(buffer, seed + i);
  }
}

Feed::Feed(FrameRing &ring, const std::string &what)
    : ring_(&ring), note_(std::to_string(ring.size()) + " " + what + " frames") {}

// The pool is configured for as many buffers as the rotation wants (unless
// it is active already), keeping its own options and asking for no maximum;
// each buffer is filled once. A refused configuration is taken as the pool
// counter-proposes it.
Feed::Feed(BenchPipeline &pipeline, FrameRing &priming, const FrameSize &size,
           const Options &options)
    : ring_(&pool_frames_) {
  GstQuery *query = pipeline.ask_for_pool(priming.next());
  guint offered = 0, min = 0, max = 0;
  if (gst_query_get_n_allocation_pools(query) > 0)
    gst_query_parse_nth_allocation_pool(query, 0, &pool_, &offered, &min, &max);
  GstCaps *query_caps = nullptr;
  gst_query_parse_allocation(query, &query_caps, nullptr);
  query_caps = query_caps ? gst_caps_ref(query_caps) : nullptr;
  gst_query_unref(query);
  if (!pool_) throw Unavailable("the element offered no buffer pool in its ALLOCATION answer");
  const size_t bytes = frame_bytes(PixelLayout::RGB, size);
  const size_t wanted = rotation_count(bytes, options.rotate_bytes);
  if (!gst_buffer_pool_is_active(pool_)) {
    GstStructure *config = gst_buffer_pool_get_config(pool_);
    GstCaps *caps = nullptr;
    guint pool_size = 0;
    gst_buffer_pool_config_get_params(config, &caps, &pool_size, &min, &max);
    gst_buffer_pool_config_set_params(config, caps ? caps : query_caps,
                                      std::max<guint>({pool_size, offered, guint(bytes)}), min, 0);
    if (!gst_buffer_pool_set_config(pool_, config) &&
        !gst_buffer_pool_set_config(pool_, gst_buffer_pool_get_config(pool_)))
      throw std::runtime_error("the element's pool refused its configuration");
    if (!gst_buffer_pool_set_active(pool_, TRUE))
      throw std::runtime_error("the element's pool could not be activated");
    activated_ = true;
  }
  if (query_caps) gst_caps_unref(query_caps);
  GstBufferPoolAcquireParams params{};
  params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
  for (size_t i = 0; i < wanted; ++i) {
    GstBuffer *buffer = nullptr;
    if (gst_buffer_pool_acquire_buffer(pool_, &buffer, &params) != GST_FLOW_OK || !buffer) break;
    pool_frames_.add(buffer);
    harness::fill_buffer(buffer, 8000 + i);
  }
  if (pool_frames_.size() == 0) throw std::runtime_error("the element's pool gave no buffer");
  note_ = std::to_string(pool_frames_.size()) + " pool frames" +
          (pool_frames_.size() < wanted ? " (of " + std::to_string(wanted) + " wanted)" : "") +
          ", memory " + memory_kind(pool_frames_.front());
  pipeline.arrivals().clear();
}

Feed::~Feed() {
  pool_frames_.clear();  // back to the pool before it goes
  if (activated_) gst_buffer_pool_set_active(pool_, FALSE);
  if (pool_) gst_object_unref(pool_);
}

std::string stats_note(GstElement *dut) {
  GParamSpec *spec = dut ? g_object_class_find_property(G_OBJECT_GET_CLASS(dut), "stats") : nullptr;
  if (!spec || G_PARAM_SPEC_VALUE_TYPE(spec) != GST_TYPE_STRUCTURE) return "";
  GstStructure *stats = nullptr;
  g_object_get(dut, "stats", &stats, nullptr);
  if (!stats) return "";
  guint64 frames = 0, device_inputs = 0, device_outputs = 0;
  double gpu = NAN, upload = NAN, download = NAN;
  // the device counts last: a plugin older than them stops the reading there
  gst_structure_get(stats, "frames", G_TYPE_UINT64, &frames, "gpu-time-mean-us", G_TYPE_DOUBLE,
                    &gpu, "upload-time-mean-us", G_TYPE_DOUBLE, &upload, "download-time-mean-us",
                    G_TYPE_DOUBLE, &download, "device-inputs", G_TYPE_UINT64, &device_inputs,
                    "device-outputs", G_TYPE_UINT64, &device_outputs, nullptr);
  gst_structure_free(stats);
  return "element stats: gpu " + format_double(gpu, 1) + " us, upload " + format_double(upload, 1) +
         " us, download " + format_double(download, 1) + " us, frames " + std::to_string(frames) +
         (device_inputs ? " (" + std::to_string(device_inputs) + " read in CUDA memory)" : "") +
         (device_outputs ? " (" + std::to_string(device_outputs) + " left in CUDA memory)" : "");
}

void time_throughput(BenchPipeline &p, Feed &feed, const Options &options, long ahead, Row &row) {
  ArrivalLog &arrivals = p.arrivals();
  long pushed = arrivals.counts().frames, seen = pushed;
  Clock::time_point changed = Clock::now();  // when seen last changed, or ahead grew
  const auto window = [](const ArrivalLog::Counts &c, double *seconds) {
    *seconds = c.window_start < 0
                   ? 0
                   : std::chrono::duration<double>(c.last - c.window_start_time).count();
    return c.window_start < 0 ? 0 : c.frames - 1 - c.window_start;
  };
  double seconds = 0;
  for (long k = 0;; ++k) {
    const ArrivalLog::Counts c = arrivals.counts();
    const long frames = window(c, &seconds);
    if (frames >= kMinFrames && (seconds >= options.seconds || frames >= kMaxFrames)) break;
    if (arrivals.wait_for(pushed - ahead + 1, 100ms)) {
      p.push(feed.next());
      ++pushed;
      if (k % 64 == 0) p.throw_if_bus_error();
      continue;
    }
    p.throw_if_bus_error();
    const Clock::time_point now = Clock::now();
    const auto mean_interval =
        c.frames < 2 ? Clock::duration(0) : (c.last - c.first) / (c.frames - 1);
    if (c.frames != seen) {
      seen = c.frames;
      changed = now;
    } else if (now - changed > kStallTime) {
      throw std::runtime_error("no frame reached the sink for 30 s");
    } else if (ahead < kMaxAhead &&
               now - changed > std::max<Clock::duration>(kHoldSuspicion, 4 * mean_interval)) {
      ahead = std::min(2 * ahead, kMaxAhead);
      changed = now;
    }
  }
  p.end();
  row.frames = window(p.arrivals().counts(), &seconds);
  row.us = seconds / row.frames * 1e6;
}

void time_latency(BenchPipeline &p, Feed &feed, const Options &options, Row &row) {
  ArrivalLog &arrivals = p.arrivals();
  long arrived = arrivals.counts().frames;
  time_lone_frames(row, options, [&] {
    const Clock::time_point pushed_at = Clock::now();
    p.push(feed.next());
    if (!arrivals.wait_for(++arrived, kLoneFrameTime)) {
      p.throw_if_bus_error();
      throw std::runtime_error("a frame pushed alone did not reach the sink within 5 s");
    }
    return std::chrono::duration<double, std::micro>(arrivals.counts().last - pushed_at).count();
  });
  p.end();
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
SharedCudaContext::SharedCudaContext(int device) {
  if (!gst_cuda_load_library())
    throw Unavailable("GStreamer's CUDA library could not load the CUDA driver");
  gst_cuda_memory_init_once();
  context_ = gst_cuda_context_new(device);
  if (!context_)
    throw Unavailable("GStreamer could not make a CUDA context on device " +
                      std::to_string(device));
}

SharedCudaContext::~SharedCudaContext() {
  if (context_) gst_object_unref(context_);
}

void SharedCudaContext::share_with(GstElement *element) const {
  GstContext *shared = gst_context_new_cuda_context(context_);
  gst_element_set_context(element, shared);
  gst_context_unref(shared);
}

CudaMemoryFrames::CudaMemoryFrames(const FrameSize &size, size_t rotate_bytes,
                                   const SharedCudaContext &context)
    : pool_(gst_cuda_buffer_pool_new(context.get())) {
  GstVideoInfo info = rgb_info(size);
  const size_t count = rotation_count(GST_VIDEO_INFO_SIZE(&info), rotate_bytes);
  GstCaps *caps = gst_video_info_to_caps(&info);
  gst_caps_set_features_simple(caps,
                               gst_caps_features_new_single(GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY));
  GstStructure *config = gst_buffer_pool_get_config(pool_);
  gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), count, 0);
  gst_caps_unref(caps);
  if (!gst_buffer_pool_set_config(pool_, config) || !gst_buffer_pool_set_active(pool_, TRUE))
    throw std::runtime_error("GStreamer's CUDA buffer pool could not be set up");
  for (size_t i = 0; i < count; ++i) {
    GstBuffer *buffer = nullptr;
    if (gst_buffer_pool_acquire_buffer(pool_, &buffer, nullptr) != GST_FLOW_OK || !buffer)
      throw std::runtime_error("GStreamer's CUDA buffer pool gave no buffer");
    ring_.add(buffer);
    harness::fill_buffer(buffer, 11000 + i);  // on the host: uploaded by the next CUDA mapping
    GstMapInfo map;
    if (!gst_buffer_map(buffer, &map, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA)))
      throw std::runtime_error("a CUDA memory frame could not be uploaded");
    gst_buffer_unmap(buffer, &map);
  }
}

CudaMemoryFrames::~CudaMemoryFrames() {
  ring_.clear();  // back to the pool before it goes
  gst_buffer_pool_set_active(pool_, FALSE);
  gst_object_unref(pool_);
}
#endif

}  // namespace bench
