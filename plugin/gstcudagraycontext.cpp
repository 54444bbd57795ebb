// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's CUDA context with gstreamer-cuda-1.0: a GstCudaContext
 * shared with the pipeline, and which CUDA memory is its own. Built only
 * with gstreamer-cuda-1.0 (gstcudagrayprimarycontext.cpp stands in
 * without it). */
#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#include <gst/video/video.h>

#include "cudagray/device.h"
#include "gstcudagraycontext.h"
#include "gstcudagraycontextprivate.h"

GST_DEBUG_CATEGORY(gst_cuda_gray_context_debug);
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

gboolean gst_cuda_gray_cuda_memory_usable(std::string *why) {
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
}

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

void gst_cuda_gray_context_set(GstCudaGrayContext *context, GstContext *gst_context,
                               gint device_id) {
  gst_cuda_handle_set_context(context->element, gst_context, device_id, &context->cuda);
}

gboolean gst_cuda_gray_context_query(GstCudaGrayContext *context, GstQuery *query) {
  return GST_QUERY_TYPE(query) == GST_QUERY_CONTEXT &&
         gst_cuda_handle_context_query(context->element, query, context->cuda);
}

/* GStreamer 1.22 loads libcuda's symbols without a lock: a thread that
 * loads while another already has (and goes on to call them) sets each one to
 * NULL for a moment, and a call then aborts (seen in CuDeviceGet with eight
 * elements starting in eight threads). cudagray's elements load it once, the
 * others waiting for that. */
static gboolean load_cuda_library() {
  static const gboolean loaded = gst_cuda_load_library();
  return loaded;
}

gboolean gst_cuda_gray_context_open(GstCudaGrayContext *context, gint device_id, std::string *why) {
  if (!cudagray::cuda_device_exists(device_id, why)) return FALSE;
  if (!load_cuda_library()) {
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
  /* a resource change: cudagray/device.h says why */
  cudagray::change_cuda_resources(
      [context] { context->stream = gst_cuda_gray_stream_new(context->cuda); });
  if (!context->stream)
    GST_INFO_OBJECT(context->element, "no CUDA stream of our own (before 1.24 there are none)");
  GST_INFO_OBJECT(context->element,
                  "converting in the CUDA context %" GST_PTR_FORMAT " of device %u", context->cuda,
                  device);
  return TRUE;
}

void gst_cuda_gray_context_close(GstCudaGrayContext *context) {
  cudagray::change_cuda_resources([context] {
    gst_cuda_gray_stream_clear(&context->stream);
    context->parking.reset();
  });
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
