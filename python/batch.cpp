// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudagray.Batch: one batch of cudagraybatch (docs/batch.md), N slots of
 * gray as one contiguous (N, 1, H, W) array, its GstBuffer mapped for as
 * long as the batch lives, and what its GstCudaGrayBatchMeta says of each
 * slot. Handed out as a Frame is (array.cpp); the element makes batches in
 * system memory only so far, so a Batch has no CUDA side yet: one in CUDA
 * memory would give array_dlpack a CudaExport as a Frame does. */
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
  gst_buffer_unmap(gst_sample_get_buffer(batch->sample), &batch->map);
  gst_sample_unref(batch->sample);
  reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

GstBuffer *buffer_of(PyObject *self) { return gst_sample_get_buffer(as_batch(self)->sample); }

PyObject *batch_repr(PyObject *self) {
  Batch *batch = as_batch(self);
  PyObject *pts = clock_time_or_none(GST_BUFFER_PTS(buffer_of(self)));
  if (!pts) return NULL;
  PyObject *repr = PyUnicode_FromFormat("<cudagray.Batch %zdx1x%zdx%zd %s on cpu, pts %S>",
                                        batch->array.shape[0], batch->array.shape[2],
                                        batch->array.shape[3], batch->dtype, pts);
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

PyObject *get_device(PyObject *, void *) { return PyUnicode_FromString("cpu"); }

PyObject *get_slots(PyObject *self, void *) { return Py_NewRef(as_batch(self)->slots); }

PyObject *get_array_interface(PyObject *self, void *) {
  return array_interface(as_batch(self)->array, NULL);
}

PyObject *dlpack_device(PyObject *, PyObject *) { return array_dlpack_device(NULL); }

PyObject *dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  return array_dlpack(self, as_batch(self)->array, NULL, args, kwargs);
}

int get_buffer(PyObject *self, Py_buffer *view, int flags) {
  return array_get_buffer(self, as_batch(self)->array, view, flags);
}

PyMethodDef batch_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule of the batch, (N, 1, H, W), without a copy: read-only (DLPack 1.x, for a "
     "consumer whose max_version is (1, 0) or later: the versioned tensor with its read-only "
     "flag). The batch is in system memory: stream takes None. copy=True copies it (the copy "
     "is writable); copy=False never copies."},
    {"__dlpack_device__", dlpack_device, METH_NOARGS, "(1, 0): the CPU"},
    {NULL, NULL, 0, NULL},
};

PyGetSetDef batch_getset[] = {
    {"shape", get_shape, NULL, "(N, 1, height, width)", NULL},
    {"dtype", get_dtype, NULL, "'uint8', 'float16' or 'float32'", NULL},
    {"pts", get_pts, NULL, "the tick's start in ns (docs/batch.md), or None", NULL},
    {"duration", get_duration, NULL, "the tick's length in ns, or None", NULL},
    {"device", get_device, NULL, "'cpu'", NULL},
    {"slots", get_slots, NULL, "a tuple of N cudagray.BatchSlot, one a slot", NULL},
    {"__array_interface__", get_array_interface, NULL, "NumPy's array interface", NULL},
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
  auto alloc = reinterpret_cast<allocfunc>(PyType_GetSlot(batch_type, Py_tp_alloc));
  Batch *batch = reinterpret_cast<Batch *>(alloc(batch_type, 0));
  if (!batch) {
    gst_sample_unref(sample);
    return NULL;
  }
  if (!gst_buffer_map(buffer, &batch->map, GST_MAP_READ)) {
    /* nothing mapped: free the object without the dealloc's unmap */
    gst_sample_unref(sample);
    reinterpret_cast<freefunc>(PyType_GetSlot(batch_type, Py_tp_free))(batch);
    Py_DECREF(batch_type);
    PyErr_SetString(error_type, "could not map the batch's buffer");
    return NULL;
  }
  batch->sample = sample;
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
