// SPDX-License-Identifier: LGPL-2.1-or-later
/* The Python objects of the CUDA streams that consumers read frames on. A
 * frame's release records an event on each consumer's stream, after the reads
 * queued there by then; the stream must still exist at that moment, and
 * DLPack's and the CUDA array interface's plain handles say nothing of how
 * long it lives. Its object does: CuPy destroys a stream with its Stream
 * object, and PyTorch never destroys the streams of its pool, so a frame holds
 * the object until its release. Only modules already imported are asked:
 * nothing here imports PyTorch or CuPy or starts CUDA in them. */
#include "cudagray_python.h"

namespace cudagray_python {

namespace {

/* An attribute of an imported module, by a dotted path; NULL, with no
 * exception, when the module is not imported or has no such attribute. */
PyObject *imported_attribute(const char *module_name, const char *path) {
  PyObject *modules = PySys_GetObject("modules"); /* borrowed */
  PyObject *object = modules ? PyDict_GetItemString(modules, module_name) : NULL;
  if (!object) return NULL;
  Py_INCREF(object);
  PyObject *names = PyUnicode_FromString(path);
  PyObject *parts = names ? PyUnicode_Split(names, NULL, -1) : NULL;
  Py_XDECREF(names);
  if (!parts) {
    Py_DECREF(object);
    PyErr_Clear();
    return NULL;
  }
  for (Py_ssize_t i = 0; object && i < PyList_Size(parts); i++) {
    PyObject *next = PyObject_GetAttr(object, PyList_GetItem(parts, i));
    Py_DECREF(object);
    object = next;
  }
  Py_DECREF(parts);
  if (!object) PyErr_Clear();
  return object;
}

/* The handle of a stream object: PyTorch's cuda_stream, CuPy's ptr; -1 when
 * it has neither. */
intptr_t handle_of(PyObject *stream) {
  for (const char *name : {"cuda_stream", "ptr"}) {
    PyObject *value = PyObject_GetAttrString(stream, name);
    if (!value) {
      PyErr_Clear();
      continue;
    }
    const long long handle = PyLong_Check(value) ? PyLong_AsLongLong(value) : -1;
    Py_DECREF(value);
    if (handle == -1) PyErr_Clear();
    return (intptr_t)handle;
  }
  return -1;
}

/* The current streams of PyTorch (only once it has started CUDA) and CuPy,
 * new references; either may be NULL. */
void current_streams(int device, PyObject *found[2]) {
  found[0] = found[1] = NULL;
  PyObject *initialized = imported_attribute("torch", "cuda.is_initialized");
  PyObject *started = initialized ? PyObject_CallObject(initialized, NULL) : NULL;
  if (started == Py_True) {
    PyObject *current = imported_attribute("torch", "cuda.current_stream");
    found[0] = current ? PyObject_CallFunction(current, "i", device) : NULL;
    Py_XDECREF(current);
  }
  Py_XDECREF(started);
  Py_XDECREF(initialized);
  /* CuPy's current stream is the calling thread's on its current device,
   * which cupy.from_dlpack sets to the frame's */
  PyObject *current = imported_attribute("cupy", "cuda.get_current_stream");
  found[1] = current ? PyObject_CallObject(current, NULL) : NULL;
  Py_XDECREF(current);
  PyErr_Clear();
}

/* A handle of a stream of its own, not a default stream (0: the default
 * stream of a library built for it, 1 and 2: CUDA's pseudo-handles). */
bool own_stream(intptr_t handle) { return handle > per_thread_default_stream; }

}  // namespace

PyObject *current_stream_owner(int device, intptr_t handle) {
  PyObject *found[2];
  current_streams(device, found);
  PyObject *owner = NULL;
  for (PyObject *stream : found) {
    if (stream && !owner && handle_of(stream) == handle)
      owner = stream;
    else
      Py_XDECREF(stream);
  }
  return owner;
}

bool add_current_streams(ConsumerStreams **streams, int device) {
  PyObject *found[2];
  current_streams(device, found);
  bool ok = true;
  for (PyObject *stream : found) {
    if (!stream) continue;
    const intptr_t handle = handle_of(stream);
    if (!ok || !own_stream(handle)) {
      Py_DECREF(stream);
      continue;
    }
    std::string why;
    if (!add_consumer(streams, device, reinterpret_cast<void *>(handle), stream, &why)) {
      PyErr_Format(PyExc_BufferError, "could not keep the consumer's stream: %s", why.c_str());
      ok = false;
    }
  }
  return ok;
}

bool stream_argument(PyObject *stream, intptr_t *handle, PyObject **owner) {
  *owner = NULL;
  if (PyLong_Check(stream)) {
    const long long value = PyLong_AsLongLong(stream);
    if (value == -1 && PyErr_Occurred()) return false;
    if (value <= 0) {
      PyErr_Format(PyExc_ValueError,
                   "stream=%lld: takes 1 (legacy default stream), 2 (per-thread default "
                   "stream), a CUDA stream handle or a PyTorch or CuPy stream",
                   value);
      return false;
    }
    *handle = (intptr_t)value;
    /* the caller vouches for the stream's life: no object to hold */
    *owner = Py_NewRef(Py_None);
    return true;
  }
  *handle = handle_of(stream);
  if (*handle < 0) {
    PyErr_SetString(PyExc_TypeError,
                    "stream must be an int or a stream object with cuda_stream (PyTorch) or "
                    "ptr (CuPy)");
    return false;
  }
  /* 0 from an object: its library's default stream, the legacy one */
  if (*handle == 0) *handle = legacy_default_stream;
  *owner = Py_NewRef(stream);
  return true;
}

}  // namespace cudagray_python
