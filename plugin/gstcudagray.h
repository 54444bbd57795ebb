// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudagray: RGB-family video to GRAY8 on an NVIDIA GPU (or the CPU). */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_CUDA_GRAY (gst_cuda_gray_get_type())
G_DECLARE_FINAL_TYPE(GstCudaGray, gst_cuda_gray, GST, CUDA_GRAY, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(cudagray);

G_END_DECLS
