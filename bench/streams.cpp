// SPDX-License-Identifier: LGPL-2.1-or-later
// The streams rows: N cudagray pipelines at once in one process, as an
// application with many cameras runs them, sharing one CUDA context per GPU;
// their aggregate and per-stream rates, the latency of every frame from push
// to sink, and what each stream costs the process.
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

#include "bench_pipeline.h"
#include "gst_rows.h"
#ifdef CUDAGRAY_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace bench {

namespace {

using namespace std::chrono_literals;

constexpr long kStreamAhead = 8;  // frames a stream keeps ahead of its sink when flat out
constexpr auto kStallTime = 30s;  // a stream with no arrival for this long fails the row
constexpr auto kWarmupLimit = 60s;

#ifdef CUDAGRAY_HAVE_GST_CUDA
using Context = SharedCudaContext;
#else
struct Context {  // without gstreamer-cuda-1.0 each element makes its own
  explicit Context(int) { throw Unavailable("bench built without gstreamer-cuda-1.0"); }
  void share_with(GstElement *) const {}
};
#endif

int process_threads() {
  DIR *dir = opendir("/proc/self/task");
  if (!dir) return 0;
  int n = 0;
  while (const dirent *e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n;
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
  (void)devices;
  return NAN;
#endif
}

// Pinned host memory the plugin holds in this process, from an element's
// stats, in MiB.
double pinned_mib_held(GstElement *dut) {
  GstStructure *stats = nullptr;
  guint64 bytes = 0;
  if (g_object_class_find_property(G_OBJECT_GET_CLASS(dut), "stats"))
    g_object_get(dut, "stats", &stats, nullptr);
  const bool found = stats && gst_structure_get_uint64(stats, "process-pinned-bytes", &bytes);
  if (stats) gst_structure_free(stats);
  return found ? static_cast<double>(bytes) / (1 << 20) : NAN;
}

// One camera: its frames, its pipeline, and the thread pushing into it.
struct Stream {
  FrameRing pageable;  // a pageable upstream's frames; the pinned pool's priming frame
#ifdef CUDAGRAY_HAVE_GST_CUDA
  std::unique_ptr<CudaMemoryFrames> on_device;
#endif
  std::unique_ptr<BenchPipeline> pipeline;
  std::unique_ptr<Feed> feed;
  std::thread pusher;
  long pushed = 0, late = 0;
  std::string error;  // what stopped the pusher
};

// Every stream's pusher: flat out, `ahead` frames ahead of its sink; or paced,
// one frame every interval from start.
void push_frames(Stream &s, const std::atomic<bool> &stop, Clock::duration interval,
                 Clock::time_point start) {
  ArrivalLog &arrivals = s.pipeline->arrivals();
  try {
    Clock::time_point changed = Clock::now(), due = start;
    long seen = 0;
    while (!stop) {
      if (interval.count() > 0) {
        std::this_thread::sleep_until(due);
        if (Clock::now() - due > interval) ++s.late;
        due += interval;
      } else if (!arrivals.wait_for(s.pushed - kStreamAhead + 1, 100ms)) {
        const long frames = arrivals.counts().frames;
        if (frames != seen) seen = frames, changed = Clock::now();
        if (Clock::now() - changed > kStallTime)
          throw std::runtime_error("no frame reached a sink for 30 s, " + std::to_string(s.pushed) +
                                   " pushed (" + stats_note(s.pipeline->dut()) + ")");
        continue;
      }
      s.pipeline->push(s.feed->next());
      ++s.pushed;
    }
  } catch (const std::exception &e) {
    s.error = e.what();
  }
}

// Stops and joins the pushers however the row ends.
struct Pushers {
  std::vector<std::unique_ptr<Stream>> &streams;
  std::atomic<bool> stop{false};
  ~Pushers() { join(); }
  void join() {
    stop = true;
    for (auto &s : streams)
      if (s->pusher.joinable()) s->pusher.join();
  }
  void throw_if_failed() const {
    for (const auto &s : streams)
      if (!s->error.empty()) throw std::runtime_error("a stream failed: " + s->error);
  }
};

// One row: count streams of upstream u, stream i on GPU devices[i % size].
void measure(const FrameSize &size, const Options &options, const Upstream &u,
             const std::vector<const Context *> &contexts, const std::vector<int> &devices,
             int count, Row &row) {
  Options per_stream = options;  // the streams rotate over options' bytes together
  per_stream.rotate_bytes = std::max<size_t>(options.rotate_bytes / count, 1);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < count; ++i) {  // the bench's frames first: not the element's cost
    streams.push_back(std::make_unique<Stream>());
    if (!u.cuda_memory) add_pageable_frames(&streams.back()->pageable, size, per_stream, 100 * i);
#ifdef CUDAGRAY_HAVE_GST_CUDA
    const Context *context = contexts[i % contexts.size()];
    if (u.cuda_memory)
      streams.back()->on_device =
          std::make_unique<CudaMemoryFrames>(size, per_stream.rotate_bytes, *context);
#endif
  }
  const double gpu_before = gpu_mib_used(devices);
  const int threads_before = process_threads();
  const Clock::time_point setup = Clock::now();
  for (int i = 0; i < count; ++i) {
    Stream &s = *streams[i];
    s.pipeline = std::make_unique<BenchPipeline>(
        cudagray_cuda(devices[i % devices.size()], u.gray_on_device), size, u.cuda_memory,
        options.paced_fps > 0);
    if (const Context *context = contexts[i % contexts.size()])
      context->share_with(s.pipeline->dut());
    s.pipeline->play();
  }
  row.load.start_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - setup).count() / count;
  for (auto &s : streams) {
#ifdef CUDAGRAY_HAVE_GST_CUDA
    if (u.cuda_memory) {
      s->feed = std::make_unique<Feed>(s->on_device->ring(), "CUDA memory");
      continue;
    }
#endif
    s->feed = u.pinned_pool ? std::make_unique<Feed>(*s->pipeline, s->pageable, size, per_stream)
                            : std::make_unique<Feed>(s->pageable, "pageable");
  }

  const Clock::duration interval = options.paced_fps > 0
                                       ? std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(1.0 / options.paced_fps))
                                       : Clock::duration(0);
  const Clock::time_point start = Clock::now() + 10ms;
  Pushers pushers{streams};
  for (int i = 0; i < count; ++i)  // cameras are not in phase: spread over one interval
    streams[i]->pusher = std::thread(push_frames, std::ref(*streams[i]), std::cref(pushers.stop),
                                     interval, start + interval * i / count);
  for (auto &s : streams) {
    while (s->pipeline->arrivals().counts().window_start < 0) {
      pushers.throw_if_failed();
      if (Clock::now() - start > kWarmupLimit)
        throw std::runtime_error("the streams were not warm within 60 s");
      std::this_thread::sleep_for(10ms);
    }
  }
  const Clock::time_point from = Clock::now();
  row.load.gpu_mib = (gpu_mib_used(devices) - gpu_before) / count;
  row.load.process_threads = process_threads();
  row.load.threads = static_cast<double>(row.load.process_threads - threads_before - count) / count;
  row.load.pinned_mib = pinned_mib_held(streams[0]->pipeline->dut()) / count;
  while (Clock::now() - from < std::chrono::duration<double>(options.seconds)) {
    pushers.throw_if_failed();
    std::this_thread::sleep_for(20ms);
  }
  const Clock::time_point to = Clock::now();
  pushers.join();
  pushers.throw_if_failed();

  const double seconds = std::chrono::duration<double>(to - from).count();
  std::vector<double> latencies, rates;
  for (auto &s : streams) {
    s->pipeline->end();
    const ArrivalLog::Timeline t = s->pipeline->arrivals().timeline();
    long frames = 0;
    for (size_t k = 0; k < t.arrivals.size(); ++k) {
      if (t.arrivals[k] <= from || t.arrivals[k] > to) continue;
      ++frames;
      if (k < t.latency_us.size()) latencies.push_back(t.latency_us[k]);
    }
    rates.push_back(frames / seconds);
    row.frames += frames;
    row.load.dropped += s->pushed - static_cast<long>(t.arrivals.size());
    row.load.late += s->late;
  }
  if (row.frames == 0) throw std::runtime_error("no frame arrived in the measured window");
  row.us = seconds / row.frames * 1e6;
  row.load.stream_fps_min = *std::min_element(rates.begin(), rates.end());
  row.load.stream_fps_max = *std::max_element(rates.begin(), rates.end());
  row.load.latency_p50_us = percentile(latencies, 0.5);
  row.load.latency_p99_us = percentile(latencies, 0.99);
  row.note = join({streams[0]->feed->note() + " per stream",
                   stats_note(streams[0]->pipeline->dut()), streams[0]->pipeline->warnings_note()});
}

}  // namespace

void stream_rows(const FrameSize &size, const Options &options, const Elements &elements,
                 const CudaState &cuda, std::vector<Row> *rows) {
  if (options.streams.empty() ||
      !element_usable(elements, cuda, Row(size, "streams", "streams:*", "cudagray streams"), rows))
    return;
  // One context per GPU, made once for every row, as an application would.
  std::vector<std::unique_ptr<Context>> owned;
  std::string why_no_context;
  for (const int device : options.devices) {
    try {
      owned.push_back(std::make_unique<Context>(device));
    } catch (const std::exception &e) {
      why_no_context = std::string("n/a: ") + e.what();
      owned.clear();
      break;
    }
  }
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
        row.versus_videoconvert = false;
        if (gpus > 1)
          row.peer = base + std::to_string(n) + (paced.empty() ? "" : ":paced");
        else if (paced.empty())
          row.ceiling =
              u.cuda_memory ? (u.gray_on_device ? "kernel:RGB" : "copy:d2h") : "raw:pinned";
        std::vector<const Context *> contexts;
        for (size_t i = 0; i < owned.size() && i < devices.size(); ++i)
          contexts.push_back(owned[i].get());
        if (contexts.empty()) {
          if (u.cuda_memory) {
            record(rows, row.skip(why_no_context));
            continue;
          }
          contexts.push_back(nullptr);  // each element makes its own context
        }
        record(rows, row, [&](Row &r) { measure(size, options, u, contexts, devices, count, r); });
      }
}

}  // namespace bench
