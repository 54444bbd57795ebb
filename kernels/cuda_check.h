// SPDX-License-Identifier: LGPL-2.1-or-later
// The kernels' CUDA error check: cudagray::check (cudagray/cuda_owners.h) on
// every call, which fault-injection builds can make fail on purpose.
#pragma once

#include "cudagray/cuda_owners.h"

namespace cudagray {

// Adds a block of pinned memory just allocated to pinned_bytes_held
// (device_cuda.cpp); release_pinned takes it out.
void count_pinned(void *memory, size_t bytes);

#ifdef CUDAGRAY_FAULT_INJECTION
// Test builds (cudagray/fault_injection.h): when a fault is armed for this
// call's function, the call is skipped and fails instead.
bool cuda_fault_due(const char *call);
cudaError_t injected_cuda_error(const char *call);

#define CUDAGRAY_CHECK(call) \
  ::cudagray::check(         \
      ::cudagray::cuda_fault_due(#call) ? ::cudagray::injected_cuda_error(#call) : (call), #call)
#else
#define CUDAGRAY_CHECK(call) ::cudagray::check((call), #call)
#endif

}  // namespace cudagray
