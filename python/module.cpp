// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudagray module: open(), open_batch(), frame_from_sample(), Frame,
 * Batch, BatchSlot, Reader, Error, Warning. */
#include <dlfcn.h>

#include "cudagray_python.h"

GST_DEBUG_CATEGORY(cudagray_python_debug);

namespace cudagray_python {

PyObject *error_type;
PyObject *warning_type;

namespace {

/* frame_from_sample(sample): a Frame of a Gst.Sample from a PyGObject app's
 * own appsink. PyGObject's hash of a boxed value is its C pointer
 * (gi/pygboxed.c), the address DeepStream's bindings take from hash() too;
 * the wrapper's GType is checked before it is trusted. */
PyObject *frame_from_sample(PyObject *, PyObject *sample) {
  PyObject *gtype = PyObject_GetAttrString(sample, "__gtype__");
  PyObject *name = gtype ? PyObject_GetAttrString(gtype, "name") : NULL;
  Py_XDECREF(gtype);
  const char *type_name =
      name && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
  const bool is_sample = type_name && g_strcmp0(type_name, g_type_name(GST_TYPE_SAMPLE)) == 0;
  Py_XDECREF(name);
  PyErr_Clear();
  if (!is_sample) {
    PyErr_SetString(PyExc_TypeError, "frame_from_sample takes a Gst.Sample (PyGObject)");
    return NULL;
  }
  const Py_hash_t address = PyObject_Hash(sample);
  if (address == -1 && PyErr_Occurred()) return NULL;
  GstSample *gst_sample = reinterpret_cast<GstSample *>((uintptr_t)address);
  if (!GST_IS_SAMPLE(gst_sample)) {
    PyErr_SetString(PyExc_TypeError, "this PyGObject does not give its Gst.Sample's address");
    return NULL;
  }
  FrameCaps layout;
  return frame_new(gst_sample_ref(gst_sample), &layout);
}

PyMethodDef module_methods[] = {
    {"open", (PyCFunction)(void (*)(void))reader_open, METH_VARARGS | METH_KEYWORDS,
     "open(source, *, width=None, height=None, format='GRAY8', memory='auto', **properties)\n--\n\n"
     "A Reader of `source ! cudagray ! caps ! appsink`. source: a file path, a URI (file, "
     "http(s), rtsp, ...: decoded by uridecodebin, with NVDEC first where GStreamer's nvcodec "
     "found a GPU), a device path (/dev/video0: v4l2src ! decodebin), "
     "or a gst-launch-1.0 fragment that makes video; reader.pipeline_description says what "
     "was chosen. width, height: the size cudagray scales "
     "to. format: GRAY8 or GRAY16. memory: cuda (frames stay on the GPU), system, or auto "
     "(cuda when cudagray converts with CUDA, decided once its backend is open). GStreamer's "
     "warnings go to the warnings module as cudagray.Warning. properties: cudagray's (backend, "
     "matrix, weights, max_inflight, cuda_device_id, ...; '_' for '-')."},
    {"open_batch", (PyCFunction)(void (*)(void))reader_open_batch, METH_VARARGS | METH_KEYWORDS,
     "open_batch(sources, *, width=640, height=640, dtype='float32', mean=0.0, std=1.0, "
     "batch_size=0, memory='system', live=False, **properties)\n--\n\n"
     "A Reader of batches: each of sources (what open() takes: a file path, a URI, a device "
     "path or a gst-launch-1.0 fragment that makes video) linked to the request pad sink_i of "
     "one cudagraybatch, whose batches (cudagray.Batch, (N, 1, height, width)) it hands out; "
     "batch.slots[k].source is the index in sources. width, height, dtype, mean, std, "
     "batch_size and properties: cudagraybatch's (backend, method, add_borders, matrix, "
     "weights, model_info; '_' for '-'; docs/batch.md). memory: cuda (batches stay on the GPU, "
     "which needs backend=cuda), system, or auto (the same as system). live: True syncs the "
     "appsink to the clock, so batches come at their times (sources that are not live play "
     "at their rate); False hands each out as soon as it is made."},
    {"frame_from_sample", frame_from_sample, METH_O,
     "frame_from_sample(sample)\n--\n\nA Frame of a Gst.Sample pulled from a PyGObject app's "
     "own appsink (GRAY8 or GRAY16_LE, in system or CUDA memory)."},
    {NULL, NULL, 0, NULL},
};

PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "cudagray",
    "cudagray's gray frames for NumPy, PyTorch and CuPy, without a copy (DLPack, the CUDA array "
    "interface, the buffer protocol).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* pip installs the plugin in a directory beside the module (meson's
 * python-wheel), where GStreamer does not look: shows GStreamer the plugins
 * there, if that directory exists. */
void register_plugins_beside_module() {
  Dl_info module;
  if (!dladdr(reinterpret_cast<void *>(&register_plugins_beside_module), &module) ||
      !module.dli_fname)
    return;
  gchar *module_dir = g_path_get_dirname(module.dli_fname);
  gchar *plugins = g_build_filename(module_dir, CUDAGRAY_WHEEL_PLUGINS, NULL);
  if (g_file_test(plugins, G_FILE_TEST_IS_DIR)) gst_registry_scan_path(gst_registry_get(), plugins);
  g_free(plugins);
  g_free(module_dir);
}

}  // namespace

}  // namespace cudagray_python

PyMODINIT_FUNC PyInit_cudagray(void) {
  using namespace cudagray_python;
  GError *error = NULL;
  if (!gst_init_check(NULL, NULL, &error)) {
    PyErr_Format(PyExc_ImportError, "GStreamer could not be initialised: %s", error->message);
    g_error_free(error);
    return NULL;
  }
  GST_DEBUG_CATEGORY_INIT(cudagray_python_debug, "cudagray-python", 0, "cudagray's Python module");
  register_plugins_beside_module();
  PyObject *module = PyModule_Create(&module_def);
  if (!module) return NULL;
  error_type = PyErr_NewExceptionWithDoc("cudagray.Error",
                                         "GStreamer's error, naming the element that reported it",
                                         PyExc_RuntimeError, NULL);
  warning_type = PyErr_NewExceptionWithDoc(
      "cudagray.Warning", "A warning GStreamer posted, naming the element that posted it",
      PyExc_RuntimeWarning, NULL);
  if (!error_type || PyModule_AddObject(module, "Error", Py_NewRef(error_type)) < 0 ||
      !warning_type || PyModule_AddObject(module, "Warning", Py_NewRef(warning_type)) < 0 ||
      !frame_type_init(module) || !batch_type_init(module) || !reader_type_init(module) ||
      PyModule_AddStringConstant(module, "__version__", CUDAGRAY_VERSION) < 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
