// SPDX-License-Identifier: LGPL-2.1-or-later
// convert_batch_cuda: the slots of a batch in one kernel launch a layout.
// The grid's z is the slot; x and y tile the batch's output size, which
// every slot shares. Each block runs the frame kernels' resampling block
// (convert_cuda.cuh: area, or nearest and bilinear) for its slot, with a
// store that normalises each pixel into the slot's elements (normalise.h)
// instead of storing gray; the slots' descriptions travel as the launch's
// parameters (constant memory, read in place: __grid_constant__), so that
// nothing is copied or allocated for them.
//
// The layout is a template argument of the kernels, as in convert_cuda, so
// one launch converts the slots of one layout: a batch of one layout (the
// cameras of one kind) is one launch; each further layout, or method family
// (area against nearest and bilinear), in a batch adds one, over its slots
// only. A switch over every layout inside one kernel would make a mixed
// batch one launch too, at a price every batch would pay: tried (ptxas -v,
// sm_90), such an area kernel holds 168 registers a thread and spills 424
// bytes, where this file's area kernel of 8-bit luma holds 72 (3 blocks an
// SM against 7), and ptxas takes 189 s over it alone against 31 s over all
// 170 kernels here.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "convert_cuda.cuh"
#include "cudagray/batch.h"
#include "cudagray/convert_cuda.h"
#include "normalise.h"

namespace cudagray {

namespace {

// A slot as the kernels read it.
struct SlotOnDevice {
  Planes planes;
  Conversion c;
  uint64_t denominator;  // resample_denominator(c)
  int index;             // its place in the batch
  int band_columns;      // area: its tile's down-sums a row
  bool present, wide;
};

// One launch's parameters: the batch and the slots it converts.
struct BatchLaunch {
  uint8_t *out;
  size_t slot_bytes;
  BatchDType dtype;
  bool gray8;  // GRAY8: the 16-bit G reduced (reduce8) as a frame's kernels reduce it
  Normaliser normaliser;
  Weights weights;
  int width;
  SlotOnDevice slot[kMaxBatchSlots];
};
// CUDA 12.1 on: a kernel's parameters may take 32764 bytes (Volta and later).
static_assert(sizeof(BatchLaunch) <= 32764, "the slots do not fit a launch's parameters");

// Stores a slot's output pixel (x, y) of 16-bit G as its element.
struct ElementStore {
  uint8_t *out;
  int width;
  BatchDType dtype;
  bool gray8;
  Normaliser normaliser;
  __device__ __forceinline__ void operator()(int x, int y, uint32_t g) const {
    store_element(out, static_cast<size_t>(y) * width + x, dtype, normaliser,
                  gray8 ? reduce8(g) : g);
  }
};

__device__ __forceinline__ ElementStore element_store(const BatchLaunch &b, const SlotOnDevice &s) {
  return {b.out + s.index * b.slot_bytes, b.width, b.dtype, b.gray8, b.normaliser};
}

// Calls f with the slot's ToGray at 16 bits (the resampler's source), the
// range a branch that is the same for the whole block.
template <class Layout, class F>
__device__ __forceinline__ void with_gray_op(const SlotOnDevice &s, const Weights &w, F f) {
  if constexpr (Layout::kFamily == LayoutFamily::Luma) {
    if (s.c.limited_range) {
      f(ToGray<Layout, 16, true>{w});
      return;
    }
  }
  f(ToGray<Layout, 16, false>{w});
}

template <class Layout>
__global__ void __launch_bounds__(kAreaThreads)
    batch_area_kernel(const __grid_constant__ BatchLaunch batch) {
  const SlotOnDevice &s = batch.slot[blockIdx.z];
  const ElementStore store = element_store(batch, s);
  if (!s.present) {  // black: the block's tile of the slot
    for (int t = threadIdx.x; t < kAreaColumns * kAreaRows; t += kAreaThreads) {
      const int x = blockIdx.x * kAreaColumns + t % kAreaColumns;
      const int y = blockIdx.y * kAreaRows + t / kAreaColumns;
      if (x < s.c.out_width && y < s.c.out_height) store(x, y, 0);
    }
    return;
  }
  with_gray_op<Layout>(s, batch.weights, [&](auto op) {
    area_block<Layout>(s.planes, s.c, s.band_columns, s.wide, QuotientRounder(s.denominator), op,
                       store);
  });
}

template <class Layout>
__global__ void __launch_bounds__(kSampleColumns *kSampleRows)
    batch_sample_kernel(const __grid_constant__ BatchLaunch batch) {
  const SlotOnDevice &s = batch.slot[blockIdx.z];
  const ElementStore store = element_store(batch, s);
  if (!s.present) {  // black
    const int x = blockIdx.x * kSampleColumns + threadIdx.x;
    const int y = blockIdx.y * kSampleRows + threadIdx.y;
    if (x < s.c.out_width && y < s.c.out_height) store(x, y, 0);
    return;
  }
  with_gray_op<Layout>(s, batch.weights, [&](auto op) {
    sample_block<Layout>(s.planes, s.c, QuotientRounder(s.denominator), op, store);
  });
}

// The slots one launch converts: one layout and one kernel.
struct LaunchGroup {
  PixelLayout layout;
  bool area;
  std::vector<int> slots;
};

template <class Layout>
void launch_group(const BatchFormat &f, const BatchSlot *slots, const LaunchGroup &group,
                  BatchLaunch &batch, cudaStream_t stream) {
  int band_columns = 0;
  for (size_t k = 0; k < group.slots.size(); ++k) {
    const BatchSlot &slot = slots[group.slots[k]];
    SlotOnDevice &s = batch.slot[k];
    s = SlotOnDevice{Planes{{slot.frame.plane[0], slot.frame.plane[1], slot.frame.plane[2]},
                            {slot.frame.stride[0], slot.frame.stride[1], slot.frame.stride[2]}},
                     slot.present ? slot.conversion : Conversion{},
                     slot.present ? resample_denominator(slot.conversion) : 1,
                     group.slots[k],
                     0,
                     slot.present,
                     slot.present && reads_wide<Layout>(slot.frame)};
    s.c.out_width = f.width, s.c.out_height = f.height;  // an absent slot's, for its fill
    if (slot.present && group.area) {
      s.band_columns = area_band_columns<Layout>(slot.conversion);
      band_columns = std::max(band_columns, s.band_columns);
    }
  }
  const unsigned count = static_cast<unsigned>(group.slots.size());
  if (group.area) {
    const dim3 grid((f.width + kAreaColumns - 1) / kAreaColumns,
                    (f.height + kAreaRows - 1) / kAreaRows, count);
    batch_area_kernel<Layout>
        <<<grid, kAreaThreads, kAreaRows * band_columns * sizeof(uint32_t), stream>>>(batch);
  } else {
    const dim3 grid((f.width + kSampleColumns - 1) / kSampleColumns,
                    (f.height + kSampleRows - 1) / kSampleRows, count);
    batch_sample_kernel<Layout><<<grid, dim3(kSampleColumns, kSampleRows), 0, stream>>>(batch);
  }
}

}  // namespace

cudaError_t convert_batch_cuda(const BatchFormat &f, const BatchSlot *slots, int count,
                               void *device_out, const Weights &w, cudaStream_t stream) {
  std::string why;
  if (!valid_batch(f, slots, count, &why) ||
      reinterpret_cast<uintptr_t>(device_out) % dtype_bytes(f.dtype) != 0)
    return cudaErrorInvalidValue;
  // the launches: present slots by layout and kernel, in the order they
  // first come; the absent ones go with the first (or alone, of any layout)
  std::vector<LaunchGroup> groups;
  for (int i = 0; i < count; ++i) {
    if (!slots[i].present) continue;
    const PixelLayout layout = slots[i].conversion.layout;
    const bool area = slots[i].conversion.method == ScaleMethod::Area;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const LaunchGroup &g) {
      return g.layout == layout && g.area == area;
    });
    if (group == groups.end()) group = groups.insert(groups.end(), LaunchGroup{layout, area, {}});
    group->slots.push_back(i);
  }
  if (groups.empty()) groups.push_back(LaunchGroup{PixelLayout::Luma, false, {}});
  for (int i = 0; i < count; ++i)
    if (!slots[i].present) groups.front().slots.push_back(i);
  BatchLaunch batch{};
  batch.out = static_cast<uint8_t *>(device_out);
  batch.slot_bytes = batch_slot_bytes(f);
  batch.dtype = f.dtype;
  batch.gray8 = f.gray_depth == 8;
  batch.normaliser = normaliser_of(f);
  batch.weights = w;
  batch.width = f.width;
  for (const LaunchGroup &group : groups)
    dispatch_layout(group.layout, [&](auto layout) {
      launch_group<decltype(layout)>(f, slots, group, batch, stream);
    });
  return cudaGetLastError();
}

}  // namespace cudagray
