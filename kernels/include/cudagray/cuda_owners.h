// SPDX-License-Identifier: LGPL-2.1-or-later
// RAII owners of CUDA streams, events and memory, the calls that make them,
// and the error check they throw from. CUDA builds only: include it only
// from code compiled with CUDA.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace cudagray {

struct CudaError : std::runtime_error {
  CudaError(cudaError_t code, const std::string &what) : std::runtime_error(what), code(code) {}
  cudaError_t code;
};

// Throws CudaError "<function> failed: <description> (<name>)" unless err is
// cudaSuccess. call is the call's source text; its arguments are dropped.
inline void check(cudaError_t err, const char *call) {
  if (err != cudaSuccess) {
    cudaGetLastError();  // reset a non-sticky error so the next call does not report it again
    const std::string text(call);
    throw CudaError(err, text.substr(0, text.find('(')) + " failed: " + cudaGetErrorString(err) +
                             " (" + cudaGetErrorName(err) + ")");
  }
}

// Owns one handle; Release is the CUDA call that frees it.
template <class Handle, cudaError_t (*Release)(Handle)>
class CudaOwner {
 public:
  CudaOwner() = default;
  explicit CudaOwner(Handle h) : handle_(h) {}
  CudaOwner(CudaOwner &&o) noexcept : handle_(std::exchange(o.handle_, Handle{})) {}
  CudaOwner &operator=(CudaOwner &&o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, Handle{});
    }
    return *this;
  }
  CudaOwner(const CudaOwner &) = delete;
  CudaOwner &operator=(const CudaOwner &) = delete;
  ~CudaOwner() { reset(); }
  Handle get() const { return handle_; }
  void reset() {
    if (handle_) Release(std::exchange(handle_, Handle{}));
  }

 private:
  Handle handle_{};
};

// Each frees one as a resource change (change_cuda_resources, cudagray/device.h).
cudaError_t destroy_stream(cudaStream_t stream);
cudaError_t destroy_event(cudaEvent_t event);
cudaError_t free_device_memory(void *memory);
// cudaFreeHost, and the block leaves the count of pinned_bytes_held.
cudaError_t release_pinned(void *memory);

using StreamOwner = CudaOwner<cudaStream_t, destroy_stream>;
using EventOwner = CudaOwner<cudaEvent_t, destroy_event>;
using DeviceMemory = CudaOwner<void *, free_device_memory>;
using PinnedMemory = CudaOwner<void *, release_pinned>;

// Each makes one as a resource change (change_cuda_resources, cudagray/device.h) or throws
// CudaError (cuda_owners.cpp; in fault-injection builds through the fault switch,
// cudagray/fault_injection.h).
StreamOwner make_stream();  // non-blocking
EventOwner make_event(unsigned flags = cudaEventDefault);
DeviceMemory make_device_memory(size_t bytes);
PinnedMemory make_pinned_memory(size_t bytes);  // cudaHostAllocDefault

}  // namespace cudagray
