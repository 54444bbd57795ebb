// SPDX-License-Identifier: LGPL-2.1-or-later
/* The CUDA side of an array in CUDA memory (cudagray_python.h, CudaSide):
 * what a Frame and a Batch do alike for their consumers on the GPU. */
#include "cudagray_python.h"

namespace cudagray_python {

bool cuda_side_order_consumer(CudaSide *side, GstBuffer *buffer, PyObject *stream) {
  void *consumer = nullptr;
  bool unordered = false;
  if (!consumer_stream(true, stream, &consumer, &unordered)) return false;
  if (unordered) return true;
  std::string why;
  if (side->cuda.pending_stream && stream == Py_None) {
    {
      GilReleased released;
      finish_pending(buffer);
    }
    side->cuda.pending_stream = nullptr;
  } else if (side->cuda.pending_stream &&
             !order_after(side->cuda.device, side->cuda.pending_stream, consumer, &why)) {
    PyErr_Format(PyExc_BufferError, "could not order the consumer's stream after cudagray's: %s",
                 why.c_str());
    return false;
  }
  const intptr_t handle = reinterpret_cast<intptr_t>(consumer);
  PyObject *owner =
      handle > per_thread_default_stream ? current_stream_owner(side->cuda.device, handle) : NULL;
  /* the release takes the consumers kept so far, whatever happens here */
  side->consumed_on_gpu = true;
  if (!add_consumer(&side->consumers, side->cuda.device, consumer, owner, &why)) {
    PyErr_Format(PyExc_BufferError, "could not record the consumer's work on its stream: %s",
                 why.c_str());
    return false;
  }
  return true;
}

bool cuda_side_copy_to_host(CudaSide *side, GstBuffer *buffer, const ArrayLayout &array,
                            void *destination, size_t row_bytes) {
  Py_ssize_t rows = 1;
  for (int i = 0; i < array.ndim - 1; i++) rows *= array.shape[i];
  std::string why;
  bool copied;
  {
    GilReleased released;
    finish_pending(buffer);
    copied = copy_to_host(side->cuda.device, array.data, array.strides[array.ndim - 2], destination,
                          row_bytes, row_bytes, rows, &why);
  }
  side->cuda.pending_stream = nullptr;
  if (!copied) PyErr_Format(PyExc_BufferError, "could not copy the array: %s", why.c_str());
  return copied;
}

PyObject *cuda_side_record_stream(CudaSide *side, PyObject *stream) {
  intptr_t handle;
  PyObject *owner;
  if (!stream_argument(stream, &handle, &owner)) return NULL;
  std::string why;
  side->consumed_on_gpu = true;
  if (!add_consumer(&side->consumers, side->cuda.device, reinterpret_cast<void *>(handle), owner,
                    &why)) {
    PyErr_Format(PyExc_BufferError, "could not keep the consumer's stream: %s", why.c_str());
    return NULL;
  }
  Py_RETURN_NONE;
}

PyObject *cuda_side_array_interface(CudaSide *side, const ArrayLayout &array) {
  /* This consumer names no stream of its own: the release waits for the
   * legacy default stream, so for every blocking stream, and for the
   * current streams of PyTorch and CuPy, where their reads are queued */
  side->consumed_on_gpu = true;
  if (!add_current_streams(&side->consumers, side->cuda.device)) return NULL;
  /* the stream the consumer must order its work after; None: complete */
  PyObject *stream = side->cuda.pending_stream ? PyLong_FromVoidPtr(side->cuda.pending_stream)
                                               : Py_NewRef(Py_None);
  if (!stream) return NULL;
  PyObject *interface = array_interface(array, stream);
  Py_DECREF(stream);
  return interface;
}

void cuda_side_release(CudaSide *side, std::function<void()> unmap, GstBuffer *buffer,
                       GstSample *sample) {
  if (side->consumed_on_gpu) {
    release_after_consumers(std::move(unmap), buffer, sample, side->cuda.device, side->consumers);
  } else {
    unmap();
    gst_sample_unref(sample);
  }
}

}  // namespace cudagray_python
