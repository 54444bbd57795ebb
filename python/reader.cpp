// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudagray.open(): a reader that runs `source ! cudagray ! caps ! appsink`
 * and hands out its frames; cudagray.open_batch(): one that runs sources
 * into the request pads of one cudagraybatch and hands out its batches. A
 * context manager and an iterator. */
#include <gst/app/gstappsink.h>

#include <cstring>
#include <string>
#include <vector>

#include "cudagray_python.h"

namespace cudagray_python {

namespace {

PyTypeObject *reader_type;

/* How long a pull waits before Python gets to run signal handlers (Ctrl-C,
 * a SIGTERM handler that closes the reader); close() does not wait for it:
 * the pipeline's stop wakes the pull at once. */
constexpr GstClockTime pull_timeout = 100 * GST_MSECOND;

/* The pipeline's fields are read and cleared only with the GIL held, the
 * lock between next() and close() in any threads: a next() waiting in a pull
 * holds its own reference to the sink, and close() clears the fields before
 * it stops the pipeline, which ends that pull. */
struct Reader {
  PyObject_HEAD GstElement *pipeline; /* NULL once closed */
  GstElement *sink;
  GstBus *bus;
  PyObject *description;
  /* "cudagray ... ! caps ! appsink", for pipeline_description; a batch
   * reader's names its cudagraybatch "cudagray", the sources link to */
  PyObject *downstream;
  bool finished;           /* end of stream reached */
  FrameCaps *layout;       /* a frame reader's, else NULL */
  BatchCaps *batch_layout; /* a batch reader's, else NULL */
  int sources;             /* a batch reader's: one a sink pad sink_0, sink_1, ... */
};

Reader *as_reader(PyObject *self) { return reinterpret_cast<Reader *>(self); }

/* Closes the reader: from here on every next() ends the iteration. */
void stop(Reader *reader) {
  GstElement *pipeline = reader->pipeline;
  if (!pipeline) return;
  GstElement *sink = reader->sink;
  GstBus *bus = reader->bus;
  reader->pipeline = NULL;
  reader->sink = NULL;
  reader->bus = NULL;
  /* joins the streaming threads, which never need the GIL, and wakes the
   * pulls of other threads' next() */
  GilReleased released;
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
}

/* Raises cudagray.Error from the first error on the bus, named by the
 * element that posted it, as gst-launch-1.0 reports it; false when none. */
bool raise_bus_error(Reader *reader) {
  GstMessage *message = gst_bus_pop_filtered(reader->bus, GST_MESSAGE_ERROR);
  if (!message) return false;
  GError *error = NULL;
  gchar *debug = NULL;
  gst_message_parse_error(message, &error, &debug);
  gchar *element = gst_object_get_path_string(GST_MESSAGE_SRC(message));
  PyErr_Format(error_type, "%s: %s%s%s", element, error->message, debug ? "\n" : "",
               debug ? debug : "");
  g_free(element);
  g_free(debug);
  g_error_free(error);
  gst_message_unref(message);
  return true;
}

/* Hands the warnings on the bus to Python's warnings module as
 * cudagray.Warning, named by the element that posted them; false with the
 * exception set when a filter made one an error. */
bool warn_bus_warnings(Reader *reader) {
  GstMessage *message;
  while (reader->bus && (message = gst_bus_pop_filtered(reader->bus, GST_MESSAGE_WARNING))) {
    GError *error = NULL;
    gchar *debug = NULL;
    gst_message_parse_warning(message, &error, &debug);
    gchar *element = gst_object_get_path_string(GST_MESSAGE_SRC(message));
    PyObject *text = PyUnicode_FromFormat("%s: %s%s%s", element, error->message, debug ? "\n" : "",
                                          debug ? debug : "");
    g_free(element);
    g_free(debug);
    g_error_free(error);
    gst_message_unref(message);
    const char *utf8 = text ? PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
    const bool warned = utf8 && PyErr_WarnEx(warning_type, utf8, 1) == 0;
    Py_XDECREF(text);
    if (!warned) return false;
  }
  return true;
}

/* The next frame; NULL without an exception (StopIteration) at the end of
 * the stream and once the reader is closed, also when it is closed while
 * this waits, by another thread or a signal handler. */
PyObject *reader_next(PyObject *self) {
  Reader *reader = as_reader(self);
  for (;;) {
    /* also while waiting: frames held for their consumers may be all that
     * cudagray's pool has left */
    release_consumed_frames();
    if (!warn_bus_warnings(reader)) return NULL;
    if (!reader->pipeline) return NULL;
    if (raise_bus_error(reader)) {
      stop(reader);
      return NULL;
    }
    if (reader->finished) return NULL;
    GstAppSink *sink = GST_APP_SINK(gst_object_ref(reader->sink));
    GstSample *sample;
    bool eos = false;
    {
      GilReleased released;
      sample = gst_app_sink_try_pull_sample(sink, pull_timeout);
      if (!sample) eos = gst_app_sink_is_eos(sink);
      gst_object_unref(sink);
    }
    if (sample)
      return reader->batch_layout ? batch_new(sample, reader->batch_layout)
                                  : frame_new(sample, reader->layout);
    reader->finished = eos;
    if (PyErr_CheckSignals() < 0) {
      stop(reader);
      return NULL;
    }
  }
}

PyObject *reader_close(PyObject *self, PyObject *) {
  stop(as_reader(self));
  Py_RETURN_NONE;
}

PyObject *reader_enter(PyObject *self, PyObject *) { return Py_NewRef(self); }

PyObject *reader_exit(PyObject *self, PyObject *) {
  stop(as_reader(self));
  Py_RETURN_FALSE;
}

PyObject *get_closed(PyObject *self, void *) {
  return PyBool_FromLong(as_reader(self)->pipeline == NULL);
}

PyObject *get_description(PyObject *self, void *) {
  return Py_NewRef(as_reader(self)->description);
}

/* A property's value as gst-launch-1.0 reads it: quoted where a space, a
 * '!' or a quote would end it. */
std::string launch_value(const char *value) {
  if (!strpbrk(value, " !\"'\\")) return value;
  std::string quoted = "\"";
  for (const char *c = value; *c; c++) {
    if (*c == '"' || *c == '\\') quoted += '\\';
    quoted += *c;
  }
  return quoted + "\"";
}

/* An element as gst-launch-1.0 names it, with the properties that say where
 * its data comes from. */
std::string element_text(GstElement *element) {
  GstElementFactory *factory = gst_element_get_factory(element);
  std::string text = factory ? GST_OBJECT_NAME(factory) : G_OBJECT_TYPE_NAME(element);
  for (const char *name : {"location", "uri", "device"}) {
    GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), name);
    if (!spec || spec->value_type != G_TYPE_STRING || !(spec->flags & G_PARAM_READABLE)) continue;
    gchar *value = NULL;
    g_object_get(element, name, &value, NULL);
    if (value) text += std::string(" ") + name + "=" + launch_value(value);
    g_free(value);
  }
  return text;
}

/* The pad whose data reaches pad's peer: through bins (ghost pads) to the
 * element inside that pushes it, out of a bin to what feeds it. NULL when
 * nothing is linked; a bin's ghost pad without target yet (decodebin before
 * it has chosen) is that pad. */
GstPad *upstream_pad(GstPad *sink) {
  GstPad *pad = gst_pad_get_peer(sink);
  while (pad) {
    if (GST_IS_GHOST_PAD(pad)) {
      /* a bin's source pad: into the bin */
      GstPad *target = gst_ghost_pad_get_target(GST_GHOST_PAD(pad));
      if (!target) return pad;
      gst_object_unref(pad);
      pad = target;
      continue;
    }
    GstObject *parent = gst_object_get_parent(GST_OBJECT(pad));
    if (!parent || !GST_IS_GHOST_PAD(parent)) {
      if (parent) gst_object_unref(parent);
      return pad;
    }
    /* the inside of a bin's sink pad: out of the bin */
    gst_object_unref(pad);
    pad = gst_pad_get_peer(GST_PAD(parent));
    gst_object_unref(parent);
  }
  return NULL;
}

/* The sink pad whose data leaves by src (demuxers, multiqueue: the one of
 * that stream); NULL for a source. */
GstPad *internal_sink_pad(GstPad *src) {
  GstIterator *links = gst_pad_iterate_internal_links(src);
  GstPad *sink = NULL;
  GValue item = G_VALUE_INIT;
  while (links && !sink && gst_iterator_next(links, &item) == GST_ITERATOR_OK) {
    GstPad *pad = GST_PAD(g_value_get_object(&item));
    if (GST_PAD_IS_SINK(pad)) sink = GST_PAD(gst_object_ref(pad));
    g_value_reset(&item);
  }
  g_value_unset(&item);
  if (links) gst_iterator_free(links);
  return sink;
}

/* The elements that feed sink (its reference taken) now, source first,
 * joined by " ! "; empty when nothing is linked to it yet. */
std::string upstream_description(GstPad *sink) {
  std::string text;
  while (sink) {
    GstPad *src = upstream_pad(sink);
    gst_object_unref(sink);
    sink = NULL;
    if (!src) break;
    GstElement *element = gst_pad_get_parent_element(src);
    if (element) {
      text = element_text(element) + (text.empty() ? "" : " ! ") + text;
      gst_object_unref(element);
      /* a bin that has not linked its inside yet ends the walk */
      if (!GST_IS_GHOST_PAD(src)) sink = internal_sink_pad(src);
    }
    gst_object_unref(src);
  }
  return text;
}

/* The pipeline as gst-launch-1.0 takes it, of its sources' descriptions:
 * `source ! downstream`, or a batch reader's `downstream source_0 !
 * cudagray.sink_0 ...`. */
PyObject *joined_description(Reader *reader, const std::vector<std::string> &sources) {
  if (!reader->batch_layout)
    return PyUnicode_FromFormat("%s ! %U", sources[0].c_str(), reader->downstream);
  std::string links;
  for (size_t i = 0; i < sources.size(); i++)
    links += " " + sources[i] + " ! cudagray.sink_" + std::to_string(i);
  return PyUnicode_FromFormat("%U%s", reader->downstream, links.c_str());
}

PyObject *get_pipeline_description(PyObject *self, void *) {
  Reader *reader = as_reader(self);
  if (!reader->pipeline) return Py_NewRef(reader->description);
  GstElement *cudagray = gst_bin_get_by_name(GST_BIN(reader->pipeline), "cudagray");
  std::vector<std::string> upstream;
  {
    GilReleased released;
    if (!reader->batch_layout)
      upstream.push_back(upstream_description(gst_element_get_static_pad(cudagray, "sink")));
    for (int i = 0; i < reader->sources; i++) {
      gchar *name = g_strdup_printf("sink_%d", i);
      upstream.push_back(upstream_description(gst_element_get_static_pad(cudagray, name)));
      g_free(name);
    }
  }
  gst_object_unref(cudagray);
  /* nothing linked to cudagray yet (a decodebin still choosing) */
  for (const std::string &text : upstream)
    if (text.empty()) return Py_NewRef(reader->description);
  return joined_description(reader, upstream);
}

void reader_dealloc(PyObject *self) {
  Reader *reader = as_reader(self);
  PyTypeObject *type = Py_TYPE(self);
  stop(reader);
  Py_XDECREF(reader->description);
  Py_XDECREF(reader->downstream);
  delete reader->layout;
  delete reader->batch_layout;
  reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

PyMethodDef reader_methods[] = {
    {"close", reader_close, METH_NOARGS,
     "Stops the pipeline; safe from any thread and from signal handlers. A next() waiting for a "
     "frame then ends the iteration (StopIteration), as every later one does. Frames already "
     "handed out stay valid."},
    {"__enter__", reader_enter, METH_NOARGS, NULL},
    {"__exit__", reader_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyGetSetDef reader_getset[] = {
    {"closed", get_closed, NULL, "True once the pipeline is stopped", NULL},
    {"description", get_description, NULL,
     "the pipeline open() or open_batch() made, as gst-launch-1.0 would take it", NULL},
    {"pipeline_description", get_pipeline_description, NULL,
     "the elements linked now, from the sources to the appsink, as gst-launch-1.0 would take "
     "them: for a file, URI or device, the decoding chosen (complete once the first frame "
     "is read); description once the reader is closed",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyType_Slot reader_slots[] = {
    {Py_tp_dealloc, (void *)reader_dealloc},
    {Py_tp_iter, (void *)PyObject_SelfIter},
    {Py_tp_iternext, (void *)reader_next},
    {Py_tp_methods, reader_methods},
    {Py_tp_getset, reader_getset},
    {Py_tp_doc, (void *)"Frames of `source ! cudagray ! appsink` (open()) or batches of "
                        "`sources ! cudagraybatch ! appsink` (open_batch()): iterate it, and "
                        "close it (or use it in a with block)."},
    {0, NULL},
};

/* not from Python: cudagray.open() and open_batch() make readers, and object.__new__ would give
 * one that nothing was read into */
PyType_Spec reader_spec = {"cudagray.Reader", sizeof(Reader), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, reader_slots};

/* The text GStreamer deserializes into a property: bools as true/false,
 * sequences (weights) joined by commas, anything else as str() gives it. */
bool property_text(PyObject *value, std::string *text) {
  if (PyBool_Check(value)) {
    *text = value == Py_True ? "true" : "false";
    return true;
  }
  if (PyList_Check(value) || PyTuple_Check(value)) {
    PyObject *items = PySequence_List(value);
    if (!items) return false;
    text->clear();
    bool ok = true;
    for (Py_ssize_t i = 0; ok && i < PyList_Size(items); i++) {
      std::string item;
      ok = property_text(PyList_GetItem(items, i), &item);
      *text += (i ? "," : "") + item;
    }
    Py_DECREF(items);
    return ok;
  }
  PyObject *str = PyObject_Str(value);
  const char *utf8 = str ? PyUnicode_AsUTF8AndSize(str, NULL) : NULL;
  if (utf8) *text = utf8;
  Py_XDECREF(str);
  return utf8 != NULL;
}

/* Sets an element's properties from keyword arguments (Python names: '_'
 * for '-'), checked as gst-launch-1.0 would and against their ranges. */
bool set_properties(GstElement *element, PyObject *properties, std::string *launch) {
  const gchar *factory = GST_OBJECT_NAME(gst_element_get_factory(element));
  PyObject *key, *value;
  Py_ssize_t position = 0;
  while (PyDict_Next(properties, &position, &key, &value)) {
    const char *python_name = PyUnicode_AsUTF8AndSize(key, NULL);
    if (!python_name) return false;
    std::string name = python_name;
    for (char &c : name)
      if (c == '_') c = '-';
    GParamSpec *pspec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), name.c_str());
    if (!pspec || !(pspec->flags & G_PARAM_WRITABLE)) {
      PyErr_Format(PyExc_TypeError, "%s has no property %s that can be set", factory, name.c_str());
      return false;
    }
    std::string text;
    if (!property_text(value, &text)) return false;
    GValue gvalue = G_VALUE_INIT;
    g_value_init(&gvalue, G_PARAM_SPEC_VALUE_TYPE(pspec));
    /* g_object_set_property would only log a value out of range */
    const bool parsed =
        gst_value_deserialize(&gvalue, text.c_str()) && !g_param_value_validate(pspec, &gvalue);
    if (parsed) g_object_set_property(G_OBJECT(element), name.c_str(), &gvalue);
    *launch += " " + name + "=" + text;
    g_value_unset(&gvalue);
    if (!parsed) {
      PyErr_Format(PyExc_ValueError, "%s's %s cannot be \"%s\"", factory, name.c_str(),
                   text.c_str());
      return false;
    }
  }
  return true;
}

/* The device cudagray converts on: its cuda-device-id, the first (0) for -1. */
int cuda_device(GstElement *cudagray) {
  gint device = -1;
  g_object_get(cudagray, "cuda-device-id", &device, NULL);
  return device < 0 ? 0 : device;
}

/* Empty when this cudagray can hand its frames over in CUDA memory. */
std::string cuda_output_unavailable(GstElement *cudagray) {
  GValue backend = G_VALUE_INIT;
  g_value_init(&backend, G_PARAM_SPEC_VALUE_TYPE(g_object_class_find_property(
                             G_OBJECT_GET_CLASS(cudagray), "backend")));
  g_object_get_property(G_OBJECT(cudagray), "backend", &backend);
  gchar *nick = gst_value_serialize(&backend);
  const bool cpu = g_strcmp0(nick, "cpu") == 0;
  g_free(nick);
  g_value_unset(&backend);
  if (cpu) return "backend=cpu converts in system memory";
  GstPadTemplate *src = gst_element_get_pad_template(cudagray, "src");
  GstCaps *caps = src ? gst_pad_template_get_caps(src) : NULL;
  bool offered = false;
  for (guint i = 0; caps && i < gst_caps_get_size(caps); i++)
    offered |= gst_caps_features_contains(gst_caps_get_features(caps, i), "memory:CUDAMemory");
  if (caps) gst_caps_unref(caps);
  if (!offered) return "this cudagray plugin was built without CUDA memory output";
  return cuda_frames_unavailable(cuda_device(cudagray));
}

/* Pops the options open() knows from kwargs (a copy of the caller's); what
 * stays are cudagray's properties. */
struct Options {
  int width = 0, height = 0; /* 0: the source's */
  std::string format = "GRAY8";
  std::string memory = "auto";
};

bool pop_int(PyObject *kwargs, const char *key, int *out) {
  PyObject *value = PyDict_GetItemString(kwargs, key);
  if (!value) return true;
  if (value != Py_None) {
    const long number = PyLong_AsLong(value);
    if (number == -1 && PyErr_Occurred()) return false;
    if (number <= 0 || number > G_MAXINT) {
      PyErr_Format(PyExc_ValueError, "%s must be a positive number of pixels", key);
      return false;
    }
    *out = (int)number;
  }
  return PyDict_DelItemString(kwargs, key) == 0;
}

bool pop_string(PyObject *kwargs, const char *key, std::string *out) {
  PyObject *value = PyDict_GetItemString(kwargs, key);
  if (!value) return true;
  const char *utf8 = PyUnicode_Check(value) ? PyUnicode_AsUTF8AndSize(value, NULL) : NULL;
  if (!utf8) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s must be a string", key);
    return false;
  }
  *out = utf8;
  return PyDict_DelItemString(kwargs, key) == 0;
}

bool pop_options(PyObject *kwargs, Options *options) {
  if (!pop_int(kwargs, "width", &options->width) || !pop_int(kwargs, "height", &options->height) ||
      !pop_string(kwargs, "format", &options->format) ||
      !pop_string(kwargs, "memory", &options->memory))
    return false;
  if (options->format == "GRAY16") options->format = "GRAY16_LE";
  if (options->format != "GRAY8" && options->format != "GRAY16_LE") {
    PyErr_Format(PyExc_ValueError, "format must be GRAY8 or GRAY16, not %s",
                 options->format.c_str());
    return false;
  }
  if (options->memory != "auto" && options->memory != "cuda" && options->memory != "system") {
    PyErr_Format(PyExc_ValueError, "memory must be auto, cuda or system, not %s",
                 options->memory.c_str());
    return false;
  }
  return true;
}

/* Where the frames go: system memory, CUDA memory, or, for memory="auto"
 * where CUDA memory may be had, whichever cudagray's backend writes. */
enum class Memory { system, cuda, backends_choice };

/* The caps after cudagray: the format, the size asked for (cudagray scales
 * to it), in CUDA memory, system memory, or for the backend's choice CUDA
 * memory then system memory (choose_memory_once_open keeps one). */
GstCaps *output_caps(const Options &options, Memory memory) {
  GstCaps *caps =
      gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, options.format.c_str(), NULL);
  if (options.width) gst_caps_set_simple(caps, "width", G_TYPE_INT, options.width, NULL);
  if (options.height) gst_caps_set_simple(caps, "height", G_TYPE_INT, options.height, NULL);
  if (memory == Memory::system) return caps;
  GstCaps *in_cuda = gst_caps_copy(caps);
  gst_caps_set_features(in_cuda, 0, gst_caps_features_new("memory:CUDAMemory", NULL));
  if (memory == Memory::cuda) {
    gst_caps_unref(caps);
    return in_cuda;
  }
  return gst_caps_merge(in_cuda, caps);
}

/* memory="auto": at the first caps query the appsink answers, cudagray has
 * opened its backend (elements start from the sink up, before any data
 * flows), and the appsink keeps the caps of the memory that backend writes:
 * CUDA memory for the CUDA backend, system memory when backend=auto fell back
 * to the CPU (cudagray's stats say the device, -1 for the CPU). */
GstPadProbeReturn choose_memory_once_open(GstPad *pad, GstPadProbeInfo *info, gpointer) {
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY(info);
  if (GST_QUERY_TYPE(query) != GST_QUERY_CAPS && GST_QUERY_TYPE(query) != GST_QUERY_ACCEPT_CAPS)
    return GST_PAD_PROBE_OK;
  GstElement *sink = gst_pad_get_parent_element(pad);
  GstObject *pipeline = gst_object_get_parent(GST_OBJECT(sink));
  GstElement *cudagray = pipeline ? gst_bin_get_by_name(GST_BIN(pipeline), "cudagray") : NULL;
  gint device = -1;
  GstStructure *stats = NULL;
  if (cudagray) g_object_get(cudagray, "stats", &stats, NULL);
  if (stats) gst_structure_get_int(stats, "cuda-device-id", &device);
  GstCaps *both = NULL;
  g_object_get(sink, "caps", &both, NULL);
  GstCaps *chosen = gst_caps_copy_nth(both, device >= 0 ? 0 : 1);
  GST_INFO_OBJECT(sink, "cudagray converts on device %d: %" GST_PTR_FORMAT, device, chosen);
  g_object_set(sink, "caps", chosen, NULL);
  gst_caps_unref(chosen);
  gst_caps_unref(both);
  if (stats) gst_structure_free(stats);
  if (cudagray) gst_object_unref(cudagray);
  if (pipeline) gst_object_unref(pipeline);
  gst_object_unref(sink);
  return GST_PAD_PROBE_REMOVE;
}

/* A decoder of the nvcodec plugin (NVDEC, nvJPEG): nvcodec registers its
 * decoders only where it finds an NVIDIA GPU. */
bool nvcodec_decoder(GstElementFactory *factory) {
  const gchar *klass = gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_KLASS);
  return g_strcmp0(gst_plugin_feature_get_plugin_name(GST_PLUGIN_FEATURE(factory)), "nvcodec") ==
             0 &&
         klass && strstr(klass, "Decoder");
}

/* decodebin's autoplug-sort: nvcodec's decoders first, each group in the
 * order of its ranks, so that frames are decoded on the GPU, in CUDA memory
 * cudagray converts without a copy. */
GValueArray *nvcodec_decoders_first(GstElement *, GstPad *, GstCaps *, GValueArray *factories,
                                    gpointer) {
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  GValueArray *sorted = g_value_array_new(factories->n_values);
  for (bool nvcodec : {true, false})
    for (guint i = 0; i < factories->n_values; i++) {
      GValue *factory = g_value_array_get_nth(factories, i);
      if (nvcodec_decoder(GST_ELEMENT_FACTORY(g_value_get_object(factory))) == nvcodec)
        g_value_array_append(sorted, factory);
    }
  G_GNUC_END_IGNORE_DEPRECATIONS
  return sorted;
}

/* What open()'s source names: a video device, a file (decoded from its
 * URI), a URI, or else a gst-launch-1.0 fragment (videotestsrc, a name that
 * is no file, or text with a '!' or a space that names no file). */
enum class SourceKind { fragment, uri, device };

SourceKind source_kind(const char *source, std::string *uri) {
  if (g_str_has_prefix(source, "/dev/") && !strpbrk(source, "! ")) return SourceKind::device;
  const bool bare = !strpbrk(source, "! ");
  if (bare && gst_uri_is_valid(source)) {
    *uri = source;
    return SourceKind::uri;
  }
  const bool path = g_file_test(source, G_FILE_TEST_EXISTS) ||
                    (bare && (g_path_is_absolute(source) || g_str_has_prefix(source, "./") ||
                              g_str_has_prefix(source, "../")));
  gchar *file_uri = path ? gst_filename_to_uri(source, NULL) : NULL;
  if (!file_uri) return SourceKind::fragment;
  *uri = file_uri;
  g_free(file_uri);
  return SourceKind::uri;
}

/* One source as the pipeline parses it (a URI's or a device's decoder
 * named decoder, set up by setup_source once made) and as descriptions
 * show it. */
struct Source {
  SourceKind kind;
  std::string uri, decoder, parsed, described;
};

Source make_source(const char *text, const std::string &decoder) {
  Source source;
  source.kind = source_kind(text, &source.uri);
  source.decoder = decoder;
  source.parsed = source.described = text;
  /* a URI or a file is decoded by uridecodebin, a device's frames (raw,
   * or MJPEG) by decodebin */
  if (source.kind == SourceKind::uri) {
    source.parsed = "uridecodebin name=" + decoder;
    source.described = "uridecodebin uri=" + source.uri;
  }
  if (source.kind == SourceKind::device) {
    source.described = std::string("v4l2src device=") + text + " ! decodebin";
    source.parsed = source.described + " name=" + decoder;
  }
  return source;
}

void setup_source(GstElement *pipeline, const Source &source) {
  if (source.kind == SourceKind::fragment) return;
  GstElement *decoder = gst_bin_get_by_name(GST_BIN(pipeline), source.decoder.c_str());
  if (source.kind == SourceKind::uri) g_object_set(decoder, "uri", source.uri.c_str(), NULL);
  g_signal_connect(decoder, "autoplug-sort", G_CALLBACK(nvcodec_decoders_first), NULL);
  gst_object_unref(decoder);
}

/* Parses launch into reader's pipeline (its appsink named cudagray-sink),
 * sets up its sources and sets the properties of the element named
 * cudagray, adding them to *element; that element, or NULL with a Python
 * exception set. */
GstElement *parse_pipeline(Reader *reader, const std::string &launch,
                           const std::vector<Source> &sources, PyObject *properties,
                           std::string *element) {
  GError *error = NULL;
  GstElement *pipeline =
      gst_parse_launch_full(launch.c_str(), NULL, GST_PARSE_FLAG_FATAL_ERRORS, &error);
  if (!pipeline) {
    PyErr_Format(error_type, "could not make the pipeline \"%s\": %s", launch.c_str(),
                 error->message);
    g_error_free(error);
    return NULL;
  }
  reader->pipeline = pipeline;
  reader->bus = gst_element_get_bus(pipeline);
  reader->sink = gst_bin_get_by_name(GST_BIN(pipeline), "cudagray-sink");
  for (const Source &source : sources) setup_source(pipeline, source);
  GstElement *cudagray = gst_bin_get_by_name(GST_BIN(pipeline), "cudagray");
  if (!set_properties(cudagray, properties, element)) gst_clear_object(&cudagray);
  return cudagray;
}

/* The appsink's settings: a reader's next() pulls. */
constexpr const char *appsink = "appsink name=cudagray-sink max-buffers=4 enable-last-sample=false";

/* Builds the pipeline into reader; false with a Python exception set. */
bool build(Reader *reader, const char *text, const Options &options, PyObject *properties) {
  const Source source = make_source(text, "cudagray-source");
  std::string element = "cudagray";
  GstElement *cudagray = parse_pipeline(
      reader, source.parsed + " ! cudagray name=cudagray ! " + appsink + " sync=false", {source},
      properties, &element);
  if (!cudagray) return false;
  bool ok = true;
  Memory memory = Memory::system;
  if (options.memory != "system") {
    const std::string why = cuda_output_unavailable(cudagray);
    if (options.memory == "cuda" && !why.empty()) {
      PyErr_Format(error_type, "frames cannot stay in CUDA memory: %s", why.c_str());
      ok = false;
    }
    if (why.empty()) memory = options.memory == "cuda" ? Memory::cuda : Memory::backends_choice;
  }
  if (ok && memory != Memory::system) {
    std::string why;
    GstContext *context = primary_cuda_context(cuda_device(cudagray), &why);
    if (context) {
      /* before READY, when the CUDA elements look for a context */
      gst_element_set_context(reader->pipeline, context);
      gst_context_unref(context);
    } else {
      PyErr_Format(error_type, "frames cannot stay in CUDA memory: %s", why.c_str());
      ok = false;
    }
  }
  gst_object_unref(cudagray);
  if (!ok) return false;
  GstCaps *caps = output_caps(options, memory);
  g_object_set(reader->sink, "caps", caps, NULL);
  if (memory == Memory::backends_choice) {
    GstPad *pad = gst_element_get_static_pad(reader->sink, "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM, choose_memory_once_open, NULL,
                      NULL);
    gst_object_unref(pad);
  }
  gchar *caps_text = gst_caps_to_string(caps);
  gst_caps_unref(caps);
  reader->downstream = PyUnicode_FromFormat("%s ! %s ! appsink", element.c_str(), caps_text);
  g_free(caps_text);
  if (!reader->downstream) return false;
  reader->description = joined_description(reader, {source.described});
  return reader->description != NULL;
}

/* open_batch()'s own options, popped from its keyword arguments; what
 * stays are cudagraybatch's properties. */
struct BatchOptions {
  std::string memory = "system";
  bool live = false;
};

bool pop_batch_options(PyObject *kwargs, BatchOptions *options) {
  if (!pop_string(kwargs, "memory", &options->memory)) return false;
  if (options->memory != "system" && options->memory != "auto" && options->memory != "cuda") {
    PyErr_Format(PyExc_ValueError, "memory must be cuda, system or auto, not %s",
                 options->memory.c_str());
    return false;
  }
  PyObject *live = PyDict_GetItemString(kwargs, "live");
  if (!live) return true;
  const int value = PyObject_IsTrue(live);
  if (value < 0) return false;
  options->live = value;
  return PyDict_DelItemString(kwargs, "live") == 0;
}

/* Builds `cudagraybatch ! appsink` with sources[i] linked to sink_i into
 * reader; false with a Python exception set. */
bool build_batch(Reader *reader, PyObject *texts, const BatchOptions &options,
                 PyObject *properties) {
  std::vector<Source> sources;
  std::string links;
  for (Py_ssize_t i = 0; i < PyList_Size(texts); i++) {
    const char *text = PyUnicode_AsUTF8AndSize(PyList_GetItem(texts, i), NULL);
    if (!text) return false;
    sources.push_back(make_source(text, "cudagray-source-" + std::to_string(i)));
    links += " " + sources.back().parsed + " ! cudagray.sink_" + std::to_string(i);
  }
  std::string element = "cudagraybatch name=cudagray";
  GstElement *batch = parse_pipeline(reader,
                                     std::string("cudagraybatch name=cudagray ! ") + appsink +
                                         (options.live ? " sync=true" : " sync=false") + links,
                                     sources, properties, &element);
  if (!batch) return false;
  /* in CUDA memory only when asked: "auto" is system memory, as the
   * element's caps put it first */
  const bool cuda = options.memory == "cuda";
  std::string why = cuda ? cuda_output_unavailable(batch) : "";
  if (why.empty() && cuda) {
    GstContext *context = primary_cuda_context(cuda_device(batch), &why);
    if (context) {
      /* before READY, when the CUDA elements look for a context */
      gst_element_set_context(reader->pipeline, context);
      gst_context_unref(context);
    }
  }
  gst_object_unref(batch);
  if (!why.empty()) {
    PyErr_Format(error_type, "batches cannot be in CUDA memory: %s", why.c_str());
    return false;
  }
  const char *caps_text =
      cuda ? "application/x-cudagray-batch(memory:CUDAMemory)" : "application/x-cudagray-batch";
  GstCaps *caps = gst_caps_from_string(caps_text);
  g_object_set(reader->sink, "caps", caps, NULL);
  gst_caps_unref(caps);
  reader->downstream = PyUnicode_FromFormat("%s ! %s ! appsink%s", element.c_str(), caps_text,
                                            options.live ? " sync=true" : "");
  if (!reader->downstream) return false;
  std::vector<std::string> described;
  for (const Source &source : sources) described.push_back(source.described);
  reader->description = joined_description(reader, described);
  return reader->description != NULL;
}

/* Starts a built reader (self, its reference taken); NULL with a Python
 * exception set. */
PyObject *start(PyObject *self) {
  Reader *reader = as_reader(self);
  GstStateChangeReturn started;
  {
    GilReleased released;
    started = gst_element_set_state(reader->pipeline, GST_STATE_PLAYING);
  }
  if (started == GST_STATE_CHANGE_FAILURE) {
    if (!raise_bus_error(reader))
      PyErr_Format(error_type, "the pipeline \"%U\" could not start", reader->description);
    Py_DECREF(self);
    return NULL;
  }
  /* those of the start, such as cudagray's fallback to the CPU */
  if (!warn_bus_warnings(reader)) {
    Py_DECREF(self);
    return NULL;
  }
  return self;
}

/* A new reader, before it is built. */
Reader *reader_new() {
  auto alloc = reinterpret_cast<allocfunc>(PyType_GetSlot(reader_type, Py_tp_alloc));
  return as_reader(alloc(reader_type, 0));
}

}  // namespace

bool reader_type_init(PyObject *module) {
  reader_type = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&reader_spec));
  if (!reader_type) return false;
  return PyModule_AddObject(module, "Reader", Py_NewRef((PyObject *)reader_type)) == 0;
}

PyObject *reader_open(PyObject *, PyObject *args, PyObject *kwargs) {
  const char *source;
  if (!PyArg_ParseTuple(args, "s:open", &source)) return NULL;
  PyObject *properties = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
  if (!properties) return NULL;
  Options options;
  Reader *reader = pop_options(properties, &options) ? reader_new() : NULL;
  if (!reader) {
    Py_DECREF(properties);
    return NULL;
  }
  PyObject *self = reinterpret_cast<PyObject *>(reader);
  reader->layout = new FrameCaps();
  const bool built = build(reader, source, options, properties);
  Py_DECREF(properties);
  if (!built) {
    Py_DECREF(self);
    return NULL;
  }
  return start(self);
}

PyObject *reader_open_batch(PyObject *, PyObject *args, PyObject *kwargs) {
  PyObject *sequence;
  if (!PyArg_ParseTuple(args, "O:open_batch", &sequence)) return NULL;
  PyObject *sources = PyUnicode_Check(sequence) ? NULL : PySequence_List(sequence);
  bool ok = sources && PyList_Size(sources) > 0;
  for (Py_ssize_t i = 0; ok && i < PyList_Size(sources); i++)
    ok = PyUnicode_Check(PyList_GetItem(sources, i));
  if (!ok) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError,
                    "open_batch takes a non-empty list of sources, each what open() takes");
    Py_XDECREF(sources);
    return NULL;
  }
  PyObject *properties = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
  BatchOptions options;
  Reader *reader = properties && pop_batch_options(properties, &options) ? reader_new() : NULL;
  if (!reader) {
    Py_DECREF(sources);
    Py_XDECREF(properties);
    return NULL;
  }
  PyObject *self = reinterpret_cast<PyObject *>(reader);
  reader->batch_layout = new BatchCaps();
  reader->sources = (int)PyList_Size(sources);
  const bool built = build_batch(reader, sources, options, properties);
  Py_DECREF(sources);
  Py_DECREF(properties);
  if (!built) {
    Py_DECREF(self);
    return NULL;
  }
  return start(self);
}

}  // namespace cudagray_python
