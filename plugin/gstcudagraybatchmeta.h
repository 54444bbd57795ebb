// SPDX-License-Identifier: LGPL-2.1-or-later
/* GstCudaGrayBatchMeta: what a model needs of each slot of a cudagraybatch
 * batch besides its pixels (docs/batch.md, "Slots"). */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

/* The most slots a batch holds (cudagray::kMaxBatchSlots). */
#define GST_CUDA_GRAY_BATCH_MAX_SLOTS 64

/* One slot. A point (x, y) of the slot, in pixels from its top-left corner
 * (pixel centres at half-integers), is the point (scale_x * x + offset_x,
 * scale_y * y + offset_y) of the source frame as its pad's caps describe
 * it (a crop meta's rectangle when the buffer carried one). */
typedef struct {
  /* the sink pad's number N of sink_N; -1 for a slot no pad fills */
  gint pad_index;
  /* whether the slot holds a frame; an absent slot is black */
  gboolean present;
  /* the source buffer's PTS (in its pad's segment); NONE when absent */
  GstClockTime pts;
  /* the letterbox transform; 0 when absent */
  gdouble scale_x, scale_y, offset_x, offset_y;
} GstCudaGrayBatchSlotInfo;

typedef struct {
  GstMeta meta;
  guint n_slots;
  GstCudaGrayBatchSlotInfo slots[GST_CUDA_GRAY_BATCH_MAX_SLOTS];
} GstCudaGrayBatchMeta;

GType gst_cuda_gray_batch_meta_api_get_type(void);
#define GST_CUDA_GRAY_BATCH_META_API_TYPE (gst_cuda_gray_batch_meta_api_get_type())

const GstMetaInfo *gst_cuda_gray_batch_meta_get_info(void);

/* Adds a meta of n_slots slots, each absent until filled in. */
GstCudaGrayBatchMeta *gst_buffer_add_cuda_gray_batch_meta(GstBuffer *buffer, guint n_slots);

#define gst_buffer_get_cuda_gray_batch_meta(b) \
  ((GstCudaGrayBatchMeta *)gst_buffer_get_meta((b), GST_CUDA_GRAY_BATCH_META_API_TYPE))

G_END_DECLS
