// SPDX-License-Identifier: LGPL-2.1-or-later
/* A frame's way in and its way in again: starting a frame (new, or refused
 * by downstream), the waits on the output that serve refusals meanwhile,
 * and the renegotiation that converts refused frames again, all on the
 * streaming thread, which holds the sink pad's stream lock. */
#include "gstcudagrayrenegotiation.h"

#include <deque>

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_debug

/* A wait on the output (room, or everything out) from the streaming
 * thread, which converts refused frames again when the output asks for it
 * (GST_CUDA_GRAY_FLOW_RENEGOTIATE), then waits again. */
GstFlowReturn gst_cuda_gray_wait_on_output(GstCudaGray *self,
                                           GstFlowReturn (GstCudaGrayOutput::*wait)()) {
  GstFlowReturn ret;
  while ((ret = (self->output->*wait)()) == GST_CUDA_GRAY_FLOW_RENEGOTIATE)
    gst_cuda_gray_serve_refused(self);
  return ret;
}

/* A frame's way in, the one for new and refused frames alike: the
 * converter makes inbuf (transfer full) into what the output pushes; when
 * the backend must be sized anew for it (a new crop), what is held leaves
 * first. */
GstFlowReturn gst_cuda_gray_start_frame(GstCudaGray *self, GstBuffer *inbuf, bool discont,
                                        GstCudaGrayOutputItem *item) {
  GST_OBJECT_LOCK(self);
  const cudagray::Weights weights = gst_cuda_gray_properties_weights(&self->props);
  GST_OBJECT_UNLOCK(self);
  GstFlowReturn ret;
  while ((ret = self->converter->start(inbuf, discont, weights, item)) ==
         GST_CUDA_GRAY_FLOW_DRAIN_FIRST) {
    ret = gst_cuda_gray_wait_on_output(self, &GstCudaGrayOutput::drain);
    if (ret == GST_FLOW_OK && !self->converter->resize()) ret = GST_FLOW_ERROR;
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref(inbuf);
      return ret;
    }
  }
  return ret;
}

/* Negotiates the source pad again; FALSE when downstream takes none of our
 * caps and did not change meanwhile (one that did, a capsfilter set by the
 * application, is asked again). */
gboolean gst_cuda_gray_renegotiate(GstCudaGray *self) {
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  for (;;) {
    if (self->output->flushing()) return FALSE;
    const GstCudaGrayDownstreamState before = self->output->downstream();
    GstCaps *wanted = gst_pad_peer_query_caps(trans->srcpad, NULL);
    const gboolean wants_some = !gst_caps_is_empty(wanted);
    gst_caps_unref(wanted);
    GstCaps *caps = NULL;
    gst_pad_mark_reconfigure(trans->srcpad);
    /* asking for none would only post a warning */
    if (wants_some && gst_base_transform_reconfigure(trans))
      caps = gst_pad_get_current_caps(trans->srcpad);
    const gboolean taken = caps && gst_pad_peer_query_accept_caps(trans->srcpad, caps);
    GST_INFO_OBJECT(self, "renegotiated %" GST_PTR_FORMAT ": %s", caps,
                    taken ? "taken" : "refused");
    gst_clear_caps(&caps);
    if (taken) return TRUE;
    if (!before.differs(self->output->downstream())) break;
  }
  GST_WARNING_OBJECT(self, "downstream takes none of our caps");
  return FALSE;
}

/* Frames that downstream refused (NOT_NEGOTIATED), converted again on the
 * streaming thread, which holds the sink pad's stream lock: every
 * conversion still running finishes, the source pad renegotiates (set_caps
 * sizes the backend, GstBaseTransform decides the new pool), and each
 * refused frame or buffer takes the way in again from its input for the
 * new caps, keeping its DISCONT flag. There can be more of them than the
 * backend takes at once (buffers passed through, now converted, or a
 * smaller max-inflight): the oldest conversion is then waited for here, in
 * order, to make room. OK, or the flow error that stops the output. */
static GstFlowReturn convert_again(GstCudaGray *self, std::deque<GstCudaGrayOutputItem> &items) {
  GstCudaGrayConverter &converter = *self->converter;
  if (!converter.finish_all()) return GST_FLOW_ERROR;
  if (!gst_cuda_gray_renegotiate(self)) return GST_FLOW_NOT_NEGOTIATED;
  auto oldest = items.begin();
  for (GstCudaGrayOutputItem &item : items) {
    if (!item.is_frame()) continue;
    if (converter.full()) {
      while (!oldest->converting() || oldest->finished()) ++oldest;
      if (!converter.finish_oldest()) {
        converter.discard_all();
        return GST_FLOW_ERROR;
      }
      oldest->set_finished();
    }
    bool discont;
    GstBuffer *input = item.take_input(&discont);
    const GstFlowReturn ret = gst_cuda_gray_start_frame(self, input, discont, &item);
    if (ret != GST_FLOW_OK) {
      converter.discard_all(); /* the frames converted again are dropped too */
      return ret;
    }
  }
  return GST_FLOW_OK;
}

/* Serves a renegotiation the output waits for, if any: OK once the frames
 * are back in the output (the output task pushes them), or the flow error
 * converting them again ended in. */
GstFlowReturn gst_cuda_gray_serve_refused(GstCudaGray *self) {
  std::deque<GstCudaGrayOutputItem> items;
  if (!self->output->take_refused(&items)) return GST_FLOW_OK;
  const GstFlowReturn ret = convert_again(self, items);
  self->output->put_back_converted(std::move(items), ret);
  return ret;
}

/* A frame late at the sink is dropped before anything is done with it; the
 * next frame that leaves is flagged DISCONT. */
GstFlowReturn gst_cuda_gray_submit_input_buffer(GstBaseTransform *trans, gboolean is_discont,
                                                GstBuffer *input) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  if (self->output->drop_late(input)) {
    gst_buffer_unref(input);
    return GST_BASE_TRANSFORM_FLOW_DROPPED;
  }
  /* GstBaseTransform renegotiates once when downstream asked, and refuses
   * the frame when that fails (a capsfilter changed by the application
   * right then): renegotiating until downstream takes our caps, or did not
   * change, keeps the frame */
  GstBaseTransformClass *base =
      GST_BASE_TRANSFORM_CLASS(g_type_class_peek_parent(G_OBJECT_GET_CLASS(trans)));
  GstFlowReturn ret = base->submit_input_buffer(trans, is_discont, gst_buffer_ref(input));
  while (ret == GST_FLOW_NOT_NEGOTIATED && gst_pad_needs_reconfigure(trans->srcpad) &&
         gst_cuda_gray_renegotiate(self))
    ret = base->submit_input_buffer(trans, is_discont, gst_buffer_ref(input));
  gst_buffer_unref(input);
  return ret;
}
