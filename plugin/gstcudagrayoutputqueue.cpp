// SPDX-License-Identifier: LGPL-2.1-or-later
/* The output queue: the one owner of what waits to be pushed, between the
 * streaming thread and the output task. */
#include "gstcudagrayoutputqueue.h"

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
    finished_ = std::exchange(other.finished_, false);
  }
  return *this;
}

GstCudaGrayOutputItem::~GstCudaGrayOutputItem() { clear(); }

void GstCudaGrayOutputItem::clear() {
  frame_.reset();
  gst_clear_buffer(&buffer_);
  gst_clear_event(&event_);
  finished_ = false;
}

GstBuffer *GstCudaGrayOutputItem::take_buffer() { return std::exchange(buffer_, nullptr); }

GstEvent *GstCudaGrayOutputItem::take_event() { return std::exchange(event_, nullptr); }

GstBuffer *GstCudaGrayOutputItem::take_input(bool *discont) {
  GstBuffer *input;
  if (frame_) {
    input = gst_buffer_ref(frame_->input_buffer());
    *discont = frame_->output_discont();
  } else {
    input = take_buffer();
    *discont = input && GST_BUFFER_IS_DISCONT(input);
  }
  clear();
  return input;
}

GstFlowReturn GstCudaGrayOutputQueue::stopped_flow() const {
  if (flushing_) return GST_FLOW_FLUSHING;
  if (renegotiating_) return GST_CUDA_GRAY_FLOW_RENEGOTIATE;
  return output_flow_;
}

GstFlowReturn GstCudaGrayOutputQueue::wait_for_room(guint limit) {
  std::unique_lock<std::mutex> hold(lock_);
  /* while another thread converts refused frames again, nothing else may */
  changed_.wait(hold,
                [&] { return flushing_ || frames_held_ < limit || stopped_flow() != GST_FLOW_OK; });
  /* returned to upstream from the chain function: upstream reports it */
  if (output_flow_ != GST_FLOW_OK && !flushing_ && !renegotiating_) upstream_told_ = true;
  return stopped_flow();
}

GstFlowReturn GstCudaGrayOutputQueue::push(GstCudaGrayOutputItem &&item) {
  std::lock_guard<std::mutex> hold(lock_);
  if (flushing_ && !item.converting()) return GST_FLOW_FLUSHING; /* the item drops it */
  if (flushing_) { /* kept for discard_all, which never pushes it */
    frames_held_++;
    items_.push_back(std::move(item));
    return GST_FLOW_FLUSHING;
  }
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
  /* a stopped output still lets its events out (and drops its frames);
   * while refused items are taken to be converted again, nothing is held */
  changed_.wait(hold, [&] { return flushing_ || (items_.empty() && !pushing_) || renegotiating_; });
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

gboolean GstCudaGrayOutputQueue::take_refused(std::deque<GstCudaGrayOutputItem> *items) {
  std::lock_guard<std::mutex> hold(lock_);
  if (!renegotiating_ || flushing_) return FALSE;
  renegotiating_ = false;
  items->swap(items_);
  return TRUE;
}

void GstCudaGrayOutputQueue::put_back_converted(std::deque<GstCudaGrayOutputItem> &&items,
                                                GstFlowReturn ret) {
  std::lock_guard<std::mutex> hold(lock_);
  /* in front of anything queued meanwhile (an event); when converting
   * again failed, the frames are dropped and the events stay */
  for (auto item = items.rbegin(); item != items.rend(); ++item)
    if (ret == GST_FLOW_OK || item->is_event()) items_.push_front(std::move(*item));
  frames_held_ = pushing_frame_;
  for (const GstCudaGrayOutputItem &item : items_) frames_held_ += item.is_frame();
  if (ret != GST_FLOW_OK && output_flow_ == GST_FLOW_OK) output_flow_ = ret;
  changed_.notify_all();
}

gboolean GstCudaGrayOutputQueue::resume_after_relink() {
  std::lock_guard<std::mutex> hold(lock_);
  if (output_flow_ != GST_FLOW_NOT_LINKED) return FALSE;
  output_flow_ = GST_FLOW_OK;
  upstream_told_ = failure_reported_ = false;
  changed_.notify_all();
  return TRUE;
}

void GstCudaGrayOutputQueue::eos_arrived() {
  std::lock_guard<std::mutex> hold(lock_);
  eos_arrived_ = true;
}

void GstCudaGrayOutputQueue::forget_eos() {
  std::lock_guard<std::mutex> hold(lock_);
  if (output_flow_ != GST_FLOW_EOS) return;
  output_flow_ = GST_FLOW_OK;
  upstream_told_ = eos_arrived_ = failure_reported_ = false;
  changed_.notify_all();
}

gboolean GstCudaGrayOutputQueue::take_unreported_failure(GstFlowReturn *ret) {
  std::lock_guard<std::mutex> hold(lock_);
  if (failure_reported_ || upstream_told_ || !eos_arrived_ || flushing_ ||
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
  upstream_told_ = eos_arrived_ = failure_reported_ = false;
  flushing_ = false;
}

gsize GstCudaGrayOutputQueue::frames() {
  std::lock_guard<std::mutex> hold(lock_);
  return frames_held_;
}
