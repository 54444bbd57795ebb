// SPDX-License-Identifier: LGPL-2.1-or-later
// Frames already on the GPU (memory:CUDAMemory from cudaupload and NVDEC):
// converted where they are, in the pipeline's one CUDA context. Needs a GPU
// and GStreamer's nvcodec plugin; skipped with the reason otherwise.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#if GST_CHECK_VERSION(1, 24, 0)
#include <gst/cuda/gstcudastream.h>
#endif
#endif

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "element_harness.h"
#include "gstcudagrayformats.h"
#include "slow_writer.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

// CUDA memory input needs a GPU and cudagray built with gstreamer-cuda-1.0.
#ifdef CUDAGRAY_HAVE_GST_CUDA
#define SKIP_WITHOUT_CUDA_MEMORY_INPUT() SKIP_WITHOUT_GPU()
#else
#define SKIP_WITHOUT_CUDA_MEMORY_INPUT() \
  GTEST_SKIP() << "cudagray was built without gstreamer-cuda-1.0: no CUDA memory input"
#endif

GstElement *by_name(GstElement *pipeline, const char *name) {
  return gst_bin_get_by_name(GST_BIN(pipeline), name);
}

// The GstCudaContext an element answers a context query with, or nullptr.
GstObject *cuda_context_of(GstElement *element, const char *pad_name) {
  GstPad *pad = gst_element_get_static_pad(element, pad_name);
  GstQuery *query = gst_query_new_context("gst.cuda.context");
  GstObject *found = nullptr;
  if (gst_pad_query(pad, query)) {
    GstContext *context = nullptr;
    gst_query_parse_context(query, &context);
    if (context) {
      const GstStructure *s = gst_context_get_structure(context);
      const GValue *v = gst_structure_get_value(s, "gst.cuda.context");
      if (v) found = GST_OBJECT(g_value_get_object(v));
    }
  }
  gst_query_unref(query);
  gst_object_unref(pad);
  return found;
}

// Whether cudaupload's sink template takes caps (its formats differ between
// GStreamer versions).
bool cudaupload_takes(const std::string &caps) {
  GstElement *upload = gst_element_factory_make("cudaupload", nullptr);
  if (!upload) return false;
  GstPad *sink = gst_element_get_static_pad(upload, "sink");
  GstCaps *wanted = gst_caps_from_string(caps.c_str());
  GstCaps *taken = gst_pad_get_pad_template_caps(sink);
  const bool takes = gst_caps_can_intersect(wanted, taken);
  gst_caps_unref(wanted);
  gst_caps_unref(taken);
  gst_object_unref(sink);
  gst_object_unref(upload);
  return takes;
}

constexpr uint64_t kFrames = 5;

// Pushes `count` random 641x481 frames of layout into appsrc "src", ends the
// stream, and checks that appsink "sink" gets each one's CPU reference.
void push_and_check(const Pipeline &pipeline, PixelLayout layout, uint64_t count) {
  std::vector<TestFrame> frames;
  for (uint64_t i = 0; i < count; ++i) {
    frames.push_back(random_frame(layout, 641, 481));
    GstBuffer *buf = buffer_for(frames.back());
    GST_BUFFER_PTS(buf) = i * GST_SECOND / 30;
    EXPECT_EQ(pipeline.push("src", buf), GST_FLOW_OK);
  }
  pipeline.end_of_stream("src");
  for (const TestFrame &f : frames) {
    GstSample *sample = pipeline.pull("sink", 10 * GST_SECOND);
    if (!sample) {
      ADD_FAILURE() << "a frame did not reach the sink";
      break;
    }
    EXPECT_TRUE(same_pixels(gray_of(gst_sample_get_buffer(sample), 641, 481),
                            cpu_reference(f, kWeightChoices[0])));
    gst_sample_unref(sample);
  }
}

}  // namespace

// Every format cudaupload takes, random frames: cudaupload ! cudagray equals
// the CPU reference, no frame is uploaded again, and both elements use one
// CUDA context.
TEST(CudaMemory, UploadedFramesConvertOnTheGpuInOneContext) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("cudaupload");
  int formats_tested = 0;
  for (PixelLayout layout : kRgb8Layouts) {
    const char *format = layout_info(layout).name;
    const std::string caps = caps_string(format, 641, 481);
    const Pipeline pipeline(
        "appsrc name=src format=time caps=\"" + caps +
        "\" ! cudaupload name=up ! "
        "video/x-raw(memory:CUDAMemory) ! cudagray backend=cuda name=gray ! appsink name=sink");
    GstElement *upload = pipeline.by_name("up");
    if (!cudaupload_takes(caps)) {
      std::printf("cudaupload does not take %s: not tested through CUDA memory\n", format);
      continue;
    }
    SCOPED_TRACE(format);
    ++formats_tested;
    GstElement *gray = pipeline.by_name("gray");
    ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
    push_and_check(pipeline, layout, kFrames);
    EXPECT_EQ(stat_of(gray, "device-inputs"), kFrames);
    EXPECT_EQ(stat_of(gray, "staged-inputs"), 0u);
    EXPECT_EQ(mean_of(gray, "upload-time-mean-us"), 0.0) << "no frame was uploaded";
    GstObject *ours = cuda_context_of(gray, "sink");
    GstObject *theirs = cuda_context_of(upload, "src");
    EXPECT_NE(ours, nullptr);
    EXPECT_EQ(ours, theirs) << "cudaupload and cudagray use different CUDA contexts";
  }
  EXPECT_GT(formats_tested, 0);
}

namespace {

// The gray frames (depth 8 or 16) that a pipeline of the shape
// "appsrc name=src ... ! appsink name=sink" makes of frames, pushed in turn.
std::vector<GrayImage> gray_through(const std::string &description,
                                    const std::vector<GstBuffer *> &frames, int width, int height,
                                    int depth) {
  std::vector<GrayImage> out;
  const Pipeline pipeline(description);
  if (pipeline.play() == GST_STATE_CHANGE_FAILURE) {
    ADD_FAILURE() << "does not start: " << description;
    return out;
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    GstBuffer *buf = gst_buffer_copy(frames[i]);  // a new buffer over the same memory
    GST_BUFFER_PTS(buf) = i * GST_SECOND / 30;
    EXPECT_EQ(pipeline.push("src", buf), GST_FLOW_OK);
  }
  pipeline.end_of_stream("src");
  for (size_t i = 0; i < frames.size(); ++i) {
    GstSample *sample = pipeline.pull("sink", 10 * GST_SECOND);
    if (!sample) {
      ADD_FAILURE() << "frame " << i << " did not reach the sink: " << description << "\n"
                    << harness::describe(harness::pop_messages(
                           pipeline.bus(),
                           GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING)));
      break;
    }
    out.push_back(gray_of(gst_sample_get_buffer(sample), width, height, depth));
    gst_sample_unref(sample);
  }
  return out;
}

// Whether GStreamer's cudaupload itself carries frame (of caps) into CUDA
// memory: 1.26's fails on some formats at odd sizes ("Failed to copy SYSTEM
// -> CUDA" for NV21 at 641x481) with no cudagray in the pipeline.
bool cudaupload_uploads(const std::string &caps, GstBuffer *frame) {
  const Pipeline pipeline("appsrc name=src format=time caps=\"" + caps +
                          "\" ! cudaupload ! video/x-raw(memory:CUDAMemory) ! fakesink");
  if (pipeline.play() == GST_STATE_CHANGE_FAILURE) return false;
  GstBuffer *copy = gst_buffer_copy(frame);
  GST_BUFFER_PTS(copy) = 0;
  pipeline.push("src", copy);
  pipeline.end_of_stream("src");
  return pipeline.wait_end(10 * GST_SECOND) == GST_MESSAGE_EOS;
}

}  // namespace

// The rows of the format table taken in CUDA memory: one test case each,
// so that the GPU suite's shards share them.
std::vector<guint> cuda_memory_rows() {
  guint n = 0;
  const GstCudaGrayFormat *table = gst_cuda_gray_formats(&n);
  std::vector<guint> rows;
  for (guint row = 0; row < n; ++row)
    if (table[row].cuda_memory) rows.push_back(row);
  return rows;
}

class EveryCudaMemoryFormat : public ::testing::TestWithParam<guint> {};

// Every format of the format table taken in CUDA memory, as cudaupload
// carries it (GStreamer's own layout of the format, random bytes in every
// plane), at an odd and an even size: GRAY8 and GRAY16_LE read where the
// frames are equal the CPU backend's of the same frames in system memory,
// which test_formats holds to the formula. A size that cudaupload itself
// cannot upload is left out with its reason, but every format cudaupload
// takes is tested at one size at least.
TEST_P(EveryCudaMemoryFormat, EqualsTheCpuPath) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("cudaupload");
  guint n = 0;
  const GstCudaGrayFormat &entry = gst_cuda_gray_formats(&n)[GetParam()];
  const char *format = entry.name;
  if (!cudaupload_takes(caps_string(format, 64, 64)))
    GTEST_SKIP() << "cudaupload does not take " << format << ": not tested through CUDA memory";
  int sizes_tested = 0;
  for (const auto &[width, height] : {std::pair{641, 481}, std::pair{640, 480}}) {
    SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height));
    const std::string caps = caps_string(format, width, height);
    GstVideoInfo info;
    gst_video_info_set_format(&info, entry.format, width, height);
    std::vector<GstBuffer *> frames;
    for (int i = 0; i < 3; ++i) {
      std::vector<uint8_t> bytes(GST_VIDEO_INFO_SIZE(&info));
      fill_random(bytes);
      frames.push_back(gst_buffer_new_memdup(bytes.data(), bytes.size()));
    }
    if (cudaupload_uploads(caps, frames[0])) {
      ++sizes_tested;
      for (int depth : {8, 16}) {
        const std::string gray = depth == 16 ? "GRAY16_LE" : "GRAY8";
        SCOPED_TRACE(gray);
        const std::string src = "appsrc name=src format=time caps=\"" + caps + "\" ! ";
        const std::string sink = " ! video/x-raw,format=" + gray + " ! appsink name=sink";
        const std::vector<GrayImage> cpu =
            gray_through(src + "cudagray backend=cpu" + sink, frames, width, height, depth);
        const std::vector<GrayImage> gpu = gray_through(
            src + "cudaupload ! video/x-raw(memory:CUDAMemory) ! cudagray backend=cuda" + sink,
            frames, width, height, depth);
        EXPECT_EQ(cpu.size(), frames.size());
        EXPECT_EQ(gpu.size(), frames.size());
        for (size_t i = 0; i < std::min(cpu.size(), gpu.size()); ++i)
          EXPECT_TRUE(same_pixels(gpu[i], cpu[i])) << "frame " << i;
      }
    } else {
      std::printf(
          "cudaupload itself fails on %s %dx%d: not tested through CUDA memory at that size\n",
          format, width, height);
    }
    for (GstBuffer *b : frames) gst_buffer_unref(b);
  }
  EXPECT_GT(sizes_tested, 0) << "cudaupload carried " << format << " at no size";
}

INSTANTIATE_TEST_SUITE_P(CudaMemory, EveryCudaMemoryFormat, ::testing::ValuesIn(cuda_memory_rows()),
                         [](const auto &info) {
                           guint n = 0;
                           return std::string(gst_cuda_gray_formats(&n)[info.param].name);
                         });

// Every gray frame an appsink gives until EOS (or 10 s without one).
static std::vector<GrayImage> pull_all_gray(GstElement *sink, int width, int height) {
  std::vector<GrayImage> frames;
  while (GstSample *s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) {
    frames.push_back(gray_of(gst_sample_get_buffer(s), width, height));
    gst_sample_unref(s);
  }
  return frames;
}

// NVDEC's NV12 in CUDA memory: gray equals a CPU decode of the same stream
// (H.264 decoding is exact) expanded on the CPU. One pipeline, the encoded
// stream teed to both decoders.
TEST(CudaMemory, Nvh264decOutputEqualsCpuDecode) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("nvh264dec");
  SKIP_WITHOUT_ELEMENT("openh264dec");
  GstElement *pipeline = gst_parse_launch(
      "videotestsrc num-buffers=20 pattern=ball ! video/x-raw,format=I420,width=320,height=240 ! "
      "x264enc ! video/x-h264,profile=constrained-baseline ! h264parse ! tee name=t "
      "t. ! queue ! nvh264dec ! video/x-raw(memory:CUDAMemory) ! cudagray name=gpu ! appsink "
      "name=gpu_out sync=false "
      "t. ! queue ! openh264dec ! cudagray backend=cpu name=cpu ! appsink name=cpu_out sync=false",
      nullptr);
  ASSERT_NE(pipeline, nullptr);
  GstElement *gpu_out = by_name(pipeline, "gpu_out"), *cpu_out = by_name(pipeline, "cpu_out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  const std::vector<GrayImage> gpu = pull_all_gray(gpu_out, 320, 240),
                               cpu = pull_all_gray(cpu_out, 320, 240);
  GstBus *bus = gst_element_get_bus(pipeline);
  EXPECT_EQ(describe(pop_messages(bus, GST_MESSAGE_ERROR)), "");
  gst_object_unref(bus);
  ASSERT_EQ(gpu.size(), 20u);
  ASSERT_EQ(cpu.size(), 20u);
  for (size_t i = 0; i < gpu.size(); ++i) EXPECT_TRUE(same_pixels(gpu[i], cpu[i])) << "frame " << i;
  GstElement *gray = by_name(pipeline, "gpu");
  EXPECT_EQ(stat_of(gray, "device-inputs"), 20u);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  for (GstElement *e : {gray, gpu_out, cpu_out}) gst_object_unref(e);
  gst_object_unref(pipeline);
}

// MJPEG as webcams send it, decoded by nvjpegdec into CUDA memory and read
// there: each frame equal to the same decoder's frame downloaded and
// converted on the CPU (NVDEC's JPEG decoding is not libjpeg's, so the
// decoder is the same on both sides). 4:2:0, as NVDEC decodes JPEG: the
// nvcodec of 1.22 and 1.26 takes no 4:2:2 or gray JPEG ("unhandled chroma
// format") and an H100 creates no 4:4:4 JPEG decoder.
TEST(CudaMemory, NvjpegdecFramesReadInPlaceEqualTheirDownload) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("nvjpegdec");
  SKIP_WITHOUT_ELEMENT("cudadownload");
  constexpr int kFrames = 20, kWidth = 640, kHeight = 480;
  const std::string size = "width=" + std::to_string(kWidth) + ",height=" + std::to_string(kHeight);
  GstElement *pipeline = gst_parse_launch(
      ("videotestsrc num-buffers=" + std::to_string(kFrames) +
       " pattern=ball ! video/x-raw,format=I420," + size +
       ",framerate=30/1 ! jpegenc ! jpegparse ! nvjpegdec ! video/x-raw(memory:CUDAMemory) ! "
       "tee name=t "
       "t. ! queue ! cudagray name=gpu ! appsink name=gpu_out sync=false "
       "t. ! queue ! cudadownload ! video/x-raw ! cudagray backend=cpu name=cpu ! appsink "
       "name=cpu_out sync=false")
          .c_str(),
      nullptr);
  ASSERT_NE(pipeline, nullptr);
  GstElement *gpu_out = by_name(pipeline, "gpu_out"), *cpu_out = by_name(pipeline, "cpu_out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  const std::vector<GrayImage> gpu = pull_all_gray(gpu_out, kWidth, kHeight),
                               cpu = pull_all_gray(cpu_out, kWidth, kHeight);
  GstBus *bus = gst_element_get_bus(pipeline);
  EXPECT_EQ(describe(pop_messages(bus, GST_MESSAGE_ERROR)), "");
  gst_object_unref(bus);
  ASSERT_EQ(gpu.size(), static_cast<size_t>(kFrames));
  ASSERT_EQ(cpu.size(), static_cast<size_t>(kFrames));
  for (size_t i = 0; i < gpu.size(); ++i) EXPECT_TRUE(same_pixels(gpu[i], cpu[i])) << "frame " << i;
  GstElement *gray = by_name(pipeline, "gpu");
  EXPECT_EQ(stat_of(gray, "device-inputs"), static_cast<guint64>(kFrames)) << "read in place";
  gst_element_set_state(pipeline, GST_STATE_NULL);
  for (GstElement *e : {gray, gpu_out, cpu_out}) gst_object_unref(e);
  gst_object_unref(pipeline);
}

// Without a caps filter NVDEC and cudagray agree on CUDA memory (the element
// lists it first); with backend=cpu on system memory (the decoder downloads).
// Both give the same gray frames of the same stream.
TEST(CudaMemory, DecoderNegotiatesCudaMemoryOrSystemMemoryByBackend) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("nvh264dec");
  std::vector<GrayImage> results[2];
  for (const bool on_gpu : {true, false}) {
    SCOPED_TRACE(on_gpu ? "backend=cuda" : "backend=cpu");
    const std::string launch =
        std::string(
            "videotestsrc num-buffers=10 pattern=ball ! "
            "video/x-raw,format=I420,width=320,height=240 ! "
            "x264enc ! video/x-h264,profile=constrained-baseline ! h264parse ! nvh264dec ! "
            "cudagray name=gray backend=") +
        (on_gpu ? "cuda" : "cpu") + " ! appsink name=sink sync=false";
    GstElement *pipeline = gst_parse_launch(launch.c_str(), nullptr);
    ASSERT_NE(pipeline, nullptr);
    GstElement *gray = by_name(pipeline, "gray"), *sink = by_name(pipeline, "sink");
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) {
      results[on_gpu].push_back(gray_of(gst_sample_get_buffer(sample), 320, 240));
      gst_sample_unref(sample);
    }
    GstPad *pad = gst_element_get_static_pad(gray, "sink");
    GstCaps *caps = gst_pad_get_current_caps(pad);
    ASSERT_NE(caps, nullptr);
    EXPECT_EQ(
        gst_caps_features_contains(gst_caps_get_features(caps, 0), "memory:CUDAMemory") != FALSE,
        on_gpu);
    EXPECT_STREQ(gst_structure_get_string(gst_caps_get_structure(caps, 0), "format"), "NV12");
    EXPECT_EQ(stat_of(gray, "device-inputs"), on_gpu ? 10u : 0u);
    gst_caps_unref(caps);
    gst_object_unref(pad);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    for (GstElement *e : {gray, sink}) gst_object_unref(e);
    gst_object_unref(pipeline);
  }
  ASSERT_EQ(results[true].size(), 10u);
  ASSERT_EQ(results[false].size(), 10u);
  for (size_t i = 0; i < 10; ++i)
    EXPECT_TRUE(same_pixels(results[true][i], results[false][i])) << "frame " << i;
}

// cuda-device-id naming another GPU than the pipeline's CUDA memory is an error.
TEST(CudaMemory, DeviceMismatchIsAnError) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("cudaupload");
  std::string reason;
  if (cuda_device_count(&reason) < 2) GTEST_SKIP() << "needs two GPUs to disagree on";
  const PipelineRun run = run_pipeline(
      "videotestsrc num-buffers=3 ! video/x-raw,format=RGBA ! cudaupload cuda-device-id=0 ! "
      "video/x-raw(memory:CUDAMemory) ! cudagray cuda-device-id=1 ! fakesink");
  ASSERT_FALSE(run.errors.empty());
  EXPECT_EQ(run.errors[0], "cuda-device-id=1, but the pipeline's CUDA memory is on device 0");
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
// An application that shares one CUDA context sets it on the pipeline before
// it starts. cudagray then converts CUDA memory inside that context, and
// system memory as usual: the context must not change where its own work runs.
TEST(CudaMemory, ContextSetByTheApplicationBeforeStart) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("cudaupload");
  ASSERT_TRUE(gst_cuda_load_library());
  GstCudaContext *context = gst_cuda_context_new(0);
  ASSERT_NE(context, nullptr);
  GstContext *shared = gst_context_new_cuda_context(context);
  const char *launches[] = {
      "appsrc name=src format=time caps=\"@CAPS@\" ! cudaupload ! video/x-raw(memory:CUDAMemory) ! "
      "cudagray backend=cuda name=gray ! appsink name=sink",
      "appsrc name=src format=time caps=\"@CAPS@\" ! cudagray backend=cuda name=gray ! appsink "
      "name=sink",
  };
  for (const char *launch : launches) {
    SCOPED_TRACE(launch);
    const bool cuda_memory = std::string(launch).find("cudaupload") != std::string::npos;
    std::string description = launch;
    description.replace(description.find("@CAPS@"), 6, caps_string("RGBA", 641, 481));
    const Pipeline pipeline(description);
    gst_element_set_context(pipeline.get(), shared);
    GstElement *gray = pipeline.by_name("gray");
    ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
    push_and_check(pipeline, PixelLayout::RGBA, kFrames);
    EXPECT_EQ(stat_of(gray, "frames"), kFrames);
    EXPECT_EQ(stat_of(gray, "device-inputs"), cuda_memory ? kFrames : 0u);
    if (cuda_memory) {
      EXPECT_EQ(mean_of(gray, "upload-time-mean-us"), 0.0);
    } else {
      EXPECT_GT(mean_of(gray, "upload-time-mean-us"), 0.0);
    }
    if (cuda_memory) {
      EXPECT_EQ(cuda_context_of(gray, "sink"), GST_OBJECT(context));
    }
  }
  gst_context_unref(shared);
  gst_object_unref(context);
}
#endif

// Frames in CUDA memory leave as soon as they are converted, like system
// memory ones (test_element's FrameLeaves): one frame with no further input
// and no EOS comes out within 1 s, and frames 200 ms apart each come out
// before the next is pushed.
TEST(CudaMemory, FramesLeaveWithoutFurtherInput) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("cudaupload");
  std::string description =
      "appsrc name=src format=time caps=\"" + caps_string("RGBA", 641, 481) +
      "\" ! cudaupload ! video/x-raw(memory:CUDAMemory) ! cudagray backend=cuda name=gray"
      " ! appsink name=sink sync=false";
  GstElement *pipeline = gst_parse_launch(description.c_str(), nullptr);
  ASSERT_NE(pipeline, nullptr);
  GstElement *src = by_name(pipeline, "src"), *sink = by_name(pipeline, "sink"),
             *gray = by_name(pipeline, "gray");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  double slowest = 0;
  for (int i = 0; i < 6; ++i) {
    const TestFrame f = random_frame(PixelLayout::RGBA, 641, 481);
    GstBuffer *buf = buffer_for(f);
    GST_BUFFER_PTS(buf) = i * GST_SECOND / 30;
    const gint64 start = g_get_monotonic_time();
    ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), buf), GST_FLOW_OK);
    GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), GST_SECOND);
    ASSERT_NE(sample, nullptr) << "frame " << i << " did not come out within 1 s of its push";
    slowest = std::max(slowest, (g_get_monotonic_time() - start) / 1000.0);
    EXPECT_TRUE(same_pixels(gray_of(gst_sample_get_buffer(sample), 641, 481),
                            cpu_reference(f, kWeightChoices[0])));
    gst_sample_unref(sample);
    g_usleep(200 * 1000);
  }
  EXPECT_EQ(stat_of(gray, "device-inputs"), 6u);
  std::printf("CUDA memory: slowest of 6 frames 200 ms apart out %.2f ms after its push\n",
              slowest);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(gray);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
}

// Parallel NVDEC pipelines under load: every gray frame of every pipeline
// equals the CPU backend's gray of the same stream decoded into system
// memory (where the decoder finishes its work before pushing). From
// GStreamer 1.24 the decoder pushes CUDA memory with its copy still queued
// on its own stream; cudagray must read after it.
TEST(CudaMemory, ParallelDecodersGiveExactFrames) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  SKIP_WITHOUT_ELEMENT("nvh264dec");
  SKIP_WITHOUT_ELEMENT("x264enc");
  struct Clip {
    int width, height, frames;
  };
  const Clip clips[] = {{1920, 1080, 240}, {3840, 2160, 120}};
  char dir_template[] = "/tmp/cudagray-decode-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  for (const Clip &clip : clips) {
    const std::string size = std::to_string(clip.width) + "x" + std::to_string(clip.height);
    SCOPED_TRACE(size);
    const std::string file = dir + "/" + size + ".mp4";
    // a moving, noisy picture: every frame differs from the one before
    const PipelineRun encode = run_pipeline(
        "videotestsrc num-buffers=" + std::to_string(clip.frames) +
            " pattern=snow ! video/x-raw,format=I420,width=" + std::to_string(clip.width) +
            ",height=" + std::to_string(clip.height) +
            ",framerate=30/1 ! "
            "x264enc speed-preset=ultrafast bitrate=40000 key-int-max=30 ! "
            "video/x-h264,profile=high ! "
            "h264parse ! mp4mux ! filesink location=" +
            file,
        120 * GST_SECOND);
    ASSERT_TRUE(encode.errors.empty()) << encode.errors[0];
    auto decode = [&](const std::string &tail) {
      return "filesrc location=" + file + " ! qtdemux ! h264parse ! nvh264dec ! " + tail +
             " ! appsink name=sink sync=false";
    };
    auto pull_all = [&](GstElement *pipeline, std::vector<GrayImage> *frames) {
      GstElement *sink = by_name(pipeline, "sink");
      while (GstSample *sample =
                 gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 30 * GST_SECOND)) {
        frames->push_back(gray_of(gst_sample_get_buffer(sample), clip.width, clip.height));
        gst_sample_unref(sample);
      }
      gst_object_unref(sink);
      GstBus *bus = gst_element_get_bus(pipeline);
      EXPECT_EQ(describe(pop_messages(bus, GST_MESSAGE_ERROR)), "");
      gst_object_unref(bus);
    };
    std::vector<GrayImage> reference;
    GstElement *cpu =
        gst_parse_launch(decode("video/x-raw ! cudagray backend=cpu").c_str(), nullptr);
    ASSERT_NE(cpu, nullptr);
    gst_element_set_state(cpu, GST_STATE_PLAYING);
    pull_all(cpu, &reference);
    gst_element_set_state(cpu, GST_STATE_NULL);
    gst_object_unref(cpu);
    ASSERT_EQ(reference.size(), size_t(clip.frames));

    const int max_inflight[] = {0, 1, 4, 16};
    std::vector<GstElement *> pipelines;
    std::vector<std::vector<GrayImage>> results(std::size(max_inflight));
    for (int m : max_inflight) {
      pipelines.push_back(gst_parse_launch(
          decode("video/x-raw(memory:CUDAMemory) ! cudagray backend=cuda name=gray max-inflight=" +
                 std::to_string(m))
              .c_str(),
          nullptr));
      ASSERT_NE(pipelines.back(), nullptr);
    }
    std::vector<std::thread> pullers;
    for (size_t i = 0; i < pipelines.size(); ++i) {
      gst_element_set_state(pipelines[i], GST_STATE_PLAYING);
      pullers.emplace_back(pull_all, pipelines[i], &results[i]);
    }
    for (std::thread &t : pullers) t.join();
    for (size_t i = 0; i < pipelines.size(); ++i) {
      SCOPED_TRACE("max-inflight=" + std::to_string(max_inflight[i]));
      GstElement *gray = by_name(pipelines[i], "gray");
      EXPECT_EQ(stat_of(gray, "device-inputs"), uint64_t(clip.frames));
      gst_object_unref(gray);
      gst_element_set_state(pipelines[i], GST_STATE_NULL);
      gst_object_unref(pipelines[i]);
      ASSERT_EQ(results[i].size(), reference.size());
      int wrong = 0;
      for (size_t f = 0; f < reference.size(); ++f)
        if (!same_pixels(results[i][f], reference[f])) ++wrong;
      EXPECT_EQ(wrong, 0) << wrong << " of " << reference.size() << " frames differ";
    }
    std::remove(file.c_str());
  }
  rmdir(dir.c_str());
}

#ifdef CUDAGRAY_HAVE_GST_CUDA
namespace {

// f's rows copied to dst, laid out as the planes of a CUDA memory (laid_out).
void place_rows(const TestFrame &f, const GstVideoInfo &laid_out, uint8_t *dst) {
  const size_t row_bytes = layout_info(f.layout).row_bytes(f.width);
  for (int p = 0; p < f.planes; ++p)
    for (int y = 0; y < f.height; ++y)
      memcpy(dst + GST_VIDEO_INFO_PLANE_OFFSET(&laid_out, p) +
                 y * GST_VIDEO_INFO_PLANE_STRIDE(&laid_out, p),
             &f.bytes[f.offset[p] + y * f.stride[p]], row_bytes);
}

// A buffer of the CUDA memory mem (taken) holding f, with the video meta of
// its layout.
GstBuffer *buffer_of_cuda_memory(GstMemory *mem, const TestFrame &f) {
  GstVideoInfo laid_out = GST_CUDA_MEMORY_CAST(mem)->info;
  GstBuffer *buf = gst_buffer_new();
  gst_buffer_append_memory(buf, mem);
  gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_INFO_FORMAT(&laid_out),
                                 f.width, f.height, GST_VIDEO_INFO_N_PLANES(&laid_out),
                                 laid_out.offset, laid_out.stride);
  return buf;
}

}  // namespace
#endif

#if defined(CUDAGRAY_HAVE_GST_CUDA) && GST_CHECK_VERSION(1, 24, 0)
namespace {

// A buffer of CUDA memory in context whose content is f, written on a stream
// of its own behind a 3 ms spin and flagged NEED_SYNC, as a 1.24+ decoder
// pushes it; the write is still queued when this returns. staged is device
// memory holding f's bytes at least until then.
GstBuffer *pending_cuda_buffer(GstCudaContext *context, const TestFrame &f, void *staged) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, video_format(f.layout), f.width, f.height);
  GstCudaStream *stream = gst_cuda_stream_new(context);
  EXPECT_NE(stream, nullptr);
  GstMemory *mem = gst_cuda_allocator_alloc(nullptr, context, stream, &info);
  EXPECT_NE(mem, nullptr);
  // f's bytes laid out as the memory's planes
  std::vector<uint8_t> placed(gst_memory_get_sizes(mem, nullptr, nullptr), 0);
  place_rows(f, GST_CUDA_MEMORY_CAST(mem)->info, placed.data());
  GstMapInfo map;
  EXPECT_TRUE(gst_memory_map(mem, &map, GstMapFlags(GST_MAP_WRITE | GST_MAP_CUDA)));
  EXPECT_TRUE(gst_cuda_context_push(context));
  EXPECT_EQ(cudaMemcpy(staged, placed.data(), placed.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(
      write_after_spin(gst_cuda_stream_get_handle(stream), map.data, staged, placed.size(), 3000),
      "");
  gst_cuda_context_pop(nullptr);
  gst_memory_unmap(mem, &map);
  GST_MINI_OBJECT_FLAG_SET(mem, GST_CUDA_MEMORY_TRANSFER_NEED_SYNC);
  gst_cuda_stream_unref(stream);  // the memory keeps it
  return buffer_of_cuda_memory(mem, f);
}

}  // namespace

// An upstream that writes each frame on a separate CUDA stream behind a slow
// kernel and pushes it at once, flagged NEED_SYNC with that stream: cudagray
// gives each frame's final content, several sizes and frames in flight.
TEST(CudaMemory, WaitsForWritesPendingOnTheProducersStream) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  ASSERT_TRUE(gst_cuda_load_library());
  GstCudaContext *context = gst_cuda_context_new(0);
  ASSERT_NE(context, nullptr);
  GstContext *shared = gst_context_new_cuda_context(context);
  struct Case {
    PixelLayout layout;
    int width, height, max_inflight, frames;
  };
  // formats that GStreamer's CUDA allocator lays out in every version; NV12
  // (the decoders') is ParallelDecodersGiveExactFrames' case
  const Case cases[] = {{PixelLayout::RGBA, 1920, 1080, 4, 120},
                        {PixelLayout::RGBx, 3840, 2160, 1, 60},
                        {PixelLayout::BGRx, 641, 481, 16, 120},
                        {PixelLayout::BGRA, 4097, 3, 2, 60}};
  for (const Case &c : cases) {
    const char *format = layout_info(c.layout).name;
    SCOPED_TRACE(std::string(format) + " " + std::to_string(c.width) + "x" +
                 std::to_string(c.height) + " max-inflight=" + std::to_string(c.max_inflight));
    const std::string caps = "video/x-raw(memory:CUDAMemory),format=" + std::string(format) +
                             ",width=" + std::to_string(c.width) +
                             ",height=" + std::to_string(c.height) + ",framerate=30/1";
    GstElement *pipeline = gst_parse_launch(
        ("appsrc name=src format=time max-buffers=1 block=true caps=\"" + caps +
         "\" ! cudagray backend=cuda name=gray max-inflight=" + std::to_string(c.max_inflight) +
         " ! appsink name=sink sync=false")
            .c_str(),
        nullptr);
    ASSERT_NE(pipeline, nullptr);
    gst_element_set_context(pipeline, shared);
    GstElement *src = by_name(pipeline, "src"), *sink = by_name(pipeline, "sink");
    ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    std::vector<TestFrame> frames;
    std::vector<void *> staged(c.frames);
    std::thread pusher([&] {
      for (int i = 0; i < c.frames; ++i)
        frames.push_back(random_frame(c.layout, c.width, c.height));
      for (int i = 0; i < c.frames; ++i) {
        gst_cuda_context_push(context);
        EXPECT_EQ(cudaMalloc(&staged[i], frames[i].bytes.size() * 2 + (1 << 20)), cudaSuccess);
        gst_cuda_context_pop(nullptr);
        GstBuffer *buf = pending_cuda_buffer(context, frames[i], staged[i]);
        GST_BUFFER_PTS(buf) = i * GST_SECOND / 30;
        EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), buf), GST_FLOW_OK);
      }
      gst_app_src_end_of_stream(GST_APP_SRC(src));
    });
    int received = 0, wrong = 0;
    std::vector<GrayImage> results;
    while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 30 * GST_SECOND)) {
      results.push_back(gray_of(gst_sample_get_buffer(sample), c.width, c.height));
      gst_sample_unref(sample);
      ++received;
    }
    pusher.join();
    for (int i = 0; i < received && i < c.frames; ++i) {
      GrayImage expected(c.width, c.height);
      convert_cpu(frames[i].conversion(expected.depth), frames[i].view(), expected.frame(),
                  weights_of(kWeightChoices[0]));
      if (!same_pixels(results[i], expected)) ++wrong;
    }
    EXPECT_EQ(received, c.frames);
    EXPECT_EQ(wrong, 0) << wrong << " of " << received << " frames differ from their final content";
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_cuda_context_push(context);
    for (void *p : staged) cudaFree(p);
    gst_cuda_context_pop(nullptr);
    gst_object_unref(src);
    gst_object_unref(sink);
    gst_object_unref(pipeline);
  }
  gst_context_unref(shared);
  gst_object_unref(context);
}

#else
TEST(CudaMemory, WaitsForWritesPendingOnTheProducersStream) {
  GTEST_SKIP() << "built against GStreamer before 1.24, whose CUDA producers finish their writes "
                  "before pushing";
}
#endif

#ifdef CUDAGRAY_HAVE_GST_CUDA
namespace {

// A buffer of one CUDA memory of context holding f (written through a host
// mapping), with the video meta of its layout.
GstBuffer *cuda_buffer_of(GstCudaContext *context, const TestFrame &f) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, video_format(f.layout), f.width, f.height);
  gst_cuda_memory_init_once();
  GstAllocator *allocator = gst_allocator_find(GST_CUDA_MEMORY_TYPE_NAME);
  if (!allocator) return nullptr;
#if GST_CHECK_VERSION(1, 24, 0)
  GstMemory *mem = gst_cuda_allocator_alloc(GST_CUDA_ALLOCATOR(allocator), context, nullptr, &info);
#else
  GstMemory *mem = gst_cuda_allocator_alloc(GST_CUDA_ALLOCATOR(allocator), context, &info);
#endif
  gst_object_unref(allocator);
  if (!mem) return nullptr;
  GstMapInfo map;
  if (!gst_memory_map(mem, &map, GST_MAP_WRITE)) {
    gst_memory_unref(mem);
    return nullptr;
  }
  place_rows(f, GST_CUDA_MEMORY_CAST(mem)->info, map.data);
  gst_memory_unmap(mem, &map);
  return buffer_of_cuda_memory(mem, f);
}

}  // namespace

// CUDA memory of a context the pipeline does not share: cudagray, sized at
// set_caps for frames on the GPU, reads host mappings of it instead,
// reconfigured once with upload buffers of its own; every frame still
// equals the CPU, none counts as read on the device, and nothing is posted.
TEST(CudaMemory, MemoryOfAnotherContextIsReadThroughHostMappings) {
  SKIP_WITHOUT_CUDA_MEMORY_INPUT();
  ASSERT_TRUE(gst_cuda_load_library());
  GstCudaContext *theirs = gst_cuda_context_new(0);
  ASSERT_NE(theirs, nullptr);
  constexpr int kWidth = 641, kHeight = 481, kCount = 12;
  const std::string caps =
      "video/x-raw(memory:CUDAMemory),format=RGBA,width=" + std::to_string(kWidth) +
      ",height=" + std::to_string(kHeight) + ",framerate=30/1";
  GstElement *pipeline = gst_parse_launch(
      ("appsrc name=src format=time caps=\"" + caps +
       "\" ! cudagray backend=cuda name=gray max-inflight=4 ! appsink name=sink sync=false")
          .c_str(),
      nullptr);
  ASSERT_NE(pipeline, nullptr);
  GstElement *src = by_name(pipeline, "src"), *sink = by_name(pipeline, "sink"),
             *gray = by_name(pipeline, "gray");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  std::vector<TestFrame> frames;
  for (int i = 0; i < kCount; ++i) {
    frames.push_back(random_frame(PixelLayout::RGBA, kWidth, kHeight));
    GstBuffer *buf = cuda_buffer_of(theirs, frames[i]);
    ASSERT_NE(buf, nullptr);
    GST_BUFFER_PTS(buf) = i * GST_SECOND / 30;
    ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), buf), GST_FLOW_OK);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  int received = 0;
  while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) {
    if (received < kCount) {
      EXPECT_TRUE(same_pixels(gray_of(gst_sample_get_buffer(sample), kWidth, kHeight),
                              cpu_reference(frames[received], kWeightChoices[0])))
          << "frame " << received;
    }
    gst_sample_unref(sample);
    ++received;
  }
  EXPECT_EQ(received, kCount);
  EXPECT_EQ(stat_of(gray, "frames"), (uint64_t)kCount);
  EXPECT_EQ(stat_of(gray, "device-inputs"), 0u);
  GstBus *bus = gst_element_get_bus(pipeline);
  GstMessage *error = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  EXPECT_EQ(error, nullptr) << "an error was posted";
  if (error) gst_message_unref(error);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(gray);
  gst_object_unref(pipeline);
  gst_object_unref(theirs);
}
#endif
