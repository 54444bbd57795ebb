// SPDX-License-Identifier: LGPL-2.1-or-later
// Built instead of the CUDA sources (convert_cuda.cu, backend_cuda.cpp,
// device_cuda.cpp) when the plugin is configured without CUDA.
#include "cudagray/backend.h"
#include "cudagray/batch.h"
#include "cudagray/device.h"

namespace cudagray {

static const char kNoCuda[] =
    "this build of cudagray has no CUDA support (configured with -Dcuda=disabled or without nvcc)";

bool cuda_device_exists(int, std::string *error) {
  *error = kNoCuda;
  return false;
}

int open_cuda_device(int, std::string *error) {
  *error = kNoCuda;
  return -1;
}

std::unique_ptr<Backend> make_cuda_backend(std::string *error, CudaContextSwitch) {
  *error = kNoCuda;
  return nullptr;
}

std::unique_ptr<BatchMaker> make_cuda_batch_maker(std::string *error, CudaContextSwitch) {
  *error = kNoCuda;
  return nullptr;
}

void *alloc_pinned(size_t, std::string *error, const CudaContextSwitch &) {
  *error = kNoCuda;
  return nullptr;
}

void free_pinned(void *, const CudaContextSwitch &) {}

bool is_pinned(const void *) { return false; }

size_t pinned_bytes_held() { return 0; }

int cuda_device_count(std::string *reason) {
  *reason = kNoCuda;
  return 0;
}

}  // namespace cudagray
