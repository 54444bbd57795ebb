// SPDX-License-Identifier: LGPL-2.1-or-later
// What the element does when no GPU can be used. CUDA_VISIBLE_DEVICES is
// emptied before CUDA is first touched, so this holds on a GPU machine too.
#include <dlfcn.h>

#include <cstdlib>

#include "element_harness.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {
std::string hidden_gpu_reason() {
  std::string reason;
  EXPECT_EQ(cuda_device_count(&reason), 0);
  return reason;
}

// CUDA's runtime reaches the NVIDIA driver through this library.
bool nvidia_driver_installed() {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver) dlclose(driver);
  return driver != nullptr;
}
}  // namespace

// What a user without a usable GPU reads, word for word: why there is no
// GPU, and that the CPU converts; nothing in the debug text, which would
// show them a source line.
TEST(NoGpu, WarningSaysWhyAndThatTheCpuConverts) {
#ifdef CUDAGRAY_TEST_HAVE_CUDA
  const std::string why =
      nvidia_driver_installed()
          ? "the NVIDIA driver finds no CUDA device (CUDA_VISIBLE_DEVICES is \"\")"
          : "no NVIDIA driver is installed";
#else
  const std::string why =
      "this build of cudagray has no CUDA support (configured with -Dcuda=disabled or without "
      "nvcc)";
#endif
  const harness::Pipeline pipeline("videotestsrc num-buffers=3 ! cudagray ! fakesink");
  pipeline.play();
  harness::BusLog log;
  EXPECT_EQ(pipeline.wait_end(20 * GST_SECOND, &log), GST_MESSAGE_EOS);
  ASSERT_EQ(log.warnings.size(), 1u) << harness::describe(log.warnings);
  EXPECT_EQ(
      log.warnings[0].text,
      "No usable CUDA device: " + why +
          ". Converting on the CPU instead; backend=cpu chooses the CPU without this warning.");
  EXPECT_EQ(log.warnings[0].debug, "");
}

TEST(NoGpu, AutoFallsBackToTheCpuWithOneWarning) {
  for (const char *device : {"-1", "3"}) {
    SCOPED_TRACE(device);
    Harness harness({"backend=auto", std::string("cuda-device-id=") + device});
    harness.set_caps(caps_string("BGRA", 641, 481));
    const TestFrame f = random_frame(PixelLayout::BGRA, 641, 481);
    EXPECT_TRUE(same_pixels(convert_through(harness, f), cpu_reference(f, kWeightChoices[0])));
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_WARNING),
              "No usable CUDA device: " + hidden_gpu_reason() +
                  ". Converting on the CPU instead; backend=cpu chooses the CPU without this "
                  "warning.");
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_WARNING), "");
    GstStructure *stats = nullptr;
    g_object_get(harness.element(), "stats", &stats, nullptr);
    int used = -2;
    EXPECT_TRUE(gst_structure_get_int(stats, "cuda-device-id", &used));
    EXPECT_EQ(used, -1);  // the CPU
    gst_structure_free(stats);
  }
}

TEST(NoGpu, CpuBackendDoesNotWarn) {
  const PipelineRun run =
      run_pipeline("videotestsrc num-buffers=3 ! cudagray backend=cpu ! fakesink");
  EXPECT_TRUE(run.reached_eos);
  EXPECT_TRUE(run.warnings.empty());
  EXPECT_TRUE(run.errors.empty());
}

TEST(NoGpu, CudaBackendFailsToStart) {
  for (const char *device : {"-1", "0"}) {
    SCOPED_TRACE(device);
    const PipelineRun run = run_pipeline(
        std::string("videotestsrc num-buffers=3 ! cudagray backend=cuda cuda-device-id=") + device +
        " ! fakesink");
    EXPECT_FALSE(run.reached_eos);
    ASSERT_EQ(run.errors.size(), 1u);
    EXPECT_EQ(run.errors[0], "No usable CUDA device: " + hidden_gpu_reason());
  }
}

int main(int argc, char **argv) {
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  ::testing::InitGoogleTest(&argc, argv);
  gst_init(&argc, &argv);
  return RUN_ALL_TESTS();
}
