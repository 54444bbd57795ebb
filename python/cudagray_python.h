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
};
/* Fills *info for a buffer in CUDA memory of a device's primary context;
 * false with *why otherwise. */
bool describe_cuda_memory(GstBuffer *buffer, CudaMemoryInfo *info, std::string *why);

/* The values of CUDA's stream pseudo-handles, which DLPack's and the CUDA
 * array interface's stream arguments share: cudaStreamLegacy and
 * cudaStreamPerThread (the calling thread's). */
constexpr intptr_t legacy_default_stream = 1;
constexpr intptr_t per_thread_default_stream = 2;

/* Orders a consumer after the producer's pending work on a frame of device:
 * consumer_stream waits on an event recorded on pending_stream (no host
 * block); false with *why when a CUDA call fails. */
bool order_after(int device, void *pending_stream, void *consumer_stream, std::string *why);

/* The events a frame's release waits for, one per consumer (cuda_frames.cpp). */
struct ConsumerEvents;
/* Records an event on a consumer's stream (a stream handle, or a
 * pseudo-handle above) after the work queued on it so far, and keeps it in
 * *events (made on first use) for the frame's release. Only at export: the
 * DLPack specification leaves the stream the consumer's, who may destroy it
 * before letting the frame go. False with *why when a CUDA call fails. */
bool record_consumer(ConsumerEvents **events, int device, void *consumer_stream, std::string *why);
/* Takes a freed frame's mapping, sample and events (NULL: none recorded) and
 * keeps the first two until every event is done, and one recorded now on the
 * legacy default stream (all work queued so far there and on every blocking
 * stream, CuPy's among them), so that cudagray does not write a new frame
 * into memory a kernel still reads. Releases them at once when no event can
 * be recorded. */
void release_after_consumers(GstVideoFrame *video, GstSample *sample, int device,
                             ConsumerEvents *events);
/* Releases the frames whose consumers are done; past a bound, waits for the
 * oldest with the GIL released. Called with the GIL. */
void release_consumed_frames();

/* GST_MAP_CUDA: maps CUDA memory as its device pointer. */
GstMapFlags cuda_map_flag();
/* Blocks until the buffer's pending work is done (GStreamer 1.24+). */
void finish_pending(GstBuffer *buffer);

}  // namespace cudagray_python
