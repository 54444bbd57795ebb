// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's CUDA context without gstreamer-cuda-1.0: the device's
 * primary context, and no CUDA memory (no caps for it, no pools, no
 * streams). Built instead of gstcudagraycontext.cpp, gstcudagraypools.cpp
 * and gstcudagraystreams.cpp. */
#include "cudagray/device.h"
#include "gstcudagraycontext.h"
#include "gstcudagraypools.h"

struct _GstCudaGrayContext {
  gint device = -1; /* the device whose primary context is open */
};

gboolean gst_cuda_gray_cuda_memory_usable(std::string *why) {
  *why = "cudagray was built without gstreamer-cuda-1.0";
  return FALSE;
}

GstCudaGrayContext *gst_cuda_gray_context_new(GstElement *) { return new GstCudaGrayContext(); }

void gst_cuda_gray_context_free(GstCudaGrayContext *context) { delete context; }

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

gboolean gst_cuda_gray_context_writes_on_device(GstCudaGrayContext *, GstBuffer *,
                                                GstMapFlags *flags) {
  *flags = GST_MAP_WRITE;
  return FALSE;
}

gpointer gst_cuda_gray_pending_writer_stream(GstBuffer *) { return NULL; }

gpointer gst_cuda_gray_output_stream(GstBuffer *) { return NULL; }

void gst_cuda_gray_mark_output_pending(GstBuffer *) {}

void gst_cuda_gray_offer_input_pool(GstCudaGrayContext *, GstQuery *, GstCaps *, guint) {}

gboolean gst_cuda_gray_decide_output_pool(GstCudaGrayContext *, GstQuery *, guint,
                                          std::string *why) {
  *why = "cudagray was built without gstreamer-cuda-1.0";
  return FALSE;
}

GstBufferPool *gst_cuda_gray_batch_pool_new(GstCudaGrayContext *, gsize, guint, std::string *why) {
  *why = "cudagray was built without gstreamer-cuda-1.0";
  return NULL;
}

gboolean gst_cuda_gray_batch_memory(GstBuffer *, gsize, GstMapInfo *, std::string *why) {
  *why = "cudagray was built without gstreamer-cuda-1.0";
  return FALSE;
}
