// SPDX-License-Identifier: LGPL-2.1-or-later
/* The one format table (gstcudagrayformats.h). A new format is one row here,
 * plus a layout in kernels/ when none of the existing ones reads it. */
#include "gstcudagrayformats.h"

#include <string.h>

using cudagray::PixelLayout;

#define ROW(fmt, layout, kind, cuda) \
  { #fmt, GST_VIDEO_FORMAT_##fmt, PixelLayout::layout, GST_CUDA_GRAY_KIND_##kind, cuda, 0 }
#define BAYER(name, layout, bits) \
  { name, GST_VIDEO_FORMAT_UNKNOWN, PixelLayout::layout, GST_CUDA_GRAY_KIND_BAYER, FALSE, bits }
/* a 16-bit Bayer phase of bits bits, little- and big-endian: two rows */
#define BAYER16(phase, layout_phase, bits)                \
  BAYER(#phase #bits "le", Bayer16_##layout_phase, bits), \
      BAYER(#phase #bits "be", Bayer16BE_##layout_phase, bits)

static const GstCudaGrayFormat formats[] = {
    /* RGB, 8 bits a channel: gray from the weights */
    ROW(RGB, RGB, CONVERTED, TRUE),
    ROW(BGR, BGR, CONVERTED, TRUE),
    ROW(RGBx, RGBx, CONVERTED, TRUE),
    ROW(BGRx, BGRx, CONVERTED, TRUE),
    ROW(xRGB, xRGB, CONVERTED, TRUE),
    ROW(xBGR, xBGR, CONVERTED, TRUE),
    ROW(RGBA, RGBA, CONVERTED, TRUE),
    ROW(BGRA, BGRA, CONVERTED, TRUE),
    ROW(ARGB, ARGB, CONVERTED, TRUE),
    ROW(ABGR, ABGR, CONVERTED, TRUE),
    ROW(RGBP, RGBP, CONVERTED, TRUE),
    ROW(BGRP, BGRP, CONVERTED, TRUE),
    ROW(GBR, GBR, CONVERTED, TRUE),
    ROW(GBRA, GBR, CONVERTED, TRUE),
    /* RGB, 10 to 16 bits */
    ROW(GBR_10LE, GBR_10LE, CONVERTED, TRUE),
    ROW(GBR_12LE, GBR_12LE, CONVERTED, TRUE),
#if GST_CHECK_VERSION(1, 24, 0) /* GStreamer 1.24 added the format */
    ROW(GBR_16LE, GBR_16LE, CONVERTED, TRUE),
#endif
    ROW(RGB10A2_LE, RGB10A2_LE, CONVERTED, TRUE),
    ROW(BGR10A2_LE, BGR10A2_LE, CONVERTED, TRUE),
    /* YUV, 8 bits: gray is the luma */
    ROW(I420, Luma, CONVERTED, TRUE),
    ROW(YV12, Luma, CONVERTED, TRUE),
    ROW(NV12, Luma, CONVERTED, TRUE),
    ROW(NV21, Luma, CONVERTED, TRUE),
    ROW(Y444, Luma, CONVERTED, TRUE),
    ROW(Y42B, Luma, CONVERTED, TRUE),
    ROW(YUY2, Luma_Y0_2, CONVERTED, TRUE),
    ROW(YVYU, Luma_Y0_2, CONVERTED, FALSE),
    ROW(UYVY, Luma_Y1_2, CONVERTED, TRUE),
    ROW(AYUV, Luma_Y1_4, CONVERTED, FALSE),
    ROW(VUYA, Luma_Y2_4, CONVERTED, TRUE),
    /* YUV, 10 to 16 bits */
    ROW(P010_10LE, Luma10_Msb, CONVERTED, TRUE),
    ROW(P012_LE, Luma12_Msb, CONVERTED, TRUE),
    ROW(P016_LE, Luma16, CONVERTED, TRUE),
    ROW(I420_10LE, Luma10, CONVERTED, TRUE),
    ROW(I420_12LE, Luma12, CONVERTED, TRUE),
    ROW(I422_10LE, Luma10, CONVERTED, TRUE),
    ROW(I422_12LE, Luma12, CONVERTED, TRUE),
    ROW(Y444_10LE, Luma10, CONVERTED, TRUE),
    ROW(Y444_12LE, Luma12, CONVERTED, TRUE),
    ROW(Y444_16LE, Luma16, CONVERTED, TRUE),
    ROW(v210, Luma_v210, CONVERTED, FALSE),
    /* gray */
    ROW(GRAY8, Luma, GRAY, FALSE),
    ROW(GRAY16_LE, Luma16, GRAY, FALSE),
    ROW(GRAY16_BE, Luma16_BE, GRAY, FALSE),
    /* Bayer, 8 bits */
    BAYER("bggr", Bayer_BGGR, 8),
    BAYER("gbrg", Bayer_GBRG, 8),
    BAYER("grbg", Bayer_GRBG, 8),
    BAYER("rggb", Bayer_RGGB, 8),
#if GST_CHECK_VERSION(1, 24, 0) /* GStreamer 1.24 named these, and bayer2rgb took them */
    /* Bayer, 10 to 16 bits in 16-bit words */
    BAYER16(bggr, BGGR, 10),
    BAYER16(gbrg, GBRG, 10),
    BAYER16(grbg, GRBG, 10),
    BAYER16(rggb, RGGB, 10),
    BAYER16(bggr, BGGR, 12),
    BAYER16(gbrg, GBRG, 12),
    BAYER16(grbg, GRBG, 12),
    BAYER16(rggb, RGGB, 12),
    BAYER16(bggr, BGGR, 14),
    BAYER16(gbrg, GBRG, 14),
    BAYER16(grbg, GRBG, 14),
    BAYER16(rggb, RGGB, 14),
    BAYER16(bggr, BGGR, 16),
    BAYER16(gbrg, GBRG, 16),
    BAYER16(grbg, GRBG, 16),
    BAYER16(rggb, RGGB, 16),
#endif
};

const GstCudaGrayFormat *gst_cuda_gray_formats(guint *n_formats) {
  *n_formats = G_N_ELEMENTS(formats);
  return formats;
}

const GstCudaGrayFormat *gst_cuda_gray_format_for_video(GstVideoFormat format) {
  for (const GstCudaGrayFormat &f : formats)
    if (f.kind != GST_CUDA_GRAY_KIND_BAYER && f.format == format) return &f;
  return NULL;
}

const GstCudaGrayFormat *gst_cuda_gray_format_for_bayer(const gchar *name) {
  for (const GstCudaGrayFormat &f : formats)
    if (f.kind == GST_CUDA_GRAY_KIND_BAYER && name && strcmp(f.name, name) == 0) return &f;
  return NULL;
}
