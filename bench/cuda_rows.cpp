// Rows measured with CUDA directly: same-traffic device copies, pinned
// transfers, the cudagray kernel alone, and the raw CUDA loops that are the
// element's ceilings.
#include "cuda_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "cuda_util.h"
#include "cudagray/convert_cuda.h"

namespace bench {

namespace {

// Equal buffers (device or pinned host), picked by a rotating index.
template <class Owner>
class Ring {
 public:
  Ring(size_t count, size_t bytes, Owner (*make)(size_t)) : bytes_(bytes) {
    for (size_t i = 0; i < count; ++i) frames_.push_back(make(bytes));
  }
  uint8_t *at(long i) const {
    return static_cast<uint8_t *>(frames_[static_cast<size_t>(i) % frames_.size()].get());
  }
  size_t count() const { return frames_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  std::vector<Owner> frames_;
  size_t bytes_;
};
using DeviceRing = Ring<DeviceMemory>;
using PinnedRing = Ring<PinnedMemory>;

DeviceRing random_device_ring(size_t count, size_t bytes, uint64_t seed) {
  DeviceRing ring(count, bytes, make_device_memory);
  PageableBlock host(bytes);
  for (size_t i = 0; i < count; ++i) {
    fill_random(host.data, bytes, seed + i);
    CHECK_CUDA(cudaMemcpy(ring.at(i), host.data, bytes, cudaMemcpyHostToDevice));
  }
  return ring;
}

PinnedRing random_pinned_ring(size_t count, size_t bytes, uint64_t seed) {
  PinnedRing ring(count, bytes, make_pinned_memory);
  for (size_t i = 0; i < count; ++i) fill_random(ring.at(i), bytes, seed + i);
  return ring;
}

// Seconds between two events around what enqueue puts on the stream.
class EventTimer {
 public:
  double seconds(cudaStream_t stream, const std::function<void()> &enqueue) {
    CHECK_CUDA(cudaEventRecord(start_.get(), stream));
    enqueue();
    CHECK_CUDA(cudaEventRecord(stop_.get(), stream));
    CHECK_CUDA(cudaEventSynchronize(stop_.get()));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
    return ms / 1e3;
  }

 private:
  Event start_ = make_event(), stop_ = make_event();
};

// Records `count` operations into a CUDA graph; an empty owner, and *why,
// when the stream cannot be captured (the stream is usable again either way).
GraphExec capture(cudaStream_t stream, long count, const Operation &op, std::string *why) {
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
  if (err != cudaSuccess) {
    cudaGetLastError();
    *why = std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(err);
    return {};
  }
  std::string failure;
  try {
    for (long i = 0; i < count; ++i) op(i, stream);
  } catch (const std::exception &e) {
    failure = e.what();
  }
  cudaGraph_t graph = nullptr;
  err = cudaStreamEndCapture(stream, &graph);  // ends the capture even after a failure
  const Graph owner(graph);
  if (failure.empty() && err != cudaSuccess)
    failure = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(err);
  if (failure.empty() && !graph) failure = "the capture made no graph";
  cudaGraphExec_t exec = nullptr;
  if (failure.empty()) {
    err = cudaGraphInstantiate(&exec, graph, 0);
    if (err != cudaSuccess) failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(err);
  }
  if (!failure.empty()) {
    cudaGetLastError();
    *why = failure;
    return {};
  }
  return GraphExec(exec);
}

// Where each plane of a tightly packed frame starts in one device block.
cudagray::InputFrame frame_at(PixelLayout layout, const FrameSize &size, const uint8_t *base) {
  const cudagray::LayoutInfo &info = cudagray::layout_info(layout);
  cudagray::InputFrame frame{layout, size.width, size.height, {}, {}};
  const size_t row = static_cast<size_t>(size.width) * info.bytes_per_pixel;
  for (int p = 0; p < info.planes; ++p) {
    frame.plane[p] = base + p * row * size.height;
    frame.stride[p] = row;
  }
  return frame;
}

// Device operations are stable: half the per-row time is plenty.
Options device_timing(const Options &options) {
  Options o = options;
  o.seconds = options.seconds / 2;
  return o;
}

// The row's figures from an operation timing.
void fill(Row &row, const OperationTiming &t) {
  row.us = t.us;
  row.frames = t.operations;
  row.note = t.how;
}

// Input bytes per pixel of a layout, all planes: 3 or 4.
int input_bytes_per_pixel(PixelLayout layout) {
  const cudagray::LayoutInfo &info = cudagray::layout_info(layout);
  return info.bytes_per_pixel * info.planes;
}

std::string copy_key(int bytes_per_pixel) { return "copy:" + std::to_string(bytes_per_pixel) + "B"; }

// Where a raw loop's RGB frames are: pinned host memory, pageable host
// memory (memcpy'd into pinned staging first), or already on the device.
enum class RawSource { Pinned, Staging, Device };

// Several streams, each with its own device frames: RGB (uploaded unless it
// is on the device already) → kernel → pinned host GRAY8, frames rotated by
// the caller. The staging variant first memcpys each pageable frame into the
// lane's pinned staging buffer, once the lane's previous upload from it is
// done.
class RawLoop {
 public:
  RawLoop(const FrameSize &size, int lanes, RawSource source)
      : size_(size), in_bytes_(3 * size.pixels()), out_bytes_(size.pixels()), source_(source) {
    for (int l = 0; l < lanes; ++l) {
      Lane lane;
      lane.stream = make_stream();
      if (source_ != RawSource::Device) lane.in = make_device_memory(in_bytes_);
      lane.out = make_device_memory(out_bytes_);
      if (source_ == RawSource::Staging) lane.staging = make_pinned_memory(in_bytes_);
      lane.uploaded = make_event();
      lanes_.push_back(std::move(lane));
    }
  }

  // in: a host frame, or a device frame for RawSource::Device.
  void enqueue(long i, const uint8_t *in, uint8_t *host_out) {
    Lane &lane = lanes_[static_cast<size_t>(i) % lanes_.size()];
    const uint8_t *on_device = in;
    if (source_ != RawSource::Device) {
      const uint8_t *host = in;
      if (source_ == RawSource::Staging) {
        if (lane.staging_used) CHECK_CUDA(cudaEventSynchronize(lane.uploaded.get()));
        std::memcpy(lane.staging.get(), in, in_bytes_);
        host = static_cast<const uint8_t *>(lane.staging.get());
      }
      CHECK_CUDA(cudaMemcpyAsync(lane.in.get(), host, in_bytes_, cudaMemcpyHostToDevice,
                                     lane.stream.get()));
      if (source_ == RawSource::Staging) {
        CHECK_CUDA(cudaEventRecord(lane.uploaded.get(), lane.stream.get()));
        lane.staging_used = true;
      }
      on_device = static_cast<const uint8_t *>(lane.in.get());
    }
    const cudagray::InputFrame frame = frame_at(PixelLayout::RGB, size_, on_device);
    const cudagray::GrayFrame gray{static_cast<uint8_t *>(lane.out.get()),
                                   static_cast<size_t>(size_.width)};
    CHECK_CUDA(cudagray::convert_cuda(frame, gray, weights_, lane.stream.get()));
    CHECK_CUDA(cudaMemcpyAsync(host_out, lane.out.get(), out_bytes_, cudaMemcpyDeviceToHost,
                                   lane.stream.get()));
  }

  void synchronize() {
    for (Lane &lane : lanes_) CHECK_CUDA(cudaStreamSynchronize(lane.stream.get()));
  }

  size_t in_bytes() const { return in_bytes_; }
  size_t out_bytes() const { return out_bytes_; }

 private:
  struct Lane {
    Stream stream;
    DeviceMemory in, out;
    PinnedMemory staging;
    Event uploaded;  // the lane's last upload (from staging) is done
    bool staging_used = false;
  };
  FrameSize size_;
  size_t in_bytes_, out_bytes_;
  RawSource source_;
  cudagray::Weights weights_ = cudagray::standard_weights(cudagray::Matrix::BT601);
  std::vector<Lane> lanes_;
};

constexpr int kRawStreams = 3;

}  // namespace

bool cuda_open(int device, std::string *description, std::string *reason) {
  std::string why;
  const int count = cudagray::cuda_device_count(&why);
  if (count == 0) {
    *reason = "no usable CUDA device: " + why;
    return false;
  }
  if (device < 0 || device >= count) {
    *reason = "no usable CUDA device: device " + std::to_string(device) + " does not exist (" +
              std::to_string(count) + " found)";
    return false;
  }
  try {
    CHECK_CUDA(cudaSetDevice(device));
    CHECK_CUDA(cudaFree(nullptr));  // creates the context now
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    int driver = 0, runtime = 0;
    CHECK_CUDA(cudaDriverGetVersion(&driver));
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    *description = std::string(prop.name) + " (device " + std::to_string(device) + " of " +
                   std::to_string(count) + ", sm_" + std::to_string(prop.major) +
                   std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) +
                   " SMs, " + format_double(prop.totalGlobalMem / double(1 << 30), 1) + " GiB, L2 " +
                   format_double(prop.l2CacheSize / double(1 << 20), 0) + " MiB; driver " +
                   version(driver) + ", runtime " + version(runtime) + ")";
    return true;
  } catch (const std::exception &e) {
    *reason = std::string("no usable CUDA device: ") + e.what();
    return false;
  }
}

std::string host_memory_kind(const void *pointer) {
  cudaPointerAttributes attributes;
  const cudaError_t err = cudaPointerGetAttributes(&attributes, pointer);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("unknown (") + cudaGetErrorName(err) + ")";
  }
  switch (attributes.type) {
    case cudaMemoryTypeUnregistered: return "pageable";
    case cudaMemoryTypeHost: return "pinned";
    case cudaMemoryTypeDevice: return "device";
    case cudaMemoryTypeManaged: return "managed";
  }
  return "unknown";
}

size_t device_rotation_bytes(const Options &options) {
  int device = 0, l2 = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return std::max(options.rotate_bytes, 4 * static_cast<size_t>(l2));
}

OperationTiming time_operations(cudaStream_t stream, long rotation, const Operation &op,
                                const Options &options, bool best_of_both) {
  EventTimer timer;
  long next = 0;
  const auto plain = [&](long n) {
    return timer.seconds(stream, [&] {
      for (long k = 0; k < n; ++k) op(next++, stream);
    });
  };
  const auto time_plain = [&] {
    OperationTiming t;
    t.us = seconds_per_iteration(plain, Budget{options.seconds, 20, 10000000, 5}, &t.operations) * 1e6;
    t.how = "plain launches";
    return t;
  };
  // Warm up outside any capture (first launches load modules lazily), and
  // size the graph at a few milliseconds of work, covering every frame.
  plain(3);
  const double plain_estimate = plain(16) / 16;
  const long batch = std::max(
      rotation, std::clamp(static_cast<long>(std::llround(0.005 / std::max(plain_estimate, 1e-9))),
                           16L, 1024L));
  std::string why;
  const GraphExec graph = capture(stream, batch, op, &why);
  if (!graph.get()) {
    OperationTiming t = time_plain();
    t.how += " (no CUDA graph: " + why + ")";
    return t;
  }
  const auto launches = [&](long count) {
    return timer.seconds(stream, [&] {
      for (long k = 0; k < count; ++k) CHECK_CUDA(cudaGraphLaunch(graph.get(), stream));
    });
  };
  OperationTiming timing;
  long n = 0;
  timing.us = seconds_per_iteration(launches, Budget{options.seconds, 2, 100000, 5}, &n) / batch * 1e6;
  timing.operations = n * batch;
  timing.how = "CUDA graph of " + std::to_string(batch) + " back-to-back operations";
  if (!best_of_both) return timing;
  const OperationTiming other = time_plain();
  const std::string both = " (graph " + format_double(timing.us, 2) + " us, plain " + format_double(other.us, 2) + " us)";
  OperationTiming best = other.us < timing.us ? other : timing;
  best.how = "CUDA graph or plain launches, the faster" + both;
  return best;
}

void device_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const bool kernels = options.wants("kernel");
  const bool copies = options.wants("copy") || kernels || options.wants("npp");
  if (!copies) return;
  const Options timing = device_timing(options);
  const size_t n = size.pixels();
  const size_t copy_bytes_max = n * 5 / 2;
  try {
    const size_t count = rotation_count(5 * n, device_rotation_bytes(options));
    const DeviceRing in = random_device_ring(count, 4 * n, 1000);
    const DeviceRing gray(count, n, make_device_memory);
    const DeviceRing copies_to(count, copy_bytes_max, make_device_memory);
    const Stream stream = make_stream();
    const long rotation = static_cast<long>(count);

    // The kernel reads bpp*N and writes N bytes; a copy of (bpp+1)/2*N bytes
    // reads and writes as much.
    for (int bpp : {3, 4}) {
      Row row;
      row.size = size;
      row.group = "copy";
      row.key = copy_key(bpp);
      row.format = bpp == 3 ? "RGB" : "RGBx";
      row.what = std::string("device copy, same traffic as a ") + (bpp == 3 ? "3" : "4") +
                 "-byte-per-pixel frame";
      row.versus_videoconvert = false;
      const size_t bytes = n * (bpp + 1) / 2;
      row.bytes = 2.0 * bytes;
      record(rows, row, [&](Row &r) {
        fill(r, time_operations(stream.get(), rotation, [&](long i, cudaStream_t s) {
          CHECK_CUDA(cudaMemcpyAsync(copies_to.at(i), in.at(i), bytes, cudaMemcpyDeviceToDevice, s));
        }, timing, true));
      });
    }

    if (options.wants("copy")) {
      const size_t host_count = rotation_count(3 * n, options.rotate_bytes);
      const PinnedRing host_in = random_pinned_ring(host_count, 3 * n, 2000);
      const PinnedRing host_out(host_count, n, make_pinned_memory);
      struct Transfer { const char *key, *what; size_t bytes; bool up; };
      for (const Transfer &t : {Transfer{"copy:h2d", "pinned H2D of an RGB frame", 3 * n, true},
                                Transfer{"copy:d2h", "pinned D2H of a GRAY8 frame", n, false}}) {
        Row row;
        row.size = size;
        row.group = "copy";
        row.key = t.key;
        row.what = t.what;
        row.format = t.up ? "RGB" : "GRAY8";
        row.bytes = t.bytes;
        row.versus_videoconvert = false;
        record(rows, row, [&](Row &r) {
          fill(r, time_operations(stream.get(), rotation, [&](long i, cudaStream_t s) {
            if (t.up)
              CHECK_CUDA(cudaMemcpyAsync(in.at(i), host_in.at(i), t.bytes, cudaMemcpyHostToDevice, s));
            else
              CHECK_CUDA(cudaMemcpyAsync(host_out.at(i), gray.at(i), t.bytes, cudaMemcpyDeviceToHost, s));
          }, timing));
        });
      }
    }

    if (kernels) {
      const cudagray::Weights weights = cudagray::standard_weights(cudagray::Matrix::BT601);
      for (PixelLayout layout : options.formats) {
        const int bpp = input_bytes_per_pixel(layout);
        Row row;
        row.size = size;
        row.group = "kernel";
        row.key = std::string("kernel:") + layout_name(layout);
        row.what = "cudagray kernel alone";
        row.format = layout_name(layout);
        row.bytes = double(bpp + 1) * n;
        row.ceiling = copy_key(bpp);
        if (cudagray::layout_info(layout).planes == 1) row.peer = bpp == 3 ? "npp:C3" : "npp:AC4";
        record(rows, row, [&](Row &r) {
          fill(r, time_operations(stream.get(), rotation, [&](long i, cudaStream_t s) {
            const cudagray::GrayFrame out{gray.at(i), static_cast<size_t>(size.width)};
            CHECK_CUDA(cudagray::convert_cuda(frame_at(layout, size, in.at(i)), out, weights, s));
          }, timing));
        });
      }
    }
  } catch (const std::exception &e) {  // allocation or setup; record() keeps per-row failures
    record(rows, skipped_row(size, "kernel", "kernel:setup", "cudagray kernel and device copies",
                             std::string("failed: ") + e.what()), nullptr);
  }
}

void raw_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const size_t n = size.pixels();
  Row pinned;
  pinned.size = size;
  pinned.group = "raw";
  pinned.key = "raw:pinned";
  pinned.what = "raw CUDA, pinned in/out, 3 streams";
  pinned.format = "RGB";
  pinned.bytes = 4.0 * n;
  Row staged = pinned;
  staged.key = "raw:staging";
  staged.what = "raw CUDA, pageable via staging memcpy, 3 streams";
  staged.ceiling = "raw:pinned";
  Row device = pinned;
  device.key = "raw:device";
  device.what = "raw CUDA, input on the device, pinned out, 3 streams";
  device.ceiling = "raw:pinned";
  const Budget budget{options.seconds, 20, 10000000, 3};
  // Frames through a loop, rotated over inputs: µs per frame.
  auto time_loop = [&](RawLoop &loop, const std::function<const uint8_t *(long)> &input,
                       const PinnedRing &host_out, Row &r) {
    long next = 0;
    r.us = seconds_per_iteration([&](long frames) {
      const Clock::time_point start = Clock::now();
      for (long k = 0; k < frames; ++k, ++next) loop.enqueue(next, input(next), host_out.at(next));
      loop.synchronize();
      return seconds_since(start);
    }, budget, &r.frames) * 1e6;
  };

  try {
    const size_t count = rotation_count(3 * n, options.rotate_bytes);
    const PinnedRing host_out(count, n, make_pinned_memory);
    {
      const PinnedRing host_in = random_pinned_ring(count, 3 * n, 3000);
      RawLoop loop(size, kRawStreams, RawSource::Pinned);
      record(rows, pinned, [&](Row &r) {
        time_loop(loop, [&](long i) { return host_in.at(i); }, host_out, r);
        r.note = std::to_string(count) + " pinned frames rotated";
      });
    }
    {
      const size_t on_device = rotation_count(3 * n, device_rotation_bytes(options));
      const DeviceRing device_in = random_device_ring(on_device, 3 * n, 3500);
      RawLoop loop(size, kRawStreams, RawSource::Device);
      record(rows, device, [&](Row &r) {
        time_loop(loop, [&](long i) { return device_in.at(i); }, host_out, r);
        r.note = std::to_string(on_device) + " device frames rotated";
      });
    }
    {
      std::vector<std::unique_ptr<PageableBlock>> pageable;
      for (size_t i = 0; i < count; ++i) {
        pageable.push_back(std::make_unique<PageableBlock>(3 * n));
        fill_random(pageable.back()->data, 3 * n, 4000 + i);
      }
      RawLoop loop(size, kRawStreams, RawSource::Staging);
      record(rows, staged, [&](Row &r) {
        time_loop(loop, [&](long i) { return pageable[static_cast<size_t>(i) % count]->data; }, host_out, r);
        r.note = std::to_string(count) + " pageable frames rotated; one memcpy thread";
      });
    }
  } catch (const std::exception &e) {  // allocation or setup
    record(rows, skipped_row(size, "raw", "raw:setup", "raw CUDA loops",
                             std::string("failed: ") + e.what()), nullptr);
  }
}

void raw_latency_row(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const size_t n = size.pixels();
  Row row;
  row.size = size;
  row.group = "latency";
  row.key = "raw:latency";
  row.what = "raw CUDA single frame, pinned, 1 stream, synchronised";
  row.format = "RGB";
  row.bytes = 4.0 * n;
  row.versus_videoconvert = false;
  record(rows, row, [&](Row &r) {
    const size_t count = rotation_count(3 * n, options.rotate_bytes);
    const PinnedRing host_in = random_pinned_ring(count, 3 * n, 5000);
    const PinnedRing host_out(count, n, make_pinned_memory);
    RawLoop loop(size, 1, RawSource::Pinned);
    std::vector<double> samples;
    const Clock::time_point begin = Clock::now();
    for (long i = 0; samples.size() < 2000; ++i) {
      const Clock::time_point start = Clock::now();
      loop.enqueue(i, host_in.at(i), host_out.at(i));
      loop.synchronize();
      const double us = seconds_since(start) * 1e6;
      if (i >= 10) samples.push_back(us);  // after a warm-up
      if (samples.size() >= 100 && seconds_since(begin) >= options.seconds) break;
    }
    r.us = median(samples);
    r.frames = static_cast<long>(samples.size());
    r.note = "median of " + std::to_string(samples.size()) + "; p90 " +
             format_double(percentile(samples, 0.9), 1) + " us";
  });
}

}  // namespace bench
