// SPDX-License-Identifier: LGPL-2.1-or-later
/* The converter: the backend made at start and sized in set_caps, the
 * pools, and a frame's way in (checked, mapped, submitted). */
#include "gstcudagrayconverter.h"

#include <utility>

#include "gstcudagrayallocation.h"
#include "gstcudagraybackendchoice.h"
#include "gstcudagraycaps.h"
#include "gstcudagrayframe.h"
#include "gstcudagraypools.h"

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_debug);
#define GST_CAT_DEFAULT gst_cuda_gray_debug

GstCudaGrayConverter::GstCudaGrayConverter(GstBaseTransform *trans, GstCudaGrayContext *context)
    : trans_(trans), element_(GST_ELEMENT(trans)), context_(context) {
  gst_video_info_init(&in_info_);
}

void GstCudaGrayConverter::post_backend_error(const char *doing, const std::string &why) {
  gst_cuda_gray_post_backend_error(element_, backend_->name(), doing, why);
}

gboolean GstCudaGrayConverter::open(GstCudaGrayBackend choice, gint device_id) {
  std::unique_ptr<cudagray::Backend> backend;
  gboolean on_cuda;
  if (!gst_cuda_gray_open_cuda_backend(
          element_, context_, choice, device_id,
          [&](std::string *why) {
            backend = cudagray::make_cuda_backend(why, gst_cuda_gray_context_switch(context_));
            return backend != nullptr;
          },
          &on_cuda, &cpu_fallback_reason_))
    return FALSE;
  if (!backend) backend = cudagray::make_cpu_backend();
  needs_ = backend->needs();
  backend_ = std::move(backend);
  host_ = gst_cuda_gray_host_allocator_new(needs_.pinned_host_memory,
                                           gst_cuda_gray_context_switch(context_));
  GST_INFO_OBJECT(element_, "using the %s backend (CUDA device %d)", backend_->name(),
                  backend_->device_id());
  return TRUE;
}

void GstCudaGrayConverter::close() {
  discard_all();
  backend_.reset();
  gst_clear_object(&host_);
  gst_cuda_gray_context_close(context_);
  cuda_input_ = cuda_output_ = false;
  resize_error_.clear();
  warned_weights_unused_ = false;
  cpu_fallback_reason_.clear();
  gst_video_info_init(&in_info_);
  format_ = NULL;
  described_ = cudagray::Conversion();
}

/* A GST_DEBUG line with the running stats every this many frames. */
#define STATS_LOG_INTERVAL 300

gboolean GstCudaGrayConverter::finish_oldest() {
  std::string error;
  if (!backend_->finish_oldest(&error)) {
    post_backend_error("convert a frame", error);
    return FALSE;
  }
  const cudagray::TimingStats stats = backend_->stats();
  if (stats.frames % STATS_LOG_INTERVAL == 0)
    GST_DEBUG_OBJECT(element_,
                     "%" G_GUINT64_FORMAT
                     " frames: device %.1f us "
                     "(min %.1f, max %.1f), upload %.1f us, download %.1f us, %d in flight",
                     (guint64)stats.frames, stats.device_us_mean, stats.device_us_min,
                     stats.device_us_max, stats.upload_us_mean, stats.download_us_mean,
                     backend_->in_flight());
  return TRUE;
}

gboolean GstCudaGrayConverter::finish_all() {
  while (backend_->in_flight() > 0)
    if (!finish_oldest()) return FALSE;
  return TRUE;
}

gboolean GstCudaGrayConverter::full() const {
  return backend_ && backend_->in_flight() >= max_in_flight_;
}

void GstCudaGrayConverter::discard_all() {
  if (backend_) backend_->discard_all();
}

cudagray::TimingStats GstCudaGrayConverter::stats(int *in_flight) const {
  *in_flight = backend_->in_flight();
  return backend_->stats();
}

gboolean GstCudaGrayConverter::describe(const GstVideoInfo *in, const GstCudaGrayFormat *format,
                                        const GstVideoInfo *out, cudagray::ScaleMethod method,
                                        gboolean add_borders) {
  const gboolean same_input =
      format == format_ && in->width == in_info_.width && in->height == in_info_.height;
  const cudagray::Conversion before = described_;
  in_info_ = *in;
  format_ = format;
  described_ = gst_cuda_gray_conversion_from_caps(in, format, out, method, add_borders);
  /* new output caps alone keep the frames' crop (start sets it from their
   * crop meta): the backend is sized for it once, and frames held for the
   * new caps convert again as they came */
  if (same_input) {
    described_.in_width = before.in_width;
    described_.in_height = before.in_height;
    described_.crop = before.crop;
  }
  std::string invalid;
  if (cudagray::valid_conversion(described_, &invalid)) return TRUE;
  GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION,
                    ("Cannot convert %dx%d %s to %dx%d gray: %s", in->width, in->height,
                     format->name, out->width, out->height, invalid.c_str()),
                    ("ask for an output size of 1 to %d pixels a side", cudagray::kMaxDimension));
  return FALSE;
}

gboolean GstCudaGrayConverter::passes_through(const GstVideoInfo *out) const {
  return format_->format == GST_VIDEO_INFO_FORMAT(out) && !described_.resamples();
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

gboolean GstCudaGrayConverter::transform_meta(GstBuffer *outbuf, GstMeta *meta, GstBuffer *inbuf) {
  static const gchar *const geometry_tags[] = {GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_SIZE_STR,
                                               GST_META_TAG_VIDEO_ORIENTATION_STR, NULL};
  const gchar *const *tags = gst_meta_api_type_get_tags(meta->info->api);
  for (const gchar *const *tag = tags; tag && *tag; tag++)
    if (!g_strv_contains(geometry_tags, *tag)) return FALSE;
  if (!tags || !*tags) return TRUE;
  return copy_geometry_meta(outbuf, meta, inbuf);
}

gboolean GstCudaGrayConverter::copy_geometry_meta(GstBuffer *outbuf, GstMeta *meta,
                                                  GstBuffer *inbuf) {
  /* metas are copied before inbuf is converted: its own crop, not the
   * description's yet; a buffer whose crop is wrong is refused there */
  gint width, height;
  cudagray::Rect crop;
  std::string why;
  if (!gst_cuda_gray_frame_geometry(inbuf, &in_info_, &width, &height, &crop, &why)) return FALSE;
  /* a crop applied is gone: the output is the crop; one that only marks a
   * region of a frame of the caps' size goes on, as through videoconvert */
  const gboolean crop_applied =
      width != GST_VIDEO_INFO_WIDTH(&in_info_) || height != GST_VIDEO_INFO_HEIGHT(&in_info_);
  if (meta->info->api == GST_VIDEO_CROP_META_API_TYPE && crop_applied) return FALSE;
  const cudagray::Conversion &c = described_;
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
  GstVideoMetaTransform scale = {&in_info_, &out};
  meta->info->transform_func(outbuf, meta, inbuf, gst_video_meta_transform_scale_get_quark(),
                             &scale);
  return FALSE;
}

gboolean GstCudaGrayConverter::resize() {
  std::string error;
  described_.max_in_flight = max_in_flight_;
  described_.inputs_on_device = cuda_input_;
  described_.outputs_on_device = cuda_output_;
  const cudagray::Conversion &c = described_;
  GST_DEBUG_OBJECT(
      element_, "sizing the backend for %dx%d frames, crop %dx%d at (%d, %d), to %dx%d", c.in_width,
      c.in_height, c.crop.width, c.crop.height, c.crop.x, c.crop.y, c.out_width, c.out_height);
  if (!backend_->configure(described_, &error)) {
    if (error != resize_error_)
      GST_ELEMENT_ERROR(
          element_, RESOURCE, NO_SPACE_LEFT,
          ("Could not prepare the %s backend for %dx%d %s frames: %s", backend_->name(),
           in_info_.width, in_info_.height, format_->name, error.c_str()),
          ("free GPU memory, use smaller frames, or set backend=cpu"));
    resize_error_ = error;
    return FALSE;
  }
  resize_error_.clear();
  return TRUE;
}

int GstCudaGrayConverter::set_frames_in_flight(guint requested, gboolean passthrough,
                                               gboolean live) {
  const int automatic = live ? 1 : needs_.auto_in_flight;
  max_in_flight_ =
      passthrough ? 1 : MIN(requested > 0 ? (int)requested : automatic, needs_.max_in_flight);
  return max_in_flight_;
}

gboolean GstCudaGrayConverter::set_memory(gboolean cuda_input, gboolean cuda_output) {
  cuda_input_ = cuda_input;
  cuda_output_ = cuda_output;
  if (cuda_input_ && !needs_.reads_device_memory) {
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION, ("CUDA memory input needs the CUDA backend"),
                      ("backend=cpu cannot read memory:CUDAMemory; add cudadownload before "
                       "cudagray, or set backend=auto or cuda"));
    return FALSE;
  }
  if (!cuda_output_ || needs_.writes_device_memory) return TRUE;
  if (cpu_fallback_reason_.empty())
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION, ("CUDA memory output needs the CUDA backend"),
                      ("backend=cpu cannot write memory:CUDAMemory; add cudaupload after "
                       "cudagray, or set backend=auto or cuda"));
  else
    GST_ELEMENT_ERROR(element_, CORE, NEGOTIATION,
                      ("CUDA memory output needs the CUDA backend, and backend=auto converts on "
                       "the CPU: %s",
                       cpu_fallback_reason_.c_str()),
                      ("ask for gray in system memory after cudagray (or add cudaupload), "
                       "or make a CUDA device usable"));
  return FALSE;
}

void GstCudaGrayConverter::offer_input_pool(GstQuery *query) {
  if (gst_query_get_n_allocation_pools(query) > 0) return;
  GstCaps *caps;
  gst_query_parse_allocation(query, &caps, NULL);
  if (caps && gst_cuda_gray_caps_in_cuda_memory(caps))
    gst_cuda_gray_offer_input_pool(context_, query, caps, max_in_flight_ + 1);
  else
    gst_cuda_gray_add_host_pool(query, host_, max_in_flight_ + 1);
}

gboolean GstCudaGrayConverter::decide_output_pool(GstQuery *query) {
  std::string why;
  if (cuda_output_ &&
      !gst_cuda_gray_decide_output_pool(context_, query, max_in_flight_ + 1, &why)) {
    GST_ELEMENT_ERROR(element_, RESOURCE, NO_SPACE_LEFT,
                      ("Could not set up gray output in CUDA memory: %s", why.c_str()),
                      ("free GPU memory, or ask for gray video/x-raw in system "
                       "memory after cudagray"));
    return FALSE;
  }
  if (!cuda_output_ && gst_query_get_n_allocation_pools(query) == 0)
    gst_cuda_gray_add_host_pool(query, host_, max_in_flight_ + 1);
  return TRUE;
}

GstFlowReturn GstCudaGrayConverter::refuse_input(const std::string &why) {
  GST_ELEMENT_ERROR(element_, STREAM, FORMAT,
                    ("Input buffer does not hold a %dx%d %s frame: %s", in_info_.width,
                     in_info_.height, format_->name, why.c_str()),
                    ("upstream sent a buffer that does not match the caps it negotiated"));
  return GST_FLOW_ERROR;
}

/* Luma's gray is the luma itself: weights chosen away from the default
 * would silently change nothing, so say so, once per run. */
void GstCudaGrayConverter::warn_if_weights_unused(const cudagray::Weights &weights) {
  const cudagray::Weights standard = cudagray::standard_weights(cudagray::Matrix::BT601);
  if (cudagray::layout_info(format_->layout).family != cudagray::LayoutFamily::Luma ||
      warned_weights_unused_ ||
      (weights.r == standard.r && weights.g == standard.g && weights.b == standard.b))
    return;
  warned_weights_unused_ = true;
  GST_ELEMENT_WARNING(
      element_, LIBRARY, SETTINGS,
      ("matrix and weights do not apply to %s input: its gray is the luma, %s", format_->name,
       described_.limited_range ? "expanded from limited range" : "taken as it is"),
      ("to apply them, convert to RGB before cudagray: "
       "videoconvert ! video/x-raw,format=RGBx ! cudagray"));
}

GstFlowReturn GstCudaGrayConverter::convert(GstBuffer *inbuf, GstBuffer *outbuf,
                                            const cudagray::Weights &weights,
                                            GstCudaGrayOutputItem *item) {
  std::string error;
  bool crop_changed = false;
  if (!gst_cuda_gray_frame_crop(inbuf, &in_info_, &described_, &crop_changed, &error))
    return refuse_input(error);
  /* a new crop meta: what is held leaves first (so frames held all have
   * the crop described, and those converted again keep it) */
  if (crop_changed) {
    GST_INFO_OBJECT(element_, "input crop %dx%d at (%d, %d) of a %dx%d frame",
                    described_.crop.width, described_.crop.height, described_.crop.x,
                    described_.crop.y, described_.in_width, described_.in_height);
    return GST_CUDA_GRAY_FLOW_DRAIN_FIRST;
  }
  auto frame = std::make_unique<GstCudaGrayFrame>();
  switch (frame->map(context_, inbuf, &in_info_, described_, outbuf, cuda_output_, &error)) {
    case GST_CUDA_GRAY_MAP_OK: break;
    case GST_CUDA_GRAY_MAP_OTHER_DEVICE:
      GST_ELEMENT_ERROR(element_, RESOURCE, SETTINGS, ("%s", error.c_str()),
                        ("unset cuda-device-id, or put upstream's CUDA elements on the same "
                         "device"));
      return GST_FLOW_ERROR;
    case GST_CUDA_GRAY_MAP_BAD_INPUT: return refuse_input(error);
    case GST_CUDA_GRAY_MAP_BAD_OUTPUT:
      GST_ELEMENT_ERROR(element_, STREAM, FAILED, ("Could not map the output buffer for writing"),
                        ("%s", error.c_str()));
      return GST_FLOW_ERROR;
  }
  const cudagray::InputFrame &in = frame->input();
  if (cuda_input_ && !in.on_device) {
    /* CUDA memory of another context: the backend was sized for frames on
     * the GPU; from now on it uploads host mappings, with buffers of its own */
    GST_INFO_OBJECT(element_, "CUDA memory input of another CUDA context: reading host mappings");
    cuda_input_ = false;
    return GST_CUDA_GRAY_FLOW_DRAIN_FIRST;
  }
  warn_if_weights_unused(weights);
  if (!backend_->submit(in, frame->output(), weights, &error)) {
    post_backend_error("start converting a frame", error);
    return GST_FLOW_ERROR;
  }
  frame->submitted(backend_.get());
  *item = GstCudaGrayOutputItem(std::move(frame));
  return GST_FLOW_OK;
}

GstFlowReturn GstCudaGrayConverter::start(GstBuffer *inbuf, bool discont,
                                          const cudagray::Weights &weights,
                                          GstCudaGrayOutputItem *item) {
  std::string error;
  if (gst_base_transform_is_passthrough(trans_)) {
    /* gray leaves untouched, but only if it holds the frame */
    if (!gst_cuda_gray_frame_check(inbuf, &in_info_, format_->layout, &error)) {
      gst_buffer_unref(inbuf);
      return refuse_input(error);
    }
    if (discont && !GST_BUFFER_IS_DISCONT(inbuf)) {
      inbuf = gst_buffer_make_writable(inbuf);
      GST_BUFFER_FLAG_SET(inbuf, GST_BUFFER_FLAG_DISCONT);
    }
    *item = GstCudaGrayOutputItem::ready(inbuf);
    return GST_FLOW_OK;
  }
  GstBuffer *out = NULL;
  /* GstBaseTransform's: a buffer of the pool decided, with the input's
   * timestamps, flags and metas */
  GstFlowReturn ret =
      GST_BASE_TRANSFORM_GET_CLASS(trans_)->prepare_output_buffer(trans_, inbuf, &out);
  if (ret == GST_FLOW_OK) {
    if (discont) /* out is ours alone, from the pool */
      GST_BUFFER_FLAG_SET(out, GST_BUFFER_FLAG_DISCONT);
    ret = convert(inbuf, out, weights, item);
  } else if (ret != GST_FLOW_FLUSHING) {
    GST_ELEMENT_ERROR(element_, RESOURCE, NO_SPACE_LEFT,
                      ("Could not get an output buffer: %s", gst_flow_get_name(ret)),
                      ("the buffer pool could not allocate; free host memory"));
  }
  gst_clear_buffer(&out);
  if (ret != GST_CUDA_GRAY_FLOW_DRAIN_FIRST) gst_buffer_unref(inbuf);
  return ret;
}
