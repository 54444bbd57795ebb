// SPDX-License-Identifier: LGPL-2.1-or-later
/* The CUDA streams that CUDA memory and CUDA buffer pools carry since
 * GStreamer 1.24, through which a producer and its consumer order their work
 * on the GPU instead of waiting for it on the CPU. Before 1.24 there are
 * none, and each function says what it does then. Every version check of
 * gstreamer-cuda-1.0 in the plugin is in gstcudagraystreams.{h,cpp}; both
 * are built only with gstreamer-cuda-1.0. */
#pragma once

#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#if GST_CHECK_VERSION(1, 24, 0)
#include <gst/cuda/gstcudastream.h>
typedef GstCudaStream GstCudaGrayStream;
#else
typedef struct _GstCudaGrayStream GstCudaGrayStream; /* never made */
#endif

/* A new CUDA stream in context, or NULL (always before 1.24). */
GstCudaGrayStream *gst_cuda_gray_stream_new(GstCudaContext *context);
/* Drops *stream's reference (if any) and sets it to NULL. */
void gst_cuda_gray_stream_clear(GstCudaGrayStream **stream);

/* The stream a pool config gives its memories (a new reference), or NULL. */
GstCudaGrayStream *gst_cuda_gray_pool_config_get_stream(GstStructure *config);
/* Makes a pool's memories carry stream; nothing when NULL or before 1.24. */
void gst_cuda_gray_pool_config_set_stream(GstStructure *config, GstCudaGrayStream *stream);

/* A CUDA memory of context laid out as info, carrying stream when there is
 * one; NULL when it cannot be allocated. */
GstMemory *gst_cuda_gray_memory_alloc(GstAllocator *allocator, GstCudaContext *context,
                                      GstCudaGrayStream *stream, const GstVideoInfo *info);
