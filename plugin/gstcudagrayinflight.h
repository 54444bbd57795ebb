// SPDX-License-Identifier: LGPL-2.1-or-later
/* The frames-in-flight policy (gstcudagrayinflight.cpp); streaming thread
 * only. */
#pragma once

#include "gstcudagray.h"

/* Sets how many frames may be in flight for input of in_info (passed
 * through or converted) on the converter and the output, with the latency
 * that adds; returns how many. */
int gst_cuda_gray_limit_frames_in_flight(GstCudaGray *self, const GstVideoInfo *in_info,
                                         gboolean passthrough);
/* A segment that turns playback around sets the frames in flight again,
 * once the frames of the old direction are out. */
void gst_cuda_gray_follow_playback_direction(GstCudaGray *self, GstEvent *segment_event);
