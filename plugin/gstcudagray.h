// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudagray element's type and instance, shared by gstcudagray.cpp and
 * its output task (gstcudagrayoutput.cpp). */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <memory>
#include <string>

#include "cudagray/backend.h"
#include "cudagray/conversion.h"
#include "gstcudagraycontext.h"
#include "gstcudagrayformats.h"
#include "gstcudagrayoutputqueue.h"
#include "gstcudagrayproperties.h"

G_BEGIN_DECLS

#define GST_TYPE_CUDA_GRAY (gst_cuda_gray_get_type())
G_DECLARE_FINAL_TYPE(GstCudaGray, gst_cuda_gray, GST, CUDA_GRAY, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(cudagray);

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_debug);

G_END_DECLS

/* Everything the streaming thread and the output task share; set up at
 * start and in set_caps, while the output task is idle. */
struct GstCudaGrayStreaming {
  std::unique_ptr<cudagray::Backend> backend;
  cudagray::BackendNeeds needs;
  GstCudaGrayOutputQueue output;
  /* the next frame queued is flagged DISCONT (after a QoS drop, a flush or
   * a gap); streaming thread only */
  bool discont_pending = false;
  /* frames taken for output and dropped late, for QoS messages; streaming
   * thread only */
  guint64 processed = 0, dropped = 0;
  GstAllocator *pinned = NULL; /* when the backend wants pinned memory */
  /* the input frame (Bayer: as GRAY8 of its geometry) and its format */
  GstVideoInfo in_info;
  const GstCudaGrayFormat *format = NULL;
  /* what a frame becomes, from the caps; configure_backend adds where
   * frames live and how many are in flight */
  cudagray::Conversion conversion;
  int max_in_flight = 1;    /* max-inflight with auto resolved */
  bool cuda_input = false;  /* sink caps say memory:CUDAMemory */
  bool cuda_output = false; /* src caps say memory:CUDAMemory */
  /* the last configuration failure posted, so that upstream's retries
   * (one per buffer) do not repeat it */
  std::string configure_error;
  /* the warning that matrix and weights do not apply to luma was posted */
  bool warned_weights_unused = false;
};

struct _GstCudaGray {
  GstBaseTransform parent;

  /* Properties and what other threads read, guarded by the object lock. */
  GstCudaGrayProperties props;
  GstClockTime added_latency;
  /* whether the backend in use reads / writes CUDA memory; -1 when none is */
  gint reads_device_memory;
  gint writes_device_memory;

  /* What the output task last pushed, for the POSITION query: the segment
   * it pushed last and the end of the last buffer (guarded by the object
   * lock). */
  GstSegment out_segment;
  GstClockTime position_out;
  /* The last QoS event from downstream: frames due (running time) at or
   * before qos_earliest are late (guarded by the object lock). */
  gdouble qos_proportion;
  GstClockTime qos_earliest;

  GstCudaGrayStreaming *streaming;
  /* the CUDA context every backend call is made in */
  GstCudaGrayContext *context;
};
