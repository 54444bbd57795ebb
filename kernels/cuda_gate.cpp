// SPDX-License-Identifier: LGPL-2.1-or-later
// CudaQueueing and CudaResourceChange (cuda_gate.h): the
// CUDA driver's context lock lets readers (launches, copies, queries) in
// ahead of a waiting writer (creating or freeing streams, events, memory),
// and launches hold it while they queue for the GPU. With tens of streams
// busy in one context a pipeline that starts could then not create its
// events for as long as the others ran. This gate turns the order round for
// cudagray's own calls: while a resource change waits, queueing waits.
#include <condition_variable>
#include <mutex>

#include "cuda_gate.h"
#include "cudagray/device.h"

namespace cudagray {

namespace {

struct Gate {
  std::mutex lock;
  std::condition_variable changed;
  int queueing = 0;  // threads inside a CudaQueueing
  int changing = 0;  // threads inside a CudaResourceChange, or waiting to be
};
// Never destroyed: owners in other static objects may free at exit.
Gate &gate() {
  static Gate *process_gate = new Gate;
  return *process_gate;
}

}  // namespace

CudaQueueing::CudaQueueing() {
  Gate &g = gate();
  std::unique_lock<std::mutex> hold(g.lock);
  g.changed.wait(hold, [&] { return g.changing == 0; });
  ++g.queueing;
}

CudaQueueing::~CudaQueueing() {
  Gate &g = gate();
  std::lock_guard<std::mutex> hold(g.lock);
  if (--g.queueing == 0) g.changed.notify_all();
}

// Resource changes do not exclude each other (the driver orders them), so a
// change may nest in another on the same thread.
CudaResourceChange::CudaResourceChange() {
  Gate &g = gate();
  std::unique_lock<std::mutex> hold(g.lock);
  ++g.changing;
  g.changed.wait(hold, [&] { return g.queueing == 0; });
}

CudaResourceChange::~CudaResourceChange() {
  Gate &g = gate();
  std::lock_guard<std::mutex> hold(g.lock);
  if (--g.changing == 0) g.changed.notify_all();
}

void change_cuda_resources(const std::function<void()> &change) {
  const CudaResourceChange gate;
  change();
}

}  // namespace cudagray
