// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's CUDA context (a shared GstCudaContext, or a device's primary
 * context without gstreamer-cuda-1.0) and CUDA memory input: every #ifdef on
 * gstreamer-cuda-1.0 and every version check of it is here. */
#include "gstcudagraycontext.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <gst/video/video.h>

#include "cudagray/device.h"

#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#if GST_CHECK_VERSION(1, 24, 0)
#include <gst/cuda/gstcudastream.h>
#endif
#endif

/* the element's category: GStreamer returns the existing one by name */
GST_DEBUG_CATEGORY_STATIC(gst_cuda_gray_context_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_context_debug

static void ensure_debug_category(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    GST_DEBUG_CATEGORY_INIT(gst_cuda_gray_context_debug, "cudagray", 0, "CUDA grayscale converter");
    g_once_init_leave(&done, 1);
  }
}

gint gst_cuda_gray_gst_cuda_minor_from_library(const gchar *path) {
  /* libgstcuda-1.0.so.0.MMmm.0: GStreamer's libtool version encodes
   * minor * 100 + micro */
  static const char prefix[] = "libgstcuda-1.0.so.0.";
  const gchar *base = path ? strrchr(path, '/') : NULL;
  base = base ? base + 1 : path;
  if (!base || strncmp(base, prefix, sizeof prefix - 1) != 0) return -1;
  char *end = NULL;
  const long encoded = strtol(base + sizeof prefix - 1, &end, 10);
  if (end == base + sizeof prefix - 1 || (*end != '.' && *end != '\0') || encoded < 0 ||
      encoded > INT_MAX)
    return -1;
  return (gint)(encoded / 100);
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
/* The running libgstcuda's minor version: from its file name when it carries
 * one, else from GStreamer core (distributions ship both from one release). */
static gint running_gst_cuda_minor(std::string *source) {
  Dl_info info;
  if (dladdr((void *)gst_is_cuda_memory, &info) && info.dli_fname) {
    char *real = realpath(info.dli_fname, NULL);
    const gint minor = gst_cuda_gray_gst_cuda_minor_from_library(real);
    *source = real ? real : info.dli_fname;
    free(real);
    if (minor >= 0) return minor;
  }
  guint major, minor, micro, nano;
  gst_version(&major, &minor, &micro, &nano);
  *source += " (no version in its name; GStreamer core's taken)";
  return (gint)minor;
}
#endif

gboolean gst_cuda_gray_cuda_memory_usable(std::string *why) {
#ifdef CUDAGRAY_HAVE_GST_CUDA
  static gsize decided = 0;
  static std::string *reason;
  ensure_debug_category();
  if (g_once_init_enter(&decided)) {
    reason = new std::string();
    std::string library;
    const gint running = running_gst_cuda_minor(&library);
    if (running != CUDAGRAY_GST_CUDA_BUILT_MINOR)
      *reason = "built against gstreamer-cuda 1." G_STRINGIFY(
                    CUDAGRAY_GST_CUDA_BUILT_MINOR) ", running with 1." +
                std::to_string(running) + " (" + library +
                "); its CUDA memory ABI differs between minor versions: rebuild "
                "cudagray against this GStreamer";
    /* this decides the caps only; whether a GPU is there is known at start */
    if (reason->empty())
      GST_INFO(
          "CUDA memory caps offered: the running gstreamer-cuda (%s) is the 1.%d built "
          "against",
          library.c_str(), running);
    else
      GST_INFO("CUDA memory caps not offered: %s", reason->c_str());
    g_once_init_leave(&decided, 1);
  }
  *why = *reason;
  return reason->empty();
#else
  *why = "cudagray was built without gstreamer-cuda-1.0";
  return FALSE;
#endif
}

struct _GstCudaGrayContext {
  GstElement *element;
  gint device = -1; /* the device of the open context */
#ifdef CUDAGRAY_HAVE_GST_CUDA
  GstCudaContext *cuda = nullptr;
#if GST_CHECK_VERSION(1, 24, 0)
  /* the stream of the CUDA pool offered upstream */
  GstCudaStream *stream = nullptr;
#endif
#endif
};

GstCudaGrayContext *gst_cuda_gray_context_new(GstElement *element) {
  ensure_debug_category();
  GstCudaGrayContext *context = new GstCudaGrayContext();
  context->element = element;
  return context;
}

void gst_cuda_gray_context_free(GstCudaGrayContext *context) {
  gst_cuda_gray_context_close(context);
  delete context;
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
void gst_cuda_gray_context_set(GstCudaGrayContext *context, GstContext *gst_context,
                               gint device_id) {
  gst_cuda_handle_set_context(context->element, gst_context, device_id, &context->cuda);
}

gboolean gst_cuda_gray_context_query(GstCudaGrayContext *context, GstQuery *query) {
  return GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT &&
         gst_cuda_handle_context_query(context->element, query, context->cuda);
}

gboolean gst_cuda_gray_context_open(GstCudaGrayContext *context, gint device_id, std::string *why) {
  if (!cudagray::cuda_device_exists(device_id, why)) return FALSE;
  if (!gst_cuda_load_library()) {
    *why = "GStreamer could not load the CUDA driver library (libcuda.so.1)";
    return FALSE;
  }
  /* a context the application set before now is kept; else found or made */
  if (!gst_cuda_ensure_element_context(context->element, device_id, &context->cuda)) {
    *why = "no CUDA context could be made on device " + std::to_string(device_id) +
           " (GST_DEBUG=GST_CONTEXT:5 says why)";
    return FALSE;
  }
  guint device = 0;
  g_object_get(context->cuda, "cuda-device-id", &device, NULL);
  context->device = device;
#if GST_CHECK_VERSION(1, 24, 0)
  {
    const cudagray::CudaResourceChange change; /* device.h says why */
    context->stream = gst_cuda_stream_new(context->cuda);
  }
  if (!context->stream)
    GST_WARNING_OBJECT(context->element,
                       "no CUDA stream of our own: "
                       "upstream keeps its own");
#endif
  GST_INFO_OBJECT(context->element,
                  "converting in the CUDA context %" GST_PTR_FORMAT " of device %u", context->cuda,
                  device);
  return TRUE;
}

void gst_cuda_gray_context_close(GstCudaGrayContext *context) {
#if GST_CHECK_VERSION(1, 24, 0)
  {
    const cudagray::CudaResourceChange change;
    gst_clear_cuda_stream(&context->stream);
  }
#endif
  gst_clear_object(&context->cuda);
  context->device = -1;
}

cudagray::CudaContextSwitch gst_cuda_gray_context_switch(GstCudaGrayContext *context) {
  if (!context->cuda) return {};
  std::shared_ptr<GstCudaContext> cuda(static_cast<GstCudaContext *>(gst_object_ref(context->cuda)),
                                       [](GstCudaContext *c) { gst_object_unref(c); });
  return {[cuda] { return gst_cuda_context_push(cuda.get()) != FALSE; },
          [] { gst_cuda_context_pop(NULL); }};
}

gboolean gst_cuda_gray_context_reads_on_device(GstCudaGrayContext *context, GstBuffer *buffer,
                                               GstMapFlags *flags, std::string *mismatch) {
  *flags = GST_MAP_READ;
  if (!context->cuda || gst_buffer_n_memory(buffer) == 0) return FALSE;
  for (guint i = 0; i < gst_buffer_n_memory(buffer); i++) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, i);
    if (!gst_is_cuda_memory(mem)) return FALSE;
    GstCudaContext *theirs = GST_CUDA_MEMORY_CAST(mem)->context;
    if (theirs == context->cuda) continue;
    guint their_device = 0;
    g_object_get(theirs, "cuda-device-id", &their_device, NULL);
    if (their_device != (guint)context->device)
      *mismatch = "cuda-device-id=" + std::to_string(context->device) +
                  ", but the pipeline's CUDA memory is on device " + std::to_string(their_device);
    GST_DEBUG_OBJECT(context->element,
                     "input in another CUDA context: "
                     "read through a host mapping");
    return FALSE;
  }
  *flags = (GstMapFlags)(GST_MAP_READ | GST_MAP_CUDA);
  return TRUE;
}

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

gpointer gst_cuda_gray_pending_writer_stream(GstBuffer *buffer) {
#if GST_CHECK_VERSION(1, 24, 0)
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
#else
  /* before 1.24, producers finish their work before pushing */
  return NULL;
#endif
}

#if GST_CHECK_VERSION(1, 24, 0)
/* The CUDA pool offered upstream: GStreamer's own, with each step that
 * allocates or frees CUDA memory (configuring, starting, stopping, a new
 * buffer) inside a CudaResourceChange, as the element's own allocations
 * are: upstream fills it from threads that also run cudagray, and without
 * the change its allocations waited for the context's lock for as long as
 * other pipelines streamed (1.26, 32 pipelines started together). */
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

static gboolean offered_pool_set_config(GstBufferPool *pool, GstStructure *config) {
  const cudagray::CudaResourceChange change;
  return cuda_pool_class()->set_config(pool, config);
}

static gboolean offered_pool_start(GstBufferPool *pool) {
  const cudagray::CudaResourceChange change;
  return cuda_pool_class()->start(pool);
}

static gboolean offered_pool_stop(GstBufferPool *pool) {
  const cudagray::CudaResourceChange change;
  return cuda_pool_class()->stop(pool);
}

static GstFlowReturn offered_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                               GstBufferPoolAcquireParams *params) {
  const cudagray::CudaResourceChange change;
  return cuda_pool_class()->alloc_buffer(pool, buffer, params);
}

static void gst_cuda_gray_offered_pool_class_init(GstCudaGrayOfferedPoolClass *klass) {
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS(klass);
  pool_class->set_config = offered_pool_set_config;
  pool_class->start = offered_pool_start;
  pool_class->stop = offered_pool_stop;
  pool_class->alloc_buffer = offered_pool_alloc_buffer;
}

static void gst_cuda_gray_offered_pool_init(GstCudaGrayOfferedPool *) {}
#endif

void gst_cuda_gray_context_add_cuda_pool(GstCudaGrayContext *context, GstQuery *query,
                                         GstCaps *caps, guint min_buffers) {
#if GST_CHECK_VERSION(1, 24, 0)
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
  gst_buffer_pool_config_set_cuda_stream(config, context->stream);
  if (add_configured_pool(query, pool, config, min_buffers))
    GST_DEBUG_OBJECT(context->element, "offering a CUDA pool on our stream for %" GST_PTR_FORMAT,
                     caps);
  gst_object_unref(pool);
#endif
}

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
  GstAllocator *allocator; /* GStreamer's CUDA allocator */
  GstVideoInfo gray;       /* what the buffers hold */
  GstVideoInfo standin;    /* what the allocator is asked for */
#if GST_CHECK_VERSION(1, 24, 0)
  GstCudaStream *stream; /* from the config: the memories carry it */
#endif
} GstCudaGrayDevicePool;

typedef struct {
  GstCudaBufferPoolClass parent_class;
} GstCudaGrayDevicePoolClass;

G_DEFINE_TYPE(GstCudaGrayDevicePool, gst_cuda_gray_device_pool, GST_TYPE_CUDA_BUFFER_POOL);

static GstBufferPoolClass *base_pool_class(void) {
  return GST_BUFFER_POOL_CLASS(g_type_class_peek(GST_TYPE_BUFFER_POOL));
}

/* Allocating and freeing CUDA memory wait for the driver's context lock:
 * inside a CudaResourceChange, so that cudagray's streaming elsewhere in the
 * process lets them have it. */
static GstMemory *device_pool_alloc_memory(GstCudaGrayDevicePool *self) {
  GstCudaContext *context = self->parent.context;
  const cudagray::CudaResourceChange change;
#if GST_CHECK_VERSION(1, 24, 0)
  return gst_cuda_allocator_alloc(GST_CUDA_ALLOCATOR(self->allocator), context, self->stream,
                                  &self->standin);
#else
  return gst_cuda_allocator_alloc(GST_CUDA_ALLOCATOR(self->allocator), context, &self->standin);
#endif
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
#if GST_CHECK_VERSION(1, 24, 0)
  gst_clear_cuda_stream(&self->stream);
  self->stream = gst_buffer_pool_config_get_cuda_stream(config);
#endif
  /* one allocation tells the size at the pitch the driver picks */
  GstMemory *probe = device_pool_alloc_memory(self);
  if (!probe) {
    GST_WARNING_OBJECT(pool, "cannot allocate a %dx%d %s frame in CUDA memory",
                       GST_VIDEO_INFO_WIDTH(&gray), GST_VIDEO_INFO_HEIGHT(&gray),
                       GST_VIDEO_INFO_NAME(&gray));
    return FALSE;
  }
  gst_buffer_pool_config_set_params(config, caps, probe->size, min_buffers, max_buffers);
  {
    const cudagray::CudaResourceChange change;
    gst_memory_unref(probe);
  }
  return base_pool_class()->set_config(pool, config);
}

/* GstCudaBufferPool's start (1.24+) activates an allocator of its own, which
 * this pool does not use */
static gboolean device_pool_start(GstBufferPool *pool) { return base_pool_class()->start(pool); }

static GstFlowReturn device_pool_alloc_buffer(GstBufferPool *pool, GstBuffer **buffer,
                                              GstBufferPoolAcquireParams *params) {
  auto *self = reinterpret_cast<GstCudaGrayDevicePool *>(pool);
  GstMemory *mem = device_pool_alloc_memory(self);
  if (!mem) {
    GST_WARNING_OBJECT(pool, "cannot allocate CUDA memory");
    return GST_FLOW_ERROR;
  }
  gsize offset[GST_VIDEO_MAX_PLANES] = {0};
  gint stride[GST_VIDEO_MAX_PLANES] = {
      GST_VIDEO_INFO_PLANE_STRIDE(&GST_CUDA_MEMORY_CAST(mem)->info, 0)};
  *buffer = gst_buffer_new();
  gst_buffer_append_memory(*buffer, mem);
  gst_buffer_add_video_meta_full(
      *buffer, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&self->gray),
      GST_VIDEO_INFO_WIDTH(&self->gray), GST_VIDEO_INFO_HEIGHT(&self->gray), 1, offset, stride);
  return GST_FLOW_OK;
}

static void device_pool_free_buffer(GstBufferPool *pool, GstBuffer *buffer) {
  const cudagray::CudaResourceChange change;
  base_pool_class()->free_buffer(pool, buffer);
}

static void gst_cuda_gray_device_pool_dispose(GObject *object) {
  auto *self = reinterpret_cast<GstCudaGrayDevicePool *>(object);
  gst_clear_object(&self->allocator);
#if GST_CHECK_VERSION(1, 24, 0)
  gst_clear_cuda_stream(&self->stream);
#endif
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
  gst_video_info_init(&self->gray);
  gst_video_info_init(&self->standin);
}

static GstBufferPool *device_pool_new(GstCudaContext *cuda_context) {
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
  return GST_BUFFER_POOL(self);
}

gboolean gst_cuda_gray_context_decide_output_pool(GstCudaGrayContext *context, GstQuery *query,
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
  GstBufferPool *pool = device_pool_new(context->cuda);
  if (!pool) {
    *why = "GStreamer's CUDA allocator is not registered";
    return FALSE;
  }
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, caps, info.size, min_buffers, 0);
#if GST_CHECK_VERSION(1, 24, 0)
  if (context->stream) gst_buffer_pool_config_set_cuda_stream(config, context->stream);
#endif
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

gboolean gst_cuda_gray_context_writes_on_device(GstCudaGrayContext *context, GstBuffer *buffer,
                                                GstMapFlags *flags) {
  *flags = GST_MAP_WRITE;
  GstMemory *mem = gst_buffer_n_memory(buffer) == 1 ? gst_buffer_peek_memory(buffer, 0) : NULL;
  if (!context->cuda || !mem || !gst_is_cuda_memory(mem) ||
      GST_CUDA_MEMORY_CAST(mem)->context != context->cuda)
    return FALSE;
  *flags = (GstMapFlags)(GST_MAP_WRITE | GST_MAP_CUDA);
  return TRUE;
}

gpointer gst_cuda_gray_output_stream(GstBuffer *buffer) {
#if GST_CHECK_VERSION(1, 24, 0)
  GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
  if (gst_buffer_n_memory(buffer) != 1 || !gst_is_cuda_memory(mem)) return NULL;
  GstCudaStream *stream = gst_cuda_memory_get_stream(GST_CUDA_MEMORY_CAST(mem));
  return stream ? (gpointer)gst_cuda_stream_get_handle(stream) : NULL;
#else
  return NULL;
#endif
}

void gst_cuda_gray_mark_output_pending(GstBuffer *buffer) {
#if GST_CHECK_VERSION(1, 24, 0)
  GST_MINI_OBJECT_FLAG_SET(gst_buffer_peek_memory(buffer, 0), GST_CUDA_MEMORY_TRANSFER_NEED_SYNC);
#endif
}

#else /* without gstreamer-cuda-1.0: the device's primary context */

void gst_cuda_gray_context_set(GstCudaGrayContext *, GstContext *, gint) {}

gboolean gst_cuda_gray_context_query(GstCudaGrayContext *, GstQuery *) { return FALSE; }

gboolean gst_cuda_gray_context_open(GstCudaGrayContext *context, gint device_id, std::string *why) {
  context->device = cudagray::open_cuda_device(device_id, why);
  return context->device >= 0;
}

void gst_cuda_gray_context_close(GstCudaGrayContext *context) { context->device = -1; }

/* the primary context is current on the thread that opened it: make it so
 * on the calling one too (cudaSetDevice; nothing to undo) */
cudagray::CudaContextSwitch gst_cuda_gray_context_switch(GstCudaGrayContext *context) {
  if (context->device < 0) return {};
  const gint device = context->device;
  return {[device] {
            std::string ignored;
            cudagray::open_cuda_device(device, &ignored);
            return false;
          },
          nullptr};
}

gboolean gst_cuda_gray_context_reads_on_device(GstCudaGrayContext *, GstBuffer *,
                                               GstMapFlags *flags, std::string *) {
  *flags = GST_MAP_READ;
  return FALSE;
}

gpointer gst_cuda_gray_pending_writer_stream(GstBuffer *) { return NULL; }

void gst_cuda_gray_context_add_cuda_pool(GstCudaGrayContext *, GstQuery *, GstCaps *, guint) {}
gboolean gst_cuda_gray_context_decide_output_pool(GstCudaGrayContext *, GstQuery *, guint,
                                                  std::string *why) {
  *why = "cudagray was built without gstreamer-cuda-1.0";
  return FALSE;
}

gboolean gst_cuda_gray_context_writes_on_device(GstCudaGrayContext *, GstBuffer *,
                                                GstMapFlags *flags) {
  *flags = GST_MAP_WRITE;
  return FALSE;
}

gpointer gst_cuda_gray_output_stream(GstBuffer *) { return NULL; }

void gst_cuda_gray_mark_output_pending(GstBuffer *) {}
#endif
