// SPDX-License-Identifier: LGPL-2.1-or-later
// Test-only fault injection, compiled into builds configured with
// -Dfault-injection=enabled (which define CUDAGRAY_FAULT_INJECTION) and into
// no other: the plugin installed from a default build has none of it.
#pragma once

#ifndef CUDAGRAY_FAULT_INJECTION
#error "fault injection exists only in builds configured with -Dfault-injection=enabled"
#endif

#include <cstddef>
#include <cstdint>
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

// The device memory cudagray holds in this process, counted by the owners
// that make and free it (cuda_owners.cpp), so that a test can tell a leak
// of its own from another process's use of the GPU: cudaMalloc'd blocks not
// yet freed, and their bytes. Tests read the plugin's copy through its
// exported cudagray_cuda_memory_held (fault_injection.cpp), which adds the
// pinned host memory held (pinned_bytes_held, cudagray/device.h).
void count_device_memory(const void *memory, size_t bytes);
void uncount_device_memory(const void *memory);
struct DeviceMemoryHeld {
  uint64_t blocks = 0, bytes = 0;
};
DeviceMemoryHeld device_memory_held();

}  // namespace cudagray
