// SPDX-License-Identifier: LGPL-2.1-or-later
/* The frame bridge: GstBuffers to kernels frames, in system or CUDA memory,
 * with the explicit checks that name what is wrong with a buffer that does
 * not hold its frame. */
#include "gstcudagrayframe.h"

gboolean gst_cuda_gray_frame_geometry(GstBuffer *buffer, const GstVideoInfo *info, gint *width,
                                      gint *height, cudagray::Rect *crop, std::string *why) {
  *width = GST_VIDEO_INFO_WIDTH(info);
  *height = GST_VIDEO_INFO_HEIGHT(info);
  *crop = cudagray::Rect{0, 0, *width, *height};
  const GstVideoCropMeta *c = gst_buffer_get_video_crop_meta(buffer);
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  /* a frame of the caps' size is the frame they describe: a crop meta on
   * it only marks a region, and the whole frame converts, as videoconvert
   * reads it */
  if (!c || !meta || ((gint)meta->width == *width && (gint)meta->height == *height)) return TRUE;
  const std::string rect = std::to_string(c->width) + "x" + std::to_string(c->height) + " at (" +
                           std::to_string(c->x) + ", " + std::to_string(c->y) + ")";
  const std::string frame = std::to_string(meta->width) + "x" + std::to_string(meta->height);
  if ((guint64)c->width != (guint64)*width || (guint64)c->height != (guint64)*height)
    *why = "its crop meta's rectangle (" + rect + ") is not the caps' size " +
           std::to_string(*width) + "x" + std::to_string(*height);
  else if ((guint64)c->x + c->width > meta->width || (guint64)c->y + c->height > meta->height)
    *why = "its crop meta's rectangle (" + rect + ") is not inside its " + frame + " frame";
  else if (meta->width > (guint)cudagray::kMaxDimension ||
           meta->height > (guint)cudagray::kMaxDimension)
    *why = "its " + frame + " frame is larger than " + std::to_string(cudagray::kMaxDimension) +
           " pixels a side";
  else {
    *width = (gint)meta->width;
    *height = (gint)meta->height;
    *crop = cudagray::Rect{(int)c->x, (int)c->y, (int)c->width, (int)c->height};
    return TRUE;
  }
  return FALSE;
}

gboolean gst_cuda_gray_frame_crop(GstBuffer *buffer, const GstVideoInfo *info,
                                  cudagray::Conversion *c, bool *changed, std::string *why) {
  gint width, height;
  cudagray::Rect crop;
  if (!gst_cuda_gray_frame_geometry(buffer, info, &width, &height, &crop, why)) return FALSE;
  *changed = width != c->in_width || height != c->in_height || !(crop == c->crop);
  c->in_width = width;
  c->in_height = height;
  c->crop = crop;
  return TRUE;
}

gboolean gst_cuda_gray_frame_check(GstBuffer *buffer, const GstVideoInfo *info,
                                   cudagray::PixelLayout layout, std::string *why) {
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buffer);
  const cudagray::LayoutInfo &layout_desc = cudagray::layout_info(layout);
  const guint n_planes = layout_desc.planes; /* those read (YUV: the luma plane only) */
  const gsize size = gst_buffer_get_size(buffer);
  gint width, height;
  cudagray::Rect crop;
  if (!gst_cuda_gray_frame_geometry(buffer, info, &width, &height, &crop, why)) return FALSE;
  gchar *text = NULL;

  /* GStreamer has no format for a Bayer mosaic: its video meta (ENCODED from
   * libcamerasrc) says only the frame's size and where its one plane is */
  const gboolean mosaic = layout_desc.family == cudagray::LayoutFamily::Bayer;
  const guint planes = mosaic ? 1 : GST_VIDEO_INFO_N_PLANES(info);
  if (meta &&
      ((!mosaic && meta->format != GST_VIDEO_INFO_FORMAT(info)) || meta->n_planes != planes ||
       (gint)meta->width != width || (gint)meta->height != height)) {
    /* to_string takes no UNKNOWN, and gives NULL for values past the last */
    const gchar *name =
        meta->format == GST_VIDEO_FORMAT_UNKNOWN ? NULL : gst_video_format_to_string(meta->format);
    *why = std::string("its video meta describes a ") + std::to_string(meta->width) + "x" +
           std::to_string(meta->height) + " " + (name ? name : "UNKNOWN") + " frame";
    if (meta->n_planes != planes)
      *why += " with " + std::to_string(meta->n_planes) + " plane(s), the caps " +
              std::to_string(planes);
    return FALSE;
  }
  const guint64 row_bytes = layout_desc.row_bytes(width);
  for (guint p = 0; p < n_planes && !text; p++) {
    const gsize offset = meta ? meta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(info, p);
    const gint stride = meta ? meta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(info, p);
    const guint64 span = layout_desc.plane_bytes(width, height, (gsize)MAX(stride, 0));
    if (layout_desc.tiled() && !layout_desc.tiles_cover(width, height, (gsize)MAX(stride, 0)))
      text = g_strdup_printf(
          "plane %u's tiles (%u by %u of them, stride %d) do not cover its "
          "%dx%d pixels in the format's order",
          p, GST_VIDEO_TILE_X_TILES(stride), GST_VIDEO_TILE_Y_TILES(stride), stride, width, height);
    else if (stride < 0)
      text = g_strdup_printf(
          "plane %u has a negative stride (%d): cudagray "
          "takes rows top to bottom only",
          p, stride);
    else if (!layout_desc.tiled() && (guint64)stride < row_bytes)
      text = g_strdup_printf(
          "plane %u has a stride of %d bytes, shorter "
          "than its %" G_GUINT64_FORMAT "-byte rows",
          p, stride, row_bytes);
    else if (offset > size)
      text = g_strdup_printf("plane %u starts at byte %" G_GSIZE_FORMAT
                             ", past the end of the %" G_GSIZE_FORMAT "-byte buffer",
                             p, offset, size);
    else if (span > size - offset)
      text = g_strdup_printf("plane %u (offset %" G_GSIZE_FORMAT
                             ", stride %d)"
                             " needs %" G_GUINT64_FORMAT " bytes, the buffer has %" G_GSIZE_FORMAT,
                             p, offset, stride, offset + span, size);
  }
  if (!text) return TRUE;
  *why = text;
  g_free(text);
  return FALSE;
}

void gst_cuda_gray_post_backend_error(GstElement *element, const char *backend, const char *doing,
                                      const std::string &why) {
  GST_ELEMENT_ERROR(element, RESOURCE, FAILED,
                    ("The %s backend failed to %s: %s", backend, doing, why.c_str()),
                    ("check the GPU with nvidia-smi, or set backend=cpu"));
}

GstCudaGrayFrame::~GstCudaGrayFrame() { unmap(); }

bool GstCudaGrayFrame::finish(std::string *why) {
  if (!backend_) return true;
  const bool done = backend_->finish_oldest(why);
  backend_ = nullptr;
  return done;
}

GstCudaGrayMapResult GstCudaGrayFrame::map(GstCudaGrayContext *context, GstBuffer *inbuf,
                                           const GstVideoInfo *info,
                                           const cudagray::Conversion &conversion,
                                           GstBuffer *outbuf, gboolean cuda_output,
                                           std::string *why) {
  const GstCudaGrayMapResult in = map_input(context, inbuf, info, conversion.layout, why);
  if (in != GST_CUDA_GRAY_MAP_OK) return in;
  return map_output(context, outbuf, conversion, cuda_output, why);
}

GstCudaGrayMapResult GstCudaGrayFrame::map_input(GstCudaGrayContext *context, GstBuffer *inbuf,
                                                 const GstVideoInfo *info,
                                                 cudagray::PixelLayout layout, std::string *why) {
  GstMapFlags in_flags = GST_MAP_READ;
  std::string mismatch;
  const gboolean in_on_device =
      context && gst_cuda_gray_context_reads_on_device(context, inbuf, &in_flags, &mismatch);
  if (!mismatch.empty()) {
    *why = mismatch;
    return GST_CUDA_GRAY_MAP_OTHER_DEVICE;
  }
  if (!gst_cuda_gray_frame_check(inbuf, info, layout, why)) return GST_CUDA_GRAY_MAP_BAD_INPUT;
  input_ = cudagray::InputFrame();
  if (cudagray::layout_info(layout).family == cudagray::LayoutFamily::Bayer) {
    /* gst_video_frame_map wants the video meta's format to be info's, and
     * a mosaic's is not (frame_check): its one plane is mapped as bytes */
    if (!gst_buffer_map(inbuf, &in_bytes_, in_flags)) {
      *why = "it could not be mapped for reading";
      return GST_CUDA_GRAY_MAP_BAD_INPUT;
    }
    in_bytes_buffer_ = gst_buffer_ref(inbuf);
    const GstVideoMeta *meta = gst_buffer_get_video_meta(inbuf);
    input_.plane[0] =
        in_bytes_.data + (meta ? meta->offset[0] : GST_VIDEO_INFO_PLANE_OFFSET(info, 0));
    input_.stride[0] = meta ? meta->stride[0] : GST_VIDEO_INFO_PLANE_STRIDE(info, 0);
  } else {
    if (!gst_video_frame_map(&in_, info, inbuf, in_flags)) {
      *why = "it could not be mapped for reading";
      return GST_CUDA_GRAY_MAP_BAD_INPUT;
    }
    in_mapped_ = true;
    for (gint p = 0; p < cudagray::layout_info(layout).planes; p++) {
      input_.plane[p] = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&in_, p));
      input_.stride[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&in_, p);
    }
  }
  input_.on_device = in_on_device;
  /* 1.24+: the producer may still be writing on its stream; the kernel
   * waits for it on the GPU, and inbuf stays mapped until the frame goes */
  if (in_on_device) input_.producer_stream = gst_cuda_gray_pending_writer_stream(inbuf);
  return GST_CUDA_GRAY_MAP_OK;
}

GstCudaGrayMapResult GstCudaGrayFrame::map_output(GstCudaGrayContext *context, GstBuffer *outbuf,
                                                  const cudagray::Conversion &conversion,
                                                  gboolean cuda_output, std::string *why) {
  GstMapFlags out_flags = GST_MAP_WRITE;
  if (out_mapped_) gst_video_frame_unmap(&out_);
  out_mapped_ = false;
  const gboolean out_on_device =
      context && gst_cuda_gray_context_writes_on_device(context, outbuf, &out_flags);
  GstVideoInfo gray;
  gst_video_info_set_format(
      &gray, conversion.out_depth == 16 ? GST_VIDEO_FORMAT_GRAY16_LE : GST_VIDEO_FORMAT_GRAY8,
      conversion.out_width, conversion.out_height);
  if (out_on_device != cuda_output || !gst_video_frame_map(&out_, &gray, outbuf, out_flags)) {
    *why = std::string("the output buffer is not ") +
           (cuda_output ? "CUDA memory of the element's CUDA context" : "system memory") +
           " that can be mapped for writing";
    return GST_CUDA_GRAY_MAP_BAD_OUTPUT;
  }
  out_mapped_ = true;
  output_discont_ = GST_BUFFER_IS_DISCONT(outbuf);
  output_ =
      cudagray::GrayFrame{static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&out_, 0)),
                          (size_t)GST_VIDEO_FRAME_PLANE_STRIDE(&out_, 0), out_on_device != FALSE};
  /* 1.24+: the output memory's stream waits for the kernel on the GPU */
  if (out_on_device) output_.consumer_stream = gst_cuda_gray_output_stream(outbuf);
  return GST_CUDA_GRAY_MAP_OK;
}

GstBuffer *GstCudaGrayFrame::release_output() {
  if (!out_mapped_) return NULL;
  GstBuffer *out = gst_buffer_ref(out_.buffer);
  gst_video_frame_unmap(&out_);
  out_mapped_ = false;
  if (output_.consumer_stream) gst_cuda_gray_mark_output_pending(out);
  return out;
}

void GstCudaGrayFrame::unmap() {
  if (in_mapped_) gst_video_frame_unmap(&in_);
  if (in_bytes_buffer_) gst_buffer_unmap(in_bytes_buffer_, &in_bytes_);
  gst_clear_buffer(&in_bytes_buffer_);
  if (out_mapped_) gst_video_frame_unmap(&out_);
  in_mapped_ = out_mapped_ = false;
}
