// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudagray.Frame: one gray frame, its GstBuffer mapped for as long as the
 * frame lives. Every array made from it (DLPack, buffer protocol, the array
 * interfaces) holds a reference to the frame, so the buffer goes back to its
 * pool only when the last of them is gone, whether or not its reader is. */
#include <dlpack/dlpack.h>
#include <gst/video/video.h>

#include <cstring>

#include "cudagray_python.h"

namespace cudagray_python {

namespace {

PyTypeObject *frame_type;

struct Frame {
  PyObject_HEAD GstSample *sample;
  GstVideoFrame video; /* mapped until the frame is freed */
  bool on_cuda;
  CudaSide side; /* in CUDA memory */
  /* (height, width), the row stride from the video meta */
  ArrayLayout array;
};

Frame *as_frame(PyObject *self) { return reinterpret_cast<Frame *>(self); }

void frame_dealloc(PyObject *self) {
  Frame *frame = as_frame(self);
  PyTypeObject *type = Py_TYPE(self);
  GstVideoFrame video = frame->video;
  cuda_side_release(
      &frame->side, [video]() mutable { gst_video_frame_unmap(&video); }, video.buffer,
      frame->sample);
  reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

PyObject *frame_repr(PyObject *self) {
  Frame *frame = as_frame(self);
  PyObject *pts = clock_time_or_none(GST_BUFFER_PTS(frame->video.buffer));
  if (!pts) return NULL;
  PyObject *repr = PyUnicode_FromFormat(
      "<cudagray.Frame %zdx%zd %s on %s, pts %S>", frame->array.shape[1], frame->array.shape[0],
      gst_video_format_to_string(GST_VIDEO_FRAME_FORMAT(&frame->video)),
      frame->on_cuda ? "cuda" : "cpu", pts);
  Py_DECREF(pts);
  return repr;
}

PyObject *get_shape(PyObject *self, void *) {
  const ArrayLayout &array = as_frame(self)->array;
  return Py_BuildValue("(nn)", array.shape[0], array.shape[1]);
}

PyObject *get_strides(PyObject *self, void *) {
  const ArrayLayout &array = as_frame(self)->array;
  return Py_BuildValue("(nn)", array.strides[0], array.strides[1]);
}

PyObject *get_dtype(PyObject *self, void *) {
  return PyUnicode_FromString(as_frame(self)->array.itemsize == 1 ? "uint8" : "uint16");
}

PyObject *get_pts(PyObject *self, void *) {
  return clock_time_or_none(GST_BUFFER_PTS(as_frame(self)->video.buffer));
}

PyObject *get_duration(PyObject *self, void *) {
  return clock_time_or_none(GST_BUFFER_DURATION(as_frame(self)->video.buffer));
}

PyObject *get_device(PyObject *self, void *) {
  Frame *frame = as_frame(self);
  if (!frame->on_cuda) return PyUnicode_FromString("cpu");
  return PyUnicode_FromFormat("cuda:%d", frame->side.cuda.device);
}

/* __array_interface__ and __cuda_array_interface__ (version 3) share one
 * dictionary (array_interface), read-only like the buffer protocol; each is
 * an AttributeError on a frame in the other memory, so that consumers
 * probing with hasattr take the interface that applies. */
PyObject *get_array_interface(PyObject *self, void *) {
  Frame *frame = as_frame(self);
  if (frame->on_cuda) {
    PyErr_SetString(PyExc_AttributeError,
                    "a frame in CUDA memory has no __array_interface__: use __dlpack__ or "
                    "__cuda_array_interface__");
    return NULL;
  }
  return array_interface(frame->array, NULL);
}

PyObject *get_cuda_array_interface(PyObject *self, void *) {
  Frame *frame = as_frame(self);
  if (!frame->on_cuda) {
    PyErr_SetString(PyExc_AttributeError,
                    "a frame in system memory has no __cuda_array_interface__: use the buffer "
                    "protocol, __array_interface__ or __dlpack__");
    return NULL;
  }
  return cuda_side_array_interface(&frame->side, frame->array);
}

/* The CUDA side of the frame's DLPack exports; NULL in system memory. */
const CudaExport *cuda_export(Frame *frame, CudaExport *storage);

PyObject *dlpack_device(PyObject *self, PyObject *) {
  CudaExport storage;
  return array_dlpack_device(cuda_export(as_frame(self), &storage));
}

bool order_consumer(PyObject *self, PyObject *stream) {
  Frame *frame = as_frame(self);
  return cuda_side_order_consumer(&frame->side, frame->video.buffer, stream);
}

bool copy_frame_to_host(PyObject *self, void *destination, size_t row_bytes) {
  Frame *frame = as_frame(self);
  return cuda_side_copy_to_host(&frame->side, frame->video.buffer, frame->array, destination,
                                row_bytes);
}

const CudaExport *cuda_export(Frame *frame, CudaExport *storage) {
  if (!frame->on_cuda) return NULL;
  *storage = CudaExport{frame->side.cuda.device, order_consumer, copy_frame_to_host};
  return storage;
}

PyObject *dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  CudaExport storage;
  Frame *frame = as_frame(self);
  return array_dlpack(self, frame->array, cuda_export(frame, &storage), args, kwargs);
}

/* frame.record_stream(stream): a consumer's stream that DLPack or the CUDA
 * array interface did not name, as PyTorch's Tensor.record_stream. */
PyObject *record_stream(PyObject *self, PyObject *stream) {
  Frame *frame = as_frame(self);
  if (!frame->on_cuda) {
    PyErr_SetString(PyExc_ValueError, "a frame in system memory has no stream");
    return NULL;
  }
  return cuda_side_record_stream(&frame->side, stream);
}

/* The buffer protocol, for system-memory frames: read-only, 2-D, strided. */
int get_buffer(PyObject *self, Py_buffer *view, int flags) {
  Frame *frame = as_frame(self);
  if (frame->on_cuda) {
    PyErr_SetString(PyExc_BufferError,
                    "the frame is in CUDA memory: use __dlpack__ or __cuda_array_interface__");
    return -1;
  }
  return array_get_buffer(self, frame->array, view, flags);
}

PyMethodDef frame_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule of the frame, without a copy: read-only (DLPack 1.x, for a consumer "
     "whose max_version is (1, 0) or later: the versioned tensor with its read-only flag). "
     "stream, for a frame in CUDA memory: the consumer's stream, which waits for cudagray's "
     "work on the frame (1: the legacy default stream, 2: this thread's per-thread default "
     "stream, None: the legacy default stream, the frame complete when returned, -1: no "
     "synchronization; 0 is refused). The frame goes back to cudagray's pool once the work "
     "queued on that stream before the frame and every array of it were let go is done, "
     "where the stream is PyTorch's or CuPy's current one (theirs pass it); for another, "
     "call record_stream. A frame in system memory takes None. dl_device (1, 0) copies a "
     "frame in CUDA memory to system memory; copy=True copies a frame in system memory "
     "(the copy is writable); copy=False never copies."},
    {"record_stream", record_stream, METH_O,
     "record_stream(stream)\n--\n\nMarks the frame's memory as read by work queued on "
     "stream, as torch.Tensor.record_stream: the frame goes back to cudagray's pool only once "
     "the work queued there before the frame and every array of it were let go is done. "
     "stream: a torch.cuda.Stream or cupy.cuda.Stream (held until then), or a CUDA stream "
     "handle (int; kept alive by the caller until then), 1 or 2 for the default streams. "
     "Needed where a consumer reads on a stream it did not name: the CUDA array interface "
     "on a stream other than PyTorch's or CuPy's current one, a DLPack export with -1 or a "
     "stream not current in PyTorch or CuPy."},
    {"__dlpack_device__", dlpack_device, METH_NOARGS,
     "(device type, device id): (2, id) for CUDA, (1, 0) for the CPU"},
    {NULL, NULL, 0, NULL},
};

PyGetSetDef frame_getset[] = {
    {"shape", get_shape, NULL, "(height, width)", NULL},
    {"strides", get_strides, NULL, "(row stride, item size) in bytes, from the video meta", NULL},
    {"dtype", get_dtype, NULL, "'uint8' (GRAY8) or 'uint16' (GRAY16_LE)", NULL},
    {"pts", get_pts, NULL, "presentation time in ns, or None", NULL},
    {"duration", get_duration, NULL, "duration in ns, or None", NULL},
    {"device", get_device, NULL, "'cpu' or 'cuda:N'", NULL},
    {"__array_interface__", get_array_interface, NULL, "NumPy's array interface (system memory)",
     NULL},
    {"__cuda_array_interface__", get_cuda_array_interface, NULL,
     "the CUDA array interface, version 3 (CUDA memory)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyType_Slot frame_slots[] = {
    {Py_tp_dealloc, (void *)frame_dealloc},
    {Py_tp_repr, (void *)frame_repr},
    {Py_tp_methods, frame_methods},
    {Py_tp_getset, frame_getset},
    {Py_bf_getbuffer, (void *)get_buffer},
    {Py_tp_doc, (void *)"A gray frame from cudagray, handed to NumPy, PyTorch or CuPy without a "
                        "copy; its buffer stays mapped while any array made from it lives."},
    {0, NULL},
};

/* not from Python: readers and frame_from_sample() make frames, and object.__new__ would give
 * one that nothing was read into */
PyType_Spec frame_spec = {"cudagray.Frame", sizeof(Frame), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, frame_slots};

}  // namespace

bool frame_type_init(PyObject *module) {
  frame_type = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&frame_spec));
  if (!frame_type) return false;
  /* the module keeps its own reference */
  return PyModule_AddObject(module, "Frame", Py_NewRef((PyObject *)frame_type)) == 0;
}

bool FrameCaps::update(GstCaps *sample_caps) {
  if (sample_caps && sample_caps == caps) return true;
  gst_clear_caps(&caps);
  if (!sample_caps || !gst_video_info_from_caps(&info, sample_caps)) {
    PyErr_SetString(PyExc_ValueError, "the sample carries no video caps");
    return false;
  }
  const GstVideoFormat format = GST_VIDEO_INFO_FORMAT(&info);
  if (format != GST_VIDEO_FORMAT_GRAY8 && format != GST_VIDEO_FORMAT_GRAY16_LE) {
    PyErr_Format(PyExc_ValueError, "cudagray frames are GRAY8 or GRAY16_LE, not %s",
                 gst_video_format_to_string(format));
    return false;
  }
  GstCapsFeatures *features = gst_caps_get_features(sample_caps, 0);
  on_cuda = features && gst_caps_features_contains(features, "memory:CUDAMemory");
  caps = gst_caps_ref(sample_caps);
  return true;
}

PyObject *frame_new(GstSample *sample, FrameCaps *layout) {
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  if (!layout->update(gst_sample_get_caps(sample)) || !buffer) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the sample carries no buffer");
    gst_sample_unref(sample);
    return NULL;
  }
  const bool on_cuda = layout->on_cuda;
  const GstVideoFormat format = GST_VIDEO_INFO_FORMAT(&layout->info);
  CudaMemoryInfo cuda;
  std::string why;
  if (on_cuda && !describe_cuda_memory(buffer, &cuda, &why)) {
    PyErr_Format(error_type, "cannot hand out this CUDA frame: %s", why.c_str());
    gst_sample_unref(sample);
    return NULL;
  }
  auto alloc = reinterpret_cast<allocfunc>(PyType_GetSlot(frame_type, Py_tp_alloc));
  Frame *frame = reinterpret_cast<Frame *>(alloc(frame_type, 0));
  if (!frame) {
    gst_sample_unref(sample);
    return NULL;
  }
  const GstMapFlags flags = on_cuda ? GstMapFlags(GST_MAP_READ | cuda_map_flag()) : GST_MAP_READ;
  if (!gst_video_frame_map(&frame->video, &layout->info, buffer, flags)) {
    /* nothing mapped: free the object without the dealloc's unmap */
    gst_sample_unref(sample);
    reinterpret_cast<freefunc>(PyType_GetSlot(frame_type, Py_tp_free))(frame);
    Py_DECREF(frame_type);
    PyErr_SetString(error_type, "could not map the frame's buffer");
    return NULL;
  }
  frame->sample = sample;
  frame->on_cuda = on_cuda;
  frame->side.cuda = cuda;
  ArrayLayout &array = frame->array;
  const bool gray8 = format == GST_VIDEO_FORMAT_GRAY8;
  array.data = GST_VIDEO_FRAME_PLANE_DATA(&frame->video, 0);
  array.ndim = 2;
  array.itemsize = gray8 ? 1 : 2;
  array.shape[0] = GST_VIDEO_FRAME_HEIGHT(&frame->video);
  array.shape[1] = GST_VIDEO_FRAME_WIDTH(&frame->video);
  array.strides[0] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame->video, 0);
  array.strides[1] = array.itemsize;
  array.dtype_code = kDLUInt;
  array.typestr = gray8 ? "|u1" : "<u2";
  array.buffer_format = gray8 ? "B" : "<H";
  if (array.strides[0] % array.itemsize != 0) {
    /* DLPack counts strides in elements */
    PyErr_Format(error_type, "the frame's row stride %zd is not a whole number of samples",
                 array.strides[0]);
    Py_DECREF(frame);
    return NULL;
  }
  return reinterpret_cast<PyObject *>(frame);
}

}  // namespace cudagray_python
