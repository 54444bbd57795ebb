// SPDX-License-Identifier: LGPL-2.1-or-later
/* What cudagray.Frame and cudagray.Batch share: a read-only array of a mapped
 * buffer handed out through DLPack, the buffer protocol and the array
 * interfaces. Every export holds a reference to its Python object, so the
 * buffer stays mapped until the last array made from it is gone. */
#include <dlpack/dlpack.h>

#include <cstring>

#include "cudagray_python.h"

namespace cudagray_python {

namespace {

PyObject *shape_tuple(const Py_ssize_t *values, int ndim) {
  PyObject *tuple = PyTuple_New(ndim);
  for (int i = 0; tuple && i < ndim; i++) {
    PyObject *item = PyLong_FromSsize_t(values[i]);
    if (!item) {
      Py_CLEAR(tuple);
      break;
    }
    PyTuple_SetItem(tuple, i, item);
  }
  return tuple;
}

/* One DLPack export: the tensor (versioned or not), its shape and strides,
 * and what keeps its memory: the object, until the consumer calls the
 * deleter, or a copy of the export's own. */
struct Export {
  DLManagedTensor unversioned;
  DLManagedTensorVersioned versioned;
  int64_t shape[4];
  int64_t strides[4]; /* in elements */
  PyObject *owner;    /* NULL for a copy */
  void *copy;         /* the copied rows, or NULL */
};

void export_free(Export *exported) {
  /* a consumer may free its tensor on any thread, or after Python is gone */
  if (exported->owner && Py_IsInitialized()) {
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(exported->owner);
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

/* dl_device: true in *to_host when the consumer asks an array in CUDA memory
 * for system memory; false with an exception set for another device. */
bool target_device(const CudaExport *cuda, PyObject *dl_device, bool *to_host) {
  *to_host = false;
  if (dl_device == Py_None) return true;
  PyObject *own = array_dlpack_device(cuda);
  PyObject *host = Py_BuildValue("(ii)", (int)kDLCPU, 0);
  const int same = own && host ? PyObject_RichCompareBool(dl_device, own, Py_EQ) : -1;
  const int cpu = same == 0 ? PyObject_RichCompareBool(dl_device, host, Py_EQ) : 0;
  Py_XDECREF(own);
  Py_XDECREF(host);
  if (same < 0 || cpu < 0) return false;
  if (!same && !cpu) {
    PyErr_SetString(PyExc_BufferError,
                    "dl_device: cudagray hands an array over on its own device, or copied to "
                    "system memory (1, 0)");
    return false;
  }
  *to_host = cpu;
  return true;
}

/* A copy of the array's rows in system memory, without padding, into
 * exported; false with an exception set. */
bool copy_rows(PyObject *self, const ArrayLayout &array, const CudaExport *cuda, Export *exported) {
  const int last = array.ndim - 1;
  const size_t row_bytes = array.shape[last] * array.itemsize;
  Py_ssize_t rows = 1;
  for (int i = 0; i < last; i++) rows *= array.shape[i];
  exported->copy = g_malloc(row_bytes * rows);
  Py_ssize_t elements = array.shape[last];
  for (int i = last; i >= 0; i--) {
    exported->strides[i] = i == last ? 1 : elements;
    if (i < last) elements *= array.shape[i];
  }
  if (cuda) return cuda->copy_to_host(self, exported->copy, row_bytes);
  for (Py_ssize_t row = 0; row < rows; row++) {
    /* the row's offset from its index in every dimension but the last */
    Py_ssize_t offset = 0, rest = row;
    for (int i = last - 1; i >= 0; i--) {
      offset += (rest % array.shape[i]) * array.strides[i];
      rest /= array.shape[i];
    }
    memcpy(static_cast<uint8_t *>(exported->copy) + row * row_bytes,
           static_cast<const uint8_t *>(array.data) + offset, row_bytes);
  }
  return true;
}

}  // namespace

PyObject *clock_time_or_none(GstClockTime time) {
  if (!GST_CLOCK_TIME_IS_VALID(time)) Py_RETURN_NONE;
  return PyLong_FromUnsignedLongLong(time);
}

PyObject *array_interface(const ArrayLayout &array, PyObject *stream) {
  PyObject *interface =
      Py_BuildValue("{s:N,s:s,s:(KO),s:N,s:i}", "shape", shape_tuple(array.shape, array.ndim),
                    "typestr", array.typestr, "data", (unsigned long long)(uintptr_t)array.data,
                    Py_True, "strides", shape_tuple(array.strides, array.ndim), "version", 3);
  if (interface && stream && PyDict_SetItemString(interface, "stream", stream) < 0)
    Py_CLEAR(interface);
  return interface;
}

PyObject *array_dlpack_device(const CudaExport *cuda) {
  return cuda ? Py_BuildValue("(ii)", (int)kDLCUDA, cuda->device)
              : Py_BuildValue("(ii)", (int)kDLCPU, 0);
}

/* DLPack's stream argument, as the Python array API specifies it: on a CUDA
 * device, None or 1 is the legacy default stream, 2 the calling thread's
 * per-thread default stream, -1 asks for no synchronization, a larger value
 * is the consumer's stream, and 0 (ambiguous) is refused; on the CPU only
 * None. */
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
    PyErr_Format(PyExc_ValueError,
                 "stream=%lld: an array in system memory has no stream, pass None", value);
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

PyObject *array_dlpack(PyObject *self, const ArrayLayout &array, const CudaExport *cuda,
                       PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", const_cast<char **>(keywords),
                                   &stream, &max_version, &dl_device, &copy))
    return NULL;
  DLPackVersion version;
  const int versioned = versioned_export(max_version, &version);
  const int copy_asked = copy == Py_None ? -1 : PyObject_IsTrue(copy);
  bool to_host = false;
  if (versioned < 0 || (copy != Py_None && copy_asked < 0) ||
      !target_device(cuda, dl_device, &to_host))
    return NULL;
  if (to_host && copy_asked == 0) {
    PyErr_SetString(PyExc_BufferError,
                    "copy=False, and an array in CUDA memory reaches system memory only copied");
    return NULL;
  }
  const bool copied = to_host || copy_asked == 1;
  if (copied && cuda && !to_host) {
    PyErr_SetString(PyExc_BufferError,
                    "cudagray copies an array in CUDA memory only to system memory "
                    "(dl_device=(1, 0)); copy it on the GPU with its consumer's library");
    return NULL;
  }
  Export *exported = new Export();
  for (int i = 0; i < array.ndim; i++) {
    exported->shape[i] = array.shape[i];
    exported->strides[i] = array.strides[i] / array.itemsize;
  }
  void *consumer;
  bool unordered;
  /* a copy in system memory takes a stream as the CPU does: None */
  const bool ready = copied ? consumer_stream(false, stream, &consumer, &unordered) &&
                                  copy_rows(self, array, cuda, exported)
                     : cuda ? cuda->order_consumer(self, stream)
                            : consumer_stream(false, stream, &consumer, &unordered);
  if (!ready) {
    export_free(exported);
    return NULL;
  }
  if (!copied) exported->owner = Py_NewRef(self);
  DLTensor tensor;
  tensor.data = copied ? exported->copy : array.data;
  tensor.device = cuda && !copied ? DLDevice{kDLCUDA, cuda->device} : DLDevice{kDLCPU, 0};
  tensor.ndim = array.ndim;
  tensor.dtype = DLDataType{array.dtype_code, (uint8_t)(8 * array.itemsize), 1};
  tensor.shape = exported->shape;
  tensor.strides = exported->strides;
  tensor.byte_offset = 0;
  PyObject *capsule;
  if (versioned) {
    /* the array is cudagray's, read-only as the buffer protocol and the
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

int array_get_buffer(PyObject *self, const ArrayLayout &array, Py_buffer *view, int flags) {
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "cudagray's arrays are read-only");
    return -1;
  }
  Py_ssize_t len = array.itemsize;
  bool contiguous = true;
  for (int i = array.ndim - 1; i >= 0; i--) {
    contiguous = contiguous && array.strides[i] == len;
    len *= array.shape[i];
  }
  if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !contiguous) {
    PyErr_SetString(PyExc_BufferError, "the rows are padded: ask for strides (PyBUF_STRIDES)");
    return -1;
  }
  view->buf = array.data;
  view->obj = Py_NewRef(self);
  view->len = len;
  view->readonly = 1;
  view->itemsize = array.itemsize;
  view->format =
      (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char *>(array.buffer_format) : NULL;
  view->ndim = array.ndim;
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? const_cast<Py_ssize_t *>(array.shape) : NULL;
  view->strides =
      (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? const_cast<Py_ssize_t *>(array.strides) : NULL;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

}  // namespace cudagray_python
