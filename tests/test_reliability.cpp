// SPDX-License-Identifier: LGPL-2.1-or-later
// Reliability: the catalogue of bad input of issue 5 that tests/test_element.cpp
// does not already cover. Each case ends in an element error or warning whose
// text says what to do (or in GStreamer's not-negotiated, for caps), a non-OK
// flow return where there is one, and never a crash, a hang or a read or write
// out of bounds (tests/valgrind.sh runs this under memcheck, and
// tests/gpu-sanitizers.sh under compute-sanitizer). Cases that take a backend
// run on the CPU here and on CUDA where there is a GPU; without one the CUDA
// cases are skipped with the reason. docs/reliability.md has the table.
#include <climits>
#include <mutex>
#include <thread>

#include "probes.h"

#ifdef CUDAGRAY_TEST_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace cudagray;
using namespace cudagray::test;

namespace {

class ByBackend : public BackendTest {
 protected:
  std::vector<std::string> settings(int max_inflight = 4) const {
    return {"backend=" + backend(), "max-inflight=" + std::to_string(max_inflight)};
  }
};

std::string backend_name(const ::testing::TestParamInfo<const char *> &info) { return info.param; }

GstBuffer *timed(GstBuffer *buf, int index) {
  GST_BUFFER_PTS(buf) = index * GST_SECOND / 30;
  GST_BUFFER_DURATION(buf) = GST_SECOND / 30;
  return buf;
}

PixelLayout layout_named(const std::string &name) {
  for (PixelLayout l : kRgb8Layouts)
    if (name == layout_info(l).name) return l;
  ADD_FAILURE() << "no layout " << name;
  return PixelLayout::RGB;
}

// Pushes one frame, drains, and returns what came out.
GrayImage convert_drained(Harness &harness, const TestFrame &f) {
  EXPECT_EQ(gst_harness_push(harness.h, buffer_for(f)), GST_FLOW_OK);
  drain_element(harness);
  GstBuffer *out = gst_harness_try_pull(harness.h);
  if (!out) {
    ADD_FAILURE() << "no output buffer; errors:"
                  << describe(pop_messages(harness.bus, GST_MESSAGE_ERROR));
    return GrayImage(f.width, f.height);
  }
  GrayImage img = gray_of(out, f.width, f.height);
  gst_buffer_unref(out);
  return img;
}

// Pulls every output there is; each must be the next expected frame.
void expect_frames(Harness &harness, const std::vector<TestFrame> &frames, size_t *next,
                   const WeightChoice &weights = kWeightChoices[0]) {
  while (GstBuffer *out = gst_harness_try_pull(harness.h)) {
    if (*next >= frames.size()) {
      ADD_FAILURE() << "more outputs than frames pushed";
      gst_buffer_unref(out);
      return;
    }
    const TestFrame &f = frames[*next];
    if (f.layout == PixelLayout::RGB && f.planes == 0) {  // marker: a GRAY8 frame, passed through
      EXPECT_EQ(gst_buffer_memcmp(out, 0, f.bytes.data(), f.bytes.size()), 0) << "output " << *next;
    } else {
      EXPECT_TRUE(same_pixels(gray_of(out, f.width, f.height), cpu_reference(f, weights)))
          << "output " << *next;
    }
    gst_buffer_unref(out);
    ++*next;
  }
}

// Ends the stream: every frame still due comes out, and the element posted
// no error or warning on the way.
void end_cleanly(Harness &harness, const std::vector<TestFrame> &frames, size_t *next) {
  drain_element(harness);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
  expect_frames(harness, frames, next);
  EXPECT_EQ(*next, frames.size());
  EXPECT_EQ(
      describe(pop_messages(harness.bus, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))),
      "");
}

std::string weights_of(GstElement *e) {
  gchar *text = nullptr;
  g_object_get(e, "weights", &text, nullptr);
  std::string s = text ? text : "";
  g_free(text);
  return s;
}

int int_property(GstElement *e, const char *name) {
  GValue v = G_VALUE_INIT;
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(e), name);
  g_value_init(&v, spec->value_type);
  g_object_get_property(G_OBJECT(e), name, &v);
  int result = G_VALUE_HOLDS_ENUM(&v)   ? g_value_get_enum(&v)
               : G_VALUE_HOLDS_UINT(&v) ? static_cast<int>(g_value_get_uint(&v))
                                        : g_value_get_int(&v);
  g_value_unset(&v);
  return result;
}

// The backend an element converts on, from its stats: only CUDA measures
// uploads.
std::string backend_in_use(GstElement *e) {
  GstStructure *stats = nullptr;
  g_object_get(e, "stats", &stats, nullptr);
  double upload = -1;
  gst_structure_get_double(stats, "upload-time-mean-us", &upload);
  gst_structure_free(stats);
  return upload > 0 ? "cuda" : "cpu";
}

}  // namespace

// ------------------------------------------------------------------ caps

// Width or height 0 or above 16384: the caps are refused at the pad (the
// template says 1..16384), a buffer after them is not-negotiated, and the
// element takes good caps afterwards.
TEST_P(ByBackend, CapsWithZeroOrOversizedDimensionsAreNotNegotiated) {
  Harness harness(settings());
  GstPad *sink = gst_element_get_static_pad(harness.element(), "sink");
  for (const auto &[w, h] : std::vector<std::pair<long, long>>{{0, 48},
                                                               {64, 0},
                                                               {0, 0},
                                                               {16385, 48},
                                                               {64, 16385},
                                                               {16385, 16385},
                                                               {INT_MAX, 1},
                                                               {-1, 48}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const std::string text = "video/x-raw,format=RGB,width=" + std::to_string(w) +
                             ",height=" + std::to_string(h) + ",framerate=30/1";
    GstCaps *caps = gst_caps_from_string(text.c_str());
    ASSERT_NE(caps, nullptr);
    EXPECT_FALSE(gst_pad_query_accept_caps(sink, caps));
    gst_caps_unref(caps);
    harness.set_caps(text);
    std::vector<uint8_t> bytes(64 * 48 * 3);
    EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
              GST_FLOW_NOT_NEGOTIATED);
  }
  gst_object_unref(sink);
  // The element itself posts nothing: in a pipeline, upstream reports
  // not-negotiated (see NotNegotiatedInAPipelineIsReportedByTheSource).
  EXPECT_EQ(
      describe(pop_messages(harness.bus, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))),
      "");
  harness.set_caps(caps_string("RGB", 64, 48));
  const TestFrame f = random_frame(PixelLayout::RGB, 64, 48);
  EXPECT_TRUE(same_pixels(convert_drained(harness, f), cpu_reference(f, kWeightChoices[0])));
}

// What a user sees for refused caps in a pipeline: GStreamer's
// not-negotiated error from the source, naming the reason.
TEST_P(ByBackend, NotNegotiatedInAPipelineIsReportedByTheSource) {
  const PipelineRun run = run_pipeline(
      "videotestsrc num-buffers=3 ! video/x-raw,format=RGB8P,width=64,height=48 ! "
      "identity ! cudagray backend=" +
      backend() + " ! fakesink");
  EXPECT_FALSE(run.reached_eos);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_NE(run.errors[0].find("Internal data stream error"), std::string::npos) << run.errors[0];
}

// Caps the element does not take arrive while frames are in flight: those
// frames still leave first, data after the caps is not-negotiated, and
// streaming goes on once good caps come.
TEST_P(ByBackend, UnsupportedCapsMidStreamDrainFramesInFlightFirst) {
  Harness harness(settings(4));
  harness.set_caps(caps_string("RGB", 64, 48));
  std::vector<TestFrame> frames;
  size_t next = 0;
  for (int i = 0; i < 3; ++i) {
    frames.push_back(random_frame(PixelLayout::RGB, 64, 48));
    ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(frames.back()), i)), GST_FLOW_OK);
  }
  for (const std::string &bad : {caps_string("RGB8P", 64, 48), caps_string("RGB", 0, 48),
                                 std::string("audio/x-raw,format=S16LE,rate=48000,channels=2")}) {
    SCOPED_TRACE(bad);
    harness.set_caps(bad);
    std::vector<uint8_t> bytes(64 * 48 * 3);
    EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
              GST_FLOW_NOT_NEGOTIATED);
  }
  // Refused caps never reach the element: its sink pad refuses them first,
  // so the frames in flight are neither dropped nor held back by them: all
  // three come out, converted and in order, with no further event or
  // buffer, and nothing else does.
  for (size_t i = 0; i < frames.size(); ++i) {
    GstBuffer *out = gst_harness_pull(harness.h);  // waits up to 60 s
    ASSERT_NE(out, nullptr) << "frame " << i << " in flight before the refused caps never came out";
    EXPECT_TRUE(same_pixels(gray_of(out, 64, 48), cpu_reference(frames[i], kWeightChoices[0])))
        << "output " << i;
    gst_buffer_unref(out);
  }
  next = frames.size();
  EXPECT_EQ(gst_harness_try_pull(harness.h), nullptr) << "an output no frame was pushed for";
  harness.set_caps(caps_string("BGRx", 33, 17));
  for (int i = 3; i < 6; ++i) {
    frames.push_back(random_frame(PixelLayout::BGRx, 33, 17));
    ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(frames.back()), i)), GST_FLOW_OK);
  }
  ASSERT_NO_FATAL_FAILURE(end_cleanly(harness, frames, &next));
}

// Size and format (GRAY8 passthrough among them) change on every frame with
// up to 4 frames in flight: every frame comes out, converted, in order.
TEST_P(ByBackend, CapsChangeOnEveryFrameLosesNothing) {
  Harness harness(settings(4));
  struct Geometry {
    const char *format;
    int width, height;
  };
  const Geometry cycle[] = {{"RGB", 64, 48}, {"RGBA", 64, 48},  {"GRAY8", 64, 48},
                            {"GBR", 31, 7},  {"xBGR", 641, 3},  {"GRAY8", 5, 5},
                            {"BGR", 1, 1},   {"RGBP", 320, 240}};
  std::vector<TestFrame> frames;
  size_t next = 0;
  for (int i = 0; i < 80; ++i) {
    const Geometry &g = cycle[i % (sizeof cycle / sizeof cycle[0])];
    harness.set_caps(caps_string(g.format, g.width, g.height));
    GstBuffer *buf;
    if (std::string(g.format) == "GRAY8") {
      TestFrame f{PixelLayout::RGB, g.width, g.height, {}};
      f.planes = 0;  // marks a passthrough frame for expect_frames
      f.bytes.resize(GST_ROUND_UP_4(g.width) * g.height);
      fill_random(f.bytes);
      buf = gst_buffer_new_memdup(f.bytes.data(), f.bytes.size());
      frames.push_back(f);
    } else {
      frames.push_back(random_frame(layout_named(g.format), g.width, g.height));
      buf = buffer_for(frames.back());
    }
    ASSERT_EQ(gst_harness_push(harness.h, timed(buf, i)), GST_FLOW_OK) << "frame " << i;
    expect_frames(harness, frames, &next);
  }
  ASSERT_NO_FATAL_FAILURE(end_cleanly(harness, frames, &next));
}

// ------------------------------------------------------------------ buffers

namespace {

// A buffer that does not hold the frame its caps promise, and what the
// element must say about it.
struct BadBuffer {
  std::string name;
  std::function<GstBuffer *()> make;
  std::string says;  // the error text after "Input buffer does not hold a 64x48 RGBP frame: "
};

GstBuffer *with_meta(const TestFrame &f, std::vector<gsize> offsets, std::vector<gint> strides,
                     GstVideoFormat format = GST_VIDEO_FORMAT_RGBP, int width = 64, int height = 48,
                     int planes = 3) {
  GstBuffer *buf = gst_buffer_new_memdup(f.bytes.data(), f.bytes.size());
  gsize o[GST_VIDEO_MAX_PLANES] = {};
  gint s[GST_VIDEO_MAX_PLANES] = {};
  for (size_t i = 0; i < offsets.size(); ++i) o[i] = offsets[i], s[i] = strides[i];
  gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, format, width, height, planes, o,
                                 s);
  return buf;
}

}  // namespace

// Every way a buffer can fail to hold its frame, each pushed behind two good
// frames in flight: GST_FLOW_ERROR, one element error naming the plane and
// the bytes, nothing read out of bounds (valgrind, ASan in the fuzzer), the
// good frames still delivered, and the next good frame converted.
TEST_P(ByBackend, BuffersThatDoNotHoldTheFrameAreErrors) {
  // RGBP 64x48, tight: three planes of 64 * 48 = 3072 bytes.
  const TestFrame tight = random_frame(PixelLayout::RGBP, 64, 48, Rows::Tight);
  const std::vector<BadBuffer> cases = {
      {"empty", [] { return gst_buffer_new(); },
       "plane 0 (offset 0, stride 64) needs 3072 bytes, the buffer has 0"},
      {"zero_bytes", [] { return gst_buffer_new_allocate(nullptr, 0, nullptr); },
       "plane 0 (offset 0, stride 64) needs 3072 bytes, the buffer has 0"},
      {"one_byte_short",
       [&] { return gst_buffer_new_memdup(tight.bytes.data(), tight.bytes.size() - 1); },
       "plane 2 (offset 6144, stride 64) needs 9216 bytes, the buffer has 9215"},
      {"negative_stride",
       [&] {
         return with_meta(tight, {0, 3072, 6144}, {64, -64, 64});
       },
       "plane 1 has a negative stride (-64): cudagray takes rows top to bottom only"},
      {"stride_below_the_row",
       [&] {
         return with_meta(tight, {0, 3072, 6144}, {63, 64, 64});
       },
       "plane 0 has a stride of 63 bytes, shorter than its 64-byte rows"},
      {"huge_stride",
       [&] {
         return with_meta(tight, {0, 3072, 6144}, {64, 64, INT_MAX});
       },
       "plane 2 (offset 6144, stride 2147483647) needs 100931737617 bytes, the buffer has 9216"},
      {"offset_past_the_end",
       [&] {
         return with_meta(tight, {0, 3072, 9217}, {64, 64, 64});
       },
       "plane 2 starts at byte 9217, past the end of the 9216-byte buffer"},
      {"offset_near_the_top_of_memory",
       [&] {
         return with_meta(tight, {0, G_MAXSIZE - 100, 6144}, {64, 64, 64});
       },
       "plane 1 starts at byte 18446744073709551515, past the end of the 9216-byte buffer"},
      {"meta_of_another_size",
       [&] {
         return with_meta(tight, {0, 3072, 6144}, {64, 64, 64}, GST_VIDEO_FORMAT_RGBP, 32, 48);
       },
       "its video meta describes a 32x48 RGBP frame"},
      {"meta_of_no_format",  // was a crash: gst_video_format_to_string gave NULL
       [&] {
         return with_meta(tight, {0, 3072, 6144}, {64, 64, 64}, GST_VIDEO_FORMAT_UNKNOWN);
       },
       "its video meta describes a 64x48 UNKNOWN frame"},
      {"meta_with_one_plane",
       [&] { return with_meta(tight, {0}, {64}, GST_VIDEO_FORMAT_RGBP, 64, 48, 1); },
       "its video meta describes a 64x48 RGBP frame with 1 plane(s), the caps 3"},
  };
  for (const BadBuffer &bad : cases) {
    SCOPED_TRACE(bad.name);
    Harness harness(settings(4));
    harness.set_caps(caps_string("RGBP", 64, 48));
    std::vector<TestFrame> good = {random_frame(PixelLayout::RGBP, 64, 48),
                                   random_frame(PixelLayout::RGBP, 64, 48)};
    size_t next = 0;
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(good[i]), i)), GST_FLOW_OK);
    EXPECT_EQ(gst_harness_push(harness.h, timed(bad.make(), 2)), GST_FLOW_ERROR);
    const BusLog log(harness.bus);
    const std::vector<BusMessage> &errors = log.errors;
    EXPECT_EQ(describe(log.warnings), "");
    ASSERT_EQ(errors.size(), 1u) << describe(errors);
    EXPECT_EQ(errors[0].text, "Input buffer does not hold a 64x48 RGBP frame: " + bad.says);
    EXPECT_NE(errors[0].debug.find("upstream sent a buffer that does not match the caps"),
              std::string::npos)
        << errors[0].debug;
    drain_element(harness);
    expect_frames(harness, good, &next);
    EXPECT_EQ(next, 2u) << "good frames in flight were lost";
    good.push_back(random_frame(PixelLayout::RGBP, 64, 48));
    ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(good.back()), 3)), GST_FLOW_OK);
    drain_element(harness);
    expect_frames(harness, good, &next);
    EXPECT_EQ(next, 3u) << "the element did not go on after the bad buffer";
  }
}

// GRAY8 passes through untouched, but only once checked like every other
// format: a short buffer is the same error (found by tests/fuzz/run; its
// input is tests/fuzz/corpus/crash-passthrough-short).
TEST_P(ByBackend, ShortGray8BufferInPassthroughIsAnError) {
  Harness harness(settings(4));
  harness.set_caps(caps_string("GRAY8", 33, 17));  // 36-byte rows: 612 bytes
  std::vector<uint8_t> bytes(100);
  EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
            GST_FLOW_ERROR);
  const BusLog log(harness.bus);
  ASSERT_EQ(log.errors.size(), 1u) << "a 100-byte buffer passed through as a 33x17 GRAY8 frame";
  EXPECT_EQ(log.errors[0].text,
            "Input buffer does not hold a 33x17 GRAY8 frame: plane 0 (offset 0, stride 36) "
            "needs 609 bytes, the buffer has 100");
  EXPECT_EQ(gst_harness_try_pull(harness.h), nullptr);
}

// The edges that are fine: a plane ending at the buffer's last byte, a frame
// spread over several memories, a buffer longer than the frame.
TEST_P(ByBackend, BuffersAtTheEdgesConvert) {
  Harness harness(settings(2));
  harness.set_caps(caps_string("RGBP", 64, 48));
  std::vector<TestFrame> frames;
  size_t next = 0;
  // last plane ends exactly at the end; planes in reverse order
  TestFrame reversed = random_frame(PixelLayout::RGBP, 64, 48, Rows::Tight);
  std::swap(reversed.offset[0], reversed.offset[2]);
  frames.push_back(reversed);
  ASSERT_EQ(gst_harness_push(harness.h, buffer_for(reversed)), GST_FLOW_OK);
  // one memory per plane
  TestFrame split = random_frame(PixelLayout::RGBP, 64, 48, Rows::Tight);
  frames.push_back(split);
  GstBuffer *buf = gst_buffer_new();
  for (int p = 0; p < 3; ++p) {
    gpointer copy = g_memdup2(split.bytes.data() + 3072 * p, 3072);
    gst_buffer_append_memory(
        buf, gst_memory_new_wrapped(GST_MEMORY_FLAG_READONLY, copy, 3072, 0, 3072, copy, g_free));
  }
  ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK);
  // longer than the frame
  TestFrame longer = random_frame(PixelLayout::RGBP, 64, 48, Rows::Tight);
  longer.bytes.resize(longer.bytes.size() + 4096, 0x5A);
  frames.push_back(longer);
  ASSERT_EQ(
      gst_harness_push(harness.h, gst_buffer_new_memdup(longer.bytes.data(), longer.bytes.size())),
      GST_FLOW_OK);
  ASSERT_NO_FATAL_FAILURE(end_cleanly(harness, frames, &next));
}

// ------------------------------------------------------------------ properties

namespace {

// Text that is not three numbers in 0..64, and what the warning says of it.
const std::vector<std::pair<const char *, const char *>> kBadWeights = {
    {"", "expected three comma-separated numbers \"R,G,B\", got \"\""},
    {"abc", "expected three comma-separated numbers \"R,G,B\", got \"abc\""},
    {"0.3,0.6", "expected three comma-separated numbers \"R,G,B\", got \"0.3,0.6\""},
    {"0.3,0.6,0.1,0.2",
     "expected three comma-separated numbers \"R,G,B\", got \"0.3,0.6,0.1,0.2\""},
    {"0.3;0.6;0.1", "expected three comma-separated numbers \"R,G,B\", got \"0.3;0.6;0.1\""},
    {"0.3,,0.1", "\"\" is not a number in \"0.3,,0.1\""},
    {"0x10,0,0", "\"0x10\" is not a number in \"0x10,0,0\""},
    {"1e400,0,0", "\"1e400\" is not a number in \"1e400,0,0\""},
    {"-0.1,0.5,0.5", "weight \"-0.1\" is outside 0..64"},
    {"0.2,-1e-300,0.5", "weight \"-1e-300\" is outside 0..64"},
    {"64.0001,0,0", "weight \"64.0001\" is outside 0..64"},
    {"nan,0,0", "weight \"nan\" is outside 0..64"},
    {"0,inf,0", "weight \"inf\" is outside 0..64"},
    {"0,0,-inf", "weight \"-inf\" is outside 0..64"},
};

// Sets every invalid weights text (and NULL) on e; each must leave the weights
// as they were. Once started, each gives exactly one warning that says what
// weights takes; before, none (the start fails on them instead).
void expect_bad_weights_refused(GstElement *e, GstBus *bus, bool started = true) {
  const std::string before = weights_of(e);
  const int matrix = int_property(e, "matrix");
  const size_t warnings_each = started ? 1 : 0;
  for (const auto &[text, why] : kBadWeights) {
    SCOPED_TRACE(std::string("weights=") + text);
    g_object_set(e, "weights", text, nullptr);
    const std::vector<BusMessage> warnings = pop_messages(bus, GST_MESSAGE_WARNING);
    EXPECT_EQ(weights_of(e), before);
    EXPECT_EQ(int_property(e, "matrix"), matrix);
    ASSERT_EQ(warnings.size(), warnings_each) << describe(warnings);
    if (!started) continue;
    EXPECT_EQ(warnings[0].text, std::string("Ignoring invalid weights \"") + text + "\": " + why);
    EXPECT_EQ(warnings[0].debug.substr(warnings[0].debug.find('\n') + 1),
              "weights takes three numbers \"R,G,B\" between 0 and 64, e.g. \"0.21,0.72,0.07\"; "
              "the previous weights stay in use");
  }
  g_object_set(e, "weights", nullptr, nullptr);
  const std::vector<BusMessage> warnings = pop_messages(bus, GST_MESSAGE_WARNING);
  ASSERT_EQ(warnings.size(), warnings_each) << describe(warnings);
  if (started) {
    EXPECT_EQ(warnings[0].text,
              "Ignoring invalid weights \"(NULL)\": expected three comma-separated numbers "
              "\"R,G,B\", got \"\"");
  }
  EXPECT_EQ(weights_of(e), before);
  std::string huge(100000, '7');
  g_object_set(e, "weights", huge.c_str(), nullptr);
  EXPECT_EQ(pop_messages(bus, GST_MESSAGE_WARNING).size(), warnings_each);
  EXPECT_EQ(weights_of(e), before);
}

}  // namespace

// In NULL, READY and PAUSED (an element alone), and PLAYING with frames
// flowing: bad weights change nothing, and frames keep the weights they had.
// Started, they warn; before, the start fails until valid weights are set.
TEST_P(ByBackend, InvalidWeightsInEveryStateWarnAndChangeNothing) {
  GstElement *e = gst_element_factory_make("cudagray", nullptr);
  ASSERT_NE(e, nullptr);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  gst_util_set_object_arg(G_OBJECT(e), "backend", backend().c_str());
  g_object_set(e, "weights", "0.5,0.25,0.125", nullptr);
  for (GstState state : {GST_STATE_NULL, GST_STATE_READY, GST_STATE_PAUSED, GST_STATE_PLAYING}) {
    SCOPED_TRACE(gst_element_state_get_name(state));
    ASSERT_NE(gst_element_set_state(e, state), GST_STATE_CHANGE_FAILURE);
    const bool started = state >= GST_STATE_PAUSED;
    expect_bad_weights_refused(e, bus, started);
    EXPECT_EQ(weights_of(e), "0.5,0.25,0.125");
    if (started) continue;
    g_object_set(e, "weights", "0,0,-inf", nullptr);
    EXPECT_EQ(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
    const std::vector<BusMessage> errors = pop_messages(bus, GST_MESSAGE_ERROR);
    ASSERT_EQ(errors.size(), 1u) << describe(errors);
    EXPECT_EQ(errors[0].text,
              "Invalid weights \"0,0,-inf\": weight \"-inf\" is outside 0..64; expected "
              "\"R,G,B\", each between 0 and 64");
    g_object_set(e, "weights", "0.5,0.25,0.125", nullptr);  // valid again: starts
  }
  gst_element_set_state(e, GST_STATE_NULL);
  gst_bus_set_flushing(bus, TRUE);  // queued messages hold e, which holds bus
  gst_object_unref(bus);
  gst_object_unref(e);

  Harness harness(settings(3));
  harness.set_caps(caps_string("BGRA", 97, 31));
  const WeightChoice bt709 = kWeightChoices[1];
  gst_util_set_object_arg(G_OBJECT(harness.element()), "matrix", "bt709");
  std::vector<TestFrame> frames;
  size_t next = 0;
  for (int i = 0; i < 6; ++i) {
    frames.push_back(random_frame(PixelLayout::BGRA, 97, 31));
    ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(frames.back()), i)), GST_FLOW_OK);
    expect_bad_weights_refused(harness.element(), harness.bus);
    expect_frames(harness, frames, &next, bt709);
  }
  drain_element(harness);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
  expect_frames(harness, frames, &next, bt709);
  EXPECT_EQ(next, frames.size());
}

// Values outside a property's range never reach the element: GObject refuses
// them (with a GLib warning on stderr) and GStreamer's text parsing ignores
// what it cannot read; the old value stays, in every state.
TEST(PropertyValues, OutOfRangeValuesAreRefusedInEveryState) {
  GstElement *e = gst_element_factory_make("cudagray", nullptr);
  ASSERT_NE(e, nullptr);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  gst_util_set_object_arg(G_OBJECT(e), "backend", "cpu");
  g_object_set(e, "max-inflight", 5u, "cuda-device-id", 0, nullptr);
  gst_util_set_object_arg(G_OBJECT(e), "matrix", "bt2020");
  for (GstState state : {GST_STATE_NULL, GST_STATE_READY, GST_STATE_PAUSED, GST_STATE_PLAYING}) {
    SCOPED_TRACE(gst_element_state_get_name(state));
    ASSERT_NE(gst_element_set_state(e, state), GST_STATE_CHANGE_FAILURE);
    g_object_set(e, "max-inflight", 17u, nullptr);
    g_object_set(e, "cuda-device-id", -2, nullptr);
    g_object_set(e, "matrix", 99, nullptr);
    g_object_set(e, "backend", 7, nullptr);
    for (const auto &[name, text] :
         std::vector<std::pair<const char *, const char *>>{{"backend", "gpu"},
                                                            {"backend", "3"},
                                                            {"matrix", "bt999"},
                                                            {"matrix", "9"},
                                                            {"max-inflight", "-1"},
                                                            {"max-inflight", "1e9"},
                                                            {"max-inflight", "four"},
                                                            {"cuda-device-id", "abc"},
                                                            {"cuda-device-id", "-7"},
                                                            {"cuda-device-id", "99999999999"}})
      gst_util_set_object_arg(G_OBJECT(e), name, text);
    EXPECT_EQ(int_property(e, "backend"), 2);  // cpu
    EXPECT_EQ(int_property(e, "matrix"), 2);   // bt2020
    EXPECT_EQ(int_property(e, "max-inflight"), 5);
    EXPECT_EQ(int_property(e, "cuda-device-id"), 0);
    EXPECT_EQ(describe(pop_messages(bus, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))),
              "");
  }
  // GStreamer's text parsing reads an empty enum value as 0: "matrix=" is
  // bt601 and "backend=" auto, silently (GStreamer core, not cudagray).
  gst_util_set_object_arg(G_OBJECT(e), "matrix", "");
  EXPECT_EQ(int_property(e, "matrix"), 0);
  gst_element_set_state(e, GST_STATE_NULL);
  gst_bus_set_flushing(bus, TRUE);  // queued messages hold e, which holds bus
  gst_object_unref(bus);
  gst_object_unref(e);
}

// cuda-device-id beyond the devices there are: backend=cuda fails to start
// with an error that says what to do; backend=cpu ignores the id;
// backend=auto falls back to the CPU with a warning when there is no GPU, and
// is an error when there are GPUs (the id then names one that does not exist).
TEST(PropertyValues, DeviceBeyondTheCountFailsToStartWithAdvice) {
  std::string reason;
  const int devices = cuda_device_count(&reason);
  for (const char *backend : {"cuda", "auto", "cpu"}) {
    for (int id : {devices, devices + 1, 1000, G_MAXINT}) {
      SCOPED_TRACE(std::string(backend) + " cuda-device-id=" + std::to_string(id));
      GstElement *e = gst_element_factory_make("cudagray", nullptr);
      GstBus *bus = gst_bus_new();
      gst_element_set_bus(e, bus);
      gst_util_set_object_arg(G_OBJECT(e), "backend", backend);
      g_object_set(e, "cuda-device-id", id, nullptr);
      const bool should_fail =
          std::string(backend) == "cuda" || (std::string(backend) == "auto" && devices > 0);
      EXPECT_EQ(gst_element_set_state(e, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE,
                should_fail);
      const BusLog log(bus);
      const std::vector<BusMessage> &errors = log.errors, &warnings = log.warnings;
      if (should_fail) {
        ASSERT_EQ(errors.size(), 1u) << describe(errors);
        const std::string expected_reason =
            devices > 0 ? "CUDA device " + std::to_string(id) +
                              " does not exist: " + std::to_string(devices) +
                              " device(s) found, numbered from 0"
                        : reason;
        EXPECT_EQ(errors[0].text, "No usable CUDA device: " + expected_reason);
        EXPECT_NE(errors[0].debug.find(
                      "pick an existing device, or set backend=cpu to run without a GPU"),
                  std::string::npos)
            << errors[0].debug;
      } else {
        EXPECT_EQ(describe(errors), "");
        EXPECT_EQ(warnings.size(), std::string(backend) == "auto" ? 1u : 0u) << describe(warnings);
      }
      gst_element_set_state(e, GST_STATE_NULL);
      gst_bus_set_flushing(bus, TRUE);
      gst_object_unref(bus);
      gst_object_unref(e);
    }
  }
}

// backend, cuda-device-id and max-inflight may change in NULL or READY only
// (GST_PARAM_MUTABLE_READY), which GObject does not enforce. Set while
// PLAYING, each gives a warning that says it takes effect at the next start;
// the value is stored and read back at once, the frames keep converting on
// the backend chosen at start, and the next start uses the new values.
TEST_P(ByBackend, ReadyOnlyPropertiesSetWhilePlayingApplyAtTheNextStart) {
  Harness harness(settings(2));
  harness.set_caps(caps_string("RGB", 64, 48));
  const std::string other = backend() == "cpu" ? "cuda" : "cpu";
  std::vector<TestFrame> frames;
  size_t next = 0;
  frames.push_back(random_frame(PixelLayout::RGB, 64, 48));
  ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(frames.back()), 0)), GST_FLOW_OK);
  gst_util_set_object_arg(G_OBJECT(harness.element()), "backend", other.c_str());
  g_object_set(harness.element(), "cuda-device-id", 1000, "max-inflight", 1u, nullptr);
  EXPECT_EQ(int_property(harness.element(), "backend"), other == "cpu" ? 2 : 1);
  EXPECT_EQ(int_property(harness.element(), "cuda-device-id"), 1000);
  EXPECT_EQ(int_property(harness.element(), "max-inflight"), 1);
  for (int i = 1; i < 5; ++i) {
    frames.push_back(random_frame(PixelLayout::RGB, 64, 48));
    ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(frames.back()), i)), GST_FLOW_OK);
  }
  drain_element(harness);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
  expect_frames(harness, frames, &next);
  EXPECT_EQ(next, frames.size());
  EXPECT_EQ(backend_in_use(harness.element()), backend()) << "the backend changed while PLAYING";
  const BusLog log(harness.bus);
  EXPECT_EQ(describe(log.errors), "");
  ASSERT_EQ(log.warnings.size(), 3u) << describe(log.warnings);
  int i = 0;
  for (const char *name : {"backend", "cuda-device-id", "max-inflight"}) {
    EXPECT_EQ(log.warnings[i].text, std::string(name) + " takes effect at the next start");
    EXPECT_EQ(log.warnings[i].debug.substr(log.warnings[i].debug.find('\n') + 1),
              "set it in the NULL or READY state");
    ++i;
  }

  // The next start uses them: CUDA device 1000 exists nowhere, so a switch to
  // cuda fails to start; a switch to cpu starts and converts there.
  ASSERT_EQ(gst_element_set_state(harness.element(), GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
  const GstStateChangeReturn restarted =
      gst_element_set_state(harness.element(), GST_STATE_PLAYING);
  if (other == "cuda") {
    EXPECT_EQ(restarted, GST_STATE_CHANGE_FAILURE);
    const std::vector<BusMessage> errors = pop_messages(harness.bus, GST_MESSAGE_ERROR);
    ASSERT_EQ(errors.size(), 1u) << describe(errors);
    EXPECT_EQ(errors[0].text.rfind("No usable CUDA device: ", 0), 0u) << errors[0].text;
  } else {
    ASSERT_EQ(restarted, GST_STATE_CHANGE_SUCCESS);
    // the harness's source pad saw EOS above: a new stream starts here
    ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_stream_start("restarted")));
    harness.set_caps(caps_string("RGB", 64, 48));
    const TestFrame f = random_frame(PixelLayout::RGB, 64, 48);
    EXPECT_TRUE(same_pixels(convert_through(harness, f), cpu_reference(f, kWeightChoices[0])));
    EXPECT_EQ(backend_in_use(harness.element()), "cpu");
  }
}

// ------------------------------------------------------------------ flushes and EOS

// Flushing seeks on a running pipeline while frames are in flight: each seek
// is answered, frames flow again after it, EOS still ends the stream, and
// nothing posts an error. A hang fails the wait instead of the whole run.
TEST_P(ByBackend, FlushingSeeksWhileFramesAreInFlight) {
  Pipeline p(
      "videotestsrc pattern=ball ! video/x-raw,format=RGBx,width=320,height=240,framerate=30/1 ! "
      "cudagray name=gray backend=" +
      backend() + " max-inflight=4 ! fakesink name=sink sync=false");
  PadCounter counter;
  counter.from_thread = "gray:src";
  counter.attach(p.by_name("sink"), "sink");
  ASSERT_NE(gst_element_set_state(p.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(wait_for(counter.buffers, 10, 10000)) << "no frames before the seeks";
  const long seeks = 200;
  for (long i = 0; i < seeks; ++i) {
    const long before = counter.buffers.load();
    ASSERT_TRUE(gst_element_seek_simple(p.get(), GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH,
                                        (i % 50) * GST_SECOND / 30))
        << "seek " << i;
    // A flushing seek in PLAYING is asynchronous: the pipeline prerolls
    // again. Sending the next event before that ends can deadlock in
    // GStreamer itself (the pipeline's state lock against the preroll), so
    // wait for it, as an application must.
    ASSERT_EQ(gst_element_get_state(p.get(), nullptr, nullptr, 10 * GST_SECOND),
              GST_STATE_CHANGE_SUCCESS)
        << "the pipeline did not return to PLAYING after seek " << i;
    ASSERT_TRUE(wait_for(counter.buffers, before + 1, 10000)) << "no frame after seek " << i;
  }
  ASSERT_TRUE(gst_element_send_event(p.get(), gst_event_new_eos()));
  BusLog log;
  EXPECT_EQ(p.wait_end(20 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
  EXPECT_GE(counter.buffers.load(), seeks + 10);
  // with 4 in flight, frames leave from the output task, not the streaming
  // thread (where a synchronous backend, one frame in flight, pushes them)
  std::printf("frames out %ld, pushed by cudagray's output task %ld\n", counter.buffers.load(),
              counter.from_that_thread.load());
  EXPECT_GT(counter.from_that_thread.load(), 0) << "no frame went through the output task";
}

// Flushes from a second thread while the streaming thread pushes frames as
// fast as it can, the way a flushing seek does it: flush-start first (it
// unblocks the streaming thread), then, holding the stream lock, flush-stop
// and a new segment. Each flush waits until pushes have gone through since
// the last one, and its flush-stop until a push has met its flush-start,
// however the threads are scheduled; a push that met a flush waits, as a
// source's paused task does, until that flush has stopped. No deadlock, no
// error, no flow return other than OK or FLUSHING, and once the flushes stop
// every frame pushed comes out.
TEST_P(ByBackend, FlushesFromAnotherThreadWhileStreaming) {
  Harness harness(settings(8));
  harness.set_caps(caps_string("RGB", 160, 120));
  std::vector<TestFrame> pool;
  for (int i = 0; i < 4; ++i) pool.push_back(random_frame(PixelLayout::RGB, 160, 120));
  std::atomic<bool> stop{false};
  std::mutex stream_lock;              // what GstPad's stream lock is to a source's task
  Count ok, flushing, other, stopped;  // stopped: flushes stopped
  std::thread streaming([&] {
    for (int i = 0; !stop.load(); ++i) {
      GstFlowReturn ret;
      long stops;
      {
        std::lock_guard<std::mutex> hold(stream_lock);
        stops = stopped.load();
        ret = gst_harness_push(harness.h, timed(buffer_for(pool[i % pool.size()]), i));
      }
      (ret == GST_FLOW_OK ? ok : ret == GST_FLOW_FLUSHING ? flushing : other)++;
      // the flush it met stops after this push, with the stream lock
      if (ret == GST_FLOW_FLUSHING && !wait_for(stopped, stops + 1, 20000)) {
        ADD_FAILURE() << "the flush that push " << i << " met never stopped";
        return;
      }
    }
  });
  // false when no push met its flush-start, asked to wait for one
  auto flush = [&](bool until_a_push_meets_it) {
    const long met = flushing.load();
    EXPECT_TRUE(gst_harness_push_event(harness.h, gst_event_new_flush_start()));
    const bool was_met = !until_a_push_meets_it || wait_for(flushing, met + 1, 20000);
    std::lock_guard<std::mutex> hold(stream_lock);
    EXPECT_TRUE(gst_harness_push_event(harness.h, gst_event_new_flush_stop(TRUE)));
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    EXPECT_TRUE(gst_harness_push_event(harness.h, gst_event_new_segment(&segment)));
    ++stopped;
    return was_met;
  };
  const int flushes = 100;
  for (int i = 0; i < flushes; ++i) {
    const bool pushed = wait_for(ok, ok.load() + 1, 20000);
    EXPECT_TRUE(pushed) << "no push went through before flush " << i;
    const bool met = pushed && flush(true);
    EXPECT_TRUE(met) << "no push met flush " << i;
    if (!met) break;
  }
  stop = true;
  streaming.join();
  EXPECT_GE(ok.load(), flushes);
  EXPECT_EQ(other.load(), 0) << "a push returned neither OK nor FLUSHING";
  // One more flush drops what is still in flight; then the queue is emptied.
  flush(false);
  while (GstBuffer *out = gst_harness_try_pull(harness.h)) gst_buffer_unref(out);
  std::vector<TestFrame> last;
  size_t next = 0;
  for (int i = 0; i < 5; ++i) {
    last.push_back(random_frame(PixelLayout::RGB, 160, 120));
    ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(last.back()), i)), GST_FLOW_OK);
  }
  ASSERT_NO_FATAL_FAILURE(end_cleanly(harness, last, &next));
  std::printf("%d flushes; pushes: %ld OK, %ld FLUSHING\n", flushes, ok.load(), flushing.load());
}

// EOS from the application with frames in flight in a running pipeline:
// every frame the source made reaches the sink, for 1 to 16 in flight.
TEST_P(ByBackend, EosWithFramesInFlightDeliversEveryFrame) {
  for (int inflight : {1, 2, 16}) {
    SCOPED_TRACE(inflight);
    Pipeline p(
        "videotestsrc name=src num-buffers=97 ! video/x-raw,format=BGR,width=641,height=481 ! "
        "cudagray name=gray backend=" +
        backend() + " max-inflight=" + std::to_string(inflight) +
        " ! fakesink name=sink sync=false");
    PadCounter made, delivered;
    delivered.from_thread = "gray:src";
    made.attach(p.by_name("src"), "src");
    delivered.attach(p.by_name("sink"), "sink");
    ASSERT_NE(gst_element_set_state(p.get(), GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    BusLog log;
    ASSERT_EQ(p.wait_end(30 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
    EXPECT_EQ(made.buffers.load(), 97);
    EXPECT_EQ(delivered.buffers.load(), 97);
    EXPECT_FALSE(delivered.pts_decreased);
    std::printf("max-inflight %d: frames out %ld, pushed by cudagray's output task %ld\n", inflight,
                delivered.buffers.load(), delivered.from_that_thread.load());
    // more than one in flight: frames leave from the output task
    if (inflight > 1)
      EXPECT_GT(delivered.from_that_thread.load(), 0) << "no frame went through the output task";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ByBackend, ::testing::Values("cpu", "cuda"), backend_name);

// ------------------------------------------------------------------ GPU memory

#ifdef CUDAGRAY_TEST_HAVE_CUDA
// A frame larger than the GPU memory left: the rest of the device is taken
// first, then 16384x16384 RGBx caps (1 GiB in, 256 MiB out per frame) with 4
// in flight. The caps fail with an element error that says what to do, data
// is not-negotiated, the partial allocation is given back, and once memory
// is free again the same element converts.
TEST(GpuMemory, FrameLargerThanFreeMemoryIsAnErrorAndNothingLeaks) {
  SKIP_WITHOUT_GPU();
  Harness harness({"backend=cuda", "max-inflight=4"});
  harness.set_caps(caps_string("RGBx", 64, 48));  // the context and streams exist from here
  convert_drained(harness, random_frame(PixelLayout::RGBx, 64, 48));
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  // Leave 1.5 GiB: the first frame's buffers fit, the second's do not.
  const size_t leave = size_t(3) << 29;
  std::vector<void *> hog;
  while (true) {
    ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
    if (free_bytes <= leave + (size_t(64) << 20)) break;
    const size_t chunk = std::min(free_bytes - leave, size_t(1) << 30);
    void *p = nullptr;
    if (cudaMalloc(&p, chunk) != cudaSuccess) {
      cudaGetLastError();
      break;
    }
    hog.push_back(p);
  }
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  std::printf("GPU memory left free for the element: %zu MiB\n", free_bytes >> 20);
  const size_t free_before = free_bytes;

  harness.set_caps(caps_string("RGBx", 16384, 16384));
  std::vector<uint8_t> small(16);
  EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(small.data(), small.size())),
            GST_FLOW_NOT_NEGOTIATED);
  const std::vector<BusMessage> errors = pop_messages(harness.bus, GST_MESSAGE_ERROR);
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(
      errors[0].text.rfind("Could not prepare the cuda backend for 16384x16384 RGBx frames: ", 0),
      0u)
      << errors[0].text;
  EXPECT_NE(errors[0].text.find("out of memory"), std::string::npos) << errors[0].text;
  EXPECT_NE(errors[0].debug.find("free GPU memory, use smaller frames, or set backend=cpu"),
            std::string::npos)
      << errors[0].debug;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  EXPECT_GE(free_bytes + (size_t(8) << 20), free_before)
      << "the failed configuration kept device memory";

  for (void *p : hog) cudaFree(p);
  harness.set_caps(caps_string("RGBx", 4096, 2160));
  const TestFrame f = random_frame(PixelLayout::RGBx, 4096, 2160);
  EXPECT_TRUE(same_pixels(convert_drained(harness, f), cpu_reference(f, kWeightChoices[0])));
}
#endif
