// SPDX-License-Identifier: LGPL-2.1-or-later
// The batch rows (issue 51): N 1080p NV12 frames already on the GPU into one
// letterboxed 640x640 float16 batch by convert_batch_cuda, against a device
// copy of the batch's traffic. NPP's peers are in npp.cpp.
#include <algorithm>
#include <vector>

#include "cuda_rows.h"
#include "cudagray/convert_cuda.h"
#include "resample.h"

namespace bench {

namespace {

// Any mean and std cost the same; these are a gray ImageNet's.
constexpr float kMean = 0.45f, kStd = 0.225f;

// Batches enqueued between two waits of the CPU-time loop: few enough that
// a launch never blocks on a full queue.
constexpr long kCpuRound = 64;

// Source rows that conversion c's taps read, each once.
size_t rows_read(const cudagray::Conversion &c) {
  std::vector<bool> read(c.crop.height);
  for (int y = 0; y < c.dest.height; ++y) {
    const cudagray::AxisTaps taps = cudagray::axis_taps(c.method, c.crop.height, c.dest.height, y);
    for (int k = 0; k < taps.count; ++k) read[taps.first + k] = true;
  }
  return static_cast<size_t>(std::count(read.begin(), read.end(), true));
}

// The process's CPU time a batch as a program making batches pays it: plain
// launches, kCpuRound at a time, each round waited for on a blocking-sync
// event (asleep, not spinning), for seconds.
double cpu_us_per_batch(cudaStream_t stream, const Operation &op, double seconds) {
  const cudagray::EventOwner done =
      cudagray::make_event(cudaEventBlockingSync | cudaEventDisableTiming);
  long next = 0;
  const auto round = [&] {
    for (long k = 0; k < kCpuRound; ++k) op(next++, stream);
    CHECK_CUDA(cudaEventRecord(done.get(), stream));
    CHECK_CUDA(cudaEventSynchronize(done.get()));
  };
  round();  // warm-up
  const double cpu_from = process_cpu_seconds();
  const Clock::time_point start = Clock::now();
  long batches = 0;
  do {
    round();
    batches += kCpuRound;
  } while (seconds_since(start) < seconds);
  return (process_cpu_seconds() - cpu_from) / batches * 1e6;
}

}  // namespace

std::vector<BatchJob> batch_jobs() {
  std::vector<BatchJob> jobs;
  for (const int n : {4, 16})
    for (const ScaledOutput &o : scaled_outputs(PixelLayout::Luma, kBatchSource)) {
      // the letterbox of 16:9 into a square, as cudagraybatch computes it
      // (gst_cuda_gray_conversion_from_caps): 640x360 at y 140
      if (o.box != "640x640-boxed" || o.method == "nearest") continue;
      BatchJob job{n, o.method, o.conversion, {}, 0};
      job.slot.out_depth = 16;        // a float batch normalises GRAY16
      job.slot.limited_range = true;  // NV12 from a decoder
      job.slot.inputs_on_device = true;
      job.format.width = job.slot.out_width;
      job.format.height = job.slot.out_height;
      job.format.dtype = cudagray::BatchDType::Float16;
      job.format.gray_depth = 16;
      job.format.mean = kMean;
      job.format.std = kStd;
      job.traffic =
          n * rows_read(job.slot) * kBatchSource.width + cudagray::batch_bytes(job.format, n);
      jobs.push_back(job);
    }
  return jobs;
}

BatchSources::BatchSources(const Options &options)
    : count_(std::max<size_t>(16, rotation_count(kPitch * kBatchSource.height * 3 / 2,
                                                 device_rotation_bytes(options)))),
      frames_(count_, kPitch * kBatchSource.height * 3 / 2, 9000) {}

cudagray::InputFrame BatchSources::luma(long batch, int n, int slot) const {
  cudagray::InputFrame frame{};
  frame.plane[0] = frames_.at(batch * n + slot);
  frame.stride[0] = kPitch;
  frame.on_device = true;
  return frame;
}

void batch_rows(const Options &options, std::vector<Row> *rows) {
  try {
    const std::vector<BatchJob> jobs = batch_jobs();
    size_t largest = 0;
    for (const BatchJob &job : jobs)
      largest = std::max(largest, cudagray::batch_bytes(job.format, job.sources));
    const BatchSources sources(options);
    const size_t outputs = rotation_count(largest, device_rotation_bytes(options));
    const DeviceRing batches(outputs, largest);
    const cudagray::StreamOwner stream = cudagray::make_stream();
    const cudagray::Weights weights = cudagray::standard_weights(cudagray::Matrix::BT601);
    for (const BatchJob &job : jobs) {
      const std::string sources_text = std::to_string(job.sources) + " x 1080p NV12";
      const std::string copy = copy_key(job.traffic);
      const bool copy_measured = std::any_of(rows->begin(), rows->end(), [&](const Row &r) {
        return r.key == copy && r.size.name == kBatchSource.name;
      });
      if (!copy_measured)
        record(
            rows,
            Row(kBatchSource, "copy", copy,
                "device copy, same traffic as a batch of " + sources_text + " (" + job.method + ")",
                "", double(job.traffic)),
            [&](Row &r) {
              // half the traffic, read and written
              const size_t bytes = job.traffic / 2;
              const size_t count = rotation_count(bytes, device_rotation_bytes(options));
              const DeviceRing from(count, bytes), to(count, bytes);
              time_operations(
                  stream.get(), static_cast<long>(count),
                  [&](long i, cudaStream_t s) {
                    CHECK_CUDA(
                        cudaMemcpyAsync(to.at(i), from.at(i), bytes, cudaMemcpyDeviceToDevice, s));
                  },
                  options, r, true);
            });

      // batches (and frames) to time over: every source frame and output read once
      const long rotation = std::max(sources.batches(job.sources), static_cast<long>(outputs));
      Row row(kBatchSource, "batch", job.key(),
              "cudagray convert_batch_cuda, " + sources_text + " to 640x640 float16 letterboxed (" +
                  job.method + ")",
              "NV12", double(job.traffic));
      row.ceiling = copy;
      row.peer = npp_batch_peer(job);
      record(rows, row, [&](Row &r) {
        std::vector<cudagray::BatchSlot> slots(job.sources);
        const Operation make_batch = [&](long i, cudaStream_t s) {
          for (int k = 0; k < job.sources; ++k)
            slots[k] = {true, job.slot, sources.luma(i, job.sources, k)};
          CHECK_CUDA(cudagray::convert_batch_cuda(job.format, slots.data(), job.sources,
                                                  batches.at(i), weights, s));
        };
        time_operations(stream.get(), rotation, make_batch, options, r);
        r.cpu_us = cpu_us_per_batch(stream.get(), make_batch, options.seconds / 2);
        r.note = join({r.note, "CPU time: plain launches, " + std::to_string(kCpuRound) +
                                   " a round, then a blocking-sync wait"});
      });

      // The first half of the peer that bench/batch_torch.py completes with
      // torch's stack and normalisation: what N cudagray elements run, a
      // frame's kernel for each source, into N separate GRAY8 frames. Its
      // traffic is the batch's with GRAY8 written in place of float16.
      cudagray::Conversion gray8 = job.slot;
      gray8.out_depth = 8;
      gray8.outputs_on_device = true;
      const size_t frame_bytes = size_t(gray8.out_width) * gray8.out_height;
      Row frames(kBatchSource, "batch", job.key() + ":frames",
                 "cudagray convert_cuda, " + sources_text +
                     " each to its own 640x640 GRAY8 letterboxed (" + job.method + ")",
                 "NV12",
                 double(job.traffic - cudagray::batch_bytes(job.format, job.sources) +
                        job.sources * frame_bytes));
      record(rows, frames, [&](Row &r) {
        const Operation make_frames = [&](long i, cudaStream_t s) {
          for (int k = 0; k < job.sources; ++k) {
            const cudagray::GrayFrame out{batches.at(i) + k * frame_bytes, size_t(gray8.out_width),
                                          true};
            CHECK_CUDA(
                cudagray::convert_cuda(gray8, sources.luma(i, job.sources, k), out, weights, s));
          }
        };
        time_operations(stream.get(), rotation, make_frames, options, r);
      });
    }
  } catch (const std::exception &e) {  // allocation or setup
    record(rows, Row(kBatchSource, "batch", "batch:setup", "cudagray batches")
                     .skip(std::string("failed: ") + e.what()));
  }
}

}  // namespace bench
