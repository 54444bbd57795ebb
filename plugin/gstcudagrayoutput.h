// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's output task on its source pad, which pushes what the output
 * queue holds in order (each frame as its conversion finishes), and the
 * calls that stop it and drop what is queued. */
#pragma once

#include <string>

#include "gstcudagray.h"

/* Starts the output task; it runs from READY to PAUSED until PAUSED to READY
 * and is started again after a flush. */
gboolean gst_cuda_gray_start_output(GstCudaGray *self);
/* Stops the output task (its waits fail with ret) and drops everything
 * queued. */
void gst_cuda_gray_stop_output(GstCudaGray *self, GstFlowReturn ret);
/* Lets go of everything queued without pushing it (sticky events stay on
 * the source pad); the output task is paused. */
void gst_cuda_gray_discard_in_flight(GstCudaGray *self);

/* Posts the error of a failed backend call. */
void gst_cuda_gray_post_backend_error(GstCudaGray *self, const char *doing, const std::string &why);
