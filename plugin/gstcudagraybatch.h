// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudagraybatch element: frames from many sink pads, one normalised gray
 * batch a tick (docs/batch.md). */
#pragma once

#include <gst/base/gstaggregator.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include "cudagray/batch.h"
#include "gstcudagraycontext.h"
#include "gstcudagrayformats.h"
#include "gstcudagrayproperties.h"

G_BEGIN_DECLS

/* The dtype property: what each element of the batch is. */
typedef enum {
  GST_CUDA_GRAY_BATCH_DTYPE_UINT8,
  GST_CUDA_GRAY_BATCH_DTYPE_FLOAT16,
  GST_CUDA_GRAY_BATCH_DTYPE_FLOAT32,
} GstCudaGrayBatchDType;

#define GST_TYPE_CUDA_GRAY_BATCH_PAD (gst_cuda_gray_batch_pad_get_type())
G_DECLARE_FINAL_TYPE(GstCudaGrayBatchPad, gst_cuda_gray_batch_pad, GST, CUDA_GRAY_BATCH_PAD,
                     GstAggregatorPad)

#define GST_TYPE_CUDA_GRAY_BATCH (gst_cuda_gray_batch_get_type())
G_DECLARE_FINAL_TYPE(GstCudaGrayBatch, gst_cuda_gray_batch, GST, CUDA_GRAY_BATCH, GstAggregator)

GST_ELEMENT_REGISTER_DECLARE(cudagraybatch);

G_END_DECLS

/* A sink pad. */
struct _GstCudaGrayBatchPad {
  GstAggregatorPad parent;
  /* The input its caps describe: set and read on the source pad's task
   * only (GstAggregator hands serialized events, CAPS among them, to
   * sink_event there, in order with the buffers). */
  gboolean have_info;
  GstVideoInfo info;
  const GstCudaGrayFormat *format;
  /* The frame taken for the coming batch and the input it is, kept while
   * the tick waits for the other pads; guarded by the pad's object lock (a
   * flush of this pad alone drops it). */
  GstBuffer *held;
  GstVideoInfo held_info;
  const GstCudaGrayFormat *held_format;
};

struct _GstCudaGrayBatch {
  GstAggregator parent;

  /* Properties, guarded by the object lock: cudagray's shared ones, then
   * the batch's own. */
  GstCudaGrayProperties props;
  gint width, height;
  GstCudaGrayBatchDType dtype;
  gdouble mean, std;
  guint batch_size;
  gchar *model_info;

  /* What start made of model-info, guarded by the object lock: whether a
   * file gives mean and std (then they replace the properties') and the
   * tensor's id. */
  gboolean from_model_info;
  gdouble model_mean, model_std;
  GQuark tensor_id;

  /* From start to stop: where batches are made, and the CUDA context it
   * works in (open when the maker is CUDA's). */
  GstCudaGrayContext *context;
  cudagray::BatchMaker *maker;
  /* Host memory for batches in system memory: pinned when the maker is
   * CUDA's, so that its download is one DMA copy. */
  GstAllocator *host;
  /* Whether batches leave in CUDA memory (the source caps), and the pool
   * they come from (the source pad's task's). */
  gboolean cuda_output;
  GstBufferPool *pool;

  /* The source pad's task's (and flush's, while it is stopped): the output
   * ticks, tick k ending at tick_base + k + 1 frames of fps_n / fps_d
   * (tick_base NONE: none made since start or a flush). */
  GstClockTime tick_base;
  guint64 ticks;
  gint fps_n, fps_d;
};
