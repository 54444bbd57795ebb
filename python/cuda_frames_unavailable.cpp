// SPDX-License-Identifier: LGPL-2.1-or-later
/* A build without gstreamer-cuda-1.0 or the CUDA runtime: every frame is in
 * system memory. */
#include "cudagray_python.h"

namespace cudagray_python {

std::string cuda_frames_unavailable(int) {
  return "the module was built without CUDA memory support (the CUDA toolkit and "
         "gstreamer-cuda-1.0)";
}

GstContext *primary_cuda_context(int device, std::string *why) {
  *why = cuda_frames_unavailable(device);
  return NULL;
}

GstMapFlags cuda_map_flag() { return GST_MAP_READ; }

bool describe_cuda_memory(GstBuffer *, CudaMemoryInfo *, std::string *why) {
  *why = cuda_frames_unavailable(0);
  return false;
}

bool order_after(int, void *, void *, std::string *why) {
  *why = cuda_frames_unavailable(0);
  return false;
}

void finish_pending(GstBuffer *) {}

bool add_consumer(ConsumerStreams **, int, void *, PyObject *owner, std::string *why) {
  Py_XDECREF(owner);
  *why = cuda_frames_unavailable(0);
  return false;
}

/* no frame is in CUDA memory here: nothing to wait for */
void release_after_consumers(std::function<void()> unmap, GstBuffer *, GstSample *sample, int,
                             ConsumerStreams *) {
  unmap();
  gst_sample_unref(sample);
}

void release_consumed_frames() {}

bool copy_to_host(int device, const void *, size_t, void *, size_t, size_t, size_t,
                  std::string *why) {
  *why = cuda_frames_unavailable(device);
  return false;
}

}  // namespace cudagray_python
