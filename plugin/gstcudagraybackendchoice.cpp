// SPDX-License-Identifier: LGPL-2.1-or-later
/* The backend an element takes at start (gstcudagraybackendchoice.h). */
#include "gstcudagraybackendchoice.h"

#include "cudagray/device.h"

/* A warning whose text says all there is to do: GST_ELEMENT_WARNING would add
 * a debug text naming the source line it was posted from, which gst-launch
 * prints and a user can do nothing with. */
static void post_warning_for_users(GstElement *element, const std::string &text) {
  GST_WARNING_OBJECT(element, "%s", text.c_str());
  GError *error =
      g_error_new_literal(GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND, text.c_str());
  gst_element_post_message(element, gst_message_new_warning(GST_OBJECT(element), error, NULL));
  g_error_free(error);
}

gboolean gst_cuda_gray_open_cuda_backend(GstElement *element, GstCudaGrayContext *context,
                                         GstCudaGrayBackend choice, gint device_id,
                                         const std::function<bool(std::string *why)> &make_cuda,
                                         gboolean *on_cuda, std::string *cpu_fallback_reason) {
  *on_cuda = FALSE;
  if (choice == GST_CUDA_GRAY_BACKEND_CPU) return TRUE;
  std::string reason;
  *on_cuda = gst_cuda_gray_context_open(context, device_id, &reason) && make_cuda(&reason);
  if (*on_cuda) return TRUE;
  gst_cuda_gray_context_close(context);
  std::string ignored;
  const bool some_gpu = cudagray::cuda_device_count(&ignored) > 0;
  if (choice == GST_CUDA_GRAY_BACKEND_CUDA || (device_id >= 0 && some_gpu)) {
    GST_ELEMENT_ERROR(element, RESOURCE, NOT_FOUND, ("No usable CUDA device: %s", reason.c_str()),
                      ("backend=%s cuda-device-id=%d; pick an existing device, or set "
                       "backend=cpu to run without a GPU",
                       choice == GST_CUDA_GRAY_BACKEND_CUDA ? "cuda" : "auto", device_id));
    return FALSE;
  }
  *cpu_fallback_reason = reason;
  post_warning_for_users(element, "No usable CUDA device: " + reason +
                                      ". Converting on the CPU instead; backend=cpu "
                                      "chooses the CPU without this warning.");
  return TRUE;
}
