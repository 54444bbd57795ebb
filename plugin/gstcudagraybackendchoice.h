// SPDX-License-Identifier: LGPL-2.1-or-later
/* How cudagray and cudagraybatch take their backend at start, from the
 * backend and cuda-device-id properties: one rule, one error and one
 * warning for both. */
#pragma once

#include <gst/gst.h>

#include <functional>
#include <string>

#include "gstcudagraycontext.h"
#include "gstcudagrayproperties.h"

/* For backend=cuda or auto, opens context on device_id (< 0: any) and calls
 * make_cuda, which makes the element's CUDA backend in it or says why not;
 * *on_cuda says whether it did (the context stays open then, and is closed
 * otherwise). Returns FALSE after posting the element's error when nothing
 * was made for backend=cuda, or for auto naming a device while a GPU exists;
 * for auto with no usable GPU posts the warning that the CPU converts
 * instead, sets *cpu_fallback_reason and returns TRUE. backend=cpu: TRUE,
 * nothing opened. */
gboolean gst_cuda_gray_open_cuda_backend(GstElement *element, GstCudaGrayContext *context,
                                         GstCudaGrayBackend choice, gint device_id,
                                         const std::function<bool(std::string *why)> &make_cuda,
                                         gboolean *on_cuda, std::string *cpu_fallback_reason);
