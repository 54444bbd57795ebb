// SPDX-License-Identifier: LGPL-2.1-or-later
// Rows measured with CUDA directly: same-traffic device copies, pinned
// transfers, the cudagray kernel alone, and the raw CUDA loops that are the
// element's ceilings.
#include "cuda_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "cudagray/convert_cuda.h"

namespace bench {

namespace {

// Seconds, between two events on the stream, of n back-to-back enqueue()s.
double event_seconds(cudaStream_t stream, long n, const std::function<void()> &enqueue) {
  const cudagray::EventOwner start = cudagray::make_event(), stop = cudagray::make_event();
  CHECK_CUDA(cudaEventRecord(start.get(), stream));
  for (long k = 0; k < n; ++k) enqueue();
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

// Where a raw loop's RGB frames are: pinned host memory, pageable host
// memory (memcpy'd into pinned staging first), or already on the device.
enum class RawSource { Pinned, Staging, Device };

// Several streams, each with its own device frames: RGB (uploaded unless it
// is on the device already) → kernel → pinned host GRAY8 at out's size,
// frames rotated by the caller. The staging variant first memcpys each
// pageable frame into the lane's pinned staging buffer, once the lane's
// previous upload from it is done.
class RawLoop {
 public:
  RawLoop(const FrameSize &size, int lanes, RawSource source, const FrameSize &out)
      : size_(size),
        in_bytes_(3 * size.pixels()),
        out_bytes_(out.pixels()),
        source_(source),
        conversion_(cudagray::same_size_conversion(PixelLayout::RGB, size.width, size.height)) {
    conversion_.out_width = out.width;
    conversion_.out_height = out.height;
    conversion_.dest = {0, 0, out.width, out.height};
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
    if (source_ == RawSource::Staging) {
      CHECK_CUDA(cudaEventSynchronize(lane.uploaded.get()));  // at once before its first record
      std::memcpy(lane.staging.get(), in, in_bytes_);
      in = static_cast<const uint8_t *>(lane.staging.get());
    }
    if (source_ != RawSource::Device) {
      CHECK_CUDA(
          cudaMemcpyAsync(lane.in.get(), in, in_bytes_, cudaMemcpyHostToDevice, lane.stream.get()));
      if (source_ == RawSource::Staging)
        CHECK_CUDA(cudaEventRecord(lane.uploaded.get(), lane.stream.get()));
      in = static_cast<const uint8_t *>(lane.in.get());
    }
    const cudagray::InputFrame frame = frame_at(PixelLayout::RGB, size_, in);
    const cudagray::GrayFrame gray{static_cast<uint8_t *>(lane.out.get()),
                                   static_cast<size_t>(conversion_.out_width)};
    CHECK_CUDA(cudagray::convert_cuda(conversion_, frame, gray, weights_, lane.stream.get()));
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
  };
  FrameSize size_;
  size_t in_bytes_, out_bytes_;
  RawSource source_;
  cudagray::Conversion conversion_;
  cudagray::Weights weights_ = cudagray::standard_weights(cudagray::Matrix::BT601);
  std::vector<Lane> lanes_;
};

constexpr int kRawStreams = 3;

}  // namespace

std::string cuda_open(int device) {
  std::string why;
  const int count = cudagray::cuda_device_count(&why);
  if (cudagray::open_cuda_device(device, &why) < 0) throw std::runtime_error(why);
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  return std::string(prop.name) + " (device " + std::to_string(device) + " of " +
         std::to_string(count) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         ", " + std::to_string(prop.multiProcessorCount) + " SMs, " +
         format_double(prop.totalGlobalMem / double(1 << 30), 1) + " GiB, L2 " +
         format_double(prop.l2CacheSize / double(1 << 20), 0) + " MiB; driver " + version(driver) +
         ", runtime " + version(runtime) + ")";
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
  const auto plain = [&](long n) { return event_seconds(stream, n, [&] { op(next++, stream); }); };
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
  const auto launches = [&](long n) {
    return event_seconds(stream, n, [&] { CHECK_CUDA(cudaGraphLaunch(graph.get(), stream)); });
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

std::vector<ScaledOutput> scaled_outputs(PixelLayout layout, const FrameSize &size) {
  std::vector<ScaledOutput> all;
  for (const bool boxed : {false, true}) {
    cudagray::Conversion c = cudagray::same_size_conversion(layout, size.width, size.height);
    c.out_width = 640;
    c.out_height = boxed ? 640 : 360;
    const int picture = std::max(1, static_cast<int>(640L * size.height / size.width));
    c.dest =
        boxed ? cudagray::Rect{0, (640 - std::min(picture, 640)) / 2, 640, std::min(picture, 640)}
              : cudagray::Rect{0, 0, 640, 360};
    if (static_cast<size_t>(c.out_width) * c.out_height > size.pixels()) continue;
    for (const auto &[method, name] : {std::pair{cudagray::ScaleMethod::Area, "area"},
                                       std::pair{cudagray::ScaleMethod::Bilinear, "bilinear"},
                                       std::pair{cudagray::ScaleMethod::Nearest, "nearest"}}) {
      c.method = method;
      all.push_back({boxed ? "640x640-boxed" : "640x360", name, c});
    }
  }
  return all;
}

std::string copy_key(size_t traffic) { return "copy:" + std::to_string(traffic) + "B"; }

void device_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  // the same-size kernel rows, and the scaled ones (their NPP peers in the
  // group "scaled" too)
  const bool kernels = options.wants("kernel");
  const bool scaled_kernels = kernels || options.wants("scaled");
  if (!options.wants("copy") && !scaled_kernels && !options.wants("npp")) return;
  const size_t n = size.pixels();
  try {
    // the largest frame in (GBR_16LE: 6 bytes a pixel) and out (GRAY16)
    const size_t count = rotation_count(8 * n, device_rotation_bytes(options));
    const DeviceRing in(count, 6 * n, 1000), gray(count, 2 * n), copies_to(count, 4 * n);
    const cudagray::StreamOwner stream = cudagray::make_stream();
    // Times op on the stream into row, over every frame of the rings.
    const auto time_row = [&](const Row &row, const Operation &op, bool best_of_both = false) {
      record(rows, row, [&](Row &r) {
        time_operations(stream.get(), static_cast<long>(count), op, options, r, best_of_both);
      });
    };
    // A copy row (a ceiling, not compared with videoconvert): bytes from
    // frame i of `from` to frame i of `to`. A device copy counts them read
    // and written, and keeps the faster of a graph and plain launches.
    const auto time_copy = [&](const std::string &key, const std::string &what,
                               const std::string &format, const auto &to, const auto &from,
                               size_t bytes, cudaMemcpyKind kind) {
      const bool device_copy = kind == cudaMemcpyDeviceToDevice;
      Row row(size, "copy", key, what, format, (device_copy ? 2.0 : 1.0) * bytes);
      time_row(
          row,
          [&](long i, cudaStream_t s) {
            CHECK_CUDA(cudaMemcpyAsync(to.at(i), from.at(i), bytes, kind, s));
          },
          device_copy);
    };

    // A kernel reads its frame and writes N or 2N bytes of gray; its ceiling
    // is a device copy of half that many bytes, which reads and writes as
    // much. One copy row for each traffic the kernel rows need, keyed by it.
    const auto scaled_traffic = [&](PixelLayout layout, const ScaledOutput &k) {
      return frame_bytes(layout, size) +
             static_cast<size_t>(k.conversion.out_width) * k.conversion.out_height;
    };
    std::set<size_t> traffics;
    if (kernels)
      for (PixelLayout layout : options.formats)
        for (int depth : options.gray_depths)
          traffics.insert(frame_bytes(layout, size) + n * depth / 8);
    if (scaled_kernels)
      for (PixelLayout layout : options.scaled_formats)
        for (const ScaledOutput &k : scaled_outputs(layout, size))
          traffics.insert(scaled_traffic(layout, k));
    for (size_t traffic : traffics)
      time_copy(copy_key(traffic),
                "device copy, same traffic as a kernel reading and writing " +
                    std::to_string(traffic) + " bytes",
                "", copies_to, in, traffic / 2, cudaMemcpyDeviceToDevice);
    if (options.wants("copy")) {
      const size_t host_count = rotation_count(3 * n, options.rotate_bytes);
      const PinnedRing host_in(host_count, 3 * n, 2000), host_out(host_count, n);
      time_copy("copy:h2d", "pinned H2D of an RGB frame", "RGB", in, host_in, 3 * n,
                cudaMemcpyHostToDevice);
      time_copy("copy:d2h", "pinned D2H of a GRAY8 frame", "GRAY8", host_out, gray, n,
                cudaMemcpyDeviceToHost);
    }

    const cudagray::Weights weights = cudagray::standard_weights(cudagray::Matrix::BT601);
    for (PixelLayout layout : kernels ? options.formats : std::vector<PixelLayout>{})
      for (int depth : options.gray_depths) {
        const size_t traffic = frame_bytes(layout, size) + n * depth / 8;
        const std::string suffix = depth == 16 ? ":GRAY16" : "";
        Row row(size, "kernel", std::string("kernel:") + layout_name(layout) + suffix,
                "cudagray kernel alone" + std::string(depth == 16 ? ", GRAY16 out" : ""),
                layout_name(layout), double(traffic));
        row.ceiling = copy_key(traffic);
        row.peer = npp_peer(layout, depth, nullptr);
        const cudagray::Conversion c =
            cudagray::same_size_conversion(layout, size.width, size.height, depth);
        time_row(row, [&](long i, cudaStream_t s) {
          const cudagray::GrayFrame out{gray.at(i), static_cast<size_t>(size.width) * depth / 8};
          CHECK_CUDA(cudagray::convert_cuda(c, frame_at(layout, size, in.at(i)), out, weights, s));
        });
      }
    for (PixelLayout layout : scaled_kernels ? options.scaled_formats : std::vector<PixelLayout>{})
      for (const ScaledOutput &k : scaled_outputs(layout, size)) {
        const size_t traffic = scaled_traffic(layout, k);
        Row row(size, "kernel", std::string("kernel:") + layout_name(layout) + ":" + k.name(),
                "cudagray kernel alone, scaled to " + k.name(), layout_name(layout),
                double(traffic));
        row.ceiling = copy_key(traffic);
        row.peer = npp_peer(layout, 8, &k);
        time_row(row, [&](long i, cudaStream_t s) {
          const cudagray::GrayFrame out{gray.at(i), static_cast<size_t>(k.conversion.out_width)};
          CHECK_CUDA(cudagray::convert_cuda(k.conversion, frame_at(layout, size, in.at(i)), out,
                                            weights, s));
        });
      }
  } catch (const std::exception &e) {  // allocation or setup; record() keeps per-row failures
    record(rows, Row(size, "kernel", "kernel:setup", "cudagray kernel and device copies")
                     .skip(std::string("failed: ") + e.what()));
  }
}

void raw_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const size_t n = size.pixels();
  try {
    const size_t count = rotation_count(3 * n, options.rotate_bytes);
    const PinnedRing host_out(count, std::max(n, kScaledOutput.pixels()));
    // The frames of input, rotated, through a loop from source to gray of
    // out's size, 3 streams: µs per frame. raw:pinned is the others' ceiling.
    const auto time_loop = [&](const std::string &key, const std::string &what, RawSource source,
                               const auto &input, const std::string &note, const FrameSize &out) {
      Row row(size, "raw", key, what, "RGB", 3.0 * n + out.pixels());
      if (source != RawSource::Pinned) row.ceiling = "raw:pinned";
      RawLoop loop(size, kRawStreams, source, out);
      record(rows, row, [&](Row &r) {
        long next = 0;
        const auto run = [&](long frames) {
          const Clock::time_point start = Clock::now();
          for (long k = 0; k < frames; ++k, ++next)
            loop.enqueue(next, input.at(next), host_out.at(next));
          loop.synchronize();
          return seconds_since(start);
        };
        r.us =
            seconds_per_iteration(run, Budget{options.seconds, 20, 10000000, 3}, &r.frames) * 1e6;
        r.note = note;
      });
    };
    // each row's input frames go before the next row's are made
    const size_t on_device = rotation_count(3 * n, device_rotation_bytes(options));
    const std::string device_note = std::to_string(on_device) + " device frames rotated";
    if (options.wants("raw")) {
      time_loop("raw:pinned", "raw CUDA, pinned in/out, 3 streams", RawSource::Pinned,
                PinnedRing(count, 3 * n, 3000), std::to_string(count) + " pinned frames rotated",
                size);
      time_loop("raw:device", "raw CUDA, input on the device, pinned out, 3 streams",
                RawSource::Device, DeviceRing(on_device, 3 * n, 3500), device_note, size);
      time_loop("raw:staging", "raw CUDA, pageable via staging memcpy, 3 streams",
                RawSource::Staging, PageableFrames(count, 3 * n, 4000),
                std::to_string(count) + " pageable frames rotated; one memcpy thread", size);
    }
    // the scaled kernel and the download of its small frame: the ceiling of
    // cudagray scaling frames already on the GPU
    if (options.wants("scaled"))
      time_loop("raw:device:scaled",
                "raw CUDA, input on the device, scaled to " + kScaledOutput.name +
                    " (area), pinned out, 3 streams",
                RawSource::Device, DeviceRing(on_device, 3 * n, 3500), device_note, kScaledOutput);
  } catch (const std::exception &e) {  // allocation or setup
    record(
        rows,
        Row(size, "raw", "raw:setup", "raw CUDA loops").skip(std::string("failed: ") + e.what()));
  }
}

void raw_latency_row(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const size_t n = size.pixels();
  const Row row(size, "latency", "raw:latency",
                "raw CUDA single frame, pinned, 1 stream, synchronised", "RGB", 4.0 * n);
  record(rows, row, [&](Row &r) {
    const size_t count = rotation_count(3 * n, options.rotate_bytes);
    const PinnedRing host_in(count, 3 * n, 5000), host_out(count, n);
    RawLoop loop(size, 1, RawSource::Pinned, size);
    // Lone frames: 10 to warm up, then samples until there are 100 and
    // options.seconds have passed (2000 at most).
    std::vector<double> samples;
    const Clock::time_point begin = Clock::now();
    for (long i = 0; samples.size() < 2000; ++i) {
      const Clock::time_point start = Clock::now();
      loop.enqueue(i, host_in.at(i), host_out.at(i));
      loop.synchronize();
      if (i >= 10) samples.push_back(seconds_since(start) * 1e6);
      if (samples.size() >= 100 && seconds_since(begin) >= options.seconds) break;
    }
    take_median(r, samples);
  });
}

}  // namespace bench
