// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the files built with gstreamer-cuda-1.0 share about the element's
 * CUDA context: gstcudagraycontext.cpp makes it, gstcudagraypools.cpp and
 * gstcudagraystreams.cpp use it. */
#pragma once

#include <gst/cuda/gstcudacontext.h>
#include <gst/gst.h>

#include <memory>

#include "gstcudagraycontext.h"
#include "gstcudagraystreams.h"

/* Their debug category ("cudagray"), set up by gst_cuda_gray_context_new
 * before any of them runs. */
GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_context_debug);

/* The CUDA memory of the element's output pools, kept while no pool holds
 * it (gstcudagraypools.cpp). */
class GstCudaGrayDeviceParking;

struct _GstCudaGrayContext {
  GstElement *element;
  gint device = -1;               /* the device of the open context */
  GstCudaContext *cuda = nullptr; /* the open context */
  /* ours, carried by the CUDA pools we offer and make (1.24+) */
  GstCudaGrayStream *stream = nullptr;
  /* shared with the output pools made in the open context */
  std::shared_ptr<GstCudaGrayDeviceParking> parking;
};
