// SPDX-License-Identifier: LGPL-2.1-or-later
// The process's CUDA devices and pinned host memory. Every function works in
// a build without CUDA too, saying why it cannot help.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace cudagray {

// How kernels/ makes the CUDA context it works in current on the calling
// thread around each piece of its work: enter makes it current and returns
// whether leave must undo that afterwards. The element hands over
// GStreamer's shared context this way (push and pop); empty, the context
// current on the calling thread is used as it is.
struct CudaContextSwitch {
  std::function<bool()> enter;
  std::function<void()> leave;
};

// The switch entered for a scope's lifetime.
class InCudaContext {
 public:
  explicit InCudaContext(const CudaContextSwitch &context)
      : context_(context), entered_(context.enter && context.enter()) {}
  ~InCudaContext() {
    if (entered_ && context_.leave) context_.leave();
  }
  InCudaContext(const InCudaContext &) = delete;
  InCudaContext &operator=(const InCudaContext &) = delete;

 private:
  const CudaContextSwitch &context_;
  bool entered_;
};

// Number of usable CUDA devices; 0 with a reason when there are none.
int cuda_device_count(std::string *reason);
// Whether device_id names a CUDA device there is (any device when < 0), without
// making a CUDA context; otherwise says why not (naming the CUDA error), also
// when the plugin was built without CUDA.
bool cuda_device_exists(int device_id, std::string *error);
// Opens device_id (< 0: the first usable device) and makes its primary
// context current on the calling thread; again on a thread where it is
// already open, only makes it current. Returns the device, or -1 and why.
int open_cuda_device(int device_id, std::string *error);

// Host memory that CUDA can copy from or into by DMA (cudaHostAlloc), made
// and freed in context. Without CUDA, or without a driver, allocation returns
// nullptr and says why.
void *alloc_pinned(size_t bytes, std::string *error, const CudaContextSwitch &context = {});
void free_pinned(void *memory, const CudaContextSwitch &context = {});
// Whether CUDA can DMA straight from or into this host memory (pinned by
// cudaHostAlloc or cudaHostRegister, in this process).
bool is_pinned(const void *memory);
// Pinned host memory cudagray holds in this process, in bytes: alloc_pinned's
// blocks and the CUDA backends' staging buffers, every element together.
size_t pinned_bytes_held();

// Runs change, which creates or frees CUDA resources (streams, events,
// device or pinned memory) for cudagray outside kernels/ (a GStreamer CUDA
// buffer pool's allocations, say) in a context where cudagray may be
// streaming: meanwhile cudagray's frames in this process wait to be queued,
// so that the change gets the CUDA context's lock, which busy streams would
// otherwise keep from it (cuda_gate.cpp says why). kernels/ does this itself
// around its own allocations.
void change_cuda_resources(const std::function<void()> &change);

}  // namespace cudagray
