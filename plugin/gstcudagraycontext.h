// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's CUDA context and which CUDA memory is its own. With
 * gstreamer-cuda-1.0 a GstCudaContext shared with the pipeline
 * (gstcudagraycontext.cpp; the CUDA streams of 1.24+ in
 * gstcudagraystreams.cpp), without it a device's primary context and no CUDA
 * memory (gstcudagrayprimarycontext.cpp): meson.build picks the files, so
 * that no source is split by #ifdef. */
#pragma once

#include <gst/gst.h>

#include <string>

#include "cudagray/device.h"

/* The caps feature of frames in GPU memory (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY). */
#define GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY "memory:CUDAMemory"

/* Whether memory:CUDAMemory may be offered: the plugin was built with
 * gstreamer-cuda-1.0, and the libgstcuda running now is the minor version it
 * was built against (its allocator ABI changed in 1.24 under the same
 * soname). Otherwise *why says what is missing; decided once per process. */
gboolean gst_cuda_gray_cuda_memory_usable(std::string *why);

/* The GStreamer minor version in a libgstcuda file name such as
 * "libgstcuda-1.0.so.0.2602.0" (26), or -1 when the name does not carry one
 * (built with gstreamer-cuda-1.0 only). */
gint gst_cuda_gray_gst_cuda_minor_from_library(const gchar *path);

/* One per element, for its lifetime; opened at start, closed at stop. */
typedef struct _GstCudaGrayContext GstCudaGrayContext;

GstCudaGrayContext *gst_cuda_gray_context_new(GstElement *element);
void gst_cuda_gray_context_free(GstCudaGrayContext *context);

/* A context handed down by the application or a neighbour (set_context);
 * kept when it is on device_id (or device_id < 0). */
void gst_cuda_gray_context_set(GstCudaGrayContext *context, GstContext *gst_context,
                               gint device_id);
/* Answers a neighbour's context query with ours, when open. */
gboolean gst_cuda_gray_context_query(GstCudaGrayContext *context, GstQuery *query);

/* Takes the CUDA context to convert in on device_id (< 0: any): one set by
 * the application or shared by a neighbour, else a new one that is then
 * shared. FALSE with why when there is none. */
gboolean gst_cuda_gray_context_open(GstCudaGrayContext *context, gint device_id, std::string *why);
void gst_cuda_gray_context_close(GstCudaGrayContext *context);
/* How the backend and the pinned allocator make the open context current
 * around their work, on any thread: GstCudaContext push and pop (the switch
 * holds a reference to it), or without gstreamer-cuda-1.0 the device's
 * primary context made current. Empty when the context is not open. */
cudagray::CudaContextSwitch gst_cuda_gray_context_switch(GstCudaGrayContext *context);

/* Whether the kernel can read buffer where it is: CUDA memory of the
 * element's context. CUDA memory of another context on the same device is
 * read through a host mapping (a debug line says so); on another device
 * *mismatch says so, an error. Also sets the flags to map it with. */
gboolean gst_cuda_gray_context_reads_on_device(GstCudaGrayContext *context, GstBuffer *buffer,
                                               GstMapFlags *flags, std::string *mismatch);

/* The CUDA stream (a cudaStream_t) whose queued work still writes the CUDA
 * memory of buffer (GStreamer 1.24+ producers leave it pending and flag it),
 * or NULL when the memory is ready. The reader orders its reads after that
 * stream's work; further streams of a buffer of several memories are waited
 * for here. */
gpointer gst_cuda_gray_pending_writer_stream(GstBuffer *buffer);

/* Whether the kernel can write buffer where it is: one CUDA memory of the
 * element's context. Also sets the flags to map it with. */
gboolean gst_cuda_gray_context_writes_on_device(GstCudaGrayContext *context, GstBuffer *buffer,
                                                GstMapFlags *flags);

/* The CUDA stream (a cudaStream_t) that the CUDA memory of an output buffer
 * carries (1.24+): it is made to wait for the conversion on the GPU, and the
 * buffer may leave before the conversion ends. NULL when it carries none
 * (always before 1.24): the conversion then ends before the buffer leaves. */
gpointer gst_cuda_gray_output_stream(GstBuffer *buffer);

/* Flags the memory of an output buffer that leaves with its conversion still
 * queued on gst_cuda_gray_output_stream (1.24+ NEED_SYNC), so that downstream
 * orders itself after it. */
void gst_cuda_gray_mark_output_pending(GstBuffer *buffer);
