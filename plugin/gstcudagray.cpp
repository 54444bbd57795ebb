/* cudagray: RGB-family video to GRAY8 on an NVIDIA GPU (or the CPU).
 *
 * A frame's path, each step in one place:
 *   caps          transform_caps / set_caps: pixel layout, backend sized
 *   output buffer decide_allocation: downstream's pool, else our pinned one
 *   frame map     transform: the buffer is checked to hold every row
 *   convert       Backend::submit: upload, kernel, download queued on CUDA
 *                 streams (rows converted at once on the CPU)
 *   output        generate_output / finish_oldest: the oldest frame's
 *                 result, pushed in order
 * Up to max-inflight frames are in flight; serialized events (EOS, caps,
 * segment, gap) drain them first, flushes and stop discard them. GRAY8 input
 * passes through untouched.
 *
 * Example:
 *   gst-launch-1.0 videotestsrc ! cudagray matrix=bt709 ! videoconvert ! autovideosink
 */
#include "gstcudagray.h"

#include <gst/video/video.h>

#include <deque>
#include <memory>
#include <string>

#include "cudamemory.h"
#include "gray.h"
#include "gstcudagraypinned.h"

#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

GST_DEBUG_CATEGORY_STATIC (gst_cuda_gray_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_debug

#define DEFAULT_BACKEND GST_CUDA_GRAY_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1
#define DEFAULT_MATRIX GST_CUDA_GRAY_MATRIX_BT601
#define DEFAULT_WEIGHTS "0.299,0.587,0.114"
#define DEFAULT_MAX_INFLIGHT 0
#define MAX_INFLIGHT_LIMIT 16
/* What max-inflight=0 means for a non-live upstream on CUDA (measured; see
 * docs/performance.md). A live upstream gets 1: frames then leave as soon as
 * they are converted. */
#define AUTO_INFLIGHT 4
/* A GST_DEBUG line with the running stats every this many frames. */
#define STATS_LOG_INTERVAL 300

enum
{
  PROP_0,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_MATRIX,
  PROP_WEIGHTS,
  PROP_MAX_INFLIGHT,
  PROP_STATS,
};

/* Converted formats, in order of preference when upstream can offer several:
 * RGB family (luma computed), then YUV (luma plane copied or expanded). */
#define CONVERTED_FORMATS \
  "RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, ABGR, RGBP, BGRP, GBR, " \
  "I420, YV12, NV12, NV21, Y444, Y42B"

#define SIZES_AND_RATES \
  "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], " \
  "framerate = (fraction) [ 0, MAX ]"

#define SYSTEM_MEMORY_SINK_CAPS "video/x-raw, format = (string) { " \
  CONVERTED_FORMATS ", GRAY8 }, " SIZES_AND_RATES
#ifdef CUDAGRAY_HAVE_GST_CUDA
/* Frames already on the GPU (cudaupload, NVDEC decoders): no upload. Offered
 * only when cudagray_cuda_memory_usable says so. */
#define CUDA_MEMORY_SINK_CAPS "video/x-raw(" GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY \
  "), format = (string) { " CONVERTED_FORMATS " }, " SIZES_AND_RATES
#endif

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format = (string) GRAY8, "
        "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], "
        "framerate = (fraction) [ 0, MAX ]"));

/* A frame handed to the backend: its buffers stay mapped until it is done. */
struct InFlight
{
  GstBuffer *in;
  GstMapInfo in_map;
  GstVideoFrame out;
};

/* Everything the streaming thread owns. */
struct Streaming
{
  std::unique_ptr < cudagray::Backend > backend;
  std::deque < InFlight > in_flight;
  GstVideoInfo in_info;
  cudagray::PixelLayout layout = cudagray::PixelLayout::RGB;
  int max_in_flight = 1;        /* max-inflight with auto resolved */
  bool cuda_input = false;      /* caps say memory:CUDAMemory */
  /* the backend was made inside the shared CUDA context (and its streams and
   * memory belong to it), rather than in the device's primary context */
  bool backend_in_shared_ctx = false;
  /* the last configuration failure posted, so that upstream's retries
   * (one per buffer) do not repeat it */
  std::string configure_error;
  /* the warning that matrix and weights do not apply to YUV was posted */
  bool warned_weights_unused = false;
};

struct _GstCudaGray
{
  GstBaseTransform parent;

  /* Properties and what other threads read, guarded by the object lock. */
  GstCudaGrayBackend backend_choice;
  gint cuda_device_id;
  GstCudaGrayMatrix matrix;
  cudagray::Coefficients custom;
  /* weights text set before start that does not parse: start fails on it */
  gchar *invalid_weights;
  guint max_inflight;
  cudagray::TimingStats stats;
  gint stats_in_flight;
  gint stats_device_id;
  GstClockTime added_latency;

  Streaming *streaming;
#ifdef CUDAGRAY_HAVE_GST_CUDA
  /* The pipeline's shared CUDA context, once CUDA memory is negotiated; the
   * backend then works in it, and every backend call is made inside it. */
  GstCudaContext *cuda_ctx;
  /* the stream of the CUDA pool offered upstream (GStreamer 1.24+) */
  CudaGrayStream *cuda_stream;
#endif
};

/* Makes the shared CUDA context current for its lifetime when the backend
 * works in it. A context set by the application alone changes nothing: a
 * backend still in the primary context must not be called inside another. */
class CudaScope
{
public:
  explicit CudaScope (GstCudaGray * self)
  {
#ifdef CUDAGRAY_HAVE_GST_CUDA
    if (self->cuda_ctx && self->streaming->backend_in_shared_ctx
        && gst_cuda_context_push (self->cuda_ctx))
      pushed_ = true;
#endif
  }
  ~CudaScope ()
  {
#ifdef CUDAGRAY_HAVE_GST_CUDA
    if (pushed_)
      gst_cuda_context_pop (NULL);
#endif
  }
  CudaScope (const CudaScope &) = delete;
  CudaScope & operator= (const CudaScope &) = delete;
private:
  bool pushed_ = false;
};

#define gst_cuda_gray_parent_class parent_class
G_DEFINE_TYPE (GstCudaGray, gst_cuda_gray, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (cudagray, "cudagray", GST_RANK_NONE,
    GST_TYPE_CUDA_GRAY);

#define GST_TYPE_CUDA_GRAY_BACKEND (gst_cuda_gray_backend_get_type ())
static GType
gst_cuda_gray_backend_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_CUDA_GRAY_BACKEND_AUTO,
        "CUDA when a usable GPU exists, else the CPU (with a warning)", "auto"},
    {GST_CUDA_GRAY_BACKEND_CUDA, "CUDA only: fail to start without a GPU",
        "cuda"},
    {GST_CUDA_GRAY_BACKEND_CPU, "CPU only", "cpu"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstCudaGrayBackend", values));
  return type;
}

#define GST_TYPE_CUDA_GRAY_MATRIX (gst_cuda_gray_matrix_get_type ())
static GType
gst_cuda_gray_matrix_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_CUDA_GRAY_MATRIX_BT601, "BT.601: 0.299 R + 0.587 G + 0.114 B",
        "bt601"},
    {GST_CUDA_GRAY_MATRIX_BT709, "BT.709: 0.2126 R + 0.7152 G + 0.0722 B",
        "bt709"},
    {GST_CUDA_GRAY_MATRIX_BT2020, "BT.2020: 0.2627 R + 0.6780 G + 0.0593 B",
        "bt2020"},
    {GST_CUDA_GRAY_MATRIX_CUSTOM, "The three values of the weights property",
        "custom"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstCudaGrayMatrix", values));
  return type;
}

static gboolean
layout_for_format (GstVideoFormat format, cudagray::PixelLayout * layout)
{
  using cudagray::PixelLayout;
  switch (format) {
    case GST_VIDEO_FORMAT_RGB: *layout = PixelLayout::RGB; return TRUE;
    case GST_VIDEO_FORMAT_BGR: *layout = PixelLayout::BGR; return TRUE;
    case GST_VIDEO_FORMAT_RGBA: *layout = PixelLayout::RGBA; return TRUE;
    case GST_VIDEO_FORMAT_BGRA: *layout = PixelLayout::BGRA; return TRUE;
    case GST_VIDEO_FORMAT_RGBx: *layout = PixelLayout::RGBx; return TRUE;
    case GST_VIDEO_FORMAT_BGRx: *layout = PixelLayout::BGRx; return TRUE;
    case GST_VIDEO_FORMAT_xRGB: *layout = PixelLayout::xRGB; return TRUE;
    case GST_VIDEO_FORMAT_xBGR: *layout = PixelLayout::xBGR; return TRUE;
    case GST_VIDEO_FORMAT_ARGB: *layout = PixelLayout::ARGB; return TRUE;
    case GST_VIDEO_FORMAT_ABGR: *layout = PixelLayout::ABGR; return TRUE;
    case GST_VIDEO_FORMAT_RGBP: *layout = PixelLayout::RGBP; return TRUE;
    case GST_VIDEO_FORMAT_BGRP: *layout = PixelLayout::BGRP; return TRUE;
    case GST_VIDEO_FORMAT_GBR: *layout = PixelLayout::GBR; return TRUE;
    case GST_VIDEO_FORMAT_I420:
    case GST_VIDEO_FORMAT_YV12:
    case GST_VIDEO_FORMAT_NV12:
    case GST_VIDEO_FORMAT_NV21:
    case GST_VIDEO_FORMAT_Y444:
    case GST_VIDEO_FORMAT_Y42B: *layout = PixelLayout::Luma; return TRUE;
    default: return FALSE;
  }
}

/* The Q16 weights for the current matrix; call with the object lock held. */
static cudagray::Weights
current_weights (GstCudaGray * self)
{
  if (self->matrix == GST_CUDA_GRAY_MATRIX_CUSTOM)
    return cudagray::custom_weights (self->custom);
  return cudagray::standard_weights (static_cast < cudagray::Matrix >
      (self->matrix));
}

static void
gst_cuda_gray_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstCudaGray *self = GST_CUDA_GRAY (object);

  /* GObject does not enforce GST_PARAM_MUTABLE_READY: say so instead of
   * leaving the user to wonder why nothing changed */
  if ((pspec->flags & GST_PARAM_MUTABLE_READY) && GST_STATE (self) > GST_STATE_READY)
    GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
        ("%s takes effect at the next start", pspec->name),
        ("set it in the NULL or READY state"));

  switch (prop_id) {
    case PROP_BACKEND:
      GST_OBJECT_LOCK (self);
      self->backend_choice = (GstCudaGrayBackend) g_value_get_enum (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_CUDA_DEVICE_ID:
      GST_OBJECT_LOCK (self);
      self->cuda_device_id = g_value_get_int (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_MATRIX:
      GST_OBJECT_LOCK (self);
      self->matrix = (GstCudaGrayMatrix) g_value_get_enum (value);
      GST_OBJECT_UNLOCK (self);
      break;
    case PROP_WEIGHTS:{
      const gchar *text = g_value_get_string (value);
      cudagray::Coefficients k;
      std::string error;
      const bool valid = cudagray::parse_coefficients (text, &k, &error);
      if (!valid && GST_STATE (self) <= GST_STATE_READY) {
        /* from a pipeline description: an error at start, not a warning
         * that scrolls past */
        GST_OBJECT_LOCK (self);
        g_free (self->invalid_weights);
        self->invalid_weights = g_strdup (GST_STR_NULL (text));
        GST_OBJECT_UNLOCK (self);
        break;
      }
      if (!valid) {
        GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
            ("Ignoring invalid weights \"%s\": %s", GST_STR_NULL (text),
                error.c_str ()),
            ("weights takes three numbers \"R,G,B\" between 0 and %g, "
                "e.g. \"0.21,0.72,0.07\"; the previous weights stay in use",
                cudagray::kMaxCustomCoefficient));
        break;
      }
      GST_OBJECT_LOCK (self);
      self->custom = k;
      self->matrix = GST_CUDA_GRAY_MATRIX_CUSTOM;
      g_clear_pointer (&self->invalid_weights, g_free);
      GST_OBJECT_UNLOCK (self);
      break;
    }
    case PROP_MAX_INFLIGHT:
      GST_OBJECT_LOCK (self);
      self->max_inflight = g_value_get_uint (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
gst_cuda_gray_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstCudaGray *self = GST_CUDA_GRAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_BACKEND:
      g_value_set_enum (value, self->backend_choice);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->cuda_device_id);
      break;
    case PROP_MATRIX:
      g_value_set_enum (value, self->matrix);
      break;
    case PROP_WEIGHTS:
      g_value_set_string (value, cudagray::format_coefficients (
              self->matrix == GST_CUDA_GRAY_MATRIX_CUSTOM ? self->custom :
              cudagray::standard_coefficients (static_cast < cudagray::Matrix >
                  (self->matrix))).c_str ());
      break;
    case PROP_MAX_INFLIGHT:
      g_value_set_uint (value, self->max_inflight);
      break;
    case PROP_STATS:{
      const cudagray::TimingStats &s = self->stats;
      g_value_take_boxed (value, gst_structure_new ("cudagray-stats",
              "frames", G_TYPE_UINT64, (guint64) s.frames,
              "gpu-time-mean-us", G_TYPE_DOUBLE, s.device_us_mean,
              "gpu-time-min-us", G_TYPE_DOUBLE, s.device_us_min,
              "gpu-time-max-us", G_TYPE_DOUBLE, s.device_us_max,
              "upload-time-mean-us", G_TYPE_DOUBLE, s.upload_us_mean,
              "download-time-mean-us", G_TYPE_DOUBLE, s.download_us_mean,
              "in-flight", G_TYPE_UINT, (guint) self->stats_in_flight,
              "cuda-device-id", G_TYPE_INT, self->stats_device_id,
              "staged-inputs", G_TYPE_UINT64, (guint64) s.staged_inputs,
              "staged-outputs", G_TYPE_UINT64, (guint64) s.staged_outputs,
              "device-inputs", G_TYPE_UINT64, (guint64) s.device_inputs,
              NULL));
      break;
    }
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gboolean
backend_is_cuda (GstCudaGray * self)
{
  const auto & backend = self->streaming->backend;
  return backend && g_str_equal (backend->name (), "cuda");
}

/* Picks the backend named by the properties. backend=auto falls back to the
 * CPU with a warning when no GPU can be used; everything else that fails is
 * an error. */
static gboolean
gst_cuda_gray_start (GstBaseTransform * trans)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  auto & backend = self->streaming->backend;

  GST_OBJECT_LOCK (self);
  const GstCudaGrayBackend choice = self->backend_choice;
  const gint device_id = self->cuda_device_id;
  gchar *invalid_weights = g_strdup (self->invalid_weights);
  self->stats = cudagray::TimingStats ();
  self->stats_in_flight = 0;
  GST_OBJECT_UNLOCK (self);

  if (invalid_weights) {
    cudagray::Coefficients ignored;
    std::string error;
    cudagray::parse_coefficients (invalid_weights, &ignored, &error);
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Invalid weights \"%s\": %s; expected \"R,G,B\", each between 0 "
            "and %g", invalid_weights, error.c_str (),
            cudagray::kMaxCustomCoefficient),
        ("correct the weights property, e.g. weights=0.21,0.72,0.07, or "
            "leave it out for matrix=bt601"));
    g_free (invalid_weights);
    return FALSE;
  }

  /* testing only: make a chosen CUDA call fail (see inject_cuda_fault) */
  cudagray::inject_cuda_fault (GST_STR_NULL (g_getenv ("CUDAGRAY_INJECT_FAULT")));

  if (choice == GST_CUDA_GRAY_BACKEND_CPU) {
    backend = cudagray::make_cpu_backend ();
  } else {
    std::string reason;
    backend = cudagray::make_cuda_backend (device_id, &reason);
    std::string ignored;
    const bool some_gpu = cudagray::cuda_device_count (&ignored) > 0;
    if (!backend && (choice == GST_CUDA_GRAY_BACKEND_CUDA
            || (device_id >= 0 && some_gpu))) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("No usable CUDA device: %s", reason.c_str ()),
          ("backend=%s cuda-device-id=%d; pick an existing device, or set "
              "backend=cpu to run without a GPU",
              choice == GST_CUDA_GRAY_BACKEND_CUDA ? "cuda" : "auto",
              device_id));
      return FALSE;
    }
    if (!backend) {
      GST_ELEMENT_WARNING (self, RESOURCE, NOT_FOUND,
          ("No usable CUDA device, converting on the CPU instead: %s",
              reason.c_str ()),
          ("set backend=cpu to choose the CPU without this warning, or "
              "backend=cuda to make a missing GPU an error"));
      backend = cudagray::make_cpu_backend ();
    }
  }
  GST_INFO_OBJECT (self, "using the %s backend (CUDA device %d)",
      backend->name (), backend->device_id ());
  GST_OBJECT_LOCK (self);
  self->stats_device_id = backend->device_id ();
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* Lets go of every frame in flight without pushing it. */
static void
discard_in_flight (GstCudaGray * self)
{
  CudaScope scope (self);
  Streaming & s = *self->streaming;
  if (s.backend)
    s.backend->discard_all ();
  for (InFlight & f:s.in_flight) {
    gst_video_frame_unmap (&f.out);
    gst_buffer_unref (f.out.buffer);
    gst_buffer_unmap (f.in, &f.in_map);
    gst_buffer_unref (f.in);
  }
  if (!s.in_flight.empty ())
    GST_DEBUG_OBJECT (self, "discarded %zu frames in flight", s.in_flight.size ());
  s.in_flight.clear ();
}

static gboolean
gst_cuda_gray_stop (GstBaseTransform * trans)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  discard_in_flight (self);
  {
    CudaScope scope (self);     /* its memory belongs to the shared context */
    self->streaming->backend.reset ();
  }
#ifdef CUDAGRAY_HAVE_GST_CUDA
  g_clear_pointer (&self->cuda_stream, cudagray_stream_free);
  gst_clear_object (&self->cuda_ctx);
#endif
  self->streaming->backend_in_shared_ctx = false;
  self->streaming->cuda_input = false;
  self->streaming->configure_error.clear ();
  self->streaming->warned_weights_unused = false;
  gst_video_info_init (&self->streaming->in_info);
  return TRUE;
}

static GstCaps *
gst_cuda_gray_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
#ifdef CUDAGRAY_HAVE_GST_CUDA
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  std::string unusable;
  GST_OBJECT_LOCK (self);
  const gboolean cpu_only = self->backend_choice == GST_CUDA_GRAY_BACKEND_CPU;
  GST_OBJECT_UNLOCK (self);
  const gboolean offer_cuda = !cpu_only
      && cudagray_cuda_memory_usable (&unusable);
#endif
  GstCaps *result = gst_caps_new_empty ();
  GstCaps *passthrough = gst_caps_new_empty ();
  GValue gray8 = G_VALUE_INIT;
  g_value_init (&gray8, G_TYPE_STRING);
  g_value_set_static_string (&gray8, "GRAY8");

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *features = gst_caps_get_features (caps, i);
    const gboolean system_memory = !features || gst_caps_features_is_any (features)
        || gst_caps_features_is_equal (features,
        GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
#ifdef CUDAGRAY_HAVE_GST_CUDA
    const gboolean cuda_memory = features
        && gst_caps_features_contains (features,
        GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY);
#else
    const gboolean cuda_memory = FALSE;
#endif
    if (!system_memory && !cuda_memory)
      continue;
    const GstStructure *in = gst_caps_get_structure (caps, i);
    const GValue *format = gst_structure_get_value (in, "format");
    const gboolean fixed_gray8 = format && gst_value_compare (format, &gray8)
        == GST_VALUE_EQUAL;

    /* GRAY8 in CUDA memory is not taken: passthrough is system memory only */
    if (direction == GST_PAD_SINK && !system_memory && fixed_gray8)
      continue;
    if (direction == GST_PAD_SINK && system_memory) {
      if (!format || gst_value_can_intersect (format, &gray8)) {
        GstStructure *same = gst_structure_copy (in);
        gst_structure_set_value (same, "format", &gray8);
        gst_caps_append_structure (passthrough, same);
      }
      if (fixed_gray8)
        continue;
    }
    GstStructure *s = gst_structure_copy (in);
    gst_structure_remove_fields (s, "colorimetry", "chroma-site", NULL);
    if (direction == GST_PAD_SINK) {
      /* No colorimetry field: GRAY8 then defaults to full range, and
       * videoconvert 1.22 mishandles an explicit "1:0:0:0" (it tints gray). */
      gst_structure_set_value (s, "format", &gray8);
    } else {
      GstStructure *same = gst_structure_copy (in);
      gst_structure_set_value (same, "format", &gray8);
      gst_caps_append_structure (passthrough, same);
      GValue formats = G_VALUE_INIT;
      GValue name = G_VALUE_INIT;
      gst_value_list_init (&formats, 19);
      g_value_init (&name, G_TYPE_STRING);
      gchar **names = g_strsplit (CONVERTED_FORMATS, ", ", -1);
      for (gchar ** n = names; *n; n++) {
        g_value_set_string (&name, *n);
        gst_value_list_append_value (&formats, &name);
      }
      g_strfreev (names);
      g_value_unset (&name);
      gst_structure_take_value (s, "format", &formats);
#ifdef CUDAGRAY_HAVE_GST_CUDA
      /* the same formats already on the GPU, first: an upstream that can
       * keep frames there (NVDEC, cudaupload) then does; not for backend=cpu */
      if (offer_cuda)
        result = gst_caps_merge_structure_full (result, gst_structure_copy (s),
            gst_caps_features_new (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, NULL));
#endif
    }
    result = gst_caps_merge_structure (result, s);
  }
  g_value_unset (&gray8);
  result = gst_caps_merge (result, passthrough);

  if (filter) {
    GstCaps *tmp =
        gst_caps_intersect_full (filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (result);
    result = tmp;
  }
  GST_DEBUG_OBJECT (trans, "%s caps %" GST_PTR_FORMAT " → %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
}

/* Adds the frames we may hold back to the latency upstream reports. */
static gboolean
gst_cuda_gray_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
#ifdef CUDAGRAY_HAVE_GST_CUDA
  /* neighbours asking for a CUDA context get ours, so that one is shared */
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT
      && gst_cuda_handle_context_query (GST_ELEMENT (self), query,
          self->cuda_ctx))
    return TRUE;
#endif
  if (!GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction, query))
    return FALSE;
  if (direction == GST_PAD_SRC && GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency (query, &live, &min, &max);
    GST_OBJECT_LOCK (self);
    const GstClockTime added = self->added_latency;
    GST_OBJECT_UNLOCK (self);
    min += added;
    if (GST_CLOCK_TIME_IS_VALID (max))
      max += added;
    gst_query_set_latency (query, live, min, max);
    GST_DEBUG_OBJECT (self, "latency: added %" GST_TIME_FORMAT,
        GST_TIME_ARGS (added));
  }
  return TRUE;
}

static gboolean
upstream_is_live (GstBaseTransform * trans)
{
  GstQuery *query = gst_query_new_latency ();
  gboolean live = FALSE;
  if (gst_pad_peer_query (GST_BASE_TRANSFORM_SINK_PAD (trans), query))
    gst_query_parse_latency (query, &live, NULL, NULL);
  gst_query_unref (query);
  return live;
}

/* For caps in memory:CUDAMemory: finds the pipeline's CUDA context (or makes
 * one) and moves the backend into it, so that the kernel reads upstream's
 * device memory where it is. Anything else keeps the backend as it is. */
static gboolean
use_cuda_memory (GstCudaGray * self, GstCaps * incaps)
{
  Streaming & s = *self->streaming;
#ifdef CUDAGRAY_HAVE_GST_CUDA
  GstCapsFeatures *features = gst_caps_get_features (incaps, 0);
  s.cuda_input = features && gst_caps_features_contains (features,
      GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY);
  if (!s.cuda_input || s.backend_in_shared_ctx)
    return TRUE;
  if (!backend_is_cuda (self)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("CUDA memory input needs the CUDA backend"),
        ("backend=cpu cannot read memory:CUDAMemory; add cudadownload before "
            "cudagray, or set backend=auto or cuda"));
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  const gint wanted = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);
  /* A context the application set before now is kept; else found or made. */
  if (!gst_cuda_ensure_element_context (GST_ELEMENT (self), wanted,
          &self->cuda_ctx)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No CUDA context for CUDA memory input"),
        ("no element shared one and none could be made on device %d", wanted));
    return FALSE;
  }
  if (!self->cuda_stream)
    self->cuda_stream = cudagray_stream_new (self->cuda_ctx);
  guint device = 0;
  g_object_get (self->cuda_ctx, "cuda-device-id", &device, NULL);
  if (wanted >= 0 && (guint) wanted != device) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("cuda-device-id=%d, but the pipeline's CUDA memory is on device %u",
            wanted, device),
        ("unset cuda-device-id, or put upstream's CUDA elements on device %d",
            wanted));
    gst_clear_object (&self->cuda_ctx);
    return FALSE;
  }
  std::string error;
  s.backend.reset ();           /* in its own (primary) context, so first */
  s.backend_in_shared_ctx = true;
  CudaScope scope (self);
  s.backend = cudagray::make_cuda_backend (-1, &error, true);
  if (!s.backend) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Could not use the pipeline's CUDA context: %s", error.c_str ()),
        (NULL));
    return FALSE;
  }
  GST_INFO_OBJECT (self, "CUDA memory input: working in the shared CUDA "
      "context of device %u", device);
  GST_OBJECT_LOCK (self);
  self->stats_device_id = device;
  GST_OBJECT_UNLOCK (self);
#else
  s.cuda_input = false;
#endif
  return TRUE;
}

static gboolean
gst_cuda_gray_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  Streaming & s = *self->streaming;
  GstVideoInfo in_info;

  if (!gst_video_info_from_caps (&in_info, incaps)) {
    GST_ERROR_OBJECT (self, "invalid caps %" GST_PTR_FORMAT, incaps);
    return FALSE;
  }
  s.in_info = in_info;

  const gboolean passthrough =
      GST_VIDEO_INFO_FORMAT (&in_info) == GST_VIDEO_FORMAT_GRAY8;
  gst_base_transform_set_passthrough (trans, passthrough);
  GST_OBJECT_LOCK (self);
  const guint requested = self->max_inflight;
  GST_OBJECT_UNLOCK (self);
  if (passthrough) {
    s.max_in_flight = 1;
  } else if (!backend_is_cuda (self)) {
    s.max_in_flight = 1;        /* the CPU finishes each frame at once */
  } else if (requested > 0) {
    s.max_in_flight = requested;
  } else {
    s.max_in_flight = upstream_is_live (trans) ? 1 : AUTO_INFLIGHT;
  }
  GST_OBJECT_LOCK (self);
  self->added_latency = in_info.fps_n > 0 ? gst_util_uint64_scale (
      (s.max_in_flight - 1) * GST_SECOND, in_info.fps_d, in_info.fps_n) : 0;
  GST_OBJECT_UNLOCK (self);

  if (passthrough) {
    GST_INFO_OBJECT (self, "GRAY8 input: passthrough");
    return TRUE;
  }
  if (!layout_for_format (GST_VIDEO_INFO_FORMAT (&in_info), &s.layout))
    return FALSE;
  if (!use_cuda_memory (self, incaps))
    return FALSE;

  CudaScope scope (self);
  std::string error;
  if (!s.backend->configure (s.layout, in_info.width, in_info.height,
          s.max_in_flight, s.cuda_input, &error)) {
    if (error != s.configure_error)
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Could not prepare the %s backend for %dx%d %s frames: %s",
              s.backend->name (), in_info.width, in_info.height,
              GST_VIDEO_INFO_NAME (&in_info), error.c_str ()),
          ("free GPU memory, use smaller frames, or set backend=cpu"));
    s.configure_error = error;
    return FALSE;
  }
  s.configure_error.clear ();
  GST_INFO_OBJECT (self, "converting %dx%d %s (%s) to GRAY8 on the %s backend, "
      "up to %d frames in flight", in_info.width, in_info.height,
      GST_VIDEO_INFO_NAME (&in_info), s.cuda_input ? "CUDA memory" :
      "system memory", s.backend->name (), s.max_in_flight);
  return TRUE;
}

static gboolean
gst_cuda_gray_transform_size (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, gsize size, GstCaps * othercaps,
    gsize * othersize)
{
  GstVideoInfo info;
  if (!gst_video_info_from_caps (&info, othercaps))
    return FALSE;
  *othersize = GST_VIDEO_INFO_SIZE (&info);
  return TRUE;
}

/* A video buffer pool of pinned memory for caps, with room for the frames
 * we hold in flight; also puts the pinned allocator first in query. */
static void
add_pinned_pool (GstCudaGray * self, GstQuery * query, GstCaps * caps)
{
  GstVideoInfo info;
  if (!caps || !gst_video_info_from_caps (&info, caps))
    return;
  GstAllocator *allocator = gst_cuda_gray_pinned_allocator_get ();
  GstAllocationParams params;
  gst_allocation_params_init (&params);
  GstBufferPool *pool = gst_video_buffer_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);
  const guint min_buffers = self->streaming->max_in_flight + 1;
  gst_buffer_pool_config_set_params (config, caps, info.size, min_buffers, 0);
  gst_buffer_pool_config_set_allocator (config, allocator, &params);
  gst_buffer_pool_config_add_option (config, GST_BUFFER_POOL_OPTION_VIDEO_META);
  if (gst_buffer_pool_set_config (pool, config)) {
    gst_query_add_allocation_pool (query, pool, info.size, min_buffers, 0);
    if (gst_query_get_n_allocation_params (query) > 0)
      gst_query_set_nth_allocation_param (query, 0, allocator, &params);
    else
      gst_query_add_allocation_param (query, allocator, &params);
    GST_DEBUG_OBJECT (self, "offering a pinned pool for %" GST_PTR_FORMAT,
        caps);
  }
  gst_object_unref (pool);
  gst_object_unref (allocator);
}

/* Upstream may write straight into pinned memory, and may pad its rows. */
static gboolean
gst_cuda_gray_propose_allocation (GstBaseTransform * trans,
    GstQuery * decide_query, GstQuery * query)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  if (gst_base_transform_is_passthrough (trans))     /* downstream answers */
    return GST_BASE_TRANSFORM_CLASS (parent_class)->propose_allocation (trans,
        decide_query, query);
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  GstCaps *caps;
  gst_query_parse_allocation (query, &caps, NULL);
  GstCapsFeatures *features = caps ? gst_caps_get_features (caps, 0) : NULL;
  const gboolean system_memory = !features
      || gst_caps_features_is_equal (features,
      GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
  if (system_memory && backend_is_cuda (self)
      && gst_query_get_n_allocation_pools (query) == 0)
    add_pinned_pool (self, query, caps);
#ifdef CUDAGRAY_HAVE_GST_CUDA
  /* CUDA memory: a pool whose memory carries our stream, which a producer
   * may adopt (upstream's own pool otherwise) */
  else if (!system_memory && self->cuda_ctx
      && gst_query_get_n_allocation_pools (query) == 0)
    cudagray_add_cuda_pool (query, self->cuda_ctx, self->cuda_stream, caps,
        self->streaming->max_in_flight + 1);
#endif
  return TRUE;
}

/* Output buffers come from downstream's pool when it has one, else from our
 * pinned pool, so that the download lands in them directly. */
static gboolean
gst_cuda_gray_decide_allocation (GstBaseTransform * trans, GstQuery * query)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  if (backend_is_cuda (self) && gst_query_get_n_allocation_pools (query) == 0) {
    GstCaps *caps;
    gst_query_parse_allocation (query, &caps, NULL);
    add_pinned_pool (self, query, caps);
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->decide_allocation (trans,
      query);
}

static gboolean
map_input_frame (GstBuffer * buffer, const GstVideoInfo * info,
    cudagray::PixelLayout layout, GstMapFlags flags, GstMapInfo * map,
    cudagray::InputFrame * frame, std::string * why)
{
  const GstVideoMeta *meta = gst_buffer_get_video_meta (buffer);
  const cudagray::LayoutInfo & layout_desc = cudagray::layout_info (layout);
  const guint n_planes = layout_desc.planes;     /* YUV: the luma plane only */
  gchar *text = NULL;

  if (meta && (meta->format != GST_VIDEO_INFO_FORMAT (info)
          || meta->n_planes != GST_VIDEO_INFO_N_PLANES (info)
          || (gint) meta->width != GST_VIDEO_INFO_WIDTH (info)
          || (gint) meta->height != GST_VIDEO_INFO_HEIGHT (info))) {
    *why = std::string ("its video meta describes a ") +
        std::to_string (meta->width) + "x" + std::to_string (meta->height) +
        " " + gst_video_format_to_string (meta->format) + " frame";
    if (meta->n_planes != GST_VIDEO_INFO_N_PLANES (info))
      *why += " with " + std::to_string (meta->n_planes) + " plane(s), the caps " +
          std::to_string (GST_VIDEO_INFO_N_PLANES (info));
    return FALSE;
  }
  if (!gst_buffer_map (buffer, map, flags)) {
    *why = "it could not be mapped for reading";
    return FALSE;
  }
  *frame = cudagray::InputFrame { layout, GST_VIDEO_INFO_WIDTH (info),
      GST_VIDEO_INFO_HEIGHT (info), {}, {},
      GST_VIDEO_INFO_COLORIMETRY (info).range != GST_VIDEO_COLOR_RANGE_0_255};
  const guint64 row_bytes = (guint64) frame->width * layout_desc.bytes_per_pixel;
  for (guint p = 0; p < n_planes && !text; p++) {
    const gsize offset = meta ? meta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET (info, p);
    const gint stride = meta ? meta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE (info, p);
    const guint64 span = (guint64) MAX (stride, 0) * (frame->height - 1) + row_bytes;
    if (stride < 0)
      text = g_strdup_printf ("plane %u has a negative stride (%d): cudagray "
          "takes rows top to bottom only", p, stride);
    else if ((guint64) stride < row_bytes)
      text = g_strdup_printf ("plane %u has a stride of %d bytes, shorter "
          "than its %" G_GUINT64_FORMAT "-byte rows", p, stride, row_bytes);
    else if (offset > map->size)
      text = g_strdup_printf ("plane %u starts at byte %" G_GSIZE_FORMAT
          ", past the end of the %" G_GSIZE_FORMAT "-byte buffer", p, offset,
          map->size);
    else if (span > map->size - offset)
      text = g_strdup_printf ("plane %u (offset %" G_GSIZE_FORMAT ", stride %d)"
          " needs %" G_GUINT64_FORMAT " bytes, the buffer has %" G_GSIZE_FORMAT,
          p, offset, stride, offset + span, map->size);
    if (text)
      break;
    frame->plane[p] = map->data + offset;
    frame->stride[p] = stride;
  }
  if (!text)
    return TRUE;
  *why = text;
  g_free (text);
  gst_buffer_unmap (buffer, map);
  return FALSE;
}

/* The error for a backend call that failed; the frames in flight are dropped. */
static GstFlowReturn
backend_failed (GstCudaGray * self, const char *doing, const std::string & why)
{
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
      ("The %s backend failed to %s: %s", self->streaming->backend->name (),
          doing, why.c_str ()),
      ("check the GPU with nvidia-smi, or set backend=cpu"));
  discard_in_flight (self);
  return GST_FLOW_ERROR;
}

/* The error for an input buffer that does not hold its frame. */
static GstFlowReturn
refuse_input (GstCudaGray * self, const std::string & why)
{
  const GstVideoInfo *info = &self->streaming->in_info;
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("Input buffer does not hold a %dx%d %s frame: %s", info->width,
          info->height, GST_VIDEO_INFO_NAME (info), why.c_str ()),
      ("upstream sent a buffer that does not match the caps it negotiated"));
  return GST_FLOW_ERROR;
}

/* Whether the kernel can read inbuf on the GPU: CUDA memory of the context
 * the backend works in. CUDA memory of another context is read through a
 * host mapping instead (GstCudaMemory downloads it). */
static bool
reads_on_device (GstCudaGray * self, GstBuffer * inbuf, std::string * mismatch)
{
#ifdef CUDAGRAY_HAVE_GST_CUDA
  if (!self->streaming->cuda_input || !self->cuda_ctx)
    return false;
  for (guint i = 0; i < gst_buffer_n_memory (inbuf); i++) {
    GstMemory *mem = gst_buffer_peek_memory (inbuf, i);
    if (!gst_is_cuda_memory (mem))
      return false;
    GstCudaContext *theirs = GST_CUDA_MEMORY_CAST (mem)->context;
    if (theirs == self->cuda_ctx)
      continue;
    guint their_device = 0, our_device = 0;
    g_object_get (theirs, "cuda-device-id", &their_device, NULL);
    g_object_get (self->cuda_ctx, "cuda-device-id", &our_device, NULL);
    if (their_device != our_device)
      *mismatch = "cuda-device-id=" + std::to_string (our_device) +
          ", but the pipeline's CUDA memory is on device " +
          std::to_string (their_device);
    GST_LOG_OBJECT (self, "input in another CUDA context: mapped on the host");
    return false;
  }
  return gst_buffer_n_memory (inbuf) > 0;
#else
  return false;
#endif
}

/* YUV's gray is its luma plane: weights chosen away from the default would
 * silently change nothing, so say so, once per run. */
static void
warn_if_weights_unused (GstCudaGray * self, const cudagray::Weights & weights)
{
  Streaming & s = *self->streaming;
  const cudagray::Weights standard =
      cudagray::standard_weights (cudagray::Matrix::BT601);
  if (s.layout != cudagray::PixelLayout::Luma || s.warned_weights_unused
      || (weights.r == standard.r && weights.g == standard.g
          && weights.b == standard.b))
    return;
  s.warned_weights_unused = true;
  GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
      ("matrix and weights do not apply to %s input: its gray is the luma "
          "plane, %s", GST_VIDEO_INFO_NAME (&s.in_info),
          s.in_info.colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255 ?
          "copied" : "expanded from limited range"),
      ("to apply them, convert to RGB before cudagray: "
          "videoconvert ! video/x-raw,format=RGBx ! cudagray"));
}

/* Starts converting inbuf into outbuf: both stay mapped, and referenced, until
 * the frame is finished (finish_oldest) or dropped (discard_in_flight). */
static GstFlowReturn
gst_cuda_gray_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  Streaming & s = *self->streaming;
  InFlight f;
  cudagray::InputFrame in;
  GstVideoInfo out_info;
  std::string error;
  CudaScope scope (self);

  std::string mismatch;
  const bool on_device = reads_on_device (self, inbuf, &mismatch);
  if (!mismatch.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", mismatch.c_str ()),
        ("unset cuda-device-id, or put upstream's CUDA elements on the same "
            "device"));
    return GST_FLOW_ERROR;
  }
#ifdef CUDAGRAY_HAVE_GST_CUDA
  const GstMapFlags flags = (GstMapFlags) (GST_MAP_READ |
      (on_device ? GST_MAP_CUDA : 0));
#else
  const GstMapFlags flags = GST_MAP_READ;
#endif
  if (!map_input_frame (inbuf, &s.in_info, s.layout, flags, &f.in_map, &in,
          &error))
    return refuse_input (self, error);
  gst_video_info_set_format (&out_info, GST_VIDEO_FORMAT_GRAY8,
      s.in_info.width, s.in_info.height);
  if (!gst_video_frame_map (&f.out, &out_info, outbuf, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("Could not map the output buffer for writing"), (NULL));
    gst_buffer_unmap (inbuf, &f.in_map);
    return GST_FLOW_ERROR;
  }
  in.on_device = on_device;
#ifdef CUDAGRAY_HAVE_GST_CUDA
  /* 1.24+: the producer may still be writing on its stream; the kernel waits
   * for it on the GPU, and inbuf stays referenced until the frame is done */
  if (on_device)
    in.producer_stream = cudagray_pending_writer_stream (inbuf);
#endif
  f.in = gst_buffer_ref (inbuf);
  gst_buffer_ref (outbuf);      /* after mapping it for writing */
  const cudagray::GrayFrame out {
  static_cast < uint8_t * >(GST_VIDEO_FRAME_PLANE_DATA (&f.out, 0)),
        (size_t) GST_VIDEO_FRAME_PLANE_STRIDE (&f.out, 0)};

  GST_OBJECT_LOCK (self);
  const cudagray::Weights weights = current_weights (self);
  GST_OBJECT_UNLOCK (self);
  warn_if_weights_unused (self, weights);

  s.in_flight.push_back (f);
  if (!s.backend->submit (in, out, weights, &error))
    return backend_failed (self, "start converting a frame", error);
  return GST_FLOW_OK;
}

/* Waits for the oldest frame in flight and hands over its output buffer. */
static GstFlowReturn
finish_oldest (GstCudaGray * self, GstBuffer ** outbuf)
{
  Streaming & s = *self->streaming;
  std::string error;
  InFlight f = s.in_flight.front ();
  s.in_flight.pop_front ();
  const bool ok = s.backend->finish_oldest (&error);
  *outbuf = f.out.buffer;
  gst_video_frame_unmap (&f.out);
  gst_buffer_unmap (f.in, &f.in_map);
  gst_buffer_unref (f.in);
  if (!ok) {
    gst_buffer_unref (*outbuf);
    *outbuf = NULL;
    return backend_failed (self, "convert a frame", error);
  }

  const cudagray::TimingStats stats = s.backend->stats ();
  GST_OBJECT_LOCK (self);
  self->stats = stats;
  self->stats_in_flight = s.backend->in_flight ();
  GST_OBJECT_UNLOCK (self);
  if (stats.frames % STATS_LOG_INTERVAL == 0)
    GST_DEBUG_OBJECT (self, "%" G_GUINT64_FORMAT " frames: device %.1f us "
        "(min %.1f, max %.1f), upload %.1f us, download %.1f us, %d in flight",
        (guint64) stats.frames, stats.device_us_mean, stats.device_us_min,
        stats.device_us_max, stats.upload_us_mean, stats.download_us_mean,
        s.backend->in_flight ());
  return GST_FLOW_OK;
}

/* Called by GstBaseTransform after each input buffer, then again until it
 * returns no buffer: submits the queued input, then hands out the oldest
 * frame once it is ready, or at once (waiting) when max-inflight are out. */
static GstFlowReturn
gst_cuda_gray_generate_output (GstBaseTransform * trans, GstBuffer ** outbuf)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  Streaming & s = *self->streaming;

  if (gst_base_transform_is_passthrough (trans)) {
    /* GRAY8 leaves untouched, but only if it holds the frame (its one plane
     * checked like a luma plane) */
    GstMapInfo map;
    cudagray::InputFrame frame;
    std::string error;
    if (trans->queued_buf && !map_input_frame (trans->queued_buf, &s.in_info,
            cudagray::PixelLayout::Luma, GST_MAP_READ, &map, &frame, &error)) {
      gst_clear_buffer (&trans->queued_buf);
      *outbuf = NULL;
      return refuse_input (self, error);
    }
    if (trans->queued_buf)
      gst_buffer_unmap (trans->queued_buf, &map);
    return GST_BASE_TRANSFORM_CLASS (parent_class)->generate_output (trans,
        outbuf);
  }
  CudaScope scope (self);

  *outbuf = NULL;
  if (trans->queued_buf) {
    GstBuffer *inbuf = trans->queued_buf;
    GstBuffer *out = NULL;
    trans->queued_buf = NULL;
    GstFlowReturn ret = GST_BASE_TRANSFORM_CLASS (parent_class)->prepare_output_buffer
        (trans, inbuf, &out);
    if (ret == GST_FLOW_OK)
      ret = gst_cuda_gray_transform (trans, inbuf, out);
    else if (ret != GST_FLOW_FLUSHING)
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Could not get an output buffer: %s", gst_flow_get_name (ret)),
          ("the buffer pool could not allocate; free host memory"));
    gst_clear_buffer (&out);
    gst_buffer_unref (inbuf);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (s.in_flight.empty ()
      || ((int) s.in_flight.size () < s.max_in_flight
          && !s.backend->oldest_ready ()))
    return GST_FLOW_OK;
  return finish_oldest (self, outbuf);
}

/* Pushes every frame in flight, in order. */
static GstFlowReturn
drain_in_flight (GstCudaGray * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  CudaScope scope (self);
  GST_DEBUG_OBJECT (self, "draining %zu frames",
      self->streaming->in_flight.size ());
  while (ret == GST_FLOW_OK && !self->streaming->in_flight.empty ()) {
    GstBuffer *outbuf;
    ret = finish_oldest (self, &outbuf);
    if (ret == GST_FLOW_OK)
      ret = gst_pad_push (GST_BASE_TRANSFORM_SRC_PAD (self), outbuf);
  }
  discard_in_flight (self);     /* what a failed push left behind */
  return ret;
}

static gboolean
gst_cuda_gray_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstCudaGray *self = GST_CUDA_GRAY (trans);
  if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP)
    discard_in_flight (self);
  else if (GST_EVENT_IS_SERIALIZED (event))
    drain_in_flight (self);     /* frames before the event leave before it */
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* The output has the input's size and orientation, so metas that describe
 * only geometry (crop, regions of interest) or time (untagged: timecode,
 * reference timestamps) stay true and are copied; any other tag, such as
 * colorspace (the video meta of the input's pixel format) or memory, is
 * about what changed, and the meta is dropped. */
static gboolean
gst_cuda_gray_transform_meta (GstBaseTransform * trans, GstBuffer * outbuf,
    GstMeta * meta, GstBuffer * inbuf)
{
  static const gchar *const geometry_tags[] = { GST_META_TAG_VIDEO_STR,
    GST_META_TAG_VIDEO_SIZE_STR, GST_META_TAG_VIDEO_ORIENTATION_STR, NULL
  };
  const gchar *const *tags = gst_meta_api_type_get_tags (meta->info->api);
  for (const gchar * const *tag = tags; tag && *tag; tag++)
    if (!g_strv_contains (geometry_tags, *tag))
      return FALSE;
  return TRUE;
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
/* A CUDA context handed down by the application or a neighbour. */
static void
gst_cuda_gray_set_context (GstElement * element, GstContext * context)
{
  GstCudaGray *self = GST_CUDA_GRAY (element);
  GST_OBJECT_LOCK (self);
  const gint device_id = self->cuda_device_id;
  GST_OBJECT_UNLOCK (self);
  gst_cuda_handle_set_context (element, context, device_id, &self->cuda_ctx);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}
#endif

static void
gst_cuda_gray_finalize (GObject * object)
{
  GstCudaGray *self = GST_CUDA_GRAY (object);
  delete self->streaming;
  g_free (self->invalid_weights);
#ifdef CUDAGRAY_HAVE_GST_CUDA
  gst_clear_object (&self->cuda_ctx);
#endif
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_cuda_gray_class_init (GstCudaGrayClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  gobject_class->set_property = gst_cuda_gray_set_property;
  gobject_class->get_property = gst_cuda_gray_get_property;
  gobject_class->finalize = gst_cuda_gray_finalize;

  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where frames are converted: auto uses CUDA when a usable GPU "
          "exists and otherwise the CPU (posting a warning)",
          GST_TYPE_CUDA_GRAY_BACKEND, DEFAULT_BACKEND,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int ("cuda-device-id", "CUDA device ID",
          "CUDA device to convert on (-1: the first usable device)",
          -1, G_MAXINT, DEFAULT_CUDA_DEVICE_ID,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_MATRIX,
      g_param_spec_enum ("matrix", "Matrix",
          "Luma coefficients: Y = min(255, (wR*R + wG*G + wB*B + 32768) >> 16) "
          "with Q16 weights from this matrix. RGB input only: YUV input's gray "
          "is its luma plane (a warning says so when this is not bt601)",
          GST_TYPE_CUDA_GRAY_MATRIX, DEFAULT_MATRIX,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property (gobject_class, PROP_WEIGHTS,
      g_param_spec_string ("weights", "Weights",
          "Custom coefficients \"R,G,B\" (each 0..64, e.g. \"0.21,0.72,0.07\"); "
          "setting them selects matrix=custom. Invalid text makes the element "
          "fail to start; set while playing, it is ignored with a warning. "
          "RGB input only, like matrix. Reads back the coefficients in use",
          DEFAULT_WEIGHTS,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_PLAYING)));
  g_object_class_install_property (gobject_class, PROP_MAX_INFLIGHT,
      g_param_spec_uint ("max-inflight", "Max frames in flight",
          "Frames converting on the GPU at once (1: each frame finishes "
          "before the next starts; 0: automatic, " G_STRINGIFY (AUTO_INFLIGHT)
          " for a non-live upstream and 1 for a live one). Each frame held "
          "adds one frame of latency", 0, MAX_INFLIGHT_LIMIT,
          DEFAULT_MAX_INFLIGHT,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Running figures since start: frames, gpu-time-mean-us / -min-us / "
          "-max-us (kernel time measured with CUDA events; conversion time on "
          "the CPU backend), upload-time-mean-us (frames that were uploaded), "
          "download-time-mean-us, "
          "in-flight, cuda-device-id (the GPU in use, -1 on the CPU), "
          "staged-inputs / staged-outputs (frames whose memory was not pinned "
          "and went through a staging copy), device-inputs (frames read from "
          "CUDA memory where they were, no upload)", GST_TYPE_STRUCTURE,
          (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  GstCaps *sink_caps = gst_caps_from_string (SYSTEM_MEMORY_SINK_CAPS);
  std::string description =
      "Converts RGB-family video to GRAY8 on an NVIDIA GPU, or on the CPU; "
      "YUV video gives its luma plane";
#ifdef CUDAGRAY_HAVE_GST_CUDA
  std::string unusable;
  if (cudagray_cuda_memory_usable (&unusable))
    gst_caps_append (sink_caps, gst_caps_from_string (CUDA_MEMORY_SINK_CAPS));
  else
    description += "; CUDA memory input is off: " + unusable;
#endif
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sink_caps));
  gst_caps_unref (sink_caps);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_metadata (element_class,
      "CUDA grayscale converter", "Filter/Converter/Video/Hardware",
      description.c_str (), "cudagray developers");

#ifdef CUDAGRAY_HAVE_GST_CUDA
  element_class->set_context = GST_DEBUG_FUNCPTR (gst_cuda_gray_set_context);
#endif
  trans_class->start = GST_DEBUG_FUNCPTR (gst_cuda_gray_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_cuda_gray_stop);
  trans_class->transform_caps = GST_DEBUG_FUNCPTR (gst_cuda_gray_transform_caps);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_cuda_gray_query);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_cuda_gray_set_caps);
  trans_class->transform_size = GST_DEBUG_FUNCPTR (gst_cuda_gray_transform_size);
  trans_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_cuda_gray_propose_allocation);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (gst_cuda_gray_decide_allocation);
  /* transform starts a frame, generate_output hands finished ones out */
  trans_class->transform = GST_DEBUG_FUNCPTR (gst_cuda_gray_transform);
  trans_class->generate_output =
      GST_DEBUG_FUNCPTR (gst_cuda_gray_generate_output);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_cuda_gray_sink_event);
  trans_class->transform_meta =
      GST_DEBUG_FUNCPTR (gst_cuda_gray_transform_meta);

  gst_type_mark_as_plugin_api (GST_TYPE_CUDA_GRAY_BACKEND, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_CUDA_GRAY_MATRIX, (GstPluginAPIFlags) 0);
  GST_DEBUG_CATEGORY_INIT (gst_cuda_gray_debug, "cudagray", 0,
      "CUDA grayscale converter");
}

static void
gst_cuda_gray_init (GstCudaGray * self)
{
  self->backend_choice = DEFAULT_BACKEND;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->matrix = DEFAULT_MATRIX;
  self->custom = cudagray::standard_coefficients (cudagray::Matrix::BT601);
  self->max_inflight = DEFAULT_MAX_INFLIGHT;
  self->stats_device_id = -1;
  self->streaming = new Streaming ();
  gst_video_info_init (&self->streaming->in_info);
  /* transform_caps lists converted formats first: keep that order */
  gst_base_transform_set_prefer_passthrough (GST_BASE_TRANSFORM (self), FALSE);
  /* like videoconvert: frames already late at the sink are not converted */
  gst_base_transform_set_qos_enabled (GST_BASE_TRANSFORM (self), TRUE);
}
