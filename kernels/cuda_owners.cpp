// SPDX-License-Identifier: LGPL-2.1-or-later
// Makes the CUDA owners of cudagray/cuda_owners.h, each call checked.
#include "cuda_check.h"

namespace cudagray {

StreamOwner make_stream() {
  cudaStream_t s;
  CUDAGRAY_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return StreamOwner(s);
}

EventOwner make_event(unsigned flags) {
  cudaEvent_t e;
  CUDAGRAY_CHECK(cudaEventCreateWithFlags(&e, flags));
  return EventOwner(e);
}

DeviceMemory make_device_memory(size_t bytes) {
  void *p;
  CUDAGRAY_CHECK(cudaMalloc(&p, bytes));
  return DeviceMemory(p);
}

PinnedMemory make_pinned_memory(size_t bytes) {
  void *p;
  CUDAGRAY_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  count_pinned(p, bytes);
  return PinnedMemory(p);
}

}  // namespace cudagray
