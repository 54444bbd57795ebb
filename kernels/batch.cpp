// SPDX-License-Identifier: LGPL-2.1-or-later
// A batch on the host, and the checks every batch passes (cudagray/batch.h):
// each slot's gray from convert_cpu, then the one normalisation
// (normalise.h), rows split over the row pool.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "cudagray/batch.h"
#include "cudagray/convert_cpu.h"
#include "normalise.h"
#include "parallel.h"

namespace cudagray {

namespace {

// A number as printf's %g writes it: 0.5, 1e-06, nan.
std::string number_text(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(v));
  return text;
}

// Rows of about this many elements are normalised at a time, and a thread
// is added for every kElementsPerThread of a slot (as convert_cpu splits).
constexpr long kElementsPerChunk = 1 << 15;
constexpr long kElementsPerThread = 1 << 18;

// Elements [begin, end) of a slot at out from its gray (Gray: uint8_t for
// GRAY8, uint16_t for GRAY16), the dtype a constant so that the loop is one.
template <class Gray, BatchDType DType>
void normalise_range(const uint8_t *gray, uint8_t *out, size_t begin, size_t end,
                     const Normaliser &n) {
  const auto *g = reinterpret_cast<const Gray *>(gray);
  for (size_t i = begin; i < end; ++i) store_element(out, i, DType, n, g[i]);
}

template <class Gray>
void normalise_range(BatchDType dtype, const uint8_t *gray, uint8_t *out, size_t begin, size_t end,
                     const Normaliser &n) {
  if (dtype == BatchDType::Float16)
    normalise_range<Gray, BatchDType::Float16>(gray, out, begin, end, n);
  else
    normalise_range<Gray, BatchDType::Float32>(gray, out, begin, end, n);
}

}  // namespace

size_t dtype_bytes(BatchDType dtype) {
  return dtype == BatchDType::UInt8 ? 1 : dtype == BatchDType::Float16 ? 2 : 4;
}

size_t batch_slot_bytes(const BatchFormat &format) {
  return static_cast<size_t>(format.width) * format.height * dtype_bytes(format.dtype);
}

size_t batch_bytes(const BatchFormat &format, int slots) {
  return batch_slot_bytes(format) * static_cast<size_t>(std::max(slots, 0));
}

bool valid_batch(const BatchFormat &f, const BatchSlot *slots, int count, std::string *why) {
  const std::string size = std::to_string(f.width) + "x" + std::to_string(f.height);
  if (count < 1 || count > kMaxBatchSlots)
    *why = "a batch of " + std::to_string(count) + " slots: 1 to " +
           std::to_string(kMaxBatchSlots) + " are possible";
  else if (f.width < 1 || f.height < 1 || f.width > kMaxDimension || f.height > kMaxDimension)
    *why = "batch size " + size + " is outside 1x1 to " + std::to_string(kMaxDimension) + "x" +
           std::to_string(kMaxDimension);
  else if (f.gray_depth != 8 && f.gray_depth != 16)
    *why = "gray depth " + std::to_string(f.gray_depth) + " is neither 8 nor 16";
  else if (!std::isfinite(f.mean))
    *why = "mean " + number_text(f.mean) + " is not a finite number";
  else if (!std::isfinite(f.std) || f.std == 0.0f)
    *why = "std " + number_text(f.std) + " is not a finite number other than 0";
  else if (f.dtype == BatchDType::UInt8 && f.gray_depth != 8)
    *why = "uint8 holds GRAY8: gray depth 16 needs float16 or float32";
  else if (f.dtype == BatchDType::UInt8 && (f.mean != 0.0f || f.std != 1.0f))
    *why = "uint8 holds the gray itself: mean " + number_text(f.mean) + " and std " +
           number_text(f.std) + " need float16 or float32";
  else
    *why = "";
  if (!why->empty()) return false;
  for (int i = 0; i < count; ++i) {
    if (!slots[i].present) continue;
    const Conversion &c = slots[i].conversion;
    std::string wrong;
    if (valid_conversion(c, &wrong)) {
      if (c.out_width != f.width || c.out_height != f.height)
        wrong = "output size " + std::to_string(c.out_width) + "x" + std::to_string(c.out_height) +
                " is not the batch's " + size;
      else if (c.out_depth != f.gray_depth)
        wrong = "output depth " + std::to_string(c.out_depth) + " is not the batch's gray depth " +
                std::to_string(f.gray_depth);
    }
    if (!wrong.empty()) {
      *why = "slot " + std::to_string(i) + ": " + wrong;
      return false;
    }
  }
  return true;
}

void convert_batch_cpu(const BatchFormat &f, const BatchSlot *slots, int count, void *out,
                       const Weights &w, int threads) {
  std::string why;
  if (!valid_batch(f, slots, count, &why)) return;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t elements = static_cast<size_t>(f.width) * f.height;
  const size_t slot_bytes = batch_slot_bytes(f), gray_bytes = f.gray_depth / 8;
  const Normaliser n = normaliser_of(f);
  // what an absent slot holds, element by element
  uint8_t black[4];
  store_element(black, 0, f.dtype, n, 0);
  const size_t black_bytes = dtype_bytes(f.dtype);
  const int normalise_threads = static_cast<int>(std::clamp<long>(
      static_cast<long>(elements) / kElementsPerThread, 1, std::min(threads, kMaxThreads)));
  const int chunk_rows =
      static_cast<int>(std::clamp<long>(kElementsPerChunk / f.width, 1, f.height));
  std::vector<uint8_t> gray;  // a slot's gray, when it is not the batch's elements themselves
  for (int i = 0; i < count; ++i) {
    uint8_t *slot = static_cast<uint8_t *>(out) + i * slot_bytes;
    const BatchSlot &s = slots[i];
    if (!s.present) {
      for (size_t e = 0; e < elements; ++e)
        std::copy(black, black + black_bytes, slot + e * black_bytes);
    } else if (f.dtype == BatchDType::UInt8) {
      convert_cpu(s.conversion, s.frame, GrayFrame{slot, static_cast<size_t>(f.width)}, w, threads);
    } else {
      gray.resize(elements * gray_bytes);
      convert_cpu(s.conversion, s.frame, GrayFrame{gray.data(), f.width * gray_bytes}, w, threads);
      parallel_rows(f.height, chunk_rows, normalise_threads, [&](int y0, int y1) {
        const size_t begin = static_cast<size_t>(y0) * f.width,
                     end = static_cast<size_t>(y1) * f.width;
        if (f.gray_depth == 16)
          normalise_range<uint16_t>(f.dtype, gray.data(), slot, begin, end, n);
        else
          normalise_range<uint8_t>(f.dtype, gray.data(), slot, begin, end, n);
      });
    }
  }
}

namespace {

class CpuBatchMaker final : public BatchMaker {
 public:
  explicit CpuBatchMaker(int threads) : threads_(threads) {}
  const char *name() const override { return "cpu"; }
  bool uses_device_memory() const override { return false; }
  bool make(const BatchFormat &f, const BatchSlot *slots, int count, void *out, bool out_on_device,
            const Weights &w, std::string *error) override {
    for (int i = 0; i < count && !out_on_device; ++i)
      out_on_device = slots[i].present && slots[i].frame.on_device;
    if (out_on_device) {
      *error = "the CPU makes batches of frames in host memory, into host memory";
      return false;
    }
    if (!valid_batch(f, slots, count, error)) return false;
    convert_batch_cpu(f, slots, count, out, w, threads_);
    return true;
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<BatchMaker> make_cpu_batch_maker(int threads) {
  return std::make_unique<CpuBatchMaker>(threads);
}

}  // namespace cudagray
