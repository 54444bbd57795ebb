// SPDX-License-Identifier: LGPL-2.1-or-later
// What the element does when no GPU can be used. CUDA_VISIBLE_DEVICES is
// emptied before CUDA is first touched, so this holds on a GPU machine too.
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
}  // namespace

TEST(NoGpu, AutoFallsBackToTheCpuWithOneWarning) {
  for (const char *device : {"-1", "3"}) {
    SCOPED_TRACE(device);
    Harness harness({"backend=auto", std::string("cuda-device-id=") + device});
    harness.set_caps(caps_string("BGRA", 641, 481));
    const TestFrame f = random_frame(PixelLayout::BGRA, 641, 481);
    EXPECT_TRUE(same_pixels(convert_through(harness, f), cpu_reference(f, kWeightChoices[0])));
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_WARNING),
              "No usable CUDA device, converting on the CPU instead: " + hidden_gpu_reason());
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
