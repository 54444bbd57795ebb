// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-cudagraybatch
 * @title: cudagraybatch
 * @see_also: cudagray, compositor
 *
 * Takes video from any number of request sink pads and makes, for each
 * output tick, one batch for a model: a slot a pad, each the pad's frame
 * converted to gray as #cudagray converts it (the same formats, crop metas,
 * #GstCudaGrayBatch:method, #GstCudaGrayBatch:add-borders letterboxing,
 * #GstCudaGrayBatch:matrix and #GstCudaGrayBatch:weights) at
 * #GstCudaGrayBatch:width x #GstCudaGrayBatch:height, normalised as
 * (gray / full scale - mean) / std and stored contiguous N x 1 x H x W as
 * #GstCudaGrayBatch:dtype. Each tick takes from each pad the newest buffer
 * whose running time is before the tick's end; a pad with none gives an
 * absent (black) slot. A #GstCudaGrayBatchMeta on each batch says, for each
 * slot, its pad, whether it is present, its source PTS and the letterbox
 * transform back to the source frame. With GStreamer 1.26 or later each
 * batch also carries a GstTensorMeta describing it. Mean and std may come
 * from a GStreamer modelinfo file's input range (#GstCudaGrayBatch:model-info).
 * docs/batch.md defines every value.
 *
 * #GstCudaGrayBatch:backend says where batches are made: on the GPU in one
 * kernel launch for the slots of each pixel layout (input in CUDA memory of
 * the element's CUDA context read where it is, other input uploaded), or on
 * the CPU; bit for bit the same. On CUDA the batch leaves in CUDA memory
 * when downstream takes it (memory:CUDAMemory), from a pool of the
 * element's, else in system memory.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! cudagraybatch name=b width=64 height=48 dtype=float32 ! \
 *     fakesink videotestsrc pattern=ball ! b.
 * ]|
 * Two sources, one 2x1x48x64 float32 batch a frame.
 */

/* The element: pads, properties, negotiation and the tick. */
#include "gstcudagraybatch.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cudagray/batch.h"
#include "gstcudagrayallocation.h"
#include "gstcudagraybackendchoice.h"
#include "gstcudagraybatchmeta.h"
#include "gstcudagraybatchtensor.h"
#include "gstcudagraycaps.h"
#include "gstcudagrayframe.h"
#include "gstcudagraymodelinfo.h"
#include "gstcudagraypools.h"

GST_DEBUG_CATEGORY_STATIC(gst_cuda_gray_batch_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_batch_debug

#define BATCH_CAPS_NAME "application/x-cudagray-batch"

/* a common model input size (YOLO's) */
#define DEFAULT_WIDTH 640
#define DEFAULT_HEIGHT 640
#define DEFAULT_DTYPE GST_CUDA_GRAY_BATCH_DTYPE_FLOAT32
/* torchvision's ToTensor alone: gray / full scale */
#define DEFAULT_MEAN 0.0
#define DEFAULT_STD 1.0
#define DEFAULT_BATCH_SIZE 0
#define DEFAULT_MODEL_INFO NULL
/* the output's rate when no pad has one (every pad 0/1, variable) */
#define FALLBACK_FPS_N 30
#define FALLBACK_FPS_D 1

enum {
  PROP_WIDTH = GST_CUDA_GRAY_PROPERTIES_LAST + 1,
  PROP_HEIGHT,
  PROP_DTYPE,
  PROP_MEAN,
  PROP_STD,
  PROP_BATCH_SIZE,
  PROP_MODEL_INFO,
};

#define GST_TYPE_CUDA_GRAY_BATCH_DTYPE (gst_cuda_gray_batch_dtype_get_type())
static GType gst_cuda_gray_batch_dtype_get_type(void) {
  static GType type = 0;
  static const GEnumValue values[] = {
      {GST_CUDA_GRAY_BATCH_DTYPE_UINT8, "GRAY8 codes themselves (mean 0 and std 1 only)", "uint8"},
      {GST_CUDA_GRAY_BATCH_DTYPE_FLOAT16,
       "IEEE binary16, the float32 value rounded to nearest even", "float16"},
      {GST_CUDA_GRAY_BATCH_DTYPE_FLOAT32, "IEEE binary32", "float32"},
      {0, NULL, NULL},
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstCudaGrayBatchDType", values));
  return type;
}

static const char *dtype_name(GstCudaGrayBatchDType dtype) {
  return g_enum_get_value(G_ENUM_CLASS(g_type_class_peek(GST_TYPE_CUDA_GRAY_BATCH_DTYPE)), dtype)
      ->value_nick;
}

/* ------------------------------------------------------------ the sink pad */

G_DEFINE_TYPE(GstCudaGrayBatchPad, gst_cuda_gray_batch_pad, GST_TYPE_AGGREGATOR_PAD);

static void drop_held(GstCudaGrayBatchPad *pad) {
  GST_OBJECT_LOCK(pad);
  GstBuffer *held = pad->held;
  pad->held = NULL;
  GST_OBJECT_UNLOCK(pad);
  gst_clear_buffer(&held);
}

static GstFlowReturn gst_cuda_gray_batch_pad_flush(GstAggregatorPad *pad, GstAggregator *agg) {
  drop_held(GST_CUDA_GRAY_BATCH_PAD(pad));
  return GST_FLOW_OK;
}

static void gst_cuda_gray_batch_pad_finalize(GObject *object) {
  drop_held(GST_CUDA_GRAY_BATCH_PAD(object));
  G_OBJECT_CLASS(gst_cuda_gray_batch_pad_parent_class)->finalize(object);
}

static void gst_cuda_gray_batch_pad_class_init(GstCudaGrayBatchPadClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = gst_cuda_gray_batch_pad_finalize;
  GST_AGGREGATOR_PAD_CLASS(klass)->flush = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_pad_flush);
}

static void gst_cuda_gray_batch_pad_init(GstCudaGrayBatchPad *pad) {}

/* N of sink_N: the default create_new_pad names every pad so */
static gint pad_index(GstPad *pad) {
  guint index = 0;
  return sscanf(GST_OBJECT_NAME(pad), "sink_%u", &index) == 1 ? (gint)index : -1;
}

/* ------------------------------------------------------------- the element */

#define gst_cuda_gray_batch_parent_class parent_class
G_DEFINE_TYPE(GstCudaGrayBatch, gst_cuda_gray_batch, GST_TYPE_AGGREGATOR);
GST_ELEMENT_REGISTER_DEFINE(cudagraybatch, "cudagraybatch", GST_RANK_NONE,
                            GST_TYPE_CUDA_GRAY_BATCH);

static void gst_cuda_gray_batch_set_property(GObject *object, guint prop_id, const GValue *value,
                                             GParamSpec *pspec) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(object);
  if (prop_id <= GST_CUDA_GRAY_PROPERTIES_LAST) {
    gst_cuda_gray_properties_set(GST_ELEMENT(self), &self->props, prop_id, value, pspec);
    return;
  }
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_WIDTH: self->width = g_value_get_int(value); break;
    case PROP_HEIGHT: self->height = g_value_get_int(value); break;
    case PROP_DTYPE: self->dtype = (GstCudaGrayBatchDType)g_value_get_enum(value); break;
    case PROP_MEAN: self->mean = g_value_get_double(value); break;
    case PROP_STD: self->std = g_value_get_double(value); break;
    case PROP_BATCH_SIZE: self->batch_size = g_value_get_uint(value); break;
    case PROP_MODEL_INFO:
      g_free(self->model_info);
      self->model_info = g_value_dup_string(value);
      break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void gst_cuda_gray_batch_get_property(GObject *object, guint prop_id, GValue *value,
                                             GParamSpec *pspec) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(object);
  if (prop_id <= GST_CUDA_GRAY_PROPERTIES_LAST) {
    gst_cuda_gray_properties_get(GST_ELEMENT(self), &self->props, prop_id, value, pspec);
    return;
  }
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
    case PROP_WIDTH: g_value_set_int(value, self->width); break;
    case PROP_HEIGHT: g_value_set_int(value, self->height); break;
    case PROP_DTYPE: g_value_set_enum(value, self->dtype); break;
    case PROP_MEAN: g_value_set_double(value, self->mean); break;
    case PROP_STD: g_value_set_double(value, self->std); break;
    case PROP_BATCH_SIZE: g_value_set_uint(value, self->batch_size); break;
    case PROP_MODEL_INFO: g_value_set_string(value, self->model_info); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec); break;
  }
  GST_OBJECT_UNLOCK(self);
}

/* What the properties make of every slot; call with the object lock held.
 * Float batches normalise GRAY16, the finer gray; uint8 holds GRAY8. */
static cudagray::BatchFormat batch_format(const GstCudaGrayBatch *self) {
  cudagray::BatchFormat f;
  f.width = self->width;
  f.height = self->height;
  f.dtype = self->dtype == GST_CUDA_GRAY_BATCH_DTYPE_UINT8     ? cudagray::BatchDType::UInt8
            : self->dtype == GST_CUDA_GRAY_BATCH_DTYPE_FLOAT16 ? cudagray::BatchDType::Float16
                                                               : cudagray::BatchDType::Float32;
  f.gray_depth = f.dtype == cudagray::BatchDType::UInt8 ? 8 : 16;
  /* the documented binary32 mean and std: the doubles rounded to nearest;
   * a model-info file's replace the properties' */
  f.mean = (float)(self->from_model_info ? self->model_mean : self->mean);
  f.std = (float)(self->from_model_info ? self->model_std : self->std);
  return f;
}

/* The sink pads by number, referenced: slot i is the i-th. */
static std::vector<GstCudaGrayBatchPad *> sink_pads(GstCudaGrayBatch *self) {
  std::vector<GstCudaGrayBatchPad *> pads;
  GST_OBJECT_LOCK(self);
  for (GList *l = GST_ELEMENT(self)->sinkpads; l; l = l->next)
    pads.push_back(GST_CUDA_GRAY_BATCH_PAD(gst_object_ref(l->data)));
  GST_OBJECT_UNLOCK(self);
  std::sort(pads.begin(), pads.end(), [](GstCudaGrayBatchPad *a, GstCudaGrayBatchPad *b) {
    return pad_index(GST_PAD(a)) < pad_index(GST_PAD(b));
  });
  return pads;
}

static void unref_pads(std::vector<GstCudaGrayBatchPad *> &pads) {
  for (GstCudaGrayBatchPad *pad : pads) gst_object_unref(pad);
  pads.clear();
}

/* The slots a batch has: batch-size, or else one a sink pad. */
static guint slot_count(GstCudaGrayBatch *self, size_t pads) {
  GST_OBJECT_LOCK(self);
  const guint fixed = self->batch_size;
  GST_OBJECT_UNLOCK(self);
  return fixed > 0 ? fixed : (guint)MAX(pads, (size_t)1);
}

/* Reads model-info, if set, for mean, std and the tensor's id; false after
 * posting the error that says what is wrong with the file. */
static gboolean read_model_info(GstCudaGrayBatch *self) {
  GST_OBJECT_LOCK(self);
  gchar *path = g_strdup(self->model_info);
  GST_OBJECT_UNLOCK(self);
  const bool have_file = path != NULL;
  GstCudaGrayModelInfo info;
  std::string why, details;
  const bool ok = !have_file || gst_cuda_gray_model_info_load(path, &info, &why, &details);
  g_free(path);
  if (!ok) {
    GST_ELEMENT_ERROR(
        self, RESOURCE, SETTINGS, ("%s", why.c_str()),
        ("%s", details.empty() ? "see docs/batch.md for the file's form" : details.c_str()));
    return FALSE;
  }
  if (have_file)
    GST_INFO_OBJECT(self, "model-info: range [%g, %g], mean %.9g, std %.9g, id \"%s\"", info.lo,
                    info.hi, (float)info.mean, (float)info.std, info.id.c_str());
  GST_OBJECT_LOCK(self);
  self->from_model_info = have_file;
  self->model_mean = info.mean;
  self->model_std = info.std;
  self->tensor_id =
      g_quark_from_string(info.id.empty() ? GST_CUDA_GRAY_BATCH_TENSOR_ID : info.id.c_str());
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

/* Validates the properties (a batch that cannot be made fails the start
 * with an error naming the property) and takes the backend, as cudagray
 * takes its own. */
static gboolean gst_cuda_gray_batch_start(GstAggregator *agg) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  if (!read_model_info(self)) return FALSE;
  GST_OBJECT_LOCK(self);
  const GstCudaGrayBackend backend = self->props.backend;
  const gint device_id = self->props.cuda_device_id;
  const cudagray::BatchFormat format = batch_format(self);
  const guint pads = GST_ELEMENT(self)->numsinkpads, fixed = self->batch_size;
  GST_OBJECT_UNLOCK(self);
  if (!gst_cuda_gray_properties_check_weights(GST_ELEMENT(self), &self->props)) return FALSE;
  if (fixed > 0 && pads > fixed) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS,
                      ("batch-size %u is less than the %u sink pads", fixed, pads),
                      ("raise batch-size, or set it to 0 for a slot a pad"));
    return FALSE;
  }
  const cudagray::BatchSlot absent;
  std::string why;
  if (!cudagray::valid_batch(format, &absent, 1, &why)) {
    GST_ELEMENT_ERROR(self, LIBRARY, SETTINGS, ("Invalid batch settings: %s", why.c_str()),
                      ("correct width, height, dtype, mean, std or model-info"));
    return FALSE;
  }
  std::unique_ptr<cudagray::BatchMaker> maker;
  gboolean on_cuda;
  std::string cpu_fallback_reason;
  if (!gst_cuda_gray_open_cuda_backend(
          GST_ELEMENT(self), self->context, backend, device_id,
          [&](std::string *why) {
            maker =
                cudagray::make_cuda_batch_maker(why, gst_cuda_gray_context_switch(self->context));
            return maker != nullptr;
          },
          &on_cuda, &cpu_fallback_reason))
    return FALSE;
  if (!maker) maker = cudagray::make_cpu_batch_maker();
  GST_INFO_OBJECT(self, "making batches on the %s backend", maker->name());
  self->host = gst_cuda_gray_host_allocator_new(maker->uses_device_memory(),
                                                gst_cuda_gray_context_switch(self->context));
  self->maker = maker.release();
  self->tick_base = GST_CLOCK_TIME_NONE;
  self->ticks = 0;
  self->fps_n = 0;
  self->fps_d = 1;
  return TRUE;
}

static gboolean gst_cuda_gray_batch_stop(GstAggregator *agg) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  if (self->pool) gst_buffer_pool_set_active(self->pool, FALSE);
  gst_clear_object(&self->pool);
  gst_clear_object(&self->host);
  self->cuda_output = FALSE;
  delete self->maker;
  self->maker = NULL;
  gst_cuda_gray_context_close(self->context);
  return TRUE;
}

/* Neighbours asking for a CUDA context get ours, so that one is shared
 * (a decoder's frames are then read where they are). */
static gboolean gst_cuda_gray_batch_sink_query(GstAggregator *agg, GstAggregatorPad *pad,
                                               GstQuery *query) {
  if (gst_cuda_gray_context_query(GST_CUDA_GRAY_BATCH(agg)->context, query)) return TRUE;
  return GST_AGGREGATOR_CLASS(parent_class)->sink_query(agg, pad, query);
}

static gboolean gst_cuda_gray_batch_src_query(GstAggregator *agg, GstQuery *query) {
  if (gst_cuda_gray_context_query(GST_CUDA_GRAY_BATCH(agg)->context, query)) return TRUE;
  return GST_AGGREGATOR_CLASS(parent_class)->src_query(agg, query);
}

/* A CUDA context handed down by the application or a neighbour. */
static void gst_cuda_gray_batch_set_context(GstElement *element, GstContext *context) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(element);
  GST_OBJECT_LOCK(self);
  const gint device_id = self->props.cuda_device_id;
  GST_OBJECT_UNLOCK(self);
  gst_cuda_gray_context_set(self->context, context, device_id);
  GST_ELEMENT_CLASS(parent_class)->set_context(element, context);
}

/* A flush (a flushing seek) starts the ticks again from the new segment. */
static GstFlowReturn gst_cuda_gray_batch_flush(GstAggregator *agg) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  self->tick_base = GST_CLOCK_TIME_NONE;
  self->ticks = 0;
  return GST_FLOW_OK;
}

/* More pads than batch-size slots, or than a batch holds, are refused. */
static GstAggregatorPad *gst_cuda_gray_batch_create_new_pad(GstAggregator *agg,
                                                            GstPadTemplate *templ,
                                                            const gchar *req_name,
                                                            const GstCaps *caps) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  GST_OBJECT_LOCK(self);
  const guint pads = GST_ELEMENT(self)->numsinkpads;
  const guint limit = self->batch_size > 0 ? self->batch_size : cudagray::kMaxBatchSlots;
  GST_OBJECT_UNLOCK(self);
  if (pads >= limit) {
    GST_ELEMENT_WARNING(self, CORE, PAD, ("No sink pad: the batch has %u slots, all taken", limit),
                        ("raise batch-size (0: a slot a pad, up to %d)", cudagray::kMaxBatchSlots));
    return NULL;
  }
  return GST_AGGREGATOR_CLASS(parent_class)->create_new_pad(agg, templ, req_name, caps);
}

/* A pad's CAPS, in order with its buffers: the input they describe. */
static gboolean gst_cuda_gray_batch_sink_event(GstAggregator *agg, GstAggregatorPad *aggpad,
                                               GstEvent *event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_CAPS) {
    GstCudaGrayBatchPad *pad = GST_CUDA_GRAY_BATCH_PAD(aggpad);
    GstCaps *caps;
    gst_event_parse_caps(event, &caps);
    pad->have_info = gst_cuda_gray_input_from_caps(caps, &pad->info, &pad->format);
    if (!pad->have_info) {
      GST_ELEMENT_ERROR(agg, CORE, NEGOTIATION,
                        ("%s: cannot convert %" GST_PTR_FORMAT, GST_OBJECT_NAME(pad), caps),
                        ("give it a format that cudagray takes"));
      gst_event_unref(event);
      return FALSE;
    }
  }
  return GST_AGGREGATOR_CLASS(parent_class)->sink_event(agg, aggpad, event);
}

/* The output's rate: the first pad's (by number) that has one. */
static void output_rate(const std::vector<GstCudaGrayBatchPad *> &pads, gint *fps_n, gint *fps_d) {
  for (GstCudaGrayBatchPad *pad : pads)
    if (pad->have_info && pad->info.fps_n > 0) {
      *fps_n = pad->info.fps_n;
      *fps_d = pad->info.fps_d;
      return;
    }
  *fps_n = FALLBACK_FPS_N;
  *fps_d = FALLBACK_FPS_D;
}

/* The caps of a batch of slots at the output rate. */
static GstCaps *batch_caps(GstCudaGrayBatch *self, guint slots, gint fps_n, gint fps_d) {
  GST_OBJECT_LOCK(self);
  GstCaps *caps = gst_caps_new_simple(
      BATCH_CAPS_NAME, "batch", G_TYPE_INT, (gint)slots, "channels", G_TYPE_INT, 1, "width",
      G_TYPE_INT, self->width, "height", G_TYPE_INT, self->height, "dtype", G_TYPE_STRING,
      dtype_name(self->dtype), "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  GST_OBJECT_UNLOCK(self);
  /* the same in CUDA memory on the GPU, after system memory as in cudagray */
  std::string unusable;
  if (self->maker->uses_device_memory() && gst_cuda_gray_cuda_memory_usable(&unusable)) {
    GstCaps *cuda = gst_caps_copy(caps);
    gst_caps_set_features_simple(
        cuda, gst_caps_features_new(GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
    gst_caps_append(caps, cuda);
  }
  return caps;
}

/* The caps the pads make now, as downstream takes them. */
static GstFlowReturn gst_cuda_gray_batch_update_src_caps(GstAggregator *agg, GstCaps *caps,
                                                         GstCaps **ret) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  std::vector<GstCudaGrayBatchPad *> pads = sink_pads(self);
  gint fps_n, fps_d;
  output_rate(pads, &fps_n, &fps_d);
  GstCaps *want = batch_caps(self, slot_count(self, pads.size()), fps_n, fps_d);
  unref_pads(pads);
  *ret = gst_caps_intersect(caps, want);
  if (gst_caps_is_empty(*ret)) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("Downstream does not take the batches %" GST_PTR_FORMAT, want),
                      ("downstream takes %" GST_PTR_FORMAT, caps));
    gst_caps_unref(want);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  gst_caps_unref(want);
  return GST_FLOW_OK;
}

/* A live source's frame can come up to one tick after the tick it belongs
 * to began: that is the element's latency. */
static gboolean gst_cuda_gray_batch_negotiated_src_caps(GstAggregator *agg, GstCaps *caps) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  gint fps_n = 0, fps_d = 1;
  gst_structure_get_fraction(gst_caps_get_structure(caps, 0), "framerate", &fps_n, &fps_d);
  /* the ticks of the new rate start where the output is */
  if ((fps_n != self->fps_n || fps_d != self->fps_d) && GST_CLOCK_TIME_IS_VALID(self->tick_base)) {
    GST_OBJECT_LOCK(self);
    self->tick_base = GST_AGGREGATOR_PAD(GST_AGGREGATOR_SRC_PAD(agg))->segment.position;
    GST_OBJECT_UNLOCK(self);
    self->ticks = 0;
  }
  self->fps_n = fps_n;
  self->fps_d = fps_d;
  self->cuda_output = gst_cuda_gray_caps_in_cuda_memory(caps);
  const GstClockTime tick = gst_util_uint64_scale(GST_SECOND, fps_d, fps_n);
  gst_aggregator_set_latency(agg, tick, tick);
  return TRUE;
}

/* Where batches are made, as the element's errors name it. */
static const char *batch_memory_name(const GstCudaGrayBatch *self) {
  return self->cuda_output ? "CUDA" : "system";
}

/* Batches come from a pool of the element's, one memory a batch: CUDA
 * memory (GStreamer's CUDA pools lay out video frames only), or host
 * memory kept from one pool to the next, as GstVideoAggregator makes a
 * pool when downstream has none. */
static gboolean gst_cuda_gray_batch_decide_allocation(GstAggregator *agg, GstQuery *query) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  if (self->pool) gst_buffer_pool_set_active(self->pool, FALSE);
  gst_clear_object(&self->pool);
  GstCaps *caps = NULL;
  gst_query_parse_allocation(query, &caps, NULL);
  gint slots = 0;
  if (caps) gst_structure_get_int(gst_caps_get_structure(caps, 0), "batch", &slots);
  GST_OBJECT_LOCK(self);
  const gsize bytes = cudagray::batch_bytes(batch_format(self), slots);
  GST_OBJECT_UNLOCK(self);
  guint min_buffers = 0;
  if (gst_query_get_n_allocation_pools(query) > 0)
    gst_query_parse_nth_allocation_pool(query, 0, NULL, NULL, &min_buffers, NULL);
  std::string why;
  /* one batch being made while downstream holds its own */
  self->pool = self->cuda_output
                   ? gst_cuda_gray_batch_pool_new(self->context, bytes, min_buffers + 1, &why)
                   : gst_cuda_gray_host_batch_pool_new(self->host, bytes, min_buffers + 1, &why);
  const char *memory = batch_memory_name(self);
  if (!self->pool) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("Cannot make batches in %s memory: %s", memory, why.c_str()), (NULL));
    return FALSE;
  }
  GST_DEBUG_OBJECT(self, "batches of %" G_GSIZE_FORMAT " bytes in %s memory", bytes, memory);
  return TRUE;
}

/* The running time of a pad's buffer (NONE without a PTS). */
static GstClockTime running_time(GstAggregatorPad *pad, GstBuffer *buffer) {
  GST_OBJECT_LOCK(pad);
  const GstClockTime t =
      gst_segment_to_running_time(&pad->segment, GST_FORMAT_TIME, GST_BUFFER_PTS(buffer));
  GST_OBJECT_UNLOCK(pad);
  return t;
}

/* Moves every buffer queued on pad before end (running time) to its held
 * frame, the newest kept and the older ones dropped. Returns whether the
 * pad is settled for the tick: a buffer at or after end is queued, or the
 * pad has ended; otherwise a frame before end may still come. A buffer
 * without a PTS goes in the batch it meets. */
static bool gather(GstCudaGrayBatchPad *pad, GstClockTime end) {
  GstAggregatorPad *aggpad = GST_AGGREGATOR_PAD(pad);
  GstBuffer *buffer;
  while ((buffer = gst_aggregator_pad_peek_buffer(aggpad))) {
    const GstClockTime t = running_time(aggpad, buffer);
    if (GST_CLOCK_TIME_IS_VALID(t) && t >= end) {
      gst_buffer_unref(buffer);
      return true;
    }
    gst_aggregator_pad_drop_buffer(aggpad);
    GST_OBJECT_LOCK(pad);
    GstBuffer *older = pad->held;
    pad->held = buffer;
    pad->held_info = pad->info;
    pad->held_format = pad->format;
    GST_OBJECT_UNLOCK(pad);
    if (older) GST_LOG_OBJECT(pad, "dropping %" GST_PTR_FORMAT ": a newer one came", older);
    gst_clear_buffer(&older);
  }
  return gst_aggregator_pad_is_eos(aggpad);
}

/* The held frame (transfer full) and the input it is; NULL when none. */
static GstBuffer *take_held(GstCudaGrayBatchPad *pad, GstVideoInfo *info,
                            const GstCudaGrayFormat **format) {
  GST_OBJECT_LOCK(pad);
  GstBuffer *held = pad->held;
  pad->held = NULL;
  *info = pad->held_info;
  *format = pad->held_format;
  GST_OBJECT_UNLOCK(pad);
  return held;
}

/* The first tick starts at the earliest frame queued (after a start, a
 * flush or a seek), so that sources whose running time starts late (live
 * ones) do not wait through empty ticks; with none, at the segment's
 * start. */
static GstClockTime first_tick(const std::vector<GstCudaGrayBatchPad *> &pads,
                               const GstSegment *segment) {
  GstClockTime earliest = GST_CLOCK_TIME_NONE;
  for (GstCudaGrayBatchPad *pad : pads) {
    GstBuffer *buffer = gst_aggregator_pad_peek_buffer(GST_AGGREGATOR_PAD(pad));
    if (!buffer) continue;
    const GstClockTime t = running_time(GST_AGGREGATOR_PAD(pad), buffer);
    gst_buffer_unref(buffer);
    if (GST_CLOCK_TIME_IS_VALID(t) && (!GST_CLOCK_TIME_IS_VALID(earliest) || t < earliest))
      earliest = t;
  }
  const GstClockTime at =
      GST_CLOCK_TIME_IS_VALID(earliest)
          ? gst_segment_position_from_running_time(segment, GST_FORMAT_TIME, earliest)
          : GST_CLOCK_TIME_NONE;
  return GST_CLOCK_TIME_IS_VALID(at) ? MAX(at, segment->start) : segment->start;
}

/* One present slot: its conversion from its pad's caps, the properties
 * and its buffer's crop, the buffer mapped, and its entry in the meta. */
static gboolean fill_slot(GstCudaGrayBatch *self, GstCudaGrayBatchPad *pad, GstBuffer *buffer,
                          const GstVideoInfo *in_info, const GstCudaGrayFormat *in_format,
                          const cudagray::BatchFormat &format, cudagray::ScaleMethod method,
                          gboolean add_borders, GstCudaGrayFrame *frame, cudagray::BatchSlot *slot,
                          GstCudaGrayBatchSlotInfo *info) {
  GstVideoInfo out_info;
  gst_video_info_set_format(
      &out_info, format.gray_depth == 16 ? GST_VIDEO_FORMAT_GRAY16_LE : GST_VIDEO_FORMAT_GRAY8,
      format.width, format.height);
  cudagray::Conversion c =
      gst_cuda_gray_conversion_from_caps(in_info, in_format, &out_info, method, add_borders);
  bool changed;
  std::string why;
  if (!gst_cuda_gray_frame_crop(buffer, in_info, &c, &changed, &why) ||
      frame->map_input(self->maker->uses_device_memory() ? self->context : NULL, buffer, in_info,
                       c.layout, &why) != GST_CUDA_GRAY_MAP_OK) {
    GST_ELEMENT_ERROR(
        self, STREAM, FORMAT,
        ("%s: the buffer does not hold its frame: %s", GST_OBJECT_NAME(pad), why.c_str()),
        ("%" GST_PTR_FORMAT, buffer));
    return FALSE;
  }
  slot->present = true;
  slot->conversion = c;
  slot->frame = frame->input();
  info->present = TRUE;
  info->pts = GST_BUFFER_PTS(buffer);
  /* the crop (the caps' picture) spread over the destination */
  info->scale_x = (gdouble)c.crop.width / c.dest.width;
  info->scale_y = (gdouble)c.crop.height / c.dest.height;
  info->offset_x = -c.dest.x * info->scale_x;
  info->offset_y = -c.dest.y * info->scale_y;
  return TRUE;
}

/* The batch of the frames the pads hold (each taken), a slot a pad in
 * order and absent slots after them; NULL after posting the error when it
 * cannot be made. */
static GstBuffer *make_batch(GstCudaGrayBatch *self, const std::vector<GstCudaGrayBatchPad *> &pads,
                             guint n_slots) {
  GST_OBJECT_LOCK(self);
  const cudagray::BatchFormat format = batch_format(self);
  const cudagray::ScaleMethod method = gst_cuda_gray_properties_method(&self->props);
  const gboolean add_borders = self->props.add_borders;
  const cudagray::Weights weights = gst_cuda_gray_properties_weights(&self->props);
  const GQuark tensor_id = self->tensor_id;
  GST_OBJECT_UNLOCK(self);

  const gsize bytes = cudagray::batch_bytes(format, n_slots);
  GstBuffer *batch = NULL;
  if (!self->pool || gst_buffer_pool_acquire_buffer(self->pool, &batch, NULL) != GST_FLOW_OK) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("No batch buffer in %s memory", batch_memory_name(self)), (NULL));
    return NULL;
  }
  gst_buffer_resize(batch, 0, bytes); /* CUDA's are whole rows of its layout */
  GstCudaGrayBatchMeta *meta = gst_buffer_add_cuda_gray_batch_meta(batch, n_slots);
  std::vector<cudagray::BatchSlot> slots(n_slots);
  std::vector<std::unique_ptr<GstCudaGrayFrame>> frames;
  std::vector<GstBuffer *> taken;
  bool ok = true;
  for (guint i = 0; i < n_slots && i < pads.size() && ok; i++) {
    GstCudaGrayBatchPad *pad = pads[i];
    meta->slots[i].pad_index = pad_index(GST_PAD(pad));
    GstVideoInfo info;
    const GstCudaGrayFormat *in_format;
    GstBuffer *buffer = take_held(pad, &info, &in_format);
    if (!buffer) continue;
    taken.push_back(buffer);
    frames.push_back(std::make_unique<GstCudaGrayFrame>());
    ok = fill_slot(self, pad, buffer, &info, in_format, format, method, add_borders,
                   frames.back().get(), &slots[i], &meta->slots[i]);
  }
  std::string why;
  if (ok && !cudagray::valid_batch(format, slots.data(), (int)n_slots, &why)) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT, ("Cannot make the batch: %s", why.c_str()),
                      ("slot i is the i-th sink pad by number"));
    ok = false;
  }
  GstMapInfo map;
  if (ok && !(self->cuda_output ? gst_cuda_gray_batch_memory(batch, bytes, &map, &why)
                                : gst_buffer_map(batch, &map, GST_MAP_WRITE))) {
    GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("Cannot write into a new batch buffer"),
                      ("%s", why.c_str()));
    ok = false;
  }
  if (ok) {
    ok = self->maker->make(format, slots.data(), (int)n_slots, map.data, self->cuda_output, weights,
                           &why);
    if (self->cuda_output)
      gst_memory_unmap(map.memory, &map);
    else
      gst_buffer_unmap(batch, &map);
    if (ok)
      gst_cuda_gray_batch_add_tensor_meta(batch, format, (int)n_slots, tensor_id);
    else
      gst_cuda_gray_post_backend_error(GST_ELEMENT(self), self->maker->name(), "make a batch", why);
  }
  frames.clear(); /* unmaps the inputs before they go */
  for (GstBuffer *buffer : taken) gst_buffer_unref(buffer);
  if (!ok) gst_clear_buffer(&batch);
  return batch;
}

/* One tick: a buffer from each pad that has one before its end, converted
 * into one batch. The stream ends when every pad has ended. */
static GstFlowReturn gst_cuda_gray_batch_aggregate(GstAggregator *agg, gboolean timeout) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(agg);
  std::vector<GstCudaGrayBatchPad *> pads = sink_pads(self);
  bool all_ended = !pads.empty();
  for (GstCudaGrayBatchPad *pad : pads) {
    GST_OBJECT_LOCK(pad);
    const bool holds = pad->held != NULL;
    GST_OBJECT_UNLOCK(pad);
    all_ended = all_ended && !holds && gst_aggregator_pad_is_eos(GST_AGGREGATOR_PAD(pad)) &&
                !gst_aggregator_pad_has_buffer(GST_AGGREGATOR_PAD(pad));
  }
  if (all_ended) {
    unref_pads(pads);
    return GST_FLOW_EOS;
  }

  /* pads come and go, and the first one's rate may change: caps first */
  const guint n_slots = slot_count(self, pads.size());
  gint fps_n, fps_d;
  output_rate(pads, &fps_n, &fps_d);
  GstCaps *want = batch_caps(self, n_slots, fps_n, fps_d);
  GstCaps *current = gst_pad_get_current_caps(GST_AGGREGATOR_SRC_PAD(agg));
  const bool same = current && gst_caps_is_subset(current, want);
  gst_clear_caps(&current);
  gst_caps_unref(want);
  if (!same && !gst_aggregator_negotiate(agg)) {
    unref_pads(pads);
    return GST_FLOW_NOT_NEGOTIATED;
  }

  /* the output segment changes under the object lock (seeks) */
  GstSegment *segment = &GST_AGGREGATOR_PAD(GST_AGGREGATOR_SRC_PAD(agg))->segment;
  GST_OBJECT_LOCK(self);
  const GstSegment output_segment = *segment;
  GST_OBJECT_UNLOCK(self);
  if (!GST_CLOCK_TIME_IS_VALID(self->tick_base)) {
    self->tick_base = first_tick(pads, &output_segment);
    self->ticks = 0;
  }
  /* as videotestsrc stamps frame k: k frames, rounded down */
  const GstClockTime start =
      self->tick_base + gst_util_uint64_scale(self->ticks, GST_SECOND * self->fps_d, self->fps_n);
  const GstClockTime end =
      self->tick_base +
      gst_util_uint64_scale(self->ticks + 1, GST_SECOND * self->fps_d, self->fps_n);
  const GstClockTime end_running =
      gst_segment_to_running_time(&output_segment, GST_FORMAT_TIME, end);

  /* the tick waits for every pad to have passed its end, unless the
   * latency ran out (live) */
  bool settled = true;
  for (GstCudaGrayBatchPad *pad : pads) settled = gather(pad, end_running) && settled;
  if (!settled && !timeout) {
    unref_pads(pads);
    return GST_AGGREGATOR_FLOW_NEED_DATA;
  }

  gst_aggregator_selected_samples(agg, start, GST_CLOCK_TIME_NONE, end - start, NULL);
  GstBuffer *batch = make_batch(self, pads, n_slots);
  unref_pads(pads);
  if (!batch) return GST_FLOW_ERROR;
  GST_BUFFER_PTS(batch) = start;
  GST_BUFFER_DURATION(batch) = end - start;
  GST_OBJECT_LOCK(self);
  segment->position = end;
  GST_OBJECT_UNLOCK(self);
  self->ticks++;
  GST_LOG_OBJECT(self, "batch of %u slots at %" GST_TIME_FORMAT, n_slots, GST_TIME_ARGS(start));
  return gst_aggregator_finish_buffer(agg, batch);
}

static void gst_cuda_gray_batch_finalize(GObject *object) {
  GstCudaGrayBatch *self = GST_CUDA_GRAY_BATCH(object);
  gst_cuda_gray_context_free(self->context);
  gst_cuda_gray_properties_clear(&self->props);
  g_free(self->model_info);
  G_OBJECT_CLASS(parent_class)->finalize(object);
}

static void install_properties(GObjectClass *klass) {
  const GParamFlags ready =
      (GParamFlags)(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  gst_cuda_gray_properties_install(klass, GST_CUDA_GRAY_PROPERTIES_CONVERSION);
  g_object_class_install_property(
      klass, PROP_WIDTH,
      g_param_spec_int("width", "Width", "Width of every slot, in pixels", 1,
                       cudagray::kMaxDimension, DEFAULT_WIDTH, ready));
  g_object_class_install_property(
      klass, PROP_HEIGHT,
      g_param_spec_int("height", "Height", "Height of every slot, in pixels", 1,
                       cudagray::kMaxDimension, DEFAULT_HEIGHT, ready));
  g_object_class_install_property(
      klass, PROP_DTYPE,
      g_param_spec_enum("dtype", "Data type",
                        "What each element is: uint8 holds GRAY8 codes (mean 0 and std 1 only); "
                        "float16 and float32 the normalised GRAY16",
                        GST_TYPE_CUDA_GRAY_BATCH_DTYPE, DEFAULT_DTYPE, ready));
  g_object_class_install_property(
      klass, PROP_MEAN,
      g_param_spec_double("mean", "Mean",
                          "Subtracted from gray / full scale (taken as the nearest binary32); "
                          "finite",
                          -G_MAXDOUBLE, G_MAXDOUBLE, DEFAULT_MEAN, ready));
  g_object_class_install_property(
      klass, PROP_STD,
      g_param_spec_double("std", "Standard deviation",
                          "What gray / full scale - mean is divided by (taken as the nearest "
                          "binary32); finite and not 0",
                          -G_MAXDOUBLE, G_MAXDOUBLE, DEFAULT_STD, ready));
  g_object_class_install_property(
      klass, PROP_BATCH_SIZE,
      g_param_spec_uint("batch-size", "Batch size",
                        "Slots a batch has, slot i the i-th sink pad by number, those without a "
                        "pad absent (0: one a sink pad)",
                        0, cudagray::kMaxBatchSlots, DEFAULT_BATCH_SIZE, ready));
  g_object_class_install_property(
      klass, PROP_MODEL_INFO,
      g_param_spec_string(
          "model-info", "Model info file",
          "A GStreamer modelinfo file (key file) whose input tensor's ranges=min,max gives mean "
          "-min/(max-min) and std 1/(max-min), replacing the mean and std properties, and whose "
          "id names the GstTensorMeta's tensor (NULL: the mean and std properties)",
          DEFAULT_MODEL_INFO, ready));
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_GRAY_BATCH_DTYPE, (GstPluginAPIFlags)0);
  gst_type_mark_as_plugin_api(GST_TYPE_CUDA_GRAY_BATCH_PAD, (GstPluginAPIFlags)0);
}

static void gst_cuda_gray_batch_class_init(GstCudaGrayBatchClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstAggregatorClass *agg_class = GST_AGGREGATOR_CLASS(klass);

  gobject_class->set_property = gst_cuda_gray_batch_set_property;
  gobject_class->get_property = gst_cuda_gray_batch_get_property;
  gobject_class->finalize = gst_cuda_gray_batch_finalize;
  install_properties(gobject_class);

  std::string cuda_off;
  GstCaps *sink_caps = gst_cuda_gray_sink_template_caps(&cuda_off);
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new_with_gtype("sink_%u", GST_PAD_SINK, GST_PAD_REQUEST,
                                                     sink_caps, GST_TYPE_CUDA_GRAY_BATCH_PAD));
  gst_caps_unref(sink_caps);
  const std::string max = std::to_string(cudagray::kMaxDimension);
  GstCaps *src_caps = gst_caps_from_string(
      (BATCH_CAPS_NAME ", batch=(int)[1," + std::to_string(cudagray::kMaxBatchSlots) +
       "], channels=(int)1, width=(int)[1," + max + "], height=(int)[1," + max +
       "], dtype=(string){uint8,float16,float32}, framerate=(fraction)[0/1,2147483647/1]")
          .c_str());
  if (gst_cuda_gray_cuda_memory_usable(&cuda_off)) {
    GstCaps *cuda = gst_caps_copy(src_caps);
    gst_caps_set_features_simple(
        cuda, gst_caps_features_new(GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
    gst_caps_append(src_caps, cuda);
  }
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new_with_gtype("src", GST_PAD_SRC, GST_PAD_ALWAYS, src_caps,
                                                     GST_TYPE_AGGREGATOR_PAD));
  gst_caps_unref(src_caps);
  gst_element_class_set_metadata(
      element_class, "CUDA gray batcher", "Filter/Converter/Video",
      "Batches video from many sources into one normalised N x 1 x H x W gray tensor for a "
      "model, a slot a source, letterboxed as cudagray scales",
      PACKAGE_AUTHOR);

  element_class->set_context = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_set_context);
  agg_class->start = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_start);
  agg_class->stop = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_stop);
  agg_class->sink_query = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_sink_query);
  agg_class->src_query = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_src_query);
  agg_class->flush = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_flush);
  agg_class->create_new_pad = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_create_new_pad);
  agg_class->sink_event = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_sink_event);
  agg_class->update_src_caps = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_update_src_caps);
  agg_class->negotiated_src_caps = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_negotiated_src_caps);
  agg_class->decide_allocation = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_decide_allocation);
  agg_class->aggregate = GST_DEBUG_FUNCPTR(gst_cuda_gray_batch_aggregate);
  /* live: ticks by the clock, from the output's position */
  agg_class->get_next_time = gst_aggregator_simple_get_next_time;

  GST_DEBUG_CATEGORY_INIT(gst_cuda_gray_batch_debug, "cudagraybatch", 0, "CUDA gray batcher");
}

static void gst_cuda_gray_batch_init(GstCudaGrayBatch *self) {
  gst_cuda_gray_properties_init(&self->props);
  self->context = gst_cuda_gray_context_new(GST_ELEMENT(self));
  self->width = DEFAULT_WIDTH;
  self->height = DEFAULT_HEIGHT;
  self->dtype = DEFAULT_DTYPE;
  self->mean = DEFAULT_MEAN;
  self->std = DEFAULT_STD;
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->model_info = g_strdup(DEFAULT_MODEL_INFO);
  self->tensor_id = g_quark_from_static_string(GST_CUDA_GRAY_BATCH_TENSOR_ID);
  self->tick_base = GST_CLOCK_TIME_NONE;
  self->fps_d = 1;
}
