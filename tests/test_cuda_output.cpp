// SPDX-License-Identifier: LGPL-2.1-or-later
// GRAY8 left on the GPU (memory:CUDAMemory output): the kernel writes into
// CUDA memory of the element's context and nothing comes back to the host.
// Results are read back with cudaMemcpy2D from the device pointer at the
// pitch of the buffer's video meta and compared with the CPU reference.
// Needs a GPU and cudagray built with gstreamer-cuda-1.0; skipped with the
// reason otherwise.
#include <cuda_runtime.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "element_harness.h"

#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#if GST_CHECK_VERSION(1, 24, 0)
#include <gst/cuda/gstcudastream.h>
#endif

using namespace cudagray;
using namespace cudagray::test;

namespace {

constexpr const char *kCudaGray8 = "video/x-raw(memory:CUDAMemory),format=GRAY8";

// The gray frame (depth 8: GRAY8, 16: GRAY16_LE) a buffer of CUDA memory
// holds: the buffer must be one CUDA memory with a video meta of that
// format; on 1.24+ its stream is waited for when it is flagged NEED_SYNC, as
// a consumer must. The memory's context is returned in *context (transfer
// none).
GrayImage download_gray(GstBuffer *buf, int width, int height, GstCudaContext **context = nullptr,
                        int depth = 8) {
  const GstVideoFormat format = depth == 16 ? GST_VIDEO_FORMAT_GRAY16_LE : GST_VIDEO_FORMAT_GRAY8;
  GrayImage img(width, height, 0, depth);
  GstMemory *mem = gst_buffer_n_memory(buf) == 1 ? gst_buffer_peek_memory(buf, 0) : nullptr;
  if (!mem || !gst_is_cuda_memory(mem)) {
    ADD_FAILURE() << "the output buffer is not one CUDA memory";
    return img;
  }
  GstCudaMemory *cmem = GST_CUDA_MEMORY_CAST(mem);
  if (context) *context = cmem->context;
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buf);
  EXPECT_NE(meta, nullptr) << "no video meta: the pitch is unknown";
  if (meta) {
    EXPECT_EQ(meta->format, format);
  }
#if GST_CHECK_VERSION(1, 24, 0)
  if (GST_MEMORY_FLAG_IS_SET(mem, GST_CUDA_MEMORY_TRANSFER_NEED_SYNC)) gst_cuda_memory_sync(cmem);
#endif
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, width, height);
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buf, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA))) {
    ADD_FAILURE() << "the output buffer cannot be mapped for CUDA";
    return img;
  }
  EXPECT_TRUE(gst_cuda_context_push(cmem->context));
  const cudaError_t copied = cudaMemcpy2D(
      img.bytes.data(), img.stride, GST_VIDEO_FRAME_PLANE_DATA(&frame, 0),
      GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0), img.row_bytes(), height, cudaMemcpyDeviceToHost);
  gst_cuda_context_pop(nullptr);
  EXPECT_EQ(copied, cudaSuccess) << cudaGetErrorString(copied);
  gst_video_frame_unmap(&frame);
  return img;
}

// One input frame as a buffer, and the gray the CPU makes of it. RGB-family
// layouts: random padded strides (video meta); YUV: GStreamer's own layout
// of the format, chroma included, limited range (caps without colorimetry).
struct Input {
  GstBuffer *buffer;
  GrayImage expected;
};

const char *const kYuvFormats[] = {"I420", "YV12", "NV12", "NV21", "Y444", "Y42B"};

Input random_input(const std::string &format, int width, int height) {
  for (PixelLayout layout : kRgb8Layouts)
    if (format == layout_info(layout).name) {
      const TestFrame f = random_frame(layout, width, height);
      return {buffer_for(f), cpu_reference(f, kWeightChoices[0])};
    }
  GstVideoInfo info;
  gst_video_info_set_format(&info, gst_video_format_from_string(format.c_str()), width, height);
  TestFrame luma = random_frame(PixelLayout::Luma, width, height, Rows::Tight);
  luma.bytes.resize(GST_VIDEO_INFO_SIZE(&info));
  fill_random(luma.bytes);
  luma.offset[0] = GST_VIDEO_INFO_PLANE_OFFSET(&info, 0);
  luma.stride[0] = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
  GrayImage expected(width, height);
  convert_cpu(luma.conversion(8, true), luma.view(), expected.frame(),
              weights_of(kWeightChoices[0]));
  return {gst_buffer_new_memdup(luma.bytes.data(), luma.bytes.size()), expected};
}

// appsrc name=src ! <middle> ! cudagray name=gray <settings> ! GRAY8 in CUDA
// memory ! appsink name=sink, running.
struct CudaOutputPipeline : Pipeline {
  GstElement *src, *gray, *sink;  // owned by the pipeline
  CudaOutputPipeline(const std::string &caps, const std::string &middle,
                     const std::string &settings, GstContext *shared = nullptr)
      : Pipeline("appsrc name=src format=time caps=\"" + caps + "\" ! " + middle +
                 "cudagray backend=cuda name=gray " + settings + " ! " + kCudaGray8 +
                 " ! appsink name=sink sync=false"),
        src(by_name("src")),
        gray(by_name("gray")),
        sink(by_name("sink")) {
    if (shared) gst_element_set_context(get(), shared);
  }
  bool play() { return Pipeline::play() != GST_STATE_CHANGE_FAILURE; }
  // The errors on the bus, or "".
  std::string error() { return describe(pop_messages(bus(), GST_MESSAGE_ERROR)); }
  // Pushes the inputs, ends the stream, and counts the outputs that differ
  // from the inputs' expected gray; also checks what each output is.
  int push_and_count_wrong(std::vector<Input> &inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      GST_BUFFER_PTS(inputs[i].buffer) = i * GST_SECOND / 30;
      EXPECT_EQ(gst_app_src_push_buffer(GST_APP_SRC(src), inputs[i].buffer), GST_FLOW_OK);
    }
    gst_app_src_end_of_stream(GST_APP_SRC(src));
    int wrong = 0;
    for (const Input &in : inputs) {
      GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 20 * GST_SECOND);
      if (!sample) {
        ADD_FAILURE() << "a frame did not reach the sink: " << error();
        return -1;
      }
      GstBuffer *buf = gst_sample_get_buffer(sample);
#if GST_CHECK_VERSION(1, 24, 0)
      GstMemory *mem = gst_buffer_peek_memory(buf, 0);
      EXPECT_TRUE(gst_is_cuda_memory(mem) && gst_cuda_memory_get_stream(GST_CUDA_MEMORY_CAST(mem)))
          << "1.24+: the output memory carries the element's stream";
#endif
      if (!same_pixels(download_gray(buf, in.expected.width, in.expected.height), in.expected))
        ++wrong;
      gst_sample_unref(sample);
    }
    // a frame whose memory carries a stream (1.24+) leaves before its
    // conversion ends and is counted in the stats after: they are whole
    // once the EOS behind it is out
    EXPECT_EQ(wait_end(20 * GST_SECOND), GST_MESSAGE_EOS) << error();
    return wrong;
  }
};

}  // namespace

// Every format the element takes, every size class, from system memory
// (upload, kernel) into GRAY8 in CUDA memory: each frame equals the CPU, no
// frame is downloaded, and the source caps say CUDA memory.
TEST(CudaOutput, EveryFormatAndSizeFromSystemMemoryIsExact) {
  SKIP_WITHOUT_GPU();
  std::vector<std::string> formats;
  for (PixelLayout layout : kRgb8Layouts) formats.push_back(layout_info(layout).name);
  formats.insert(formats.end(), std::begin(kYuvFormats), std::end(kYuvFormats));
  std::vector<Size> sizes = kSizes;
  sizes.push_back({3840, 2160});
  for (const std::string &format : formats) {
    for (const Size &size : sizes) {
      SCOPED_TRACE(format + " " + std::to_string(size.width) + "x" + std::to_string(size.height));
      CudaOutputPipeline p(caps_string(format.c_str(), size.width, size.height), "", "");
      ASSERT_TRUE(p.play()) << p.error();
      std::vector<Input> inputs;
      for (int i = 0; i < 3; ++i) inputs.push_back(random_input(format, size.width, size.height));
      EXPECT_EQ(p.push_and_count_wrong(inputs), 0);
      EXPECT_EQ(stat_of(p.gray, "device-outputs"), 3u);
      GstPad *pad = gst_element_get_static_pad(p.gray, "src");
      GstCaps *caps = gst_pad_get_current_caps(pad);
      ASSERT_NE(caps, nullptr);
      EXPECT_TRUE(gst_caps_features_contains(gst_caps_get_features(caps, 0), "memory:CUDAMemory"));
      gst_caps_unref(caps);
      gst_object_unref(pad);
    }
  }
}

namespace {

// Whether cudaupload's sink template takes caps (1.22's lacks xRGB and xBGR,
// which then fail at the first buffer, not at the state change).
bool cudaupload_takes(const std::string &caps) {
  GstElementFactory *factory = gst_element_factory_find("cudaupload");
  bool takes = false;
  for (const GList *t = gst_element_factory_get_static_pad_templates(factory); t; t = t->next) {
    auto *templ = static_cast<GstStaticPadTemplate *>(t->data);
    if (templ->direction != GST_PAD_SINK) continue;
    GstCaps *taken = gst_static_pad_template_get_caps(templ),
            *wanted = gst_caps_from_string(caps.c_str());
    takes = gst_caps_can_intersect(wanted, taken);
    gst_caps_unref(taken);
    gst_caps_unref(wanted);
  }
  gst_object_unref(factory);
  return takes;
}

}  // namespace

// An 8K frame, and frames already in CUDA memory (cudaupload, each format it
// takes): no transfer at all, each frame equal to the CPU.
TEST(CudaOutput, CudaMemoryInAndEightKAreExact) {
  SKIP_WITHOUT_GPU();
  {
    SCOPED_TRACE("RGBx 7680x4320");
    CudaOutputPipeline p(caps_string("RGBx", 7680, 4320), "", "");
    ASSERT_TRUE(p.play()) << p.error();
    std::vector<Input> inputs;
    for (int i = 0; i < 2; ++i) inputs.push_back(random_input("RGBx", 7680, 4320));
    EXPECT_EQ(p.push_and_count_wrong(inputs), 0);
  }
  SKIP_WITHOUT_ELEMENT("cudaupload");
  int formats_tested = 0;
  for (PixelLayout layout : kRgb8Layouts) {
    const char *format = layout_info(layout).name;
    for (const Size size : {Size{641, 481}, Size{4097, 3}}) {
      const std::string caps = caps_string(format, size.width, size.height);
      if (!cudaupload_takes(caps)) {
        std::printf("cudaupload does not take %s: not tested from CUDA memory\n", format);
        break;
      }
      CudaOutputPipeline p(caps, "cudaupload ! video/x-raw(memory:CUDAMemory) ! ", "");
      if (!p.play()) {
        std::printf("cudaupload does not take %s %dx%d: not tested from CUDA memory\n", format,
                    size.width, size.height);
        continue;
      }
      SCOPED_TRACE(std::string(format) + " " + std::to_string(size.width) + "x" +
                   std::to_string(size.height));
      std::vector<Input> inputs;
      for (int i = 0; i < 3; ++i) inputs.push_back(random_input(format, size.width, size.height));
      const int wrong = p.push_and_count_wrong(inputs);
      if (wrong < 0 && p.error().empty()) continue;
      EXPECT_EQ(wrong, 0);
      EXPECT_EQ(stat_of(p.gray, "device-inputs"), 3u);
      EXPECT_EQ(stat_of(p.gray, "device-outputs"), 3u);
      ++formats_tested;
    }
  }
  EXPECT_GT(formats_tested, 0);
}

// 10^4 frames through the element's own pool: its buffers are reused, so
// there are never more output memories than buffers out at once: at most
// max-inflight in the element, appsink's queue, and the sample the test
// holds (appsink keeps no other; the pool's max-inflight + 1 at start are
// fewer). A pool that allocated per frame would show one per frame. Memories
// are told apart by a mark on each GstMemory, not by device address, which a
// pool that freed and reallocated every frame could get back each time. Free
// device memory is not compared: the driver's own allocations move it.
TEST(CudaOutput, PoolIsReusedWithoutDeviceMemoryGrowth) {
  SKIP_WITHOUT_GPU();
  constexpr int kWidth = 641, kHeight = 481, kFrames = 10000;
  constexpr guint kMaxInflight = 4, kSinkQueue = 2;
  CudaOutputPipeline p("video/x-raw,format=RGBx,width=641,height=481,framerate=30/1", "",
                       "max-inflight=" + std::to_string(kMaxInflight));
  g_object_set(p.src, "block", TRUE, "max-buffers", guint64(8), nullptr);
  g_object_set(p.sink, "max-buffers", kSinkQueue, nullptr);
  ASSERT_TRUE(p.play()) << p.error();
  std::vector<TestFrame> frames;
  for (int i = 0; i < 16; ++i) frames.push_back(random_frame(PixelLayout::RGBx, kWidth, kHeight));
  std::thread pusher([&] {
    for (int i = 0; i < kFrames; ++i) {
      GstBuffer *buf = buffer_for(frames[i % frames.size()]);
      GST_BUFFER_PTS(buf) = i * GST_SECOND / 30;
      if (gst_app_src_push_buffer(GST_APP_SRC(p.src), buf) != GST_FLOW_OK) break;
    }
    gst_app_src_end_of_stream(GST_APP_SRC(p.src));
  });
  const GQuark seen = g_quark_from_static_string("cudagray-test-seen");
  guint memories = 0;
  int received = 0, wrong = 0;
  while (GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(p.sink), 20 * GST_SECOND)) {
    GstBuffer *buf = gst_sample_get_buffer(sample);
    auto *mem = GST_MINI_OBJECT_CAST(gst_buffer_peek_memory(buf, 0));
    if (!gst_mini_object_get_qdata(mem, seen)) {
      gst_mini_object_set_qdata(mem, seen, GINT_TO_POINTER(TRUE), nullptr);
      ++memories;
    }
    if (received % 997 == 0 &&
        !same_pixels(download_gray(buf, kWidth, kHeight),
                     cpu_reference(frames[received % frames.size()], kWeightChoices[0])))
      ++wrong;
    gst_sample_unref(sample);
    ++received;
  }
  pusher.join();
  EXPECT_EQ(received, kFrames) << p.error();
  EXPECT_EQ(wrong, 0);
  EXPECT_LE(memories, kMaxInflight + kSinkQueue + 1)
      << "the output pool keeps allocating: " << memories << " memories for " << received
      << " frames";
  std::printf("%u output memories for %d frames\n", memories, received);
}

// With frames in flight (max-inflight 4): EOS lets every frame out first; a
// flush drops what is in flight and the frames after it are exact; a caps
// change (other size and format) waits for the frames before it.
TEST(CudaOutput, EosFlushAndCapsChangeWithFramesInFlight) {
  SKIP_WITHOUT_GPU();
  Harness harness({"backend=cuda", "max-inflight=4"});
  gst_harness_set_sink_caps_str(harness.h, kCudaGray8);
  auto push_frames = [&](const char *format, int width, int height, int count) {
    std::vector<Input> inputs;
    for (int i = 0; i < count; ++i) {
      inputs.push_back(random_input(format, width, height));
      EXPECT_EQ(gst_harness_push(harness.h, inputs.back().buffer), GST_FLOW_OK);
    }
    return inputs;
  };
  auto pull_and_compare = [&](const std::vector<Input> &inputs) {
    for (const Input &in : inputs) {
      GstBuffer *out = gst_harness_pull(harness.h);
      ASSERT_NE(out, nullptr) << harness.pop_message(GST_MESSAGE_ERROR);
      EXPECT_TRUE(
          same_pixels(download_gray(out, in.expected.width, in.expected.height), in.expected));
      gst_buffer_unref(out);
    }
  };
  harness.set_caps(caps_string("BGRx", 641, 481));
  const std::vector<Input> first = push_frames("BGRx", 641, 481, 6);
  harness.set_caps(caps_string("NV12", 1920, 1080));  // waits for the six before it
  pull_and_compare(first);
  const std::vector<Input> second = push_frames("NV12", 1920, 1080, 5);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
  pull_and_compare(second);

  Harness flushed({"backend=cuda", "max-inflight=4"});
  gst_harness_set_sink_caps_str(flushed.h, kCudaGray8);
  flushed.set_caps(caps_string("RGB", 1920, 1080));
  for (int i = 0; i < 4; ++i) gst_harness_push(flushed.h, random_input("RGB", 1920, 1080).buffer);
  ASSERT_TRUE(gst_harness_push_event(flushed.h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(flushed.h, gst_event_new_flush_stop(TRUE)));
  while (GstBuffer *early = gst_harness_try_pull(flushed.h))
    gst_buffer_unref(early);  // out before the flush
  GstSegment segment;         // flush-stop dropped the one before
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(flushed.h, gst_event_new_segment(&segment)));
  std::vector<Input> after;
  for (int i = 0; i < 3; ++i) {
    after.push_back(random_input("RGB", 1920, 1080));
    ASSERT_EQ(gst_harness_push(flushed.h, after.back().buffer), GST_FLOW_OK);
  }
  for (const Input &in : after) {
    GstBuffer *out = gst_harness_pull(flushed.h);
    ASSERT_NE(out, nullptr) << flushed.pop_message(GST_MESSAGE_ERROR);
    EXPECT_TRUE(same_pixels(download_gray(out, 1920, 1080), in.expected));
    gst_buffer_unref(out);
  }
  EXPECT_EQ(flushed.pop_message(GST_MESSAGE_ERROR), "");
}

namespace {

// Answers the element's ALLOCATION query at the appsink with `pool`.
GstPadProbeReturn offer_pool(GstPad *, GstPadProbeInfo *info, gpointer pool) {
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY(info);
  if (GST_QUERY_TYPE(query) != GST_QUERY_ALLOCATION) return GST_PAD_PROBE_OK;
  gst_query_add_allocation_pool(query, GST_BUFFER_POOL(pool), 0, 2, 0);
  return GST_PAD_PROBE_HANDLED;
}

// Runs RGBA frames to CUDA-memory GRAY8 with downstream offering `pool` (if
// any), in a pipeline sharing `context` with the application; checks every
// frame and returns the pool (a reference) and context of the first output
// buffer's memory.
void run_with_downstream_pool(GstCudaContext *context, GstBufferPool *pool, GstBufferPool **used,
                              GstCudaContext **written_in) {
  GstContext *shared = gst_context_new_cuda_context(context);
  CudaOutputPipeline p(caps_string("RGBA", 641, 481), "", "", shared);
  gst_context_unref(shared);
  GstPad *sink_pad = gst_element_get_static_pad(p.sink, "sink");
  if (pool)
    gst_pad_add_probe(sink_pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM, offer_pool, pool, nullptr);
  gst_object_unref(sink_pad);
  ASSERT_TRUE(p.play()) << p.error();
  std::vector<Input> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back(random_input("RGBA", 641, 481));
  for (size_t i = 0; i < inputs.size(); ++i) {
    GST_BUFFER_PTS(inputs[i].buffer) = i * GST_SECOND / 30;
    ASSERT_EQ(gst_app_src_push_buffer(GST_APP_SRC(p.src), inputs[i].buffer), GST_FLOW_OK);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(p.src));
  for (size_t i = 0; i < inputs.size(); ++i) {
    GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(p.sink), 20 * GST_SECOND);
    ASSERT_NE(sample, nullptr) << p.error();
    GstBuffer *buf = gst_sample_get_buffer(sample);
    if (i == 0) *used = buf->pool ? GST_BUFFER_POOL(gst_object_ref(buf->pool)) : nullptr;
    EXPECT_TRUE(same_pixels(download_gray(buf, 641, 481, i == 0 ? written_in : nullptr),
                            inputs[i].expected));
    gst_sample_unref(sample);
  }
}

}  // namespace

// The pool a cudagray element writes into when downstream offers none: its
// own, for 641x481 GRAY8 in context, inactive once the element has stopped.
GstBufferPool *element_pool(GstCudaContext *context) {
  GstBufferPool *pool = nullptr;
  GstCudaContext *written_in = nullptr;
  run_with_downstream_pool(context, nullptr, &pool, &written_in);
  EXPECT_EQ(written_in, context);
  return pool;
}

// Many cameras starting together in one process and one CUDA context: 32
// pipelines whose frames stay on the GPU start at once, and every one must
// convert while the others stream. CUDA's context lock lets launches in
// ahead of a waiting allocation, and launches hold it while they queue for
// the GPU: until the element's allocations went ahead of its streaming, the
// pipelines that started last converted nothing for as long as the others
// ran. How soon they all convert depends on the machine's load (7 s with
// the whole GPU suite beside it), so the wait is generous and not asserted.
TEST(CudaOutput, PipelinesStartingTogetherInOneContextAllConvert) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_ELEMENT("cudaupload");
  constexpr int kPipelines = 32, kWidth = 320, kHeight = 240;
  constexpr guint64 kAhead = 4;  // frames pushed and not yet at the sink, at most
  ASSERT_TRUE(gst_cuda_load_library());
  GstCudaContext *context = gst_cuda_context_new(0);
  ASSERT_NE(context, nullptr);
  GstContext *shared = gst_context_new_cuda_context(context);
  const Input input = random_input("RGBx", kWidth, kHeight);
  const std::string caps = caps_string("RGBx", kWidth, kHeight);
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::atomic<guint64> converted[kPipelines] = {};
  bool first_exact[kPipelines] = {};
  std::mutex lock;
  std::condition_variable first_frame;
  int idle = kPipelines;  // pipelines yet to convert a frame, under lock
  std::vector<std::thread> cameras;
  for (int t = 0; t < kPipelines; ++t)
    cameras.emplace_back([&, t] {
      CudaOutputPipeline p(caps, "cudaupload ! video/x-raw(memory:CUDAMemory) ! ", "", shared);
      ++ready;
      while (ready < kPipelines) std::this_thread::yield();
      if (!p.play()) {
        ADD_FAILURE() << p.error();
        return;
      }
      for (guint64 pushed = 0; !stop;) {
        if (pushed - converted[t] < kAhead) {
          GstBuffer *frame = gst_buffer_copy(input.buffer);  // the same memory, its own PTS
          GST_BUFFER_PTS(frame) = pushed++ * GST_SECOND / 30;
          if (gst_app_src_push_buffer(GST_APP_SRC(p.src), frame) != GST_FLOW_OK) break;
          continue;
        }
        GstSample *sample = gst_app_sink_try_pull_sample(GST_APP_SINK(p.sink), 10 * GST_MSECOND);
        if (!sample) continue;
        if (converted[t]++ == 0) {
          first_exact[t] = same_pixels(
              download_gray(gst_sample_get_buffer(sample), kWidth, kHeight), input.expected);
          std::lock_guard<std::mutex> held(lock);
          --idle;
          first_frame.notify_one();
        }
        gst_sample_unref(sample);
      }
    });
  int still_idle;
  {
    std::unique_lock<std::mutex> held(lock);
    first_frame.wait_for(held, std::chrono::seconds(120), [&] { return idle == 0; });
    still_idle = idle;
  }
  stop = true;
  for (std::thread &t : cameras) t.join();
  EXPECT_EQ(still_idle, 0)
      << "pipelines that had converted no frame after 120 s of the others streaming";
  for (int t = 0; t < kPipelines; ++t) EXPECT_TRUE(first_exact[t]) << "pipeline " << t;
  gst_buffer_unref(input.buffer);
  gst_context_unref(shared);
  gst_object_unref(context);
}

// A downstream pool for GRAY8 CUDA memory of the element's context (another
// cudagray's) is written into; GStreamer's own GstCudaBufferPool (which lays
// out no GRAY8) and a pool of another context are passed over for the
// element's own, which writes in the element's context.
TEST(CudaOutput, DownstreamPoolsOfOurContextOnly) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(gst_cuda_load_library());
  GstCudaContext *ours = gst_cuda_context_new(0), *other = gst_cuda_context_new(0);
  ASSERT_NE(ours, nullptr);
  ASSERT_NE(other, nullptr);
  ASSERT_NE(ours, other);
  struct Case {
    const char *what;
    GstBufferPool *pool;
    bool kept;
  };
  const Case cases[] = {
      {"cudagray's GRAY8 pool in our context", element_pool(ours), true},
      {"cudagray's GRAY8 pool in another context", element_pool(other), false},
      {"GStreamer's CUDA pool in our context", gst_cuda_buffer_pool_new(ours), false},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_NE(c.pool, nullptr);
    EXPECT_TRUE(GST_IS_CUDA_BUFFER_POOL(c.pool));
    GstBufferPool *used = nullptr;
    GstCudaContext *written_in = nullptr;
    run_with_downstream_pool(ours, c.pool, &used, &written_in);
    ASSERT_NE(used, nullptr);
    EXPECT_EQ(used == c.pool, c.kept);
    EXPECT_EQ(written_in, ours);
    gst_object_unref(used);
    gst_object_unref(c.pool);
  }
  gst_object_unref(other);
  gst_object_unref(ours);
}

// The element's pool on its own: GRAY8 caps only, buffers of one CUDA memory
// with a GRAY8 video meta whose pitch holds the row, at every size.
TEST(CudaOutput, OwnPoolLaysOutGray8) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(gst_cuda_load_library());
  GstCudaContext *context = gst_cuda_context_new(0);
  ASSERT_NE(context, nullptr);
  GstBufferPool *pool = element_pool(context);
  ASSERT_NE(pool, nullptr);
  ASSERT_FALSE(gst_buffer_pool_is_active(pool));
  GstCaps *rgb =
      gst_caps_from_string("video/x-raw(memory:CUDAMemory),format=RGBA,width=64,height=48");
  GstStructure *config = gst_buffer_pool_get_config(pool);
  gst_buffer_pool_config_set_params(config, rgb, 0, 1, 0);
  EXPECT_FALSE(gst_buffer_pool_set_config(pool, config));
  gst_caps_unref(rgb);
  for (const Size &size : kSizes) {
    SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height));
    GstCaps *gray =
        gst_caps_from_string((std::string(kCudaGray8) + ",width=" + std::to_string(size.width) +
                              ",height=" + std::to_string(size.height))
                                 .c_str());
    config = gst_buffer_pool_get_config(pool);
    gst_buffer_pool_config_set_params(config, gray, 0, 2, 0);
    gst_caps_unref(gray);
    ASSERT_TRUE(gst_buffer_pool_set_config(pool, config));
    ASSERT_TRUE(gst_buffer_pool_set_active(pool, TRUE));
    GstBuffer *buf = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buf, nullptr), GST_FLOW_OK);
    const GstVideoMeta *meta = gst_buffer_get_video_meta(buf);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->format, GST_VIDEO_FORMAT_GRAY8);
    EXPECT_EQ(meta->width, guint(size.width));
    EXPECT_EQ(meta->height, guint(size.height));
    EXPECT_GE(meta->stride[0], size.width);
    EXPECT_GE(gst_buffer_get_size(buf), gsize(meta->stride[0]) * size.height);
    EXPECT_TRUE(gst_is_cuda_memory(gst_buffer_peek_memory(buf, 0)));
    gst_buffer_unref(buf);
    ASSERT_TRUE(gst_buffer_pool_set_active(pool, FALSE));
  }
  gst_object_unref(pool);
  gst_object_unref(context);
}

namespace {

// An HEVC stream NVDEC decodes into one of its CUDA-memory formats.
struct HevcClip {
  const char *name;
  const char *encoded_from;  // the raw format x265enc is given: its depth and chroma
  int width, height, frames;
};

// Every gray frame of size out a decoding pipeline ends in, read back from
// system or CUDA memory.
std::vector<GrayImage> decoded_gray(const std::string &description, const Size &out, int depth,
                                    bool on_device, uint64_t *device_inputs) {
  std::vector<GrayImage> frames;
  GstElement *pipeline = gst_parse_launch(description.c_str(), nullptr);
  EXPECT_NE(pipeline, nullptr) << description;
  if (!pipeline) return frames;
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  while (GstSample *s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 30 * GST_SECOND)) {
    GstBuffer *buf = gst_sample_get_buffer(s);
    frames.push_back(on_device ? download_gray(buf, out.width, out.height, nullptr, depth)
                               : gray_of(buf, out.width, out.height, depth));
    gst_sample_unref(s);
  }
  GstBus *bus = gst_element_get_bus(pipeline);
  EXPECT_EQ(describe(pop_messages(bus, GST_MESSAGE_ERROR)), "") << description;
  gst_object_unref(bus);
  if (GstElement *gray = gst_bin_get_by_name(GST_BIN(pipeline), "gray")) {
    *device_inputs = stat_of(gray, "device-inputs");
    gst_object_unref(gray);
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return frames;
}

// Encodes clip (snow) into dir/NAME.mkv with x265enc; its path.
std::string encode_hevc(const HevcClip &clip, const std::string &dir) {
  const std::string file = dir + "/" + clip.name + ".mkv";
  const PipelineRun encode = run_pipeline(
      "videotestsrc num-buffers=" + std::to_string(clip.frames) +
          " pattern=snow ! video/x-raw,format=" + clip.encoded_from +
          ",width=" + std::to_string(clip.width) + ",height=" + std::to_string(clip.height) +
          ",framerate=30/1 ! x265enc speed-preset=ultrafast bitrate=20000 key-int-max=10 ! "
          "h265parse ! matroskamux ! filesink location=" +
          file,
      120 * GST_SECOND);
  EXPECT_TRUE(encode.errors.empty()) << encode.errors[0];
  return file;
}

std::string hevc_decoder(const std::string &file) {
  return "filesrc location=" + file + " ! matroskademux ! h265parse ! nvh265dec ! ";
}

}  // namespace

class NvdecHevcOutput : public ::testing::TestWithParam<HevcClip> {};

// NVDEC's outputs of 10- and 12-bit and 4:4:4 HEVC (P010_10LE, P012_LE or
// P016_LE, Y444, Y444_16LE) read where they are, with no copy: GRAY8 and
// GRAY16_LE, in system and in CUDA memory, equal the CPU backend's of the
// same frames downloaded (nvh265dec ! cudadownload ! cudagray backend=cpu),
// one pipeline alone and four at once. A case a clip, so that the GPU
// suite's shards share them.
TEST_P(NvdecHevcOutput, ReadInPlaceEqualsTheCpuPath) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_ELEMENT("nvh265dec");
  SKIP_WITHOUT_ELEMENT("x265enc");
  char dir_template[] = "/tmp/cudagray-hevc-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  {
    const HevcClip &clip = GetParam();
    const std::string file = encode_hevc(clip, dir);
    if (HasFailure()) return;
    const std::string decode = hevc_decoder(file);
    const Size size{clip.width, clip.height};
    for (int depth : {8, 16}) {
      const std::string gray = depth == 16 ? "GRAY16_LE" : "GRAY8";
      uint64_t ignored = 0;
      const std::vector<GrayImage> reference =
          decoded_gray(decode + "cudadownload ! cudagray backend=cpu ! video/x-raw,format=" + gray +
                           " ! appsink name=sink sync=false",
                       size, depth, false, &ignored);
      ASSERT_EQ(reference.size(), size_t(clip.frames)) << gray;
      for (bool on_device : {false, true}) {
        const std::string tail =
            "video/x-raw(memory:CUDAMemory) ! cudagray backend=cuda name=gray ! video/x-raw" +
            std::string(on_device ? "(memory:CUDAMemory)" : "") + ",format=" + gray +
            " ! appsink name=sink sync=false";
        for (int parallel : {1, 4}) {
          SCOPED_TRACE(gray + (on_device ? " in CUDA memory, " : " in system memory, ") +
                       std::to_string(parallel) + " pipeline(s)");
          std::vector<std::vector<GrayImage>> results(parallel);
          std::vector<uint64_t> device_inputs(parallel, 0);
          std::vector<std::thread> runs;
          for (int i = 0; i < parallel; ++i)
            runs.emplace_back([&, i] {
              results[i] = decoded_gray(decode + tail, size, depth, on_device, &device_inputs[i]);
            });
          for (std::thread &t : runs) t.join();
          for (int i = 0; i < parallel; ++i) {
            EXPECT_EQ(device_inputs[i], uint64_t(clip.frames)) << "frames read in place";
            ASSERT_EQ(results[i].size(), reference.size());
            int wrong = 0;
            for (size_t f = 0; f < reference.size(); ++f)
              wrong += !same_pixels(results[i][f], reference[f]);
            EXPECT_EQ(wrong, 0) << wrong << " of " << reference.size() << " frames differ";
          }
        }
      }
    }
    std::remove(file.c_str());
  }
  rmdir(dir.c_str());
}

INSTANTIATE_TEST_SUITE_P(CudaOutput, NvdecHevcOutput,
                         ::testing::Values(HevcClip{"main10", "I420_10LE", 1920, 1080, 30},
                                           HevcClip{"main12", "I420_12LE", 640, 360, 12},
                                           HevcClip{"main444", "Y444", 641, 361, 12},
                                           HevcClip{"main444_10", "Y444_10LE", 641, 361, 12},
                                           HevcClip{"main444_12", "Y444_12LE", 320, 240, 12}),
                         [](const auto &info) { return std::string(info.param.name); });

// Issue 31's end: a 4K 10-bit HEVC stream decoded by NVDEC and letterboxed
// by cudagray into a model's 640x640 square pixels on the GPU, its P010
// frames read where they are, equals the CPU backend's of the same frames
// downloaded, in system and CUDA memory; the bars are black.
TEST(CudaOutput, NvdecHevc4k10BitLetterboxedEqualsTheCpuPath) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_ELEMENT("nvh265dec");
  SKIP_WITHOUT_ELEMENT("x265enc");
  char dir_template[] = "/tmp/cudagray-hevc-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const HevcClip clip{"main10-4k", "I420_10LE", 3840, 2160, 8};
  const std::string file = encode_hevc(clip, dir_template);
  ASSERT_FALSE(HasFailure());
  const std::string box = "format=GRAY8,width=640,height=640,pixel-aspect-ratio=1/1";
  const Size size{640, 640};
  uint64_t ignored = 0;
  const std::vector<GrayImage> reference =
      decoded_gray(hevc_decoder(file) + "cudadownload ! cudagray backend=cpu ! video/x-raw," + box +
                       " ! appsink name=sink sync=false",
                   size, 8, false, &ignored);
  ASSERT_EQ(reference.size(), size_t(clip.frames));
  for (bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "in CUDA memory" : "in system memory");
    uint64_t device_inputs = 0;
    const std::vector<GrayImage> got = decoded_gray(
        hevc_decoder(file) + "video/x-raw(memory:CUDAMemory) ! cudagray backend=cuda name=gray ! " +
            "video/x-raw" + (on_device ? "(memory:CUDAMemory)," : ",") + box +
            " ! appsink name=sink sync=false",
        size, 8, on_device, &device_inputs);
    EXPECT_EQ(device_inputs, uint64_t(clip.frames)) << "frames read in place";
    ASSERT_EQ(got.size(), reference.size());
    for (size_t f = 0; f < got.size(); ++f) {
      EXPECT_TRUE(same_pixels(got[f], reference[f])) << "frame " << f;
      // 3840x2160 in 640x640: a 640x360 picture from row 140, black around
      long bars = 0, picture = 0;
      for (int y = 0; y < 640; ++y)
        for (int x = 0; x < 640; ++x) (y < 140 || y >= 500 ? bars : picture) += got[f].at(x, y);
      EXPECT_EQ(bars, 0) << "frame " << f;
      EXPECT_GT(picture, 0) << "frame " << f;
    }
  }
  std::remove(file.c_str());
  rmdir(dir_template);
}

#else
TEST(CudaOutput, NeedsGstreamerCuda) {
  GTEST_SKIP() << "cudagray was built without gstreamer-cuda-1.0: no CUDA memory output";
}
#endif
