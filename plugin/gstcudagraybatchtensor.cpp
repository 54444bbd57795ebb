// SPDX-License-Identifier: LGPL-2.1-or-later
/* GstTensorMeta on each batch where the build has GStreamer 1.26's analytics
 * library (meson defines CUDAGRAY_HAVE_GST_TENSOR_META only for
 * gstreamer-analytics-1.0 >= 1.26, the first with GstTensor); the one place
 * that depends on that version. */
#include "gstcudagraybatchtensor.h"

#ifdef CUDAGRAY_HAVE_GST_TENSOR_META
#include <gst/analytics/analytics.h>

static GstTensorDataType tensor_data_type(cudagray::BatchDType dtype) {
  switch (dtype) {
    case cudagray::BatchDType::UInt8: return GST_TENSOR_DATA_TYPE_UINT8;
    case cudagray::BatchDType::Float16: return GST_TENSOR_DATA_TYPE_FLOAT16;
    case cudagray::BatchDType::Float32: break;
  }
  return GST_TENSOR_DATA_TYPE_FLOAT32;
}

void gst_cuda_gray_batch_add_tensor_meta(GstBuffer *batch, const cudagray::BatchFormat &format,
                                         int n_slots, GQuark id) {
  gsize dims[] = {(gsize)n_slots, 1, (gsize)format.height, (gsize)format.width};
  /* the batch's memory referenced, not copied: the tensor is the batch.
   * Its memories are taken as they are (gst_buffer_copy_region would try
   * to share or copy a CUDA memory, which failed on 1.26) */
  GstBuffer *data = gst_buffer_new();
  for (guint i = 0; i < gst_buffer_n_memory(batch); i++)
    gst_buffer_append_memory(data, gst_buffer_get_memory(batch, i));
  GstTensor **tensors = g_new(GstTensor *, 1);
  tensors[0] = gst_tensor_new_simple(id, tensor_data_type(format.dtype), data,
                                     GST_TENSOR_DIM_ORDER_ROW_MAJOR, G_N_ELEMENTS(dims), dims);
  gst_tensor_meta_set(gst_buffer_add_tensor_meta(batch), 1, tensors);
}

#else

void gst_cuda_gray_batch_add_tensor_meta(GstBuffer *batch, const cudagray::BatchFormat &format,
                                         int n_slots, GQuark id) {}

#endif
