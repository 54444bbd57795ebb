// SPDX-License-Identifier: LGPL-2.1-or-later
// See slow_writer.h.
#include <cuda_runtime.h>

#include "slow_writer.h"

namespace cudagray::test {

namespace {

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

std::string write_after_spin(void *stream, void *device_dst, const void *device_src, size_t bytes,
                             int spin_us) {
  int device = 0, khz = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  const auto s = static_cast<cudaStream_t>(stream);
  spin<<<1, 1, 0, s>>>(static_cast<long long>(khz) * spin_us / 1000);
  err = cudaGetLastError();
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, s);
  return err == cudaSuccess ? "" : cudaGetErrorString(err);
}

}  // namespace cudagray::test
