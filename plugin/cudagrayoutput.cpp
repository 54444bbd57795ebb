// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's output task: waits for the oldest frame's conversion and
 * pushes it on the source pad, in order, and reports the backend's figures
 * to the stats property. */
#include "cudagrayoutput.h"

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
  CudaGrayStreaming &s = *self->streaming;
  if (s.backend) {
    CudaGrayScope scope(self->context);
    s.backend->discard_all(); /* the GPU lets go of the buffers first */
  }
  const gsize dropped = s.frames.discard_all();
  if (dropped > 0)
    GST_DEBUG_OBJECT(self, "discarded %" G_GSIZE_FORMAT " frames in flight", dropped);
}

void gst_cuda_gray_stop_output(GstCudaGray *self, GstFlowReturn ret) {
  CudaGrayStreaming &s = *self->streaming;
  if (ret == GST_FLOW_FLUSHING)
    s.frames.set_flushing(TRUE);
  else
    s.frames.pushed(ret);
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
  CudaGrayStreaming &s = *self->streaming;
  std::string error;
  gboolean converted;
  {
    CudaGrayScope scope(self->context);
    converted = s.backend->finish_oldest(&error);
  }
  if (converted)
    update_stats(self);
  else
    gst_cuda_gray_post_backend_error(self, "convert a frame", error);
  return converted;
}

/* The output task: pushes the oldest frame as soon as its conversion is
 * done, or, when its CUDA memory carries a stream that waits for the
 * conversion (1.24+), as soon as it is queued, flagged so that downstream
 * waits; its input is let go when the conversion is done. Pauses when
 * flushing or when a push fails. */
static void gst_cuda_gray_output_loop(GstCudaGray *self) {
  CudaGrayStreaming &s = *self->streaming;
  GstPad *srcpad = GST_BASE_TRANSFORM_SRC_PAD(self);
  if (!s.frames.wait_for_frame()) {
    gst_pad_pause_task(srcpad);
    return;
  }
  CudaGrayFrame frame = s.frames.take_oldest();
  GstFlowReturn ret;
  if (frame.output().consumer_stream) {
    GstBuffer *outbuf = frame.release_output();
    cudagray_mark_output_pending(outbuf);
    ret = gst_pad_push(srcpad, outbuf);
    if (!finish_oldest(self)) ret = GST_FLOW_ERROR;
  } else if (finish_oldest(self)) {
    ret = gst_pad_push(srcpad, frame.release_output());
  } else {
    gst_buffer_unref(frame.release_output());
    ret = GST_FLOW_ERROR;
  }
  frame = CudaGrayFrame(); /* the input goes back upstream */
  s.frames.pushed(ret);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT(self, "output stopped: %s", gst_flow_get_name(ret));
    gst_pad_pause_task(srcpad);
  }
}

gboolean gst_cuda_gray_start_output(GstCudaGray *self) {
  return gst_pad_start_task(GST_BASE_TRANSFORM_SRC_PAD(self),
                            (GstTaskFunction)gst_cuda_gray_output_loop, self, NULL);
}
