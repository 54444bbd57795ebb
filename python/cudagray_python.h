// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudagray Python module: a reader that runs `source ! cudagray ! appsink`
 * and the frames it hands out, written against GStreamer's C API and
 * Python's stable ABI (one build loads in CPython 3.11 and later). */
#pragma once

#include <Python.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>

GST_DEBUG_CATEGORY_EXTERN(cudagray_python_debug);

namespace cudagray_python {

/* Releases the GIL for its scope: around GStreamer calls that may block,
 * so that other Python threads run meanwhile. */
class GilReleased {
 public:
  GilReleased() : state_(PyEval_SaveThread()) {}
  ~GilReleased() { PyEval_RestoreThread(state_); }
  GilReleased(const GilReleased &) = delete;
  GilReleased &operator=(const GilReleased &) = delete;

 private:
  PyThreadState *state_;
};

/* cudagray.Error: what GStreamer reported, naming the element. */
extern PyObject *error_type;
/* cudagray.Warning: a warning GStreamer posted, naming the element. */
extern PyObject *warning_type;

/* The layout of the frames of one caps, read once per caps rather than
 * once per frame. */
struct FrameCaps {
  GstCaps *caps = nullptr; /* a reference, or NULL */
  GstVideoInfo info;
  bool on_cuda = false;
  ~FrameCaps() { gst_clear_caps(&caps); }
  /* Reads caps unless they are the ones read last; false with a Python
   * exception set when they are no gray video. */
  bool update(GstCaps *caps);
};

/* The Frame type, made at module init; frame_new takes sample's reference
 * and gives a new Frame (laid out as its caps, read into layout) or NULL
 * with a Python exception set. */
bool frame_type_init(PyObject *module);
PyObject *frame_new(GstSample *sample, FrameCaps *layout);

/* The Reader type and cudagray.open(source, **options). */
bool reader_type_init(PyObject *module);
PyObject *reader_open(PyObject *module, PyObject *args, PyObject *kwargs);

/* CUDA frames (cuda_frames.cpp with gstreamer-cuda-1.0 and the CUDA runtime,
 * cuda_frames_unavailable.cpp without). */

/* Empty when frames can be kept in CUDA memory of device in this process,
 * else why not. */
std::string cuda_frames_unavailable(int device);

/* A GstContext that makes a pipeline's CUDA elements work in device's
 * primary CUDA context, the one PyTorch and CuPy use (a device pointer of
 * another context is not valid in theirs); NULL with *why when impossible. */
GstContext *primary_cuda_context(int device, std::string *why);

/* What a frame in CUDA memory needs to know of its buffer. */
struct CudaMemoryInfo {
  int device = -1;
  /* GStreamer 1.24+: the producer's stream when work on the memory may still
   * be queued on it (GST_CUDA_MEMORY_TRANSFER_NEED_SYNC); NULL when the
   * frame is complete, always before 1.24 (frames are complete when pushed). */
  void *pending_stream = nullptr;
  /* The stream the last DLPack consumer named: its work on the frame may
   * still be queued when its tensor is freed. */
  void *consumer_stream = nullptr;
  bool consumer_known = false;
};
/* Fills *info for a buffer in CUDA memory of a device's primary context;
 * false with *why otherwise. */
bool describe_cuda_memory(GstBuffer *buffer, CudaMemoryInfo *info, std::string *why);

/* Orders a consumer after the producer's pending work on a frame of device:
 * consumer_stream waits on an event recorded on pending_stream (no host
 * block); false with *why when a CUDA call fails. */
bool order_after(int device, void *pending_stream, void *consumer_stream, std::string *why);
/* Keeps a freed frame's mapping and sample until the work its consumer
 * queued on consumer_stream so far is done, so that cudagray does not write
 * a new frame into memory a kernel still reads; false (the caller releases
 * them now) when no event can be recorded. */
bool release_after_consumer(GstVideoFrame *video, GstSample *sample, int device,
                            void *consumer_stream);
/* Releases the frames whose consumers are done; blocks on the oldest only
 * when many are waiting. */
void release_consumed_frames();

/* GST_MAP_CUDA: maps CUDA memory as its device pointer. */
GstMapFlags cuda_map_flag();
/* Blocks until the buffer's pending work is done (GStreamer 1.24+). */
void finish_pending(GstBuffer *buffer);

}  // namespace cudagray_python
