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
#if GST_CHECK_VERSION(1, 24, 0) /* GStreamer 1.24 added the format */
    ROW(RBGA, RBGA, CONVERTED, FALSE),
#endif
    /* RGB, 5 and 6 bits */
    ROW(RGB16, RGB16, CONVERTED, FALSE),
    ROW(BGR16, BGR16, CONVERTED, FALSE),
    ROW(RGB15, RGB15, CONVERTED, FALSE),
    ROW(BGR15, BGR15, CONVERTED, FALSE),
    /* RGB, 10 to 16 bits */
    ROW(GBR_10LE, GBR_10LE, CONVERTED, TRUE),
    ROW(GBR_10BE, GBR_10BE, CONVERTED, FALSE),
    ROW(GBRA_10LE, GBR_10LE, CONVERTED, FALSE),
    ROW(GBRA_10BE, GBR_10BE, CONVERTED, FALSE),
    ROW(GBR_12LE, GBR_12LE, CONVERTED, TRUE),
    ROW(GBR_12BE, GBR_12BE, CONVERTED, FALSE),
    ROW(GBRA_12LE, GBR_12LE, CONVERTED, FALSE),
    ROW(GBRA_12BE, GBR_12BE, CONVERTED, FALSE),
#if GST_CHECK_VERSION(1, 24, 0) /* GStreamer 1.24 added the formats */
    ROW(GBR_16LE, GBR_16LE, CONVERTED, TRUE),
    ROW(GBR_16BE, GBR_16BE, CONVERTED, FALSE),
#endif
    ROW(RGB10A2_LE, RGB10A2_LE, CONVERTED, TRUE),
    ROW(BGR10A2_LE, BGR10A2_LE, CONVERTED, TRUE),
    ROW(r210, r210, CONVERTED, FALSE),
    ROW(RGBA64_LE, RGBA64_LE, CONVERTED, FALSE),
    ROW(RGBA64_BE, RGBA64_BE, CONVERTED, FALSE),
    ROW(ARGB64, ARGB64_LE, CONVERTED, FALSE), /* native-endian words: little-endian here */
    ROW(ARGB64_LE, ARGB64_LE, CONVERTED, FALSE),
    ROW(ARGB64_BE, ARGB64_BE, CONVERTED, FALSE),
    ROW(BGRA64_LE, BGRA64_LE, CONVERTED, FALSE),
    ROW(BGRA64_BE, BGRA64_BE, CONVERTED, FALSE),
    ROW(ABGR64_LE, ABGR64_LE, CONVERTED, FALSE),
    ROW(ABGR64_BE, ABGR64_BE, CONVERTED, FALSE),
    /* YUV, 8 bits: gray is the luma */
    ROW(I420, Luma, CONVERTED, TRUE),
    ROW(YV12, Luma, CONVERTED, TRUE),
    ROW(NV12, Luma, CONVERTED, TRUE),
    ROW(NV21, Luma, CONVERTED, TRUE),
    ROW(Y444, Luma, CONVERTED, TRUE),
    ROW(Y42B, Luma, CONVERTED, TRUE),
    ROW(NV16, Luma, CONVERTED, FALSE),
    ROW(NV61, Luma, CONVERTED, FALSE),
    ROW(NV24, Luma, CONVERTED, FALSE),
    ROW(Y41B, Luma, CONVERTED, FALSE),
    ROW(YUV9, Luma, CONVERTED, FALSE),
    ROW(YVU9, Luma, CONVERTED, FALSE),
    ROW(A420, Luma, CONVERTED, FALSE),
#if GST_CHECK_VERSION(1, 24, 0) /* GStreamer 1.24 added the formats */
    ROW(A422, Luma, CONVERTED, FALSE),
    ROW(A444, Luma, CONVERTED, FALSE),
#endif
    ROW(AV12, Luma, CONVERTED, FALSE),
    ROW(YUY2, Luma_Y0_2, CONVERTED, TRUE),
    ROW(YVYU, Luma_Y0_2, CONVERTED, FALSE),
    ROW(UYVY, Luma_Y1_2, CONVERTED, TRUE),
    ROW(VYUY, Luma_Y1_2, CONVERTED, FALSE),
    ROW(AYUV, Luma_Y1_4, CONVERTED, FALSE),
    ROW(VUYA, Luma_Y2_4, CONVERTED, TRUE),
    ROW(v308, Luma_Y0_3, CONVERTED, FALSE),
    ROW(IYU2, Luma_Y1_3, CONVERTED, FALSE),
    ROW(IYU1, Luma_IYU1, CONVERTED, FALSE),
    /* YUV, 10 to 16 bits */
    ROW(P010_10LE, Luma10_Msb, CONVERTED, TRUE),
    ROW(P010_10BE, Luma10_Msb_BE, CONVERTED, FALSE),
    ROW(P012_LE, Luma12_Msb, CONVERTED, TRUE),
    ROW(P012_BE, Luma12_Msb_BE, CONVERTED, FALSE),
    ROW(P016_LE, Luma16, CONVERTED, TRUE),
    ROW(P016_BE, Luma16_BE, CONVERTED, FALSE),
    ROW(I420_10LE, Luma10, CONVERTED, TRUE),
    ROW(I420_10BE, Luma10_BE, CONVERTED, FALSE),
    ROW(I420_12LE, Luma12, CONVERTED, TRUE),
    ROW(I420_12BE, Luma12_BE, CONVERTED, FALSE),
    ROW(I422_10LE, Luma10, CONVERTED, TRUE),
    ROW(I422_10BE, Luma10_BE, CONVERTED, FALSE),
    ROW(I422_12LE, Luma12, CONVERTED, TRUE),
    ROW(I422_12BE, Luma12_BE, CONVERTED, FALSE),
    ROW(Y444_10LE, Luma10, CONVERTED, TRUE),
    ROW(Y444_10BE, Luma10_BE, CONVERTED, FALSE),
    ROW(Y444_12LE, Luma12, CONVERTED, TRUE),
    ROW(Y444_12BE, Luma12_BE, CONVERTED, FALSE),
    ROW(Y444_16LE, Luma16, CONVERTED, TRUE),
    ROW(Y444_16BE, Luma16_BE, CONVERTED, FALSE),
    ROW(A420_10LE, Luma10, CONVERTED, FALSE),
    ROW(A420_10BE, Luma10_BE, CONVERTED, FALSE),
    ROW(A422_10LE, Luma10, CONVERTED, FALSE),
    ROW(A422_10BE, Luma10_BE, CONVERTED, FALSE),
    ROW(A444_10LE, Luma10, CONVERTED, FALSE),
    ROW(A444_10BE, Luma10_BE, CONVERTED, FALSE),
#if GST_CHECK_VERSION(1, 24, 0) /* GStreamer 1.24 added the formats */
    ROW(A420_12LE, Luma12, CONVERTED, FALSE),
    ROW(A420_12BE, Luma12_BE, CONVERTED, FALSE),
    ROW(A422_12LE, Luma12, CONVERTED, FALSE),
    ROW(A422_12BE, Luma12_BE, CONVERTED, FALSE),
    ROW(A444_12LE, Luma12, CONVERTED, FALSE),
    ROW(A444_12BE, Luma12_BE, CONVERTED, FALSE),
    ROW(A420_16LE, Luma16, CONVERTED, FALSE),
    ROW(A420_16BE, Luma16_BE, CONVERTED, FALSE),
    ROW(A422_16LE, Luma16, CONVERTED, FALSE),
    ROW(A422_16BE, Luma16_BE, CONVERTED, FALSE),
    ROW(A444_16LE, Luma16, CONVERTED, FALSE),
    ROW(A444_16BE, Luma16_BE, CONVERTED, FALSE),
#endif
    ROW(Y210, Luma10_Msb_Y0_2, CONVERTED, FALSE),
    ROW(Y212_LE, Luma12_Msb_Y0_2, CONVERTED, FALSE),
    ROW(Y212_BE, Luma12_Msb_BE_Y0_2, CONVERTED, FALSE),
#if GST_CHECK_VERSION(1, 26, 0) /* GStreamer 1.26 added the formats */
    ROW(Y216_LE, Luma16_Y0_2, CONVERTED, FALSE),
    ROW(Y216_BE, Luma16_BE_Y0_2, CONVERTED, FALSE),
#endif
    ROW(v216, Luma16_Y1_2, CONVERTED, FALSE),
    ROW(v210, Luma_v210, CONVERTED, FALSE),
    ROW(UYVP, Luma_UYVP, CONVERTED, FALSE),
    ROW(Y410, Luma_Y410, CONVERTED, FALSE),
    ROW(Y412_LE, Luma12_Msb_Y1_4, CONVERTED, FALSE),
    ROW(Y412_BE, Luma12_Msb_BE_Y1_4, CONVERTED, FALSE),
#if GST_CHECK_VERSION(1, 26, 0) /* GStreamer 1.26 added the formats */
    ROW(Y416_LE, Luma16_Y1_4, CONVERTED, FALSE),
    ROW(Y416_BE, Luma16_BE_Y1_4, CONVERTED, FALSE),
#endif
    ROW(AYUV64, Luma16_Y1_4, CONVERTED, FALSE), /* native-endian words: little-endian here */
    ROW(NV12_10LE32, Luma_10LE32, CONVERTED, FALSE),
    ROW(NV16_10LE32, Luma_10LE32, CONVERTED, FALSE),
    ROW(NV12_10LE40, Luma_10LE40, CONVERTED, FALSE),
    /* YUV, tiled (the luma plane's tiles) */
    ROW(NV12_4L4, Luma_4L4, CONVERTED, FALSE),
    ROW(NV12_32L32, Luma_32L32, CONVERTED, FALSE),
    ROW(NV12_16L32S, Luma_16L32, CONVERTED, FALSE),
    ROW(NV12_8L128, Luma_8L128, CONVERTED, FALSE),
    ROW(NV12_64Z32, Luma_64Z32, CONVERTED, FALSE),
    ROW(NV12_10BE_8L128, Luma_10BE_8L128, CONVERTED, FALSE),
#if GST_CHECK_VERSION(1, 24, 0) /* GStreamer 1.24 added the formats */
    ROW(NV12_10LE40_4L4, Luma_10LE40_4L4, CONVERTED, FALSE),
    ROW(MT2110T, Luma_MT2110T, CONVERTED, FALSE),
    ROW(MT2110R, Luma_MT2110R, CONVERTED, FALSE),
#endif
    /* gray */
    ROW(GRAY8, Luma, GRAY, FALSE),
    ROW(GRAY16_LE, Luma16, GRAY, FALSE),
    ROW(GRAY16_BE, Luma16_BE, GRAY, FALSE),
#if GST_CHECK_VERSION(1, 26, 0) /* GStreamer 1.26 added the format */
    ROW(GRAY10_LE16, Luma10, GRAY, FALSE),
#endif
    ROW(GRAY10_LE32, Luma_10LE32, GRAY, FALSE),
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
