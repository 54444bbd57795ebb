/* CUDA memory through gstreamer-cuda-1.0: version safety, the producer's
 * stream, and the pool offered upstream; all its version checks are here. */
#include "cudamemory.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#if GST_CHECK_VERSION(1, 24, 0)
#include <gst/cuda/gstcudastream.h>
#endif
#endif

/* the element's category: GStreamer returns the existing one by name */
GST_DEBUG_CATEGORY_STATIC (gst_cuda_gray_memory_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_memory_debug

static void
ensure_debug_category (void)
{
  static gsize done = 0;
  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (gst_cuda_gray_memory_debug, "cudagray", 0,
        "CUDA grayscale converter");
    g_once_init_leave (&done, 1);
  }
}

gint
cudagray_gst_cuda_minor_from_library (const gchar * path)
{
  /* libgstcuda-1.0.so.0.MMmm.0: GStreamer's libtool version encodes
   * minor * 100 + micro */
  static const char prefix[] = "libgstcuda-1.0.so.0.";
  const gchar *base = path ? strrchr (path, '/') : NULL;
  base = base ? base + 1 : path;
  if (!base || strncmp (base, prefix, sizeof prefix - 1) != 0)
    return -1;
  char *end = NULL;
  const long encoded = strtol (base + sizeof prefix - 1, &end, 10);
  if (end == base + sizeof prefix - 1 || (*end != '.' && *end != '\0')
      || encoded < 0 || encoded > INT_MAX)
    return -1;
  return (gint) (encoded / 100);
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
/* The running libgstcuda's minor version: from its file name when it carries
 * one, else from GStreamer core (distributions ship both from one release). */
static gint
running_gst_cuda_minor (std::string * source)
{
  Dl_info info;
  if (dladdr ((void *) gst_is_cuda_memory, &info) && info.dli_fname) {
    char *real = realpath (info.dli_fname, NULL);
    const gint minor = cudagray_gst_cuda_minor_from_library (real);
    *source = real ? real : info.dli_fname;
    free (real);
    if (minor >= 0)
      return minor;
  }
  guint major, minor, micro, nano;
  gst_version (&major, &minor, &micro, &nano);
  *source += " (no version in its name; GStreamer core's taken)";
  return (gint) minor;
}
#endif

gboolean
cudagray_cuda_memory_usable (std::string * why)
{
#ifdef CUDAGRAY_HAVE_GST_CUDA
  static gsize decided = 0;
  static std::string *reason;
  ensure_debug_category ();
  if (g_once_init_enter (&decided)) {
    reason = new std::string ();
    std::string library;
    const gint running = running_gst_cuda_minor (&library);
    if (running != CUDAGRAY_GST_CUDA_BUILT_MINOR)
      *reason = "built against gstreamer-cuda 1."
          G_STRINGIFY (CUDAGRAY_GST_CUDA_BUILT_MINOR)
          ", running with 1." + std::to_string (running) + " (" + library +
          "); its CUDA memory ABI differs between minor versions: rebuild "
          "cudagray against this GStreamer";
    GST_INFO ("CUDA memory %s%s",
        reason->empty ()? "usable" : "not offered: ", reason->c_str ());
    g_once_init_leave (&decided, 1);
  }
  *why = *reason;
  return reason->empty ();
#else
  *why = "cudagray was built without gstreamer-cuda-1.0";
  return FALSE;
#endif
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
gpointer
cudagray_pending_writer_stream (GstBuffer * buffer)
{
#if GST_CHECK_VERSION(1, 24, 0)
  GstCudaStream *first = NULL;
  ensure_debug_category ();
  for (guint i = 0; i < gst_buffer_n_memory (buffer); i++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, i);
    if (!gst_is_cuda_memory (mem)
        || !GST_MEMORY_FLAG_IS_SET (mem, GST_CUDA_MEMORY_TRANSFER_NEED_SYNC))
      continue;
    GstCudaStream *stream = gst_cuda_memory_get_stream (GST_CUDA_MEMORY_CAST
        (mem));
    if (!stream || stream == first)
      continue;
    if (!first) {
      first = stream;
    } else {
      GST_LOG ("memory %u written on a second CUDA stream: waiting for it", i);
      gst_cuda_memory_sync (GST_CUDA_MEMORY_CAST (mem));
    }
  }
  return first ? (gpointer) gst_cuda_stream_get_handle (first) : NULL;
#else
  /* before 1.24, producers finish their work before pushing */
  return NULL;
#endif
}

struct _CudaGrayStream
{
#if GST_CHECK_VERSION(1, 24, 0)
  GstCudaStream *stream;
#endif
};

CudaGrayStream *
cudagray_stream_new (GstCudaContext * context)
{
  CudaGrayStream *self = g_new0 (CudaGrayStream, 1);
  ensure_debug_category ();
#if GST_CHECK_VERSION(1, 24, 0)
  self->stream = gst_cuda_stream_new (context);
  if (!self->stream)
    GST_WARNING ("no CUDA stream of our own: upstream keeps its own");
#endif
  return self;
}

void
cudagray_stream_free (CudaGrayStream * self)
{
  if (!self)
    return;
#if GST_CHECK_VERSION(1, 24, 0)
  gst_clear_cuda_stream (&self->stream);
#endif
  g_free (self);
}

void
cudagray_add_cuda_pool (GstQuery * query, GstCudaContext * context,
    CudaGrayStream * stream, GstCaps * caps, guint min_buffers)
{
#if GST_CHECK_VERSION(1, 24, 0)
  GstVideoInfo info;
  if (!stream || !stream->stream || !caps
      || !gst_video_info_from_caps (&info, caps))
    return;
  GstBufferPool *pool = gst_cuda_buffer_pool_new (context);
  GstStructure *config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, info.size, min_buffers, 0);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  gst_buffer_pool_config_set_cuda_stream (config, stream->stream);
  if (gst_buffer_pool_set_config (pool, config)) {
    /* a CUDA pool may round the size up to its pitch */
    config = gst_buffer_pool_get_config (pool);
    guint size = info.size;
    gst_buffer_pool_config_get_params (config, NULL, &size, NULL, NULL);
    gst_structure_free (config);
    gst_query_add_allocation_pool (query, pool, size, min_buffers, 0);
    GST_DEBUG ("offering a CUDA pool on our stream for %" GST_PTR_FORMAT, caps);
  }
  gst_object_unref (pool);
#endif
}
#endif
