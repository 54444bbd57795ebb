// SPDX-License-Identifier: LGPL-2.1-or-later
// Injected CUDA faults: each ends in an element error, the pipeline can be
// run again, and none of the device or pinned memory cudagray allocated
// stays allocated. Needs a GPU and a build configured with
// -Dfault-injection=enabled.
#include <dlfcn.h>

#include <cstdint>
#include <tuple>

#include "element_harness.h"
#include "probes.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

const char kPipeline[] =
    "videotestsrc num-buffers=40 ! video/x-raw,format=RGBx,width=640,height=480 ! "
    "cudagray backend=cuda max-inflight=3 ! fakesink name=sink";

// A symbol of the plugin that a fault-injection build exports, or nullptr.
void *plugin_symbol(const char *name) {
  GstPlugin *plugin = gst_plugin_load_by_name("cudagray");
  if (!plugin) return nullptr;
  void *module = dlopen(gst_plugin_get_filename(plugin), RTLD_NOW | RTLD_NOLOAD);
  gst_object_unref(plugin);
  void *symbol = module ? dlsym(module, name) : nullptr;
  if (module) dlclose(module);  // GStreamer keeps the plugin loaded
  return symbol;
}

// Why faults cannot be injected into the plugin, or "".
std::string why_no_faults() {
  GstPlugin *plugin = gst_plugin_load_by_name("cudagray");
  if (!plugin) return "the cudagray plugin is not found: is GST_PLUGIN_PATH set?";
  gst_object_unref(plugin);
  if (!plugin_symbol("cudagray_inject_cuda_fault") || !plugin_symbol("cudagray_cuda_memory_held"))
    return "the plugin was built without -Dfault-injection=enabled";
  return "";
}

// Arms spec ("" disarms) in the plugin's own copy of the kernels.
void arm_plugin_fault(const std::string &spec) {
  reinterpret_cast<void (*)(const char *)>(plugin_symbol("cudagray_inject_cuda_fault"))(
      spec.c_str());
}

// The memory cudagray's allocations hold in this process, as the plugin's
// copy of the kernels counts it: device blocks and bytes (cudaMalloc), and
// pinned host bytes (cudaHostAlloc). Other processes on the GPU, and CUDA's
// own memory, are not in it.
struct Held {
  uint64_t device_blocks = 0, device_bytes = 0, pinned_bytes = 0;
  bool operator==(const Held &o) const {
    return std::tie(device_blocks, device_bytes, pinned_bytes) ==
           std::tie(o.device_blocks, o.device_bytes, o.pinned_bytes);
  }
};
std::ostream &operator<<(std::ostream &out, const Held &h) {
  return out << h.device_blocks << " device blocks of " << h.device_bytes << " bytes, "
             << h.pinned_bytes << " pinned bytes";
}
Held memory_held() {
  Held held;
  reinterpret_cast<void (*)(uint64_t *, uint64_t *, uint64_t *)>(plugin_symbol(
      "cudagray_cuda_memory_held"))(&held.device_blocks, &held.device_bytes, &held.pinned_bytes);
  return held;
}

// Plays kPipeline to its end, the count read once the first frame reached
// the sink (the element's buffers allocated); false when it did not end in
// EOS.
bool run_counting(Held *while_playing) {
  PadCounter arrived;  // outlives the pipeline, whose probe counts into it
  const Pipeline pipeline(kPipeline);
  arrived.attach(pipeline.by_name("sink"), "sink");
  if (pipeline.play() == GST_STATE_CHANGE_FAILURE) return false;
  if (!wait_for(arrived.buffers, 1, 20000)) return false;
  *while_playing = memory_held();
  BusLog log;
  const bool ended = pipeline.wait_end(20 * GST_SECOND, &log) == GST_MESSAGE_EOS;
  EXPECT_EQ(describe(log.errors), "");
  return ended;
}

class Fault : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    const std::string why_not = why_no_faults();
    if (!why_not.empty()) GTEST_SKIP() << why_not;
    arm_plugin_fault("");
  }
};

}  // namespace

// Each run's pipeline is gone when run_pipeline returns, and with it every
// allocation of its cudagray: cudagray then holds nothing, whatever else
// uses the GPU meanwhile. That the count sees cudagray's allocations at all
// is checked while a clean run plays.
TEST_P(Fault, EndsInAnErrorAndTheNextRunIsClean) {
  Held playing;
  ASSERT_TRUE(run_counting(&playing));  // contexts and modules load once
  const Held before = memory_held();
  EXPECT_EQ(before, Held()) << "left allocated by the first run";
  EXPECT_GT(playing.device_bytes, before.device_bytes)
      << "cudagray's device buffers were not counted while it played: " << playing;
  EXPECT_GT(playing.device_blocks, before.device_blocks);

  for (int nth : {1, 5}) {
    SCOPED_TRACE(std::string(GetParam()) + " call " + std::to_string(nth));
    arm_plugin_fault(std::string(GetParam()) + ":" + std::to_string(nth));
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
    EXPECT_EQ(memory_held(), before) << "left allocated by the run that failed";
    Held again;
    EXPECT_TRUE(run_counting(&again)) << "the run after the fault did not end in EOS";
    EXPECT_EQ(memory_held(), before) << "left allocated by the run after the fault";
  }
}

INSTANTIATE_TEST_SUITE_P(CudaCalls, Fault,
                         ::testing::Values("cudaMalloc", "cudaHostAlloc", "cudaMemcpy2DAsync",
                                           "convert_cuda", "cudaEventRecord", "poll_event"),
                         [](const auto &info) { return std::string(info.param); });

namespace {

// Sets the capsfilter's caps, then waits until `frames` more frames
// reached the sink.
void flip_and_run(GstElement *capsfilter, const Count &arrived, const char *caps_text,
                  long frames) {
  GstCaps *caps = gst_caps_from_string(caps_text);
  g_object_set(capsfilter, "caps", caps, nullptr);
  gst_caps_unref(caps);
  const long reached = arrived.load() + frames;
  ASSERT_TRUE(wait_for(arrived, reached, 20000)) << caps_text << ": frames stopped";
}

}  // namespace

// A renegotiation back to caps served before (downstream flipping between
// GRAY8 and GRAY16 in system memory and GRAY8 in CUDA memory, with frames
// in flight) allocates neither device nor pinned memory of cudagray's: the
// backend keeps its slots' buffers, and the pools' memory is used again.
// After one flip to each, every cudaMalloc, then every cudaHostAlloc, is
// made to fail while it flips on; no error comes. Before, each flip
// allocated the slots, their staging and a new pool.
TEST(Renegotiation, FlipsBetweenCapsServedBeforeAllocateNothing) {
  SKIP_WITHOUT_GPU();
  const std::string why_not = why_no_faults();
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  arm_plugin_fault("");
  const char *const flips[] = {"video/x-raw,format=GRAY16_LE",
                               "video/x-raw(memory:CUDAMemory),format=GRAY8",
                               "video/x-raw,format=GRAY8"};
  PadCounter arrived;  // outlives the pipeline, whose probe counts into it
  const Pipeline pipeline(
      "videotestsrc ! video/x-raw,format=RGBx,width=641,height=481 ! "
      "cudagray backend=cuda max-inflight=4 ! capsfilter name=flip caps=video/x-raw,format=GRAY8 "
      "! fakesink name=sink sync=false");
  arrived.attach(pipeline.by_name("sink"), "sink");
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  GstElement *flip = pipeline.by_name("flip");
  for (const char *caps : flips) flip_and_run(flip, arrived.buffers, caps, 10);
  for (const char *allocation : {"cudaMalloc", "cudaHostAlloc"}) {
    SCOPED_TRACE(std::string(allocation) + " armed to fail");
    arm_plugin_fault(std::string(allocation) + ":1");
    for (int round = 0; round < 2; ++round)
      for (const char *caps : flips) flip_and_run(flip, arrived.buffers, caps, 10);
    arm_plugin_fault("");
  }
  EXPECT_EQ(describe(BusLog(pipeline.bus()).errors), "");
}
