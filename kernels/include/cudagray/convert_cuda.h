// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA kernels, for callers that manage their own device memory and
// stream (the CUDA backend, the tests and the bench). CUDA builds only.
#pragma once

#include <cuda_runtime.h>

#include "cudagray/batch.h"
#include "cudagray/conversion.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"

namespace cudagray {

// Enqueues conversion c of a device-resident frame on stream. Returns the
// launch's error (cudaErrorInvalidValue for a c that valid_conversion
// refuses); the kernel's own completion is the stream's business.
cudaError_t convert_cuda(const Conversion &c, const InputFrame &device_in,
                         const GrayFrame &device_out, const Weights &w, cudaStream_t stream);

// Enqueues batch f of count slots (cudagray/batch.h), frames in device
// memory, into device_out (batch_bytes(f, count), aligned to an element) on
// stream, equal to convert_batch_cpu bit for bit: one kernel launch for the
// slots of each layout and method family (area; nearest and bilinear), so
// one for a batch of one layout and method. Returns the launches' error
// (cudaErrorInvalidValue for a batch that valid_batch refuses, or an
// unaligned device_out).
cudaError_t convert_batch_cuda(const BatchFormat &f, const BatchSlot *slots, int count,
                               void *device_out, const Weights &w, cudaStream_t stream);

}  // namespace cudagray
