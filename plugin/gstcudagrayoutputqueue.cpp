// SPDX-License-Identifier: LGPL-2.1-or-later
/* The output queue: the one owner of what waits to be pushed, between the
 * streaming thread and the output task. */
#include "gstcudagrayoutputqueue.h"

#include <chrono>
#include <utility>

GstCudaGrayOutputItem GstCudaGrayOutputItem::ready(GstBuffer *buffer) {
  GstCudaGrayOutputItem item;
  item.buffer_ = buffer;
  return item;
}

GstCudaGrayOutputItem GstCudaGrayOutputItem::serialized(GstEvent *event) {
  GstCudaGrayOutputItem item;
  item.event_ = event;
  return item;
}

GstCudaGrayOutputItem::GstCudaGrayOutputItem(GstCudaGrayOutputItem &&other) noexcept {
  *this = std::move(other);
}

GstCudaGrayOutputItem &GstCudaGrayOutputItem::operator=(GstCudaGrayOutputItem &&other) noexcept {
  if (this != &other) {
    clear();
    frame_ = std::move(other.frame_);
    buffer_ = std::exchange(other.buffer_, nullptr);
    event_ = std::exchange(other.event_, nullptr);
    refusals_ = std::exchange(other.refusals_, 0);
  }
  return *this;
}

GstCudaGrayOutputItem::~GstCudaGrayOutputItem() { clear(); }

void GstCudaGrayOutputItem::clear() {
  frame_.reset();
  gst_clear_buffer(&buffer_);
  gst_clear_event(&event_);
}

GstBuffer *GstCudaGrayOutputItem::take_buffer() { return std::exchange(buffer_, nullptr); }

GstEvent *GstCudaGrayOutputItem::take_event() { return std::exchange(event_, nullptr); }

GstFlowReturn GstCudaGrayOutputQueue::stopped_flow() const {
  if (flushing_) return GST_FLOW_FLUSHING;
  if (renegotiating_) return GST_CUDA_GRAY_FLOW_RENEGOTIATE;
  return output_flow_;
}

GstFlowReturn GstCudaGrayOutputQueue::wait_for_room(guint limit) {
  std::unique_lock<std::mutex> hold(lock_);
  changed_.wait(hold, [&] { return frames_held_ < limit || stopped_flow() != GST_FLOW_OK; });
  /* returned to upstream from the chain function: upstream reports it */
  if (output_flow_ != GST_FLOW_OK && !flushing_ && !renegotiating_) upstream_told_ = true;
  return stopped_flow();
}

GstFlowReturn GstCudaGrayOutputQueue::push(GstCudaGrayOutputItem &&item) {
  std::lock_guard<std::mutex> hold(lock_);
  if (flushing_) return GST_FLOW_FLUSHING; /* the item drops it */
  if (item.is_event() && GST_EVENT_TYPE(item.event()) == GST_EVENT_EOS) eos_queued_ = true;
  if (item.is_frame()) frames_held_++;
  items_.push_back(std::move(item));
  changed_.notify_all();
  return GST_FLOW_OK;
}

gboolean GstCudaGrayOutputQueue::claim_idle_output(bool frame) {
  std::lock_guard<std::mutex> hold(lock_);
  if (!items_.empty() || pushing_ || stopped_flow() != GST_FLOW_OK) return FALSE;
  pushing_ = true;
  pushing_frame_ = frame;
  frames_held_ += frame;
  return TRUE;
}

GstFlowReturn GstCudaGrayOutputQueue::drain() {
  std::unique_lock<std::mutex> hold(lock_);
  /* a stopped output still lets its events out (and drops its frames) */
  changed_.wait(hold, [&] { return (items_.empty() && !pushing_) || flushing_ || renegotiating_; });
  return stopped_flow();
}

gboolean GstCudaGrayOutputQueue::wait_for_item() {
  std::unique_lock<std::mutex> hold(lock_);
  /* frames refused stay put until converted again */
  changed_.wait(hold, [&] { return (!items_.empty() && !renegotiating_) || flushing_; });
  return !flushing_;
}

GstCudaGrayOutputItem GstCudaGrayOutputQueue::take_oldest() {
  std::lock_guard<std::mutex> hold(lock_);
  GstCudaGrayOutputItem item = std::move(items_.front());
  items_.pop_front();
  pushing_ = true;
  pushing_frame_ = item.is_frame();
  return item;
}

void GstCudaGrayOutputQueue::pushed(GstFlowReturn ret, bool upstream_told) {
  std::lock_guard<std::mutex> hold(lock_);
  if (upstream_told && ret != GST_FLOW_OK) upstream_told_ = true;
  if (pushing_frame_) frames_held_--;
  pushing_ = pushing_frame_ = false;
  if (ret != GST_FLOW_OK && output_flow_ == GST_FLOW_OK) output_flow_ = ret;
  changed_.notify_all();
}

GstFlowReturn GstCudaGrayOutputQueue::flow() {
  std::lock_guard<std::mutex> hold(lock_);
  return output_flow_;
}

void GstCudaGrayOutputQueue::refuse(GstCudaGrayOutputItem &&item) {
  std::lock_guard<std::mutex> hold(lock_);
  items_.push_front(std::move(item));
  pushing_ = pushing_frame_ = false; /* the frame stays counted: it is held again */
  renegotiating_ = true;
  changed_.notify_all();
}

gboolean GstCudaGrayOutputQueue::renegotiation_pending() {
  std::lock_guard<std::mutex> hold(lock_);
  return renegotiating_ && !flushing_;
}

std::deque<GstCudaGrayOutputItem> GstCudaGrayOutputQueue::take_refused() {
  std::lock_guard<std::mutex> hold(lock_);
  return std::move(items_);
}

void GstCudaGrayOutputQueue::put_back_converted(std::deque<GstCudaGrayOutputItem> &&items,
                                                GstFlowReturn ret) {
  std::lock_guard<std::mutex> hold(lock_);
  /* the serving thread holds the stream lock: nothing was queued meanwhile */
  items_.clear();
  for (GstCudaGrayOutputItem &item : items) {
    if (ret != GST_FLOW_OK && item.is_frame()) { /* not converted again: dropped */
      frames_held_--;
      continue;
    }
    items_.push_back(std::move(item));
  }
  renegotiating_ = false;
  if (ret != GST_FLOW_OK && output_flow_ == GST_FLOW_OK) output_flow_ = ret;
  changed_.notify_all();
}

gboolean GstCudaGrayOutputQueue::wait_for_renegotiation(gint64 timeout_us) {
  std::unique_lock<std::mutex> hold(lock_);
  changed_.wait_for(hold, std::chrono::microseconds(timeout_us),
                    [&] { return !renegotiating_ || flushing_; });
  return renegotiating_ && !flushing_;
}

gboolean GstCudaGrayOutputQueue::take_unreported_failure(GstFlowReturn *ret) {
  std::lock_guard<std::mutex> hold(lock_);
  if (failure_reported_ || upstream_told_ || !eos_queued_ || flushing_ ||
      (output_flow_ != GST_FLOW_NOT_LINKED && output_flow_ != GST_FLOW_NOT_NEGOTIATED))
    return FALSE;
  failure_reported_ = true;
  *ret = output_flow_;
  return TRUE;
}

gboolean GstCudaGrayOutputQueue::flushing() {
  std::lock_guard<std::mutex> hold(lock_);
  return flushing_;
}

void GstCudaGrayOutputQueue::set_flushing(gboolean flushing) {
  std::lock_guard<std::mutex> hold(lock_);
  flushing_ = flushing;
  changed_.notify_all();
}

void GstCudaGrayOutputQueue::stop(GstFlowReturn ret) {
  std::lock_guard<std::mutex> hold(lock_);
  if (ret == GST_FLOW_FLUSHING)
    flushing_ = true;
  else
    output_flow_ = ret;
  changed_.notify_all();
}

gsize GstCudaGrayOutputQueue::discard_all(GstPad *keep_sticky_on) {
  std::deque<GstCudaGrayOutputItem> dropped;
  gsize frames;
  {
    std::lock_guard<std::mutex> hold(lock_);
    dropped.swap(items_);
    frames = frames_held_ - pushing_frame_;
    frames_held_ = 0;
    pushing_ = pushing_frame_ = renegotiating_ = false;
    changed_.notify_all();
  }
  for (GstCudaGrayOutputItem &item : dropped) {
    const GstEvent *event = item.event();
    if (keep_sticky_on && event && GST_EVENT_IS_STICKY(event) &&
        GST_EVENT_TYPE(event) != GST_EVENT_SEGMENT && GST_EVENT_TYPE(event) != GST_EVENT_EOS) {
      GstEvent *sticky = item.take_event();
      gst_pad_store_sticky_event(keep_sticky_on, sticky);
      gst_event_unref(sticky);
    }
  }
  return frames; /* unmapped as they go */
}

void GstCudaGrayOutputQueue::reset() {
  discard_all(NULL);
  std::lock_guard<std::mutex> hold(lock_);
  output_flow_ = GST_FLOW_OK;
  upstream_told_ = eos_queued_ = failure_reported_ = false;
  flushing_ = false;
}

gsize GstCudaGrayOutputQueue::frames() {
  std::lock_guard<std::mutex> hold(lock_);
  return frames_held_;
}
