// Known bugs in plugin/ or kernels/, one test each, failing until fixed.
// Not run by `meson test` (so CI stays green); run it by hand:
//   GST_PLUGIN_PATH_1_0=build/plugin build/tests/test_known_bugs
// When one passes, move it into the suite it belongs to (the four found
// first, on error texts and READY-only properties, are fixed and now live
// in tests/test_reliability.cpp).
#include "reliability_helpers.h"

using namespace cudagray;
using namespace cudagray::test;

// Found by tests/fuzz/run (input tests/fuzz/corpus/crash-passthrough-short).
// plugin/gstcudagray.cpp, gst_cuda_gray_generate_output: GRAY8 input is
// passed through untouched and unchecked, so a buffer shorter than its caps'
// frame (or with a video meta pointing outside it) goes downstream with
// GST_FLOW_OK and no message, while the same buffer in any converted format
// is an element error (issue 5: a buffer shorter than the frame is an error
// whatever the format). Nothing here reads out of bounds; an element further
// down that trusts the caps might. Fix: in the passthrough branch of
// generate_output, check the queued buffer as map_input_frame does (GRAY8
// plane 0: offset + stride * (height - 1) + width <= size) and post the same
// "Input buffer does not hold a WxH GRAY8 frame: ..." error with
// GST_FLOW_ERROR.
TEST(KnownBugs, ShortGray8BufferInPassthroughIsAnError) {
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("GRAY8", 33, 17));  // 36-byte rows: 612 bytes
  std::vector<uint8_t> bytes(100);
  EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())), GST_FLOW_ERROR);
  const std::vector<BusMessage> errors = pop_messages(harness.bus, GST_MESSAGE_ERROR);
  ASSERT_EQ(errors.size(), 1u) << "a 100-byte buffer passed through as a 33x17 GRAY8 frame";
  EXPECT_EQ(errors[0].text.rfind("Input buffer does not hold a 33x17 GRAY8 frame: ", 0), 0u) << errors[0].text;
}
