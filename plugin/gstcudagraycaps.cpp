// SPDX-License-Identifier: LGPL-2.1-or-later
/* What cudagray takes and gives: pad templates and transform_caps, from the
 * format table (gstcudagrayformats.cpp), and the input frame's description. */
#include "gstcudagraycaps.h"

#include "gstcudagraycontext.h"

#define SIZES_AND_RATES                                       \
  "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], " \
  "framerate = (fraction) [ 0, MAX ]"

/* The table's formats of one kind (and, with cuda_only, those it takes in
 * CUDA memory) as a caps format list. */
static void set_formats(GstStructure *s, GstCudaGrayFormatKind kind, gboolean cuda_only) {
  guint n;
  const GstCudaGrayFormat *formats = gst_cuda_gray_formats(&n);
  GValue list = G_VALUE_INIT, name = G_VALUE_INIT;
  gst_value_list_init(&list, n);
  g_value_init(&name, G_TYPE_STRING);
  for (guint i = 0; i < n; i++) {
    if (formats[i].kind != kind || (cuda_only && !formats[i].cuda_memory)) continue;
    g_value_set_static_string(&name, formats[i].name);
    gst_value_list_append_value(&list, &name);
  }
  g_value_unset(&name);
  gst_structure_take_value(s, "format", &list);
}

/* The converted formats GStreamer's CUDA elements carry, in CUDA memory. */
static GstStructure *cuda_inputs(const GstStructure *sizes) {
  GstStructure *on_device = gst_structure_copy(sizes);
  gst_structure_set_name(on_device, "video/x-raw");
  set_formats(on_device, GST_CUDA_GRAY_KIND_CONVERTED, TRUE);
  return on_device;
}

/* Every input in system memory for output of the given sizes and rates, in
 * order of preference: converted formats, Bayer, then (gray_too) gray,
 * passed through or re-scaled. */
static GstCaps *system_inputs(const GstStructure *sizes, gboolean gray_too) {
  GstCaps *caps = gst_caps_new_empty();
  GstStructure *converted = gst_structure_copy(sizes);
  gst_structure_set_name(converted, "video/x-raw");
  set_formats(converted, GST_CUDA_GRAY_KIND_CONVERTED, FALSE);
  caps = gst_caps_merge_structure(caps, converted);
  GstStructure *bayer = gst_structure_copy(sizes);
  gst_structure_set_name(bayer, "video/x-bayer");
  set_formats(bayer, GST_CUDA_GRAY_KIND_BAYER, FALSE);
  caps = gst_caps_merge_structure(caps, bayer);
  if (gray_too) {
    GstStructure *gray = gst_structure_copy(sizes);
    gst_structure_set_name(gray, "video/x-raw");
    set_formats(gray, GST_CUDA_GRAY_KIND_GRAY, FALSE);
    caps = gst_caps_merge_structure(caps, gray);
  }
  return caps;
}

/* Every input for output of the given sizes and rates: those already in
 * CUDA memory first (an upstream that can keep frames there then does). */
static GstCaps *inputs_for(const GstStructure *sizes, gboolean cuda_input, gboolean gray_too) {
  GstCaps *caps = gst_caps_new_empty();
  if (cuda_input)
    caps = gst_caps_merge_structure_full(
        caps, cuda_inputs(sizes),
        gst_caps_features_new(GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
  return gst_caps_merge(caps, system_inputs(sizes, gray_too));
}

/* Gray out for input of the given sizes and rates: system memory, then CUDA
 * memory when the backend writes there. */
static GstCaps *outputs_for(const GstStructure *sizes, gboolean cuda_output) {
  GstStructure *gray = gst_structure_copy(sizes);
  gst_structure_set_name(gray, "video/x-raw");
  GstCaps *formats =
      gst_caps_from_string("video/x-raw, format = { " GST_CUDA_GRAY_OUTPUT_FORMATS " }");
  gst_structure_set_value(gray, "format",
                          gst_structure_get_value(gst_caps_get_structure(formats, 0), "format"));
  gst_caps_unref(formats);
  GstCaps *caps = gst_caps_new_empty();
  if (cuda_output)
    caps = gst_caps_merge_structure_full(
        caps, gst_structure_copy(gray),
        gst_caps_features_new(GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
  return gst_caps_merge(gst_caps_merge_structure(gst_caps_new_empty(), gray), caps);
}

/* Whether s's format is fixed to a gray one: passed through or re-scaled in
 * system memory only. */
static gboolean fixed_gray(const GstStructure *s) {
  const gchar *name = gst_structure_get_string(s, "format");
  const GstCudaGrayFormat *format =
      name && gst_structure_has_name(s, "video/x-raw")
          ? gst_cuda_gray_format_for_video(gst_video_format_from_string(name))
          : NULL;
  return format && format->kind == GST_CUDA_GRAY_KIND_GRAY;
}

static GstStructure *template_sizes(void) {
  return gst_structure_from_string("video/x-raw, " SIZES_AND_RATES, NULL);
}

GstCaps *gst_cuda_gray_sink_template_caps(std::string *cuda_off) {
  /* system memory first, as in every template */
  GstStructure *sizes = template_sizes();
  GstCaps *caps = system_inputs(sizes, TRUE);
  if (gst_cuda_gray_cuda_memory_usable(cuda_off))
    caps = gst_caps_merge_structure_full(
        caps, cuda_inputs(sizes),
        gst_caps_features_new(GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY, NULL));
  gst_structure_free(sizes);
  return caps;
}

GstCaps *gst_cuda_gray_src_template_caps(void) {
  std::string unusable;
  GstStructure *sizes = template_sizes();
  GstCaps *caps = outputs_for(sizes, gst_cuda_gray_cuda_memory_usable(&unusable));
  gst_structure_free(sizes);
  return caps;
}

gboolean gst_cuda_gray_caps_in_cuda_memory(GstCaps *caps) {
  GstCapsFeatures *features = gst_caps_get_features(caps, 0);
  return features && gst_caps_features_contains(features, GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY);
}

gboolean gst_cuda_gray_input_from_caps(GstCaps *caps, GstVideoInfo *info,
                                       const GstCudaGrayFormat **format) {
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  if (!gst_structure_has_name(s, "video/x-bayer")) {
    if (!gst_video_info_from_caps(info, caps)) return FALSE;
    *format = gst_cuda_gray_format_for_video(GST_VIDEO_INFO_FORMAT(info));
    return *format != NULL;
  }
  /* GstVideoInfo knows no Bayer: gray of its geometry, one sample a pixel
   * (a byte, or a 16-bit word) in rows of a multiple of 4 samples, as
   * bayer2rgb and rgb2bayer lay them out */
  gint width, height, fps_n = 0, fps_d = 1;
  *format = gst_cuda_gray_format_for_bayer(gst_structure_get_string(s, "format"));
  if (!*format || !gst_structure_get_int(s, "width", &width) ||
      !gst_structure_get_int(s, "height", &height) || width < 1 || height < 1)
    return FALSE;
  gst_structure_get_fraction(s, "framerate", &fps_n, &fps_d);
  const gint sample_bytes = cudagray::layout_info((*format)->layout).group_bytes;
  if (width > G_MAXINT / 2 / sample_bytes) return FALSE;
  gst_video_info_set_format(
      info, sample_bytes == 2 ? GST_VIDEO_FORMAT_GRAY16_LE : GST_VIDEO_FORMAT_GRAY8, width, height);
  GST_VIDEO_INFO_PLANE_STRIDE(info, 0) = GST_ROUND_UP_4(width) * sample_bytes;
  GST_VIDEO_INFO_SIZE(info) = (gsize)GST_ROUND_UP_4(width) * sample_bytes * height;
  info->fps_n = fps_n;
  info->fps_d = fps_d;
  return TRUE;
}

GstCaps *gst_cuda_gray_caps_transform(GstPadDirection direction, GstCaps *caps, GstCaps *filter,
                                      gboolean cuda_input, gboolean cuda_output) {
  std::string unusable;
  const gboolean usable = gst_cuda_gray_cuda_memory_usable(&unusable);
  GstCaps *result = gst_caps_new_empty();
  for (guint i = 0; i < gst_caps_get_size(caps); i++) {
    GstCapsFeatures *features = gst_caps_get_features(caps, i);
    const gboolean system_memory =
        !features || gst_caps_features_is_any(features) ||
        gst_caps_features_is_equal(features, GST_CAPS_FEATURES_MEMORY_SYSTEM_MEMORY);
    const gboolean cuda_memory =
        features && gst_caps_features_contains(features, GST_CUDA_GRAY_CAPS_FEATURE_CUDA_MEMORY);
    if (!system_memory && !cuda_memory) continue;
    /* gray leaves in CUDA memory only when the backend writes there */
    if (direction == GST_PAD_SRC && cuda_memory && !(cuda_output && usable)) continue;
    const GstStructure *in = gst_caps_get_structure(caps, i);
    /* the rates are kept; the size and pixel aspect ratio are free, as in
     * videoconvertscale (fixate_caps picks them), and what the format
     * implies is not kept */
    GstStructure *sizes = gst_structure_copy(in);
    gst_structure_remove_fields(sizes, "format", "colorimetry", "chroma-site", NULL);
    gst_structure_set(sizes, "width", GST_TYPE_INT_RANGE, 1, cudagray::kMaxDimension, "height",
                      GST_TYPE_INT_RANGE, 1, cudagray::kMaxDimension, NULL);
    if (gst_structure_has_field(sizes, "pixel-aspect-ratio"))
      gst_structure_set(sizes, "pixel-aspect-ratio", GST_TYPE_FRACTION_RANGE, 1, G_MAXINT, G_MAXINT,
                        1, NULL);
    /* No colorimetry on gray: GRAY8 then defaults to full range, and
     * videoconvert 1.22 mishandles an explicit "1:0:0:0" (it tints gray). */
    GstCaps *other = direction == GST_PAD_SINK
                         ? outputs_for(sizes, cuda_output && usable && !fixed_gray(in))
                         : inputs_for(sizes, cuda_input && usable, system_memory);
    gst_structure_free(sizes);
    result = gst_caps_merge(result, other);
  }
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full(filter, result, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(result);
    result = tmp;
  }
  return result;
}

/* The display aspect ratio of a width x height picture of pixel aspect
 * ratio par_n/par_d, reduced; FALSE on overflow. */
static gboolean display_ratio(gint width, gint height, gint par_n, gint par_d, gint *dar_n,
                              gint *dar_d) {
  return gst_util_fraction_multiply(width, height, par_n, par_d, dar_n, dar_d);
}

/* Picks the output's width and height (and pixel-aspect-ratio, where free) in
 * out so that the picture keeps in's display aspect ratio, as videoscale
 * does: a fixed width gives the height, a fixed height the width, and with
 * neither, the input's height is kept if it can be, else its width. Fields
 * that are fixed stay: set_caps letterboxes when they cannot keep the ratio
 * (add-borders). */
static void fixate_size(const GstStructure *in, GstStructure *out) {
  gint from_w, from_h, from_par_n = 1, from_par_d = 1, dar_n, dar_d;
  if (!gst_structure_get_int(in, "width", &from_w) || !gst_structure_get_int(in, "height", &from_h))
    return;
  gst_structure_get_fraction(in, "pixel-aspect-ratio", &from_par_n, &from_par_d);
  if (!display_ratio(from_w, from_h, from_par_n, from_par_d, &dar_n, &dar_d)) return;
  gint w = 0, h = 0, par_n = 1, par_d = 1;
  const gboolean w_fixed = gst_structure_get_int(out, "width", &w);
  const gboolean h_fixed = gst_structure_get_int(out, "height", &h);
  if (gst_structure_has_field(out, "pixel-aspect-ratio") &&
      !gst_structure_get_fraction(out, "pixel-aspect-ratio", &par_n, &par_d)) {
    /* the one ratio that keeps the picture's shape at a size downstream fixed,
     * else the input's */
    gint want_n = from_par_n, want_d = from_par_d;
    if (w_fixed && h_fixed && !gst_util_fraction_multiply(dar_n, dar_d, h, w, &want_n, &want_d))
      want_n = from_par_n, want_d = from_par_d;
    gst_structure_fixate_field_nearest_fraction(out, "pixel-aspect-ratio", want_n, want_d);
    gst_structure_get_fraction(out, "pixel-aspect-ratio", &par_n, &par_d);
  }
  if (w_fixed && h_fixed) return;
  /* width = height * dar / par, height = width * par / dar */
  auto width_for = [&](gint height) {
    return (gint)MIN(G_MAXINT, gst_util_uint64_scale_round(height, (guint64)dar_n * par_d,
                                                           (guint64)dar_d * par_n));
  };
  auto height_for = [&](gint width) {
    return (gint)MIN(G_MAXINT, gst_util_uint64_scale_round(width, (guint64)dar_d * par_n,
                                                           (guint64)dar_n * par_d));
  };
  if (w_fixed) {
    gst_structure_fixate_field_nearest_int(out, "height", MAX(1, height_for(w)));
  } else if (h_fixed) {
    gst_structure_fixate_field_nearest_int(out, "width", MAX(1, width_for(h)));
  } else {
    /* the input's height if the width it needs is allowed, else its width */
    GstStructure *trial = gst_structure_copy(out);
    gst_structure_fixate_field_nearest_int(trial, "height", from_h);
    gint tried_h = 0, tried_w = 0;
    gst_structure_get_int(trial, "height", &tried_h);
    gst_structure_fixate_field_nearest_int(trial, "width", MAX(1, width_for(tried_h)));
    gst_structure_get_int(trial, "width", &tried_w);
    if (tried_h == from_h && tried_w == width_for(from_h)) {
      gst_structure_set(out, "width", G_TYPE_INT, tried_w, "height", G_TYPE_INT, tried_h, NULL);
    } else {
      gst_structure_fixate_field_nearest_int(out, "width", from_w);
      gst_structure_get_int(out, "width", &w);
      gst_structure_fixate_field_nearest_int(out, "height", MAX(1, height_for(w)));
    }
    gst_structure_free(trial);
  }
}

GstCaps *gst_cuda_gray_fixate_caps(GstBaseTransform *trans, GstPadDirection direction,
                                   GstCaps *caps, GstCaps *othercaps) {
  othercaps = gst_caps_make_writable(gst_caps_truncate(othercaps));
  if (direction == GST_PAD_SINK && !gst_caps_is_empty(othercaps))
    fixate_size(gst_caps_get_structure(caps, 0), gst_caps_get_structure(othercaps, 0));
  othercaps = gst_caps_fixate(othercaps);
  GST_DEBUG_OBJECT(trans, "fixated to %" GST_PTR_FORMAT, othercaps);
  return othercaps;
}

cudagray::Conversion gst_cuda_gray_conversion_from_caps(const GstVideoInfo *in_info,
                                                        const GstCudaGrayFormat *format,
                                                        const GstVideoInfo *out_info,
                                                        cudagray::ScaleMethod method,
                                                        gboolean add_borders) {
  const int out_depth = GST_VIDEO_INFO_FORMAT(out_info) == GST_VIDEO_FORMAT_GRAY16_LE ? 16 : 8;
  cudagray::Conversion c = cudagray::same_size_conversion(
      format->layout, GST_VIDEO_INFO_WIDTH(in_info), GST_VIDEO_INFO_HEIGHT(in_info), out_depth);
  c.sample_bits = format->sample_bits;
  c.limited_range = format->kind == GST_CUDA_GRAY_KIND_CONVERTED &&
                    cudagray::layout_info(format->layout).family == cudagray::LayoutFamily::Luma &&
                    in_info->colorimetry.range != GST_VIDEO_COLOR_RANGE_0_255;
  c.method = method;
  const gint out_w = GST_VIDEO_INFO_WIDTH(out_info), out_h = GST_VIDEO_INFO_HEIGHT(out_info);
  c.out_width = out_w;
  c.out_height = out_h;
  c.dest = cudagray::Rect{0, 0, out_w, out_h};
  gint in_dar_n, in_dar_d, out_dar_n, out_dar_d;
  if (!add_borders || out_w < 1 || out_h < 1 ||
      !display_ratio(c.in_width, c.in_height, GST_VIDEO_INFO_PAR_N(in_info),
                     GST_VIDEO_INFO_PAR_D(in_info), &in_dar_n, &in_dar_d) ||
      !display_ratio(out_w, out_h, GST_VIDEO_INFO_PAR_N(out_info), GST_VIDEO_INFO_PAR_D(out_info),
                     &out_dar_n, &out_dar_d) ||
      (gint64)in_dar_n * out_dar_d == (gint64)out_dar_n * in_dar_d)
    return c;
  /* the largest picture of the input's display ratio the output holds,
   * centred: full width when the input is the wider, else full height */
  const gint64 par_n = GST_VIDEO_INFO_PAR_N(out_info), par_d = GST_VIDEO_INFO_PAR_D(out_info);
  if ((gint64)in_dar_n * out_dar_d > (gint64)out_dar_n * in_dar_d) {
    const gint h = (gint)gst_util_uint64_scale_round(out_w, par_n * in_dar_d, par_d * in_dar_n);
    c.dest.height = CLAMP(h, 1, out_h);
    c.dest.y = (out_h - c.dest.height) / 2;
  } else {
    const gint w = (gint)gst_util_uint64_scale_round(out_h, par_d * in_dar_n, par_n * in_dar_d);
    c.dest.width = CLAMP(w, 1, out_w);
    c.dest.x = (out_w - c.dest.width) / 2;
  }
  return c;
}
