// SPDX-License-Identifier: LGPL-2.1-or-later
// A batch: N slots of gray at one output size, each slot a frame of its own
// (its own format, size, crop and letterbox, a Conversion), normalised for a
// model as (g / full scale - mean) / std and stored contiguous N x 1 x H x W
// as uint8, float16 or float32. docs/batch.md defines every value.
//
// The arithmetic, once for the CPU and CUDA (kernels/normalise.h holds it):
//   g     the slot's gray at the output size, exactly as convert_cpu and
//         convert_cuda make it for its Conversion: GRAY8 (full scale 255)
//         or GRAY16 (65535), the letterbox bars 0
//   float32: v = (float(g) / full_scale - mean) / std, three IEEE-754
//         binary32 operations in that order, each rounded to nearest even,
//         no fused multiply-add, subnormals kept (the operations of
//         torchvision's ToTensor then Normalize, as PyTorch computes them
//         on the CPU)
//   float16: v rounded to nearest even into binary16 (overflow to infinity)
//   uint8:  g itself (GRAY8); mean 0 and std 1 only: a uint8 code q stands
//         for q / 255, so normalising needs a float type
// An absent slot (no frame in time) is a black frame: every element the
// value of g = 0, as the letterbox bars.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cudagray/conversion.h"
#include "cudagray/device.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"

namespace cudagray {

enum class BatchDType { UInt8, Float16, Float32 };

// The most slots a batch holds: their descriptions travel to the GPU with
// the one kernel launch (its parameters, 32 KiB at most).
constexpr int kMaxBatchSlots = 64;

// What every slot of a batch becomes.
struct BatchFormat {
  int width = 0, height = 0;  // of each slot
  BatchDType dtype = BatchDType::Float32;
  // The gray normalised: 8 (GRAY8, full scale 255) or 16 (GRAY16, 65535).
  // Every present slot's Conversion has it as out_depth; uint8 needs 8.
  int gray_depth = 16;
  float mean = 0.0f, std = 1.0f;
};

// One slot: absent, or a frame and its conversion to the batch's size
// (out_width x out_height the format's, out_depth its gray_depth).
struct BatchSlot {
  bool present = false;
  Conversion conversion;
  InputFrame frame{};
};

// Bytes of one element, of one slot (H x W elements) and of a batch.
size_t dtype_bytes(BatchDType dtype);
size_t batch_slot_bytes(const BatchFormat &format);
size_t batch_bytes(const BatchFormat &format, int slots);

// Whether the batch can be made: 1..kMaxBatchSlots slots, the format's size
// 1..kMaxDimension, gray depth 8 or 16 (uint8: 8, mean 0, std 1), mean
// finite, std finite and not 0, and each present slot's conversion valid
// (valid_conversion) with the format's output size and depth; otherwise
// *why says what is wrong, naming the slot.
bool valid_batch(const BatchFormat &format, const BatchSlot *slots, int count, std::string *why);

// Makes the batch on the host into out (batch_bytes, any alignment): each
// present slot converted by convert_cpu, then normalised. Frames in host
// memory. threads as convert_cpu's. Nothing is written when valid_batch
// refuses the batch.
void convert_batch_cpu(const BatchFormat &format, const BatchSlot *slots, int count, void *out,
                       const Weights &w, int threads = 0);

// Where batches are made, the CPU or one CUDA device, behind one interface:
// cudagraybatch picks one at start and never asks how it works.
class BatchMaker {
 public:
  virtual ~BatchMaker() = default;
  // For messages only: "cpu" or "cuda".
  virtual const char *name() const = 0;
  // Whether present slots' frames may be in device memory of the maker's
  // CUDA context (InputFrame::on_device, waited for on their
  // producer_stream), and the batch written there.
  virtual bool uses_device_memory() const = 0;
  // Makes batch f of count slots into out (batch_bytes(f, count)): host
  // memory of any alignment, or with out_on_device device memory aligned to
  // an element; equal bit for bit on every maker. Returns once the batch is
  // in out and the frames are no longer read; false and why otherwise, when
  // valid_batch refuses it with nothing written.
  virtual bool make(const BatchFormat &f, const BatchSlot *slots, int count, void *out,
                    bool out_on_device, const Weights &w, std::string *error) = 0;
};

// convert_batch_cpu, on threads as convert_cpu's.
std::unique_ptr<BatchMaker> make_cpu_batch_maker(int threads = 0);
// On the CUDA device of context (as make_cuda_backend takes it): frames in
// host memory are uploaded, the batch made by convert_batch_cuda (one
// kernel launch for the slots of each layout and method family) and, for
// out in host memory, downloaded. nullptr and why when it cannot be made.
std::unique_ptr<BatchMaker> make_cuda_batch_maker(std::string *error,
                                                  CudaContextSwitch context = {});

}  // namespace cudagray
