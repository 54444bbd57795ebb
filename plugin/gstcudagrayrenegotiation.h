// SPDX-License-Identifier: LGPL-2.1-or-later
/* A frame's way in and again after a refusal (gstcudagrayrenegotiation.cpp);
 * streaming thread only. */
#pragma once

#include "gstcudagray.h"

/* The converter makes inbuf (transfer full) into what the output pushes;
 * when the backend must be sized anew for it (a new crop), what is held
 * leaves first. */
GstFlowReturn gst_cuda_gray_start_frame(GstCudaGray *self, GstBuffer *inbuf, bool discont,
                                        GstCudaGrayOutputItem *item);
/* A wait on the output (wait_for_room or drain) that converts refused
 * frames again whenever the output asks for it, then waits again. */
GstFlowReturn gst_cuda_gray_wait_on_output(GstCudaGray *self,
                                           GstFlowReturn (GstCudaGrayOutput::*wait)());
/* Converts the frames downstream refused again, if any wait: OK once they
 * are back in the output, or the flow error that stopped it. */
GstFlowReturn gst_cuda_gray_serve_refused(GstCudaGray *self);
/* Negotiates the source pad again; FALSE when downstream takes none of our
 * caps and did not change meanwhile. */
gboolean gst_cuda_gray_renegotiate(GstCudaGray *self);
/* GstBaseTransform's submit_input_buffer, less a frame late at the sink
 * (dropped before anything is done with it, the next frame out flagged
 * DISCONT), renegotiating until downstream takes our caps or did not
 * change. */
GstFlowReturn gst_cuda_gray_submit_input_buffer(GstBaseTransform *trans, gboolean is_discont,
                                                GstBuffer *input);
