// SPDX-License-Identifier: LGPL-2.1-or-later
/* The output unit: what leaves on the source pad, in order, and GStreamer's
 * contract there (EOS, flow returns, refused caps, QoS, position). */
#include "gstcudagrayoutput.h"

#include <utility>

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_debug

GstCudaGrayOutput::GstCudaGrayOutput(GstBaseTransform *trans)
    : trans_(trans), element_(GST_ELEMENT(trans)), srcpad_(GST_BASE_TRANSFORM_SRC_PAD(trans)) {
  restart(false);
}

gboolean GstCudaGrayOutput::start() {
  return gst_pad_start_task(srcpad_, (GstTaskFunction)loop, this, NULL);
}

void GstCudaGrayOutput::stop() {
  queue_.set_flushing(TRUE);
  gst_pad_stop_task(srcpad_); /* joins it: nothing waits on the queue after */
}

void GstCudaGrayOutput::restart(bool discont) {
  queue_.reset();
  discont_pending_ = discont;
  discont_out_ = false;
  processed_ = dropped_ = 0;
  served_for_ = GstCudaGrayDownstreamState();
  std::lock_guard<std::mutex> hold(state_lock_);
  gst_segment_init(&out_segment_, GST_FORMAT_UNDEFINED);
  position_out_ = GST_CLOCK_TIME_NONE;
  qos_proportion_ = 1.0;
  qos_earliest_ = GST_CLOCK_TIME_NONE;
}

void GstCudaGrayOutput::flush_start() { queue_.set_flushing(TRUE); }

gsize GstCudaGrayOutput::discard_all() { return queue_.discard_all(srcpad_); }

void GstCudaGrayOutput::set_limit(guint frames, bool push_on_streaming_thread,
                                  GstClockTime added_latency) {
  limit_ = frames;
  push_here_ = push_on_streaming_thread;
  std::lock_guard<std::mutex> hold(state_lock_);
  added_latency_ = added_latency;
}

void GstCudaGrayOutput::add_latency(GstQuery *query) {
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(query, &live, &min, &max);
  std::lock_guard<std::mutex> hold(state_lock_);
  min += added_latency_;
  if (GST_CLOCK_TIME_IS_VALID(max)) max += added_latency_;
  gst_query_set_latency(query, live, min, max);
  GST_DEBUG_OBJECT(element_, "latency: added %" GST_TIME_FORMAT, GST_TIME_ARGS(added_latency_));
}

/* Pushes a buffer, remembering where it ends for the POSITION query (as
 * GstBaseTransform does for the buffers it pushes); the first after a frame
 * held was dropped late is flagged DISCONT. */
GstFlowReturn GstCudaGrayOutput::push_buffer(GstBuffer *buffer) {
  if (discont_out_.exchange(false)) {
    buffer = gst_buffer_make_writable(buffer);
    GST_BUFFER_FLAG_SET(buffer, GST_BUFFER_FLAG_DISCONT);
  }
  if (GST_BUFFER_PTS_IS_VALID(buffer)) {
    GstClockTime end = GST_BUFFER_PTS(buffer);
    if (GST_BUFFER_DURATION_IS_VALID(buffer)) end += GST_BUFFER_DURATION(buffer);
    std::lock_guard<std::mutex> hold(state_lock_);
    position_out_ = end;
  }
  return gst_pad_push(srcpad_, buffer);
}

/* Pushes a serialized event in its place. An EOS goes out whatever the
 * output's flow (downstream ends the stream only when it gets one); when the
 * output stopped with an error upstream never got, it is posted first. */
gboolean GstCudaGrayOutput::push_serialized(GstEvent *event) {
  const GstEventType type = GST_EVENT_TYPE(event);
  if (type == GST_EVENT_SEGMENT) {
    std::lock_guard<std::mutex> hold(state_lock_);
    gst_event_copy_segment(event, &out_segment_);
    position_out_ = GST_CLOCK_TIME_NONE;
  }
  GstFlowReturn unreported;
  if (type == GST_EVENT_EOS && queue_.take_unreported_failure(&unreported))
    GST_ELEMENT_FLOW_ERROR(element_, unreported);
  const gboolean taken = gst_pad_push_event(srcpad_, event);
  if (!taken) GST_DEBUG_OBJECT(element_, "downstream refused %s", gst_event_type_get_name(type));
  return taken;
}

/* Pushes a converted frame as soon as its conversion is done, or, when its
 * CUDA memory carries a stream that waits for the conversion (1.24+), as
 * soon as it is queued, flagged so that downstream waits. */
GstFlowReturn GstCudaGrayOutput::push_converted(GstCudaGrayOutputItem &item) {
  GstCudaGrayFrame &frame = item.frame();
  if (frame.output().consumer_stream && !item.finished()) {
    const GstFlowReturn ret = push_buffer(frame.release_output());
    return finish(item) ? ret : GST_FLOW_ERROR;
  }
  if (!finish(item)) return GST_FLOW_ERROR; /* the frame unrefs its output */
  return push_buffer(frame.release_output());
}

gboolean GstCudaGrayOutput::finish(GstCudaGrayOutputItem &item) {
  if (item.finished()) return TRUE;
  item.set_finished();
  std::string why;
  if (item.frame().finish(&why)) return TRUE;
  gst_cuda_gray_post_backend_error(element_, item.frame().backend_name(), "convert a frame", why);
  return FALSE;
}

GstCudaGrayDownstreamState GstCudaGrayOutput::downstream() {
  /* the count first: a change between the two shows in the caps */
  const guint64 requests = reconfigure_requests_;
  return GstCudaGrayDownstreamState(gst_pad_peer_query_caps(srcpad_, NULL), requests);
}

/* Pushes one item; once the output stopped, frames and buffers are dropped
 * (a conversion still running finished first) and events still go. A frame
 * or buffer whose caps downstream refused is *refused: it stays held, to be
 * converted again for caps renegotiated, as GStreamer answers a
 * NOT_NEGOTIATED while downstream changes what it takes (GstBaseSrc and
 * GstBaseTransform do). Refused again right after a renegotiation, with
 * nothing changed downstream since, it is a real not-negotiated. A buffer
 * passed through stays referenced while pushed, to be pushed again. */
GstFlowReturn GstCudaGrayOutput::push_item(GstCudaGrayOutputItem &item, gboolean *refused) {
  *refused = FALSE;
  const gboolean stopped = queue_.flow() != GST_FLOW_OK;
  if (item.is_event()) {
    push_serialized(item.take_event());
    return GST_FLOW_OK;
  }
  if (item.converting() && stopped) {
    finish(item);
    return GST_FLOW_OK;
  }
  if (stopped || drop_late_held(item)) return GST_FLOW_OK;
  const GstFlowReturn ret =
      item.converting() ? push_converted(item) : push_buffer(gst_buffer_ref(item.buffer()));
  if (ret == GST_FLOW_NOT_NEGOTIATED)
    *refused = served_for_.differs(downstream());
  else if (ret == GST_FLOW_OK)
    served_for_ = GstCudaGrayDownstreamState();
  return ret;
}

gboolean GstCudaGrayOutput::take_refused(std::deque<GstCudaGrayOutputItem> *items) {
  if (!queue_.take_refused(items)) return FALSE;
  GST_DEBUG_OBJECT(element_, "downstream refused our caps: renegotiating");
  serving_for_ = downstream();
  return TRUE;
}

void GstCudaGrayOutput::put_back_converted(std::deque<GstCudaGrayOutputItem> &&items,
                                           GstFlowReturn ret) {
  served_for_ = ret == GST_FLOW_OK ? std::move(serving_for_) : GstCudaGrayDownstreamState();
  serving_for_ = GstCudaGrayDownstreamState();
  queue_.put_back_converted(std::move(items), ret);
}

/* The output task, the one thread that pushes what the queue holds: each
 * item in order (a frame once its conversion is done); its input is let go
 * once pushed. It stops only when flushing: after a failed push it goes on
 * dropping frames and pushing events, so that an EOS still ends the stream
 * downstream. */
void GstCudaGrayOutput::loop(GstCudaGrayOutput *self) {
  if (!self->queue_.wait_for_item()) {
    gst_pad_pause_task(self->srcpad_);
    return;
  }
  GstCudaGrayOutputItem item = self->queue_.take_oldest();
  const bool frame = item.is_frame();
  gboolean refused;
  const GstFlowReturn ret = self->push_item(item, &refused);
  /* tests/validate.sh counts these: frames in flight leave from here */
  if (frame && !refused && ret == GST_FLOW_OK)
    GST_LOG_OBJECT(self->element_, "frame out from the output task");
  if (refused) { /* waits for the streaming thread to convert it again */
    self->queue_.refuse(std::move(item));
    return;
  }
  item = GstCudaGrayOutputItem(); /* the input goes back upstream */
  self->queue_.pushed(ret);
  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT(self->element_, "output stopped: %s", gst_flow_get_name(ret));
}

GstFlowReturn GstCudaGrayOutput::wait_for_room() { return queue_.wait_for_room(limit_); }

/* Logged at both ends, so that GST_DEBUG's timestamps tell what a drain
 * (new caps, a serialized query, EOS) waits for. */
GstFlowReturn GstCudaGrayOutput::drain() {
  const gsize frames = queue_.frames();
  if (frames == 0) return queue_.drain();
  GST_DEBUG_OBJECT(element_, "waiting for %" G_GSIZE_FORMAT " frames held to leave", frames);
  const GstFlowReturn ret = queue_.drain();
  GST_DEBUG_OBJECT(element_, "frames held left: %s", gst_flow_get_name(ret));
  return ret;
}

GstFlowReturn GstCudaGrayOutput::push_frame(GstCudaGrayOutputItem &&item) {
  processed_++;
  if (!push_here_ || !item.converting() || !queue_.claim_idle_output(true))
    return queue_.push(std::move(item));
  gboolean refused;
  const GstFlowReturn ret = push_item(item, &refused);
  if (refused) { /* converted again by the caller, the output task pushes it */
    queue_.refuse(std::move(item));
    return GST_CUDA_GRAY_FLOW_RENEGOTIATE;
  }
  item = GstCudaGrayOutputItem();
  queue_.pushed(ret, true);
  return ret;
}

/* EOS leaves from the streaming thread that brought it, once every frame
 * before it is out, as from a synchronous filter: a pad probe that takes
 * the element down on EOS (the dynamic-pipeline element swap) then runs on
 * upstream's thread, not on the output task, which cannot join itself. */
gboolean GstCudaGrayOutput::push_eos(GstEvent *event) {
  queue_.eos_arrived();
  return push_serialized(event);
}

gboolean GstCudaGrayOutput::push_event(GstEvent *event) {
  const GstEventType type = GST_EVENT_TYPE(event);
  /* a new stream or segment after downstream's EOS is pushed to again, as
   * gstqueue does; other events after a failed push are refused, as
   * gstqueue refuses them (a sticky one stays on the source pad) */
  if (type == GST_EVENT_STREAM_START || type == GST_EVENT_SEGMENT) queue_.forget_eos();
  if (queue_.flow() != GST_FLOW_OK && !GST_EVENT_IS_STICKY(event)) {
    GST_DEBUG_OBJECT(element_, "%s refused: output stopped (%s)", gst_event_type_get_name(type),
                     gst_flow_get_name(queue_.flow()));
    gst_event_unref(event);
    return FALSE;
  }
  if (type == GST_EVENT_SEGMENT) { /* for QoS, as GstBaseTransform keeps it */
    gst_event_copy_segment(event, &trans_->segment);
    trans_->have_segment = TRUE;
  }
  if (type == GST_EVENT_GAP) discont_pending_ = true;
  if (push_here_ && queue_.claim_idle_output(false)) {
    push_serialized(event);
    queue_.pushed(GST_FLOW_OK);
    return TRUE;
  }
  if (queue_.push(GstCudaGrayOutputItem::serialized(event)) == GST_FLOW_OK) return TRUE;
  GST_DEBUG_OBJECT(element_, "%s dropped: flushing", gst_event_type_get_name(type));
  return FALSE;
}

gboolean GstCudaGrayOutput::take_discont() { return std::exchange(discont_pending_, false); }

/* GstBaseTransform's QoS rule for a buffer of segment: due at or before the
 * last QoS event's timestamp + jitter, it is late; it is counted and a QoS
 * message posted. */
gboolean GstCudaGrayOutput::late(const GstSegment &segment, GstBuffer *buffer, const char *what) {
  if (!gst_base_transform_is_qos_enabled(trans_) || segment.format != GST_FORMAT_TIME) return FALSE;
  const GstClockTime pts = GST_BUFFER_PTS(buffer);
  const GstClockTime running_time = gst_segment_to_running_time(&segment, GST_FORMAT_TIME, pts);
  GstClockTime earliest;
  gdouble proportion;
  {
    std::lock_guard<std::mutex> hold(state_lock_);
    earliest = qos_earliest_;
    proportion = qos_proportion_;
  }
  if (!GST_CLOCK_TIME_IS_VALID(running_time) || !GST_CLOCK_TIME_IS_VALID(earliest) ||
      running_time > earliest)
    return FALSE;
  const guint64 dropped = ++dropped_;
  GST_DEBUG_OBJECT(element_,
                   "frame due at %" GST_TIME_FORMAT " is late (earliest %" GST_TIME_FORMAT "): %s",
                   GST_TIME_ARGS(running_time), GST_TIME_ARGS(earliest), what);
  GstMessage *qos = gst_message_new_qos(GST_OBJECT(element_), FALSE, running_time,
                                        gst_segment_to_stream_time(&segment, GST_FORMAT_TIME, pts),
                                        pts, GST_BUFFER_DURATION(buffer));
  gst_message_set_qos_values(qos, GST_CLOCK_DIFF(running_time, earliest), proportion, 1000000);
  gst_message_set_qos_stats(qos, GST_FORMAT_BUFFERS, processed_, dropped);
  gst_element_post_message(element_, qos);
  return TRUE;
}

gboolean GstCudaGrayOutput::drop_late(GstBuffer *input) {
  if (!late(trans_->segment, input, "not converted")) return FALSE;
  discont_pending_ = true;
  return TRUE;
}

/* A frame or buffer held while a QoS event said it is late is dropped
 * before it leaves, as one arriving then would have been (and as
 * GstVideoDecoder drops a late frame when it is finished): with frames in
 * flight, the QoS events that a slow sink sends come after the frames
 * behind the one it was late with have been taken. */
gboolean GstCudaGrayOutput::drop_late_held(GstCudaGrayOutputItem &item) {
  GstSegment segment;
  {
    std::lock_guard<std::mutex> hold(state_lock_);
    segment = out_segment_;
  }
  GstBuffer *buffer = item.converting() ? item.frame().input_buffer() : item.buffer();
  if (!late(segment, buffer, "dropped before it left")) return FALSE;
  if (item.converting()) finish(item); /* the backend lets go of it first */
  discont_out_ = true;
  return TRUE;
}

void GstCudaGrayOutput::reconfigure_requested() {
  reconfigure_requests_++;
  if (queue_.resume_after_relink())
    GST_INFO_OBJECT(element_, "downstream linked again after not-linked: pushing again");
}

void GstCudaGrayOutput::qos(gdouble proportion, GstClockTimeDiff diff, GstClockTime timestamp) {
  if (!GST_CLOCK_TIME_IS_VALID(timestamp)) return;
  std::lock_guard<std::mutex> hold(state_lock_);
  qos_proportion_ = proportion;
  qos_earliest_ = timestamp + diff;
}

gboolean GstCudaGrayOutput::answer_position(GstQuery *query) {
  GstFormat format;
  gst_query_parse_position(query, &format, NULL);
  if (format != GST_FORMAT_TIME) return FALSE;
  std::lock_guard<std::mutex> hold(state_lock_);
  if (out_segment_.format != GST_FORMAT_TIME || !GST_CLOCK_TIME_IS_VALID(position_out_))
    return FALSE;
  gst_query_set_position(query, format,
                         gst_segment_to_stream_time(&out_segment_, GST_FORMAT_TIME, position_out_));
  return TRUE;
}
