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
  CudaMemoryInfo cuda;
  /* handed to a consumer on the GPU (DLPack with a stream other than -1, the
   * CUDA array interface, record_stream): its release waits for the legacy
   * default stream and the consumers' streams */
  bool consumed_on_gpu;
  ConsumerStreams *consumers; /* or NULL */
  Py_ssize_t itemsize;
  Py_ssize_t shape[2];   /* height, width */
  Py_ssize_t strides[2]; /* in bytes: the row stride from the video meta */
};

Frame *as_frame(PyObject *self) { return reinterpret_cast<Frame *>(self); }

void *frame_data(Frame *frame) { return GST_VIDEO_FRAME_PLANE_DATA(&frame->video, 0); }

const char *typestr(Frame *frame) { return frame->itemsize == 1 ? "|u1" : "<u2"; }

PyObject *clock_time_or_none(GstClockTime time) {
  if (!GST_CLOCK_TIME_IS_VALID(time)) Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong(time);
}

void frame_dealloc(PyObject *self) {
  Frame *frame = as_frame(self);
  PyTypeObject *type = Py_TYPE(self);
  if (frame->consumed_on_gpu) {
    release_after_consumers(&frame->video, frame->sample, frame->cuda.device, frame->consumers);
  } else {
    gst_video_frame_unmap(&frame->video);
    gst_sample_unref(frame->sample);
  }
  reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

PyObject *frame_repr(PyObject *self) {
  Frame *frame = as_frame(self);
  PyObject *pts = clock_time_or_none(GST_BUFFER_PTS(frame->video.buffer));
  if (!pts) return NULL;
  PyObject *repr = PyUnicode_FromFormat(
      "<cudagray.Frame %zdx%zd %s on %s, pts %S>", frame->shape[1], frame->shape[0],
      gst_video_format_to_string(GST_VIDEO_FRAME_FORMAT(&frame->video)),
      frame->on_cuda ? "cuda" : "cpu", pts);
  Py_DECREF(pts);
  return repr;
}

PyObject *shape_tuple(const Py_ssize_t values[2]) {
  return Py_BuildValue("(nn)", values[0], values[1]);
}

PyObject *get_shape(PyObject *self, void *) { return shape_tuple(as_frame(self)->shape); }

PyObject *get_strides(PyObject *self, void *) { return shape_tuple(as_frame(self)->strides); }

PyObject *get_dtype(PyObject *self, void *) {
  return PyUnicode_FromString(as_frame(self)->itemsize == 1 ? "uint8" : "uint16");
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
  return PyUnicode_FromFormat("cuda:%d", frame->cuda.device);
}

/* __array_interface__ and __cuda_array_interface__ (version 3) share one
 * dictionary, read-only like the buffer protocol; each is an AttributeError
 * on a frame in the other memory, so that consumers probing with hasattr
 * take the interface that applies. */
PyObject *array_interface(Frame *frame, PyObject *stream) {
  return Py_BuildValue(
      "{s:N,s:s,s:(KO),s:N,s:i,s:O}", "shape", shape_tuple(frame->shape), "typestr", typestr(frame),
      "data", (unsigned long long)(uintptr_t)frame_data(frame), Py_True, "strides",
      shape_tuple(frame->strides), "version", 3, "stream", stream ? stream : Py_None);
}

PyObject *get_array_interface(PyObject *self, void *) {
  Frame *frame = as_frame(self);
  if (frame->on_cuda) {
    PyErr_SetString(PyExc_AttributeError,
                    "a frame in CUDA memory has no __array_interface__: use __dlpack__ or "
                    "__cuda_array_interface__");
    return NULL;
  }
  PyObject *interface = array_interface(frame, NULL);
  if (interface && PyDict_DelItemString(interface, "stream") < 0) Py_CLEAR(interface);
  return interface;
}

PyObject *get_cuda_array_interface(PyObject *self, void *) {
  Frame *frame = as_frame(self);
  if (!frame->on_cuda) {
    PyErr_SetString(PyExc_AttributeError,
                    "a frame in system memory has no __cuda_array_interface__: use the buffer "
                    "protocol, __array_interface__ or __dlpack__");
    return NULL;
  }
  /* This consumer names no stream of its own: the frame's release waits for
   * the legacy default stream, so for every blocking stream, and for the
   * current streams of PyTorch and CuPy, where their reads are queued */
  frame->consumed_on_gpu = true;
  if (!add_current_streams(&frame->consumers, frame->cuda.device)) return NULL;
  /* the stream the consumer must order its work after; None: complete */
  PyObject *stream = frame->cuda.pending_stream ? PyLong_FromVoidPtr(frame->cuda.pending_stream)
                                                : Py_NewRef(Py_None);
  if (!stream) return NULL;
  PyObject *interface = array_interface(frame, stream);
  Py_DECREF(stream);
  return interface;
}

PyObject *dlpack_device(PyObject *self, PyObject *) {
  Frame *frame = as_frame(self);
  return frame->on_cuda ? Py_BuildValue("(ii)", (int)kDLCUDA, frame->cuda.device)
                        : Py_BuildValue("(ii)", (int)kDLCPU, 0);
}

/* One DLPack export: the tensor (versioned or not), its shape and strides,
 * and what keeps its memory: the frame, until the consumer calls the
 * deleter, or a copy of the export's own. */
struct Export {
  DLManagedTensor unversioned;
  DLManagedTensorVersioned versioned;
  int64_t shape[2];
  int64_t strides[2]; /* in elements */
  PyObject *frame;    /* NULL for a copy */
  void *copy;         /* the copied rows, or NULL */
};

void export_free(Export *exported) {
  /* a consumer may free its tensor on any thread, or after Python is gone */
  if (exported->frame && Py_IsInitialized()) {
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(exported->frame);
    PyGILState_Release(gil);
  }
  g_free(exported->copy);
  delete exported;
}

void unversioned_delete(DLManagedTensor *managed) {
  export_free(static_cast<Export *>(managed->manager_ctx));
}

void versioned_delete(DLManagedTensorVersioned *managed) {
  export_free(static_cast<Export *>(managed->manager_ctx));
}

/* a capsule no consumer took ("used_dltensor" once taken) */
void unversioned_capsule_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule, "dltensor"));
  managed->deleter(managed);
}

void versioned_capsule_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor_versioned")) return;
  auto *managed =
      static_cast<DLManagedTensorVersioned *>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
  managed->deleter(managed);
}

/* DLPack's stream argument, as the Python array API specifies it: on a CUDA
 * device, None or 1 is the legacy default stream, 2 the calling thread's
 * per-thread default stream, -1 asks for no synchronization, a larger value
 * is the consumer's stream, and 0 (ambiguous) is refused; on the CPU only
 * None. Puts the stream in *consumer, or sets *unordered for -1; false with
 * an exception set. */
bool consumer_stream(bool on_cuda, PyObject *stream, void **consumer, bool *unordered) {
  long long value = legacy_default_stream;
  if (stream != Py_None) {
    if (!PyLong_Check(stream)) {
      PyErr_SetString(PyExc_TypeError, "stream must be an int or None");
      return false;
    }
    value = PyLong_AsLongLong(stream);
    if (value == -1 && PyErr_Occurred()) return false;
  }
  if (!on_cuda && stream != Py_None) {
    PyErr_Format(PyExc_ValueError, "stream=%lld: a frame in system memory has no stream, pass None",
                 value);
    return false;
  }
  if (value == 0 || value < -1) {
    PyErr_Format(PyExc_ValueError,
                 "stream=%lld: DLPack takes None or 1 (legacy default stream), 2 (per-thread "
                 "default stream), -1 (no synchronization) or a CUDA stream",
                 value);
    return false;
  }
  *unordered = value == -1;
  *consumer = reinterpret_cast<void *>((intptr_t)value);
  return true;
}

/* Orders the consumer after cudagray's work on the frame, as the DLPack
 * protocol asks (stream None: the frame is complete before it is handed
 * over), and keeps the consumer's stream for the frame's release, with the
 * stream's owner when it is the current stream of PyTorch or CuPy (theirs
 * pass it). */
bool order_consumer(Frame *frame, PyObject *stream) {
  void *consumer = nullptr;
  bool unordered = false;
  if (!consumer_stream(frame->on_cuda, stream, &consumer, &unordered)) return false;
  if (!frame->on_cuda || unordered) return true;
  std::string why;
  if (frame->cuda.pending_stream && stream == Py_None) {
    {
      GilReleased released;
      finish_pending(frame->video.buffer);
    }
    frame->cuda.pending_stream = nullptr;
  } else if (frame->cuda.pending_stream &&
             !order_after(frame->cuda.device, frame->cuda.pending_stream, consumer, &why)) {
    PyErr_Format(PyExc_BufferError, "could not order the consumer's stream after cudagray's: %s",
                 why.c_str());
    return false;
  }
  const intptr_t handle = reinterpret_cast<intptr_t>(consumer);
  PyObject *owner =
      handle > per_thread_default_stream ? current_stream_owner(frame->cuda.device, handle) : NULL;
  /* the release takes the consumers kept so far, whatever happens here */
  frame->consumed_on_gpu = true;
  if (!add_consumer(&frame->consumers, frame->cuda.device, consumer, owner, &why)) {
    PyErr_Format(PyExc_BufferError, "could not record the consumer's work on its stream: %s",
                 why.c_str());
    return false;
  }
  return true;
}

/* max_version: the versioned tensor when the consumer takes DLPack 1.x, in
 * *version the newest both know; 0 for the unversioned one, -1 with an
 * exception set. */
int versioned_export(PyObject *max_version, DLPackVersion *version) {
  if (max_version == Py_None) return 0;
  long major = -1, minor = -1;
  if (PyTuple_Check(max_version) && PyTuple_Size(max_version) == 2) {
    major = PyLong_AsLong(PyTuple_GetItem(max_version, 0));
    minor = PyLong_AsLong(PyTuple_GetItem(max_version, 1));
  }
  if (major < 0 || minor < 0) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "max_version must be a tuple (major, minor) of ints");
    return -1;
  }
  if (major < 1) return 0;
  version->major = DLPACK_MAJOR_VERSION;
  version->minor = major > DLPACK_MAJOR_VERSION || minor > DLPACK_MINOR_VERSION
                       ? DLPACK_MINOR_VERSION
                       : (uint32_t)minor;
  return 1;
}

/* dl_device: true in *to_host when the consumer asks a frame in CUDA memory
 * for system memory; false with an exception set for another device. */
bool target_device(PyObject *self, PyObject *dl_device, bool *to_host) {
  *to_host = false;
  if (dl_device == Py_None) return true;
  PyObject *own = dlpack_device(self, NULL);
  PyObject *host = Py_BuildValue("(ii)", (int)kDLCPU, 0);
  const int same = own && host ? PyObject_RichCompareBool(dl_device, own, Py_EQ) : -1;
  const int cpu = same == 0 ? PyObject_RichCompareBool(dl_device, host, Py_EQ) : 0;
  Py_XDECREF(own);
  Py_XDECREF(host);
  if (same < 0 || cpu < 0) return false;
  if (!same && !cpu) {
    PyErr_SetString(PyExc_BufferError,
                    "dl_device: cudagray hands a frame over on its own device, or copied to "
                    "system memory (1, 0)");
    return false;
  }
  *to_host = cpu;
  return true;
}

/* A copy of the frame's rows in system memory, without padding, into
 * exported; false with an exception set. */
bool copy_rows(Frame *frame, Export *exported) {
  const size_t row_bytes = frame->shape[1] * frame->itemsize;
  exported->copy = g_malloc(row_bytes * frame->shape[0]);
  exported->strides[0] = frame->shape[1];
  const uint8_t *rows = static_cast<const uint8_t *>(frame_data(frame));
  if (!frame->on_cuda) {
    for (Py_ssize_t y = 0; y < frame->shape[0]; y++)
      memcpy(static_cast<uint8_t *>(exported->copy) + y * row_bytes, rows + y * frame->strides[0],
             row_bytes);
    return true;
  }
  std::string why;
  bool copied;
  {
    GilReleased released;
    finish_pending(frame->video.buffer);
    copied = copy_to_host(frame->cuda.device, rows, frame->strides[0], exported->copy, row_bytes,
                          row_bytes, frame->shape[0], &why);
  }
  frame->cuda.pending_stream = nullptr;
  if (!copied) PyErr_Format(PyExc_BufferError, "could not copy the frame: %s", why.c_str());
  return copied;
}

PyObject *dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char **>(keywords),
                                   &stream, &max_version, &dl_device, &copy))
    return NULL;
  Frame *frame = as_frame(self);
  DLPackVersion version;
  const int versioned = versioned_export(max_version, &version);
  const int copy_asked = copy == Py_None ? -1 : PyObject_IsTrue(copy);
  bool to_host = false;
  if (versioned < 0 || (copy != Py_None && copy_asked < 0) ||
      !target_device(self, dl_device, &to_host))
    return NULL;
  if (to_host && copy_asked == 0) {
    PyErr_SetString(PyExc_BufferError,
                    "copy=False, and a frame in CUDA memory reaches system memory only copied");
    return NULL;
  }
  const bool copied = to_host || copy_asked == 1;
  if (copied && frame->on_cuda && !to_host) {
    PyErr_SetString(PyExc_BufferError,
                    "cudagray copies a frame in CUDA memory only to system memory "
                    "(dl_device=(1, 0)); copy it on the GPU with its consumer's library");
    return NULL;
  }
  Export *exported = new Export();
  exported->shape[0] = frame->shape[0];
  exported->shape[1] = frame->shape[1];
  exported->strides[0] = frame->strides[0] / frame->itemsize;
  exported->strides[1] = 1;
  void *consumer;
  bool unordered;
  /* a copy in system memory takes a stream as the CPU does: None */
  if (copied ? !consumer_stream(false, stream, &consumer, &unordered) || !copy_rows(frame, exported)
             : !order_consumer(frame, stream)) {
    export_free(exported);
    return NULL;
  }
  if (!copied) exported->frame = Py_NewRef(self);
  DLTensor tensor;
  tensor.data = copied ? exported->copy : frame_data(frame);
  tensor.device =
      frame->on_cuda && !copied ? DLDevice{kDLCUDA, frame->cuda.device} : DLDevice{kDLCPU, 0};
  tensor.ndim = 2;
  tensor.dtype = DLDataType{kDLUInt, (uint8_t)(8 * frame->itemsize), 1};
  tensor.shape = exported->shape;
  tensor.strides = exported->strides;
  tensor.byte_offset = 0;
  PyObject *capsule;
  if (versioned) {
    /* the frame is cudagray's, read-only as the buffer protocol and the
     * array interfaces say; a copy is the consumer's */
    exported->versioned = DLManagedTensorVersioned{
        version, exported, versioned_delete,
        copied ? DLPACK_FLAG_BITMASK_IS_COPIED : DLPACK_FLAG_BITMASK_READ_ONLY, tensor};
    capsule =
        PyCapsule_New(&exported->versioned, "dltensor_versioned", versioned_capsule_destructor);
  } else {
    exported->unversioned = DLManagedTensor{tensor, exported, unversioned_delete};
    capsule = PyCapsule_New(&exported->unversioned, "dltensor", unversioned_capsule_destructor);
  }
  if (!capsule) export_free(exported);
  return capsule;
}

/* frame.record_stream(stream): a consumer's stream that DLPack or the CUDA
 * array interface did not name, as PyTorch's Tensor.record_stream. */
PyObject *record_stream(PyObject *self, PyObject *stream) {
  Frame *frame = as_frame(self);
  if (!frame->on_cuda) {
    PyErr_SetString(PyExc_ValueError, "a frame in system memory has no stream");
    return NULL;
  }
  intptr_t handle;
  PyObject *owner;
  if (!stream_argument(stream, &handle, &owner)) return NULL;
  std::string why;
  frame->consumed_on_gpu = true;
  if (!add_consumer(&frame->consumers, frame->cuda.device, reinterpret_cast<void *>(handle), owner,
                    &why)) {
    PyErr_Format(PyExc_BufferError, "could not keep the consumer's stream: %s", why.c_str());
    return NULL;
  }
  Py_RETURN_NONE;
}

/* The buffer protocol, for system-memory frames: read-only, 2-D, strided. */
int get_buffer(PyObject *self, Py_buffer *view, int flags) {
  Frame *frame = as_frame(self);
  if (frame->on_cuda) {
    PyErr_SetString(PyExc_BufferError,
                    "the frame is in CUDA memory: use __dlpack__ or __cuda_array_interface__");
    return -1;
  }
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "cudagray frames are read-only");
    return -1;
  }
  const bool contiguous = frame->strides[0] == frame->shape[1] * frame->itemsize;
  if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !contiguous) {
    PyErr_SetString(PyExc_BufferError,
                    "the frame's rows are padded: ask for strides (PyBUF_STRIDES)");
    return -1;
  }
  view->buf = frame_data(frame);
  view->obj = Py_NewRef(self);
  view->len = frame->shape[0] * frame->shape[1] * frame->itemsize;
  view->readonly = 1;
  view->itemsize = frame->itemsize;
  view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT
                     ? const_cast<char *>(frame->itemsize == 1 ? "B" : "<H")
                     : NULL;
  view->ndim = 2;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? frame->shape : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? frame->strides : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
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
  frame->cuda = cuda;
  frame->itemsize = format == GST_VIDEO_FORMAT_GRAY8 ? 1 : 2;
  frame->shape[0] = GST_VIDEO_FRAME_HEIGHT(&frame->video);
  frame->shape[1] = GST_VIDEO_FRAME_WIDTH(&frame->video);
  frame->strides[0] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame->video, 0);
  frame->strides[1] = frame->itemsize;
  if (frame->strides[0] % frame->itemsize != 0) {
    /* DLPack counts strides in elements */
    PyErr_Format(error_type, "the frame's row stride %zd is not a whole number of samples",
                 frame->strides[0]);
    Py_DECREF(frame);
    return NULL;
  }
  return reinterpret_cast<PyObject *>(frame);
}

}  // namespace cudagray_python
