// SPDX-License-Identifier: LGPL-2.1-or-later
// Test-only fault injection, compiled into builds configured with
// -Dfault-injection=enabled (which define CUDAGRAY_FAULT_INJECTION) and into
// no other: the plugin installed from a default build has none of it.
#pragma once

#ifndef CUDAGRAY_FAULT_INJECTION
#error "fault injection exists only in builds configured with -Dfault-injection=enabled"
#endif

#include <string>

namespace cudagray {

// The nth next call of the named CUDA function (as the backend writes it:
// "cudaMalloc", "cudaHostAlloc", "cudaMemcpy2DAsync", "convert_cuda" for the
// kernel launch, "poll_event" for the wait on a frame, ...) fails with
// cudaErrorMemoryAllocation (allocations) or cudaErrorLaunchFailure
// (anything else), once. spec is "name" or "name:nth"; an empty spec
// disarms. Armed for the whole process; the plugin links its own copy of
// the kernels, which tests arm through the plugin's exported
// cudagray_inject_cuda_fault (plugin/plugin.cpp).
void inject_cuda_fault(const std::string &spec);

}  // namespace cudagray
