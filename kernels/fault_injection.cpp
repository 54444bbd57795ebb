// SPDX-License-Identifier: LGPL-2.1-or-later
// Test-only fault injection (fault_injection.h): the armed fault, the
// check CUDAGRAY_CHECK makes before each call, and the count of the device
// memory held.
#include "cudagray/fault_injection.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "cuda_check.h"
#include "cudagray/device.h"

namespace cudagray {

namespace {

// The armed fault: a function name and how many of its calls to let pass.
struct ArmedFault {
  std::mutex lock;
  std::atomic<bool> armed{false};
  std::string function;
  int calls_left = 0;

  void arm(const std::string &name, int nth) {
    std::lock_guard<std::mutex> hold(lock);
    function = name;
    calls_left = nth;
    armed = !name.empty() && nth > 0;
  }
};

ArmedFault &armed_fault() {
  static ArmedFault fault;
  return fault;
}

// Every device block made and not yet freed, with its size, and the
// totals. A block whose owner was lost stays in the totals even where the
// driver freed it with its context and a later block took its address.
// Never destroyed: owners in other static objects may free blocks at exit.
struct DeviceLedger {
  std::mutex lock;
  std::unordered_map<const void *, size_t> sizes;
  uint64_t blocks = 0, bytes = 0;
};
DeviceLedger &device_ledger() {
  static DeviceLedger *ledger = new DeviceLedger;
  return *ledger;
}

std::string function_of(const char *call) {
  const std::string text(call);
  return text.substr(0, text.find('('));
}

}  // namespace

void inject_cuda_fault(const std::string &spec) {
  const size_t colon = spec.find(':');
  armed_fault().arm(spec.substr(0, colon),
                    colon == std::string::npos ? 1 : std::atoi(spec.c_str() + colon + 1));
}

bool cuda_fault_due(const char *call) {
  ArmedFault &fault = armed_fault();
  if (!fault.armed.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> hold(fault.lock);
  if (!fault.armed || function_of(call) != fault.function || --fault.calls_left > 0) return false;
  fault.armed = false;
  return true;
}

cudaError_t injected_cuda_error(const char *call) {
  const std::string function = function_of(call);
  return function == "cudaMalloc" || function == "cudaHostAlloc" ? cudaErrorMemoryAllocation
                                                                 : cudaErrorLaunchFailure;
}

void count_device_memory(const void *memory, size_t bytes) {
  DeviceLedger &ledger = device_ledger();
  std::lock_guard<std::mutex> hold(ledger.lock);
  ledger.sizes[memory] = bytes;
  ledger.blocks++;
  ledger.bytes += bytes;
}

void uncount_device_memory(const void *memory) {
  DeviceLedger &ledger = device_ledger();
  std::lock_guard<std::mutex> hold(ledger.lock);
  const auto block = ledger.sizes.find(memory);
  if (block == ledger.sizes.end()) return;
  ledger.blocks--;
  ledger.bytes -= block->second;
  ledger.sizes.erase(block);
}

DeviceMemoryHeld device_memory_held() {
  DeviceLedger &ledger = device_ledger();
  std::lock_guard<std::mutex> hold(ledger.lock);
  DeviceMemoryHeld held;
  held.blocks = ledger.blocks;
  held.bytes = ledger.bytes;
  return held;
}

}  // namespace cudagray

// What tests read from the plugin's own copy of the kernels (the plugin
// exports it; everything else in kernels/ is hidden): the device blocks and
// bytes cudagray holds, and the pinned host bytes.
extern "C" __attribute__((visibility("default"))) void cudagray_cuda_memory_held(
    uint64_t *device_blocks, uint64_t *device_bytes, uint64_t *pinned_bytes) {
  const cudagray::DeviceMemoryHeld held = cudagray::device_memory_held();
  *device_blocks = held.blocks;
  *device_bytes = held.bytes;
  *pinned_bytes = cudagray::pinned_bytes_held();
}
