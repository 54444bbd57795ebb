// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's output unit: everything that belongs to what leaves on the
 * source pad. It holds the output queue and the output task (the thread
 * that pushes what the queue holds, in order), QoS, the position, DISCONT,
 * the processed and dropped counts, and the flow return owed upstream. The
 * element feeds it frames (being converted), ready buffers and serialized
 * events; the output task waits for each frame's own conversion and pushes
 * it, and calls nothing of the element's. Frames that downstream refused
 * wait for the element to convert them again on its streaming thread.
 * GstVideoDecoder's and gstqueue's handling of flow returns and EOS are its
 * models. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>

#include "gstcudagrayframe.h"
#include "gstcudagrayoutputqueue.h"

/* What downstream takes, and how many RECONFIGUREs it had sent, at one
 * moment: a refused frame or a failed negotiation is worth another try only
 * when either changed since (a capsfilter set by the application changes
 * its caps, then sends RECONFIGURE: a change undone meanwhile still counts). */
class GstCudaGrayDownstreamState {
 public:
  GstCudaGrayDownstreamState() = default;
  GstCudaGrayDownstreamState(GstCaps *takes, guint64 requests)
      : takes_(takes), requests_(requests) {}
  GstCudaGrayDownstreamState(GstCudaGrayDownstreamState &&other) noexcept {
    *this = std::move(other);
  }
  GstCudaGrayDownstreamState &operator=(GstCudaGrayDownstreamState &&other) noexcept {
    std::swap(takes_, other.takes_);
    requests_ = other.requests_;
    return *this;
  }
  ~GstCudaGrayDownstreamState() { gst_clear_caps(&takes_); }
  /* Whether state says something else; TRUE when this one is empty. */
  gboolean differs(const GstCudaGrayDownstreamState &state) const {
    return !takes_ || requests_ != state.requests_ ||
           !gst_caps_is_strictly_equal(takes_, state.takes_);
  }

 private:
  GstCaps *takes_ = NULL;
  guint64 requests_ = 0;
};

class GstCudaGrayOutput {
 public:
  explicit GstCudaGrayOutput(GstBaseTransform *trans);
  GstCudaGrayOutput(const GstCudaGrayOutput &) = delete;
  GstCudaGrayOutput &operator=(const GstCudaGrayOutput &) = delete;

  /* Life: the task runs from READY to PAUSED until PAUSED to READY (or
   * dispose), and is started again after a flush. stop() makes every wait
   * fail with FLUSHING, joins the task and drops what is held. */
  gboolean start();
  void stop();
  /* Nothing held, no position, QoS as GstBaseTransform's starts; the first
   * frame out is flagged DISCONT when discont. */
  void restart(bool discont);
  void flush_start();
  gboolean flushing() { return queue_.flushing(); }
  /* Drops everything held (the output task stopped); sticky events stay on
   * the source pad for the next buffer. Returns how many frames. */
  gsize discard_all();

  /* Streaming thread (the sink pad's stream lock held). */
  /* How many frames may be held before upstream waits, and whether a frame
   * is pushed on the streaming thread itself when the output is idle (one
   * frame in flight: then the latency is the conversion's alone, as with any
   * synchronous filter). */
  void set_limit(guint frames, bool push_on_streaming_thread, GstClockTime added_latency);
  /* Adds what frames may wait here to a LATENCY query's answer. */
  void add_latency(GstQuery *query);
  /* Waits for room for one more frame: OK, why upstream must stop, or
   * GST_CUDA_GRAY_FLOW_RENEGOTIATE: refused frames wait to be converted
   * again (take_refused), then wait again. */
  GstFlowReturn wait_for_room();
  /* Hands over a frame whose conversion was queued, or a buffer ready as it
   * is (passthrough): OK, GST_CUDA_GRAY_FLOW_RENEGOTIATE (pushed here and
   * refused), or why upstream must stop. */
  GstFlowReturn push_frame(GstCudaGrayOutputItem &&item);
  /* A serialized event, in its place after what came before it. */
  gboolean push_event(GstEvent *event);
  /* An EOS, pushed on the calling thread once drain() said everything
   * before it has left; downstream's answer. */
  gboolean push_eos(GstEvent *event);
  /* Waits until everything held has left: the returns of wait_for_room
   * (FLUSHING while flushing). */
  GstFlowReturn drain();
  /* Frames that downstream refused, to be converted again for caps
   * renegotiated (FALSE: none wait), and put back in front with how that
   * went: they then leave in order, or are dropped after a failure. */
  gboolean take_refused(std::deque<GstCudaGrayOutputItem> *items);
  void put_back_converted(std::deque<GstCudaGrayOutputItem> &&items, GstFlowReturn ret);
  /* Whether the next frame is flagged DISCONT; TRUE once after a gap, a
   * flush or a QoS drop. */
  gboolean take_discont();
  /* GstBaseTransform's QoS rule: input due before the last QoS event's
   * timestamp + jitter is late; it is counted and a QoS message posted.
   * The pushing thread applies it again to what is held (drop_late_held). */
  gboolean drop_late(GstBuffer *input);

  /* Source pad side. */
  void qos(gdouble proportion, GstClockTimeDiff diff, GstClockTime timestamp);
  /* A RECONFIGURE from downstream: counted, and an output stopped by
   * NOT_LINKED pushes again, as gstqueue does after a relink. */
  void reconfigure_requested();
  /* What downstream takes now, and how often it asked to renegotiate. */
  GstCudaGrayDownstreamState downstream();
  /* The stream time of the end of the last buffer pushed; FALSE before. */
  gboolean answer_position(GstQuery *query);

 private:
  static void loop(GstCudaGrayOutput *self);
  GstFlowReturn push_buffer(GstBuffer *buffer);
  gboolean push_serialized(GstEvent *event);
  GstFlowReturn push_converted(GstCudaGrayOutputItem &item);
  /* Waits for a frame's conversion, unless it was waited for already;
   * FALSE after posting the backend's error. */
  gboolean finish(GstCudaGrayOutputItem &item);
  GstFlowReturn push_item(GstCudaGrayOutputItem &item, gboolean *refused);
  gboolean late(const GstSegment &segment, GstBuffer *buffer, const char *what);
  gboolean drop_late_held(GstCudaGrayOutputItem &item);

  GstBaseTransform *trans_;
  GstElement *element_;
  GstPad *srcpad_;
  GstCudaGrayOutputQueue queue_;
  /* downstream when refused frames were taken to be converted again */
  GstCudaGrayDownstreamState serving_for_;
  guint limit_ = 1;
  bool push_here_ = false;
  std::atomic<guint64> reconfigure_requests_{0};
  /* downstream when the last renegotiation for refused frames was served,
   * until a frame goes out (the pushing or serving thread only): refused
   * again with nothing changed downstream, the refusal is a real
   * not-negotiated */
  GstCudaGrayDownstreamState served_for_;

  /* streaming thread only */
  bool discont_pending_ = false;
  /* the pushing thread's: the next buffer out is flagged DISCONT */
  std::atomic<bool> discont_out_{false};
  /* QoS counts: frames taken by the streaming thread, dropped late by it or
   * by the pushing thread */
  std::atomic<guint64> processed_{0}, dropped_{0};

  /* what the source pad side reads; guarded by state_lock_ */
  std::mutex state_lock_;
  GstSegment out_segment_;
  GstClockTime position_out_ = GST_CLOCK_TIME_NONE;
  gdouble qos_proportion_ = 1.0;
  GstClockTime qos_earliest_ = GST_CLOCK_TIME_NONE;
  GstClockTime added_latency_ = 0;
};
