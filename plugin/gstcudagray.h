// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudagray: RGB-family video to GRAY8 on an NVIDIA GPU (or the CPU). */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_CUDA_GRAY (gst_cuda_gray_get_type())
G_DECLARE_FINAL_TYPE(GstCudaGray, gst_cuda_gray, GST, CUDA_GRAY, GstBaseTransform)

typedef enum {
  GST_CUDA_GRAY_BACKEND_AUTO,
  GST_CUDA_GRAY_BACKEND_CUDA,
  GST_CUDA_GRAY_BACKEND_CPU,
} GstCudaGrayBackend;

typedef enum {
  GST_CUDA_GRAY_MATRIX_BT601,
  GST_CUDA_GRAY_MATRIX_BT709,
  GST_CUDA_GRAY_MATRIX_BT2020,
  GST_CUDA_GRAY_MATRIX_CUSTOM,
} GstCudaGrayMatrix;

GST_ELEMENT_REGISTER_DECLARE(cudagray);

G_END_DECLS
