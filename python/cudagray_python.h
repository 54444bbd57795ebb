// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudagray Python module: a reader that runs `source ! cudagray ! appsink`
 * and the frames it hands out, written against GStreamer's C API and
 * Python's stable ABI (one build loads in CPython 3.11 and later). */
#pragma once

#include <Python.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <functional>
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

/* What a Frame and a Batch share (array.cpp): a read-only array of a mapped
 * buffer, described once for DLPack, the buffer protocol and the array
 * interfaces, each export holding a reference to its Python object. */
struct ArrayLayout {
  void *data = nullptr;
  int ndim = 0;
  Py_ssize_t shape[4] = {};
  Py_ssize_t strides[4] = {}; /* in bytes, each a multiple of itemsize */
  Py_ssize_t itemsize = 0;
  uint8_t dtype_code = 0;         /* DLDataTypeCode: kDLUInt or kDLFloat */
  const char *typestr = "";       /* the array interfaces': "|u1", "<u2", "<f2", "<f4" */
  const char *buffer_format = ""; /* the buffer protocol's: "B", "<H", "<e", "<f" */
};

/* What a DLPack export of an array in CUDA memory needs of its object (a
 * Frame's): ordering the consumer's stream after the producer, and a copy
 * of its rows to system memory. Each false with a Python exception set. */
struct CudaExport {
  int device;
  bool (*order_consumer)(PyObject *self, PyObject *stream);
  bool (*copy_to_host)(PyObject *self, void *destination, size_t row_bytes);
};

PyObject *clock_time_or_none(GstClockTime time);
/* __array_interface__ (stream NULL) or, with a stream, version 3 of the
 * CUDA array interface: a read-only dictionary of array. */
PyObject *array_interface(const ArrayLayout &array, PyObject *stream);
/* __dlpack_device__: (kDLCUDA, device) with cuda, else (kDLCPU, 0). */
PyObject *array_dlpack_device(const CudaExport *cuda);
/* __dlpack__(*, stream, max_version, dl_device, copy) of self, whose array
 * is array; cuda NULL for an array in system memory. */
PyObject *array_dlpack(PyObject *self, const ArrayLayout &array, const CudaExport *cuda,
                       PyObject *args, PyObject *kwargs);
/* DLPack's stream argument (array_dlpack's rules): the consumer's stream in
 * *consumer, or *unordered for -1; false with an exception set. */
bool consumer_stream(bool on_cuda, PyObject *stream, void **consumer, bool *unordered);
/* The buffer protocol over array in system memory: read-only, strided. */
int array_get_buffer(PyObject *self, const ArrayLayout &array, Py_buffer *view, int flags);

/* The Frame type, made at module init; frame_new takes sample's reference
 * and gives a new Frame (laid out as its caps, read into layout) or NULL
 * with a Python exception set. */
bool frame_type_init(PyObject *module);
PyObject *frame_new(GstSample *sample, FrameCaps *layout);

/* The shape and type of the batches of one caps (application/x-cudagray-batch),
 * read once per caps. */
struct BatchCaps {
  GstCaps *caps = nullptr; /* a reference, or NULL */
  int slots = 0, width = 0, height = 0;
  Py_ssize_t itemsize = 0;
  uint8_t dtype_code = 0;
  const char *dtype = "";
  bool on_cuda = false;
  ~BatchCaps() { gst_clear_caps(&caps); }
  /* Reads caps unless they are the ones read last; false with a Python
   * exception set when they are no batch caps. */
  bool update(GstCaps *caps);
};

/* The Batch type (batch.cpp); batch_new takes sample's reference and gives a
 * new Batch or NULL with a Python exception set. */
bool batch_type_init(PyObject *module);
PyObject *batch_new(GstSample *sample, BatchCaps *layout);

/* The Reader type, cudagray.open(source, **options) and
 * cudagray.open_batch(sources, **options). */
bool reader_type_init(PyObject *module);
PyObject *reader_open(PyObject *module, PyObject *args, PyObject *kwargs);
PyObject *reader_open_batch(PyObject *module, PyObject *args, PyObject *kwargs);

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

/* The consumers' streams of one frame (cuda_frames.cpp). */
struct ConsumerStreams;
/* Keeps a consumer's stream (a stream handle, or a pseudo-handle above) in
 * *streams (made on first use) for the frame's release, which records an
 * event on it then, after all the work queued on it by then. owner (its
 * reference taken) is the Python object whose life keeps the stream alive
 * (its library destroys the stream only once the object is gone), held until
 * then, or None when the caller vouches for the stream's life. Without an
 * owner (NULL) the stream may be gone before the frame, so the event is
 * recorded now instead, after the work queued so far. The pseudo-handles
 * need nothing kept: the release waits for the legacy default stream, so for
 * every blocking stream, each thread's per-thread default stream among them.
 * False with *why when a CUDA call fails. */
bool add_consumer(ConsumerStreams **streams, int device, void *stream, PyObject *owner,
                  std::string *why);
/* Takes a freed array's unmapping (of buffer, named in logs), sample and
 * consumers' streams (NULL: none) and keeps the mapping and sample until the
 * work queued on those streams by now is done, and that on the legacy
 * default stream (so on every blocking stream, CuPy's by default among
 * them), so that cudagray does not write a new frame or batch into memory a
 * kernel still reads. It does not wait for them: later calls (and each
 * reader's next()) release the arrays whose events are done, as
 * release_consumed_frames. Releases them at once when no event can be
 * recorded. Called with the GIL. */
void release_after_consumers(std::function<void()> unmap, GstBuffer *buffer, GstSample *sample,
                             int device, ConsumerStreams *streams);
/* Releases the frames whose consumers are done; past a bound, waits for the
 * oldest with the GIL released. Called with the GIL. */
void release_consumed_frames();
/* Copies a frame in CUDA memory of device to host memory, after the work
 * queued on every blocking stream; false with *why when a CUDA call fails. */
bool copy_to_host(int device, const void *source, size_t source_stride, void *destination,
                  size_t destination_stride, size_t row_bytes, size_t rows, std::string *why);

/* The Python objects of consumers' CUDA streams (consumer_streams.cpp): of
 * PyTorch and CuPy, whichever is imported, whose streams live as long as
 * their objects (CuPy destroys a stream with its object; PyTorch never
 * destroys its pool's). */

/* A new reference to the current stream of PyTorch or CuPy on device whose
 * handle is handle; NULL, with no exception, when it is neither's. */
PyObject *current_stream_owner(int device, intptr_t handle);
/* Adds the current streams of PyTorch and CuPy on device, other than their
 * default streams, as the frame's consumers (the CUDA array interface names
 * no consumer stream: reads queued on the current one are the likely ones);
 * false with a Python exception set. */
bool add_current_streams(ConsumerStreams **streams, int device);
/* frame.record_stream's argument: an int handle (the caller keeps the stream
 * valid), or an object with cuda_stream (PyTorch) or ptr (CuPy), held.
 * Puts the handle in *handle and a new reference (None for an int) in
 * *owner; false with a Python exception set. */
bool stream_argument(PyObject *stream, intptr_t *handle, PyObject **owner);

/* The CUDA side of an array in CUDA memory, a Frame's or a Batch's
 * (cuda_array.cpp): where its memory is and the work still writing it, and
 * the consumers whose work its release waits for. Zeroed: none. */
struct CudaSide {
  CudaMemoryInfo cuda;
  /* handed to a consumer on the GPU (DLPack with a stream other than -1, the
   * CUDA array interface, record_stream): its release waits for the legacy
   * default stream and the consumers' streams */
  bool consumed_on_gpu;
  ConsumerStreams *consumers; /* or NULL */
};
/* CudaExport::order_consumer for the array of buffer: orders the consumer
 * after the producer's work, as the DLPack protocol asks (stream None: the
 * array is complete before it is handed over), and keeps the consumer's
 * stream for the release, with its owner when it is the current stream of
 * PyTorch or CuPy (theirs pass it). */
bool cuda_side_order_consumer(CudaSide *side, GstBuffer *buffer, PyObject *stream);
/* CudaExport::copy_to_host: array's rows (evenly spaced, strides[ndim - 2]
 * apart) to destination, row_bytes each. */
bool cuda_side_copy_to_host(CudaSide *side, GstBuffer *buffer, const ArrayLayout &array,
                            void *destination, size_t row_bytes);
/* record_stream(stream), as torch.Tensor.record_stream. */
PyObject *cuda_side_record_stream(CudaSide *side, PyObject *stream);
/* __cuda_array_interface__ (version 3) of array. */
PyObject *cuda_side_array_interface(CudaSide *side, const ArrayLayout &array);
/* At the array's end: unmap and the sample's unref now, or once its
 * consumers on the GPU are done (release_after_consumers). */
void cuda_side_release(CudaSide *side, std::function<void()> unmap, GstBuffer *buffer,
                       GstSample *sample);

/* GST_MAP_CUDA: maps CUDA memory as its device pointer. */
GstMapFlags cuda_map_flag();
/* Blocks until the buffer's pending work is done (GStreamer 1.24+). */
void finish_pending(GstBuffer *buffer);

}  // namespace cudagray_python
