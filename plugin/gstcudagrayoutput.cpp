// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's output task, the one thread that pushes on the source pad:
 * frames (each when its conversion is done), buffers and serialized events
 * from the output queue, in order; it reports the backend's figures to the
 * stats property. */
#include "gstcudagrayoutput.h"

#define GST_CAT_DEFAULT gst_cuda_gray_debug

/* A GST_DEBUG line with the running stats every this many frames. */
#define STATS_LOG_INTERVAL 300

void gst_cuda_gray_post_backend_error(GstCudaGray *self, const char *doing,
                                      const std::string &why) {
  GST_ELEMENT_ERROR(
      self, RESOURCE, FAILED,
      ("The %s backend failed to %s: %s", self->streaming->backend->name(), doing, why.c_str()),
      ("check the GPU with nvidia-smi, or set backend=cpu"));
}

void gst_cuda_gray_discard_in_flight(GstCudaGray *self) {
  GstCudaGrayStreaming &s = *self->streaming;
  if (s.backend) s.backend->discard_all(); /* the GPU lets go of the buffers first */
  const gsize dropped = s.output.discard_all(GST_BASE_TRANSFORM_SRC_PAD(self));
  if (dropped > 0)
    GST_DEBUG_OBJECT(self, "discarded %" G_GSIZE_FORMAT " frames in flight", dropped);
}

void gst_cuda_gray_stop_output(GstCudaGray *self, GstFlowReturn ret) {
  self->streaming->output.stop(ret);
  gst_pad_pause_task(GST_BASE_TRANSFORM_SRC_PAD(self));
  gst_cuda_gray_discard_in_flight(self);
}

/* Copies the backend's figures for the stats property after each frame. */
static void update_stats(GstCudaGray *self) {
  const cudagray::Backend &backend = *self->streaming->backend;
  const cudagray::TimingStats stats = backend.stats();
  GST_OBJECT_LOCK(self);
  self->props.stats = stats;
  self->props.stats_in_flight = backend.in_flight();
  GST_OBJECT_UNLOCK(self);
  if (stats.frames % STATS_LOG_INTERVAL == 0)
    GST_DEBUG_OBJECT(self,
                     "%" G_GUINT64_FORMAT
                     " frames: device %.1f us "
                     "(min %.1f, max %.1f), upload %.1f us, download %.1f us, %d in flight",
                     (guint64)stats.frames, stats.device_us_mean, stats.device_us_min,
                     stats.device_us_max, stats.upload_us_mean, stats.download_us_mean,
                     backend.in_flight());
}

/* Waits for the oldest frame's conversion; FALSE after posting the error. */
static gboolean finish_oldest(GstCudaGray *self) {
  GstCudaGrayStreaming &s = *self->streaming;
  std::string error;
  const gboolean converted = s.backend->finish_oldest(&error);
  if (converted)
    update_stats(self);
  else
    gst_cuda_gray_post_backend_error(self, "convert a frame", error);
  return converted;
}

/* Pushes a buffer, remembering where it ends for the POSITION query (as
 * GstBaseTransform does for the buffers it pushes). */
static GstFlowReturn push_buffer(GstCudaGray *self, GstBuffer *buffer) {
  if (GST_BUFFER_PTS_IS_VALID(buffer)) {
    GstClockTime end = GST_BUFFER_PTS(buffer);
    if (GST_BUFFER_DURATION_IS_VALID(buffer)) end += GST_BUFFER_DURATION(buffer);
    GST_OBJECT_LOCK(self);
    self->position_out = end;
    GST_OBJECT_UNLOCK(self);
  }
  return gst_pad_push(GST_BASE_TRANSFORM_SRC_PAD(self), buffer);
}

/* Pushes a converted frame as soon as its conversion is done, or, when its
 * CUDA memory carries a stream that waits for the conversion (1.24+), as
 * soon as it is queued, flagged so that downstream waits. */
static GstFlowReturn push_converted(GstCudaGray *self, GstCudaGrayFrame &frame) {
  if (frame.output().consumer_stream) {
    const GstFlowReturn ret = push_buffer(self, frame.release_output());
    return finish_oldest(self) ? ret : GST_FLOW_ERROR;
  }
  if (!finish_oldest(self)) return GST_FLOW_ERROR; /* the frame unrefs its output */
  return push_buffer(self, frame.release_output());
}

/* Pushes a serialized event, in its place among the frames. */
static void push_event(GstCudaGray *self, GstEvent *event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_SEGMENT) {
    GST_OBJECT_LOCK(self);
    gst_event_copy_segment(event, &self->out_segment);
    self->position_out = GST_CLOCK_TIME_NONE;
    GST_OBJECT_UNLOCK(self);
  }
  const GstEventType type = GST_EVENT_TYPE(event);
  if (!gst_pad_push_event(GST_BASE_TRANSFORM_SRC_PAD(self), event))
    GST_DEBUG_OBJECT(self, "downstream refused %s", gst_event_type_get_name(type));
}

/* The output task, the one thread that pushes on the source pad: takes the
 * output queue's items in order and pushes each (a frame when its
 * conversion is done); its input is let go once pushed. Pauses when
 * flushing or when a push fails. */
static void gst_cuda_gray_output_loop(GstCudaGray *self) {
  GstCudaGrayOutputQueue &output = self->streaming->output;
  GstPad *srcpad = GST_BASE_TRANSFORM_SRC_PAD(self);
  if (!output.wait_for_item()) {
    gst_pad_pause_task(srcpad);
    return;
  }
  GstCudaGrayOutputItem item = output.take_oldest();
  GstFlowReturn ret = GST_FLOW_OK;
  if (item.is_event())
    push_event(self, item.take_event());
  else if (item.converting())
    ret = push_converted(self, item.frame());
  else
    ret = push_buffer(self, item.take_buffer());
  item = GstCudaGrayOutputItem(); /* the input goes back upstream */
  output.pushed(ret);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(self, "output stopped: %s", gst_flow_get_name(ret));
    GstFlowReturn unreported;
    if (output.take_unreported_failure(&unreported)) GST_ELEMENT_FLOW_ERROR(self, unreported);
    gst_pad_pause_task(srcpad);
  }
}

gboolean gst_cuda_gray_start_output(GstCudaGray *self) {
  return gst_pad_start_task(GST_BASE_TRANSFORM_SRC_PAD(self),
                            (GstTaskFunction)gst_cuda_gray_output_loop, self, NULL);
}
