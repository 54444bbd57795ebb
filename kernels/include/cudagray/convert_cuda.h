// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA kernels, for callers that manage their own device memory and
// stream (the CUDA backend, the tests and the bench). CUDA builds only.
#pragma once

#include <cuda_runtime.h>

#include "cudagray/conversion.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"

namespace cudagray {

// Enqueues conversion c of a device-resident frame on stream. Returns the
// launch's error (cudaErrorInvalidValue for a c that valid_conversion
// refuses); the kernel's own completion is the stream's business.
cudaError_t convert_cuda(const Conversion &c, const InputFrame &device_in,
                         const GrayFrame &device_out, const Weights &w, cudaStream_t stream);

}  // namespace cudagray
