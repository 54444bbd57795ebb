// Injected CUDA faults: each ends in an element error, the pipeline can be
// run again, and no device memory stays allocated. Needs a GPU.
#include <cuda_runtime.h>

#include "gst_helpers.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

const char kPipeline[] =
    "videotestsrc num-buffers=40 ! video/x-raw,format=RGBx,width=640,height=480 ! "
    "cudagray backend=cuda max-inflight=3 ! fakesink";

size_t free_device_memory() {
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  return free_bytes;
}

class Fault : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override { SKIP_WITHOUT_GPU(); }
};

}  // namespace

TEST_P(Fault, EndsInAnErrorAndTheNextRunIsClean) {
  const PipelineRun warm_up = run_pipeline(kPipeline);  // contexts and modules load once
  ASSERT_TRUE(warm_up.reached_eos);
  const size_t free_before = free_device_memory();

  for (int nth : {1, 5}) {
    SCOPED_TRACE(std::string(GetParam()) + " call " + std::to_string(nth));
    g_setenv("CUDAGRAY_INJECT_FAULT", (std::string(GetParam()) + ":" + std::to_string(nth)).c_str(), TRUE);
    const PipelineRun faulty = run_pipeline(kPipeline);
    g_unsetenv("CUDAGRAY_INJECT_FAULT");
    EXPECT_FALSE(faulty.reached_eos);
    ASSERT_EQ(faulty.errors.size(), 1u);
    // A failed pinned allocation surfaces from whichever element owns the
    // pool, in that element's words; every other fault is reported by
    // cudagray naming the call.
    if (std::string(GetParam()) != "cudaHostAlloc") {
      EXPECT_NE(faulty.errors[0].find(GetParam()), std::string::npos) << faulty.errors[0];
    }
    const PipelineRun again = run_pipeline(kPipeline);
    EXPECT_TRUE(again.reached_eos);
    EXPECT_TRUE(again.errors.empty());
  }
  EXPECT_EQ(free_device_memory(), free_before) << "device memory left allocated";
}

INSTANTIATE_TEST_SUITE_P(CudaCalls, Fault,
                         ::testing::Values("cudaMalloc", "cudaHostAlloc", "cudaMemcpy2DAsync",
                                           "convert_cuda", "cudaEventRecord", "cudaEventSynchronize"),
                         [](const auto &info) { return std::string(info.param); });
