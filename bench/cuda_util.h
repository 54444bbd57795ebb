// CUDA for the bench's own rows: a check that throws, and owners that give
// back what they hold. CUDA builds only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <type_traits>

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

}  // namespace bench
