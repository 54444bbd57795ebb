// SPDX-License-Identifier: LGPL-2.1-or-later
/* The frames in flight between the streaming thread, which submits them, and
 * the output task, which pushes them when converted: their one owner, and
 * the back-pressure and flow returns between the two threads. */
#pragma once

#include <gst/gst.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "cudagrayframe.h"

class CudaGrayFrameQueue {
 public:
  CudaGrayFrameQueue() = default;
  CudaGrayFrameQueue(const CudaGrayFrameQueue &) = delete;
  CudaGrayFrameQueue &operator=(const CudaGrayFrameQueue &) = delete;

  /* Streaming thread. Blocks while limit frames are held (queued, or being
   * pushed); then GST_FLOW_OK, or what stopped the output: FLUSHING while
   * flushing, else the flow return of the push that failed. */
  GstFlowReturn wait_for_room(guint limit);
  /* Takes the frame, whose conversion has started. */
  void push(CudaGrayFrame &&frame);
  /* Blocks until every frame held has been pushed; the same returns as
   * wait_for_room (not OK: frames may be left, see discard_all). */
  GstFlowReturn drain();
  /* Whether wait_for_room has returned the output's failed flow return,
   * which upstream then got from its push and reports itself. */
  gboolean upstream_told();

  /* Output task. Blocks until a frame is queued: TRUE, or FALSE when
   * flushing or when a push failed (the task then pauses). */
  gboolean wait_for_frame();
  /* Hands over the oldest frame; it still counts as held until pushed ()
   * says how its push went. */
  CudaGrayFrame take_oldest();
  void pushed(GstFlowReturn ret);

  /* Any thread. Flushing wakes and fails every wait until cleared. */
  void set_flushing(gboolean flushing);
  /* Unmaps and drops every frame; the output task must be paused. Returns
   * how many there were. */
  gsize discard_all();
  /* Back to a fresh start: nothing held, output flow OK, not flushing. */
  void reset();
  gsize size();

 private:
  GstFlowReturn stopped_flow() const;

  std::mutex lock_;
  std::condition_variable changed_;
  std::deque<CudaGrayFrame> frames_;
  bool pushing_ = false;
  bool flushing_ = false;
  GstFlowReturn output_flow_ = GST_FLOW_OK;
  bool upstream_told_ = false;
};
