// SPDX-License-Identifier: LGPL-2.1-or-later
/* The CUDA-memory pools of the element's context: the one offered upstream,
 * and the one gray CUDA memory output is written into
 * (gstcudagraypools.cpp; without gstreamer-cuda-1.0 there are none). */
#pragma once

#include <gst/gst.h>

#include <string>

#include "gstcudagraycontext.h"

/* Offers upstream a GstCudaBufferPool in the element's context for caps
 * whose memory carries a stream of ours (1.24+), so that a producer adopting
 * it writes on it and need not wait for its work before pushing. Nothing
 * when caps are not in CUDA memory, or before 1.24. */
void gst_cuda_gray_offer_input_pool(GstCudaGrayContext *context, GstQuery *query, GstCaps *caps,
                                    guint min_buffers);

/* For CUDA-memory gray output: keeps in an allocation query the first pool
 * that can give it in the element's context (a GstCudaBufferPool of that
 * context that is not GStreamer's own, which lays out no gray up to 1.26),
 * else adds the element's own: a GstCudaBufferPool subclass whose buffers
 * hold one CUDA memory and a gray GstVideoMeta giving its pitch, with
 * min_buffers, on the element's CUDA stream (1.24+). FALSE with why when
 * that fails. */
gboolean gst_cuda_gray_decide_output_pool(GstCudaGrayContext *context, GstQuery *query,
                                          guint min_buffers, std::string *why);

/* cudagraybatch's pool of batches in CUDA memory: buffers of one CUDA
 * memory of the element's context holding bytes contiguous (no video
 * meta), min_buffers of them, activated. NULL with why when it cannot be
 * had. */
GstBufferPool *gst_cuda_gray_batch_pool_new(GstCudaGrayContext *context, gsize bytes,
                                            guint min_buffers, std::string *why);
/* Maps a buffer of that pool for the GPU to write (map->data the device
 * address of the batch); FALSE with why when it is not such a buffer of at
 * least bytes, or cannot be mapped. gst_memory_unmap(map->memory, map). */
gboolean gst_cuda_gray_batch_memory(GstBuffer *buffer, gsize bytes, GstMapInfo *map,
                                    std::string *why);
