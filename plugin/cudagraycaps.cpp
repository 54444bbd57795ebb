// SPDX-License-Identifier: LGPL-2.1-or-later
/* What cudagray takes and gives: pad templates, transform_caps, and the
 * pixel layout of each converted format. */
#include "cudagraycaps.h"

#include "cudagraycontext.h"

/* Converted formats, in order of preference when upstream can offer several:
 * RGB family (luma computed), then YUV (luma plane copied or expanded). */
#define CONVERTED_FORMATS                                                       \
  "RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, ABGR, RGBP, BGRP, GBR, " \
  "I420, YV12, NV12, NV21, Y444, Y42B"

#define SIZES_AND_RATES                                       \
  "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], " \
  "framerate = (fraction) [ 0, MAX ]"

#define SYSTEM_MEMORY_SINK_CAPS \
  "video/x-raw, format = (string) { " CONVERTED_FORMATS ", GRAY8 }, " SIZES_AND_RATES
/* Frames already on the GPU (cudaupload, NVDEC decoders): no upload. Offered
 * only when cudagray_cuda_memory_usable says so. */
#define CUDA_MEMORY_SINK_CAPS                                                                  \
  "video/x-raw(" CUDAGRAY_CAPS_FEATURE_CUDA_MEMORY "), format = (string) { " CONVERTED_FORMATS \
  " }, " SIZES_AND_RATES

GstCaps *cudagray_sink_template_caps(std::string *cuda_off) {
  GstCaps *caps = gst_caps_from_string(SYSTEM_MEMORY_SINK_CAPS);
  if (cudagray_cuda_memory_usable(cuda_off))
    gst_caps_append(caps, gst_caps_from_string(CUDA_MEMORY_SINK_CAPS));
  return caps;
}

GstCaps *cudagray_src_template_caps(void) {
  std::string unusable;
  GstCaps *caps = gst_caps_from_string(
      "video/x-raw, format = (string) "
      "GRAY8, " SIZES_AND_RATES);
  if (cudagray_cuda_memory_usable(&unusable))
    gst_caps_append(caps, gst_caps_from_string("video/x-raw(" CUDAGRAY_CAPS_FEATURE_CUDA_MEMORY
                                               "), format = (string) GRAY8, " SIZES_AND_RATES));
  return caps;
}

gboolean cudagray_caps_in_cuda_memory(GstCaps *caps) {
  GstCapsFeatures *features = gst_caps_get_features(caps, 0);
  return features && gst_caps_features_contains(features, CUDAGRAY_CAPS_FEATURE_CUDA_MEMORY);
}

gboolean cudagray_layout_for_format(GstVideoFormat format, cudagray::PixelLayout *layout) {
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

GstCaps *cudagray_transform_caps(GstPadDirection direction, GstCaps *caps, GstCaps *filter,
                                 gboolean cuda_input, gboolean cuda_output) {
  std::string unusable;
  const gboolean usable = cudagray_cuda_memory_usable(&unusable);
  const gboolean offer_cuda = cuda_input && usable;
  const gboolean output_cuda = cuda_output && usable;
  GstCaps *result = gst_caps_new_empty();
  /* GRAY8 in CUDA memory for converted frames, after all of result */
  GstCaps *on_device = gst_caps_new_empty();
  GstCaps *passthrough = gst_caps_new_empty();
  GValue gray8 = G_VALUE_INIT;
  g_value_init(&gray8, G_TYPE_STRING);
  g_value_set_static_string(&gray8, "GRAY8");

  for (guint i = 0; i < gst_caps_get_size(caps); i++) {
    GstCapsFeatures *features = gst_caps_get_features(caps, i);
    const gboolean system_memory =
        !features || gst_caps_features_is_any(features) ||
        gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
    const gboolean cuda_memory =
        features && gst_caps_features_contains(features, CUDAGRAY_CAPS_FEATURE_CUDA_MEMORY);
    if (!system_memory && !cuda_memory) continue;
    /* GRAY8 leaves in CUDA memory only when the backend writes there */
    if (direction == GST_PAD_SRC && cuda_memory && !output_cuda) continue;
    const GstStructure *in = gst_caps_get_structure(caps, i);
    const GValue *format = gst_structure_get_value(in, "format");
    const gboolean fixed_gray8 = format && gst_value_compare(format, &gray8) == GST_VALUE_EQUAL;

    /* GRAY8 in CUDA memory is not taken: passthrough is system memory only */
    if (direction == GST_PAD_SINK && !system_memory && fixed_gray8) continue;
    if (direction == GST_PAD_SINK && system_memory) {
      if (!format || gst_value_can_intersect(format, &gray8)) {
        GstStructure *same = gst_structure_copy(in);
        gst_structure_set_value(same, "format", &gray8);
        gst_caps_append_structure(passthrough, same);
      }
      if (fixed_gray8) continue;
    }
    GstStructure *s = gst_structure_copy(in);
    gst_structure_remove_fields(s, "colorimetry", "chroma-site", NULL);
    if (direction == GST_PAD_SINK) {
      /* No colorimetry field: GRAY8 then defaults to full range, and
       * videoconvert 1.22 mishandles an explicit "1:0:0:0" (it tints gray). */
      gst_structure_set_value(s, "format", &gray8);
      if (output_cuda)
        on_device = gst_caps_merge_structure_full(
            on_device, gst_structure_copy(s),
            gst_caps_features_new(CUDAGRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
    } else {
      /* passthrough stays in system memory */
      if (system_memory) {
        GstStructure *same = gst_structure_copy(in);
        gst_structure_set_value(same, "format", &gray8);
        gst_caps_append_structure(passthrough, same);
      }
      GValue formats = G_VALUE_INIT;
      GValue name = G_VALUE_INIT;
      gst_value_list_init(&formats, 19);
      g_value_init(&name, G_TYPE_STRING);
      gchar **names = g_strsplit(CONVERTED_FORMATS, ", ", -1);
      for (gchar **n = names; *n; n++) {
        g_value_set_string(&name, *n);
        gst_value_list_append_value(&formats, &name);
      }
      g_strfreev(names);
      g_value_unset(&name);
      gst_structure_take_value(s, "format", &formats);
      /* the same formats already on the GPU, first: an upstream that can
       * keep frames there (NVDEC, cudaupload) then does; not for backend=cpu */
      if (offer_cuda)
        result = gst_caps_merge_structure_full(
            result, gst_structure_copy(s),
            gst_caps_features_new(CUDAGRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
    }
    result = gst_caps_merge_structure(result, s);
  }
  g_value_unset(&gray8);
  result = gst_caps_merge(result, on_device);
  result = gst_caps_merge(result, passthrough);

  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = tmp;
  }
  return result;
}
