// SPDX-License-Identifier: LGPL-2.1-or-later
/* The CUDA-memory pools: the one offered upstream for CUDA memory input, and
 * the one gray CUDA memory output is written into. Built only with
 * gstreamer-cuda-1.0. */
#include "gstcudagraypools.h"

#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/video/video.h>

#include <memory>
#include <mutex>
#include <vector>

#include "cudagray/device.h"
#include "gstcudagraycontextprivate.h"

#define GST_CAT_DEFAULT gst_cuda_gray_context_debug

/* Sets config on pool and adds the pool to query, with the buffer size the
 * pool settled on: a CUDA pool rounds the caps' size up to its pitch. */
static gboolean add_configured_pool(GstQuery *query, GstBufferPool *pool, GstStructure *config,
                                    guint min_buffers) {
  if (!gst_buffer_pool_set_config(pool, config)) return FALSE;
  config = gst_buffer_pool_get_config(pool);
  guint size = 0;
  gst_buffer_pool_config_get_params(config, NULL, &size, NULL, NULL);
  gst_structure_free(config);
  gst_query_add_allocation_pool(query, pool, size, min_buffers, 0);
  return TRUE;
}

/* The CUDA pool offered upstream (1.24+, carrying our stream): GStreamer's
 * own, with each step that allocates or frees CUDA memory (configuring,
 * starting, stopping, a new buffer) made a resource change
 * (cudagray::change_cuda_resources), as the element's own allocations are:
 * upstream fills it from threads that also run cudagray, and without that
 * its allocations waited for the context's lock for as long as other
 * pipelines streamed (1.26, 32 pipelines started together). */
typedef struct {
  GstCudaBufferPool parent;
} GstCudaGrayOfferedPool;

typedef struct {
  GstCudaBufferPoolClass parent_class;
} GstCudaGrayOfferedPoolClass;

G_DEFINE_TYPE(GstCudaGrayOfferedPool, gst_cuda_gray_offered_pool, GST_TYPE_CUDA_BUFFER_POOL);

static GstBufferPoolClass *cuda_pool_class(void) {
  return GST_BUFFER_POOL_CLASS(gst_cuda_gray_offered_pool_parent_class);
}

/* What step returns, the step made a resource change. */
template <class Step>
static auto as_resource_change(Step step) -> decltype(step()) {
  decltype(step()) result{};
  cudagray::change_cuda_resources([&] { result = step(); });
  return result;
}

static gboolean offered_pool_set_config(GstBufferPool *pool, GstStructure *config) {
  return as_resource_change([&] { return cuda_pool_class()->set_config(pool, config); });
}

static gboolean offered_pool_start(GstBufferPool *pool) {
  return as_resource_change([&] { return cuda_pool_class()->start(pool); });
}

static gboolean offered_pool_stop(GstBufferPool *pool) {
  return as_resource_change([&] { return cuda_pool_class()->stop(pool); });
}

static GstFlowReturn offered_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                               GstBufferPoolAcquireParams *params) {
  return as_resource_change([&] { return cuda_pool_class()->alloc_buffer(pool, buffer, params); });
}

static void gst_cuda_gray_offered_pool_class_init(GstCudaGrayOfferedPoolClass *klass) {
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = offered_pool_set_config;
  pool_class->start = offered_pool_start;
  pool_class->stop = offered_pool_stop;
  pool_class->alloc_buffer = offered_pool_alloc_buffer;
}

static void gst_cuda_gray_offered_pool_init(GstCudaGrayOfferedPool *) {}
void gst_cuda_gray_offer_input_pool(GstCudaGrayContext *context, GstQuery *query, GstCaps *caps,
                                    guint min_buffers) {
  GstVideoInfo info;
  GstCapsFeatures *features = caps ? gst_caps_get_features(caps, 0) : NULL;
  if (!context->cuda || !context->stream || !features ||
      !gst_caps_features_contains(features, GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY) ||
      !gst_video_info_from_caps(&info, caps))
    return;
  auto *offered = static_cast<GstCudaGrayOfferedPool *>(
      g_object_new(gst_cuda_gray_offered_pool_get_type(), NULL));
  gst_object_ref_sink(offered);
  /* as gst_cuda_buffer_pool_new does */
  offered->parent.context = (GstCudaContext *)gst_object_ref(context->cuda);
  GstBufferPool *pool = GST_BUFFER_POOL(offered);
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, info.size, min_buffers, 0);
  gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_cuda_gray_pool_config_set_stream(config, context->stream);
  if (add_configured_pool(query, pool, config, min_buffers))
    GST_DEBUG_OBJECT(context->element, "offering a CUDA pool on our stream for %" GST_PTR_FORMAT,
                     caps);
  gst_object_unref(pool);
}

/* CUDA memory let go by the element's output pools, kept for the next pool
 * asking for the same frames in the same context and stream: a
 * renegotiation back to caps served before (GstBaseTransform deactivates
 * the old pool, and with it frees its buffers) then allocates nothing. What
 * is kept stays within twice the most the pools ever had out at once (the
 * pools of two caps flipped between); the rest is freed. Memory another
 * buffer still shares is never kept. */
class GstCudaGrayDeviceParking {
 public:
  ~GstCudaGrayDeviceParking() {
    cudagray::change_cuda_resources([this] {
      for (GstMemory *mem : parked_) gst_memory_unref(mem);
    });
  }

  /* a kept memory of the same layout, context and stream, or null */
  GstMemory *take(const GstVideoInfo *info, GstCudaContext *context, gpointer stream) {
    std::lock_guard<std::mutex> hold(lock_);
    for (auto it = parked_.begin(); it != parked_.end(); ++it) {
      GstCudaMemory *mem = GST_CUDA_MEMORY_CAST(*it);
      if (mem->context != context || streams_[it - parked_.begin()] != stream ||
          GST_VIDEO_INFO_WIDTH(&mem->info) != GST_VIDEO_INFO_WIDTH(info) ||
          GST_VIDEO_INFO_HEIGHT(&mem->info) != GST_VIDEO_INFO_HEIGHT(info) ||
          GST_VIDEO_INFO_FORMAT(&mem->info) != GST_VIDEO_INFO_FORMAT(info))
        continue;
      GstMemory *taken = *it;
      streams_.erase(streams_.begin() + (it - parked_.begin()));
      parked_.erase(it);
      parked_bytes_ -= taken->maxsize;
      went_out(taken->maxsize);
      return taken;
    }
    return NULL;
  }

  void went_out(gsize bytes) {
    out_bytes_ += bytes;
    most_out_bytes_ = MAX(most_out_bytes_, out_bytes_);
  }
  void allocated(GstMemory *mem) {
    std::lock_guard<std::mutex> hold(lock_);
    went_out(mem->maxsize);
  }

  /* mem (transfer full), of a buffer the pool frees */
  void give_back(GstMemory *mem, gpointer stream) {
    {
      std::lock_guard<std::mutex> hold(lock_);
      out_bytes_ -= MIN(out_bytes_, mem->maxsize);
      if (GST_MINI_OBJECT_REFCOUNT_VALUE(mem) == 1 &&
          parked_bytes_ + mem->maxsize <= 2 * most_out_bytes_) {
        parked_.push_back(mem);
        streams_.push_back(stream);
        parked_bytes_ += mem->maxsize;
        return;
      }
    }
    gst_memory_unref(mem);
  }

 private:
  std::mutex lock_;
  std::vector<GstMemory *> parked_;
  std::vector<gpointer> streams_; /* the stream each parked memory was made for */
  gsize parked_bytes_ = 0, out_bytes_ = 0, most_out_bytes_ = 0;
};

/* The element's pool for gray (GRAY8, GRAY16_LE) in CUDA memory. GStreamer's
 * CUDA allocator lays out no gray (1.22 asserts, 1.24+ fails), so each frame
 * is asked of it as a packed 4-byte frame a quarter of the row's bytes wide:
 * one plane of the same height, at least a row's bytes a row, with no
 * further planes. The GstVideoMeta says what the buffer holds: gray at the
 * allocation's pitch.
 * A GstCudaBufferPool (of the element's context) for whoever checks; it does
 * its own configuring, starting and allocating, and GstBufferPool's rest. */
typedef struct {
  GstCudaBufferPool parent;
  GstAllocator *allocator;                            /* GStreamer's CUDA allocator */
  GstVideoInfo gray;                                  /* what the buffers hold */
  GstVideoInfo standin;                               /* what the allocator is asked for */
  GstCudaGrayStream *stream;                          /* from the config: the memories carry it */
  gboolean video_meta;                                /* gray frames have one; batches none */
  std::shared_ptr<GstCudaGrayDeviceParking> *parking; /* the element's */
} GstCudaGrayDevicePool;

typedef struct {
  GstCudaBufferPoolClass parent_class;
} GstCudaGrayDevicePoolClass;

G_DEFINE_TYPE(GstCudaGrayDevicePool, gst_cuda_gray_device_pool, GST_TYPE_CUDA_BUFFER_POOL);

static GstBufferPoolClass *base_pool_class(void) {
  return GST_BUFFER_POOL_CLASS(g_type_class_peek(GST_TYPE_BUFFER_POOL));
}

/* Allocating and freeing CUDA memory wait for the driver's context lock:
 * as resource changes (cudagray/device.h), so that cudagray's streaming
 * elsewhere in the process lets them have it. */
static GstMemory *device_pool_alloc_memory(GstCudaGrayDevicePool *self) {
  return as_resource_change([self] {
    return gst_cuda_gray_memory_alloc(self->allocator, self->parent.context, self->stream,
                                      &self->standin);
  });
}

/* A frame's memory: one the element's pools let go, or a new one. */
static GstMemory *device_pool_take_memory(GstCudaGrayDevicePool *self) {
  GstCudaGrayDeviceParking &parking = **self->parking;
  GstMemory *mem = parking.take(&self->standin, self->parent.context, self->stream);
  if (mem) return mem;
  mem = device_pool_alloc_memory(self);
  if (mem) parking.allocated(mem);
  return mem;
}

static gboolean device_pool_set_config(GstBufferPool *pool, GstStructure *config) {
  auto *self = reinterpret_cast<GstCudaGrayDevicePool *>(pool);
  GstCaps *caps = NULL;
  guint size, min_buffers, max_buffers;
  GstVideoInfo gray;
  if (!gst_buffer_pool_config_get_params(config, &caps, &size, &min_buffers, &max_buffers) ||
      !caps || !gst_video_info_from_caps(&gray, caps) ||
      (GST_VIDEO_INFO_FORMAT(&gray) != GST_VIDEO_FORMAT_GRAY8 &&
       GST_VIDEO_INFO_FORMAT(&gray) != GST_VIDEO_FORMAT_GRAY16_LE)) {
    GST_WARNING_OBJECT(pool, "takes GRAY8 or GRAY16_LE caps only, not %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  self->gray = gray;
  const gint row_bytes = GST_VIDEO_INFO_WIDTH(&gray) * GST_VIDEO_INFO_COMP_PSTRIDE(&gray, 0);
  gst_video_info_set_format(&self->standin, GST_VIDEO_FORMAT_RGBA, (row_bytes + 3) / 4,
                            GST_VIDEO_INFO_HEIGHT(&gray));
  gst_cuda_gray_stream_clear(&self->stream);
  self->stream = gst_cuda_gray_pool_config_get_stream(config);
  /* one allocation tells the size at the pitch the driver picks */
  GstMemory *probe = device_pool_take_memory(self);
  if (!probe) {
    GST_WARNING_OBJECT(pool, "cannot allocate a %dx%d %s frame in CUDA memory",
                       GST_VIDEO_INFO_WIDTH(&gray), GST_VIDEO_INFO_HEIGHT(&gray),
                       GST_VIDEO_INFO_NAME(&gray));
    return FALSE;
  }
  gst_buffer_pool_config_set_params(config, caps, probe->size, min_buffers, max_buffers);
  cudagray::change_cuda_resources([&] { (*self->parking)->give_back(probe, self->stream); });
  return base_pool_class()->set_config(pool, config);
}

/* GstCudaBufferPool's start (1.24+) activates an allocator of its own, which
 * this pool does not use */
static gboolean device_pool_start(GstBufferPool *pool) { return base_pool_class()->start(pool); }

static GstFlowReturn device_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                              GstBufferPoolAcquireParams *params) {
  auto *self = reinterpret_cast<GstCudaGrayDevicePool *>(pool);
  GstMemory *mem = device_pool_take_memory(self);
  if (!mem) {
    GST_WARNING_OBJECT(pool, "cannot allocate CUDA memory");
    return GST_FLOW_ERROR;
  }
  gsize offset[GST_VIDEO_MAX_PLANES] = {0};
  gint stride[GST_VIDEO_MAX_PLANES] = {
      GST_VIDEO_INFO_PLANE_STRIDE(&GST_CUDA_MEMORY_CAST(mem)->info, 0)};
  *buffer = gst_buffer_new();
  gst_buffer_append_memory(*buffer, mem);
  if (self->video_meta)
    gst_buffer_add_video_meta_full(
        *buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&self->gray),
        GST_VIDEO_INFO_WIDTH(&self->gray), GST_VIDEO_INFO_HEIGHT(&self->gray), 1, offset, stride);
  return GST_FLOW_OK;
}

static void device_pool_free_buffer(GstBufferPool *pool, GstBuffer *buffer) {
  auto *self = reinterpret_cast<GstCudaGrayDevicePool *>(pool);
  GstMemory *mem = gst_buffer_n_memory(buffer) == 1 ? gst_buffer_get_memory(buffer, 0) : NULL;
  cudagray::change_cuda_resources([&] {
    base_pool_class()->free_buffer(pool, buffer);
    if (mem && self->parking)
      (*self->parking)->give_back(mem, self->stream);
    else if (mem)
      gst_memory_unref(mem);
  });
}

static void gst_cuda_gray_device_pool_dispose(GObject *object) {
  auto *self = reinterpret_cast<GstCudaGrayDevicePool *>(object);
  gst_clear_object(&self->allocator);
  gst_cuda_gray_stream_clear(&self->stream);
  delete self->parking;
  self->parking = NULL;
  G_OBJECT_CLASS(gst_cuda_gray_device_pool_parent_class)->dispose(object);
}

static void gst_cuda_gray_device_pool_class_init(GstCudaGrayDevicePoolClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = gst_cuda_gray_device_pool_dispose;
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = device_pool_set_config;
  pool_class->start = device_pool_start;
  pool_class->alloc_buffer = device_pool_alloc_buffer;
  pool_class->free_buffer = device_pool_free_buffer;
}

static void gst_cuda_gray_device_pool_init(GstCudaGrayDevicePool *self) {
  self->video_meta = TRUE;
  gst_video_info_init(&self->gray);
  gst_video_info_init(&self->standin);
}

static GstBufferPool *device_pool_new(GstCudaGrayContext *context) {
  GstCudaContext *cuda_context = context->cuda;
  gst_cuda_memory_init_once();
  GstAllocator *allocator = gst_allocator_find(GST_CUDA_MEMORY_TYPE_NAME);
  if (!allocator) {
    GST_WARNING("GStreamer's CUDA allocator is not registered");
    return NULL;
  }
  auto *self = static_cast<GstCudaGrayDevicePool *>(
      g_object_new(gst_cuda_gray_device_pool_get_type(), NULL));
  gst_object_ref_sink(self);
  /* as gst_cuda_buffer_pool_new does */
  self->parent.context = (GstCudaContext *)gst_object_ref(cuda_context);
  self->allocator = allocator;
  if (!context->parking) context->parking = std::make_shared<GstCudaGrayDeviceParking>();
  self->parking = new std::shared_ptr<GstCudaGrayDeviceParking>(context->parking);
  return GST_BUFFER_POOL(self);
}

gboolean gst_cuda_gray_decide_output_pool(GstCudaGrayContext *context, GstQuery *query,
                                          guint min_buffers, std::string *why) {
  if (!context->cuda) {
    *why = "no CUDA context is open";
    return FALSE;
  }
  /* GStreamer's own GstCudaBufferPool cannot lay out gray (1.22 aborts on
   * it); another context's memory cannot be written here */
  for (guint i = gst_query_get_n_allocation_pools(query); i-- > 0;) {
    GstBufferPool *pool = NULL;
    gst_query_parse_nth_allocation_pool(query, i, &pool, NULL, NULL, NULL);
    const gboolean usable = pool && GST_IS_CUDA_BUFFER_POOL(pool) &&
                            G_OBJECT_TYPE(pool) != GST_TYPE_CUDA_BUFFER_POOL &&
                            GST_CUDA_BUFFER_POOL(pool)->context == context->cuda;
    if (!usable) {
      GST_DEBUG_OBJECT(context->element,
                       "not using downstream's pool %" GST_PTR_FORMAT
                       ": not one for gray CUDA memory of our context",
                       pool);
      gst_query_remove_nth_allocation_pool(query, i);
    }
    gst_clear_object(&pool);
  }
  if (gst_query_get_n_allocation_pools(query) > 0) {
    GST_DEBUG_OBJECT(context->element, "writing into downstream's CUDA pool");
    return TRUE;
  }
  GstCaps *caps = NULL;
  GstVideoInfo info;
  gst_query_parse_allocation(query, &caps, NULL);
  if (!caps || !gst_video_info_from_caps(&info, caps)) {
    *why = "the allocation query has no video caps";
    return FALSE;
  }
  GstBufferPool *pool = device_pool_new(context);
  if (!pool) {
    *why = "GStreamer's CUDA allocator is not registered";
    return FALSE;
  }
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, info.size, min_buffers, 0);
  gst_cuda_gray_pool_config_set_stream(config, context->stream);
  const gboolean configured = add_configured_pool(query, pool, config, min_buffers);
  if (configured) {
    GST_DEBUG_OBJECT(context->element, "writing into our CUDA pool");
  } else {
    *why = "no " + std::to_string(info.width) + "x" + std::to_string(info.height) + " " +
           GST_VIDEO_INFO_NAME(&info) + " frame could be allocated in CUDA memory";
  }
  gst_object_unref(pool);
  return configured;
}

/* A batch's bytes as gray rows of this many bytes: the driver's pitch for
 * such a row is the row itself (a multiple of every pitch alignment), so
 * that the rows are one contiguous run, which gst_cuda_gray_batch_memory
 * checks. */
#define BATCH_ROW_BYTES 512

GstBufferPool *gst_cuda_gray_batch_pool_new(GstCudaGrayContext *context, gsize bytes,
                                            guint min_buffers, std::string *why) {
  if (!context->cuda) {
    *why = "no CUDA context is open";
    return NULL;
  }
  const gsize rows = (bytes + BATCH_ROW_BYTES - 1) / BATCH_ROW_BYTES;
  if (rows > G_MAXINT) {
    *why = "a batch of " + std::to_string(bytes) + " bytes is too large for CUDA memory";
    return NULL;
  }
  GstBufferPool *pool = device_pool_new(context);
  if (!pool) {
    *why = "GStreamer's CUDA allocator is not registered";
    return NULL;
  }
  reinterpret_cast<GstCudaGrayDevicePool *>(pool)->video_meta = FALSE;
  GstCaps *caps =
      gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "GRAY8", "width", G_TYPE_INT,
                          BATCH_ROW_BYTES, "height", G_TYPE_INT, (gint)rows, NULL);
  gst_caps_set_features_simple(caps,
                               gst_caps_features_new(GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, rows * BATCH_ROW_BYTES, min_buffers, 0);
  gst_cuda_gray_pool_config_set_stream(config, context->stream);
  gst_caps_unref(caps);
  if (!gst_buffer_pool_set_config(pool, config) || !gst_buffer_pool_set_active(pool, TRUE)) {
    *why = "no batch of " + std::to_string(bytes) + " bytes could be allocated in CUDA memory";
    gst_object_unref(pool);
    return NULL;
  }
  return pool;
}

gboolean gst_cuda_gray_batch_memory(GstBuffer *buffer, gsize bytes, GstMapInfo *map,
                                    std::string *why) {
  GstMemory *mem = gst_buffer_n_memory(buffer) == 1 ? gst_buffer_peek_memory(buffer, 0) : NULL;
  if (!mem || !gst_is_cuda_memory(mem) || mem->size < bytes ||
      GST_VIDEO_INFO_PLANE_STRIDE(&GST_CUDA_MEMORY_CAST(mem)->info, 0) != BATCH_ROW_BYTES) {
    *why =
        "the batch buffer is not one contiguous CUDA memory of " + std::to_string(bytes) + " bytes";
    return FALSE;
  }
  if (!gst_memory_map(mem, map, (GstMapFlags)(GST_MAP_WRITE | GST_MAP_CUDA))) {
    *why = "the batch's CUDA memory cannot be mapped for writing";
    return FALSE;
  }
  return TRUE;
}
