// SPDX-License-Identifier: LGPL-2.1-or-later
// A 256-bin histogram on the GPU: each block counts its rows into shared
// memory, then adds its counts to the frame's.
#include "histogram_kernel.h"

namespace {

constexpr int kThreads = 256;

__global__ void histogram256(const uint8_t *gray, size_t pitch, int width, int height,
                             unsigned *bins) {
  __shared__ unsigned local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (int y = blockIdx.x; y < height; y += gridDim.x) {
    const uint8_t *row = gray + y * pitch;
    for (int x = threadIdx.x; x < width; x += blockDim.x) atomicAdd(&local[row[x]], 1u);
  }
  __syncthreads();
  if (local[threadIdx.x]) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

}  // namespace

cudaError_t histogram256_async(const uint8_t *gray, size_t pitch, int width, int height,
                               unsigned *device_bins, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(device_bins, 0, 256 * sizeof(unsigned), stream);
  if (err != cudaSuccess) return err;
  const int blocks = height < 1024 ? height : 1024;
  histogram256<<<blocks, kThreads, 0, stream>>>(gray, pitch, width, height, device_bins);
  return cudaGetLastError();
}
