// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's properties: their enums, specs and documentation, and
 * setting and reading them (the stats property as a GstStructure). */
#include "gstcudagrayproperties.h"

#include <string>

#include "cudagray/device.h"
#include "gstcudagrayweights.h"

/* the element's category: GStreamer returns the existing one by name */
GST_DEBUG_CATEGORY_STATIC(gst_cuda_gray_properties_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_properties_debug

#define DEFAULT_BACKEND GST_CUDA_GRAY_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1
#define DEFAULT_MATRIX GST_CUDA_GRAY_MATRIX_BT601
#define DEFAULT_WEIGHTS "0.299,0.587,0.114"
#define DEFAULT_MAX_INFLIGHT 0
#define MAX_INFLIGHT_LIMIT 16
/* area: the one method that does not alias when shrinking (conversion.h) */
#define DEFAULT_METHOD GST_CUDA_GRAY_METHOD_AREA
/* videoscale's default: keep the picture's shape */
#define DEFAULT_ADD_BORDERS TRUE

enum {
  PROP_0,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_MATRIX,
  PROP_WEIGHTS,
  PROP_MAX_INFLIGHT,
  PROP_STATS,
  PROP_METHOD,
  PROP_ADD_BORDERS,
};
G_STATIC_ASSERT(PROP_ADD_BORDERS == GST_CUDA_GRAY_PROPERTIES_LAST);

#define GST_TYPE_CUDA_GRAY_BACKEND (gst_cuda_gray_backend_get_type())
static GType gst_cuda_gray_backend_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_GRAY_BACKEND_AUTO, "CUDA when a usable GPU exists, else the CPU (with a warning)",
       "auto"},
      {GST_CUDA_GRAY_BACKEND_CUDA, "CUDA only: fail to start without a GPU", "cuda"},
      {GST_CUDA_GRAY_BACKEND_CPU, "CPU only", "cpu"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstCudaGrayBackend", values));
  return type;
}

#define GST_TYPE_CUDA_GRAY_MATRIX (gst_cuda_gray_matrix_get_type())
static GType gst_cuda_gray_matrix_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_GRAY_MATRIX_BT601, "BT.601: 0.299 R + 0.587 G + 0.114 B", "bt601"},
      {GST_CUDA_GRAY_MATRIX_BT709, "BT.709: 0.2126 R + 0.7152 G + 0.0722 B", "bt709"},
      {GST_CUDA_GRAY_MATRIX_BT2020, "BT.2020: 0.2627 R + 0.6780 G + 0.0593 B", "bt2020"},
      {GST_CUDA_GRAY_MATRIX_CUSTOM, "The three values of the weights property", "custom"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstCudaGrayMatrix", values));
  return type;
}

#define GST_TYPE_CUDA_GRAY_METHOD (gst_cuda_gray_method_get_type())
static GType gst_cuda_gray_method_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_GRAY_METHOD_NEAREST,
       "The source pixel whose centre is nearest (nearest-exact, as OpenCV INTER_NEAREST_EXACT)",
       "nearest"},
      {GST_CUDA_GRAY_METHOD_BILINEAR,
       "Bilinear at (x + 0.5) * in / out - 0.5, edges clamped (OpenCV INTER_LINEAR); aliases "
       "when shrinking by more than 2",
       "bilinear"},
      {GST_CUDA_GRAY_METHOD_AREA,
       "The mean over each output pixel's footprint (OpenCV INTER_AREA): no aliasing when "
       "shrinking, bilinear between neighbours when enlarging",
       "area"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstCudaGrayMethod", values));
  return type;
}

void gst_cuda_gray_properties_init(GstCudaGrayProperties *props) {
  props->backend = DEFAULT_BACKEND;
  props->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  props->matrix = DEFAULT_MATRIX;
  props->custom = cudagray::standard_coefficients(cudagray::Matrix::BT601);
  props->invalid_weights = NULL;
  props->max_inflight = DEFAULT_MAX_INFLIGHT;
  props->method = DEFAULT_METHOD;
  props->add_borders = DEFAULT_ADD_BORDERS;
  props->stats = cudagray::TimingStats();
  props->stats_in_flight = 0;
  props->stats_device_id = -1;
}

void gst_cuda_gray_properties_clear(GstCudaGrayProperties *props) {
  g_clear_pointer(&props->invalid_weights, g_free);
}

void gst_cuda_gray_properties_install(GObjectClass *klass, GstCudaGrayPropertySet set) {
  const gboolean all = set == GST_CUDA_GRAY_PROPERTIES_ALL;
  GST_DEBUG_CATEGORY_INIT(gst_cuda_gray_properties_debug, "cudagray", 0,
                          "CUDA grayscale converter");
  g_object_class_install_property(
      klass, PROP_BACKEND,
      g_param_spec_enum(
          "backend", "Backend",
          "Where frames are converted: auto uses CUDA when a usable GPU "
          "exists and otherwise the CPU (posting a warning)",
          GST_TYPE_CUDA_GRAY_BACKEND, DEFAULT_BACKEND,
          (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      klass, PROP_CUDA_DEVICE_ID,
      g_param_spec_int(
          "cuda-device-id", "CUDA device ID",
          "CUDA device to convert on (-1: the first usable device)", -1, G_MAXINT,
          DEFAULT_CUDA_DEVICE_ID,
          (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property(
      klass, PROP_MATRIX,
      g_param_spec_enum(
          "matrix", "Matrix",
          "Luma coefficients: Y = min(255, (wR*R + wG*G + wB*B + 32768) >> 16) "
          "with Q16 weights from this matrix. RGB input only: YUV input's gray "
          "is its luma plane (a warning says so when this is not bt601)",
          GST_TYPE_CUDA_GRAY_MATRIX, DEFAULT_MATRIX,
          (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      klass, PROP_WEIGHTS,
      g_param_spec_string(
          "weights", "Weights",
          "Custom coefficients \"R,G,B\" (each 0..64, e.g. \"0.21,0.72,0.07\"); "
          "setting them selects matrix=custom. Invalid text makes the element "
          "fail to start; set while playing, it is ignored with a warning. "
          "RGB input only, like matrix. Reads back the coefficients in use",
          DEFAULT_WEIGHTS,
          (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));
  if (all)
    g_object_class_install_property(
        klass, PROP_MAX_INFLIGHT,
        g_param_spec_uint(
            "max-inflight", "Max frames in flight",
            "Frames converting on the GPU at once (1: each frame finishes "
            "before the next starts; 0: automatic, the backend's choice (4 on "
            "CUDA) for a non-live upstream and 1 for a live one). Each frame "
            "held adds one frame of latency. Reverse playback converts one "
            "frame at a time",
            0, MAX_INFLIGHT_LIMIT, DEFAULT_MAX_INFLIGHT,
            (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  if (all)
    g_object_class_install_property(
        klass, PROP_STATS,
        g_param_spec_boxed("stats", "Statistics",
                           "Running figures since start: frames, timed-frames (the frames the "
                           "times are over: every frame on the CPU, the first and every 16th "
                           "after it on CUDA), gpu-time-mean-us / -min-us / "
                           "-max-us (kernel time measured with CUDA events; conversion time on "
                           "the CPU backend), upload-time-mean-us (frames that were uploaded), "
                           "download-time-mean-us, "
                           "in-flight, cuda-device-id (the GPU in use, -1 on the CPU), "
                           "staged-inputs / staged-outputs (frames whose memory was not pinned "
                           "and went through a staging copy), device-inputs (frames read from "
                           "CUDA memory where they were, no upload), device-outputs (frames "
                           "written into CUDA memory and left there, no download), "
                           "process-pinned-bytes (pinned host memory cudagray holds in this "
                           "process, every element together)",
                           GST_TYPE_STRUCTURE,
                           (GParamFlags)(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
  g_object_class_install_property(
      klass, PROP_METHOD,
      g_param_spec_enum(
          "method", "Method",
          all ? "How gray is resampled when the output size differs from the input's; "
                "taken at the next caps"
              : "How gray is resampled when the output size differs from the input's; "
                "taken at the next batch",
          GST_TYPE_CUDA_GRAY_METHOD, DEFAULT_METHOD,
          (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property(
      klass, PROP_ADD_BORDERS,
      g_param_spec_boolean(
          "add-borders", "Add borders",
          all ? "Keep the display aspect ratio when downstream fixes an output size and "
                "pixel-aspect-ratio that do not: the picture is centred between black "
                "bars; otherwise it is stretched to the whole output. Taken at the next caps"
              : "Keep each slot's display aspect ratio: its picture is centred between "
                "black bars; otherwise it is stretched to the whole slot. Taken at the next "
                "batch",
          DEFAULT_ADD_BORDERS,
          (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING)));
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_GRAY_METHOD, (GstPluginAPIFlags)0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_GRAY_BACKEND, (GstPluginAPIFlags)0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_GRAY_MATRIX, (GstPluginAPIFlags)0);
}

/* The weights text: kept for start when it does not parse before start,
 * ignored with a warning when it does not parse later. */
static void set_weights(GstElement *element, GstCudaGrayProperties *props, const gchar *text) {
  cudagray::Coefficients k;
  std::string error;
  const bool valid = gst_cuda_gray_parse_weights(text, &k, &error);
  if (!valid && GST_STATE(element) <= GST_STATE_READY) {
    /* from a pipeline description: an error at start, not a warning that
     * scrolls past */
    GST_OBJECT_LOCK(element);
    g_free(props->invalid_weights);
    props->invalid_weights = g_strdup(GST_STR_NULL(text));
    GST_OBJECT_UNLOCK(element);
    return;
  }
  if (!valid) {
    GST_ELEMENT_WARNING(element, LIBRARY, SETTINGS,
                        ("Ignoring invalid weights \"%s\": %s", GST_STR_NULL(text), error.c_str()),
                        ("weights takes three numbers \"R,G,B\" between 0 and %g, "
                         "e.g. \"0.21,0.72,0.07\"; the previous weights stay in use",
                         cudagray::kMaxCustomCoefficient));
    return;
  }
  GST_OBJECT_LOCK(element);
  props->custom = k;
  props->matrix = GST_CUDA_GRAY_MATRIX_CUSTOM;
  g_clear_pointer(&props->invalid_weights, g_free);
  GST_OBJECT_UNLOCK(element);
}

void gst_cuda_gray_properties_set(GstElement *element, GstCudaGrayProperties *props, guint prop_id,
                                  const GValue *value, GParamSpec *pspec) {
  /* GObject does not enforce GST_PARAM_MUTABLE_READY: say so instead of
   * leaving the user to wonder why nothing changed */
  if ((pspec->flags & GST_PARAM_MUTABLE_READY) && GST_STATE(element) > GST_STATE_READY)
    GST_ELEMENT_WARNING(element, LIBRARY, SETTINGS,
                        ("%s takes effect at the next start", pspec->name),
                        ("set it in the NULL or READY state"));

  if (prop_id == PROP_WEIGHTS) {
    set_weights(element, props, g_value_get_string(value));
    return;
  }
  GST_OBJECT_LOCK(element);
  switch (prop_id) {
    case PROP_BACKEND: props->backend = (GstCudaGrayBackend)g_value_get_enum(value); break;
    case PROP_CUDA_DEVICE_ID: props->cuda_device_id = g_value_get_int(value); break;
    case PROP_MATRIX: props->matrix = (GstCudaGrayMatrix)g_value_get_enum(value); break;
    case PROP_MAX_INFLIGHT: props->max_inflight = g_value_get_uint(value); break;
    case PROP_METHOD: props->method = (GstCudaGrayMethod)g_value_get_enum(value); break;
    case PROP_ADD_BORDERS: props->add_borders = g_value_get_boolean(value); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(element, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(element);
}

/* The stats property's structure. */
static GstStructure *stats_structure(const GstCudaGrayProperties *props) {
  const cudagray::TimingStats &s = props->stats;
  return gst_structure_new(
      "cudagray-stats", "frames", G_TYPE_UINT64, (guint64)s.frames, "timed-frames", G_TYPE_UINT64,
      (guint64)s.timed_frames, "gpu-time-mean-us", G_TYPE_DOUBLE, s.device_us_mean,
      "gpu-time-min-us", G_TYPE_DOUBLE, s.device_us_min, "gpu-time-max-us", G_TYPE_DOUBLE,
      s.device_us_max, "upload-time-mean-us", G_TYPE_DOUBLE, s.upload_us_mean,
      "download-time-mean-us", G_TYPE_DOUBLE, s.download_us_mean, "in-flight", G_TYPE_UINT,
      (guint)props->stats_in_flight, "cuda-device-id", G_TYPE_INT, props->stats_device_id,
      "staged-inputs", G_TYPE_UINT64, (guint64)s.staged_inputs, "staged-outputs", G_TYPE_UINT64,
      (guint64)s.staged_outputs, "device-inputs", G_TYPE_UINT64, (guint64)s.device_inputs,
      "device-outputs", G_TYPE_UINT64, (guint64)s.device_outputs, "process-pinned-bytes",
      G_TYPE_UINT64, (guint64)cudagray::pinned_bytes_held(), NULL);
}

void gst_cuda_gray_properties_get(GstElement *element, GstCudaGrayProperties *props, guint prop_id,
                                  GValue *value, GParamSpec *pspec) {
  GST_OBJECT_LOCK(element);
  switch (prop_id) {
    case PROP_BACKEND: g_value_set_enum(value, props->backend); break;
    case PROP_CUDA_DEVICE_ID: g_value_set_int(value, props->cuda_device_id); break;
    case PROP_MATRIX: g_value_set_enum(value, props->matrix); break;
    case PROP_WEIGHTS:
      g_value_set_string(
          value,
          gst_cuda_gray_format_weights(
              props->matrix == GST_CUDA_GRAY_MATRIX_CUSTOM
                  ? props->custom
                  : cudagray::standard_coefficients(static_cast<cudagray::Matrix>(props->matrix)))
              .c_str());
      break;
    case PROP_MAX_INFLIGHT: g_value_set_uint(value, props->max_inflight); break;
    case PROP_METHOD: g_value_set_enum(value, props->method); break;
    case PROP_ADD_BORDERS: g_value_set_boolean(value, props->add_borders); break;
    case PROP_STATS: g_value_take_boxed(value, stats_structure(props)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(element, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(element);
}

gboolean gst_cuda_gray_properties_check_weights(GstElement *element, GstCudaGrayProperties *props) {
  GST_OBJECT_LOCK(element);
  gchar *invalid_weights = g_strdup(props->invalid_weights);
  GST_OBJECT_UNLOCK(element);
  if (!invalid_weights) return TRUE;
  cudagray::Coefficients ignored;
  std::string error;
  gst_cuda_gray_parse_weights(invalid_weights, &ignored, &error);
  GST_ELEMENT_ERROR(element, LIBRARY, SETTINGS,
                    ("Invalid weights \"%s\": %s; expected \"R,G,B\", each between 0 "
                     "and %g",
                     invalid_weights, error.c_str(), cudagray::kMaxCustomCoefficient),
                    ("correct the weights property, e.g. weights=0.21,0.72,0.07, or "
                     "leave it out for matrix=bt601"));
  g_free(invalid_weights);
  return FALSE;
}

cudagray::ScaleMethod gst_cuda_gray_properties_method(const GstCudaGrayProperties *props) {
  switch (props->method) {
    case GST_CUDA_GRAY_METHOD_NEAREST: return cudagray::ScaleMethod::Nearest;
    case GST_CUDA_GRAY_METHOD_BILINEAR: return cudagray::ScaleMethod::Bilinear;
    case GST_CUDA_GRAY_METHOD_AREA: break;
  }
  return cudagray::ScaleMethod::Area;
}

cudagray::Weights gst_cuda_gray_properties_weights(const GstCudaGrayProperties *props) {
  if (props->matrix == GST_CUDA_GRAY_MATRIX_CUSTOM) return cudagray::custom_weights(props->custom);
  return cudagray::standard_weights(static_cast<cudagray::Matrix>(props->matrix));
}
