/* A GstAllocator of pinned (page-locked) host memory, which CUDA copies to
 * and from by DMA without a staging copy. */
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME "CudaGrayPinned"

/* The process-wide instance (transfer full). */
GstAllocator *gst_cuda_gray_pinned_allocator_get (void);

G_END_DECLS
