// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudagray element's type and instance. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include "gstcudagraycontext.h"
#include "gstcudagrayconverter.h"
#include "gstcudagrayoutput.h"
#include "gstcudagrayproperties.h"

G_BEGIN_DECLS

#define GST_TYPE_CUDA_GRAY (gst_cuda_gray_get_type())
G_DECLARE_FINAL_TYPE(GstCudaGray, gst_cuda_gray, GST, CUDA_GRAY, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(cudagray);

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_debug);

G_END_DECLS

struct _GstCudaGray {
  GstBaseTransform parent;

  /* Properties and what other threads read, guarded by the object lock. */
  GstCudaGrayProperties props;
  /* whether the backend in use reads / writes CUDA memory; -1 when none is */
  gint reads_device_memory;
  gint writes_device_memory;

  /* whether the converter holds a backend (start to stop): the stats
   * property then asks it */
  gboolean converting;

  /* whether the segment plays backwards (streaming thread) */
  gboolean reverse_playback;

  /* the CUDA context every backend call is made in */
  GstCudaGrayContext *context;
  /* Three rooms, calls one way: the element hands input buffers to the
   * converter and what it makes to the output unit, which calls neither. */
  GstCudaGrayConverter *converter;
  GstCudaGrayOutput *output;
};
