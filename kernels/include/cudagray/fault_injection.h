// Test-only fault injection, compiled into builds configured with
// -Dfault-injection=enabled (which define CUDAGRAY_FAULT_INJECTION) and into
// no other: the plugin installed from a default build has none of it.
#pragma once

#include <string>

namespace cudagray {

// The nth next call of the named CUDA function (as the backend writes it:
// "cudaMalloc", "cudaHostAlloc", "cudaMemcpy2DAsync", "convert_cuda" for the
// kernel launch, "cudaEventSynchronize", ...) fails with
// cudaErrorMemoryAllocation (allocations) or cudaErrorLaunchFailure
// (anything else), once. spec is "name" or "name:nth"; an empty spec
// disarms. Process-wide: the plugin holds its own copy of the kernels, which
// tests arm through the plugin's exported cudagray_inject_cuda_fault.
void inject_cuda_fault(const std::string &spec);

}  // namespace cudagray
