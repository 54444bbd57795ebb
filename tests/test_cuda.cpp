// The CUDA kernels and backend, bit for bit against the CPU reference.
// Without a usable GPU every test here is skipped and says why.
#include <cuda_runtime.h>

#include "common.h"
#include "gray_cuda.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(call)

// Runs the kernel on a device copy of f (same offsets and padded strides)
// into a padded device image, and brings the result back padding and all.
void convert_on_device(const TestFrame &f, const Weights &w, GrayImage *out) {
  void *in_dev = nullptr, *out_dev = nullptr;
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreate(&stream));
  ASSERT_CUDA(cudaMalloc(&in_dev, f.bytes.size()));
  ASSERT_CUDA(cudaMalloc(&out_dev, out->bytes.size()));
  ASSERT_CUDA(cudaMemcpy(in_dev, f.bytes.data(), f.bytes.size(), cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(out_dev, GrayImage::kSentinel, out->bytes.size()));
  const GrayFrame dev_out{static_cast<uint8_t *>(out_dev), out->stride};
  ASSERT_CUDA(convert_cuda(f.view(static_cast<const uint8_t *>(in_dev)), dev_out, w, stream));
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

TEST_P(CudaKernel, BitIdenticalToCpuIncludingPadding) {
  for (const Size &size : kSizes) {
    const TestFrame f = random_frame(GetParam(), size.width, size.height);
    for (const WeightChoice &c : kWeightChoices) {
      SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height) + " " + c.name);
      GrayImage gpu(size.width, size.height, random_int(1, 77));
      convert_on_device(f, weights_of(c), &gpu);
      EXPECT_TRUE(same_pixels(gpu, cpu_reference(f, c)));
      for (int y = 0; y < size.height; ++y)
        for (size_t x = size.width; x < gpu.stride; ++x)
          ASSERT_EQ(gpu.bytes[y * gpu.stride + x], GrayImage::kSentinel) << "row " << y;
    }
  }
}

TEST_P(CudaKernel, BackendConvertsHostFramesAcrossReconfiguration) {
  std::string error;
  auto backend = make_cuda_backend(-1, &error);
  ASSERT_NE(backend, nullptr) << error;
  EXPECT_STREQ(backend->name(), "cuda");
  for (const Size &size : kSizes) {
    SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height));
    ASSERT_TRUE(backend->configure(GetParam(), size.width, size.height, &error)) << error;
    for (int frame = 0; frame < 2; ++frame) {
      const TestFrame f = random_frame(GetParam(), size.width, size.height);
      GrayImage out(size.width, size.height, random_int(0, 9));
      ASSERT_TRUE(backend->convert(f.view(), out.frame(), weights_of(kWeightChoices[1]), &error)) << error;
      EXPECT_TRUE(same_pixels(out, cpu_reference(f, kWeightChoices[1])));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, CudaKernel, ::testing::ValuesIn(kAllLayouts),
                         [](const auto &info) { return std::string(layout_info(info.param).name); });

TEST(CudaBackendErrors, FrameOfAnotherSizeIsRefused) {
  SKIP_WITHOUT_GPU();
  std::string error;
  auto backend = make_cuda_backend(-1, &error);
  ASSERT_NE(backend, nullptr) << error;
  ASSERT_TRUE(backend->configure(PixelLayout::RGB, 8, 8, &error)) << error;
  const TestFrame f = random_frame(PixelLayout::RGB, 9, 8);
  GrayImage out(9, 8);
  EXPECT_FALSE(backend->convert(f.view(), out.frame(), standard_weights(Matrix::BT601), &error));
  EXPECT_EQ(error, "frame does not match the configured format and size");
}

TEST(CudaBackendErrors, MissingDeviceIsNamed) {
  SKIP_WITHOUT_GPU();
  std::string reason, error;
  const int count = cuda_device_count(&reason);
  EXPECT_EQ(make_cuda_backend(count, &error), nullptr);
  EXPECT_EQ(error, "CUDA device " + std::to_string(count) + " does not exist: " + std::to_string(count) +
                       " device(s) found, numbered from 0");
  for (int device = 0; device < count; ++device) {
    EXPECT_NE(make_cuda_backend(device, &error), nullptr) << error;
  }
}
