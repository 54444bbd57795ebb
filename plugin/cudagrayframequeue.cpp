// SPDX-License-Identifier: LGPL-2.1-or-later
/* The one owner of the frames in flight, between the streaming thread and
 * the output task. */
#include "cudagrayframequeue.h"

GstFlowReturn CudaGrayFrameQueue::stopped_flow() const {
  return flushing_ ? GST_FLOW_FLUSHING : output_flow_;
}

GstFlowReturn CudaGrayFrameQueue::wait_for_room(guint limit) {
  std::unique_lock<std::mutex> hold(lock_);
  changed_.wait(hold,
                [&] { return frames_.size() + pushing_ < limit || stopped_flow() != GST_FLOW_OK; });
  /* returned to upstream from the chain function: upstream reports it */
  if (output_flow_ != GST_FLOW_OK && !flushing_) upstream_told_ = true;
  return stopped_flow();
}

gboolean CudaGrayFrameQueue::upstream_told() {
  std::lock_guard<std::mutex> hold(lock_);
  return upstream_told_;
}

void CudaGrayFrameQueue::push(CudaGrayFrame &&frame) {
  std::lock_guard<std::mutex> hold(lock_);
  frames_.push_back(std::move(frame));
  changed_.notify_all();
}

GstFlowReturn CudaGrayFrameQueue::drain() {
  std::unique_lock<std::mutex> hold(lock_);
  changed_.wait(hold,
                [&] { return (frames_.empty() && !pushing_) || stopped_flow() != GST_FLOW_OK; });
  return stopped_flow();
}

gboolean CudaGrayFrameQueue::wait_for_frame() {
  std::unique_lock<std::mutex> hold(lock_);
  changed_.wait(hold, [&] { return !frames_.empty() || stopped_flow() != GST_FLOW_OK; });
  return stopped_flow() == GST_FLOW_OK;
}

CudaGrayFrame CudaGrayFrameQueue::take_oldest() {
  std::lock_guard<std::mutex> hold(lock_);
  CudaGrayFrame frame = std::move(frames_.front());
  frames_.pop_front();
  pushing_ = true;
  return frame;
}

void CudaGrayFrameQueue::pushed(GstFlowReturn ret) {
  std::lock_guard<std::mutex> hold(lock_);
  pushing_ = false;
  if (ret != GST_FLOW_OK) output_flow_ = ret;
  changed_.notify_all();
}

void CudaGrayFrameQueue::set_flushing(gboolean flushing) {
  std::lock_guard<std::mutex> hold(lock_);
  flushing_ = flushing;
  changed_.notify_all();
}

gsize CudaGrayFrameQueue::discard_all() {
  std::deque<CudaGrayFrame> dropped;
  {
    std::lock_guard<std::mutex> hold(lock_);
    dropped.swap(frames_);
    pushing_ = false;
    changed_.notify_all();
  }
  return dropped.size(); /* unmapped as they go */
}

void CudaGrayFrameQueue::reset() {
  discard_all();
  std::lock_guard<std::mutex> hold(lock_);
  output_flow_ = GST_FLOW_OK;
  upstream_told_ = false;
  flushing_ = false;
}

gsize CudaGrayFrameQueue::size() {
  std::lock_guard<std::mutex> hold(lock_);
  return frames_.size() + pushing_;
}
