// SPDX-License-Identifier: LGPL-2.1-or-later
// The conversion on the host: the reference the tests trust, and what the
// CPU backend runs.
#pragma once

#include "cudagray/conversion.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"

namespace cudagray {

// Carries out conversion c (valid_conversion) of one frame on the calling
// thread plus up to threads-1 helpers (threads <= 0: one per hardware thread).
void convert_cpu(const Conversion &c, const InputFrame &in, const GrayFrame &out, const Weights &w,
                 int threads = 0);

}  // namespace cudagray
