// SPDX-License-Identifier: LGPL-2.1-or-later
/* Host memory kept from one pool to the next: the GstAllocator, of pinned
 * memory for CUDA's copies or of plain memory for the CPU backend, and the
 * buffer pools of it offered upstream and used for the output. Its
 * memories are plain system memories (mappable anywhere) whose bytes come
 * from cudaHostAlloc (or malloc) and go back, when the last reference
 * drops, to be used again or freed (HostParking). */
#include "gstcudagrayallocation.h"

#include <gst/video/video.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cudagray/device.h"
#include "gstcudagraycaps.h"
#include "gstcudagraycontext.h"

GST_DEBUG_CATEGORY_STATIC(gst_cuda_gray_host_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_host_debug

/* Blocks whose memories were let go, kept for the next memory of the same
 * size: a renegotiation back to caps served before (a pool deactivated,
 * then made again) then allocates nothing, where cudaHostAlloc and
 * cudaFreeHost take milliseconds a frame, and new plain memory faults in
 * its pages as the frame is written. What is kept stays within twice the
 * most this allocator ever had out at once (the pools of two caps flipped
 * between); the rest is freed. Shared by the allocator and every memory
 * of it, and gone with the last of them. */
class HostParking {
 public:
  /* pinned memory in the context that context enters, or plain memory */
  HostParking(bool pinned, const cudagray::CudaContextSwitch &context)
      : pinned_(pinned), context_(context) {}
  ~HostParking() {
    for (const auto &[bytes, data] : parked_) free_block(data);
  }
  HostParking(const HostParking &) = delete;
  HostParking &operator=(const HostParking &) = delete;

  /* bytes of host memory, parked or new; null and *error when none */
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
    void *data = alloc_block(bytes, error);
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
    free_block(data);
  }

 private:
  void *alloc_block(gsize bytes, std::string *error) {
    if (pinned_) return cudagray::alloc_pinned(bytes, error, context_);
    void *data = g_try_malloc(bytes);
    if (!data) *error = "out of memory";
    return data;
  }
  void free_block(void *data) {
    if (pinned_)
      cudagray::free_pinned(data, context_);
    else
      g_free(data);
  }

  void out(gsize bytes) {
    out_bytes_ += bytes;
    most_out_bytes_ = MAX(most_out_bytes_, out_bytes_);
  }

  const bool pinned_;
  const cudagray::CudaContextSwitch context_;
  std::mutex lock_;
  std::multimap<gsize, void *> parked_;
  gsize parked_bytes_ = 0, out_bytes_ = 0, most_out_bytes_ = 0;
};

typedef struct {
  GstAllocator parent;
  std::shared_ptr<HostParking> *parking; /* pinned: its context is entered around alloc and free */
} GstCudaGrayHostAllocator;

typedef struct {
  GstAllocatorClass parent_class;
} GstCudaGrayHostAllocatorClass;

G_DEFINE_TYPE(GstCudaGrayHostAllocator, gst_cuda_gray_host_allocator, GST_TYPE_ALLOCATOR);

/* What a memory's last unref gives back. */
struct HostBlock {
  void *data;
  gsize bytes;
  std::shared_ptr<HostParking> parking;
};

static void give_back_host_block(gpointer user_data) {
  auto *block = static_cast<HostBlock *>(user_data);
  block->parking->give_back(block->data, block->bytes);
  delete block;
}

static GstMemory *gst_cuda_gray_host_alloc(GstAllocator *allocator, gsize size,
                                           GstAllocationParams *params) {
  auto *self = reinterpret_cast<GstCudaGrayHostAllocator *>(allocator);
  const gsize align = params->align | 63; /* at least a cache line */
  const gsize maxsize = params->prefix + size + params->padding + align;
  std::string error;
  auto *data = static_cast<guint8 *>((*self->parking)->take(maxsize, &error));
  if (!data) {
    GST_WARNING("cannot allocate %" G_GSIZE_FORMAT " %s bytes: %s", maxsize, allocator->mem_type,
                error.c_str());
    return NULL;
  }
  /* The memory starts where its data is aligned, less the prefix: its
   * offset is the prefix alone, as in GStreamer's system memory, since a
   * pool takes a recycled buffer's offset back to 0. */
  guint8 *const aligned =
      (guint8 *)((((guintptr)data + params->prefix + align) & ~(guintptr)align));
  guint8 *const start = aligned - params->prefix;
  const gsize room = maxsize - (start - data);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED) memset(start, 0, params->prefix);
  if (params->flags & GST_MEMORY_FLAG_ZERO_PADDED)
    memset(aligned + size, 0, room - params->prefix - size);
  auto *block = new HostBlock{data, maxsize, *self->parking};
  return gst_memory_new_wrapped((GstMemoryFlags)params->flags, start, room, params->prefix, size,
                                block, give_back_host_block);
}

static void gst_cuda_gray_host_allocator_finalize(GObject *object) {
  auto *self = reinterpret_cast<GstCudaGrayHostAllocator *>(object);
  delete self->parking;
  G_OBJECT_CLASS(gst_cuda_gray_host_allocator_parent_class)->finalize(object);
}

static void gst_cuda_gray_host_allocator_class_init(GstCudaGrayHostAllocatorClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_cuda_gray_host_allocator_finalize;
  GST_ALLOCATOR_CLASS(klass)->alloc = gst_cuda_gray_host_alloc;
  GST_DEBUG_CATEGORY_INIT(gst_cuda_gray_host_debug, "cudagrayhost", 0,
                          "host memory kept from pool to pool by cudagray");
}

static void gst_cuda_gray_host_allocator_init(GstCudaGrayHostAllocator *self) {
  /* memories come from alloc() only: never call the generic mem functions */
  GST_OBJECT_FLAG_SET(GST_ALLOCATOR(self), GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *gst_cuda_gray_host_allocator_new(bool pinned,
                                               const cudagray::CudaContextSwitch &context) {
  auto *self = static_cast<GstCudaGrayHostAllocator *>(
      g_object_new(gst_cuda_gray_host_allocator_get_type(), NULL));
  gst_object_ref_sink(self);
  GST_ALLOCATOR(self)->mem_type =
      pinned ? GST_CUDA_GRAY_PINNED_ALLOCATOR_NAME : GST_CUDA_GRAY_SYSTEM_ALLOCATOR_NAME;
  self->parking = new std::shared_ptr<HostParking>(
      std::make_shared<HostParking>(pinned, pinned ? context : cudagray::CudaContextSwitch{}));
  return GST_ALLOCATOR(self);
}

GstBufferPool *gst_cuda_gray_host_batch_pool_new(GstAllocator *allocator, gsize bytes,
                                                 guint min_buffers, std::string *why) {
  GstBufferPool *pool = gst_buffer_pool_new();
  GstStructure *config = gst_buffer_pool_get_config(pool);
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  gst_buffer_pool_config_set_params(config, NULL, bytes, min_buffers, 0);
  gst_buffer_pool_config_set_allocator(config, allocator, &params);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    *why = std::to_string(min_buffers) + " batches of " + std::to_string(bytes) + " bytes of " +
           allocator->mem_type + " memory could not be allocated";
    gst_object_unref(pool);
    return NULL;
  }
  return pool;
}

void gst_cuda_gray_add_host_pool(GstQuery *query, GstAllocator *allocator, guint min_buffers) {
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
    GST_DEBUG("offering a pool of %s memory for %" GST_PTR_FORMAT, allocator->mem_type, caps);
  }
  gst_object_unref(pool);
}
