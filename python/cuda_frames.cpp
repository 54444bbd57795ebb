// SPDX-License-Identifier: LGPL-2.1-or-later
/* Frames in CUDA memory: the pipeline's CUDA elements work in the device's
 * primary context, the one PyTorch and CuPy use (a device pointer of one
 * context is not valid in another), and consumers are ordered after
 * cudagray's work. Every version check of gstreamer-cuda-1.0 in the module
 * is here. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "cudagray_python.h"

#if GST_CHECK_VERSION(1, 24, 0)
#include <gst/cuda/gstcudastream.h>
#endif

#define GST_CAT_DEFAULT cudagray_python_debug

namespace cudagray_python {

namespace {

bool checked(cudaError_t error, const char *call, std::string *why) {
  if (error == cudaSuccess) return true;
  *why = std::string(call) + ": " + cudaGetErrorString(error);
  return false;
}

/* A driver function reached through the CUDA runtime, so that the module
 * links no libcuda of its own (the driver's is loaded at run time). */
template <typename Function>
bool driver_function(const char *name, Function *function, std::string *why) {
  cudaDriverEntryPointQueryResult found;
  if (!checked(cudaGetDriverEntryPointByVersion(name, reinterpret_cast<void **>(function), 12000,
                                                cudaEnableDefault, &found),
               "cudaGetDriverEntryPointByVersion", why))
    return false;
  if (found != cudaDriverEntryPointSuccess) {
    *why = std::string("the CUDA driver has no ") + name;
    return false;
  }
  return true;
}

/* Each device's primary context wrapped for GStreamer, made once and kept
 * (with the primary context retained) for the process's life: frames, and
 * tensors made from them, may outlive every reader. Called with the GIL. */
GstCudaContext *primary_gst_context(int device, std::string *why) {
  static std::map<int, GstCudaContext *> contexts;
  auto known = contexts.find(device);
  if (known != contexts.end()) return known->second;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuDevicePrimaryCtxRetain) primary_retain;
  int count = 0;
  if (!checked(cudaGetDeviceCount(&count), "cudaGetDeviceCount", why) ||
      !driver_function("cuDeviceGet", &device_get, why) ||
      !driver_function("cuDevicePrimaryCtxRetain", &primary_retain, why))
    return NULL;
  if (!gst_cuda_load_library()) {
    *why = "GStreamer could not load the CUDA driver library (libcuda.so.1)";
    return NULL;
  }
  CUdevice cu_device;
  CUcontext primary;
  if (device_get(&cu_device, device) != CUDA_SUCCESS ||
      primary_retain(&primary, cu_device) != CUDA_SUCCESS) {
    *why = "could not retain the primary CUDA context of device " + std::to_string(device);
    return NULL;
  }
  GstCudaContext *context = gst_cuda_context_new_wrapped(primary, cu_device);
  if (!context) {
    *why = "GStreamer could not wrap the primary CUDA context of device " + std::to_string(device);
    return NULL;
  }
  contexts[device] = context;
  return context;
}

/* Restores the calling thread's current device (the application's) when the
 * module's CUDA calls are done. */
class DeviceScope {
 public:
  bool enter(int device, std::string *why) {
    return checked(cudaGetDevice(&previous_), "cudaGetDevice", why) &&
           checked(cudaSetDevice(device), "cudaSetDevice", why);
  }
  ~DeviceScope() {
    std::string why;
    if (previous_ >= 0 && !checked(cudaSetDevice(previous_), "cudaSetDevice", &why))
      GST_WARNING("the application's device %d not made current again: %s", previous_, why.c_str());
  }

 private:
  int previous_ = -1;
};

class Event {
 public:
  Event() = default;
  Event(Event &&other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  /* the other event goes with other */
  Event &operator=(Event &&other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  /* An event after the work queued on stream so far. */
  bool record(cudaStream_t stream, std::string *why) {
    return checked(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming),
                   "cudaEventCreateWithFlags", why) &&
           checked(cudaEventRecord(event_, stream), "cudaEventRecord", why);
  }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/* A consumer's work is over when its event is done, or failed: an error is
 * the consumer's, whose work on the frame has ended either way. */
bool consumer_done(cudaError_t state) {
  if (state == cudaErrorNotReady) return false;
  if (state != cudaSuccess)
    GST_WARNING("frame released after its consumer failed: %s", cudaGetErrorString(state));
  return true;
}

/* A freed frame or batch whose consumers' queued work may still read it:
 * its mapping and sample, held until every event recorded after that work
 * is done. */
class HeldFrame {
 public:
  HeldFrame(std::function<void()> unmap, GstBuffer *buffer, GstSample *sample,
            std::vector<Event> &&consumed)
      : unmap_(std::move(unmap)),
        buffer_(buffer),
        sample_(sample),
        consumed_(std::move(consumed)) {}
  HeldFrame(const HeldFrame &) = delete;
  HeldFrame &operator=(const HeldFrame &) = delete;
  ~HeldFrame() {
    unmap_();
    gst_sample_unref(sample_);
  }
  /* Forgets the events that are done; true once none is left. */
  bool consumers_done() {
    auto finished = [](const Event &event) { return consumer_done(cudaEventQuery(event.get())); };
    consumed_.erase(std::remove_if(consumed_.begin(), consumed_.end(), finished), consumed_.end());
    return consumed_.empty();
  }
  GstBuffer *buffer() const { return buffer_; }
  /* Blocks until every consumer is done. */
  void wait() {
    for (const Event &event : consumed_) consumer_done(cudaEventSynchronize(event.get()));
    consumed_.clear();
  }

 private:
  std::function<void()> unmap_;
  GstBuffer *buffer_;
  GstSample *sample_;
  std::vector<Event> consumed_;
};

/* released frames, oldest first; touched with the GIL held */
std::deque<std::unique_ptr<HeldFrame>> held_frames;
/* past this many, the oldest is waited for: a consumer that never finishes
 * must not make cudagray allocate without end */
constexpr size_t held_frames_limit = 64;

}  // namespace

/* One consumer's stream: while its owner is held, the stream lives, and the
 * release records its event; without an owner, the event recorded at export. */
struct Consumer {
  cudaStream_t stream;
  PyObject *owner;
  Event exported;
};

struct ConsumerStreams {
  std::vector<Consumer> consumers;
};

std::string cuda_frames_unavailable(int device) {
  guint major, minor, micro, nano;
  gst_version(&major, &minor, &micro, &nano);
  if (minor != CUDAGRAY_GST_CUDA_BUILT_MINOR)
    return "the module was built against GStreamer 1." G_STRINGIFY(
               CUDAGRAY_GST_CUDA_BUILT_MINOR) " and runs with 1." +
           std::to_string(minor) +
           ", whose CUDA memory differs: rebuild the module against this GStreamer";
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess)
    return std::string("no usable CUDA device: ") + cudaGetErrorString(error);
  if (device >= count)
    return "no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " found)";
  return "";
}

GstContext *primary_cuda_context(int device, std::string *why) {
  GstCudaContext *context = primary_gst_context(device, why);
  return context ? gst_context_new_cuda_context(context) : NULL;
}

GstMapFlags cuda_map_flag() { return GstMapFlags(GST_MAP_CUDA); }

bool describe_cuda_memory(GstBuffer *buffer, CudaMemoryInfo *info, std::string *why) {
  GstMemory *memory = gst_buffer_peek_memory(buffer, 0);
  if (gst_buffer_n_memory(buffer) != 1 || !gst_is_cuda_memory(memory)) {
    *why = "its buffer is not one block of GStreamer CUDA memory";
    return false;
  }
  GstCudaContext *context = GST_CUDA_MEMORY_CAST(memory)->context;
  guint device = 0;
  g_object_get(context, "cuda-device-id", &device, NULL);
  GstCudaContext *primary = primary_gst_context((int)device, why);
  if (!primary) return false;
  if (gst_cuda_context_get_handle(context) != gst_cuda_context_get_handle(primary)) {
    *why =
        "its memory belongs to a CUDA context of the pipeline's own, not to the primary "
        "context of device " +
        std::to_string(device) +
        " that PyTorch and CuPy use; cudagray.open() sets the primary one on its pipelines";
    return false;
  }
  info->device = (int)device;
  info->pending_stream = nullptr;
#if GST_CHECK_VERSION(1, 24, 0)
  GstCudaStream *stream = gst_cuda_memory_get_stream(GST_CUDA_MEMORY_CAST(memory));
  if (stream && GST_MEMORY_FLAG_IS_SET(memory, GST_CUDA_MEMORY_TRANSFER_NEED_SYNC))
    info->pending_stream = gst_cuda_stream_get_handle(stream);
#endif
  return true;
}

bool order_after(int device, void *pending_stream, void *consumer_stream, std::string *why) {
  DeviceScope scope;
  Event produced;
  return scope.enter(device, why) &&
         produced.record(static_cast<cudaStream_t>(pending_stream), why) &&
         checked(cudaStreamWaitEvent(static_cast<cudaStream_t>(consumer_stream), produced.get(), 0),
                 "cudaStreamWaitEvent", why);
}

bool add_consumer(ConsumerStreams **streams, int device, void *stream, PyObject *owner,
                  std::string *why) {
  const intptr_t handle = reinterpret_cast<intptr_t>(stream);
  if (handle == legacy_default_stream || handle == per_thread_default_stream) {
    Py_XDECREF(owner);
    return true;
  }
  if (!*streams) *streams = new ConsumerStreams();
  std::vector<Consumer> &consumers = (*streams)->consumers;
  auto known = std::find_if(consumers.begin(), consumers.end(),
                            [stream](const Consumer &c) { return c.stream == stream; });
  if (known != consumers.end() && known->owner) {
    Py_XDECREF(owner);
    return true;
  }
  Event exported;
  if (!owner) {
    DeviceScope scope;
    if (!scope.enter(device, why) || !exported.record(static_cast<cudaStream_t>(stream), why))
      return false;
  }
  if (known != consumers.end()) {
    /* the later export's event, or the owner now known */
    known->owner = owner;
    known->exported = std::move(exported);
  } else {
    consumers.push_back(Consumer{static_cast<cudaStream_t>(stream), owner, std::move(exported)});
  }
  return true;
}

void release_after_consumers(std::function<void()> unmap, GstBuffer *buffer, GstSample *sample,
                             int device, ConsumerStreams *streams) {
  std::vector<Event> consumed;
  std::string why;
  DeviceScope scope;
  const bool on_device = scope.enter(device, &why);
  if (streams) {
    for (Consumer &consumer : streams->consumers) {
      if (!consumer.owner) {
        consumed.push_back(std::move(consumer.exported));
        continue;
      }
      Event released;
      if (on_device && released.record(consumer.stream, &why))
        consumed.push_back(std::move(released));
      else
        GST_WARNING("frame released without waiting for a consumer's stream: %s", why.c_str());
      /* may destroy the stream, with the work queued on it still to finish */
      Py_DECREF(consumer.owner);
    }
    delete streams;
  }
  Event legacy_stream_work;
  if (on_device && legacy_stream_work.record(cudaStreamLegacy, &why))
    consumed.push_back(std::move(legacy_stream_work));
  else
    GST_WARNING("frame released without waiting for the legacy default stream: %s", why.c_str());
  GST_LOG("frame %p released after %zu events, %zu frames held before it", buffer, consumed.size(),
          held_frames.size());
  held_frames.push_back(
      std::make_unique<HeldFrame>(std::move(unmap), buffer, sample, std::move(consumed)));
  release_consumed_frames();
}

void release_consumed_frames() {
  while (!held_frames.empty() && held_frames.front()->consumers_done()) {
    GST_LOG("frame %p given back", held_frames.front()->buffer());
    held_frames.pop_front();
  }
  if (held_frames.size() <= held_frames_limit) return;
  GST_DEBUG("%zu frames held: waiting for the oldest one's consumers", held_frames.size());
  std::unique_ptr<HeldFrame> oldest = std::move(held_frames.front());
  held_frames.pop_front();
  GilReleased released;
  oldest->wait();
  oldest.reset();
}

bool copy_to_host(int device, const void *source, size_t source_stride, void *destination,
                  size_t destination_stride, size_t row_bytes, size_t rows, std::string *why) {
  DeviceScope scope;
  /* on the legacy default stream, which waits for every blocking stream, and
   * returns once the copy is done */
  return scope.enter(device, why) &&
         checked(cudaMemcpy2D(destination, destination_stride, source, source_stride, row_bytes,
                              rows, cudaMemcpyDeviceToHost),
                 "cudaMemcpy2D", why);
}

void finish_pending(GstBuffer *buffer) {
#if GST_CHECK_VERSION(1, 24, 0)
  gst_cuda_memory_sync(GST_CUDA_MEMORY_CAST(gst_buffer_peek_memory(buffer, 0)));
#endif
}

}  // namespace cudagray_python
