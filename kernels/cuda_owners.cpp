// SPDX-License-Identifier: LGPL-2.1-or-later
// Makes and frees the CUDA owners of cudagray/cuda_owners.h, each call
// checked, each inside a CudaResourceChange.
#include "cuda_check.h"
#include "cuda_gate.h"
#include "cudagray/device.h"
#ifdef CUDAGRAY_FAULT_INJECTION
#include "cudagray/fault_injection.h"  // the device memory held, counted for the tests
#endif

namespace cudagray {

StreamOwner make_stream() {
  const CudaResourceChange change;
  cudaStream_t s;
  CUDAGRAY_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return StreamOwner(s);
}

EventOwner make_event(unsigned flags) {
  const CudaResourceChange change;
  cudaEvent_t e;
  CUDAGRAY_CHECK(cudaEventCreateWithFlags(&e, flags));
  return EventOwner(e);
}

DeviceMemory make_device_memory(size_t bytes) {
  const CudaResourceChange change;
  void *p;
  CUDAGRAY_CHECK(cudaMalloc(&p, bytes));
#ifdef CUDAGRAY_FAULT_INJECTION
  count_device_memory(p, bytes);
#endif
  return DeviceMemory(p);
}

PinnedMemory make_pinned_memory(size_t bytes) {
  const CudaResourceChange change;
  void *p;
  CUDAGRAY_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  count_pinned(p, bytes);
  return PinnedMemory(p);
}

cudaError_t destroy_stream(cudaStream_t stream) {
  const CudaResourceChange change;
  return cudaStreamDestroy(stream);
}

cudaError_t destroy_event(cudaEvent_t event) {
  const CudaResourceChange change;
  return cudaEventDestroy(event);
}

cudaError_t free_device_memory(void *memory) {
#ifdef CUDAGRAY_FAULT_INJECTION
  uncount_device_memory(memory);
#endif
  const CudaResourceChange change;
  return cudaFree(memory);
}

}  // namespace cudagray
