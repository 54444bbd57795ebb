// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's output queue: frames being converted, buffers ready as they
 * are (passthrough) and serialized events, in arrival order, between the
 * streaming thread, which queues them, and the output task, the one thread
 * that pushes on the source pad. It owns what it holds, and carries the
 * back-pressure and the flow returns between the two threads. */
#pragma once

#include <gst/gst.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "gstcudagrayframe.h"

/* One item of the output: exactly one of a frame being converted (mapped), a
 * buffer ready to push, or a serialized event. Moves, never copies; a frame
 * is held by pointer, so that moving an item moves no mapped frame (two
 * GstVideoFrames: copying them at each move cost about 3,500 instructions
 * a frame). */
class GstCudaGrayOutputItem {
 public:
  GstCudaGrayOutputItem() = default;
  explicit GstCudaGrayOutputItem(std::unique_ptr<GstCudaGrayFrame> frame)
      : frame_(std::move(frame)) {}
  static GstCudaGrayOutputItem ready(GstBuffer *buffer);
  static GstCudaGrayOutputItem serialized(GstEvent *event);
  GstCudaGrayOutputItem(GstCudaGrayOutputItem &&other) noexcept;
  GstCudaGrayOutputItem &operator=(GstCudaGrayOutputItem &&other) noexcept;
  GstCudaGrayOutputItem(const GstCudaGrayOutputItem &) = delete;
  GstCudaGrayOutputItem &operator=(const GstCudaGrayOutputItem &) = delete;
  ~GstCudaGrayOutputItem();

  bool converting() const { return frame_ != nullptr; }
  /* A frame whose conversion was waited for before its turn to leave (see
   * set_finished): the backend holds it no more. */
  bool finished() const { return finished_; }
  /* Marks a frame whose conversion the backend's finish_oldest waited for
   * already, so that it is not waited for again when it leaves. */
  void set_finished() { finished_ = true; }
  bool is_event() const { return event_ != NULL; }
  /* a frame or a buffer: what max-inflight counts */
  bool is_frame() const { return frame_ || buffer_ != NULL; }
  GstCudaGrayFrame &frame() { return *frame_; }
  /* The buffer ready to push (transfer none); NULL when the item is not one. */
  GstBuffer *buffer() const { return buffer_; }
  /* Transfer full; NULL when the item is not one. */
  GstBuffer *take_buffer();
  /* What a frame or buffer came from (transfer full), to go through the
   * conversion again, and whether what it became was flagged DISCONT; the
   * item is left empty. A frame's conversion must be done. */
  GstBuffer *take_input(bool *discont);
  GstEvent *take_event();
  const GstEvent *event() const { return event_; }

 private:
  void clear();

  std::unique_ptr<GstCudaGrayFrame> frame_;
  GstBuffer *buffer_ = NULL;
  GstEvent *event_ = NULL;
  bool finished_ = false;
};

/* What wait_for_room, drain and a push on the streaming thread return
 * while frames that downstream refused (NOT_NEGOTIATED) wait to be
 * converted again for new caps: the streaming thread serves the
 * renegotiation (see take_refused) and waits again. */
#define GST_CUDA_GRAY_FLOW_RENEGOTIATE GST_FLOW_CUSTOM_SUCCESS

class GstCudaGrayOutputQueue {
 public:
  GstCudaGrayOutputQueue() = default;
  GstCudaGrayOutputQueue(const GstCudaGrayOutputQueue &) = delete;
  GstCudaGrayOutputQueue &operator=(const GstCudaGrayOutputQueue &) = delete;

  /* Streaming thread. Blocks while limit frames are held (queued, or being
   * pushed; events do not count); then GST_FLOW_OK, FLUSHING while
   * flushing, GST_CUDA_GRAY_FLOW_RENEGOTIATE, or the flow return of the
   * push that stopped the output. */
  GstFlowReturn wait_for_room(guint limit);
  /* Queues an item; it goes out after everything queued before it. Events
   * are queued also when the output stopped (an EOS must still reach
   * downstream), but not while flushing: then the item drops it and the
   * return says so (else GST_FLOW_OK). A frame is kept while flushing too,
   * and FLUSHING returned: its conversion may still be queued on the GPU,
   * and discard_all lets it go once the backend let go of it. */
  GstFlowReturn push(GstCudaGrayOutputItem &&item);
  /* Streaming thread: TRUE when the output is idle (nothing queued or being
   * pushed, flow OK): the caller then pushes an item itself, which counts as
   * being pushed until pushed() says how it went. */
  gboolean claim_idle_output(bool frame);
  /* Blocks until everything queued has been pushed; the same returns as
   * wait_for_room (not OK: items may be left, see discard_all). */
  GstFlowReturn drain();

  /* Output task. Blocks until an item is queued: TRUE, or FALSE when
   * flushing (the task then pauses). */
  gboolean wait_for_item();
  /* Hands over the oldest item; a frame still counts as held until pushed ()
   * says how its push went. */
  GstCudaGrayOutputItem take_oldest();
  /* How the push of the item taken (or claimed) went; upstream_told: the
   * pushing thread returns ret upstream itself. */
  void pushed(GstFlowReturn ret, bool upstream_told = false);
  /* The flow of the output: OK, or what the push that stopped it returned. */
  GstFlowReturn flow();

  /* Refused caps. The pushing thread puts back a frame or buffer that
   * downstream refused for caps it no longer takes, and asks for a
   * renegotiation; the output then waits. The streaming thread (holding the
   * sink pad's stream lock, so that no input comes meanwhile) serves it at
   * its next wait, buffer or event: it takes every item held
   * (take_refused: FALSE when there is nothing to serve), converts the
   * frames again and puts them back in front (put_back_converted), in
   * order; when that failed (ret), the frames are dropped and the events
   * stay. */
  void refuse(GstCudaGrayOutputItem &&item);
  gboolean take_refused(std::deque<GstCudaGrayOutputItem> *items);
  void put_back_converted(std::deque<GstCudaGrayOutputItem> &&items, GstFlowReturn ret);
  /* Downstream asked for a renegotiation: a NOT_LINKED output (its src pad
   * was unlinked) is linked again, and pushes again, as gstqueue forgets
   * its NOT_LINKED on a RECONFIGURE. TRUE when it did. */
  gboolean resume_after_relink();

  /* Streaming thread: an EOS came (pushed on that thread, not queued). */
  void eos_arrived();
  /* Streaming thread: a new stream or segment came; an output stopped by
   * downstream's EOS pushes again, as gstqueue does. */
  void forget_eos();

  /* Either thread: TRUE once, for the thread that must post the error of a
   * failed push (NOT_LINKED or NOT_NEGOTIATED, in *ret) that upstream never
   * got from wait_for_room: the output stopped and an EOS came, so no
   * further buffer will carry it upstream. */
  gboolean take_unreported_failure(GstFlowReturn *ret);

  /* Any thread. Flushing wakes and fails every wait until cleared. */
  void set_flushing(gboolean flushing);
  gboolean flushing();
  /* Drops everything held; the output task must be paused. Sticky events
   * other than SEGMENT and EOS are stored on keep_sticky_on (when not NULL),
   * which sends them before its next buffer, so that a flush loses no stream
   * start, caps or tags. Returns how many frames there were. */
  gsize discard_all(GstPad *keep_sticky_on);
  /* Back to a fresh start: nothing held, output flow OK, not flushing. */
  void reset();
  /* Frames held (queued or being pushed). */
  gsize frames();

 private:
  GstFlowReturn stopped_flow() const;

  std::mutex lock_;
  std::condition_variable changed_;
  std::deque<GstCudaGrayOutputItem> items_;
  gsize frames_held_ = 0; /* frames among items_, plus the one being pushed */
  bool pushing_ = false;
  bool pushing_frame_ = false;
  bool flushing_ = false;
  bool renegotiating_ = false; /* refused items wait to be converted again */
  GstFlowReturn output_flow_ = GST_FLOW_OK;
  bool upstream_told_ = false;
  bool eos_arrived_ = false;
  bool failure_reported_ = false;
};
