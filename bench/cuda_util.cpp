// SPDX-License-Identifier: LGPL-2.1-or-later
// The bench's CUDA check and owners.
#include "cuda_util.h"

#include "bench.h"

#include <stdexcept>
#include <string>

namespace bench {

void check_cuda(cudaError_t err, const char *call) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  const std::string text(call);
  throw std::runtime_error(text.substr(0, text.find('(')) + " failed: " + cudaGetErrorString(err) +
                           " (" + cudaGetErrorName(err) + ")");
}

Stream make_stream() {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream(stream);
}

Event make_event() {
  cudaEvent_t event;
  CHECK_CUDA(cudaEventCreate(&event));
  return Event(event);
}

DeviceMemory make_device_memory(size_t bytes) {
  void *memory;
  CHECK_CUDA(cudaMalloc(&memory, bytes));
  return DeviceMemory(memory);
}

PinnedMemory make_pinned_memory(size_t bytes) {
  void *memory;
  CHECK_CUDA(cudaHostAlloc(&memory, bytes, cudaHostAllocDefault));
  return PinnedMemory(memory);
}

DeviceRing random_device_ring(size_t count, size_t bytes, uint64_t seed) {
  DeviceRing ring(count, bytes, make_device_memory);
  PageableBlock host(bytes);
  for (size_t i = 0; i < count; ++i) {
    fill_random(host.data, bytes, seed + i);
    CHECK_CUDA(cudaMemcpy(ring.at(i), host.data, bytes, cudaMemcpyHostToDevice));
  }
  return ring;
}

PinnedRing random_pinned_ring(size_t count, size_t bytes, uint64_t seed) {
  PinnedRing ring(count, bytes, make_pinned_memory);
  for (size_t i = 0; i < count; ++i) fill_random(ring.at(i), bytes, seed + i);
  return ring;
}

}  // namespace bench
