// SPDX-License-Identifier: LGPL-2.1-or-later
/* The conversion the element runs: its backend made at start and sized in
 * set_caps, a frame's way in (mapped, checked, submitted, handed to the
 * output unit), and what the output unit asks back: when a conversion is
 * done, and converting refused frames again after a renegotiation. */
#include <memory>
#include <string>

#include "cudagray/device.h"
#include "gstcudagray.h"
#include "gstcudagrayallocation.h"
#include "gstcudagraycaps.h"
#include "gstcudagrayframe.h"
#include "gstcudagraypools.h"

#define GST_CAT_DEFAULT gst_cuda_gray_debug

/* Posts the error of a failed backend call. */
static void post_backend_error(GstCudaGray *self, const char *doing, const std::string &why) {
  GST_ELEMENT_ERROR(
      self, RESOURCE, FAILED,
      ("The %s backend failed to %s: %s", self->streaming->backend->name(), doing, why.c_str()),
      ("check the GPU with nvidia-smi, or set backend=cpu"));
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

/* Lets go of everything held without pushing it (the output task stopped):
 * the GPU lets go of the buffers first. */
void GstCudaGrayStreaming::discard_in_flight() {
  if (backend) backend->discard_all();
  const gsize dropped = output.discard_all();
  if (dropped > 0)
    GST_DEBUG_OBJECT(self, "discarded %" G_GSIZE_FORMAT " frames in flight", dropped);
}

/* Makes the backend named by the properties. backend=auto falls back to the
 * CPU with a warning when no GPU can be used; everything else that fails is
 * an error. A CUDA backend is made inside the element's CUDA context. */
gboolean GstCudaGrayStreaming::open() {
  GstCudaGrayStreaming &s = *this;

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
    if (!backend) {
      s.cpu_fallback_reason = reason;
      post_warning_for_users(self, "No usable CUDA device: " + reason +
                                       ". Converting on the CPU instead; backend=cpu chooses "
                                       "the CPU without this warning.");
    }
  }
  if (!backend) backend = cudagray::make_cpu_backend();
  s.needs = backend->needs();
  s.backend = std::move(backend);
  if (s.needs.pinned_host_memory)
    s.pinned = gst_cuda_gray_pinned_allocator_new(gst_cuda_gray_context_switch(self->context));
  s.output.restart(false);
  GST_INFO_OBJECT(self, "using the %s backend (CUDA device %d)", s.backend->name(),
                  s.backend->device_id());
  GST_OBJECT_LOCK(self);
  self->props.stats_device_id = s.backend->device_id();
  self->reads_device_memory = s.needs.reads_device_memory;
  self->writes_device_memory = s.needs.writes_device_memory;
  GST_OBJECT_UNLOCK(self);
  return TRUE;
}

/* Lets go of the backend, the pinned allocator and the CUDA context. */
void GstCudaGrayStreaming::close() {
  GstCudaGrayStreaming &s = *this;
  discard_in_flight();
  s.backend.reset();
  gst_clear_object(&s.pinned);
  gst_cuda_gray_context_close(self->context);
  s.cuda_input = s.cuda_output = false;
  s.configure_error.clear();
  s.warned_weights_unused = false;
  s.cpu_fallback_reason.clear();
  gst_video_info_init(&s.in_info);
  s.format = NULL;
  s.conversion = cudagray::Conversion();
  GST_OBJECT_LOCK(self);
  self->reads_device_memory = self->writes_device_memory = -1;
  GST_OBJECT_UNLOCK(self);
}

/* A GST_DEBUG line with the running stats every this many frames. */
#define STATS_LOG_INTERVAL 300

GstCudaGrayStreaming::GstCudaGrayStreaming(GstCudaGray *element)
    : self(element), output(GST_BASE_TRANSFORM(element), this) {
  gst_video_info_init(&in_info);
}

/* Waits for the oldest frame's conversion and copies the backend's figures
 * for the stats property; FALSE after posting the error. */
gboolean GstCudaGrayStreaming::finish_oldest() {
  std::string error;
  if (!backend->finish_oldest(&error)) {
    post_backend_error(self, "convert a frame", error);
    return FALSE;
  }
  const cudagray::TimingStats stats = backend->stats();
  GST_OBJECT_LOCK(self);
  self->props.stats = stats;
  self->props.stats_in_flight = backend->in_flight();
  GST_OBJECT_UNLOCK(self);
  if (stats.frames % STATS_LOG_INTERVAL == 0)
    GST_DEBUG_OBJECT(self,
                     "%" G_GUINT64_FORMAT
                     " frames: device %.1f us "
                     "(min %.1f, max %.1f), upload %.1f us, download %.1f us, %d in flight",
                     (guint64)stats.frames, stats.device_us_mean, stats.device_us_min,
                     stats.device_us_max, stats.upload_us_mean, stats.download_us_mean,
                     backend->in_flight());
  return TRUE;
}

gboolean GstCudaGrayStreaming::describe(const GstVideoInfo *in, const GstCudaGrayFormat *fmt,
                                        const GstVideoInfo *out) {
  const gboolean same_input =
      fmt == format && in->width == in_info.width && in->height == in_info.height;
  const cudagray::Conversion before = conversion;
  in_info = *in;
  format = fmt;
  GST_OBJECT_LOCK(self);
  const cudagray::ScaleMethod method = gst_cuda_gray_properties_method(&self->props);
  const gboolean add_borders = self->props.add_borders;
  GST_OBJECT_UNLOCK(self);
  conversion = gst_cuda_gray_conversion_from_caps(in, fmt, out, method, add_borders);
  /* new output caps alone keep the frames' crop (convert sets it from their
   * crop meta): the backend is sized for it once, and frames held for the
   * new caps convert again as they came */
  if (same_input) {
    conversion.in_width = before.in_width;
    conversion.in_height = before.in_height;
    conversion.crop = before.crop;
  }
  std::string invalid;
  if (cudagray::valid_conversion(conversion, &invalid)) return TRUE;
  GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                    ("Cannot convert %dx%d %s to %dx%d gray: %s", in->width, in->height, fmt->name,
                     out->width, out->height, invalid.c_str()),
                    ("ask for an output size of 1 to %d pixels a side", cudagray::kMaxDimension));
  return FALSE;
}

/* A region of interest, in the coordinates of the whole input frame, in
 * the output's: its part inside the crop, from the crop's corner, scaled by
 * the picture's size over the crop's (rounded down, as the meta's own scale
 * rounds for videoconvertscale), from the picture's corner between the
 * bars; none when nothing of it is left. */
static void place_region(GstBuffer *outbuf, const GstVideoRegionOfInterestMeta *roi,
                         const cudagray::Rect &crop, const cudagray::Rect &dest) {
  const gint64 x0 = MAX((gint64)roi->x, crop.x),
               x1 = MIN((gint64)roi->x + roi->w, (gint64)crop.x + crop.width);
  const gint64 y0 = MAX((gint64)roi->y, crop.y),
               y1 = MIN((gint64)roi->y + roi->h, (gint64)crop.y + crop.height);
  if (x1 <= x0 || y1 <= y0) return;
  const guint w = (guint)((x1 - x0) * dest.width / crop.width);
  const guint h = (guint)((y1 - y0) * dest.height / crop.height);
  if (w == 0 || h == 0) return;
  GstVideoRegionOfInterestMeta *placed = gst_buffer_add_video_region_of_interest_meta_id(
      outbuf, roi->roi_type, (guint)(dest.x + (x0 - crop.x) * dest.width / crop.width),
      (guint)(dest.y + (y0 - crop.y) * dest.height / crop.height), w, h);
  placed->id = roi->id;
  placed->parent_id = roi->parent_id;
  for (GList *param = roi->params; param; param = param->next)
    gst_video_region_of_interest_meta_add_param(
        placed, gst_structure_copy(static_cast<const GstStructure *>(param->data)));
}

gboolean GstCudaGrayStreaming::copy_geometry_meta(GstBuffer *outbuf, GstMeta *meta,
                                                  GstBuffer *inbuf) {
  /* metas are copied before inbuf is converted: its own crop, not the
   * conversion's yet; a buffer whose crop is wrong is refused there */
  gint width, height;
  cudagray::Rect crop;
  std::string why;
  if (!gst_cuda_gray_frame_geometry(inbuf, &in_info, &width, &height, &crop, &why)) return FALSE;
  const cudagray::Conversion &c = conversion;
  if (meta->info->api == GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE) {
    place_region(outbuf, reinterpret_cast<GstVideoRegionOfInterestMeta *>(meta), crop, c.dest);
    return FALSE;
  }
  const gboolean in_place =
      crop.x == 0 && crop.y == 0 && c.dest == cudagray::Rect{0, 0, c.out_width, c.out_height};
  if (in_place && crop.width == c.out_width && crop.height == c.out_height) return TRUE;
  if (!in_place || !meta->info->transform_func) return FALSE;
  GstVideoInfo out;
  gst_video_info_set_format(&out, GST_VIDEO_FORMAT_GRAY8, c.out_width, c.out_height);
  GstVideoMetaTransform scale = {&in_info, &out};
  meta->info->transform_func(outbuf, meta, inbuf, gst_video_meta_transform_scale_get_quark(),
                             &scale);
  return FALSE;
}

/* Sizes the backend, allocating every buffer of its own, for the frames
 * that set_caps described in s; posts an error (once for the same cause)
 * when it cannot. Nothing may be queued. */
gboolean GstCudaGrayStreaming::configure() {
  GstCudaGrayStreaming &s = *this;
  std::string error;
  s.conversion.max_in_flight = s.max_in_flight;
  s.conversion.inputs_on_device = s.cuda_input;
  s.conversion.outputs_on_device = s.cuda_output;
  const cudagray::Conversion &c = s.conversion;
  GST_DEBUG_OBJECT(self, "sizing the backend for %dx%d frames, crop %dx%d at (%d, %d), to %dx%d",
                   c.in_width, c.in_height, c.crop.width, c.crop.height, c.crop.x, c.crop.y,
                   c.out_width, c.out_height);
  if (!s.backend->configure(s.conversion, &error)) {
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

/* Gray passed through that the output holds before upstream waits. It
 * holds nothing of the backend's and leaves as soon as the output task gets
 * to it; with room for one, the streaming thread waited for the task at
 * every buffer (50 us a buffer on a 2-core machine, 2 us with 16). */
#define PASSTHROUGH_ROOM 16

void GstCudaGrayStreaming::set_frames_in_flight(gboolean passthrough, gboolean live) {
  GST_OBJECT_LOCK(self);
  const guint requested = self->props.max_inflight;
  GST_OBJECT_UNLOCK(self);
  const int automatic = live ? 1 : needs.auto_in_flight;
  max_in_flight =
      passthrough ? 1 : MIN(requested > 0 ? (int)requested : automatic, needs.max_in_flight);
  /* a frame can wait behind max-inflight - 1 others when the GPU falls behind */
  const GstClockTime waiting =
      in_info.fps_n > 0
          ? gst_util_uint64_scale((max_in_flight - 1) * GST_SECOND, in_info.fps_d, in_info.fps_n)
          : 0;
  output.set_limit(passthrough ? PASSTHROUGH_ROOM : max_in_flight,
                   !passthrough && max_in_flight == 1, waiting);
}

gboolean GstCudaGrayStreaming::memory_usable() {
  if (cuda_input && !needs.reads_device_memory) {
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("CUDA memory input needs the CUDA backend"),
                      ("backend=cpu cannot read memory:CUDAMemory; add cudadownload before "
                       "cudagray, or set backend=auto or cuda"));
    return FALSE;
  }
  if (!cuda_output || needs.writes_device_memory) return TRUE;
  if (cpu_fallback_reason.empty())
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, ("CUDA memory output needs the CUDA backend"),
                      ("backend=cpu cannot write memory:CUDAMemory; add cudaupload after "
                       "cudagray, or set backend=auto or cuda"));
  else
    GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
                      ("CUDA memory output needs the CUDA backend, and backend=auto converts on "
                       "the CPU: %s",
                       cpu_fallback_reason.c_str()),
                      ("ask for gray in system memory after cudagray (or add cudaupload), "
                       "or make a CUDA device usable"));
  return FALSE;
}

void GstCudaGrayStreaming::offer_input_pool(GstQuery *query) {
  if (gst_query_get_n_allocation_pools(query) > 0) return;
  GstCaps *caps;
  gst_query_parse_allocation(query, &caps, NULL);
  if (caps && gst_cuda_gray_caps_in_cuda_memory(caps))
    gst_cuda_gray_offer_input_pool(self->context, query, caps, max_in_flight + 1);
  else if (pinned)
    gst_cuda_gray_add_pinned_pool(query, pinned, max_in_flight + 1);
}

gboolean GstCudaGrayStreaming::decide_output_pool(GstQuery *query) {
  std::string why;
  if (cuda_output &&
      !gst_cuda_gray_decide_output_pool(self->context, query, max_in_flight + 1, &why)) {
    GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT,
                      ("Could not set up gray output in CUDA memory: %s", why.c_str()),
                      ("free GPU memory, or ask for gray video/x-raw in system "
                       "memory after cudagray"));
    return FALSE;
  }
  if (!cuda_output && pinned && gst_query_get_n_allocation_pools(query) == 0)
    gst_cuda_gray_add_pinned_pool(query, pinned, max_in_flight + 1);
  return TRUE;
}

/* The error for an input buffer that does not hold its frame. */
GstFlowReturn GstCudaGrayStreaming::refuse_input(const std::string &why) {
  const GstVideoInfo *info = &in_info;
  GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                    ("Input buffer does not hold a %dx%d %s frame: %s", info->width, info->height,
                     format->name, why.c_str()),
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
       s.conversion.limited_range ? "expanded from limited range" : "taken as it is"),
      ("to apply them, convert to RGB before cudagray: "
       "videoconvert ! video/x-raw,format=RGBx ! cudagray"));
}

/* Starts converting inbuf into outbuf; the output holds both, mapped, until
 * the result is pushed. */
GstFlowReturn GstCudaGrayStreaming::convert(GstBuffer *inbuf, GstBuffer *outbuf) {
  GstCudaGrayStreaming &s = *this;
  std::string error;
  if (s.output.take_discont()) /* outbuf is ours alone, from the pool */
    GST_BUFFER_FLAG_SET(outbuf, GST_BUFFER_FLAG_DISCONT);
  bool crop_changed = false;
  if (!gst_cuda_gray_frame_crop(inbuf, &s.in_info, &s.conversion, &crop_changed, &error))
    return refuse_input(error);
  if (crop_changed) { /* a new crop meta: what was queued leaves first */
    GST_INFO_OBJECT(self, "input crop %dx%d at (%d, %d) of a %dx%d frame", s.conversion.crop.width,
                    s.conversion.crop.height, s.conversion.crop.x, s.conversion.crop.y,
                    s.conversion.in_width, s.conversion.in_height);
    const GstFlowReturn drained = s.output.drain();
    if (drained != GST_FLOW_OK) return drained;
    if (!configure()) return GST_FLOW_ERROR;
  }
  auto frame = std::make_unique<GstCudaGrayFrame>();
  switch (
      frame->map(self->context, inbuf, &s.in_info, s.conversion, outbuf, s.cuda_output, &error)) {
    case GST_CUDA_GRAY_MAP_OK: break;
    case GST_CUDA_GRAY_MAP_OTHER_DEVICE:
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", error.c_str()),
                        ("unset cuda-device-id, or put upstream's CUDA elements on the same "
                         "device"));
      return GST_FLOW_ERROR;
    case GST_CUDA_GRAY_MAP_BAD_INPUT: return refuse_input(error);
    case GST_CUDA_GRAY_MAP_BAD_OUTPUT:
      GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Could not map the output buffer for writing"),
                        ("%s", error.c_str()));
      return GST_FLOW_ERROR;
  }
  const cudagray::InputFrame &in = frame->input();
  if (s.cuda_input && !in.on_device) {
    /* CUDA memory of another context: the backend was sized for frames on
     * the GPU; from now on it uploads host mappings, with buffers of its own */
    GST_INFO_OBJECT(self, "CUDA memory input of another CUDA context: reading host mappings");
    const GstFlowReturn drained = s.output.drain();
    if (drained != GST_FLOW_OK) return drained;
    s.cuda_input = false;
    if (!configure()) return GST_FLOW_ERROR;
  }

  GST_OBJECT_LOCK(self);
  const cudagray::Weights weights = gst_cuda_gray_properties_weights(&self->props);
  GST_OBJECT_UNLOCK(self);
  warn_if_weights_unused(self, weights);
  if (!s.backend->submit(in, frame->output(), weights, &error)) {
    post_backend_error(self, "start converting a frame", error);
    return GST_FLOW_ERROR;
  }
  return s.output.push_frame(std::move(frame));
}

gboolean GstCudaGrayStreaming::renegotiate() {
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  for (int attempt = 0; attempt < GST_CUDA_GRAY_RENEGOTIATION_ATTEMPTS; attempt++) {
    if (attempt > 0) g_usleep(1000);
    if (output.flushing()) return FALSE;
    GstCaps *wanted = gst_pad_peer_query_caps(trans->srcpad, NULL);
    const gboolean wants_some = !gst_caps_is_empty(wanted);
    gst_caps_unref(wanted);
    if (!wants_some) continue; /* asking now would only post a warning */
    gst_pad_mark_reconfigure(trans->srcpad);
    if (!gst_base_transform_reconfigure(trans)) continue;
    GstCaps *caps = gst_pad_get_current_caps(trans->srcpad);
    const gboolean taken = caps && gst_pad_peer_query_accept_caps(trans->srcpad, caps);
    GST_INFO_OBJECT(self, "renegotiated %" GST_PTR_FORMAT ": %s", caps,
                    taken ? "taken" : "refused again");
    gst_clear_caps(&caps);
    if (taken) return TRUE;
  }
  GST_WARNING_OBJECT(self, "downstream takes none of our caps");
  return FALSE;
}

/* Downstream refused frames converted for caps it no longer takes: every
 * conversion still running finishes, the source pad renegotiates (set_caps
 * sizes the backend, GstBaseTransform decides the new pool), and each
 * refused frame is converted again from its input, which the output held,
 * into a buffer of the new caps. */
/* Converts one frame again, from its input, into a new output buffer. */
GstFlowReturn GstCudaGrayStreaming::convert_again(GstCudaGrayFrame &frame,
                                                  const cudagray::Weights &weights) {
  GstBaseTransform *trans = GST_BASE_TRANSFORM(self);
  GstBuffer *out = NULL;
  /* cudagray keeps GstBaseTransform's: a buffer of the pool decided */
  const GstFlowReturn ret =
      GST_BASE_TRANSFORM_GET_CLASS(trans)->prepare_output_buffer(trans, frame.input_buffer(), &out);
  if (ret != GST_FLOW_OK) return ret;
  std::string error;
  const GstCudaGrayMapResult mapped =
      frame.map_output(self->context, out, conversion, cuda_output, &error);
  gst_buffer_unref(out); /* the frame's mapping holds it */
  if (mapped != GST_CUDA_GRAY_MAP_OK) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Could not map the output buffer for writing"),
                      ("%s", error.c_str()));
    return GST_FLOW_ERROR;
  }
  if (!backend->submit(frame.input(), frame.output(), weights, &error)) {
    post_backend_error(self, "start converting a frame", error);
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

GstFlowReturn GstCudaGrayStreaming::convert_again(std::deque<GstCudaGrayOutputItem> &items) {
  while (backend->in_flight() > 0)
    if (!finish_oldest()) return GST_FLOW_ERROR;
  if (!renegotiate()) return GST_FLOW_NOT_NEGOTIATED;
  GST_OBJECT_LOCK(self);
  const cudagray::Weights weights = gst_cuda_gray_properties_weights(&self->props);
  GST_OBJECT_UNLOCK(self);
  for (GstCudaGrayOutputItem &item : items) {
    if (!item.converting()) continue;
    const GstFlowReturn ret = convert_again(item.frame(), weights);
    if (ret != GST_FLOW_OK) {
      backend->discard_all(); /* the frames converted again are dropped too */
      return ret;
    }
  }
  return GST_FLOW_OK;
}
