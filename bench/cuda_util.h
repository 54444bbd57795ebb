// SPDX-License-Identifier: LGPL-2.1-or-later
// CUDA for the bench's own rows: a check that throws, owners that give back
// what they hold, and rotating sets of random frames. CUDA builds only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace bench {

// Throws std::runtime_error "<function> failed: <description> (<name>)"
// unless err is cudaSuccess; call is the call's source text.
void check_cuda(cudaError_t err, const char *call);
#define CHECK_CUDA(call) ::bench::check_cuda((call), #call)

// A CUDA handle or allocation, released by Release when the owner goes.
template <class Handle, cudaError_t (*Release)(Handle)>
struct Releaser {
  void operator()(Handle handle) const { Release(handle); }
};
template <class Handle, cudaError_t (*Release)(Handle)>
using CudaOwned = std::unique_ptr<std::remove_pointer_t<Handle>, Releaser<Handle, Release>>;

using Stream = CudaOwned<cudaStream_t, cudaStreamDestroy>;
using Event = CudaOwned<cudaEvent_t, cudaEventDestroy>;
using DeviceMemory = CudaOwned<void *, cudaFree>;
using PinnedMemory = CudaOwned<void *, cudaFreeHost>;
using Graph = CudaOwned<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = CudaOwned<cudaGraphExec_t, cudaGraphExecDestroy>;

Stream make_stream();  // non-blocking
Event make_event();
DeviceMemory make_device_memory(size_t bytes);
PinnedMemory make_pinned_memory(size_t bytes);

// Equal buffers (device or pinned host), picked by a rotating index.
template <class Owner>
class Ring {
 public:
  Ring(size_t count, size_t bytes, Owner (*make)(size_t)) {
    for (size_t i = 0; i < count; ++i) frames_.push_back(make(bytes));
  }
  uint8_t *at(long i) const {
    return static_cast<uint8_t *>(frames_[static_cast<size_t>(i) % frames_.size()].get());
  }

 private:
  std::vector<Owner> frames_;
};
using DeviceRing = Ring<DeviceMemory>;
using PinnedRing = Ring<PinnedMemory>;

// count frames of bytes random bytes, frame i from seed + i.
DeviceRing random_device_ring(size_t count, size_t bytes, uint64_t seed);
PinnedRing random_pinned_ring(size_t count, size_t bytes, uint64_t seed);

}  // namespace bench
