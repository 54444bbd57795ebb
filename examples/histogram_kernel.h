// SPDX-License-Identifier: LGPL-2.1-or-later
// The application's own CUDA code in examples/gpu_histogram.cpp: a 256-bin
// histogram of a GRAY8 frame in device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

// Enqueues on stream the counting of every pixel of a width x height frame at
// device pointer gray (rows pitch bytes apart) into device_bins[256], which
// it clears first. Returns the launch's error.
cudaError_t histogram256_async(const uint8_t *gray, size_t pitch, int width, int height,
                               unsigned *device_bins, cudaStream_t stream);
