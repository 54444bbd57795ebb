// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA batch maker (cudagray/batch.h): frames in host memory uploaded
// into device buffers of their slot, frames on the device read where they
// are once their producers' work is done, the batch made by
// convert_batch_cuda and, into host memory, downloaded; all on one stream,
// waited for with a blocking-sync event, so that the waiting thread sleeps.
// Buffers grow to the largest frame a slot has had and are kept.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda_check.h"
#include "cuda_gate.h"
#include "cudagray/batch.h"
#include "cudagray/convert_cuda.h"
#include "cudagray/cuda_owners.h"

namespace cudagray {

namespace {

// Device rows start at multiples of this, as the frame backend's do.
constexpr size_t kPitchAlignment = 256;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// How a host frame's planes are laid out on the device: each plane
// plane_bytes apart, rows pitch apart (a tiled plane: its tiles, whole and
// contiguous, with the frame's own tile stride).
struct DeviceLayout {
  size_t row_bytes, pitch, plane_bytes;
  int rows;
  bool tiled;
};

DeviceLayout device_layout(const Conversion &c, const InputFrame &in) {
  const LayoutInfo &info = layout_info(c.layout);
  if (info.tiled()) {
    const size_t bytes = info.plane_bytes(c.in_width, c.in_height, in.stride[0]);
    return {bytes, in.stride[0], align_up(bytes, kPitchAlignment), 1, true};
  }
  const size_t row_bytes = info.row_bytes(c.in_width);
  const size_t pitch = align_up(row_bytes, kPitchAlignment);
  return {row_bytes, pitch, pitch * c.in_height, c.in_height, false};
}

class CudaBatchMaker final : public BatchMaker {
 public:
  explicit CudaBatchMaker(CudaContextSwitch context) : context_(std::move(context)) {
    const InCudaContext in(context_);
    const CudaResourceChange change;  // one wait for the context's lock
    stream_ = make_stream();
    done_ = make_event(cudaEventDisableTiming | cudaEventBlockingSync);
    for (auto &e : producer_done_) e = make_event(cudaEventDisableTiming);
  }
  ~CudaBatchMaker() override {
    const InCudaContext in(context_);
    cudaStreamSynchronize(stream_.get());
    const CudaResourceChange change;
    inputs_.clear();
    device_out_.reset();
    for (auto &e : producer_done_) e.reset();
    done_.reset();
    stream_.reset();
  }

  const char *name() const override { return "cuda"; }
  bool uses_device_memory() const override { return true; }

  bool make(const BatchFormat &f, const BatchSlot *slots, int count, void *out, bool out_on_device,
            const Weights &w, std::string *error) override {
    if (!valid_batch(f, slots, count, error)) return false;
    const InCudaContext in(context_);
    try {
      make_room(f, slots, count, out_on_device);
      const CudaQueueing queueing;
      std::vector<BatchSlot> on_device(slots, slots + count);
      int producers = 0;
      for (int i = 0; i < count; ++i) {
        BatchSlot &s = on_device[i];
        if (!s.present) continue;
        if (!s.frame.on_device) {
          upload(i, s);
        } else if (s.frame.producer_stream) {
          cudaEvent_t written = producer_done_[producers++].get();
          CUDAGRAY_CHECK(
              cudaEventRecord(written, static_cast<cudaStream_t>(s.frame.producer_stream)));
          CUDAGRAY_CHECK(cudaStreamWaitEvent(stream_.get(), written, 0));
        }
      }
      void *device_out = out_on_device ? out : device_out_.get();
      CUDAGRAY_CHECK(convert_batch_cuda(f, on_device.data(), count, device_out, w, stream_.get()));
      if (!out_on_device)
        CUDAGRAY_CHECK(cudaMemcpyAsync(out, device_out, batch_bytes(f, count),
                                       cudaMemcpyDeviceToHost, stream_.get()));
      CUDAGRAY_CHECK(cudaEventRecord(done_.get(), stream_.get()));
      CUDAGRAY_CHECK(cudaEventSynchronize(done_.get()));
      return true;
    } catch (const CudaError &e) {
      *error = e.what();
      return false;
    }
  }

 private:
  struct Input {
    DeviceMemory memory;
    size_t bytes = 0;
  };

  // Device buffers for every host frame and a host-memory batch, grown
  // before anything is queued: allocating waits for every queued frame of
  // the process (cuda_gate.cpp).
  void make_room(const BatchFormat &f, const BatchSlot *slots, int count, bool out_on_device) {
    inputs_.resize(std::max<size_t>(inputs_.size(), count));
    for (int i = 0; i < count; ++i) {
      if (!slots[i].present || slots[i].frame.on_device) continue;
      const Conversion &c = slots[i].conversion;
      const size_t bytes =
          device_layout(c, slots[i].frame).plane_bytes * layout_info(c.layout).planes;
      if (inputs_[i].bytes >= bytes) continue;
      inputs_[i].memory.reset();
      inputs_[i].memory = make_device_memory(bytes);
      inputs_[i].bytes = bytes;
    }
    const size_t out_bytes = batch_bytes(f, count);
    if (!out_on_device && device_out_bytes_ < out_bytes) {
      device_out_.reset();
      device_out_ = make_device_memory(out_bytes);
      device_out_bytes_ = out_bytes;
    }
  }

  // Queues slot i's frame's upload and points its planes at the copy.
  void upload(int i, BatchSlot &s) {
    const DeviceLayout d = device_layout(s.conversion, s.frame);
    auto *device = static_cast<uint8_t *>(inputs_[i].memory.get());
    for (int p = 0; p < layout_info(s.conversion.layout).planes; ++p) {
      uint8_t *plane = device + p * d.plane_bytes;
      if (d.tiled)
        CUDAGRAY_CHECK(cudaMemcpyAsync(plane, s.frame.plane[p], d.row_bytes, cudaMemcpyHostToDevice,
                                       stream_.get()));
      else
        CUDAGRAY_CHECK(cudaMemcpy2DAsync(plane, d.pitch, s.frame.plane[p], s.frame.stride[p],
                                         d.row_bytes, d.rows, cudaMemcpyHostToDevice,
                                         stream_.get()));
      s.frame.plane[p] = plane;
      s.frame.stride[p] = d.pitch;
    }
    s.frame.on_device = true;
  }

  CudaContextSwitch context_;
  StreamOwner stream_;
  EventOwner done_;
  EventOwner producer_done_[kMaxBatchSlots];
  std::vector<Input> inputs_;
  DeviceMemory device_out_;
  size_t device_out_bytes_ = 0;
};

}  // namespace

std::unique_ptr<BatchMaker> make_cuda_batch_maker(std::string *error, CudaContextSwitch context) {
  try {
    return std::make_unique<CudaBatchMaker>(std::move(context));
  } catch (const CudaError &e) {
    *error = e.what();
    return nullptr;
  }
}

}  // namespace cudagray
