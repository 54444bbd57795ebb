// SPDX-License-Identifier: LGPL-2.1-or-later
/* The one format table: every format cudagray takes, with how the kernels
 * read it and in which memory. The pad templates, transform_caps, set_caps,
 * the frame bridge, the tests' conformance list and docs/formats.md's format
 * table all follow from it. */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include "cudagray/frame.h"

/* How a format's frames are treated. */
typedef enum {
  GST_CUDA_GRAY_KIND_CONVERTED, /* RGB (weights) or YUV (luma) to gray */
  GST_CUDA_GRAY_KIND_GRAY,      /* gray already: kept as it is (range not applied),
                                 * passed through to the same format, else re-scaled */
  GST_CUDA_GRAY_KIND_BAYER,     /* video/x-bayer: demosaicked as bayer2rgb does */
} GstCudaGrayFormatKind;

typedef struct {
  const char *name;      /* the caps' format string */
  GstVideoFormat format; /* GST_VIDEO_FORMAT_UNKNOWN for Bayer */
  cudagray::PixelLayout layout;
  GstCudaGrayFormatKind kind;
  gboolean cuda_memory; /* also taken in memory:CUDAMemory (GStreamer's CUDA formats) */
  int sample_bits;      /* Bayer: bits a sample has (Conversion::sample_bits); else 0 */
} GstCudaGrayFormat;

/* The table, in order of preference; *n_formats rows. */
const GstCudaGrayFormat *gst_cuda_gray_formats(guint *n_formats);
/* The row of a video/x-raw format, or NULL. */
const GstCudaGrayFormat *gst_cuda_gray_format_for_video(GstVideoFormat format);
/* The row of a video/x-bayer format string, or NULL. */
const GstCudaGrayFormat *gst_cuda_gray_format_for_bayer(const gchar *name);

/* Gray formats that leave the element, GRAY8 (the default) first. */
#define GST_CUDA_GRAY_OUTPUT_FORMATS "GRAY8, GRAY16_LE"
