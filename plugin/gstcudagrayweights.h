// SPDX-License-Identifier: LGPL-2.1-or-later
/* The weights property's text: "R,G,B", three decimal numbers, read into
 * coefficients and written back. */
#pragma once

#include <string>

#include "cudagray/weights.h"

/* Parses "R,G,B" (three decimal numbers, spaces allowed around them), each
 * within 0..cudagray::kMaxCustomCoefficient. On failure returns false and
 * says why in *error. */
bool gst_cuda_gray_parse_weights(const char *text, cudagray::Coefficients *out, std::string *error);
/* The inverse: "R,G,B" with each number in its shortest exact form. */
std::string gst_cuda_gray_format_weights(const cudagray::Coefficients &k);
