// SPDX-License-Identifier: LGPL-2.1-or-later
/* Pinned host memory for CUDA's copies: the GstAllocator, and the buffer
 * pools of it offered upstream and used for the output. Its memories
 * are plain system memories (mappable anywhere) whose bytes come from
 * cudaHostAlloc and go back, when the last reference drops, to be used
 * again or freed with cudaFreeHost (PinnedParking). */
#include "gstcudagrayallocation.h"

#include <gst/video/video.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cudagray/device.h"
#include "gstcudagraycaps.h"
#include "gstcudagraycontext.h"

GST_DEBUG_CATEGORY_STATIC(gst_cuda_gray_pinned_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_pinned_debug

/* Blocks whose memories were let go, kept for the next memory of the same
 * size: a renegotiation back to caps served before (a pool deactivated,
 * then made again) then allocates nothing, where cudaHostAlloc and
 * cudaFreeHost take milliseconds a frame. What is kept stays within twice
 * the most this allocator ever had out at once (the pools of two caps
 * flipped between); the rest is freed. Shared by
 * the allocator and every memory of it, and gone with the last of them. */
class PinnedParking {
 public:
  explicit PinnedParking(const cudagray::CudaContextSwitch &context) : context_(context) {}
  ~PinnedParking() {
    for (const auto &[bytes, data] : parked_) cudagray::free_pinned(data, context_);
  }
  PinnedParking(const PinnedParking &) = delete;
  PinnedParking &operator=(const PinnedParking &) = delete;

  /* bytes of pinned memory, parked or new; null and *error when none */
  void *take(gsize bytes, std::string *error) {
    {
      std::lock_guard<std::mutex> hold(lock_);
      const auto parked = parked_.find(bytes);
      if (parked != parked_.end()) {
        void *data = parked->second;
        parked_.erase(parked);
        parked_bytes_ -= bytes;
        out(bytes);
        return data;
      }
    }
    void *data = cudagray::alloc_pinned(bytes, error, context_);
    if (data) {
      std::lock_guard<std::mutex> hold(lock_);
      out(bytes);
    }
    return data;
  }

  void give_back(void *data, gsize bytes) {
    {
      std::lock_guard<std::mutex> hold(lock_);
      out_bytes_ -= bytes;
      if (parked_bytes_ + bytes <= 2 * most_out_bytes_) {
        parked_.emplace(bytes, data);
        parked_bytes_ += bytes;
        return;
      }
    }
    cudagray::free_pinned(data, context_);
  }

 private:
  void out(gsize bytes) {
    out_bytes_ += bytes;
    most_out_bytes_ = MAX(most_out_bytes_, out_bytes_);
  }

  const cudagray::CudaContextSwitch context_;
  std::mutex lock_;
  std::multimap<gsize, void *> parked_;
  gsize parked_bytes_ = 0, out_bytes_ = 0, most_out_bytes_ = 0;
};

typedef struct {
  GstAllocator parent;
  std::shared_ptr<PinnedParking> *parking; /* its context is entered around alloc and free */
} GstCudaGrayPinnedAllocator;

typedef struct {
  GstAllocatorClass parent_class;
} GstCudaGrayPinnedAllocatorClass;

G_DEFINE_TYPE(GstCudaGrayPinnedAllocator, gst_cuda_gray_pinned_allocator, GST_TYPE_ALLOCATOR);

/* What a memory's last unref gives back. */
struct PinnedBlock {
  void *data;
  gsize bytes;
  std::shared_ptr<PinnedParking> parking;
};

static void give_back_pinned_block(gpointer user_data) {
  auto *block = static_cast<PinnedBlock *>(user_data);
  block->parking->give_back(block->data, block->bytes);
  delete block;
}

static GstMemory *gst_cuda_gray_pinned_alloc(GstAllocator *allocator, gsize size,
                                             GstAllocationParams *params) {
  auto *self = reinterpret_cast<GstCudaGrayPinnedAllocator *>(allocator);
  const gsize align = params->align | 63; /* at least a cache line */
  const gsize maxsize = params->prefix + size + params->padding + align;
  std::string error;
  auto *data = static_cast<guint8 *>((*self->parking)->take(maxsize, &error));
  if (!data) {
    GST_WARNING("cannot allocate %" G_GSIZE_FORMAT " pinned bytes: %s", maxsize, error.c_str());
    return NULL;
  }
  const gsize offset =
      ((((guintptr)data + params->prefix + align) & ~(guintptr)align) - (guintptr)data);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) memset(data, 0, offset);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PADDED)
    memset(data + offset + size, 0, maxsize - offset - size);
  auto *block = new PinnedBlock{data, maxsize, *self->parking};
  return gst_memory_new_wrapped((GstMemoryFlags)params->flags, data, maxsize, offset, size, block,
                                give_back_pinned_block);
}

static void gst_cuda_gray_pinned_allocator_finalize(GObject *object) {
  auto *self = reinterpret_cast<GstCudaGrayPinnedAllocator *>(object);
  delete self->parking;
  G_OBJECT_CLASS(gst_cuda_gray_pinned_allocator_parent_class)->finalize(object);
}

static void gst_cuda_gray_pinned_allocator_class_init(GstCudaGrayPinnedAllocatorClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_cuda_gray_pinned_allocator_finalize;
  GST_ALLOCATOR_CLASS(klass)->alloc = gst_cuda_gray_pinned_alloc;
  GST_DEBUG_CATEGORY_INIT(gst_cuda_gray_pinned_debug, "cudagraypinned", 0,
                          "pinned host memory for cudagray");
}

static void gst_cuda_gray_pinned_allocator_init(GstCudaGrayPinnedAllocator *self) {
  GstAllocator *allocator = GST_ALLOCATOR(self);
  allocator->mem_type = GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME;
  /* memories come from alloc() only: never call the generic mem functions */
  GST_OBJECT_FLAG_SET(allocator, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *gst_cuda_gray_pinned_allocator_new(const cudagray::CudaContextSwitch &context) {
  auto *self = static_cast<GstCudaGrayPinnedAllocator *>(
      g_object_new(gst_cuda_gray_pinned_allocator_get_type(), NULL));
  gst_object_ref_sink(self);
  self->parking = new std::shared_ptr<PinnedParking>(std::make_shared<PinnedParking>(context));
  return GST_ALLOCATOR(self);
}

void gst_cuda_gray_add_pinned_pool(GstQuery *query, GstAllocator *allocator, guint min_buffers) {
  GstCaps *caps;
  GstVideoInfo info;
  const GstCudaGrayFormat *format;
  gst_query_parse_allocation(query, &caps, NULL);
  /* the frame's size as the element maps it: GstVideoInfo would take
   * video/x-bayer for an encoded format of size 0 */
  if (!caps || !gst_cuda_gray_input_from_caps(caps, &info, &format)) return;
  const gboolean raw = gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-raw");
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  /* a video pool lays out raw video only; a mosaic is one plane of bytes */
  GstBufferPool *pool = raw ? gst_video_buffer_pool_new() : gst_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, info.size, min_buffers, 0);
  gst_buffer_pool_config_set_allocator(config, allocator, &params);
  if (raw) gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (gst_buffer_pool_set_config(pool, config)) {
    gst_query_add_allocation_pool(query, pool, info.size, min_buffers, 0);
    if (gst_query_get_n_allocation_params(query) > 0)
      gst_query_set_nth_allocation_param(query, 0, allocator, &params);
    else
      gst_query_add_allocation_param(query, allocator, &params);
    GST_DEBUG("offering a pinned pool for %" GST_PTR_FORMAT, caps);
  }
  gst_object_unref(pool);
}
