// SPDX-License-Identifier: LGPL-2.1-or-later
/* cudagray: RGB-family, YUV, Bayer and gray video to GRAY8 or GRAY16 on an
 * NVIDIA GPU (or the CPU).
 *
 * The element: start/stop, set_caps, and a frame's way through.
 * The streaming thread maps each input and output buffer (gstcudagrayframe.cpp),
 * starts its conversion (Backend::submit) and queues it in the output queue
 * (gstcudagrayoutputqueue.cpp), which owns it from then on and makes upstream
 * wait while max-inflight frames are held; serialized events join the same
 * queue behind the frames before them and return at once. The output task
 * on the source pad (gstcudagrayoutput.cpp), the one thread that pushes there,
 * takes the items in order: a frame once its conversion is done
 * (Backend::finish_oldest), a passthrough buffer or an event as it is. New
 * caps take effect at a frame boundary (set_caps lets the queue empty
 * first); flushes and stop drop what is queued. Gray input of the output's
 * format passes through untouched. Formats: gstcudagrayformats.cpp;
 * properties: gstcudagrayproperties.cpp; caps: gstcudagraycaps.cpp; the CUDA
 * context: gstcudagraycontext.cpp; pinned pools: gstcudagrayallocation.cpp.
 *
 * Example:
 *   gst-launch-1.0 videotestsrc ! cudagray matrix=bt709 ! videoconvert ! autovideosink
 */
#include "gstcudagray.h"

#include <memory>
#include <string>

#include "cudagray/device.h"
#include "gstcudagrayallocation.h"
#include "gstcudagraycaps.h"
#include "gstcudagrayframe.h"
#include "gstcudagrayoutput.h"
#include "gstcudagraypools.h"

GST_DEBUG_CATEGORY(gst_cuda_gray_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_debug

#define gst_cuda_gray_parent_class parent_class
G_DEFINE_TYPE(GstCudaGray, gst_cuda_gray, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(cudagray, "cudagray", GST_RANK_NONE, GST_TYPE_CUDA_GRAY);

static void gst_cuda_gray_set_property(GObject *object, guint prop_id, const GValue *value,
                                       GParamSpec *pspec) {
  GstCudaGray *self = GST_CUDA_GRAY(object);
  gst_cuda_gray_properties_set(GST_ELEMENT(self), &self->props, prop_id, value, pspec);
}

static void gst_cuda_gray_get_property(GObject *object, guint prop_id, GValue *value,
                                       GParamSpec *pspec) {
  GstCudaGray *self = GST_CUDA_GRAY(object);
  gst_cuda_gray_properties_get(GST_ELEMENT(self), &self->props, prop_id, value, pspec);
}

/* The output starts afresh (at init, at start and after a flush): nothing
 * queued, no position, QoS as GstBaseTransform's starts; the first frame
 * out is flagged DISCONT when discont. */
static void restart_output(GstCudaGray *self, bool discont) {
  GstCudaGrayStreaming &s = *self->streaming;
  s.output.reset();
  s.discont_pending = discont;
  s.processed = s.dropped = 0;
  GST_OBJECT_LOCK(self);
  gst_segment_init(&self->out_segment, GST_FORMAT_UNDEFINED);
  self->position_out = GST_CLOCK_TIME_NONE;
  self->qos_proportion = 1.0;
  self->qos_earliest = GST_CLOCK_TIME_NONE;
  GST_OBJECT_UNLOCK(self);
}

/* A warning whose text says all there is to do: GST_ELEMENT_WARNING would add
 * a debug text naming the source line it was posted from, which gst-launch
 * prints and a user can do nothing with. */
static void post_warning_for_users(GstCudaGray *self, const std::string &text) {
  GST_WARNING_OBJECT(self, "%s", text.c_str());
  GError *error =
      g_error_new_literal(GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, text.c_str());
  gst_element_post_message(GST_ELEMENT(self),
                           gst_message_new_warning(GST_OBJECT(self), error, NULL));
  g_error_free(error);
}

/* Makes the backend named by the properties. backend=auto falls back to the
 * CPU with a warning when no GPU can be used; everything else that fails is
 * an error. A CUDA backend is made inside the element's CUDA context. */
static gboolean gst_cuda_gray_start(GstBaseTransform *trans) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;

  GST_OBJECT_LOCK(self);
  const GstCudaGrayBackend choice = self->props.backend;
  const gint device_id = self->props.cuda_device_id;
  self->props.stats = cudagray::TimingStats();
  self->props.stats_in_flight = 0;
  GST_OBJECT_UNLOCK(self);
  if (!gst_cuda_gray_properties_check_weights(GST_ELEMENT(self), &self->props)) return FALSE;

  std::unique_ptr<cudagray::Backend> backend;
  if (choice != GST_CUDA_GRAY_BACKEND_CPU) {
    std::string reason;
    if (gst_cuda_gray_context_open(self->context, device_id, &reason))
      backend = cudagray::make_cuda_backend(&reason, gst_cuda_gray_context_switch(self->context));
    if (!backend) gst_cuda_gray_context_close(self->context);
    std::string ignored;
    const bool some_gpu = cudagray::cuda_device_count(&ignored) > 0;
    if (!backend && (choice == GST_CUDA_GRAY_BACKEND_CUDA || (device_id >= 0 && some_gpu))) {
      GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No usable CUDA device: %s", reason.c_str()),
                        ("backend=%s cuda-device-id=%d; pick an existing device, or set "
                         "backend=cpu to run without a GPU",
                         choice == GST_CUDA_GRAY_BACKEND_CUDA ? "cuda" : "auto", device_id));
      return FALSE;
    }
    if (!backend)
      post_warning_for_users(self, "No usable CUDA device: " + reason +
                                       ". Converting on the CPU instead; backend=cpu chooses "
                                       "the CPU without this warning.");
  }
  if (!backend) backend = cudagray::make_cpu_backend();
  s.needs = backend->needs();
  s.backend = std::move(backend);
  if (s.needs.pinned_host_memory)
    s.pinned = gst_cuda_gray_pinned_allocator_new(gst_cuda_gray_context_switch(self->context));
  restart_output(self, false);
  GST_INFO_OBJECT(self, "using the %s backend (CUDA device %d)", s.backend->name(),
                  s.backend->device_id());
  GST_OBJECT_LOCK(self);
  self->props.stats_device_id = s.backend->device_id();
  self->reads_device_memory = s.needs.reads_device_memory;
  self->writes_device_memory = s.needs.writes_device_memory;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static gboolean gst_cuda_gray_stop(GstBaseTransform *trans) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;
  gst_cuda_gray_discard_in_flight(self);
  s.backend.reset();
  gst_clear_object(&s.pinned);
  gst_cuda_gray_context_close(self->context);
  s.cuda_input = s.cuda_output = false;
  s.configure_error.clear();
  s.warned_weights_unused = false;
  gst_video_info_init(&s.in_info);
  s.format = NULL;
  GST_OBJECT_LOCK(self);
  self->reads_device_memory = self->writes_device_memory = -1;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static GstCaps *gst_cuda_gray_transform_caps(GstBaseTransform *trans, GstPadDirection direction,
                                             GstCaps *caps, GstCaps *filter) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GST_OBJECT_LOCK(self);
  /* before start, whether the backend chosen may be one that reads or
   * writes it */
  const gboolean may_be_cuda = self->props.backend != GST_CUDA_GRAY_BACKEND_CPU;
  const gboolean cuda_input =
      self->reads_device_memory >= 0 ? self->reads_device_memory : may_be_cuda;
  const gboolean cuda_output =
      self->writes_device_memory >= 0 ? self->writes_device_memory : may_be_cuda;
  GST_OBJECT_UNLOCK(self);
  GstCaps *result = gst_cuda_gray_caps_transform(direction, caps, filter, cuda_input, cuda_output);
  GST_DEBUG_OBJECT(trans, "%s caps %" GST_PTR_FORMAT " → %" GST_PTR_FORMAT,
                   direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
}

/* The position of the last buffer the output task pushed, in stream time,
 * as GstBaseTransform answers for the buffers it pushes itself; FALSE before
 * the first one. */
static gboolean answer_position(GstCudaGray *self, GstQuery *query) {
  GstFormat format;
  gst_query_parse_position(query, &format, NULL);
  if (format != GST_FORMAT_TIME) return FALSE;
  GST_OBJECT_LOCK(self);
  const gboolean known =
      self->out_segment.format == GST_FORMAT_TIME && GST_CLOCK_TIME_IS_VALID(self->position_out);
  const guint64 position =
      known ? gst_segment_to_stream_time(&self->out_segment, GST_FORMAT_TIME, self->position_out)
            : 0;
  GST_OBJECT_UNLOCK(self);
  if (known) gst_query_set_position(query, format, position);
  return known;
}

/* Serialized queries from upstream (ALLOCATION, DRAIN, ...) come after the
 * frames before them have left, as they would through any element. POSITION
 * says where the output is. Adds the frames we may hold back to the latency
 * upstream reports: a frame can wait behind max-inflight - 1 others when the
 * GPU falls behind. */
static gboolean gst_cuda_gray_query(GstBaseTransform *trans, GstPadDirection direction,
                                    GstQuery *query) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  /* neighbours asking for a CUDA context get ours, so that one is shared */
  if (gst_cuda_gray_context_query(self->context, query)) return TRUE;
  if (direction == GST_PAD_SINK && GST_QUERY_IS_SERIALIZED(query) &&
      self->streaming->output.drain() == GST_FLOW_FLUSHING)
    return FALSE;
  if (direction == GST_PAD_SRC && GST_QUERY_TYPE(query) == GST_QUERY_POSITION &&
      answer_position(self, query))
    return TRUE;
  if (!GST_BASE_TRANSFORM_CLASS(parent_class)->query(trans, direction, query)) return FALSE;
  if (direction == GST_PAD_SRC && GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency(query, &live, &min, &max);
    GST_OBJECT_LOCK(self);
    const GstClockTime added = self->added_latency;
    GST_OBJECT_UNLOCK(self);
    min += added;
    if (GST_CLOCK_TIME_IS_VALID(max)) max += added;
    gst_query_set_latency(query, live, min, max);
    GST_DEBUG_OBJECT(self, "latency: added %" GST_TIME_FORMAT, GST_TIME_ARGS(added));
  }
  return TRUE;
}

static gboolean upstream_is_live(GstBaseTransform *trans) {
  GstQuery *query = gst_query_new_latency();
  gboolean live = FALSE;
  if (gst_pad_peer_query(GST_BASE_TRANSFORM_SINK_PAD(trans), query))
    gst_query_parse_latency(query, &live, NULL, NULL);
  gst_query_unref(query);
  return live;
}

/* Sizes the backend, allocating every buffer of its own, for the frames
 * that set_caps described in s; posts an error (once for the same cause)
 * when it cannot. Nothing may be queued. */
static gboolean configure_backend(GstCudaGray *self) {
  GstCudaGrayStreaming &s = *self->streaming;
  std::string error;
  if (!s.backend->configure(s.format->layout, s.in_info.width, s.in_info.height, s.out_depth,
                            s.max_in_flight, s.cuda_input, s.cuda_output, &error)) {
    if (error != s.configure_error)
      GST_ELEMENT_ERROR(
          self, RESOURCE, NO_SPACE_LEFT,
          ("Could not prepare the %s backend for %dx%d %s frames: %s", s.backend->name(),
           s.in_info.width, s.in_info.height, s.format->name, error.c_str()),
          ("free GPU memory, use smaller frames, or set backend=cpu"));
    s.configure_error = error;
    return FALSE;
  }
  s.configure_error.clear();
  return TRUE;
}

/* Sizes the backend for the new caps. New input caps, and new output caps
 * that downstream asked for (a RECONFIGURE: GStreamer calls this before it
 * sends the CAPS event and the ALLOCATION query), take effect at a frame
 * boundary: everything queued leaves first, as it was negotiated, and the
 * backend then frees nothing a frame still holds. */
static gboolean gst_cuda_gray_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;
  GstVideoInfo in_info, out_info;
  const GstCudaGrayFormat *format;

  const GstFlowReturn drained = s.output.drain();
  if (drained == GST_FLOW_FLUSHING) return FALSE;
  if (drained != GST_FLOW_OK) /* the output stopped: what it held goes */
    gst_cuda_gray_stop_output(self, drained);

  if (!gst_cuda_gray_input_from_caps(incaps, &in_info, &format) ||
      !gst_video_info_from_caps(&out_info, outcaps)) {
    GST_ERROR_OBJECT(self, "invalid caps %" GST_PTR_FORMAT " to %" GST_PTR_FORMAT, incaps, outcaps);
    return FALSE;
  }
  s.in_info = in_info;
  s.format = format;
  s.out_depth = GST_VIDEO_INFO_FORMAT(&out_info) == GST_VIDEO_FORMAT_GRAY16_LE ? 16 : 8;
  s.limited_range = format->kind == GST_CUDA_GRAY_KIND_CONVERTED &&
                    cudagray::layout_info(format->layout).family == cudagray::LayoutFamily::Luma &&
                    in_info.colorimetry.range != GST_VIDEO_COLOR_RANGE_0_255;

  const gboolean passthrough = format->format == GST_VIDEO_INFO_FORMAT(&out_info);
  gst_base_transform_set_passthrough(trans, passthrough);
  GST_OBJECT_LOCK(self);
  const guint requested = self->props.max_inflight;
  GST_OBJECT_UNLOCK(self);
  if (passthrough) {
    s.max_in_flight = 1;
  } else {
    const int automatic = upstream_is_live(trans) ? 1 : s.needs.auto_in_flight;
    s.max_in_flight = MIN(requested > 0 ? (int)requested : automatic, s.needs.max_in_flight);
  }
  GST_OBJECT_LOCK(self);
  self->added_latency =
      in_info.fps_n > 0
          ? gst_util_uint64_scale((s.max_in_flight - 1) * GST_SECOND, in_info.fps_d, in_info.fps_n)
          : 0;
  GST_OBJECT_UNLOCK(self);

  s.cuda_output = gst_cuda_gray_caps_in_cuda_memory(outcaps);
  if (passthrough && s.cuda_output) {
    GST_ERROR_OBJECT(self, "%s passes through in system memory only", format->name);
    return FALSE;
  }
  if (passthrough) {
    GST_INFO_OBJECT(self, "%s input: passthrough", format->name);
    return TRUE;
  }
  s.cuda_input = gst_cuda_gray_caps_in_cuda_memory(incaps);
  if (s.cuda_input && !s.needs.reads_device_memory) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("CUDA memory input needs the CUDA backend"),
                      ("backend=cpu cannot read memory:CUDAMemory; add cudadownload before "
                       "cudagray, or set backend=auto or cuda"));
    return FALSE;
  }
  if (s.cuda_output && !s.needs.writes_device_memory) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("CUDA memory output needs the CUDA backend"),
                      ("backend=cpu cannot write memory:CUDAMemory; add cudaupload after "
                       "cudagray, or set backend=auto or cuda"));
    return FALSE;
  }

  if (!configure_backend(self)) return FALSE;
  GST_INFO_OBJECT(self,
                  "converting %dx%d %s (%s) to %s (%s) on the %s "
                  "backend, up to %d frames in flight",
                  in_info.width, in_info.height, format->name,
                  s.cuda_input ? "CUDA memory" : "system memory", GST_VIDEO_INFO_NAME(&out_info),
                  s.cuda_output ? "CUDA memory" : "system memory", s.backend->name(),
                  s.max_in_flight);
  return TRUE;
}

static gboolean gst_cuda_gray_transform_size(GstBaseTransform *trans, GstPadDirection direction,
                                             GstCaps *caps, gsize size, GstCaps *othercaps,
                                             gsize *othersize) {
  GstVideoInfo info;
  if (!gst_video_info_from_caps(&info, othercaps)) return FALSE;
  *othersize = GST_VIDEO_INFO_SIZE(&info);
  return TRUE;
}

/* Upstream may write straight into pinned memory (system memory) or into
 * CUDA memory carrying our stream, and may pad its rows. */
static gboolean gst_cuda_gray_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query,
                                                 GstQuery *query) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;
  if (gst_base_transform_is_passthrough(trans)) /* downstream answers */
    return GST_BASE_TRANSFORM_CLASS(parent_class)->propose_allocation(trans, decide_query, query);
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
  if (gst_query_get_n_allocation_pools(query) > 0) return TRUE;
  GstCaps *caps;
  gst_query_parse_allocation(query, &caps, NULL);
  if (caps && gst_cuda_gray_caps_in_cuda_memory(caps))
    gst_cuda_gray_offer_input_pool(self->context, query, caps, s.max_in_flight + 1);
  else if (s.pinned)
    gst_cuda_gray_add_pinned_pool(query, s.pinned, s.max_in_flight + 1);
  return TRUE;
}

/* Output buffers in system memory come from downstream's pool when it has
 * one, else from our pinned pool, so that the download lands in them
 * directly. In CUDA memory from downstream's CUDA pool of our context, else
 * from ours: the kernel writes into them. */
static gboolean gst_cuda_gray_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;
  std::string why;
  if (s.cuda_output &&
      !gst_cuda_gray_decide_output_pool(self->context, query, s.max_in_flight + 1, &why)) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("Could not set up gray output in CUDA memory: %s", why.c_str()),
                      ("free GPU memory, or ask for gray video/x-raw in system "
                       "memory after cudagray"));
    return FALSE;
  }
  if (!s.cuda_output && s.pinned && gst_query_get_n_allocation_pools(query) == 0)
    gst_cuda_gray_add_pinned_pool(query, s.pinned, s.max_in_flight + 1);
  return GST_BASE_TRANSFORM_CLASS(parent_class)->decide_allocation(trans, query);
}

/* The error for an input buffer that does not hold its frame. */
static GstFlowReturn refuse_input(GstCudaGray *self, const std::string &why) {
  const GstVideoInfo *info = &self->streaming->in_info;
  GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                    ("Input buffer does not hold a %dx%d %s frame: %s", info->width, info->height,
                     self->streaming->format->name, why.c_str()),
                    ("upstream sent a buffer that does not match the caps it negotiated"));
  return GST_FLOW_ERROR;
}

/* Luma's gray is the luma itself: weights chosen away from the default
 * would silently change nothing, so say so, once per run. */
static void warn_if_weights_unused(GstCudaGray *self, const cudagray::Weights &weights) {
  GstCudaGrayStreaming &s = *self->streaming;
  const cudagray::Weights standard = cudagray::standard_weights(cudagray::Matrix::BT601);
  if (cudagray::layout_info(s.format->layout).family != cudagray::LayoutFamily::Luma ||
      s.warned_weights_unused ||
      (weights.r == standard.r && weights.g == standard.g && weights.b == standard.b))
    return;
  s.warned_weights_unused = true;
  GST_ELEMENT_WARNING(
      self, LIBRARY, SETTINGS,
      ("matrix and weights do not apply to %s input: its gray is the luma, %s", s.format->name,
       s.limited_range ? "expanded from limited range" : "taken as it is"),
      ("to apply them, convert to RGB before cudagray: "
       "videoconvert ! video/x-raw,format=RGBx ! cudagray"));
}

/* Starts converting inbuf into outbuf; the output queue holds both, mapped,
 * until the output task pushes the result. Called by generate_output; being
 * the transform vfunc also tells GstBaseTransform that output buffers are
 * separate ones, from the pool decided with downstream. */
static GstFlowReturn gst_cuda_gray_transform(GstBaseTransform *trans, GstBuffer *inbuf,
                                             GstBuffer *outbuf) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;
  std::string error;
  if (s.discont_pending) { /* outbuf is ours alone, from the pool */
    GST_BUFFER_FLAG_SET(outbuf, GST_BUFFER_FLAG_DISCONT);
    s.discont_pending = false;
  }
  auto frame = std::make_unique<GstCudaGrayFrame>();
  switch (frame->map(self->context, inbuf, &s.in_info, s.format->layout, outbuf, s.out_depth,
                     s.cuda_output, &error)) {
    case GST_CUDA_GRAY_MAP_OK: break;
    case GST_CUDA_GRAY_MAP_OTHER_DEVICE:
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", error.c_str()),
                        ("unset cuda-device-id, or put upstream's CUDA elements on the same "
                         "device"));
      return GST_FLOW_ERROR;
    case GST_CUDA_GRAY_MAP_BAD_INPUT: return refuse_input(self, error);
    case GST_CUDA_GRAY_MAP_BAD_OUTPUT:
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Could not map the output buffer for writing"),
                        ("%s", error.c_str()));
      return GST_FLOW_ERROR;
  }
  cudagray::InputFrame &in = frame->input();
  in.limited_range = s.limited_range;
  in.sample_bits = s.format->sample_bits;
  if (s.cuda_input && !in.on_device) {
    /* CUDA memory of another context: the backend was sized for frames on
     * the GPU; from now on it uploads host mappings, with buffers of its own */
    GST_INFO_OBJECT(self, "CUDA memory input of another CUDA context: reading host mappings");
    const GstFlowReturn drained = s.output.drain();
    if (drained != GST_FLOW_OK) return drained;
    s.cuda_input = false;
    if (!configure_backend(self)) return GST_FLOW_ERROR;
  }

  GST_OBJECT_LOCK(self);
  const cudagray::Weights weights = gst_cuda_gray_properties_weights(&self->props);
  GST_OBJECT_UNLOCK(self);
  warn_if_weights_unused(self, weights);
  if (!s.backend->submit(in, frame->output(), weights, &error)) {
    gst_cuda_gray_post_backend_error(self, "start converting a frame", error);
    gst_cuda_gray_stop_output(self, GST_FLOW_ERROR);
    return GST_FLOW_ERROR;
  }
  s.output.push(GstCudaGrayOutputItem(std::move(frame)));
  s.processed++;
  return GST_FLOW_OK;
}

/* Gray passed through that the output queue holds before upstream waits.
 * It holds nothing of the backend's and leaves as soon as the output task
 * gets to it; with room for one, the streaming thread waited for the task
 * at every buffer (50 us a buffer on a 2-core machine, 2 us with 16). */
#define PASSTHROUGH_ROOM 16

/* Called by GstBaseTransform for each input buffer: waits while max-inflight
 * frames are out (PASSTHROUGH_ROOM buffers passed through), then starts converting it, or queues it
 * as it is when gray of the output format passes through. Nothing is handed back here: the output
 * task pushes it. */
static GstFlowReturn gst_cuda_gray_generate_output(GstBaseTransform *trans, GstBuffer **outbuf) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;
  *outbuf = NULL;
  GstBuffer *inbuf = trans->queued_buf;
  if (!inbuf) return GST_FLOW_OK;
  trans->queued_buf = NULL;
  const gboolean passthrough = gst_base_transform_is_passthrough(trans);
  std::string error;
  /* gray leaves untouched, but only if it holds the frame */
  if (passthrough && !gst_cuda_gray_frame_check(inbuf, &s.in_info, s.format->layout, &error)) {
    gst_buffer_unref(inbuf);
    return refuse_input(self, error);
  }
  GstFlowReturn ret = s.output.wait_for_room(passthrough ? PASSTHROUGH_ROOM : s.max_in_flight);
  if (ret == GST_FLOW_OK && passthrough) {
    if (s.discont_pending) {
      inbuf = gst_buffer_make_writable(inbuf);
      GST_BUFFER_FLAG_SET(inbuf, GST_BUFFER_FLAG_DISCONT);
      s.discont_pending = false;
    }
    s.output.push(GstCudaGrayOutputItem::ready(inbuf));
    s.processed++;
    return GST_FLOW_OK;
  }
  if (ret == GST_FLOW_OK) {
    GstBuffer *out = NULL;
    ret = GST_BASE_TRANSFORM_CLASS(parent_class)->prepare_output_buffer(trans, inbuf, &out);
    if (ret == GST_FLOW_OK)
      ret = gst_cuda_gray_transform(trans, inbuf, out);
    else if (ret != GST_FLOW_FLUSHING)
      GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                        ("Could not get an output buffer: %s", gst_flow_get_name(ret)),
                        ("the buffer pool could not allocate; free host memory"));
    gst_clear_buffer(&out);
  }
  gst_buffer_unref(inbuf);
  return ret;
}

/* QoS is cudagray's own, with GstBaseTransform's rule (a frame due at or
 * before the last QoS event's timestamp + jitter is not converted) and its
 * message, whose processed count GstBaseTransform could not keep: it counts
 * the frames it pushes itself, and the output task pushes cudagray's. The QoS
 * event goes upstream as it would through GstBaseTransform. */
static gboolean gst_cuda_gray_src_event(GstBaseTransform *trans, GstEvent *event) {
  if (GST_EVENT_TYPE(event) != GST_EVENT_QOS)
    return GST_BASE_TRANSFORM_CLASS(parent_class)->src_event(trans, event);
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  gdouble proportion;
  GstClockTimeDiff diff;
  GstClockTime timestamp;
  gst_event_parse_qos(event, NULL, &proportion, &diff, &timestamp);
  if (GST_CLOCK_TIME_IS_VALID(timestamp)) {
    GST_OBJECT_LOCK(self);
    self->qos_proportion = proportion;
    self->qos_earliest = timestamp + diff;
    GST_OBJECT_UNLOCK(self);
  }
  return gst_pad_push_event(GST_BASE_TRANSFORM_SINK_PAD(trans), event);
}

/* Whether input is late at the sink (and so dropped, with a QoS message). */
static gboolean drop_late(GstCudaGray *self, GstBuffer *input) {
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  if (!gst_base_transform_is_qos_enabled(trans) || trans->segment.format != GST_FORMAT_TIME)
    return FALSE;
  const GstClockTime pts = GST_BUFFER_PTS(input);
  const GstClockTime running_time =
      gst_segment_to_running_time(&trans->segment, GST_FORMAT_TIME, pts);
  GST_OBJECT_LOCK(self);
  const GstClockTime earliest = self->qos_earliest;
  const gdouble proportion = self->qos_proportion;
  GST_OBJECT_UNLOCK(self);
  if (!GST_CLOCK_TIME_IS_VALID(running_time) || !GST_CLOCK_TIME_IS_VALID(earliest) ||
      running_time > earliest)
    return FALSE;
  GstCudaGrayStreaming &s = *self->streaming;
  s.dropped++;
  GST_DEBUG_OBJECT(self,
                   "frame due at %" GST_TIME_FORMAT " is late (earliest %" GST_TIME_FORMAT
                   "): not converted",
                   GST_TIME_ARGS(running_time), GST_TIME_ARGS(earliest));
  GstMessage *qos =
      gst_message_new_qos(GST_OBJECT(self), FALSE, running_time,
                          gst_segment_to_stream_time(&trans->segment, GST_FORMAT_TIME, pts), pts,
                          GST_BUFFER_DURATION(input));
  gst_message_set_qos_values(qos, GST_CLOCK_DIFF(running_time, earliest), proportion, 1000000);
  gst_message_set_qos_stats(qos, GST_FORMAT_BUFFERS, s.processed, s.dropped);
  gst_element_post_message(GST_ELEMENT(self), qos);
  return TRUE;
}

/* A frame late at the sink is dropped before anything is done with it; the
 * next frame that leaves is flagged DISCONT. */
static GstFlowReturn gst_cuda_gray_submit_input_buffer(GstBaseTransform *trans, gboolean is_discont,
                                                       GstBuffer *input) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  if (drop_late(self, input)) {
    gst_buffer_unref(input);
    self->streaming->discont_pending = true;
    return GST_BASE_TRANSFORM_FLOW_DROPPED;
  }
  return GST_BASE_TRANSFORM_CLASS(parent_class)->submit_input_buffer(trans, is_discont, input);
}

/* Serialized events join the output queue behind the frames before them and
 * return at once; the output task pushes them. CAPS is GstBaseTransform's
 * (set_caps lets the frames before it leave first); a SEGMENT is also kept
 * for QoS, as GstBaseTransform keeps it. A flush drops what is queued. An
 * EOS that finds the output stopped posts the flow error that upstream never
 * got from a push (it reports the ones it got itself). */
static gboolean gst_cuda_gray_sink_event(GstBaseTransform *trans, GstEvent *event) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayStreaming &s = *self->streaming;

  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START:
      s.output.set_flushing(TRUE); /* wakes both threads */
      break;
    case GST_EVENT_FLUSH_STOP: {
      gst_cuda_gray_stop_output(self, GST_FLOW_FLUSHING);
      restart_output(self, true);
      const gboolean ret = GST_BASE_TRANSFORM_CLASS(parent_class)->sink_event(trans, event);
      gst_cuda_gray_start_output(self);
      return ret;
    }
    case GST_EVENT_CAPS: break;
    default: {
      if (!GST_EVENT_IS_SERIALIZED(event)) break;
      const GstEventType type = GST_EVENT_TYPE(event);
      if (type == GST_EVENT_SEGMENT) {
        gst_event_copy_segment(event, &trans->segment);
        trans->have_segment = TRUE;
      }
      if (type == GST_EVENT_GAP) s.discont_pending = true;
      const GstFlowReturn stopped = s.output.push(GstCudaGrayOutputItem::serialized(event));
      if (stopped == GST_FLOW_OK) return TRUE;
      GST_DEBUG_OBJECT(self, "%s dropped: the output stopped (%s)", gst_event_type_get_name(type),
                       gst_flow_get_name(stopped));
      GstFlowReturn unreported;
      if (type == GST_EVENT_EOS && s.output.take_unreported_failure(&unreported))
        GST_ELEMENT_FLOW_ERROR(self, unreported);
      return stopped != GST_FLOW_FLUSHING;
    }
  }
  return GST_BASE_TRANSFORM_CLASS(parent_class)->sink_event(trans, event);
}

/* The output task runs from READY to PAUSED until PAUSED to READY. */
static GstStateChangeReturn gst_cuda_gray_change_state(GstElement *element,
                                                       GstStateChange transition) {
  GstCudaGray *self = GST_CUDA_GRAY(element);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    self->streaming->output.set_flushing(TRUE);
    gst_pad_stop_task(GST_BASE_TRANSFORM_SRC_PAD(self));
  }
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret != GST_STATE_CHANGE_FAILURE &&
      !gst_cuda_gray_start_output(self))
    return GST_STATE_CHANGE_FAILURE;
  return ret;
}

/* The output has the input's size and orientation, so metas that describe
 * only geometry (crop, regions of interest) or time (untagged: timecode,
 * reference timestamps) stay true and are copied; any other tag, such as
 * colorspace (the video meta of the input's pixel format) or memory, is
 * about what changed, and the meta is dropped. */
static gboolean gst_cuda_gray_transform_meta(GstBaseTransform *trans, GstBuffer *outbuf,
                                             GstMeta *meta, GstBuffer *inbuf) {
  static const gchar *const geometry_tags[] = {GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_SIZE_STR,
                                               GST_META_TAG_VIDEO_ORIENTATION_STR, NULL};
  const gchar *const *tags = gst_meta_api_type_get_tags(meta->info->api);
  for (const gchar *const *tag = tags; tag && *tag; tag++)
    if (!g_strv_contains(geometry_tags, *tag)) return FALSE;
  return TRUE;
}

/* A CUDA context handed down by the application or a neighbour. */
static void gst_cuda_gray_set_context(GstElement *element, GstContext *context) {
  GstCudaGray *self = GST_CUDA_GRAY(element);
  GST_OBJECT_LOCK(self);
  const gint device_id = self->props.cuda_device_id;
  GST_OBJECT_UNLOCK(self);
  gst_cuda_gray_context_set(self->context, context, device_id);
  GST_ELEMENT_CLASS(parent_class)->set_context(element, context);
}

static void gst_cuda_gray_finalize(GObject *object) {
  GstCudaGray *self = GST_CUDA_GRAY(object);
  delete self->streaming;
  gst_cuda_gray_properties_clear(&self->props);
  gst_cuda_gray_context_free(self->context);
  G_OBJECT_CLASS(parent_class)->finalize(object);
}

static void gst_cuda_gray_class_init(GstCudaGrayClass *klass) {
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS(klass);

  gobject_class->set_property = gst_cuda_gray_set_property;
  gobject_class->get_property = gst_cuda_gray_get_property;
  gobject_class->finalize = gst_cuda_gray_finalize;

  gst_cuda_gray_properties_install(gobject_class);

  std::string cuda_off;
  GstCaps *sink_caps = gst_cuda_gray_sink_template_caps(&cuda_off);
  std::string description =
      "Converts RGB-family and Bayer video to GRAY8 or GRAY16 on an NVIDIA GPU, or on the "
      "CPU; YUV video gives its luma";
  if (!cuda_off.empty()) description += "; CUDA memory input and output are off: " + cuda_off;
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sink_caps));
  gst_caps_unref(sink_caps);
  GstCaps *src_caps = gst_cuda_gray_src_template_caps();
  gst_element_class_add_pad_template(
      element_class, gst_pad_template_new("src", GST_PAD_SRC, GST_PAD_ALWAYS, src_caps));
  gst_caps_unref(src_caps);
  gst_element_class_set_metadata(element_class, "CUDA grayscale converter",
                                 "Filter/Converter/Video/Colorspace/Hardware", description.c_str(),
                                 PACKAGE_AUTHOR);

  element_class->change_state = GST_DEBUG_FUNCPTR(gst_cuda_gray_change_state);
  element_class->set_context = GST_DEBUG_FUNCPTR(gst_cuda_gray_set_context);
  trans_class->start = GST_DEBUG_FUNCPTR(gst_cuda_gray_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_cuda_gray_stop);
  trans_class->transform_caps = GST_DEBUG_FUNCPTR(gst_cuda_gray_transform_caps);
  trans_class->query = GST_DEBUG_FUNCPTR(gst_cuda_gray_query);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_cuda_gray_set_caps);
  trans_class->transform_size = GST_DEBUG_FUNCPTR(gst_cuda_gray_transform_size);
  trans_class->propose_allocation = GST_DEBUG_FUNCPTR(gst_cuda_gray_propose_allocation);
  trans_class->decide_allocation = GST_DEBUG_FUNCPTR(gst_cuda_gray_decide_allocation);
  /* generate_output starts a frame (transform); the output task hands it on */
  trans_class->transform = GST_DEBUG_FUNCPTR(gst_cuda_gray_transform);
  trans_class->generate_output = GST_DEBUG_FUNCPTR(gst_cuda_gray_generate_output);
  trans_class->submit_input_buffer = GST_DEBUG_FUNCPTR(gst_cuda_gray_submit_input_buffer);
  trans_class->src_event = GST_DEBUG_FUNCPTR(gst_cuda_gray_src_event);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_cuda_gray_sink_event);
  trans_class->transform_meta = GST_DEBUG_FUNCPTR(gst_cuda_gray_transform_meta);

  GST_DEBUG_CATEGORY_INIT(gst_cuda_gray_debug, "cudagray", 0, "CUDA grayscale converter");
}

static void gst_cuda_gray_init(GstCudaGray *self) {
  gst_cuda_gray_properties_init(&self->props);
  self->reads_device_memory = self->writes_device_memory = -1;
  self->streaming = new GstCudaGrayStreaming();
  restart_output(self, false);
  self->context = gst_cuda_gray_context_new(GST_ELEMENT(self));
  gst_video_info_init(&self->streaming->in_info);
  /* transform_caps lists converted formats first: keep that order */
  gst_base_transform_set_prefer_passthrough(GST_BASE_TRANSFORM(self), FALSE);
  /* like videoconvert: frames already late at the sink are not converted */
  gst_base_transform_set_qos_enabled(GST_BASE_TRANSFORM(self), TRUE);
}
