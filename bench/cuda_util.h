// SPDX-License-Identifier: LGPL-2.1-or-later
// CUDA for the bench's own rows: the check on each call, and rotating sets of
// frames in device or pinned memory. CUDA builds only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cudagray/cuda_owners.h"

// Throws cudagray::CudaError "<function> failed: ..." unless the call succeeds.
#define CHECK_CUDA(call) ::cudagray::check((call), #call)

namespace bench {

// Random bytes from seed into device or pinned memory.
void fill_random_cuda(void *memory, size_t bytes, uint64_t seed);

// count equal frames of bytes each from Make, picked by a rotating index;
// with a seed, frame i holds random bytes from seed + i.
template <class Owner, Owner (*Make)(size_t)>
class Ring {
 public:
  Ring(size_t count, size_t bytes) {
    for (size_t i = 0; i < count; ++i) frames_.push_back(Make(bytes));
  }
  Ring(size_t count, size_t bytes, uint64_t seed) : Ring(count, bytes) {
    for (size_t i = 0; i < count; ++i) fill_random_cuda(frames_[i].get(), bytes, seed + i);
  }
  uint8_t *at(long i) const {
    return static_cast<uint8_t *>(frames_[static_cast<size_t>(i) % frames_.size()].get());
  }

 private:
  std::vector<Owner> frames_;
};
using DeviceRing = Ring<cudagray::DeviceMemory, cudagray::make_device_memory>;
using PinnedRing = Ring<cudagray::PinnedMemory, cudagray::make_pinned_memory>;

}  // namespace bench
