// SPDX-License-Identifier: LGPL-2.1-or-later
/* Host memory kept from one pool to the next: a GstAllocator of pinned
 * (page-locked) memory, which CUDA copies by DMA, or of plain memory, and
 * the pools of it that the element offers and uses. */
#pragma once

#include <gst/gst.h>

#include <string>

#include "cudagray/device.h"

#define GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME "CudaGrayPinned"
#define GST_CUDA_GRAY_SYSTEM_ALLOCATOR_NAME "CudaGraySystem"

/* An allocator whose memory, let go, is kept for the next memory of the
 * same size: pinned (GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME), allocated and
 * freed in the CUDA context that context enters (gst_cuda_gray_context_switch;
 * empty: whatever the calling thread has), for a backend that wants it;
 * else plain memory (GST_CUDA_GRAY_SYSTEM_ALLOCATOR_NAME), context unused.
 * Transfer full. */
GstAllocator *gst_cuda_gray_host_allocator_new(bool pinned,
                                               const cudagray::CudaContextSwitch &context);

/* A pool of allocator's memory for batches of bytes (no video layout),
 * with min_buffers, activated. NULL with why when it cannot be had. */
GstBufferPool *gst_cuda_gray_host_batch_pool_new(GstAllocator *allocator, gsize bytes,
                                                 guint min_buffers, std::string *why);

/* Adds to an allocation query a video buffer pool of allocator's memory
 * for its caps, with min_buffers, and puts allocator first among its
 * allocation params. Nothing when the query has no video caps. */
void gst_cuda_gray_add_host_pool(GstQuery *query, GstAllocator *allocator, guint min_buffers);
