// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudagray.Batch: one batch of cudagraybatch (docs/batch.md), N slots of
 * gray as one contiguous (N, 1, H, W) array, its GstBuffer mapped for as
 * long as the batch lives, and what its GstCudaGrayBatchMeta says of each
 * slot. Handed out as a Frame is (array.cpp), in system or CUDA memory,
 * with the same consumer streams and ordered release (cuda_array.cpp). */
#include <dlpack/dlpack.h>

#include "cudagray_python.h"
#include "gstcudagraybatchmeta.h"

namespace cudagray_python {

namespace {

PyTypeObject *batch_type;
PyTypeObject *slot_type;

struct Batch {
  PyObject_HEAD GstSample *sample;
  GstMapInfo map; /* mapped until the batch is freed */
  bool on_cuda;
  CudaSide side; /* in CUDA memory */
  ArrayLayout array;
  const char *dtype;
  PyObject *slots; /* a tuple of BatchSlot */
};

Batch *as_batch(PyObject *self) { return reinterpret_cast<Batch *>(self); }

PyStructSequence_Field slot_fields[] = {
    {"source",
     "index into open_batch()'s sources of the source the slot is for; None for a "
     "slot past them (batch_size)"},
    {"present", "whether the slot holds a frame; an absent slot is black (docs/batch.md)"},
    {"pts", "the source frame's PTS in ns, in its source's segment; None when absent"},
    {"scale_x", "the letterbox transform: slot pixel x maps to source x = scale_x * x + offset_x"},
    {"scale_y", "slot pixel y maps to source y = scale_y * y + offset_y"},
    {"offset_x", "see scale_x; 0 when absent"},
    {"offset_y", "see scale_y; 0 when absent"},
    {NULL, NULL},
};

PyStructSequence_Desc slot_desc = {
    "cudagray.BatchSlot",
    "One slot of a Batch: its source, whether it holds a frame, the frame's PTS and the "
    "letterbox transform that maps a point (x, y) of the slot, in pixels from its top-left "
    "corner (pixel centres at half-integers), to the point (scale_x * x + offset_x, scale_y * y "
    "+ offset_y) of the source frame (of its crop rectangle when it carried a crop meta).",
    slot_fields, 7};

PyObject *slot_new(const GstCudaGrayBatchSlotInfo &info) {
  PyObject *slot = PyStructSequence_New(slot_type);
  if (!slot) return NULL;
  PyObject *values[7] = {
      info.pad_index < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(info.pad_index),
      PyBool_FromLong(info.present),
      clock_time_or_none(info.present ? info.pts : GST_CLOCK_TIME_NONE),
      PyFloat_FromDouble(info.scale_x),
      PyFloat_FromDouble(info.scale_y),
      PyFloat_FromDouble(info.offset_x),
      PyFloat_FromDouble(info.offset_y),
  };
  bool ok = true;
  for (int i = 0; i < 7; i++) {
    ok = ok && values[i];
    if (values[i]) PyStructSequence_SetItem(slot, i, values[i]);
  }
  if (!ok) Py_CLEAR(slot);
  return slot;
}

void batch_dealloc(PyObject *self) {
  Batch *batch = as_batch(self);
  PyTypeObject *type = Py_TYPE(self);
  Py_XDECREF(batch->slots);
  GstBuffer *buffer = gst_sample_get_buffer(batch->sample);
  GstMapInfo map = batch->map;
  cuda_side_release(
      &batch->side, [buffer, map]() mutable { gst_buffer_unmap(buffer, &map); }, buffer,
      batch->sample);
  reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

GstBuffer *buffer_of(PyObject *self) { return gst_sample_get_buffer(as_batch(self)->sample); }

PyObject *batch_repr(PyObject *self) {
  Batch *batch = as_batch(self);
  PyObject *pts = clock_time_or_none(GST_BUFFER_PTS(buffer_of(self)));
  if (!pts) return NULL;
  PyObject *repr =
      PyUnicode_FromFormat("<cudagray.Batch %zdx1x%zdx%zd %s on %s, pts %S>", batch->array.shape[0],
                           batch->array.shape[2], batch->array.shape[3], batch->dtype,
                           batch->on_cuda ? "cuda" : "cpu", pts);
  Py_DECREF(pts);
  return repr;
}

PyObject *get_shape(PyObject *self, void *) {
  const ArrayLayout &array = as_batch(self)->array;
  return Py_BuildValue("(nnnn)", array.shape[0], array.shape[1], array.shape[2], array.shape[3]);
}

PyObject *get_dtype(PyObject *self, void *) { return PyUnicode_FromString(as_batch(self)->dtype); }

PyObject *get_pts(PyObject *self, void *) {
  return clock_time_or_none(GST_BUFFER_PTS(buffer_of(self)));
}

PyObject *get_duration(PyObject *self, void *) {
  return clock_time_or_none(GST_BUFFER_DURATION(buffer_of(self)));
}

PyObject *get_device(PyObject *self, void *) {
  Batch *batch = as_batch(self);
  if (!batch->on_cuda) return PyUnicode_FromString("cpu");
  return PyUnicode_FromFormat("cuda:%d", batch->side.cuda.device);
}

PyObject *get_slots(PyObject *self, void *) { return Py_NewRef(as_batch(self)->slots); }

/* Each interface an AttributeError in the other memory, as a Frame's. */
PyObject *get_array_interface(PyObject *self, void *) {
  Batch *batch = as_batch(self);
  if (batch->on_cuda) {
    PyErr_SetString(PyExc_AttributeError,
                    "a batch in CUDA memory has no __array_interface__: use __dlpack__ or "
                    "__cuda_array_interface__");
    return NULL;
  }
  return array_interface(batch->array, NULL);
}

PyObject *get_cuda_array_interface(PyObject *self, void *) {
  Batch *batch = as_batch(self);
  if (!batch->on_cuda) {
    PyErr_SetString(PyExc_AttributeError,
                    "a batch in system memory has no __cuda_array_interface__: use the buffer "
                    "protocol, __array_interface__ or __dlpack__");
    return NULL;
  }
  return cuda_side_array_interface(&batch->side, batch->array);
}

bool order_consumer(PyObject *self, PyObject *stream) {
  return cuda_side_order_consumer(&as_batch(self)->side, buffer_of(self), stream);
}

bool copy_batch_to_host(PyObject *self, void *destination, size_t row_bytes) {
  Batch *batch = as_batch(self);
  return cuda_side_copy_to_host(&batch->side, buffer_of(self), batch->array, destination,
                                row_bytes);
}

/* The CUDA side of the batch's DLPack exports; NULL in system memory. */
const CudaExport *cuda_export(Batch *batch, CudaExport *storage) {
  if (!batch->on_cuda) return NULL;
  *storage = CudaExport{batch->side.cuda.device, order_consumer, copy_batch_to_host};
  return storage;
}

PyObject *dlpack_device(PyObject *self, PyObject *) {
  CudaExport storage;
  return array_dlpack_device(cuda_export(as_batch(self), &storage));
}

PyObject *dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  CudaExport storage;
  Batch *batch = as_batch(self);
  return array_dlpack(self, batch->array, cuda_export(batch, &storage), args, kwargs);
}

PyObject *record_stream(PyObject *self, PyObject *stream) {
  Batch *batch = as_batch(self);
  if (!batch->on_cuda) {
    PyErr_SetString(PyExc_ValueError, "a batch in system memory has no stream");
    return NULL;
  }
  return cuda_side_record_stream(&batch->side, stream);
}

int get_buffer(PyObject *self, Py_buffer *view, int flags) {
  Batch *batch = as_batch(self);
  if (batch->on_cuda) {
    PyErr_SetString(PyExc_BufferError,
                    "the batch is in CUDA memory: use __dlpack__ or __cuda_array_interface__");
    return -1;
  }
  return array_get_buffer(self, batch->array, view, flags);
}

PyMethodDef batch_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule of the batch, (N, 1, H, W), without a copy: read-only (DLPack 1.x, for a "
     "consumer whose max_version is (1, 0) or later: the versioned tensor with its read-only "
     "flag). stream, for a batch in CUDA memory, as Frame.__dlpack__'s: the consumer's "
     "stream, and the batch goes back to cudagraybatch's pool once the work queued there before "
     "the batch and every array of it were let go is done; a batch in system memory takes "
     "None. dl_device (1, 0) copies a batch in CUDA memory to system memory; copy=True copies "
     "a batch in system memory (the copy is writable); copy=False never copies."},
    {"record_stream", record_stream, METH_O,
     "record_stream(stream)\n--\n\nAs Frame.record_stream: the batch goes back to "
     "cudagraybatch's pool only once the work queued on stream before the batch and every "
     "array of it were let go is done."},
    {"__dlpack_device__", dlpack_device, METH_NOARGS,
     "(device type, device id): (2, id) for CUDA, (1, 0) for the CPU"},
    {NULL, NULL, 0, NULL},
};

PyGetSetDef batch_getset[] = {
    {"shape", get_shape, NULL, "(N, 1, height, width)", NULL},
    {"dtype", get_dtype, NULL, "'uint8', 'float16' or 'float32'", NULL},
    {"pts", get_pts, NULL, "the tick's start in ns (docs/batch.md), or None", NULL},
    {"duration", get_duration, NULL, "the tick's length in ns, or None", NULL},
    {"device", get_device, NULL, "'cpu' or 'cuda:N'", NULL},
    {"slots", get_slots, NULL, "a tuple of N cudagray.BatchSlot, one a slot", NULL},
    {"__array_interface__", get_array_interface, NULL, "NumPy's array interface (system memory)",
     NULL},
    {"__cuda_array_interface__", get_cuda_array_interface, NULL,
     "the CUDA array interface, version 3 (CUDA memory)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyType_Slot batch_slots[] = {
    {Py_tp_dealloc, (void *)batch_dealloc},
    {Py_tp_repr, (void *)batch_repr},
    {Py_tp_methods, batch_methods},
    {Py_tp_getset, batch_getset},
    {Py_bf_getbuffer, (void *)get_buffer},
    {Py_tp_doc, (void *)"A batch of cudagraybatch, (N, 1, H, W), handed to NumPy or PyTorch "
                        "without a copy; its buffer stays mapped while any array made from it "
                        "lives."},
    {0, NULL},
};

/* not from Python: open_batch()'s readers make batches */
PyType_Spec batch_spec = {"cudagray.Batch", sizeof(Batch), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, batch_slots};

}  // namespace

bool batch_type_init(PyObject *module) {
  slot_type = PyStructSequence_NewType(&slot_desc);
  if (!slot_type || PyModule_AddObject(module, "BatchSlot", Py_NewRef((PyObject *)slot_type)) < 0)
    return false;
  batch_type = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&batch_spec));
  if (!batch_type) return false;
  return PyModule_AddObject(module, "Batch", Py_NewRef((PyObject *)batch_type)) == 0;
}

bool BatchCaps::update(GstCaps *sample_caps) {
  if (sample_caps && sample_caps == caps) return true;
  gst_clear_caps(&caps);
  GstStructure *s = sample_caps ? gst_caps_get_structure(sample_caps, 0) : NULL;
  const gchar *name = s ? gst_structure_get_string(s, "dtype") : NULL;
  if (!s || !gst_structure_has_name(s, "application/x-cudagray-batch") || !name ||
      !gst_structure_get_int(s, "batch", &slots) || !gst_structure_get_int(s, "width", &width) ||
      !gst_structure_get_int(s, "height", &height)) {
    PyErr_SetString(PyExc_ValueError, "the sample carries no application/x-cudagray-batch caps");
    return false;
  }
  if (g_str_equal(name, "uint8")) {
    dtype = "uint8", itemsize = 1, dtype_code = kDLUInt;
  } else if (g_str_equal(name, "float16")) {
    dtype = "float16", itemsize = 2, dtype_code = kDLFloat;
  } else if (g_str_equal(name, "float32")) {
    dtype = "float32", itemsize = 4, dtype_code = kDLFloat;
  } else {
    PyErr_Format(PyExc_ValueError, "batches of %s are not known to this module", name);
    return false;
  }
  GstCapsFeatures *features = gst_caps_get_features(sample_caps, 0);
  on_cuda = features && gst_caps_features_contains(features, "memory:CUDAMemory");
  caps = gst_caps_ref(sample_caps);
  return true;
}

PyObject *batch_new(GstSample *sample, BatchCaps *layout) {
  GstBuffer *buffer = gst_sample_get_buffer(sample);
  if (!layout->update(gst_sample_get_caps(sample)) || !buffer) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the sample carries no buffer");
    gst_sample_unref(sample);
    return NULL;
  }
  const GstCudaGrayBatchMeta *meta = gst_buffer_get_cuda_gray_batch_meta(buffer);
  const Py_ssize_t row = (Py_ssize_t)layout->width * layout->itemsize;
  const Py_ssize_t bytes = row * layout->height * layout->slots;
  if (!meta || meta->n_slots != (guint)layout->slots ||
      gst_buffer_get_size(buffer) != (gsize)bytes) {
    PyErr_Format(error_type, "the batch buffer is not what its caps say (%zd bytes, %d slots)",
                 bytes, layout->slots);
    gst_sample_unref(sample);
    return NULL;
  }
  CudaMemoryInfo cuda;
  std::string why;
  if (layout->on_cuda && !describe_cuda_memory(buffer, &cuda, &why)) {
    PyErr_Format(error_type, "cannot hand out this CUDA batch: %s", why.c_str());
    gst_sample_unref(sample);
    return NULL;
  }
  auto alloc = reinterpret_cast<allocfunc>(PyType_GetSlot(batch_type, Py_tp_alloc));
  Batch *batch = reinterpret_cast<Batch *>(alloc(batch_type, 0));
  if (!batch) {
    gst_sample_unref(sample);
    return NULL;
  }
  const GstMapFlags flags =
      layout->on_cuda ? GstMapFlags(GST_MAP_READ | cuda_map_flag()) : GST_MAP_READ;
  if (!gst_buffer_map(buffer, &batch->map, flags)) {
    /* nothing mapped: free the object without the dealloc's unmap */
    gst_sample_unref(sample);
    reinterpret_cast<freefunc>(PyType_GetSlot(batch_type, Py_tp_free))(batch);
    Py_DECREF(batch_type);
    PyErr_SetString(error_type, "could not map the batch's buffer");
    return NULL;
  }
  batch->sample = sample;
  batch->on_cuda = layout->on_cuda;
  batch->side.cuda = cuda;
  batch->dtype = layout->dtype;
  ArrayLayout &array = batch->array;
  array.data = batch->map.data;
  array.ndim = 4;
  array.itemsize = layout->itemsize;
  array.shape[0] = layout->slots;
  array.shape[1] = 1;
  array.shape[2] = layout->height;
  array.shape[3] = layout->width;
  array.strides[3] = layout->itemsize;
  array.strides[2] = row;
  array.strides[1] = array.strides[0] = row * layout->height;
  array.dtype_code = layout->dtype_code;
  array.typestr = layout->itemsize == 1 ? "|u1" : layout->itemsize == 2 ? "<f2" : "<f4";
  array.buffer_format = layout->itemsize == 1 ? "B" : layout->itemsize == 2 ? "<e" : "<f";
  batch->slots = PyTuple_New(meta->n_slots);
  for (guint i = 0; batch->slots && i < meta->n_slots; i++) {
    PyObject *slot = slot_new(meta->slots[i]);
    if (!slot)
      Py_CLEAR(batch->slots);
    else
      PyTuple_SetItem(batch->slots, i, slot);
  }
  if (!batch->slots) {
    Py_DECREF(batch);
    return NULL;
  }
  return reinterpret_cast<PyObject *>(batch);
}

}  // namespace cudagray_python
