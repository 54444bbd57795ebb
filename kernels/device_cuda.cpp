// SPDX-License-Identifier: LGPL-2.1-or-later
// The process's CUDA devices and pinned host memory (device.h), with CUDA.
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "cuda_check.h"
#include "cuda_gate.h"
#include "cudagray/device.h"

namespace cudagray {

namespace {

// Every pinned block cudagray allocated and has not freed, with its size.
// Never destroyed: owners in other static objects may free blocks at exit.
struct PinnedLedger {
  std::mutex lock;
  std::unordered_map<const void *, size_t> blocks;
  size_t bytes = 0;
};
PinnedLedger &pinned_ledger() {
  static PinnedLedger *ledger = new PinnedLedger;
  return *ledger;
}

}  // namespace

void count_pinned(void *memory, size_t bytes) {
  PinnedLedger &ledger = pinned_ledger();
  std::lock_guard<std::mutex> hold(ledger.lock);
  ledger.blocks[memory] = bytes;
  ledger.bytes += bytes;
}

cudaError_t release_pinned(void *memory) {
  {
    PinnedLedger &ledger = pinned_ledger();
    std::lock_guard<std::mutex> hold(ledger.lock);
    const auto block = ledger.blocks.find(memory);
    if (block != ledger.blocks.end()) {
      ledger.bytes -= block->second;
      ledger.blocks.erase(block);
    }
  }
  const CudaResourceChange change;
  return cudaFreeHost(memory);
}

size_t pinned_bytes_held() {
  PinnedLedger &ledger = pinned_ledger();
  std::lock_guard<std::mutex> hold(ledger.lock);
  return ledger.bytes;
}

void *alloc_pinned(size_t bytes, std::string *error, const CudaContextSwitch &context) {
  void *p = nullptr;
  const InCudaContext in(context);
  try {
    const CudaResourceChange change;
    CUDAGRAY_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    count_pinned(p, bytes);
    return p;
  } catch (const CudaError &e) {
    *error = e.what();
    return nullptr;
  }
}

void free_pinned(void *memory, const CudaContextSwitch &context) {
  const InCudaContext in(context);
  release_pinned(memory);
}

bool is_pinned(const void *memory) {
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, memory) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

namespace {

std::string cuda_version_text(int version) {  // 13000: "13.0"
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Why CUDA offers no device, in words a user can act on. The runtime answers
// cudaErrorInsufficientDriver both when there is no NVIDIA driver at all and
// when the driver is older than the runtime linked into the plugin; the
// driver's version (0 without a driver) tells the two apart.
std::string no_device_reason(cudaError_t error, const std::string &cuda_says) {
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (error == cudaErrorInsufficientDriver && driver == 0) return "no NVIDIA driver is installed";
  if (error == cudaErrorInsufficientDriver)
    return "the NVIDIA driver is too old for this build: it supports CUDA up to " +
           cuda_version_text(driver) + ", the build needs CUDA " + cuda_version_text(runtime);
  if (error == cudaSuccess || error == cudaErrorNoDevice) {
    std::string reason = "the NVIDIA driver finds no CUDA device";
    if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES"))
      reason += std::string(" (CUDA_VISIBLE_DEVICES is \"") + visible + "\")";
    return reason;
  }
  return cuda_says;
}

}  // namespace

int cuda_device_count(std::string *reason) {
  int count = 0;
  /* no exception on this path, which every element asking for a GPU takes:
   * in a Python that loaded GStreamer, libunwind's _Unwind_Resume can stand
   * in for libgcc's, and a C++ exception then aborts the process */
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    *reason =
        no_device_reason(err, std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(err) +
                                  " (" + cudaGetErrorName(err) + ")");
    return 0;
  }
  if (count == 0) *reason = no_device_reason(cudaSuccess, "");
  return count;
}

bool cuda_device_exists(int device_id, std::string *error) {
  const int count = cuda_device_count(error);
  if (count == 0) return false;
  if (device_id >= count) {
    *error = "CUDA device " + std::to_string(device_id) +
             " does not exist: " + std::to_string(count) + " device(s) found, numbered from 0";
    return false;
  }
  return true;
}

int open_cuda_device(int device_id, std::string *error) {
  if (!cuda_device_exists(device_id, error)) return -1;
  const int first = device_id < 0 ? 0 : device_id;
  const int last = device_id < 0 ? cuda_device_count(error) - 1 : device_id;
  for (int device = first; device <= last; ++device) {
    try {
      // creates the primary context now, so that a device that cannot be
      // used fails here rather than at the first frame
      CUDAGRAY_CHECK(cudaSetDevice(device));
      CUDAGRAY_CHECK(cudaFree(nullptr));
      return device;
    } catch (const CudaError &e) {
      *error = "CUDA device " + std::to_string(device) + ": " + e.what();
    }
  }
  return -1;
}

}  // namespace cudagray
