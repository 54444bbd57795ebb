// SPDX-License-Identifier: LGPL-2.1-or-later
/* Buffers CUDA copies by DMA: a GstAllocator of pinned (page-locked) host
 * memory, and the pools of it that the element offers and uses. */
#pragma once

#include <gst/gst.h>

#include "cudagray/device.h"

#define GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME "CudaGrayPinned"

/* A pinned allocator whose memory is allocated and freed in the CUDA
 * context that context enters (gst_cuda_gray_context_switch; empty: whatever the
 * calling thread has). Transfer full. */
GstAllocator *gst_cuda_gray_pinned_allocator_new(const cudagray::CudaContextSwitch &context);

/* Adds to an allocation query a video buffer pool of allocator's pinned
 * memory for its caps, with min_buffers, and puts allocator first among its
 * allocation params. Nothing when the query has no video caps. */
void gst_cuda_gray_add_pinned_pool(GstQuery *query, GstAllocator *allocator, guint min_buffers);
