// SPDX-License-Identifier: LGPL-2.1-or-later
// The output queue seen from outside, on both backends and several
// max-inflight: downstream renegotiating while frames are in flight, serialized
// events that do not wait, DISCONT after a QoS drop, the POSITION query
// beside videoconvert's, and reverse playback.
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "element_harness.h"

namespace cudagray::test {
namespace {

constexpr int kWidth = 97, kHeight = 31;
constexpr GstClockTime kFrame = GST_SECOND / 30;

GstBuffer *timed(GstBuffer *buf, guint64 index) {
  GST_BUFFER_PTS(buf) = index * kFrame;
  GST_BUFFER_DURATION(buf) = kFrame;
  return buf;
}

// What went through a pad, in order: "b<pts in frames>" per buffer and the
// event type's name per event.
struct PadLog {
  std::mutex lock;
  std::vector<std::string> items;
  static GstPadProbeReturn record(GstPad *, GstPadProbeInfo *info, gpointer data) {
    PadLog *log = static_cast<PadLog *>(data);
    std::string item;
    if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER)
      item = "b" + std::to_string(GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info)) / kFrame);
    else
      item = GST_EVENT_TYPE_NAME(GST_PAD_PROBE_INFO_EVENT(info));
    std::lock_guard<std::mutex> hold(log->lock);
    log->items.push_back(item);
    return GST_PAD_PROBE_OK;
  }
  void watch(GstPad *pad) {
    gst_pad_add_probe(
        pad, GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
        record, this, nullptr);
  }
  std::vector<std::string> snapshot() {
    std::lock_guard<std::mutex> hold(lock);
    return items;
  }
};

std::string joined(const std::vector<std::string> &items) {
  std::string s;
  for (const std::string &i : items) s += (s.empty() ? "" : " ") + i;
  return s;
}

class Output : public ::testing::TestWithParam<std::tuple<const char *, int>> {
 protected:
  std::string backend() const { return std::get<0>(GetParam()); }
  int max_inflight() const { return std::get<1>(GetParam()); }
  std::string element() const {
    return "cudagray name=gray backend=" + backend() +
           " max-inflight=" + std::to_string(max_inflight());
  }
  void SetUp() override {
    if (backend() == "cuda") SKIP_WITHOUT_GPU();
  }
  // The gray caps downstream flips between: the depths, and on the CUDA
  // backend both memories.
  std::vector<std::string> output_caps() const {
    std::vector<std::string> caps;
    for (const char *format : {"GRAY8", "GRAY16_LE"}) {
      caps.push_back(std::string("video/x-raw,format=") + format);
      if (backend() == "cuda")
        caps.push_back(std::string("video/x-raw(memory:CUDAMemory),format=") + format);
    }
    return caps;
  }
};

// What downstream asks for at frame boundaries: before every `every`-th
// frame enters cudagray (on the streaming thread, so that one negotiation
// ends before the next change), the capsfilter takes the next caps of the
// list, or downstream only sends RECONFIGURE.
struct Renegotiator {
  GstElement *filter;
  GstPad *sink_pad;  // appsink's
  std::vector<std::string> caps;
  int every;
  bool flip;
  int frames = 0;
  static GstPadProbeReturn on_buffer(GstPad *, GstPadProbeInfo *, gpointer data) {
    Renegotiator *r = static_cast<Renegotiator *>(data);
    const int i = r->frames++;
    if (i == 0 || i % r->every) return GST_PAD_PROBE_OK;
    if (r->flip) {
      GstCaps *next = gst_caps_from_string(r->caps[i / r->every % r->caps.size()].c_str());
      g_object_set(r->filter, "caps", next, nullptr);
      gst_caps_unref(next);
    } else {
      gst_pad_push_event(r->sink_pad, gst_event_new_reconfigure());
    }
    return GST_PAD_PROBE_OK;
  }
};

// Downstream changes what it wants (depth, memory) every `every` frames, or
// only sends RECONFIGURE, while frames are in flight: all 600 frames come
// out, in order, with their timestamps, each as the caps it carries say, and
// nothing is posted.
void renegotiate(const std::string &element, const std::vector<std::string> &caps, int every,
                 bool flip) {
  const int kFrames = 600;
  const Pipeline pipeline("appsrc name=src format=time caps=\"" +
                          caps_string("BGRx", kWidth, kHeight) + "\" ! " + element +
                          " ! capsfilter name=filter caps=\"" + caps[0] +
                          "\" ! appsink name=sink sync=false");
  GstElement *gray = pipeline.by_name("gray");
  GstElement *sink = pipeline.by_name("sink");
  GstPad *gray_sink = gst_element_get_static_pad(gray, "sink");
  Renegotiator renegotiator{pipeline.by_name("filter"), gst_element_get_static_pad(sink, "sink"),
                            caps, every, flip};
  gst_pad_add_probe(gray_sink, GST_PAD_PROBE_TYPE_BUFFER, Renegotiator::on_buffer, &renegotiator,
                    nullptr);
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  std::vector<TestFrame> frames;
  std::vector<GrayImage> out;
  std::vector<GstClockTime> pts;
  std::thread puller([&] {
    while (GstSample *sample = pipeline.pull("sink", 20 * GST_SECOND)) {
      GstBuffer *buf = gst_sample_get_buffer(sample);
      const GstStructure *s = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
      const int depth = std::string(gst_structure_get_string(s, "format")) == "GRAY8" ? 8 : 16;
      out.push_back(gray_of(buf, kWidth, kHeight, depth));
      pts.push_back(GST_BUFFER_PTS(buf));
      gst_sample_unref(sample);
    }
  });
  for (int i = 0; i < kFrames; ++i) {
    frames.push_back(random_frame(PixelLayout::BGRx, kWidth, kHeight));
    EXPECT_EQ(pipeline.push("src", timed(buffer_for(frames.back()), i)), GST_FLOW_OK);
  }
  pipeline.end_of_stream("src");
  BusLog log;
  EXPECT_EQ(pipeline.wait_end(60 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
  EXPECT_EQ(describe(log.warnings), "");
  puller.join();
  gst_object_unref(renegotiator.sink_pad);
  gst_object_unref(gray_sink);
  ASSERT_EQ(out.size(), frames.size()) << "frames lost";
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(pts[i], i * kFrame) << "out of order at " << i;
    ASSERT_TRUE(same_pixels(out[i], cpu_reference(frames[i], kWeightChoices[0], out[i].depth)))
        << "frame " << i << " at depth " << out[i].depth;
  }
  if (flip && every < kFrames / 2) {
    EXPECT_GT(renegotiator.frames / every, 1) << "caps never changed";
  }
}

TEST_P(Output, RenegotiationKeepsEveryFrame) {
  for (int every : {1, 3, 25}) {
    SCOPED_TRACE("caps change every " + std::to_string(every) + " frames");
    renegotiate(element(), output_caps(), every, true);
  }
}

TEST_P(Output, ReconfigureKeepsEveryFrame) {
  for (int every : {1, 3, 25}) {
    SCOPED_TRACE("RECONFIGURE every " + std::to_string(every) + " frames");
    renegotiate(element(), output_caps(), every, false);
  }
}

// Stops buffers on a pad until released.
struct Gate {
  GstPad *pad;
  gulong id;
  explicit Gate(GstPad *p) : pad(p) {
    id = gst_pad_add_probe(
        pad, GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BLOCK),
        [](GstPad *, GstPadProbeInfo *, gpointer) { return GST_PAD_PROBE_OK; }, nullptr, nullptr);
  }
  void open() {
    if (id) gst_pad_remove_probe(pad, id);
    id = 0;
  }
  ~Gate() { open(); }
};

// With downstream stuck on the first frame and max-inflight frames held, a
// serialized custom event returns at once on the streaming thread, and
// reaches downstream right after the frames that came before it.
TEST_P(Output, SerializedEventDoesNotWaitForFramesAndKeepsItsPlace) {
  Harness harness({"backend=" + backend(), "max-inflight=" + std::to_string(max_inflight())});
  gst_harness_set_live(harness.h, FALSE);  // max-inflight=0: 4 on CUDA, not 1
  harness.set_caps(caps_string("BGRx", kWidth, kHeight));
  GstPad *src = gst_element_get_static_pad(harness.element(), "src");
  PadLog log;
  log.watch(src);
  Gate gate(src);
  // what the element holds: max-inflight, 0 being the backend's choice (4 on
  // CUDA for a non-live source), at most 1 on the CPU and 16 on CUDA
  const bool cuda = backend() == "cuda";
  const int before = max_inflight() == 0 ? (cuda ? 4 : 1) : std::min(max_inflight(), cuda ? 16 : 1);
  std::atomic<int> pushed{0};
  std::atomic<bool> returned{false};
  std::thread streaming([&] {
    for (int i = 0; i < before; ++i, ++pushed)
      EXPECT_EQ(
          gst_harness_push(harness.h,
                           timed(buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight)), i)),
          GST_FLOW_OK);
    gst_harness_push_event(harness.h,
                           gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                                                gst_structure_new_empty("cudagray-test-marker")));
    returned = true;
  });
  for (int i = 0; i < 300 && !returned; ++i) g_usleep(10 * 1000);
  EXPECT_EQ(pushed.load(), before) << "the element held fewer frames than max-inflight";
  EXPECT_TRUE(returned.load()) << "the event waited for the frames before it";
  gate.open();
  streaming.join();
  drain_element(harness);
  std::vector<std::string> expected;
  for (int i = 0; i < before; ++i) expected.push_back("b" + std::to_string(i));
  expected.push_back("custom-downstream");
  std::vector<std::string> seen;
  for (const std::string &item : log.snapshot())
    if (item[0] == 'b' || item == "custom-downstream") seen.push_back(item);
  EXPECT_EQ(joined(seen), joined(expected));
  gst_object_unref(src);
}

// After GstBaseTransform's QoS drops a late frame, the next frame out is
// flagged DISCONT (as videoconvert's is); the ones after it are not.
TEST_P(Output, DiscontAfterAQosDrop) {
  Harness harness({"backend=" + backend(), "max-inflight=" + std::to_string(max_inflight())});
  harness.set_caps(caps_string("BGRx", kWidth, kHeight));
  auto push = [&](int index) {
    return gst_harness_push(
        harness.h, timed(buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight)), index));
  };
  ASSERT_EQ(push(0), GST_FLOW_OK);
  GstBuffer *first = gst_harness_pull(harness.h);
  ASSERT_NE(first, nullptr);
  gst_buffer_unref(first);
  ASSERT_TRUE(gst_harness_push_upstream_event(
      harness.h, gst_event_new_qos(GST_QOS_TYPE_UNDERFLOW, 1.0, 0, GST_SECOND)));
  ASSERT_EQ(push(15), GST_FLOW_OK);  // due at 0.5 s: late, dropped
  ASSERT_EQ(push(60), GST_FLOW_OK);
  ASSERT_EQ(push(61), GST_FLOW_OK);
  drain_element(harness);
  GstBuffer *after = gst_harness_pull(harness.h);
  GstBuffer *next = gst_harness_pull(harness.h);
  ASSERT_NE(after, nullptr);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(GST_BUFFER_PTS(after), 60 * kFrame);
  EXPECT_TRUE(GST_BUFFER_IS_DISCONT(after)) << "no DISCONT after the dropped frame";
  EXPECT_FALSE(GST_BUFFER_IS_DISCONT(next));
  EXPECT_EQ(gst_harness_try_pull(harness.h), nullptr);
  gst_buffer_unref(after);
  gst_buffer_unref(next);
}

// The QoS message of a dropped frame carries the same processing stats as
// videoconvert's in the same case: two frames processed before, one dropped.
TEST_P(Output, QosMessageCountsLikeVideoconverts) {
  auto qos_stats = [](GstElement *element, const std::string &sink_caps) {
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(element, bus);
    GstHarness *h = gst_harness_new_with_element(element, "sink", "src");
    gst_harness_set_src_caps_str(h, caps_string("BGRx", kWidth, kHeight).c_str());
    gst_harness_set_sink_caps_str(h, sink_caps.c_str());
    for (int i : {0, 1, 15, 60}) {
      if (i == 15) {  // late from here to 1 s
        EXPECT_TRUE(gst_harness_push_upstream_event(
            h, gst_event_new_qos(GST_QOS_TYPE_UNDERFLOW, 1.0, 0, GST_SECOND)));
      }
      EXPECT_EQ(gst_harness_push(
                    h, timed(buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight)), i)),
                GST_FLOW_OK);
      if (i != 15) gst_buffer_unref(gst_harness_pull(h));
    }
    guint64 processed = 0, dropped = 0;
    GstMessage *qos = gst_bus_pop_filtered(bus, GST_MESSAGE_QOS);
    EXPECT_NE(qos, nullptr);
    if (qos) {
      GstFormat format;
      gst_message_parse_qos_stats(qos, &format, &processed, &dropped);
      EXPECT_EQ(format, GST_FORMAT_BUFFERS);
      gst_message_unref(qos);
    }
    gst_bus_set_flushing(bus, TRUE);
    gst_harness_teardown(h);
    gst_object_unref(bus);
    return std::make_pair(processed, dropped);
  };
  GstElement *gray = gst_element_factory_make("cudagray", nullptr);
  gst_util_set_object_arg(G_OBJECT(gray), "backend", backend().c_str());
  gst_util_set_object_arg(G_OBJECT(gray), "max-inflight", std::to_string(max_inflight()).c_str());
  const auto ours = qos_stats(gray, "video/x-raw,format=GRAY8");
  const auto theirs =
      qos_stats(gst_element_factory_make("videoconvert", nullptr), "video/x-raw,format=GRAY8");
  EXPECT_EQ(theirs, std::make_pair(guint64(2), guint64(1)));
  EXPECT_EQ(ours, theirs);
}

// POSITION on the source pad while playing equals videoconvert's in the same
// pipeline, after each frame has come out of both.
TEST_P(Output, PositionEqualsVideoconverts) {
  const Pipeline pipeline(
      "appsrc name=src format=time caps=\"" + caps_string("BGRx", kWidth, kHeight) +
      "\" ! tee name=t t. ! queue ! videoconvert name=convert ! video/x-raw,format=GRAY8 ! "
      "appsink name=a sync=false t. ! queue ! " +
      element() + " ! appsink name=b sync=false");
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  GstElement *convert = pipeline.by_name("convert");
  GstElement *gray = pipeline.by_name("gray");
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(
        pipeline.push("src",
                      timed(buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight)), i + 10)),
        GST_FLOW_OK);
    for (const char *sink : {"a", "b"}) {
      GstSample *sample = pipeline.pull(sink, 10 * GST_SECOND);
      ASSERT_NE(sample, nullptr) << sink;
      gst_sample_unref(sample);
    }
    gint64 theirs = -1, ours = -1;
    GstPad *convert_src = gst_element_get_static_pad(convert, "src");
    GstPad *gray_src = gst_element_get_static_pad(gray, "src");
    EXPECT_TRUE(gst_pad_query_position(convert_src, GST_FORMAT_TIME, &theirs));
    EXPECT_TRUE(gst_pad_query_position(gray_src, GST_FORMAT_TIME, &ours));
    EXPECT_EQ(ours, theirs) << "after frame " << i;
    EXPECT_EQ(ours, gint64((i + 11) * kFrame));
    gst_object_unref(convert_src);
    gst_object_unref(gray_src);
  }
  pipeline.end_of_stream("src");
}

// Reverse and fast-backward playback (segments of rate -1 and -4, frames in
// falling timestamps) with frames in flight: every frame out in the order it
// came, the segment's rate passed on, and EOS after the last frame.
TEST_P(Output, ReversePlaybackKeepsOrderThenEos) {
  for (double rate : {-1.0, -4.0}) {
    SCOPED_TRACE(rate);
    Harness harness({"backend=" + backend(), "max-inflight=" + std::to_string(max_inflight())});
    harness.set_caps(caps_string("BGRx", kWidth, kHeight));
    drain_element(harness);  // the harness's own events have left
    GstPad *src = gst_element_get_static_pad(harness.element(), "src");
    PadLog log;
    log.watch(src);
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    segment.rate = rate;
    segment.stop = 20 * kFrame;
    segment.flags = GST_SEGMENT_FLAG_TRICKMODE;
    ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_segment(&segment)));
    std::vector<TestFrame> frames;
    std::vector<std::string> expected = {"segment"};
    for (int i = 19; i >= 0; i -= rate == -1.0 ? 1 : 4) {
      frames.push_back(random_frame(PixelLayout::BGRx, kWidth, kHeight));
      ASSERT_EQ(gst_harness_push(harness.h, timed(buffer_for(frames.back()), i)), GST_FLOW_OK);
      expected.push_back("b" + std::to_string(i));
    }
    ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
    expected.push_back("eos");
    for (size_t i = 0; i < frames.size(); ++i) {
      GstBuffer *out = gst_harness_pull(harness.h);
      ASSERT_NE(out, nullptr);
      EXPECT_TRUE(
          same_pixels(gray_of(out, kWidth, kHeight), cpu_reference(frames[i], kWeightChoices[0])));
      gst_buffer_unref(out);
    }
    for (int i = 0; i < 200 && log.snapshot().back() != "eos"; ++i) g_usleep(10 * 1000);
    const std::vector<std::string> seen = log.snapshot();
    EXPECT_EQ(joined(seen), joined(expected));
    GstEvent *pushed = gst_pad_get_sticky_event(src, GST_EVENT_SEGMENT, 0);
    ASSERT_NE(pushed, nullptr);
    const GstSegment *out_segment;
    gst_event_parse_segment(pushed, &out_segment);
    EXPECT_EQ(out_segment->rate, rate);
    EXPECT_EQ(out_segment->flags, GST_SEGMENT_FLAG_TRICKMODE);
    gst_event_unref(pushed);
    gst_object_unref(src);
  }
}

// Gray passed through holds nothing of the backend's: with downstream stuck
// on the first buffer, upstream queues 16 before it waits (with room for
// one, the streaming thread waited for the output task at every buffer),
// and all come out in order, untouched, once downstream moves.
TEST(Passthrough, UpstreamQueuesSixteenBuffersBeforeItWaits) {
  constexpr int kBuffers = 20, kRoom = 16;
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("GRAY8", kWidth, kHeight));
  GstPad *src = gst_element_get_static_pad(harness.element(), "src");
  Gate gate(src);
  std::vector<GstBuffer *> sent;
  for (int i = 0; i < kBuffers; ++i) {  // GStreamer's GRAY8 layout: rows of a multiple of 4 bytes
    std::vector<uint8_t> bytes(static_cast<size_t>(GST_ROUND_UP_4(kWidth)) * kHeight);
    fill_random(bytes);
    sent.push_back(timed(gst_buffer_new_memdup(bytes.data(), bytes.size()), i));
  }
  std::atomic<int> pushed{0};
  std::thread streaming([&] {
    for (GstBuffer *buf : sent) {
      EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_ref(buf)), GST_FLOW_OK);
      ++pushed;
    }
  });
  int last = -1;  // until the count stays put for 200 ms
  for (int i = 0; i < 100 && pushed.load() != last; ++i) {
    last = pushed.load();
    g_usleep(200 * 1000);
  }
  EXPECT_EQ(pushed.load(), kRoom) << "buffers queued while downstream was stuck";
  gate.open();
  streaming.join();
  for (int i = 0; i < kBuffers; ++i) {
    GstBuffer *out = gst_harness_pull(harness.h);
    EXPECT_EQ(out, sent[i]) << "buffer " << i << " was not passed through in its place";
    gst_clear_buffer(&out);
  }
  for (GstBuffer *buf : sent) gst_buffer_unref(buf);
  gst_object_unref(src);
}

INSTANTIATE_TEST_SUITE_P(Backends, Output,
                         ::testing::Combine(::testing::Values("cpu", "cuda"),
                                            ::testing::Values(0, 1, 4, 16)),
                         [](const ::testing::TestParamInfo<Output::ParamType> &info) {
                           return std::string(std::get<0>(info.param)) + "_inflight" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace cudagray::test
