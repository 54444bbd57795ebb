/* CUDA memory through GStreamer's CUDA library (gstreamer-cuda-1.0): whether
 * it may be used, which stream wrote an input, and the pool offered upstream.
 * Every gstreamer-cuda version check lives in cudamemory.cpp. */
#pragma once

#include <gst/gst.h>

#include <string>

#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#endif

G_BEGIN_DECLS

/* Whether memory:CUDAMemory may be offered: the plugin was built with
 * gstreamer-cuda-1.0, and the libgstcuda running now is the minor version it
 * was built against (its allocator ABI changed in 1.24 under the same
 * soname). Otherwise *why says what is missing; decided once per process. */
gboolean cudagray_cuda_memory_usable (std::string * why);

/* The GStreamer minor version in a libgstcuda file name such as
 * "libgstcuda-1.0.so.0.2602.0" (26), or -1 when the name does not carry one. */
gint cudagray_gst_cuda_minor_from_library (const gchar * path);

#ifdef CUDAGRAY_HAVE_GST_CUDA
/* The CUDA stream (a cudaStream_t) whose queued work still writes the CUDA
 * memory of buffer (GStreamer 1.24+ producers leave it pending and flag it),
 * or NULL when the memory is ready. The reader orders its reads after that
 * stream's work; further streams of a buffer of several memories are waited
 * for here. */
gpointer cudagray_pending_writer_stream (GstBuffer * buffer);

/* Per element: a CUDA stream of its own, for upstream to write into the pool
 * offered by cudagray_add_cuda_pool (GStreamer 1.24+; nothing before). */
typedef struct _CudaGrayStream CudaGrayStream;
CudaGrayStream *cudagray_stream_new (GstCudaContext * context);
void cudagray_stream_free (CudaGrayStream * stream);

/* Offers upstream a GstCudaBufferPool in context for caps whose memory
 * carries stream (1.24+), so that a producer adopting it writes on it and
 * need not wait for its work before pushing. */
void cudagray_add_cuda_pool (GstQuery * query, GstCudaContext * context,
    CudaGrayStream * stream, GstCaps * caps, guint min_buffers);
#endif

G_END_DECLS
