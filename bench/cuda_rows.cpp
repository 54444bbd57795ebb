// SPDX-License-Identifier: LGPL-2.1-or-later
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

// Seconds between two events around what enqueue puts on the stream.
double event_seconds(cudaStream_t stream, const std::function<void()> &enqueue) {
  const cudagray::EventOwner start = cudagray::make_event(), stop = cudagray::make_event();
  CHECK_CUDA(cudaEventRecord(start.get(), stream));
  enqueue();
  CHECK_CUDA(cudaEventRecord(stop.get(), stream));
  CHECK_CUDA(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / 1e3;
}

using GraphExec = cudagray::CudaOwner<cudaGraphExec_t, cudaGraphExecDestroy>;

// Records `count` operations into a CUDA graph; an empty owner, and *why,
// when the stream cannot be captured (the stream is usable again either way).
GraphExec capture(cudaStream_t stream, long count, const Operation &op, std::string *why) {
  try {
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    std::string failure;
    try {
      for (long i = 0; i < count; ++i) op(i, stream);
    } catch (const std::exception &e) {
      failure = e.what();
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);  // even after a failure
    const cudagray::CudaOwner<cudaGraph_t, cudaGraphDestroy> owner(graph);
    if (!failure.empty()) throw std::runtime_error(failure);
    CHECK_CUDA(ended);
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    return GraphExec(exec);
  } catch (const std::exception &e) {
    *why = e.what();
    return {};
  }
}

// Input bytes per pixel of a layout, all planes: 3 or 4.
int input_bytes_per_pixel(PixelLayout layout) {
  const cudagray::LayoutInfo &info = cudagray::layout_info(layout);
  return info.bytes_per_pixel * info.planes;
}

std::string copy_key(int bytes_per_pixel) {
  return "copy:" + std::to_string(bytes_per_pixel) + "B";
}

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
      lane.stream = cudagray::make_stream();
      if (source_ != RawSource::Device) lane.in = cudagray::make_device_memory(in_bytes_);
      lane.out = cudagray::make_device_memory(out_bytes_);
      if (source_ == RawSource::Staging) lane.staging = cudagray::make_pinned_memory(in_bytes_);
      lane.uploaded = cudagray::make_event();
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

 private:
  struct Lane {
    cudagray::StreamOwner stream;
    cudagray::DeviceMemory in, out;
    cudagray::PinnedMemory staging;
    cudagray::EventOwner uploaded;  // the lane's last upload (from staging) is done
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
  if (cudagray::open_cuda_device(device, &why) < 0) {
    *reason = "no usable CUDA device: " + why;
    return false;
  }
  try {
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    int driver = 0, runtime = 0;
    CHECK_CUDA(cudaDriverGetVersion(&driver));
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    auto version = [](int v) {
      return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    };
    *description = std::string(prop.name) + " (device " + std::to_string(device) + " of " +
                   std::to_string(count) + ", sm_" + std::to_string(prop.major) +
                   std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) +
                   " SMs, " + format_double(prop.totalGlobalMem / double(1 << 30), 1) +
                   " GiB, L2 " + format_double(prop.l2CacheSize / double(1 << 20), 0) +
                   " MiB; driver " + version(driver) + ", runtime " + version(runtime) + ")";
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

void time_operations(cudaStream_t stream, long rotation, const Operation &op,
                     const Options &options, Row &row, bool best_of_both) {
  const double seconds = options.seconds / 2;  // device operations are stable: half is plenty
  long next = 0;
  const auto plain = [&](long n) {
    return event_seconds(stream, [&] {
      for (long k = 0; k < n; ++k) op(next++, stream);
    });
  };
  long plain_count = 0;
  const auto time_plain = [&] {
    return seconds_per_iteration(plain, Budget{seconds, 20, 10000000, 5}, &plain_count) * 1e6;
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
    row.us = time_plain();
    row.frames = plain_count;
    row.note = "plain launches (no CUDA graph: " + why + ")";
    return;
  }
  const auto launches = [&](long count) {
    return event_seconds(stream, [&] {
      for (long k = 0; k < count; ++k) CHECK_CUDA(cudaGraphLaunch(graph.get(), stream));
    });
  };
  row.us =
      seconds_per_iteration(launches, Budget{seconds, 2, 100000, 5}, &row.frames) / batch * 1e6;
  row.frames *= batch;
  row.note = "CUDA graph of " + std::to_string(batch) + " back-to-back operations";
  if (!best_of_both) return;
  const double plain_us = time_plain();
  row.note = "CUDA graph or plain launches, the faster (graph " + format_double(row.us, 2) +
             " us, plain " + format_double(plain_us, 2) + " us)";
  if (plain_us < row.us) row.us = plain_us, row.frames = plain_count;
}

void device_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const bool kernels = options.wants("kernel");
  const bool copies = options.wants("copy") || kernels || options.wants("npp");
  if (!copies) return;
  const size_t n = size.pixels();
  const size_t copy_bytes_max = n * 5 / 2;
  try {
    const size_t count = rotation_count(5 * n, device_rotation_bytes(options));
    const DeviceRing in(count, 4 * n, 1000), gray(count, n), copies_to(count, copy_bytes_max);
    const cudagray::StreamOwner stream = cudagray::make_stream();
    const long rotation = static_cast<long>(count);

    // The kernel reads bpp*N and writes N bytes; a copy of (bpp+1)/2*N bytes
    // reads and writes as much.
    for (int bpp : {3, 4}) {
      const size_t bytes = n * (bpp + 1) / 2;
      Row row(size, "copy", copy_key(bpp),
              "device copy, same traffic as a " + std::to_string(bpp) + "-byte-per-pixel frame",
              bpp == 3 ? "RGB" : "RGBx", 2.0 * bytes);
      row.versus_videoconvert = false;
      record(rows, row, [&](Row &r) {
        time_operations(
            stream.get(), rotation,
            [&](long i, cudaStream_t s) {
              CHECK_CUDA(
                  cudaMemcpyAsync(copies_to.at(i), in.at(i), bytes, cudaMemcpyDeviceToDevice, s));
            },
            options, r, true);
      });
    }

    if (options.wants("copy")) {
      const size_t host_count = rotation_count(3 * n, options.rotate_bytes);
      const PinnedRing host_in(host_count, 3 * n, 2000), host_out(host_count, n);
      struct Transfer {
        const char *key, *what;
        size_t bytes;
        bool up;
      };
      for (const Transfer &t : {Transfer{"copy:h2d", "pinned H2D of an RGB frame", 3 * n, true},
                                Transfer{"copy:d2h", "pinned D2H of a GRAY8 frame", n, false}}) {
        Row row(size, "copy", t.key, t.what, t.up ? "RGB" : "GRAY8", t.bytes);
        row.versus_videoconvert = false;
        record(rows, row, [&](Row &r) {
          time_operations(
              stream.get(), rotation,
              [&](long i, cudaStream_t s) {
                if (t.up)
                  CHECK_CUDA(
                      cudaMemcpyAsync(in.at(i), host_in.at(i), t.bytes, cudaMemcpyHostToDevice, s));
                else
                  CHECK_CUDA(cudaMemcpyAsync(host_out.at(i), gray.at(i), t.bytes,
                                             cudaMemcpyDeviceToHost, s));
              },
              options, r);
        });
      }
    }

    if (kernels) {
      const cudagray::Weights weights = cudagray::standard_weights(cudagray::Matrix::BT601);
      for (PixelLayout layout : options.formats) {
        const int bpp = input_bytes_per_pixel(layout);
        Row row(size, "kernel", std::string("kernel:") + layout_name(layout),
                "cudagray kernel alone", layout_name(layout), double(bpp + 1) * n);
        row.ceiling = copy_key(bpp);
        if (cudagray::layout_info(layout).planes == 1) row.peer = bpp == 3 ? "npp:C3" : "npp:AC4";
        record(rows, row, [&](Row &r) {
          time_operations(
              stream.get(), rotation,
              [&](long i, cudaStream_t s) {
                const cudagray::GrayFrame out{gray.at(i), static_cast<size_t>(size.width)};
                CHECK_CUDA(
                    cudagray::convert_cuda(frame_at(layout, size, in.at(i)), out, weights, s));
              },
              options, r);
        });
      }
    }
  } catch (const std::exception &e) {  // allocation or setup; record() keeps per-row failures
    record(rows, Row(size, "kernel", "kernel:setup", "cudagray kernel and device copies")
                     .skip(std::string("failed: ") + e.what()));
  }
}

void raw_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const size_t n = size.pixels();
  const Row pinned(size, "raw", "raw:pinned", "raw CUDA, pinned in/out, 3 streams", "RGB", 4.0 * n);
  Row staged(size, "raw", "raw:staging", "raw CUDA, pageable via staging memcpy, 3 streams", "RGB",
             4.0 * n);
  Row device(size, "raw", "raw:device", "raw CUDA, input on the device, pinned out, 3 streams",
             "RGB", 4.0 * n);
  staged.ceiling = device.ceiling = "raw:pinned";
  const Budget budget{options.seconds, 20, 10000000, 3};
  // Frames through a loop, rotated over inputs: µs per frame.
  auto time_loop = [&](RawLoop &loop, const std::function<const uint8_t *(long)> &input,
                       const PinnedRing &host_out, Row &r) {
    long next = 0;
    r.us = seconds_per_iteration(
               [&](long frames) {
                 const Clock::time_point start = Clock::now();
                 for (long k = 0; k < frames; ++k, ++next)
                   loop.enqueue(next, input(next), host_out.at(next));
                 loop.synchronize();
                 return seconds_since(start);
               },
               budget, &r.frames) *
           1e6;
  };

  try {
    const size_t count = rotation_count(3 * n, options.rotate_bytes);
    const PinnedRing host_out(count, n);
    {
      const PinnedRing host_in(count, 3 * n, 3000);
      RawLoop loop(size, kRawStreams, RawSource::Pinned);
      record(rows, pinned, [&](Row &r) {
        time_loop(
            loop, [&](long i) { return host_in.at(i); }, host_out, r);
        r.note = std::to_string(count) + " pinned frames rotated";
      });
    }
    {
      const size_t on_device = rotation_count(3 * n, device_rotation_bytes(options));
      const DeviceRing device_in(on_device, 3 * n, 3500);
      RawLoop loop(size, kRawStreams, RawSource::Device);
      record(rows, device, [&](Row &r) {
        time_loop(
            loop, [&](long i) { return device_in.at(i); }, host_out, r);
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
        time_loop(
            loop, [&](long i) { return pageable[static_cast<size_t>(i) % count]->data; }, host_out,
            r);
        r.note = std::to_string(count) + " pageable frames rotated; one memcpy thread";
      });
    }
  } catch (const std::exception &e) {  // allocation or setup
    record(
        rows,
        Row(size, "raw", "raw:setup", "raw CUDA loops").skip(std::string("failed: ") + e.what()));
  }
}

void raw_latency_row(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const size_t n = size.pixels();
  Row row(size, "latency", "raw:latency", "raw CUDA single frame, pinned, 1 stream, synchronised",
          "RGB", 4.0 * n);
  row.versus_videoconvert = false;
  record(rows, row, [&](Row &r) {
    const size_t count = rotation_count(3 * n, options.rotate_bytes);
    const PinnedRing host_in(count, 3 * n, 5000), host_out(count, n);
    RawLoop loop(size, 1, RawSource::Pinned);
    long i = 0;
    time_lone_frames(r, options, [&] {
      const Clock::time_point start = Clock::now();
      loop.enqueue(i, host_in.at(i), host_out.at(i));
      ++i;
      loop.synchronize();
      return seconds_since(start) * 1e6;
    });
  });
}

}  // namespace bench
