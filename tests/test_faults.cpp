// SPDX-License-Identifier: LGPL-2.1-or-later
// Injected CUDA faults: each ends in an element error, the pipeline can be
// run again, and no device memory stays allocated. Needs a GPU and a build
// configured with -Dfault-injection=enabled.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include "element_harness.h"

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

// Arms spec ("" disarms) in the plugin's own copy of the kernels, through
// the symbol a fault-injection build of the plugin exports. Returns why it
// cannot, or "".
std::string arm_plugin_fault(const std::string &spec) {
  GstPlugin *plugin = gst_plugin_load_by_name("cudagray");
  if (!plugin) return "the cudagray plugin is not found: is GST_PLUGIN_PATH set?";
  void *module = dlopen(gst_plugin_get_filename(plugin), RTLD_NOW | RTLD_NOLOAD);
  gst_object_unref(plugin);
  auto inject =
      module ? reinterpret_cast<void (*)(const char *)>(dlsym(module, "cudagray_inject_cuda_fault"))
             : nullptr;
  if (module) dlclose(module);  // GStreamer keeps the plugin loaded
  if (!inject) return "the plugin was built without -Dfault-injection=enabled";
  inject(spec.c_str());
  return "";
}

class Fault : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    const std::string why_not = arm_plugin_fault("");
    if (!why_not.empty()) GTEST_SKIP() << why_not;
  }
};

}  // namespace

TEST_P(Fault, EndsInAnErrorAndTheNextRunIsClean) {
  const PipelineRun warm_up = run_pipeline(kPipeline);  // contexts and modules load once
  ASSERT_TRUE(warm_up.reached_eos);
  const size_t free_before = free_device_memory();

  for (int nth : {1, 5}) {
    SCOPED_TRACE(std::string(GetParam()) + " call " + std::to_string(nth));
    ASSERT_EQ(arm_plugin_fault(std::string(GetParam()) + ":" + std::to_string(nth)), "");
    const PipelineRun faulty = run_pipeline(kPipeline);
    arm_plugin_fault("");  // a fault that did not fire must not reach the next run
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
                                           "convert_cuda", "cudaEventRecord", "poll_event"),
                         [](const auto &info) { return std::string(info.param); });
