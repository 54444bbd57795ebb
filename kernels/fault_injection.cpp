// SPDX-License-Identifier: LGPL-2.1-or-later
// Test-only fault injection (fault_injection.h): the armed fault, and the
// check CUDAGRAY_CHECK makes before each call.
#include "cudagray/fault_injection.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "cuda_check.h"

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

}  // namespace cudagray
