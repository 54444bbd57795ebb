// SPDX-License-Identifier: LGPL-2.1-or-later
/* What cudagray takes and gives: pad templates, transform_caps and the
 * input that fixed caps describe, all made from the format table
 * (gstcudagrayformats.h), which holds each format's pixel layout. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>

#include "cudagray/conversion.h"
#include "gstcudagrayformats.h"

/* The sink template: system memory formats, and the same in CUDA memory when
 * gst_cuda_gray_cuda_memory_usable (else *cuda_off says why not). */
GstCaps *gst_cuda_gray_sink_template_caps(std::string *cuda_off);
/* The source template: GRAY8 and GRAY16_LE in system memory, then in CUDA
 * memory under the same condition. */
GstCaps *gst_cuda_gray_src_template_caps(void);

/* The caps on the other side of caps (direction: where caps are), filtered;
 * cuda_input: converted formats may come in CUDA memory; cuda_output: their
 * gray may leave in CUDA memory (after system memory, which stays first). */
GstCaps *gst_cuda_gray_caps_transform(GstPadDirection direction, GstCaps *caps, GstCaps *filter,
                                      gboolean cuda_input, gboolean cuda_output);

/* The input frame that fixed caps describe (video/x-raw or video/x-bayer)
 * and its row of the format table; FALSE when cudagray does not take it. */
gboolean gst_cuda_gray_input_from_caps(GstCaps *caps, GstVideoInfo *info,
                                       const GstCudaGrayFormat **format);

/* Whether caps (fixed) are in CUDA memory. */
gboolean gst_cuda_gray_caps_in_cuda_memory(GstCaps *caps);

/* The fixate_caps vfunc: othercaps (on the other side of caps, direction:
 * where caps are) fixed, with the output's size and pixel aspect ratio
 * chosen to keep the input's display aspect ratio as videoscale does. */
GstCaps *gst_cuda_gray_fixate_caps(GstBaseTransform *trans, GstPadDirection direction,
                                   GstCaps *caps, GstCaps *othercaps);

/* The conversion set_caps hands the backend: the input frame of in_info in
 * format, whole, to the gray of out_info by method (luma limited range when
 * the caps say so). With add_borders, a picture whose display aspect ratio
 * the output's does not keep is centred between black bars. */
cudagray::Conversion gst_cuda_gray_conversion_from_caps(const GstVideoInfo *in_info,
                                                        const GstCudaGrayFormat *format,
                                                        const GstVideoInfo *out_info,
                                                        cudagray::ScaleMethod method,
                                                        gboolean add_borders);
