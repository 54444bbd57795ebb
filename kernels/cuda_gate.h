// SPDX-License-Identifier: LGPL-2.1-or-later
// The process's gate between cudagray's streaming CUDA calls and its CUDA
// resource changes (cuda_gate.cpp says why), private to kernels/: the
// plugin's own changes go through change_cuda_resources (cudagray/device.h).
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

// Held while a thread creates or frees CUDA resources (streams, events,
// device or pinned memory): while one waits, CudaQueueing waits.
class CudaResourceChange {
 public:
  CudaResourceChange();
  ~CudaResourceChange();
  CudaResourceChange(const CudaResourceChange &) = delete;
  CudaResourceChange &operator=(const CudaResourceChange &) = delete;
};

}  // namespace cudagray
