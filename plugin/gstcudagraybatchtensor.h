// SPDX-License-Identifier: LGPL-2.1-or-later
/* The batch described as a GstTensorMeta, for GStreamer's tensor elements
 * (docs/batch.md, "Tensor meta"): built only against gstreamer-analytics-1.0
 * of GStreamer 1.26 or later; elsewhere a no-op, and the caps and
 * GstCudaGrayBatchMeta carry the same description. */
#pragma once

#include <gst/gst.h>

#include "cudagray/batch.h"

/* The tensor's id when the model-info file names none. */
#define GST_CUDA_GRAY_BATCH_TENSOR_ID "cudagray-batch"

/* Attaches to batch, whose memory holds n_slots slots of format, a
 * GstTensorMeta of one row-major tensor [n_slots, 1, height, width] of the
 * format's dtype, identified by id, whose data is the batch's memory
 * itself (shared, not copied). */
void gst_cuda_gray_batch_add_tensor_meta(GstBuffer *batch, const cudagray::BatchFormat &format,
                                         int n_slots, GQuark id);
