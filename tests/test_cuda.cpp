// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA kernels and backend, bit for bit against the CPU reference.
// Without a usable GPU every test here is skipped and says why.
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "common.h"
#include "cudagray/convert_cuda.h"
#include "cudagray/cuda_owners.h"
#include "cudagray/device.h"
#ifdef CUDAGRAY_FAULT_INJECTION
#include "cudagray/fault_injection.h"
#endif
#include "slow_writer.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

// A backend's conversion: whole frames at their own size.
Conversion backend_conversion(PixelLayout layout, int width, int height, int depth, int in_flight,
                              bool inputs_on_device, bool outputs_on_device) {
  Conversion c = same_size_conversion(layout, width, height, depth);
  c.max_in_flight = in_flight;
  c.inputs_on_device = inputs_on_device;
  c.outputs_on_device = outputs_on_device;
  return c;
}

#define ASSERT_CUDA(call) \
  ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(call)

// Runs the kernel on a device copy of f (same offsets and padded strides)
// into a padded device image of out's depth, and brings the result back
// padding and all.
void convert_on_device(const TestFrame &f, const Conversion &c, const Weights &w, GrayImage *out) {
  void *in_dev = nullptr, *out_dev = nullptr;
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&stream));
  ASSERT_CUDA(cudaMalloc(&in_dev, f.bytes.size()));
  ASSERT_CUDA(cudaMalloc(&out_dev, out->bytes.size()));
  ASSERT_CUDA(cudaMemcpy(in_dev, f.bytes.data(), f.bytes.size(), cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(out_dev, GrayImage::kSentinel, out->bytes.size()));
  GrayFrame dev_out = out->frame();
  dev_out.data = static_cast<uint8_t *>(out_dev);
  const InputFrame dev_in = f.view(static_cast<const uint8_t *>(in_dev));
  ASSERT_CUDA(convert_cuda(c, dev_in, dev_out, w, stream));
  ASSERT_CUDA(cudaStreamSynchronize(stream));
  ASSERT_CUDA(cudaMemcpy(out->bytes.data(), out_dev, out->bytes.size(), cudaMemcpyDeviceToHost));
  ASSERT_CUDA(cudaFree(in_dev));
  ASSERT_CUDA(cudaFree(out_dev));
  ASSERT_CUDA(cudaStreamDestroy(stream));
}

}  // namespace

class CudaKernel : public ::testing::TestWithParam<PixelLayout> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

// Both kernel paths: pixel by pixel (rows at odd addresses) and wide
// (16-byte aligned rows), against the CPU, padding included, for GRAY8 and
// GRAY16 and, for luma, both ranges.
TEST_P(CudaKernel, BitIdenticalToCpuIncludingPadding) {
  const bool luma = layout_info(GetParam()).family == LayoutFamily::Luma;
  for (Rows rows : {Rows::Padded, Rows::Aligned16}) {
    for (const Size &size : kSizes) {
      const TestFrame f = random_frame(GetParam(), size.width, size.height, rows);
      for (int depth : {8, 16}) {
        for (bool limited : {false, true}) {
          if (limited && !luma) continue;
          for (const WeightChoice &c : kWeightChoices) {
            SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height) + " " +
                         c.name + (rows == Rows::Aligned16 ? " aligned" : " padded") + " GRAY" +
                         std::to_string(depth) + (limited ? " limited" : ""));
            const size_t row = static_cast<size_t>(size.width) * depth / 8;
            const size_t pad = rows == Rows::Aligned16
                                   ? (16 - row % 16) % 16 + 16 * random_int(0, 2)
                                   : 2 * random_int(1, 38);
            GrayImage gpu(size.width, size.height, pad, depth);
            convert_on_device(f, f.conversion(depth, limited), weights_of(c), &gpu);
            EXPECT_TRUE(same_pixels(gpu, cpu_reference(f, c, depth, limited)));
            EXPECT_TRUE(padding_untouched(gpu));
          }
        }
      }
    }
  }
}

namespace {

// A random conversion of f: sizes, crop, destination inside borders, method,
// depth and (luma) range.
Conversion random_scaling(const TestFrame &f, int max_out) {
  Conversion c =
      f.conversion(random_int(0, 1) ? 16 : 8,
                   layout_info(f.layout).family == LayoutFamily::Luma && random_int(0, 1));
  c.method = static_cast<ScaleMethod>(random_int(0, 2));
  c.crop.width = random_int(1, f.width);
  c.crop.height = random_int(1, f.height);
  c.crop.x = random_int(0, f.width - c.crop.width);
  c.crop.y = random_int(0, f.height - c.crop.height);
  c.out_width = random_int(1, max_out);
  c.out_height = random_int(1, max_out);
  c.dest.width = random_int(1, c.out_width);
  c.dest.height = random_int(1, c.out_height);
  c.dest.x = random_int(0, c.out_width - c.dest.width);
  c.dest.y = random_int(0, c.out_height - c.dest.height);
  return c;
}

}  // namespace

// Scaled, cropped and letterboxed: the CUDA kernel equals the CPU bit for bit
// (padding untouched), every method, small sizes both ways and large frames
// shrunk and enlarged (tests/test_scale.cpp holds the CPU to the formula).
TEST_P(CudaKernel, ScaledBitIdenticalToCpu) {
  const Weights w = weights_of(kWeightChoices[random_int(0, 4)]);
  std::vector<std::pair<TestFrame, Conversion>> cases;
  for (int i = 0; i < 150; ++i) {
    TestFrame f = random_frame(GetParam(), random_int(1, 17), random_int(1, 17),
                               i % 2 ? Rows::Padded : Rows::Aligned16);
    const Conversion c = random_scaling(f, 17);
    cases.emplace_back(std::move(f), c);
  }
  for (const Size &in : std::vector<Size>{{641, 481}, {1921, 1079}, {97, 61}})
    for (int method = 0; method < 3; ++method) {
      TestFrame f = random_frame(GetParam(), in.width, in.height);
      Conversion c = random_scaling(f, 1000);
      c.crop = Rect{0, 0, f.width, f.height};
      c.method = static_cast<ScaleMethod>(method);
      cases.emplace_back(std::move(f), c);
    }
  // area shrinking far: footprints of more source rows and columns than the
  // CUDA kernel's shared memory holds at once, summed band by band
  for (const auto &[in, out] : std::vector<std::pair<Size, Size>>{{{1921, 1079}, {1, 1}},
                                                                  {{1921, 1079}, {7, 3}},
                                                                  {{4097, 3}, {1, 1}},
                                                                  {{5, 4097}, {2, 1}},
                                                                  {{16384, 2}, {3, 1}}}) {
    TestFrame f = random_frame(GetParam(), in.width, in.height);
    Conversion c = f.conversion(random_int(0, 1) ? 16 : 8, false);
    c.method = ScaleMethod::Area;
    c.out_width = c.dest.width = out.width;
    c.out_height = c.dest.height = out.height;
    cases.emplace_back(std::move(f), c);
  }
  for (const auto &[f, c] : cases) {
    SCOPED_TRACE(std::to_string(f.width) + "x" + std::to_string(f.height) + " crop " +
                 std::to_string(c.crop.width) + "x" + std::to_string(c.crop.height) + " to " +
                 std::to_string(c.out_width) + "x" + std::to_string(c.out_height) + " dest " +
                 std::to_string(c.dest.width) + "x" + std::to_string(c.dest.height) + " method " +
                 std::to_string(static_cast<int>(c.method)) + " GRAY" +
                 std::to_string(c.out_depth));
    GrayImage gpu(c.out_width, c.out_height, 2 * random_int(0, 20), c.out_depth);
    GrayImage cpu(c.out_width, c.out_height, gpu.stride - gpu.row_bytes(), c.out_depth);
    convert_on_device(f, c, w, &gpu);
    convert_cpu(c, f.view(), cpu.frame(), w);
    ASSERT_TRUE(same_pixels(gpu, cpu));
    ASSERT_TRUE(padding_untouched(gpu));
  }
}

namespace {

// Host memory from cudaHostAlloc, released at scope end.
struct PinnedCopy {
  uint8_t *data = nullptr;
  explicit PinnedCopy(size_t bytes) {
    std::string error;
    data = static_cast<uint8_t *>(alloc_pinned(bytes, &error));
    EXPECT_NE(data, nullptr) << error;
  }
  ~PinnedCopy() { free_pinned(data); }
  PinnedCopy(const PinnedCopy &) = delete;
  PinnedCopy &operator=(const PinnedCopy &) = delete;
};

// A CUDA backend in the primary context of the first usable device.
std::unique_ptr<Backend> backend_on_first_device(std::string *error) {
  if (open_cuda_device(-1, error) < 0) return nullptr;
  return make_cuda_backend(error);
}

}  // namespace

// Frames submitted up to max_in_flight at a time come back in order, equal to
// the CPU; pinned and pageable input and output, one frame in strips or
// several frames at once, reconfigured between sizes.
TEST_P(CudaKernel, BackendFinishesFramesInOrder) {
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  EXPECT_STREQ(backend->name(), "cuda");
  const WeightChoice &bt709 = kWeightChoices[1];
  for (int max_in_flight : {1, 3}) {
    for (const Size &size : kSizes) {
      const int depth = random_int(0, 1) ? 16 : 8;
      SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height) + " in flight " +
                   std::to_string(max_in_flight) + " GRAY" + std::to_string(depth));
      constexpr int kFrames = 7;
      std::vector<TestFrame> frames;
      std::vector<std::unique_ptr<PinnedCopy>> pinned_in;
      std::vector<GrayImage> outs;
      std::vector<std::unique_ptr<PinnedCopy>> pinned_out;
      for (int i = 0; i < kFrames; ++i) {
        frames.push_back(random_frame(GetParam(), size.width, size.height));
        // the sample bits of 16-bit Bayer are the conversion's: one for all
        frames.back().sample_bits = frames.front().sample_bits;
        outs.emplace_back(size.width, size.height, 2 * random_int(0, 9), depth);
      }
      Conversion conversion = backend_conversion(GetParam(), size.width, size.height, depth,
                                                 max_in_flight, false, false);
      conversion.sample_bits = frames.front().sample_bits;
      ASSERT_TRUE(backend->configure(conversion, &error)) << error;
      auto input = [&](int i) {  // odd frames come from pinned memory
        if (i % 2 == 0) return frames[i].view();
        pinned_in.push_back(std::make_unique<PinnedCopy>(frames[i].bytes.size()));
        std::memcpy(pinned_in.back()->data, frames[i].bytes.data(), frames[i].bytes.size());
        return frames[i].view(pinned_in.back()->data);
      };
      auto output = [&](int i) {  // every third frame lands in pinned memory
        if (i % 3 != 0) return outs[i].frame();
        pinned_out.push_back(std::make_unique<PinnedCopy>(outs[i].bytes.size()));
        GrayFrame pinned = outs[i].frame();
        pinned.data = pinned_out.back()->data;
        return pinned;
      };
      std::vector<GrayFrame> targets;
      int finished = 0;
      auto finish = [&] {
        ASSERT_TRUE(backend->finish_oldest(&error)) << error;
        const GrayFrame &t = targets[finished];
        if (t.data != outs[finished].bytes.data())
          std::memcpy(outs[finished].bytes.data(), t.data, outs[finished].bytes.size());
        EXPECT_TRUE(same_pixels(outs[finished], cpu_reference(frames[finished], bt709, depth)))
            << "frame " << finished;
        ++finished;
      };
      for (int i = 0; i < kFrames; ++i) {
        if (backend->in_flight() == max_in_flight) finish();
        targets.push_back(output(i));
        ASSERT_TRUE(backend->submit(input(i), targets.back(), weights_of(bt709), &error)) << error;
      }
      EXPECT_EQ(backend->in_flight(), max_in_flight);
      while (finished < kFrames) finish();
      EXPECT_EQ(backend->in_flight(), 0);
    }
  }
  const TimingStats stats = backend->stats();
  EXPECT_EQ(stats.frames, 2u * 7u * kSizes.size());
  EXPECT_EQ(stats.timed_frames, (stats.frames + 15) / 16) << "the first and every 16th after it";
  EXPECT_GT(stats.device_us_min, 0.0);
  EXPECT_LE(stats.device_us_min, stats.device_us_mean);
  EXPECT_LE(stats.device_us_mean, stats.device_us_max);
  EXPECT_GT(stats.upload_us_mean, 0.0);
  EXPECT_GT(stats.download_us_mean, 0.0);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, CudaKernel, ::testing::ValuesIn(every_layout()),
                         [](const auto &info) {
                           return std::string(layout_info(info.param).name);
                         });

// The backend scales, crops and letterboxes whole frames (no strips), one or
// three in flight, from pageable host memory into pageable host memory,
// equal to the CPU.
TEST(CudaScale, BackendScalesLikeTheCpu) {
  SKIP_WITHOUT_GPU();
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  const Weights w = standard_weights(Matrix::BT709);
  for (PixelLayout layout : {PixelLayout::RGBx, PixelLayout::Luma10_Msb, PixelLayout::Bayer_RGGB})
    for (int in_flight : {1, 3}) {
      std::vector<TestFrame> frames;
      for (int i = 0; i < 5; ++i) frames.push_back(random_frame(layout, 1921, 1079));
      Conversion c = random_scaling(frames[0], 700);
      c.max_in_flight = in_flight;
      SCOPED_TRACE(std::string(layout_info(layout).name) + " to " + std::to_string(c.out_width) +
                   "x" + std::to_string(c.out_height) + " in flight " + std::to_string(in_flight));
      ASSERT_TRUE(backend->configure(c, &error)) << error;
      std::vector<GrayImage> outs;
      for (size_t i = 0; i < frames.size(); ++i)
        outs.emplace_back(c.out_width, c.out_height, 2 * random_int(0, 9), c.out_depth);
      size_t finished = 0;
      auto finish = [&] {
        ASSERT_TRUE(backend->finish_oldest(&error)) << error;
        GrayImage cpu(c.out_width, c.out_height, outs[finished].stride - outs[finished].row_bytes(),
                      c.out_depth);
        convert_cpu(c, frames[finished].view(), cpu.frame(), w);
        EXPECT_TRUE(same_pixels(outs[finished], cpu)) << "frame " << finished;
        EXPECT_TRUE(padding_untouched(outs[finished]));
        ++finished;
      };
      for (size_t i = 0; i < frames.size(); ++i) {
        if (backend->in_flight() == in_flight) finish();
        ASSERT_TRUE(backend->submit(frames[i].view(), outs[i].frame(), w, &error)) << error;
      }
      while (finished < frames.size()) finish();
    }
}

TEST(CudaBackendErrors, MisuseIsRefusedWithReason) {
  SKIP_WITHOUT_GPU();
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  EXPECT_FALSE(backend->finish_oldest(&error));
  EXPECT_EQ(error, "no frame in flight");
  Conversion too_wide = backend_conversion(PixelLayout::RGB, 16385, 8, 8, 1, false, false);
  EXPECT_FALSE(backend->configure(too_wide, &error));
  EXPECT_EQ(error, "input size 16385x8 is outside 1x1 to 16384x16384");
  ASSERT_TRUE(
      backend->configure(backend_conversion(PixelLayout::RGB, 8, 8, 8, 1, false, false), &error))
      << error;
  const TestFrame f = random_frame(PixelLayout::RGB, 8, 8);
  GrayImage a(8, 8), b(8, 8);
  ASSERT_TRUE(backend->submit(f.view(), a.frame(), standard_weights(Matrix::BT601), &error))
      << error;
  EXPECT_FALSE(backend->submit(f.view(), b.frame(), standard_weights(Matrix::BT601), &error));
  EXPECT_EQ(error, "too many frames in flight");
  backend->discard_all();
  EXPECT_EQ(backend->in_flight(), 0);
}

// Configured for frames already on the GPU, the backend reserves no upload
// buffers and reads device frames where they are; every device buffer is
// made in configure, so a host frame is refused, allocating nothing, until
// configure is called for host frames. Allocations are counted with the
// fault switch: with 4 frames in flight configure makes 4 (8 for host
// frames), and a 5th cudaMalloc would fail.
TEST(CudaBackendInputs, FramesOnTheDeviceNeedNoUploadBuffers) {
  SKIP_WITHOUT_GPU();
#ifndef CUDAGRAY_FAULT_INJECTION
  GTEST_SKIP()
      << "counts allocations with fault injection: configure with -Dfault-injection=enabled";
#else
  constexpr int kWidth = 641, kHeight = 481, kInFlight = 4;
  const WeightChoice &bt601 = kWeightChoices[0];
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  inject_cuda_fault("cudaMalloc:" + std::to_string(kInFlight + 1));
  ASSERT_TRUE(backend->configure(
      backend_conversion(PixelLayout::RGBx, kWidth, kHeight, 8, kInFlight, true, false), &error))
      << error;

  const TestFrame on_gpu = random_frame(PixelLayout::RGBx, kWidth, kHeight);
  void *device_copy = nullptr;
  ASSERT_CUDA(cudaMalloc(&device_copy, on_gpu.bytes.size()));
  ASSERT_CUDA(
      cudaMemcpy(device_copy, on_gpu.bytes.data(), on_gpu.bytes.size(), cudaMemcpyHostToDevice));
  InputFrame device_frame = on_gpu.view(static_cast<const uint8_t *>(device_copy));
  device_frame.on_device = true;
  GrayImage from_gpu(kWidth, kHeight, 5);
  ASSERT_TRUE(backend->submit(device_frame, from_gpu.frame(), weights_of(bt601), &error)) << error;
  ASSERT_TRUE(backend->finish_oldest(&error)) << error;
  EXPECT_TRUE(same_pixels(from_gpu, cpu_reference(on_gpu, bt601)));

  const TestFrame on_host = random_frame(PixelLayout::RGBx, kWidth, kHeight);
  GrayImage from_host(kWidth, kHeight, 0);
  EXPECT_FALSE(backend->submit(on_host.view(), from_host.frame(), weights_of(bt601), &error));
  EXPECT_EQ(error, "a frame in host memory, but the backend was configured for frames on the GPU");
  EXPECT_EQ(backend->in_flight(), 0);
  inject_cuda_fault("");
  ASSERT_TRUE(backend->configure(
      backend_conversion(PixelLayout::RGBx, kWidth, kHeight, 8, kInFlight, false, false), &error))
      << error;
  ASSERT_TRUE(backend->submit(on_host.view(), from_host.frame(), weights_of(bt601), &error))
      << error;
  ASSERT_TRUE(backend->finish_oldest(&error)) << error;
  EXPECT_TRUE(same_pixels(from_host, cpu_reference(on_host, bt601)));
  const TimingStats stats = backend->stats();
  EXPECT_EQ(stats.device_inputs, 1u);
  EXPECT_EQ(stats.staged_inputs, 1u);
  ASSERT_CUDA(cudaFree(device_copy));
#endif
}

// A renegotiation back and forth between caps the backend has served (GRAY8
// and GRAY16 from pageable frames into pageable results, staged both ways,
// 4 in flight) allocates nothing once each has run: every cudaMalloc and
// every cudaHostAlloc is made to fail meanwhile, and the frames still come
// out equal to the CPU. Before the slots were kept, each configure freed
// and allocated them all again.
TEST(CudaBackendReconfigure, FlipsBetweenCapsServedBeforeAllocateNothing) {
  SKIP_WITHOUT_GPU();
#ifndef CUDAGRAY_FAULT_INJECTION
  GTEST_SKIP()
      << "counts allocations with fault injection: configure with -Dfault-injection=enabled";
#else
  constexpr int kWidth = 641, kHeight = 481, kInFlight = 4;
  const WeightChoice &bt601 = kWeightChoices[0];
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  const auto run_frames = [&](int depth) {
    SCOPED_TRACE("GRAY" + std::to_string(depth));
    ASSERT_TRUE(backend->configure(
        backend_conversion(PixelLayout::RGBx, kWidth, kHeight, depth, kInFlight, false, false),
        &error))
        << error;
    std::vector<TestFrame> frames;
    std::vector<GrayImage> outs;
    for (int i = 0; i < kInFlight; ++i) {
      frames.push_back(random_frame(PixelLayout::RGBx, kWidth, kHeight));
      outs.emplace_back(kWidth, kHeight, 2 * i + 1, depth);
      ASSERT_TRUE(backend->submit(frames[i].view(), outs[i].frame(), weights_of(bt601), &error))
          << error;
    }
    for (int i = 0; i < kInFlight; ++i) {
      ASSERT_TRUE(backend->finish_oldest(&error)) << error;
      EXPECT_TRUE(same_pixels(outs[i], cpu_reference(frames[i], bt601, depth))) << "frame " << i;
    }
  };
  run_frames(8);
  run_frames(16);
  for (const char *allocation : {"cudaMalloc", "cudaHostAlloc"}) {
    SCOPED_TRACE(std::string(allocation) + " armed to fail");
    inject_cuda_fault(std::string(allocation) + ":1");
    run_frames(8);
    run_frames(16);
    inject_cuda_fault("");
  }
#endif
}

// What the element asks of the CUDA backend: frames in flight, pinned host
// memory, device input and output.
TEST(CudaBackendNeeds, KeepsFramesInFlightWantsPinnedMemoryReadsAndWritesTheDevice) {
  SKIP_WITHOUT_GPU();
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  const BackendNeeds needs = backend->needs();
  EXPECT_EQ(needs.auto_in_flight, 4);
  EXPECT_EQ(needs.max_in_flight, 16);
  EXPECT_TRUE(needs.pinned_host_memory);
  EXPECT_TRUE(needs.reads_device_memory);
  EXPECT_TRUE(needs.writes_device_memory);
}

// The element's output task finishes frames on its own thread while the
// streaming thread submits: every frame still equals the CPU, in order.
TEST(CudaBackendThreads, FinishOnAnotherThreadWhileSubmitting) {
  SKIP_WITHOUT_GPU();
  constexpr int kFrames = 40, kInFlight = 4;
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  const int device = backend->device_id();
  ASSERT_TRUE(backend->configure(
      backend_conversion(PixelLayout::BGRx, 641, 481, 8, kInFlight, false, false), &error))
      << error;
  std::vector<TestFrame> frames;
  std::vector<GrayImage> outs;
  for (int i = 0; i < kFrames; ++i) {
    frames.push_back(random_frame(PixelLayout::BGRx, 641, 481));
    outs.emplace_back(641, 481);
  }
  const Weights w = weights_of(kWeightChoices[0]);
  std::atomic<int> submitted{0}, finished{0};
  std::atomic<bool> failed{false};
  std::thread output([&] {
    std::string why;
    if (open_cuda_device(device, &why) != device) failed = true;
    while (!failed && finished < kFrames) {
      if (finished == submitted) {
        std::this_thread::yield();
      } else if (backend->finish_oldest(&why)) {
        ++finished;
      } else {
        ADD_FAILURE() << why;
        failed = true;
      }
    }
  });
  for (int i = 0; i < kFrames && !failed; ++i) {
    while (!failed && submitted - finished == kInFlight) std::this_thread::yield();
    if (!backend->submit(frames[i].view(), outs[i].frame(), w, &error)) {
      ADD_FAILURE() << error;
      failed = true;
    }
    ++submitted;
  }
  output.join();
  ASSERT_FALSE(failed);
  for (int i = 0; i < kFrames; ++i)
    EXPECT_TRUE(same_pixels(outs[i], cpu_reference(frames[i], kWeightChoices[0]))) << "frame " << i;
}

// Many cameras in one process: backends busy waiting for their frames must
// leave room in the CUDA context for one that starts (cudaEventSynchronize's
// spin-wait held the context's lock against every allocation for as long as
// they ran). The busy ones are made first, one after another.
TEST(CudaBackendThreads, BusyBackendsLetANewOneAllocate) {
  SKIP_WITHOUT_GPU();
  constexpr int kBusy = 32, kWidth = 3840, kHeight = 2160;
  std::string error;
  const int device = open_cuda_device(-1, &error);
  ASSERT_GE(device, 0) << error;
  const TestFrame frame = random_frame(PixelLayout::RGBx, kWidth, kHeight);
  void *input = nullptr, *output = nullptr;
  ASSERT_CUDA(cudaMalloc(&input, frame.bytes.size()));
  ASSERT_CUDA(cudaMalloc(&output, size_t(kWidth) * kHeight));
  ASSERT_CUDA(cudaMemcpy(input, frame.bytes.data(), frame.bytes.size(), cudaMemcpyHostToDevice));
  InputFrame on_device = frame.view(static_cast<const uint8_t *>(input));
  on_device.on_device = true;
  const GrayFrame result{static_cast<uint8_t *>(output), size_t(kWidth), true};
  std::vector<std::unique_ptr<Backend>> backends;
  for (int t = 0; t < kBusy; ++t) {
    backends.push_back(make_cuda_backend(&error));
    ASSERT_NE(backends.back(), nullptr) << error;
    ASSERT_TRUE(backends.back()->configure(
        backend_conversion(PixelLayout::RGBx, kWidth, kHeight, 8, 4, true, true), &error))
        << error;
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (auto &backend : backends)
    busy.emplace_back([&, b = backend.get()] {
      std::string why;
      const Weights w = weights_of(kWeightChoices[0]);
      if (open_cuda_device(device, &why) != device) ADD_FAILURE() << why;
      while (!stop && b->submit(on_device, result, w, &why) && b->finish_oldest(&why)) {
      }
      if (!stop) ADD_FAILURE() << why;
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // a watchdog ends the busy backends after 20 s, so that a starved start
  // fails the test rather than hanging it
  std::thread watchdog([&] {
    for (int i = 0; i < 200 && !stop; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  const auto started = std::chrono::steady_clock::now();
  auto fresh = make_cuda_backend(&error);
  EXPECT_NE(fresh, nullptr) << error;
  if (fresh) {
    EXPECT_TRUE(fresh->configure(
        backend_conversion(PixelLayout::RGB, 1920, 1080, 8, 4, false, false), &error))
        << error;
  }
  void *pinned = alloc_pinned(6 << 20, &error);
  EXPECT_NE(pinned, nullptr) << error;
  free_pinned(pinned);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const bool busy_all_along = !stop;
  stop = true;
  watchdog.join();
  for (std::thread &t : busy) t.join();
  EXPECT_TRUE(busy_all_along) << "the new backend was starved until the busy ones stopped";
  EXPECT_LT(seconds, 2.0) << "beside " << kBusy << " busy backends";
  ASSERT_CUDA(cudaFree(input));
  ASSERT_CUDA(cudaFree(output));
}

// What the element reports as process-pinned-bytes: every pinned block,
// counted while it lives.
TEST(CudaPinnedMemory, HeldBytesCountEveryBlockUntilFreed) {
  SKIP_WITHOUT_GPU();
  std::string error;
  ASSERT_GE(open_cuda_device(-1, &error), 0) << error;
  const size_t before = pinned_bytes_held();
  void *block = alloc_pinned(1000, &error);
  ASSERT_NE(block, nullptr) << error;
  EXPECT_EQ(pinned_bytes_held(), before + 1000);
  {
    const PinnedMemory staging = make_pinned_memory(5000);
    EXPECT_EQ(pinned_bytes_held(), before + 6000);
  }
  EXPECT_EQ(pinned_bytes_held(), before + 1000);
  free_pinned(block);
  EXPECT_EQ(pinned_bytes_held(), before);
}

TEST(CudaBackendErrors, MissingDeviceIsNamed) {
  SKIP_WITHOUT_GPU();
  std::string reason, error;
  const int count = cuda_device_count(&reason);
  EXPECT_EQ(open_cuda_device(count, &error), -1);
  EXPECT_EQ(error, "CUDA device " + std::to_string(count) + " does not exist: " +
                       std::to_string(count) + " device(s) found, numbered from 0");
  for (int device = 0; device < count; ++device) {
    ASSERT_EQ(open_cuda_device(device, &error), device) << error;
    const auto backend = make_cuda_backend(&error);
    ASSERT_NE(backend, nullptr) << error;
    EXPECT_EQ(backend->device_id(), device);
  }
}

// The luma plane of YUV frames: copied or expanded, bit for bit as the CPU,
// on both kernel paths.
TEST(CudaLuma, BitIdenticalToCpuFullAndLimited) {
  SKIP_WITHOUT_GPU();
  for (Rows rows : {Rows::Padded, Rows::Aligned16}) {
    for (const Size &size : kSizes) {
      const TestFrame f = random_frame(PixelLayout::Luma, size.width, size.height, rows);
      for (bool limited : {false, true}) {
        SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height) +
                     (limited ? " limited" : " full") +
                     (rows == Rows::Aligned16 ? " aligned" : " padded"));
        TestFrame g = f;
        GrayImage gpu(size.width, size.height,
                      rows == Rows::Aligned16 ? (16 - size.width % 16) % 16 : 3);
        void *in_dev = nullptr, *out_dev = nullptr;
        ASSERT_CUDA(cudaMalloc(&in_dev, g.bytes.size()));
        ASSERT_CUDA(cudaMalloc(&out_dev, gpu.bytes.size()));
        ASSERT_CUDA(cudaMemcpy(in_dev, g.bytes.data(), g.bytes.size(), cudaMemcpyHostToDevice));
        ASSERT_CUDA(cudaMemset(out_dev, GrayImage::kSentinel, gpu.bytes.size()));
        const InputFrame in = g.view(static_cast<const uint8_t *>(in_dev));
        ASSERT_CUDA(convert_cuda(g.conversion(8, limited), in,
                                 {static_cast<uint8_t *>(out_dev), gpu.stride},
                                 standard_weights(Matrix::BT601), 0));
        ASSERT_CUDA(
            cudaMemcpy(gpu.bytes.data(), out_dev, gpu.bytes.size(), cudaMemcpyDeviceToHost));
        ASSERT_CUDA(cudaFree(in_dev));
        ASSERT_CUDA(cudaFree(out_dev));
        GrayImage cpu(size.width, size.height, gpu.stride - size.width);
        convert_cpu(g.conversion(8, limited), g.view(), cpu.frame(),
                    standard_weights(Matrix::BT601));
        EXPECT_TRUE(same_pixels(gpu, cpu));
        EXPECT_EQ(gpu.bytes, cpu.bytes);  // padding untouched on both
      }
    }
  }
}

namespace {

// Frames on the device written by a producer on its own stream behind a
// spin, submitted at once with that stream (or, with_producer_stream false,
// without it); returns how many came out different from their final content.
int frames_read_wrong(PixelLayout layout, int width, int height, int in_flight, int frames,
                      bool with_producer_stream) {
  const WeightChoice &bt709 = kWeightChoices[1];
  std::string error;
  auto backend = backend_on_first_device(&error);
  EXPECT_NE(backend, nullptr) << error;
  if (!backend) return -1;
  EXPECT_TRUE(backend->configure(
      backend_conversion(layout, width, height, 8, in_flight, true, false), &error))
      << error;
  // Each slot: the frame's final bytes on the device, the place the producer
  // writes them to (still holding the slot's previous frame), its stream.
  struct Slot {
    TestFrame frame;
    void *staged = nullptr, *target = nullptr;
    cudaStream_t producer = nullptr;
    GrayImage out{1, 1};
  };
  std::vector<Slot> slots(in_flight);
  // the most bytes an Aligned16 frame can take (random_frame: up to 32 bytes
  // more per row and per plane start)
  const LayoutInfo &info = layout_info(layout);
  const size_t row = (info.row_bytes(width) + 15) / 16 * 16;
  const size_t bytes = info.planes * ((row + 32) * height + 64);
  for (Slot &s : slots) {
    EXPECT_EQ(cudaMalloc(&s.staged, bytes), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&s.target, bytes), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&s.producer, cudaStreamNonBlocking), cudaSuccess);
  }
  int wrong = 0, submitted = 0, finished = 0;
  auto finish_one = [&] {
    Slot &s = slots[finished++ % in_flight];
    EXPECT_TRUE(backend->finish_oldest(&error)) << error;
    if (!same_pixels(s.out, cpu_reference(s.frame, bt709))) ++wrong;
  };
  for (; submitted < frames; ++submitted) {
    if (submitted - finished == in_flight) finish_one();
    Slot &s = slots[submitted % in_flight];
    s.frame = random_frame(layout, width, height, Rows::Aligned16);
    s.out = GrayImage(width, height, 3);
    EXPECT_EQ(
        cudaMemcpy(s.staged, s.frame.bytes.data(), s.frame.bytes.size(), cudaMemcpyHostToDevice),
        cudaSuccess);
    EXPECT_EQ(write_after_spin(s.producer, s.target, s.staged, s.frame.bytes.size(), 2000), "");
    InputFrame in = s.frame.view(static_cast<const uint8_t *>(s.target));
    in.on_device = true;
    if (with_producer_stream) in.producer_stream = s.producer;
    EXPECT_TRUE(backend->submit(in, s.out.frame(), weights_of(bt709), &error)) << error;
  }
  while (finished < submitted) finish_one();
  for (Slot &s : slots) {
    cudaStreamSynchronize(s.producer);
    cudaStreamDestroy(s.producer);
    cudaFree(s.staged);
    cudaFree(s.target);
  }
  return wrong;
}

struct OrderingCase {
  PixelLayout layout;
  int width, height, in_flight;
};

}  // namespace

// A device frame whose producer's writes are still queued on the producer's
// stream (2 ms behind a spin) is read after them: every frame equals its
// final content, sizes from 1x1 to 4K, one to sixteen frames in flight.
TEST(CudaBackendInputs, ReadsWaitForTheProducersStream) {
  SKIP_WITHOUT_GPU();
  const OrderingCase cases[] = {
      {PixelLayout::RGBA, 1920, 1080, 4}, {PixelLayout::Luma, 3840, 2160, 1},
      {PixelLayout::BGR, 641, 481, 16},   {PixelLayout::RGBP, 4097, 3, 2},
      {PixelLayout::Luma, 1, 1, 1},
  };
  for (const OrderingCase &c : cases) {
    SCOPED_TRACE(std::string(layout_info(c.layout).name) + " " + std::to_string(c.width) + "x" +
                 std::to_string(c.height) + ", " + std::to_string(c.in_flight) + " in flight");
    EXPECT_EQ(frames_read_wrong(c.layout, c.width, c.height, c.in_flight, 60, true), 0);
  }
}

// The control for the test above: the same frames submitted without the
// producer's stream are read before the producer has written them, so the
// test above can tell ordered reads from unordered ones.
TEST(CudaBackendInputs, ReadsWithoutTheProducersStreamComeTooEarly) {
  SKIP_WITHOUT_GPU();
  EXPECT_GT(frames_read_wrong(PixelLayout::RGBA, 1920, 1080, 4, 20, false), 0);
}

namespace {

// GRAY8 in device memory with rows of `pitch` bytes, the padding holding the
// sentinel; freed at scope end.
struct DeviceGray {
  int width, height;
  size_t pitch;
  uint8_t *data = nullptr;
  DeviceGray(int w, int h, size_t row_pitch) : width(w), height(h), pitch(row_pitch) {
    EXPECT_EQ(cudaMalloc(&data, pitch * h), cudaSuccess);
    EXPECT_EQ(cudaMemset(data, GrayImage::kSentinel, pitch * h), cudaSuccess);
    // cudaMemset may return before it is done, and the backend's streams do
    // not wait for the legacy stream: finish it, or it can land on the result
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~DeviceGray() { cudaFree(data); }
  DeviceGray(const DeviceGray &) = delete;
  DeviceGray &operator=(const DeviceGray &) = delete;
  GrayFrame frame(void *consumer = nullptr) const { return {data, pitch, true, consumer}; }
  // Every row, padding included, brought back with cudaMemcpy2D.
  GrayImage download() const {
    GrayImage img(width, height, pitch - width);
    EXPECT_EQ(cudaMemcpy2D(img.bytes.data(), img.stride, data, pitch, pitch, height,
                           cudaMemcpyDeviceToHost),
              cudaSuccess);
    return img;
  }
};

}  // namespace

// Results written into device memory (no download): every layout and size,
// host (pageable, pinned) and device input, odd pitches (pixel by pixel) and
// 16-byte aligned ones (wide path), one frame in strips or three in flight;
// each equals the CPU and leaves the row padding alone. Frames given a
// consumer stream are read on it right after submit, before finish_oldest.
TEST(CudaBackendOutputs, WritesResultsIntoDeviceMemory) {
  SKIP_WITHOUT_GPU();
  std::string error;
  auto backend = backend_on_first_device(&error);
  ASSERT_NE(backend, nullptr) << error;
  cudaStream_t consumer = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  std::vector<PixelLayout> layouts(std::begin(kRgb8Layouts), std::end(kRgb8Layouts));
  layouts.push_back(PixelLayout::Luma);
  const WeightChoice &bt2020 = kWeightChoices[2];
  uint64_t frames_done = 0;
  for (PixelLayout layout : layouts) {
    for (int in_flight : {1, 3}) {
      for (const Size &size : kSizes) {
        SCOPED_TRACE(std::string(layout_info(layout).name) + " " + std::to_string(size.width) +
                     "x" + std::to_string(size.height) + " in flight " + std::to_string(in_flight));
        ASSERT_TRUE(backend->configure(
            backend_conversion(layout, size.width, size.height, 8, in_flight, false, true), &error))
            << error;
        constexpr int kFrames = 6;
        std::vector<TestFrame> frames;
        std::vector<std::unique_ptr<DeviceGray>> outs;
        std::vector<std::unique_ptr<PinnedCopy>> pinned;
        std::vector<void *> device_inputs;
        int finished = 0;
        auto finish = [&] {
          ASSERT_TRUE(backend->finish_oldest(&error)) << error;
          const GrayImage result = outs[finished]->download();
          EXPECT_TRUE(same_pixels(result, cpu_reference(frames[finished], bt2020)))
              << "frame " << finished;
          EXPECT_TRUE(padding_untouched(result)) << "frame " << finished;
          ++finished;
        };
        for (int i = 0; i < kFrames; ++i) {
          if (i - finished == in_flight) finish();
          frames.push_back(random_frame(layout, size.width, size.height,
                                        i % 2 ? Rows::Aligned16 : Rows::Padded));
          const TestFrame &f = frames.back();
          InputFrame in = f.view();
          if (i % 3 == 1) {  // pinned host memory
            pinned.push_back(std::make_unique<PinnedCopy>(f.bytes.size()));
            std::memcpy(pinned.back()->data, f.bytes.data(), f.bytes.size());
            in = f.view(pinned.back()->data);
          } else if (i % 3 == 2) {  // already on the device
            device_inputs.push_back(nullptr);
            ASSERT_CUDA(cudaMalloc(&device_inputs.back(), f.bytes.size()));
            ASSERT_CUDA(cudaMemcpy(device_inputs.back(), f.bytes.data(), f.bytes.size(),
                                   cudaMemcpyHostToDevice));
            in = f.view(static_cast<const uint8_t *>(device_inputs.back()));
            in.on_device = true;
          }
          const size_t aligned = (size.width + 15) / 16 * 16 + 16 * random_int(0, 2);
          outs.push_back(std::make_unique<DeviceGray>(
              size.width, size.height, i % 2 ? aligned : size.width + random_int(0, 33)));
          const bool read_on_consumer = i % 2 == 0;
          ASSERT_TRUE(backend->submit(in, outs.back()->frame(read_on_consumer ? consumer : nullptr),
                                      weights_of(bt2020), &error))
              << error;
          if (read_on_consumer) {  // the consumer's copy waits for the writes, on the GPU
            const DeviceGray &out = *outs.back();
            PinnedCopy early(out.pitch * out.height);
            ASSERT_CUDA(cudaMemcpy2DAsync(early.data, out.pitch, out.data, out.pitch, out.pitch,
                                          out.height, cudaMemcpyDeviceToHost, consumer));
            ASSERT_CUDA(cudaStreamSynchronize(consumer));
            GrayImage seen(out.width, out.height, out.pitch - out.width);
            std::memcpy(seen.bytes.data(), early.data, seen.bytes.size());
            EXPECT_TRUE(same_pixels(seen, cpu_reference(f, bt2020)))
                << "frame " << i << " read on its consumer stream";
          }
        }
        while (finished < kFrames) finish();
        frames_done += kFrames;
        for (void *p : device_inputs) ASSERT_CUDA(cudaFree(p));
      }
    }
  }
  const TimingStats stats = backend->stats();
  EXPECT_EQ(stats.frames, frames_done);
  EXPECT_EQ(stats.device_outputs, frames_done);
  EXPECT_EQ(stats.staged_outputs, 0u);
  EXPECT_EQ(stats.download_us_mean, 0.0) << "nothing was downloaded";
  ASSERT_CUDA(cudaStreamDestroy(consumer));
}

namespace {

// Frames written into device memory that a consumer still writes on its
// stream (a 2 ms spin, then old bytes copied over the frame), submitted with
// that stream (or, with_consumer_stream false, without it); returns how many
// results came out different from the CPU's.
int results_overwritten(int in_flight, int frames, bool with_consumer_stream) {
  constexpr int kWidth = 1920, kHeight = 1080;
  const WeightChoice &bt601 = kWeightChoices[0];
  std::string error;
  auto backend = backend_on_first_device(&error);
  EXPECT_NE(backend, nullptr) << error;
  if (!backend) return -1;
  EXPECT_TRUE(backend->configure(
      backend_conversion(PixelLayout::RGBA, kWidth, kHeight, 8, in_flight, false, true), &error))
      << error;
  cudaStream_t consumer = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  DeviceGray stale(kWidth, kHeight, 2048);
  std::vector<std::unique_ptr<DeviceGray>> outs;
  std::vector<TestFrame> inputs;
  for (int i = 0; i < in_flight; ++i)
    outs.push_back(std::make_unique<DeviceGray>(kWidth, kHeight, 2048));
  int wrong = 0, submitted = 0, finished = 0;
  auto finish_one = [&] {
    EXPECT_TRUE(backend->finish_oldest(&error)) << error;
    EXPECT_EQ(cudaStreamSynchronize(consumer), cudaSuccess);
    if (!same_pixels(outs[finished % in_flight]->download(),
                     cpu_reference(inputs[finished], bt601)))
      ++wrong;
    ++finished;
  };
  for (; submitted < frames; ++submitted) {
    if (submitted - finished == in_flight) finish_one();
    const DeviceGray &out = *outs[submitted % in_flight];
    inputs.push_back(random_frame(PixelLayout::RGBA, kWidth, kHeight));
    EXPECT_EQ(write_after_spin(consumer, out.data, stale.data, out.pitch * kHeight, 2000), "");
    EXPECT_TRUE(backend->submit(inputs.back().view(),
                                out.frame(with_consumer_stream ? consumer : nullptr),
                                weights_of(bt601), &error))
        << error;
  }
  while (finished < submitted) finish_one();
  cudaStreamDestroy(consumer);
  return wrong;
}

}  // namespace

// The backend writes a device result after the work already queued on its
// consumer stream: the consumer's late write of stale bytes never lands over
// the result.
TEST(CudaBackendOutputs, WritesWaitForTheConsumersStream) {
  SKIP_WITHOUT_GPU();
  for (int in_flight : {1, 4}) {
    SCOPED_TRACE(std::to_string(in_flight) + " in flight");
    EXPECT_EQ(results_overwritten(in_flight, 30, true), 0);
  }
}

// The control for the test above: without the consumer's stream the stale
// bytes land after the result, so the test above can tell the two apart.
TEST(CudaBackendOutputs, WritesWithoutTheConsumersStreamAreOverwritten) {
  SKIP_WITHOUT_GPU();
  EXPECT_GT(results_overwritten(4, 20, false), 0);
}
