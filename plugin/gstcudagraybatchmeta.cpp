// SPDX-License-Identifier: LGPL-2.1-or-later
/* GstCudaGrayBatchMeta's registration, initialisation and copy. The plugin
 * and the tests each link a copy of this file: both register by name, and
 * the second finds the first's types instead of registering them again. */
#include "gstcudagraybatchmeta.h"

#include <cstring>

#include "cudagray/batch.h"

static_assert(GST_CUDA_GRAY_BATCH_MAX_SLOTS == cudagray::kMaxBatchSlots,
              "the meta holds every slot a batch can have");

#define API_NAME "GstCudaGrayBatchMetaAPI"
#define INFO_NAME "GstCudaGrayBatchMeta"

GType gst_cuda_gray_batch_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar *tags[] = {NULL};
  if (g_once_init_enter(&type)) {
    GType t = g_type_from_name(API_NAME);
    if (!t) t = gst_meta_api_type_register(API_NAME, tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

static gboolean batch_meta_init(GstMeta *meta, gpointer params, GstBuffer *buffer) {
  GstCudaGrayBatchMeta *m = (GstCudaGrayBatchMeta *)meta;
  m->n_slots = 0;
  for (GstCudaGrayBatchSlotInfo &slot : m->slots)
    slot = GstCudaGrayBatchSlotInfo{-1, FALSE, GST_CLOCK_TIME_NONE, 0, 0, 0, 0};
  return TRUE;
}

/* Copies go with the batch: every transform (copy, or a region of it) keeps
 * the slots as they are. */
static gboolean batch_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *buffer, GQuark type,
                                     gpointer data) {
  const GstCudaGrayBatchMeta *from = (const GstCudaGrayBatchMeta *)meta;
  GstCudaGrayBatchMeta *to = gst_buffer_add_cuda_gray_batch_meta(dest, from->n_slots);
  if (!to) return FALSE;
  memcpy(to->slots, from->slots, sizeof from->slots);
  return TRUE;
}

const GstMetaInfo *gst_cuda_gray_batch_meta_get_info(void) {
  static const GstMetaInfo *info = NULL;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo *i = gst_meta_get_info(INFO_NAME);
    if (!i)
      i = gst_meta_register(GST_CUDA_GRAY_BATCH_META_API_TYPE, INFO_NAME,
                            sizeof(GstCudaGrayBatchMeta), batch_meta_init, NULL,
                            batch_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

GstCudaGrayBatchMeta *gst_buffer_add_cuda_gray_batch_meta(GstBuffer *buffer, guint n_slots) {
  g_return_val_if_fail(n_slots <= GST_CUDA_GRAY_BATCH_MAX_SLOTS, NULL);
  GstCudaGrayBatchMeta *m = (GstCudaGrayBatchMeta *)gst_buffer_add_meta(
      buffer, gst_cuda_gray_batch_meta_get_info(), NULL);
  m->n_slots = n_slots;
  return m;
}
