// SPDX-License-Identifier: LGPL-2.1-or-later
// Keeping frames on the GPU: cudagray leaves its GRAY8 in CUDA memory and
// the application runs its own CUDA kernel on it, with no copy to the host.
//
//   cudagray-gpu-histogram [--decode] [FRAMES] [WIDTHxHEIGHT]
//
// Frames (a noisy test pattern; with --decode, H.264 decoded by nvh264dec)
// go through cudaupload ! cudagray ! appsink caps=video/x-raw(memory:CUDAMemory),
// format=GRAY8. Each gray frame is mapped with GST_MAP_CUDA and a 256-bin
// histogram is counted on the GPU (histogram_kernel.cu); only the 256
// counters come back. The same frames also go through cudagray backend=cpu
// (with --decode, decoded in software), whose histograms, counted on the
// CPU, must be equal.
//
// Exit status: 0 when every histogram is equal, 1 when one differs, 2 on a
// pipeline error, 77 when this machine cannot run it (no GPU, an element
// missing), with the reason.
#include <gst/app/gstappsink.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudamemory.h>
#if GST_CHECK_VERSION(1, 24, 0)
#include <gst/cuda/gstcudastream.h>
#endif
#include <gst/gst.h>
#include <gst/video/video.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "histogram_kernel.h"

namespace {

using Histogram = std::array<unsigned, 256>;

bool have(const char *element) {
  GstElementFactory *factory = gst_element_factory_find(element);
  if (factory) gst_object_unref(factory);
  return factory != nullptr;
}

// Where the application's kernel runs: its own stream and counters in the
// CUDA context of the frames (the pipeline's, shared by cudagray).
struct GpuCounter {
  GstCudaContext *context = nullptr;
  cudaStream_t stream = nullptr;
  unsigned *bins = nullptr;
  cudaEvent_t written = nullptr;

  bool attach(GstCudaContext *frames_context, std::string *why) {
    context = GST_CUDA_CONTEXT(gst_object_ref(frames_context));
    gst_cuda_context_push(context);
    cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = cudaMalloc(&bins, sizeof(Histogram));
    if (err == cudaSuccess) err = cudaEventCreateWithFlags(&written, cudaEventDisableTiming);
    gst_cuda_context_pop(nullptr);
    if (err != cudaSuccess) *why = cudaGetErrorString(err);
    return err == cudaSuccess;
  }
  ~GpuCounter() {
    if (!context) return;
    gst_cuda_context_push(context);
    if (written) cudaEventDestroy(written);
    if (bins) cudaFree(bins);
    if (stream) cudaStreamDestroy(stream);
    gst_cuda_context_pop(nullptr);
    gst_object_unref(context);
  }

  // The histogram of a GRAY8 buffer in CUDA memory, counted where it is.
  bool count(GstBuffer *buffer, const GstVideoInfo *info, Histogram *out, std::string *why) {
    GstMemory *mem = gst_buffer_peek_memory(buffer, 0);
    if (!gst_is_cuda_memory(mem)) {
      *why = "the gray frame is not in CUDA memory";
      return false;
    }
    if (!context && !attach(GST_CUDA_MEMORY_CAST(mem)->context, why)) return false;
    GstVideoFrame frame;  // its video meta gives the pitch
    if (!gst_video_frame_map(&frame, info, buffer, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA))) {
      *why = "cannot map the gray frame for CUDA";
      return false;
    }
    gst_cuda_context_push(context);
    cudaError_t err = cudaSuccess;
#if GST_CHECK_VERSION(1, 24, 0)
    // GStreamer 1.24+: cudagray may push the frame while its kernel is still
    // queued on the memory's stream: wait for that stream on the GPU.
    if (GST_MEMORY_FLAG_IS_SET(mem, GST_CUDA_MEMORY_TRANSFER_NEED_SYNC)) {
      GstCudaStream *theirs = gst_cuda_memory_get_stream(GST_CUDA_MEMORY_CAST(mem));
      err = cudaEventRecord(written,
                            reinterpret_cast<cudaStream_t>(gst_cuda_stream_get_handle(theirs)));
      if (err == cudaSuccess) err = cudaStreamWaitEvent(stream, written, 0);
    }
#endif
    if (err == cudaSuccess)
      err = histogram256_async(static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0)),
                               GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0), GST_VIDEO_INFO_WIDTH(info),
                               GST_VIDEO_INFO_HEIGHT(info), bins, stream);
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(out->data(), bins, sizeof(Histogram), cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    gst_cuda_context_pop(nullptr);
    gst_video_frame_unmap(&frame);
    if (err != cudaSuccess) *why = std::string("histogram kernel: ") + cudaGetErrorString(err);
    return err == cudaSuccess;
  }
};

Histogram count_on_cpu(GstBuffer *buffer, const GstVideoInfo *info) {
  Histogram h{};
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, info, buffer, GST_MAP_READ)) return h;
  const auto *data = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
  for (int y = 0; y < GST_VIDEO_INFO_HEIGHT(info); ++y)
    for (int x = 0; x < GST_VIDEO_INFO_WIDTH(info); ++x) ++h[data[y * stride + x]];
  gst_video_frame_unmap(&frame);
  return h;
}

// The first error on the pipeline's bus, or "".
std::string bus_error(GstElement *pipeline) {
  GstBus *bus = gst_element_get_bus(pipeline);
  std::string text;
  if (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    text = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) + ": " + err->message;
    g_error_free(err);
    gst_message_unref(msg);
  }
  gst_object_unref(bus);
  return text;
}

}  // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  bool decode = false;
  int frames = 30, width = 640, height = 480;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--decode") == 0)
      decode = true;
    else if (std::strchr(argv[i], 'x'))
      std::sscanf(argv[i], "%dx%d", &width, &height);
    else
      frames = std::atoi(argv[i]);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: no usable CUDA device\n");
    return 77;
  }
  const char *software_decoder = have("openh264dec")  ? "openh264dec"
                                 : have("avdec_h264") ? "avdec_h264"
                                                      : nullptr;
  for (const char *needed :
       {"cudagray", decode ? "nvh264dec" : "cudaupload", decode ? "x264enc" : "videotestsrc"})
    if (!have(needed)) {
      std::printf("skipped: %s is not installed\n", needed);
      return 77;
    }
  if (decode && !software_decoder) {
    std::printf("skipped: no software H.264 decoder (openh264dec or avdec_h264) to compare with\n");
    return 77;
  }
  const std::string size = ",width=" + std::to_string(width) + ",height=" + std::to_string(height);
  const std::string source =
      "videotestsrc num-buffers=" + std::to_string(frames) + " pattern=snow ! ";
  const std::string gpu_tail =
      "cudagray backend=cuda ! video/x-raw(memory:CUDAMemory),format=GRAY8 ! appsink name=gpu "
      "sync=false";
  const std::string cpu_tail = "cudagray backend=cpu ! appsink name=cpu sync=false";
  const std::string description =
      decode
          ? source + "video/x-raw,format=I420" + size +
                " ! x264enc ! video/x-h264,profile=constrained-baseline ! h264parse ! "
                "tee name=t t. ! queue ! nvh264dec ! video/x-raw(memory:CUDAMemory) ! " +
                gpu_tail + " t. ! queue ! " + software_decoder + " ! " + cpu_tail
          : source + "video/x-raw,format=RGBA" + size + " ! tee name=t t. ! queue ! cudaupload ! " +
                gpu_tail + " t. ! queue ! " + cpu_tail;
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(description.c_str(), &error);
  if (!pipeline) {
    std::fprintf(stderr, "cannot build the pipeline: %s\n", error->message);
    return 2;
  }
  GstElement *gpu_sink = gst_bin_get_by_name(GST_BIN(pipeline), "gpu");
  GstElement *cpu_sink = gst_bin_get_by_name(GST_BIN(pipeline), "cpu");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);

  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, width, height);
  GpuCounter counter;
  int status = 0, compared = 0;
  std::string why;
  for (;; ++compared) {
    GstSample *on_gpu = gst_app_sink_try_pull_sample(GST_APP_SINK(gpu_sink), 30 * GST_SECOND);
    GstSample *on_cpu = gst_app_sink_try_pull_sample(GST_APP_SINK(cpu_sink), 30 * GST_SECOND);
    if (!on_gpu || !on_cpu) {
      if (on_gpu || on_cpu) why = "one branch ended before the other";
      if (on_gpu) gst_sample_unref(on_gpu);
      if (on_cpu) gst_sample_unref(on_cpu);
      break;
    }
    Histogram gpu{};
    const bool counted = counter.count(gst_sample_get_buffer(on_gpu), &info, &gpu, &why);
    const Histogram cpu = count_on_cpu(gst_sample_get_buffer(on_cpu), &info);
    gst_sample_unref(on_gpu);
    gst_sample_unref(on_cpu);
    if (!counted) break;
    if (gpu != cpu) {
      for (int v = 0; v < 256; ++v)
        if (gpu[v] != cpu[v]) {
          std::printf("frame %d: %u pixels of gray %d on the GPU, %u on the CPU\n", compared,
                      gpu[v], v, cpu[v]);
          break;
        }
      status = 1;
    }
  }
  const std::string pipeline_error = bus_error(pipeline);
  if (!pipeline_error.empty() || !why.empty() || compared != frames) {
    std::fprintf(stderr, "error: %s (%d of %d frames compared)\n",
                 !pipeline_error.empty() ? pipeline_error.c_str()
                 : !why.empty()          ? why.c_str()
                                         : "frames missing",
                 compared, frames);
    status = 2;
  } else if (status == 0) {
    std::printf(
        "%d frames of %dx%d%s: every GPU histogram of cudagray's CUDA-memory GRAY8 equals the "
        "CPU's\n",
        compared, width, height, decode ? " decoded by nvh264dec" : "");
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(gpu_sink);
  gst_object_unref(cpu_sink);
  gst_object_unref(pipeline);
  return status;
}
