// SPDX-License-Identifier: LGPL-2.1-or-later
// The process's gate between cudagray's streaming CUDA calls and its CUDA
// resource changes (CudaResourceChange, cudagray/device.h).
#pragma once

namespace cudagray {

// Held while a thread queues a frame's work or waits for it. Waits first
// while any thread holds a CudaResourceChange, or waits to.
class CudaQueueing {
 public:
  CudaQueueing();
  ~CudaQueueing();
  CudaQueueing(const CudaQueueing &) = delete;
  CudaQueueing &operator=(const CudaQueueing &) = delete;
};

}  // namespace cudagray
