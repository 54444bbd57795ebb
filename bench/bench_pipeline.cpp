// SPDX-License-Identifier: LGPL-2.1-or-later
// Runs pipelines and times them: "appsrc ! <middle> ! fakesink", one or many
// at once in one process, each fed RGB frames (pageable, from the element's
// pinned pool, or in CUDA memory) by a thread of its own, flat out a few
// frames ahead of its sink or paced as a camera, and timed from the sink's
// arrivals over one window after every one's warm-up.
#include "bench_pipeline.h"

#include <gst/video/video.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "frames.h"
#include "pipeline.h"
#include "process.h"
#ifdef CUDAGRAY_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

namespace bench {

namespace {

using harness::FrameRing;
using namespace std::chrono_literals;

constexpr long kWarmupFrames = 20;   // warm after this many arrivals,
constexpr auto kWarmupTime = 250ms;  // or this long after the first for slow rows,
constexpr long kMinWarmup = 2;       // but never before this many
constexpr auto kWarmupLimit = 60s;   // every pipeline warm within this, or the row fails
constexpr auto kStallTime = 30s;     // a pipeline with no arrival for this long fails the row
constexpr auto kPrimingTime = 5s;    // the pool's priming frame must arrive within this
constexpr GstClockTime kEosTime = 120 * GST_SECOND;

// RGB frames of size, in CUDA memory or not; *bytes gets a frame's size.
GstCaps *rgb_caps(const FrameSize &size, bool cuda_memory, gsize *bytes = nullptr) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, size.width, size.height);
  if (bytes) *bytes = GST_VIDEO_INFO_SIZE(&info);
  GstCaps *caps = gst_video_info_to_caps(&info);
  if (cuda_memory)
    gst_caps_set_features_simple(caps, gst_caps_features_new_single("memory:CUDAMemory"));
  return caps;
}

// Whether a buffer's memory is pinned (as the element's pool should be) or
// pageable.
std::string memory_kind(GstBuffer *buffer) {
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return "unmappable";
  const bool pinned = cudagray::is_pinned(map.data);
  gst_buffer_unmap(buffer, &map);
  return pinned ? "pinned" : "pageable";
}

// Frames from a buffer pool, each filled once and then pushed round and
// round like the bench's own; back in the pool, and the pool inactive again,
// before it goes. The pool (taken, new: the element's answer to an
// ALLOCATION query, or GStreamer's CUDA pool) is configured for buffers of
// at least bytes, keeping its own options and asking for no maximum; a
// refused configuration is taken as the pool counter-proposes it.
class PoolFrames {
 public:
  PoolFrames(GstBufferPool *pool, GstCaps *caps, guint bytes, size_t count,
             const std::string &whose)
      : pool_(pool) {
    GstStructure *config = gst_buffer_pool_get_config(pool_);
    GstCaps *own_caps = nullptr;
    guint own_bytes = 0, min = 0, max = 0;
    gst_buffer_pool_config_get_params(config, &own_caps, &own_bytes, &min, &max);
    gst_buffer_pool_config_set_params(config, own_caps ? own_caps : caps,
                                      std::max(own_bytes, bytes), min, 0);
    if (!gst_buffer_pool_set_config(pool_, config) &&
        !gst_buffer_pool_set_config(pool_, gst_buffer_pool_get_config(pool_)))
      throw std::runtime_error(whose + " refused its configuration");
    if (!gst_buffer_pool_set_active(pool_, TRUE))
      throw std::runtime_error(whose + " could not be activated");
    GstBufferPoolAcquireParams params{};
    params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
    for (size_t i = 0; i < count; ++i) {
      GstBuffer *buffer = nullptr;
      if (gst_buffer_pool_acquire_buffer(pool_, &buffer, &params) != GST_FLOW_OK || !buffer) break;
      ring.add(buffer);
      harness::fill_buffer(buffer, 8000 + i);
    }
    if (ring.size() == 0) throw std::runtime_error(whose + " gave no buffer");
  }
  ~PoolFrames() {
    ring.clear();
    gst_buffer_pool_set_active(pool_, FALSE);
    gst_object_unref(pool_);
  }
  FrameRing ring;

 private:
  GstBufferPool *pool_;
};

// "appsrc name=src ! <middle> ! fakesink name=sink", playing; the element
// under test is the one named "dut" in middle, given the GstCudaContext
// context (if any) before it starts, as an application shares its context.
// Frames are RGB, in system memory or (cuda_memory) in memory:CUDAMemory; a
// live appsrc stands for a camera. Every failure throws std::runtime_error
// with GStreamer's message; warnings are kept. It logs the pushes and the
// arrivals at the sink (written by the streaming thread) since the log was
// cleared: the pipeline keeps frames in order, so arrival k is the frame of
// push k. Warm once 20 frames have arrived, or 0.25 s after the first (and
// at least 2).
class BenchPipeline {
 public:
  struct Counts {
    long frames = 0;
    bool warm = false;
    Clock::time_point last, warm_at;  // warm_at: the arrival that made it warm
  };

  BenchPipeline(const std::string &middle, const FrameSize &size, bool cuda_memory, bool live,
                GstObject *context)
      : pipeline_("appsrc name=src ! " + middle +
                  " ! fakesink name=sink sync=false async=false enable-last-sample=false") {
    GstCaps *caps = rgb_caps(size, cuda_memory);
    // Unbounded appsrc queue: the bench itself keeps it a few frames deep.
    g_object_set(pipeline_.by_name("src"), "caps", caps, "format", GST_FORMAT_TIME, "is-live", live,
                 "block", FALSE, "max-bytes", static_cast<guint64>(0), "emit-signals", FALSE,
                 nullptr);
    gst_caps_unref(caps);
    GstPad *pad = gst_element_get_static_pad(pipeline_.by_name("sink"), "sink");
    gst_pad_add_probe(
        pad, GST_PAD_PROBE_TYPE_BUFFER,
        [](GstPad *, GstPadProbeInfo *, gpointer self) {
          static_cast<BenchPipeline *>(self)->arrived();
          return GST_PAD_PROBE_OK;
        },
        this, nullptr);
    gst_object_unref(pad);
#ifdef CUDAGRAY_HAVE_GST_CUDA
    if (context) {
      GstContext *shared = gst_context_new_cuda_context(GST_CUDA_CONTEXT(context));
      gst_element_set_context(dut(), shared);
      gst_context_unref(shared);
    }
#endif
    if (pipeline_.play() != GST_STATE_CHANGE_FAILURE) return;
    throw_if_bus_error();
    throw std::runtime_error("the pipeline did not start");
  }

  GstElement *dut() const { return pipeline_.by_name("dut"); }
  void push(GstBuffer *buffer) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pushes_.push_back(Clock::now());
    }
    const GstFlowReturn flow = pipeline_.push("src", buffer);
    if (flow == GST_FLOW_OK) return;
    throw_if_bus_error();
    throw std::runtime_error(std::string("appsrc refused a buffer: ") + gst_flow_get_name(flow));
  }
  // Throws GStreamer's first error; keeps the warnings.
  void throw_if_bus_error() { keep(harness::BusLog(pipeline_.bus())); }
  // Ends the stream and waits until every frame has reached the sink.
  void end() {
    pipeline_.end_of_stream("src");
    harness::BusLog log;
    const GstMessageType end = pipeline_.wait_end(kEosTime, &log);
    keep(log);
    if (end != GST_MESSAGE_EOS) throw std::runtime_error("no end of stream within the time limit");
  }
  // The first warning posted, as a note ("" when none).
  const std::string &warnings_note() const { return warning_; }
  Counts counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }
  // The frames that arrived in (from, to]; their latencies (µs) go to latency_us.
  long window(Clock::time_point from, Clock::time_point to, std::vector<double> *latency_us) const {
    std::lock_guard<std::mutex> lock(mutex_);
    long frames = 0;
    for (size_t k = 0; k < arrivals_.size(); ++k) {
      if (arrivals_[k] <= from || arrivals_[k] > to) continue;
      ++frames;
      if (k < pushes_.size())
        latency_us->push_back(
            std::chrono::duration<double, std::micro>(arrivals_[k] - pushes_[k]).count());
    }
    return frames;
  }
  // Waits until at least n frames have arrived; false on timeout.
  bool wait_for(long n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return counts_.frames >= n; });
  }
  // The pool the element offers, asked for as an upstream with a pool of its
  // own would once a priming frame is through (caps are set then): up to
  // wanted of its frames. The log starts empty after it.
  std::unique_ptr<PoolFrames> pool_frames(GstBuffer *priming, guint bytes, size_t wanted) {
    push(priming);
    if (!wait_for(1, kPrimingTime)) {
      throw_if_bus_error();
      throw std::runtime_error("the priming frame did not reach the sink within 5 s");
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      counts_ = Counts();
      pushes_.clear();
      arrivals_.clear();
    }
    GstPad *pad = gst_element_get_static_pad(pipeline_.by_name("src"), "src");
    GstCaps *caps = gst_pad_get_current_caps(pad);
    GstQuery *query = gst_query_new_allocation(caps, TRUE);
    const bool answered = gst_pad_peer_query(pad, query);
    gst_object_unref(pad);
    GstBufferPool *pool = nullptr;
    guint offered = 0;
    if (answered && gst_query_get_n_allocation_pools(query) > 0)
      gst_query_parse_nth_allocation_pool(query, 0, &pool, &offered, nullptr, nullptr);
    gst_query_unref(query);
    if (!pool) {
      if (caps) gst_caps_unref(caps);
      throw Unavailable(answered ? "the element offered no buffer pool in its ALLOCATION answer"
                                 : "the element did not answer the ALLOCATION query");
    }
    auto frames = std::make_unique<PoolFrames>(pool, caps, std::max(offered, bytes), wanted,
                                               "the element's pool");
    if (caps) gst_caps_unref(caps);
    return frames;
  }

 private:
  void arrived() {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point now = Clock::now();
    const long n = static_cast<long>(arrivals_.size());
    if (!counts_.warm && n >= kMinWarmup &&
        (n >= kWarmupFrames || now - arrivals_.front() >= kWarmupTime))
      counts_.warm = true, counts_.warm_at = now;
    arrivals_.push_back(now);
    counts_.last = now;
    counts_.frames = n + 1;
    changed_.notify_all();
  }
  void keep(const harness::BusLog &log) {
    if (warning_.empty() && !log.warnings.empty()) warning_ = "warning: " + log.warnings[0].text;
    if (!log.errors.empty()) throw std::runtime_error(log.errors.front().text);
  }
  std::string warning_;
  mutable std::mutex mutex_;  // guards the log
  std::condition_variable changed_;
  Counts counts_;
  std::vector<Clock::time_point> pushes_, arrivals_;
  harness::Pipeline pipeline_;  // last: it stops before the log it writes goes
};

#ifdef CUDAGRAY_HAVE_GST_CUDA
// RGB frames in CUDA memory from GStreamer's CUDA buffer pool in a shared
// context, as a decoder or cudaupload upstream would; each filled on the
// host once and uploaded before the row.
std::unique_ptr<PoolFrames> cuda_memory_frames(const FrameSize &size, size_t rotate_bytes,
                                               GstObject *context) {
  gsize bytes = 0;
  GstCaps *caps = rgb_caps(size, true, &bytes);
  auto frames = std::make_unique<PoolFrames>(gst_cuda_buffer_pool_new(GST_CUDA_CONTEXT(context)),
                                             caps, bytes, rotation_count(bytes, rotate_bytes),
                                             "GStreamer's CUDA buffer pool");
  gst_caps_unref(caps);
  for (size_t i = 0; i < frames->ring.size(); ++i) {  // a CUDA mapping uploads the host's bytes
    GstBuffer *buffer = frames->ring.next();
    GstMapInfo map;
    const bool mapped = gst_buffer_map(buffer, &map, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA));
    if (mapped) gst_buffer_unmap(buffer, &map);
    gst_buffer_unref(buffer);
    if (!mapped) throw std::runtime_error("a CUDA memory frame could not be uploaded");
  }
  return frames;
}
#endif

// The element's stats property (the caller frees it), or null when it has none.
GstStructure *element_stats(GstElement *dut) {
  GParamSpec *spec = dut ? g_object_class_find_property(G_OBJECT_GET_CLASS(dut), "stats") : nullptr;
  GstStructure *stats = nullptr;
  if (spec && G_PARAM_SPEC_VALUE_TYPE(spec) == GST_TYPE_STRUCTURE)
    g_object_get(dut, "stats", &stats, nullptr);
  return stats;
}

// The element's own figures, as a note.
std::string stats_note(GstElement *dut) {
  GstStructure *stats = element_stats(dut);
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

// Pinned host memory the plugin holds in this process, from an element's
// stats, in MiB.
double pinned_mib_held(GstElement *dut) {
  GstStructure *stats = element_stats(dut);
  guint64 bytes = 0;
  const bool found = stats && gst_structure_get_uint64(stats, "process-pinned-bytes", &bytes);
  if (stats) gst_structure_free(stats);
  return found ? static_cast<double>(bytes) / (1 << 20) : NAN;
}

// Device memory in use on these GPUs together, by anyone, in MiB.
double gpu_mib_used(const std::vector<int> &devices) {
#ifdef CUDAGRAY_HAVE_CUDA
  int current = 0;
  double used = 0;
  if (cudaGetDevice(&current) != cudaSuccess) return NAN;
  for (const int device : devices) {
    size_t free = 0, total = 0;
    if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess)
      used = NAN;
    used += static_cast<double>(total - free) / (1 << 20);
  }
  cudaSetDevice(current);
  return used;
#else
  return NAN;
#endif
}

// Where the process's CPU time went between two thread_cpu_times() taken
// seconds apart while frames arrived, as a note: the busiest threads' CPU
// time a frame, and how much of the span each was on a CPU (a thread near
// 100 % bounds the rate).
std::string thread_cpu_note(const std::map<long, harness::ThreadCpu> &before,
                            const std::map<long, harness::ThreadCpu> &after, long frames,
                            double seconds) {
  if (frames <= 0 || seconds <= 0) return "";
  std::vector<std::pair<double, std::string>> used;  // CPU seconds, name
  double total = 0;
  for (const auto &[tid, t] : after) {
    const auto was = before.find(tid);
    const double spent = t.seconds - (was == before.end() ? 0 : was->second.seconds);
    total += spent;
    used.emplace_back(spent, t.name);
  }
  std::sort(used.rbegin(), used.rend());
  std::vector<std::string> busiest;
  char text[96];
  for (size_t i = 0; i < std::min<size_t>(4, used.size()); ++i) {
    std::snprintf(text, sizeof text, "%s %.1f us (%.0f %%)", used[i].second.c_str(),
                  1e6 * used[i].first / frames, 100 * used[i].first / seconds);
    busiest.push_back(text);
  }
  std::snprintf(text, sizeof text,
                "CPU a frame in the window: %.1f us (busiest threads: ", 1e6 * total / frames);
  return text + join(busiest, ", ") + ")";
}

// One pipeline of a run: its frames, the pipeline, and the thread pushing
// into it, stopped and joined however the row ends. Pool frames go back
// before the pipeline goes.
struct Stream {
  FrameRing pageable;  // a pageable upstream's frames; the pinned pool's priming frame
  std::unique_ptr<BenchPipeline> pipeline;
  std::unique_ptr<PoolFrames> pooled;  // in CUDA memory, or from the element's pool
  FrameRing *frames = &pageable;       // those pushed
  std::string note;                    // what they are
  std::thread pusher;
  std::atomic<bool> stop{false};
  long pushed = 0, late = 0;
  std::string error;  // what stopped the pusher

  ~Stream() { join(); }
  void join() {
    stop = true;
    if (pusher.joinable()) pusher.join();
  }
};

// A pipeline's pusher: flat out, `ahead` frames ahead of its sink; or
// paced, one frame every interval from start. The pusher alone reads its
// pipeline's bus while it runs.
void push_frames(Stream &s, long ahead, Clock::duration interval, Clock::time_point start) {
  try {
    Clock::time_point changed = Clock::now(), due = start;
    long seen = 0;
    while (!s.stop) {
      if (interval.count() > 0) {
        std::this_thread::sleep_until(due);
        if (Clock::now() - due > interval) ++s.late;
        due += interval;
        s.pipeline->throw_if_bus_error();
      } else if (!s.pipeline->wait_for(s.pushed - ahead + 1, 100ms)) {
        s.pipeline->throw_if_bus_error();
        const long frames = s.pipeline->counts().frames;
        if (frames != seen) seen = frames, changed = Clock::now();
        if (Clock::now() - changed > kStallTime)
          throw std::runtime_error("no frame reached a sink for 30 s, " + std::to_string(s.pushed) +
                                   " pushed (" + stats_note(s.pipeline->dut()) + ")");
        continue;
      }
      s.pipeline->push(s.frames->next());
      ++s.pushed;
    }
  } catch (const std::exception &e) {
    s.error = e.what();
  }
}

}  // namespace

SharedCudaContexts shared_contexts(const std::vector<int> &devices, std::string *why) {
#ifdef CUDAGRAY_HAVE_GST_CUDA
  if (!gst_cuda_load_library()) {
    *why = "n/a: GStreamer's CUDA library could not load the CUDA driver";
    return {};
  }
  gst_cuda_memory_init_once();
  SharedCudaContexts contexts;
  for (const int device : devices) {
    GstCudaContext *context = gst_cuda_context_new(device);
    if (!context) {
      *why = "n/a: GStreamer could not make a CUDA context on device " + std::to_string(device);
      return {};
    }
    contexts.emplace_back(GST_OBJECT(context), gst_object_unref);
  }
  return contexts;
#else
  *why = "n/a: bench built without gstreamer-cuda-1.0";  // each element makes its own context
  return {};
#endif
}

void time_pipelines(const Run &run, const Options &options, Row &row) {
  const FrameSize &size = row.size;
  const int count = static_cast<int>(run.middles.size());
  const auto context = [&](int i) {
    return run.contexts.empty() ? nullptr : run.contexts[i % run.contexts.size()].get();
  };
  // the pipelines rotate over options' bytes together
  const size_t rotate_bytes = std::max<size_t>(options.rotate_bytes / count, 1);
  const size_t bytes = frame_bytes(PixelLayout::RGB, size);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < count; ++i) {  // the bench's frames first: not the pipelines' cost
    Stream &s = *streams.emplace_back(std::make_unique<Stream>());
#ifdef CUDAGRAY_HAVE_GST_CUDA
    if (run.cuda_memory) {
      s.pooled = cuda_memory_frames(size, rotate_bytes, context(i));
      s.frames = &s.pooled->ring;
      s.note = std::to_string(s.frames->size()) + " CUDA memory frames";
      continue;
    }
#endif
    // plain malloc'd, as an upstream without a pool makes; a pool run pushes
    // one of them only, to prime the pool
    for (size_t k = 0; k < rotation_count(bytes, run.pool ? 1 : rotate_bytes); ++k) {
      GstBuffer *buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
      if (!buffer) throw std::bad_alloc();
      s.pageable.add(buffer);
      harness::fill_buffer(buffer, 100 * i + k);
    }
    s.note = std::to_string(s.pageable.size()) + " pageable frames";
  }
  const double gpu_before = gpu_mib_used(run.devices);
  const int threads_before = harness::proc_entries("task");
  const Clock::time_point setup = Clock::now();
  for (int i = 0; i < count; ++i)
    streams[i]->pipeline = std::make_unique<BenchPipeline>(run.middles[i], size, run.cuda_memory,
                                                           run.paced_fps > 0, context(i));
  row.load.start_ms = seconds_since(setup) * 1e3 / count;
  const size_t wanted = rotation_count(bytes, rotate_bytes);
  if (run.pool)
    for (auto &s : streams) {
      s->pooled = s->pipeline->pool_frames(s->pageable.next(), bytes, wanted);
      s->frames = &s->pooled->ring;
      const size_t n = s->frames->size();
      s->note = std::to_string(n) + " pool frames" +
                (n < wanted ? " (of " + std::to_string(wanted) + " wanted)" : "") + ", memory " +
                memory_kind(s->frames->front());
    }

  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(run.paced_fps > 0 ? 1 / run.paced_fps : 0));
  const Clock::time_point start = Clock::now() + 10ms;
  for (int i = 0; i < count; ++i)  // cameras are not in phase: spread over one interval
    streams[i]->pusher = std::thread(push_frames, std::ref(*streams[i]), run.ahead, interval,
                                     start + interval * i / count);
  const auto throw_if_failed = [&] {
    for (const auto &s : streams)
      if (!s->error.empty()) throw std::runtime_error(s->error);
  };
  // The window runs from the last pipeline's warm-up to the last arrival.
  Clock::time_point from, to;
  const auto arrivals = [&] {  // of every pipeline; `to` gets the last
    long frames = 0;
    for (auto &s : streams) {
      const BenchPipeline::Counts c = s->pipeline->counts();
      frames += c.frames;
      to = std::max(to, c.last);
    }
    return frames;
  };
  for (auto &s : streams) {
    BenchPipeline::Counts c;
    while (!(c = s->pipeline->counts()).warm) {
      throw_if_failed();
      if (Clock::now() - start > kWarmupLimit)
        throw std::runtime_error("the streams were not warm within 60 s");
      std::this_thread::sleep_for(10ms);
    }
    from = std::max(from, c.warm_at);
  }
  const long base = arrivals();  // once all are warm: at least min_frames more are measured
  const auto cpu_before = harness::thread_cpu_times();
  const Clock::time_point cpu_from = Clock::now();
  const double process_cpu_from = process_cpu_seconds();
  row.load.gpu_mib = (gpu_mib_used(run.devices) - gpu_before) / count;
  row.load.process_threads = harness::proc_entries("task");
  row.load.threads = static_cast<double>(row.load.process_threads - threads_before - count) / count;
  row.load.pinned_mib = pinned_mib_held(streams[0]->pipeline->dut()) / count;
  const std::chrono::duration<double> wanted_time(options.seconds);
  while (arrivals() - base < run.min_frames || to - from < wanted_time) {
    std::this_thread::sleep_for(10ms);
    throw_if_failed();
  }
  const long cpu_frames = arrivals() - base;
  row.cpu_us = 1e6 * (process_cpu_seconds() - process_cpu_from) / cpu_frames;
  const std::string cpu_note =
      thread_cpu_note(cpu_before, harness::thread_cpu_times(), cpu_frames,
                      std::chrono::duration<double>(Clock::now() - cpu_from).count());
  for (auto &s : streams) s->join();
  throw_if_failed();

  const double seconds = std::chrono::duration<double>(to - from).count();
  std::vector<double> rates, latency_us;
  for (auto &s : streams) {
    s->pipeline->end();
    const long frames = s->pipeline->window(from, to, &latency_us);
    rates.push_back(frames / seconds);
    row.frames += frames;
    row.load.dropped += s->pushed - s->pipeline->counts().frames;
    row.load.late += s->late;
  }
  if (row.frames == 0) throw std::runtime_error("no frame arrived in the measured window");
  row.us = seconds / row.frames * 1e6;
  row.load.stream_fps_min = *std::min_element(rates.begin(), rates.end());
  row.load.stream_fps_max = *std::max_element(rates.begin(), rates.end());
  row.load.latency_p50_us = percentile(latency_us, 0.5);
  row.load.latency_p99_us = percentile(latency_us, 0.99);
  if (row.group == "latency") take_median(row, latency_us);
  const Stream &first = *streams[0];
  row.note = join({row.note, first.note + (row.load.streams > 0 ? " per stream" : ""), run.note,
                   stats_note(first.pipeline->dut()), cpu_note, first.pipeline->warnings_note()});
}

}  // namespace bench
