// SPDX-License-Identifier: LGPL-2.1-or-later
/* GStreamer 1.24's CUDA streams, and the same calls as no-ops before it:
 * every version check of gstreamer-cuda-1.0 is here. */
#include "gstcudagraystreams.h"

#include "gstcudagraycontext.h"
#include "gstcudagraycontextprivate.h"

#define GST_CAT_DEFAULT gst_cuda_gray_context_debug

#if GST_CHECK_VERSION(1, 24, 0)

GstCudaGrayStream *gst_cuda_gray_stream_new(GstCudaContext *context) {
  return gst_cuda_stream_new(context);
}

void gst_cuda_gray_stream_clear(GstCudaGrayStream **stream) { gst_clear_cuda_stream(stream); }

GstCudaGrayStream *gst_cuda_gray_pool_config_get_stream(GstStructure *config) {
  return gst_buffer_pool_config_get_cuda_stream(config);
}

void gst_cuda_gray_pool_config_set_stream(GstStructure *config, GstCudaGrayStream *stream) {
  if (stream) gst_buffer_pool_config_set_cuda_stream(config, stream);
}

GstMemory *gst_cuda_gray_memory_alloc(GstAllocator *allocator, GstCudaContext *context,
                                      GstCudaGrayStream *stream, const GstVideoInfo *info) {
  return gst_cuda_allocator_alloc(GST_CUDA_ALLOCATOR(allocator), context, stream, info);
}

gpointer gst_cuda_gray_pending_writer_stream(GstBuffer *buffer) {
  GstCudaStream *first = NULL;
  for (guint i = 0; i < gst_buffer_n_memory(buffer); i++) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, i);
    if (!gst_is_cuda_memory(mem) ||
        !GST_MEMORY_FLAG_IS_SET(mem, GST_CUDA_MEMORY_TRANSFER_NEED_SYNC))
      continue;
    GstCudaStream *stream = gst_cuda_memory_get_stream(GST_CUDA_MEMORY_CAST(mem));
    if (!stream || stream == first) continue;
    if (!first) {
      first = stream;
    } else {
      GST_LOG("memory %u written on a second CUDA stream: waiting for it", i);
      gst_cuda_memory_sync(GST_CUDA_MEMORY_CAST(mem));
    }
  }
  return first ? (gpointer)gst_cuda_stream_get_handle(first) : NULL;
}

gpointer gst_cuda_gray_output_stream(GstBuffer *buffer) {
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  if (gst_buffer_n_memory(buffer) != 1 || !gst_is_cuda_memory(mem)) return NULL;
  GstCudaStream *stream = gst_cuda_memory_get_stream(GST_CUDA_MEMORY_CAST(mem));
  return stream ? (gpointer)gst_cuda_stream_get_handle(stream) : NULL;
}

void gst_cuda_gray_mark_output_pending(GstBuffer *buffer) {
  GST_MINI_OBJECT_FLAG_SET(gst_buffer_peek_memory(buffer, 0), GST_CUDA_MEMORY_TRANSFER_NEED_SYNC);
}

#else /* before 1.24: no streams; producers finish their work before pushing */

GstCudaGrayStream *gst_cuda_gray_stream_new(GstCudaContext *) { return NULL; }

void gst_cuda_gray_stream_clear(GstCudaGrayStream **stream) { *stream = NULL; }

GstCudaGrayStream *gst_cuda_gray_pool_config_get_stream(GstStructure *) { return NULL; }

void gst_cuda_gray_pool_config_set_stream(GstStructure *, GstCudaGrayStream *) {}

GstMemory *gst_cuda_gray_memory_alloc(GstAllocator *allocator, GstCudaContext *context,
                                      GstCudaGrayStream *, const GstVideoInfo *info) {
  return gst_cuda_allocator_alloc(GST_CUDA_ALLOCATOR(allocator), context, info);
}

gpointer gst_cuda_gray_pending_writer_stream(GstBuffer *) { return NULL; }

gpointer gst_cuda_gray_output_stream(GstBuffer *) { return NULL; }

void gst_cuda_gray_mark_output_pending(GstBuffer *) {}

#endif
