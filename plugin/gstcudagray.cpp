// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-cudagray
 * @title: cudagray
 * @see_also: videoconvert, bayer2rgb, cudaupload, nvh264dec
 *
 * Converts RGB-family, Bayer and YUV video to GRAY8 or GRAY16_LE on an NVIDIA
 * GPU, or on the CPU with the same output bit for bit. R, G and B are
 * weighed with #GstCudaGray:matrix or #GstCudaGray:weights (Bayer mosaics
 * are demosaicked as bayer2rgb does first); from YUV the gray is the luma,
 * expanded to full range when the input is limited range. Input in CUDA
 * memory (from nvh264dec, nvh265dec or cudaupload) is read on the GPU where
 * it is, in the pipeline's shared CUDA context, and the gray can stay there
 * too when downstream asks for video/x-raw(memory:CUDAMemory). With
 * #GstCudaGray:backend auto and no usable GPU, cudagray posts one warning and
 * converts on the CPU.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 videotestsrc ! cudagray ! videoconvert ! autovideosink
 * ]|
 * A test pattern in gray.
 * |[
 * gst-launch-1.0 filesrc location=in.mp4 ! decodebin ! videoconvert ! video/x-raw,format=RGBx ! \
 *     cudagray matrix=bt709 ! videoconvert ! autovideosink
 * ]|
 * A file's video in BT.709 weights: made RGB first, since from YUV the
 * gray is the luma and the weights do not apply.
 * |[
 * gst-launch-1.0 filesrc location=in.mp4 ! qtdemux ! h264parse ! nvh264dec ! cudagray ! \
 *     videoconvert ! autovideosink
 * ]|
 * H.264 decoded on the GPU: cudagray reads the decoder's frames in GPU
 * memory, and only the gray comes back to the CPU.
 * |[
 * gst-launch-1.0 videotestsrc ! video/x-raw,format=ARGB,width=640,height=480 ! rgb2bayer ! \
 *     video/x-bayer,format=rggb ! cudagray ! video/x-raw,format=GRAY16_LE ! videoconvert ! \
 *     autovideosink
 * ]|
 * A Bayer camera's mosaic (rgb2bayer plays the camera) demosaicked and
 * made 16-bit gray.
 */

/* The element: policy and vfunc wiring. It hands each input buffer to the
 * converter (gstcudagrayconverter.cpp), which maps and submits it, and what
 * the converter makes to the output unit (gstcudagrayoutput.cpp), which
 * pushes it, in order with the events around it, once converted; the output
 * unit asks back only through GstCudaGrayOutputAnswers. */
#include "gstcudagray.h"

#include <string>

#include "gstcudagraycaps.h"
#include "gstcudagrayinflight.h"
#include "gstcudagrayrenegotiation.h"

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
  /* the stats as the backend has them now; stop takes the last ones */
  GST_OBJECT_LOCK(self);
  if (self->converting && g_str_equal(pspec->name, "stats"))
    self->props.stats = self->converter->stats(&self->props.stats_in_flight);
  GST_OBJECT_UNLOCK(self);
  gst_cuda_gray_properties_get(GST_ELEMENT(self), &self->props, prop_id, value, pspec);
}

/* The output task stopped: lets go of everything held without pushing it,
 * once the GPU let go of the buffers. */
static void discard_in_flight(GstCudaGray *self) {
  self->converter->discard_all();
  const gsize dropped = self->output->discard_all();
  if (dropped > 0)
    GST_DEBUG_OBJECT(self, "discarded %" G_GSIZE_FORMAT " frames in flight", dropped);
}

/* Makes the backend named by the properties. backend=auto falls back to the
 * CPU with a warning when no GPU can be used; everything else that fails is
 * an error. A CUDA backend is made inside the element's CUDA context. */
static gboolean gst_cuda_gray_start(GstBaseTransform *trans) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GST_OBJECT_LOCK(self);
  const GstCudaGrayBackend choice = self->props.backend;
  const gint device_id = self->props.cuda_device_id;
  self->props.stats = cudagray::TimingStats();
  self->props.stats_in_flight = 0;
  GST_OBJECT_UNLOCK(self);
  self->reverse_playback = FALSE;
  if (!gst_cuda_gray_properties_check_weights(GST_ELEMENT(self), &self->props) ||
      !self->converter->open(choice, device_id))
    return FALSE;
  self->output->restart(false);
  const cudagray::BackendNeeds &needs = self->converter->needs();
  GST_OBJECT_LOCK(self);
  self->props.stats_device_id = self->converter->device_id();
  self->converting = TRUE;
  self->reads_device_memory = needs.reads_device_memory;
  self->writes_device_memory = needs.writes_device_memory;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

static gboolean gst_cuda_gray_stop(GstBaseTransform *trans) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  discard_in_flight(self);
  /* the last figures stay readable; the backend goes */
  GST_OBJECT_LOCK(self);
  if (self->converting) self->props.stats = self->converter->stats(&self->props.stats_in_flight);
  self->converting = FALSE;
  GST_OBJECT_UNLOCK(self);
  self->converter->close();
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
  /* backend=auto on the CPU still offers CUDA memory out (after system
   * memory), so that a downstream wanting only that gets set_caps' error
   * saying why, not a bare not-negotiated */
  const gboolean cuda_output = self->writes_device_memory > 0 || may_be_cuda;
  GST_OBJECT_UNLOCK(self);
  GstCaps *result = gst_cuda_gray_caps_transform(direction, caps, filter, cuda_input, cuda_output);
  GST_DEBUG_OBJECT(trans, "%s caps %" GST_PTR_FORMAT " → %" GST_PTR_FORMAT,
                   direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
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
      gst_cuda_gray_wait_on_output(self, &GstCudaGrayOutput::drain) == GST_FLOW_FLUSHING)
    return FALSE;
  if (direction == GST_PAD_SRC && GST_QUERY_TYPE(query) == GST_QUERY_POSITION &&
      self->output->answer_position(query))
    return TRUE;
  if (!GST_BASE_TRANSFORM_CLASS(parent_class)->query(trans, direction, query)) return FALSE;
  if (direction == GST_PAD_SRC && GST_QUERY_TYPE(query) == GST_QUERY_LATENCY)
    self->output->add_latency(query);
  return TRUE;
}

/* Sizes the backend for the new caps. New input caps, and new output caps
 * that downstream asked for (a RECONFIGURE: GStreamer calls this before it
 * sends the CAPS event and the ALLOCATION query), take effect at a frame
 * boundary: everything queued leaves first, as it was negotiated, and the
 * backend then frees nothing a frame still holds; frames that downstream
 * refused wait for these caps instead (GstCudaGrayOutput::drain). */
static gboolean gst_cuda_gray_set_caps(GstBaseTransform *trans, GstCaps *incaps, GstCaps *outcaps) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayConverter &converter = *self->converter;
  GstVideoInfo in_info, out_info;
  const GstCudaGrayFormat *format;

  if (gst_cuda_gray_wait_on_output(self, &GstCudaGrayOutput::drain) == GST_FLOW_FLUSHING)
    return FALSE;

  if (!gst_cuda_gray_input_from_caps(incaps, &in_info, &format) ||
      !gst_video_info_from_caps(&out_info, outcaps)) {
    GST_ERROR_OBJECT(self, "invalid caps %" GST_PTR_FORMAT " to %" GST_PTR_FORMAT, incaps, outcaps);
    return FALSE;
  }
  GST_OBJECT_LOCK(self);
  const cudagray::ScaleMethod method = gst_cuda_gray_properties_method(&self->props);
  const gboolean add_borders = self->props.add_borders;
  GST_OBJECT_UNLOCK(self);
  if (!converter.describe(&in_info, format, &out_info, method, add_borders)) return FALSE;

  const gboolean cuda_input = gst_cuda_gray_caps_in_cuda_memory(incaps);
  const gboolean cuda_output = gst_cuda_gray_caps_in_cuda_memory(outcaps);
  /* gray in system memory of the output's format and size goes out as it
   * came; into or out of CUDA memory it is copied by the kernel */
  const gboolean passthrough = converter.passes_through(&out_info) && !cuda_input && !cuda_output;
  gst_base_transform_set_passthrough(trans, passthrough);
  const int in_flight = gst_cuda_gray_limit_frames_in_flight(self, &in_info, passthrough);
  if (passthrough) {
    GST_INFO_OBJECT(self, "%s input: passthrough", format->name);
    return TRUE;
  }
  if (!converter.set_memory(cuda_input, cuda_output) || !converter.resize()) return FALSE;
  GST_INFO_OBJECT(self,
                  "converting %dx%d %s (%s) to %dx%d %s (%s) on the %s "
                  "backend, up to %d frames in flight",
                  in_info.width, in_info.height, format->name,
                  cuda_input ? "CUDA memory" : "system memory", out_info.width, out_info.height,
                  GST_VIDEO_INFO_NAME(&out_info), cuda_output ? "CUDA memory" : "system memory",
                  self->converter->device_id() < 0 ? "cpu" : "cuda", in_flight);
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

/* Upstream may write straight into our host memory (pinned for CUDA) or
 * into CUDA memory carrying our stream, and may pad its rows. */
static gboolean gst_cuda_gray_propose_allocation(GstBaseTransform *trans, GstQuery *decide_query,
                                                 GstQuery *query) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  if (gst_base_transform_is_passthrough(trans)) /* downstream answers */
    return GST_BASE_TRANSFORM_CLASS(parent_class)->propose_allocation(trans, decide_query, query);
  gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL);
  /* a crop is read where it is: videocrop then copies nothing */
  gst_query_add_allocation_meta(query, GST_VIDEO_CROP_META_API_TYPE, NULL);
  self->converter->offer_input_pool(query);
  return TRUE;
}

/* Output buffers in system memory come from downstream's pool when it has
 * one, else from ours (GstBaseTransform would allocate each one afresh).
 * In CUDA memory from downstream's CUDA pool of our context, else from
 * ours: the kernel writes into them. */
static gboolean gst_cuda_gray_decide_allocation(GstBaseTransform *trans, GstQuery *query) {
  if (!GST_CUDA_GRAY(trans)->converter->decide_output_pool(query)) return FALSE;
  return GST_BASE_TRANSFORM_CLASS(parent_class)->decide_allocation(trans, query);
}

/* Never called: generate_output is cudagray's own. Being set tells
 * GstBaseTransform that output buffers are separate ones, from the pool
 * decided with downstream. */
static GstFlowReturn gst_cuda_gray_transform(GstBaseTransform *trans, GstBuffer *inbuf,
                                             GstBuffer *outbuf) {
  g_return_val_if_reached(GST_FLOW_NOT_SUPPORTED);
}

/* Called by GstBaseTransform for each input buffer: waits while max-inflight
 * frames are out (PASSTHROUGH_ROOM buffers passed through), then starts
 * converting it, or queues it as it is when gray of the output format
 * passes through. Nothing is handed back here: the output task pushes it. */
static GstFlowReturn gst_cuda_gray_generate_output(GstBaseTransform *trans, GstBuffer **outbuf) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  *outbuf = NULL;
  GstBuffer *inbuf = trans->queued_buf;
  if (!inbuf) return GST_FLOW_OK;
  trans->queued_buf = NULL;
  GstFlowReturn ret = gst_cuda_gray_wait_on_output(self, &GstCudaGrayOutput::wait_for_room);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref(inbuf);
    return ret;
  }
  GstCudaGrayOutputItem item;
  ret = gst_cuda_gray_start_frame(self, inbuf, self->output->take_discont(), &item);
  if (ret != GST_FLOW_OK) return ret;
  ret = self->output->push_frame(std::move(item));
  return ret == GST_CUDA_GRAY_FLOW_RENEGOTIATE ? gst_cuda_gray_serve_refused(self) : ret;
}

/* QoS is cudagray's own (GstCudaGrayOutput::drop_late), with
 * GstBaseTransform's rule and message, whose processed count GstBaseTransform
 * could not keep: the output task pushes cudagray's frames. The QoS event
 * goes upstream as it would through GstBaseTransform. */
static gboolean gst_cuda_gray_src_event(GstBaseTransform *trans, GstEvent *event) {
  if (GST_EVENT_TYPE(event) == GST_EVENT_RECONFIGURE)
    GST_CUDA_GRAY(trans)->output->reconfigure_requested();
  if (GST_EVENT_TYPE(event) != GST_EVENT_QOS)
    return GST_BASE_TRANSFORM_CLASS(parent_class)->src_event(trans, event);
  gdouble proportion;
  GstClockTimeDiff diff;
  GstClockTime timestamp;
  gst_event_parse_qos(event, NULL, &proportion, &diff, &timestamp);
  GST_CUDA_GRAY(trans)->output->qos(proportion, diff, timestamp);
  return gst_pad_push_event(GST_BASE_TRANSFORM_SINK_PAD(trans), event);
}

/* Serialized events join the output behind the frames before them and
 * return at once (GstCudaGrayOutput::push_event); CAPS is GstBaseTransform's
 * (set_caps lets the frames before it leave first). A flush drops what is
 * held. */
static gboolean gst_cuda_gray_sink_event(GstBaseTransform *trans, GstEvent *event) {
  GstCudaGray *self = GST_CUDA_GRAY(trans);
  GstCudaGrayOutput &output = *self->output;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_START:
      output.flush_start(); /* wakes both threads */
      break;
    case GST_EVENT_FLUSH_STOP: {
      output.stop();
      discard_in_flight(self);
      output.restart(true);
      const gboolean ret = GST_BASE_TRANSFORM_CLASS(parent_class)->sink_event(trans, event);
      output.start();
      return ret;
    }
    case GST_EVENT_CAPS: break;
    case GST_EVENT_EOS:
      /* EOS leaves from this thread once everything before it has (see
       * GstCudaGrayOutput::push_eos) */
      if (gst_cuda_gray_wait_on_output(self, &GstCudaGrayOutput::drain) == GST_FLOW_FLUSHING) {
        gst_event_unref(event);
        return FALSE;
      }
      return output.push_eos(event);
    case GST_EVENT_SEGMENT:
      gst_cuda_gray_serve_refused(self);
      gst_cuda_gray_follow_playback_direction(self, event);
      return output.push_event(event);
    default:
      if (!GST_EVENT_IS_SERIALIZED(event)) break;
      gst_cuda_gray_serve_refused(self); /* refused frames go out before the event */
      return output.push_event(event);
  }
  return GST_BASE_TRANSFORM_CLASS(parent_class)->sink_event(trans, event);
}

/* The output task runs from READY to PAUSED until PAUSED to READY. */
static GstStateChangeReturn gst_cuda_gray_change_state(GstElement *element,
                                                       GstStateChange transition) {
  GstCudaGray *self = GST_CUDA_GRAY(element);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) self->output->stop();
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(parent_class)->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED && ret != GST_STATE_CHANGE_FAILURE &&
      !self->output->start())
    return GST_STATE_CHANGE_FAILURE;
  return ret;
}

/* What the converter keeps of the input's metas on the output. */
static gboolean gst_cuda_gray_transform_meta(GstBaseTransform *trans, GstBuffer *outbuf,
                                             GstMeta *meta, GstBuffer *inbuf) {
  return GST_CUDA_GRAY(trans)->converter->transform_meta(outbuf, meta, inbuf);
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

/* Dropped in any state (an application that unrefs it in PAUSED): the
 * output task is stopped and joined before anything it waits on goes. */
static void gst_cuda_gray_dispose(GObject *object) {
  GstCudaGray *self = GST_CUDA_GRAY(object);
  self->output->stop();
  discard_in_flight(self);
  G_OBJECT_CLASS(parent_class)->dispose(object);
}

static void gst_cuda_gray_finalize(GObject *object) {
  GstCudaGray *self = GST_CUDA_GRAY(object);
  delete self->output;
  delete self->converter;
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
  gobject_class->dispose = gst_cuda_gray_dispose;
  gobject_class->finalize = gst_cuda_gray_finalize;

  gst_cuda_gray_properties_install(gobject_class, GST_CUDA_GRAY_PROPERTIES_ALL);

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
  trans_class->fixate_caps = GST_DEBUG_FUNCPTR(gst_cuda_gray_fixate_caps);
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
  self->context = gst_cuda_gray_context_new(GST_ELEMENT(self));
  self->converter = new GstCudaGrayConverter(GST_BASE_TRANSFORM(self), self->context);
  self->output = new GstCudaGrayOutput(GST_BASE_TRANSFORM(self));
  /* transform_caps lists converted formats first: keep that order */
  gst_base_transform_set_prefer_passthrough(GST_BASE_TRANSFORM(self), FALSE);
  /* like videoconvert: frames already late at the sink are not converted */
  gst_base_transform_set_qos_enabled(GST_BASE_TRANSFORM(self), TRUE);
}
