// SPDX-License-Identifier: LGPL-2.1-or-later
// The output queue seen from outside, on both backends and several
// max-inflight: downstream renegotiating while frames are in flight, serialized
// events that do not wait, DISCONT after a QoS drop, the POSITION query
// beside videoconvert's, and reverse playback.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "element_harness.h"
#include "probes.h"

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
// event type's name per event; each item signals those waiting for one.
struct PadLog {
  std::mutex lock;
  std::condition_variable added;
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
    log->added.notify_all();
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
  // Whether item went through within 20 s.
  bool wait_for(const std::string &item) {
    std::unique_lock<std::mutex> hold(lock);
    return added.wait_for(hold, std::chrono::seconds(20), [&] {
      return std::find(items.begin(), items.end(), item) != items.end();
    });
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
  // backend both memories where the input may go to CUDA memory (gray
  // input is taken and given in system memory only: docs/formats.md).
  std::vector<std::string> output_caps(bool gray_input = false) const {
    std::vector<std::string> caps;
    for (const char *format : {"GRAY8", "GRAY16_LE"}) {
      caps.push_back(std::string("video/x-raw,format=") + format);
      if (backend() == "cuda" && !gray_input)
        caps.push_back(std::string("video/x-raw(memory:CUDAMemory),format=") + format);
    }
    return caps;
  }
};

// How downstream changes what it wants: the capsfilter takes the next caps
// of the list before every `every`-th frame enters cudagray (on the
// streaming thread, so that one negotiation ends before the next change), or
// from the application's own thread (the one pulling the frames) after every
// `every`-th frame it got, whatever cudagray holds then; or downstream only
// sends RECONFIGURE.
enum class Change { kFlipBetweenFrames, kFlipFromApplication, kReconfigure };

struct Renegotiator {
  GstElement *filter;
  GstPad *sink_pad;  // appsink's
  std::vector<std::string> caps;
  int every;
  Change change;
  int frames = 0;
  void flip(int i) {
    GstCaps *next = gst_caps_from_string(caps[i / every % caps.size()].c_str());
    g_object_set(filter, "caps", next, nullptr);
    gst_caps_unref(next);
  }
  static GstPadProbeReturn on_buffer(GstPad *, GstPadProbeInfo *, gpointer data) {
    Renegotiator *r = static_cast<Renegotiator *>(data);
    const int i = r->frames++;
    if (i == 0 || i % r->every) return GST_PAD_PROBE_OK;
    if (r->change == Change::kFlipBetweenFrames)
      r->flip(i);
    else
      gst_pad_push_event(r->sink_pad, gst_event_new_reconfigure());
    return GST_PAD_PROBE_OK;
  }
};

// What the input is: BGRx, converted whatever downstream wants, or GRAY8,
// passed through while downstream wants GRAY8 in system memory.
enum class Input { kBgrx, kGray8 };

// A GRAY8 frame with padded rows, in a buffer whose video meta says so.
GstBuffer *gray8_buffer(const TestFrame &f) {
  GstBuffer *buf = gst_buffer_new_memdup(f.bytes.data(), f.bytes.size());
  gsize offsets[GST_VIDEO_MAX_PLANES] = {f.offset[0]};
  gint strides[GST_VIDEO_MAX_PLANES] = {int(f.stride[0])};
  gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_GRAY8, f.width,
                                 f.height, 1, offsets, strides);
  return buf;
}

// The gray of a frame: the formula's for BGRx; for GRAY8 its own values,
// scaled by 257 to GRAY16 (docs/formats.md, gray input).
GrayImage expected_gray(const TestFrame &f, Input input, int depth) {
  if (input == Input::kBgrx) return cpu_reference(f, kWeightChoices[0], depth);
  GrayImage g(f.width, f.height, 0, depth);
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < f.width; ++x) {
      const unsigned v = f.bytes[f.offset[0] + y * f.stride[0] + x];
      if (depth == 8) {
        g.bytes[y * g.stride + x] = static_cast<uint8_t>(v);
      } else {
        const uint16_t v16 = static_cast<uint16_t>(v * 257);
        std::memcpy(&g.bytes[y * g.stride + 2 * x], &v16, 2);
      }
    }
  return g;
}

// How a sample's caps read: its format, and its memory when not system.
std::string format_and_memory(const GstCaps *caps) {
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  const bool cuda = gst_caps_features_contains(gst_caps_get_features(caps, 0), "memory:CUDAMemory");
  return std::string(gst_structure_get_string(s, "format")) + (cuda ? " in CUDA memory" : "");
}

// Downstream changes what it wants (depth, memory) every `every` frames, or
// only sends RECONFIGURE, while frames are in flight: all 600 frames come
// out, in order, with their timestamps, each as the caps it carries say;
// when downstream changes its caps, every caps of the list came out; and
// nothing is posted. The appsink holds three samples, so that the source
// cannot run ahead of the application's flips.
void renegotiate(const std::string &element, const std::vector<std::string> &caps, int every,
                 Change change, Input input = Input::kBgrx) {
  const int kFrames = 600;
  const char *input_format = input == Input::kBgrx ? "BGRx" : "GRAY8";
  const Pipeline pipeline("appsrc name=src format=time caps=\"" +
                          caps_string(input_format, kWidth, kHeight) + "\" ! " + element +
                          " ! capsfilter name=filter caps=\"" + caps[0] +
                          "\" ! appsink name=sink sync=false max-buffers=3");
  GstElement *gray = pipeline.by_name("gray");
  GstElement *sink = pipeline.by_name("sink");
  GstPad *gray_sink = gst_element_get_static_pad(gray, "sink");
  Renegotiator renegotiator{pipeline.by_name("filter"), gst_element_get_static_pad(sink, "sink"),
                            caps, every, change};
  if (change != Change::kFlipFromApplication)
    gst_pad_add_probe(gray_sink, GST_PAD_PROBE_TYPE_BUFFER, Renegotiator::on_buffer, &renegotiator,
                      nullptr);
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  std::vector<TestFrame> frames;
  std::vector<GrayImage> out;
  std::vector<GstClockTime> pts;
  std::set<std::string> caps_out;
  std::vector<std::string> caps_names;  // each caps of the list, as format_and_memory reads
  for (const std::string &text : caps) {
    GstCaps *c = gst_caps_from_string(text.c_str());
    caps_names.push_back(format_and_memory(c));
    gst_caps_unref(c);
  }
  std::thread puller([&] {
    int in_asked = 0;  // frames out in the caps asked last, since they were asked
    while (GstSample *sample = pipeline.pull("sink", 20 * GST_SECOND)) {
      GstBuffer *buf = gst_sample_get_buffer(sample);
      const GstStructure *s = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
      const int depth = std::string(gst_structure_get_string(s, "format")) == "GRAY8" ? 8 : 16;
      const std::string name = format_and_memory(gst_sample_get_caps(sample));
      caps_out.insert(name);
      out.push_back(gray_of(buf, kWidth, kHeight, depth));
      pts.push_back(GST_BUFFER_PTS(buf));
      gst_sample_unref(sample);
      // the next flip once `every` frames came out in the caps asked: the
      // frames the sink already held, in the caps before, do not count (the
      // application's flips must not outrun them, or a caps asked would be
      // flipped away before any frame could carry it)
      if (change == Change::kFlipFromApplication &&
          name == caps_names[renegotiator.frames % caps_names.size()] && ++in_asked == every) {
        in_asked = 0;
        renegotiator.flip(++renegotiator.frames * every);
      }
    }
  });
  for (int i = 0; i < kFrames; ++i) {
    if (input == Input::kBgrx) {
      frames.push_back(random_frame(PixelLayout::BGRx, kWidth, kHeight));
      EXPECT_EQ(pipeline.push("src", timed(buffer_for(frames.back()), i)), GST_FLOW_OK);
    } else {
      frames.push_back(random_frame(PixelLayout::Luma, kWidth, kHeight));
      EXPECT_EQ(pipeline.push("src", timed(gray8_buffer(frames.back()), i)), GST_FLOW_OK);
    }
  }
  pipeline.end_of_stream("src");
  BusLog log;
  EXPECT_EQ(pipeline.wait_end(60 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
  // A capsfilter changed by the application while it is being asked answers
  // nothing for a moment: GstBaseTransform warns of each attempt that then
  // fails (cudagray tries again, and nothing is lost); nothing else.
  std::vector<BusMessage> unexpected;
  for (const BusMessage &warning : log.warnings)
    if (change != Change::kFlipFromApplication || warning.text != "not negotiated")
      unexpected.push_back(warning);
  EXPECT_EQ(describe(unexpected), "");
  puller.join();
  gst_object_unref(renegotiator.sink_pad);
  gst_object_unref(gray_sink);
  std::string lost;
  for (size_t i = 0, j = 0; i < frames.size(); ++i)
    if (j < pts.size() && pts[j] == i * kFrame)
      ++j;
    else
      lost += " " + std::to_string(i);
  ASSERT_EQ(out.size(), frames.size()) << "frames lost:" << lost;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(pts[i], i * kFrame) << "out of order at " << i;
    ASSERT_TRUE(same_pixels(out[i], expected_gray(frames[i], input, out[i].depth)))
        << "frame " << i << " at depth " << out[i].depth;
  }
  std::set<std::string> asked;
  for (size_t i = 0; i < (change == Change::kReconfigure ? 1 : caps.size()); ++i) {
    GstCaps *c = gst_caps_from_string(caps[i].c_str());
    asked.insert(format_and_memory(c));
    gst_caps_unref(c);
  }
  EXPECT_EQ(caps_out, asked) << "the caps that came out are not the ones downstream asked for";
}

TEST_P(Output, RenegotiationKeepsEveryFrame) {
  for (Input input : {Input::kBgrx, Input::kGray8})
    for (int every : {1, 3, 25}) {
      SCOPED_TRACE(std::string(input == Input::kBgrx ? "BGRx" : "GRAY8") +
                   " in, caps change every " + std::to_string(every) + " frames");
      renegotiate(element(), output_caps(input == Input::kGray8), every, Change::kFlipBetweenFrames,
                  input);
    }
}

// The application flips the caps from its own thread, so that the change
// meets frames already converted for the caps before: downstream refuses
// them (NOT_NEGOTIATED with a reconfiguration due), and cudagray
// renegotiates and converts them again instead of stopping with
// not-negotiated (it did in 8 of 80 runs on the CPU).
// GRAY8 in reaches passthrough whenever GRAY8 in system memory is asked.
TEST_P(Output, RenegotiationFromTheApplicationKeepsEveryFrame) {
  const long repetitions = scaled(20);
  for (Input input : {Input::kBgrx, Input::kGray8})
    for (int every : {1, 3, 25})
      for (long run = 0; run < repetitions; ++run) {
        SCOPED_TRACE(std::string(input == Input::kBgrx ? "BGRx" : "GRAY8") +
                     " in, caps change every " + std::to_string(every) + " frames, run " +
                     std::to_string(run));
        renegotiate(element(), output_caps(input == Input::kGray8), every,
                    Change::kFlipFromApplication, input);
        if (HasFatalFailure() || HasNonfatalFailure()) return;
      }
}

TEST_P(Output, ReconfigureKeepsEveryFrame) {
  for (int every : {1, 3, 25}) {
    SCOPED_TRACE("RECONFIGURE every " + std::to_string(every) + " frames");
    renegotiate(element(), output_caps(), every, Change::kReconfigure);
  }
}

// Frames the output task holds, refused while the sink pad's stream lock is
// held outside the element (as the streaming thread holds it a moment
// after the chain function returned; here the test holds it): the output
// task waits, taking no lock of the sink pad's, and the streaming thread
// converts them again for the new caps at its next event (here EOS), as
// gstqueue and GstBaseSrc leave a flow return for their streaming thread;
// then they go out, then the EOS. GRAY8 passed through leaves the frames
// to the output task on every backend and depth.
TEST_P(Output, FramesRefusedGoOutAtTheNextEvent) {
  const Pipeline pipeline("appsrc name=src format=time caps=\"" +
                          caps_string("GRAY8", kWidth, kHeight) + "\" ! " + element() +
                          " ! capsfilter name=filter caps=video/x-raw,format=GRAY8" +
                          " ! appsink name=sink sync=false");
  GstElement *gray = pipeline.by_name("gray");
  struct Seen {
    std::mutex lock;
    std::condition_variable changed;
    int entered = 0, blocked = 0, refused = 0;
    bool wait_for(const int &count, int at_least = 1) {
      std::unique_lock<std::mutex> hold(lock);
      return changed.wait_for(hold, std::chrono::seconds(20), [&] { return count >= at_least; });
    }
    void count(int &what) {
      std::lock_guard<std::mutex> hold(lock);
      what++;
      changed.notify_all();
    }
  } seen;
  GstPad *gray_sink = gst_element_get_static_pad(gray, "sink");
  gst_pad_add_probe(
      gray_sink, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *, gpointer data) {
        Seen *s = static_cast<Seen *>(data);
        s->count(s->entered);
        return GST_PAD_PROBE_OK;
      },
      &seen, nullptr);
  GstPad *gray_src = gst_element_get_static_pad(gray, "src");
  const gulong block = gst_pad_add_probe(
      gray_src, GstPadProbeType(GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_BUFFER),
      [](GstPad *, GstPadProbeInfo *, gpointer data) {
        Seen *s = static_cast<Seen *>(data);
        s->count(s->blocked);
        return GST_PAD_PROBE_OK;
      },
      &seen, nullptr);
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  // More than max-inflight 1 and 4 take at once: converted again, some
  // wait for others to finish.
  std::vector<TestFrame> frames;
  for (int i = 0; i < 6; ++i) {
    frames.push_back(random_frame(PixelLayout::Luma, kWidth, kHeight));
    ASSERT_EQ(pipeline.push("src", timed(gray8_buffer(frames.back()), i)), GST_FLOW_OK);
  }
  ASSERT_TRUE(seen.wait_for(seen.blocked)) << "the first frame never reached cudagray's src pad";
  ASSERT_TRUE(seen.wait_for(seen.entered, (int)frames.size()))
      << "the last frame never reached cudagray";
  // Taken once the streaming thread has left the chain function with the
  // last frame queued (passed through, it does not wait there): no buffer
  // comes after.
  GST_PAD_STREAM_LOCK(gray_sink);
  // Downstream now takes GRAY16 only, and refuses the first frame it is
  // given (NOT_NEGOTIATED, as a sink pad that no longer accepts the caps).
  GstElement *filter = pipeline.by_name("filter");
  GstCaps *gray16 = gst_caps_from_string("video/x-raw,format=GRAY16_LE");
  g_object_set(filter, "caps", gray16, nullptr);
  gst_caps_unref(gray16);
  GstPad *filter_sink = gst_element_get_static_pad(filter, "sink");
  gst_pad_add_probe(
      filter_sink, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *info, gpointer data) {
        Seen *s = static_cast<Seen *>(data);
        if (s->refused > 0) return GST_PAD_PROBE_REMOVE;
        gst_buffer_unref(GST_PAD_PROBE_INFO_BUFFER(info));
        GST_PAD_PROBE_INFO_DATA(info) = nullptr;
        GST_PAD_PROBE_INFO_FLOW_RETURN(info) = GST_FLOW_NOT_NEGOTIATED;
        s->count(s->refused);
        return GST_PAD_PROBE_HANDLED;
      },
      &seen, nullptr);
  gst_object_unref(filter_sink);
  gst_pad_remove_probe(gray_src, block);
  const bool refused = seen.wait_for(seen.refused);
  GST_PAD_STREAM_UNLOCK(gray_sink);
  ASSERT_TRUE(refused) << "downstream never refused the first frame";
  pipeline.end_of_stream("src");
  std::vector<GstSample *> samples;
  while (samples.size() < frames.size())
    if (GstSample *sample = pipeline.pull("sink", 20 * GST_SECOND))
      samples.push_back(sample);
    else
      break;
  EXPECT_EQ(samples.size(), frames.size()) << "frames out after the next event";
  for (size_t i = 0; i < samples.size(); ++i) {
    GstBuffer *buf = gst_sample_get_buffer(samples[i]);
    EXPECT_EQ(format_and_memory(gst_sample_get_caps(samples[i])), "GRAY16_LE");
    EXPECT_EQ(GST_BUFFER_PTS(buf), i * kFrame);
    EXPECT_TRUE(
        same_pixels(gray_of(buf, kWidth, kHeight, 16), expected_gray(frames[i], Input::kGray8, 16)))
        << "frame " << i;
    gst_sample_unref(samples[i]);
  }
  EXPECT_EQ(pipeline.wait_end(20 * GST_SECOND), GST_MESSAGE_EOS);
  gst_object_unref(gray_sink);
  gst_object_unref(gray_src);
}

// Downstream that ends first (a sink that has had enough, identity
// eos-after, through a queue, from a live source, gray passed through, YUV,
// an appsink whose application stops taking frames):
// upstream is told EOS, and the source's EOS still reaches the sink, so the
// pipeline ends as it does with videoconvert (it never did).
TEST_P(Output, PipelineEndsWhenDownstreamEndsFirst) {
  const std::string endings[] = {"fakesink num-buffers=10", "identity eos-after=10 ! fakesink",
                                 "queue ! fakesink num-buffers=10"};
  for (const char *format : {"RGB", "NV12", "GRAY8"})
    for (const std::string &ending : endings)
      for (const char *live : {"false", "true"}) {
        const std::string description = std::string("videotestsrc num-buffers=300 is-live=") +
                                        live + " ! video/x-raw,format=" + format +
                                        ",width=64,height=48,framerate=300/1 ! " + element() +
                                        " ! " + ending;
        SCOPED_TRACE(description);
        const Pipeline pipeline(description);
        ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
        BusLog log;
        EXPECT_EQ(pipeline.wait_end(10 * GST_SECOND, &log), GST_MESSAGE_EOS)
            << describe(log.errors);
      }
  // an application's appsink that stops taking frames: its callback returns
  // EOS after ten
  const Pipeline pipeline(
      "videotestsrc num-buffers=300 ! video/x-raw,format=RGB,width=64,height=48 ! " + element() +
      " ! appsink name=sink");
  std::atomic<int> taken{0};
  GstAppSinkCallbacks callbacks = {};
  callbacks.new_sample = [](GstAppSink *sink, gpointer data) {
    gst_sample_unref(gst_app_sink_pull_sample(sink));
    return ++*static_cast<std::atomic<int> *>(data) < 10 ? GST_FLOW_OK : GST_FLOW_EOS;
  };
  gst_app_sink_set_callbacks(GST_APP_SINK(pipeline.by_name("sink")), &callbacks, &taken, nullptr);
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  BusLog log;
  EXPECT_EQ(pipeline.wait_end(10 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
  EXPECT_EQ(taken.load(), 10);
}

// Dropped by its bin in NULL, READY or PAUSED, with or without frames held
// (what OpenCV's VideoCapture does when opening fails): the output task is
// stopped and joined first, so nothing it waits on is destroyed under it (it
// deadlocked in PAUSED); the pipeline then goes to NULL as usual. Frames are
// held once the sink has prerolled: the first waits there, pushed by the
// element, and the element is dropped then.
TEST_P(Output, DroppedInAnyStateWithOrWithoutFramesHeld) {
  for (GstState state : {GST_STATE_NULL, GST_STATE_READY, GST_STATE_PAUSED})
    for (int frames : {0, 3}) {
      const std::string trace = std::string(gst_element_state_get_name(state)) + ", " +
                                std::to_string(frames) + " frames pushed";
      SCOPED_TRACE(trace);
      must_return_within(20, "dropping cudagray in " + trace, [&] {
        GstElement *pipeline = gst_parse_launch(
            ("appsrc name=src format=time caps=\"" + caps_string("BGRx", kWidth, kHeight) +
             "\" ! " + element() + " ! fakesink")
                .c_str(),
            nullptr);
        gst_element_set_state(pipeline, state); /* PAUSED: prerolls once frames come */
        GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
        const bool held = frames > 0 && state == GST_STATE_PAUSED;
        for (int i = 0; i < frames && held; ++i)
          gst_app_src_push_buffer(
              GST_APP_SRC(src),
              timed(buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight)), i));
        if (held) {
          EXPECT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, 20 * GST_SECOND),
                    GST_STATE_CHANGE_SUCCESS)
              << "the sink never prerolled";
        }
        GstElement *gray = gst_bin_get_by_name(GST_BIN(pipeline), "gray");
        gst_bin_remove(GST_BIN(pipeline), gray);
        gst_object_unref(gray); /* disposed here, or when its streaming thread lets go */
        gst_element_set_state(pipeline, GST_STATE_NULL);
        gst_object_unref(src);
        gst_object_unref(pipeline);
      });
    }
}

// PAUSED, PLAYING and READY in turn, 200 times, with frames in flight (a
// sink that syncs to the clock keeps them coming and held; in PLAYING a
// frame after the prerolled one reaches it before READY): no state change
// hangs or fails, and the pipeline still ends after.
TEST_P(Output, StateCyclesWithFramesInFlight) {
  PadCounter arrived;  // outlives the pipeline, whose probe counts into it
  const Pipeline pipeline("videotestsrc name=src pattern=snow ! video/x-raw,format=BGRx,width=" +
                          std::to_string(kWidth) + ",height=" + std::to_string(kHeight) +
                          ",framerate=1000/1 ! " + element() + " ! fakesink name=sink sync=true");
  arrived.attach(pipeline.by_name("sink"), "sink");
  const long cycles = scaled(200);
  must_return_within(120, "the state cycles", [&] {
    for (long i = 0; i < cycles; ++i)
      for (GstState state : {GST_STATE_PAUSED, GST_STATE_PLAYING, GST_STATE_READY}) {
        const long before = arrived.buffers.load();
        ASSERT_NE(gst_element_set_state(pipeline.get(), state), GST_STATE_CHANGE_FAILURE);
        ASSERT_NE(gst_element_get_state(pipeline.get(), nullptr, nullptr, 5 * GST_SECOND),
                  GST_STATE_CHANGE_FAILURE)
            << "cycle " << i;
        if (state == GST_STATE_PLAYING) {
          ASSERT_TRUE(wait_for(arrived.buffers, before + 1, 20000))
              << "cycle " << i << ": no frame reached the sink in PLAYING";
        }
      }
  });
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  GstElement *src = pipeline.by_name("src");
  gst_element_send_event(src, gst_event_new_eos());
  EXPECT_EQ(pipeline.wait_end(10 * GST_SECOND), GST_MESSAGE_EOS);
}

// The frames in flight for max-inflight, the same on both backends: a live
// upstream needs none held (0 means 1), a non-live one gets the backend's
// choice (4); up to 16.
int frames_in_flight(int max_inflight, bool live) {
  if (max_inflight == 0) return live ? 1 : 4;
  return std::min(max_inflight, 16);
}

// A frame can wait behind max-inflight - 1 others, so the LATENCY query
// answered on cudagray's source pad is upstream's (an appsrc saying 5 ms
// to 50 ms), min and max each plus exactly (frames in flight - 1) frame
// durations, live as upstream is: nothing added where one frame is in
// flight (a live source), so a frame never waits in cudagray for the one
// before it.
TEST_P(Output, LatencyQueryAddsTheFramesThatMayWait) {
  constexpr GstClockTime kMin = 5 * GST_MSECOND, kMax = 50 * GST_MSECOND;
  for (const bool live : {true, false}) {
    SCOPED_TRACE(live ? "live source" : "non-live source");
    PadCounter arrived;  // outlives the pipeline, whose probe counts into it
    const Pipeline pipeline(
        "appsrc name=src format=time is-live=" + std::string(live ? "true" : "false") +
        " min-latency=" + std::to_string(kMin) + " max-latency=" + std::to_string(kMax) +
        " caps=\"" + caps_string("RGB", kWidth, kHeight) + "\" ! " + element() +
        " ! fakesink name=sink sync=false");
    arrived.attach(pipeline.by_name("sink"), "sink");
    ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
    ASSERT_EQ(
        pipeline.push("src", timed(buffer_for(random_frame(PixelLayout::RGB, kWidth, kHeight)), 0)),
        GST_FLOW_OK);
    ASSERT_TRUE(wait_for(arrived.buffers, 1, 20000)) << "no frame through: no caps to answer for";
    GstPad *src = gst_element_get_static_pad(pipeline.by_name("gray"), "src");
    GstQuery *query = gst_query_new_latency();
    ASSERT_TRUE(gst_pad_query(src, query));
    gboolean answered_live;
    GstClockTime min, max;
    gst_query_parse_latency(query, &answered_live, &min, &max);
    const int in_flight = frames_in_flight(max_inflight(), live);
    const GstClockTime added = gst_util_uint64_scale_int((in_flight - 1) * GST_SECOND, 1, 30);
    EXPECT_EQ(bool(answered_live), live);
    EXPECT_EQ(min, kMin + added) << in_flight << " frames in flight";
    EXPECT_EQ(max, kMax + added) << in_flight << " frames in flight";
    gst_query_unref(query);
    gst_object_unref(src);
    pipeline.end_of_stream("src");
    EXPECT_EQ(pipeline.wait_end(20 * GST_SECOND), GST_MESSAGE_EOS);
  }
}

// Downstream wanting CUDA memory while backend=auto converts on the CPU
// (no usable GPU): the element's own error says why, not a bare
// not-negotiated.
TEST(CpuFallback, CudaMemoryOutputIsRefusedWithTheReason) {
  std::string why;
  if (cudagray::cuda_device_count(&why) > 0) GTEST_SKIP() << "a GPU is usable: no fallback here";
  GstElement *probe = gst_element_factory_make("cudagray", nullptr);
  GstPad *src = gst_element_get_static_pad(probe, "src");
  GstCaps *templ = gst_pad_get_pad_template_caps(src);
  gchar *text = gst_caps_to_string(templ);
  const bool cuda_memory_caps = std::string(text).find("memory:CUDAMemory") != std::string::npos;
  g_free(text);
  gst_caps_unref(templ);
  gst_object_unref(src);
  gst_object_unref(probe);
  if (!cuda_memory_caps) GTEST_SKIP() << "this build has no CUDA memory caps";
  const Pipeline pipeline(
      "videotestsrc num-buffers=3 ! video/x-raw,format=RGB ! cudagray ! "
      "video/x-raw(memory:CUDAMemory),format=GRAY8 ! fakesink");
  pipeline.play();
  BusLog log;
  EXPECT_EQ(pipeline.wait_end(10 * GST_SECOND, &log), GST_MESSAGE_ERROR);
  EXPECT_NE(describe(log.errors)
                .find("CUDA memory output needs the CUDA backend, and "
                      "backend=auto converts on the CPU: "),
            std::string::npos)
      << describe(log.errors);
}

// Stops buffers on a pad until released, noting the thread that brought
// the first one there.
struct Gate {
  GstPad *pad;
  gulong id;
  std::mutex lock;
  std::condition_variable reached;
  bool stopped_one = false;
  std::thread::id stopped_on;
  explicit Gate(GstPad *p) : pad(p) {
    id = gst_pad_add_probe(
        pad, GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_BLOCK),
        [](GstPad *, GstPadProbeInfo *, gpointer data) {
          Gate *gate = static_cast<Gate *>(data);
          std::lock_guard<std::mutex> hold(gate->lock);
          if (!gate->stopped_one) gate->stopped_on = std::this_thread::get_id();
          gate->stopped_one = true;
          gate->reached.notify_all();
          return GST_PAD_PROBE_OK;
        },
        this, nullptr);
  }
  // The thread that brought the first buffer, once one is stopped here
  // (within 20 s; an id of no thread after that).
  std::thread::id first_stopped_on() {
    std::unique_lock<std::mutex> hold(lock);
    reached.wait_for(hold, std::chrono::seconds(20), [&] { return stopped_one; });
    return stopped_on;
  }
  void open() {
    if (id) gst_pad_remove_probe(pad, id);
    id = 0;
  }
  ~Gate() { open(); }
};

// With downstream stuck on the first frame and max-inflight frames held
// (more than one), a serialized custom event returns at once on the
// streaming thread; either way it reaches downstream right after the frames
// that came before it.
TEST_P(Output, SerializedEventDoesNotWaitForFramesAndKeepsItsPlace) {
  Harness harness({"backend=" + backend(), "max-inflight=" + std::to_string(max_inflight())});
  gst_harness_set_live(harness.h, FALSE);  // max-inflight=0: 4 on CUDA, not 1
  harness.set_caps(caps_string("BGRx", kWidth, kHeight));
  GstPad *src = gst_element_get_static_pad(harness.element(), "src");
  PadLog log;
  log.watch(src);
  Gate gate(src);
  // what the element holds: max-inflight, 0 being the backend's choice (4
  // for a non-live source), at most 16, the same on both backends
  const int before = max_inflight() == 0 ? 4 : std::min(max_inflight(), 16);
  std::atomic<int> pushed{0};
  Count returned;
  std::thread streaming([&] {
    for (int i = 0; i < before; ++i, ++pushed)
      EXPECT_EQ(
          gst_harness_push(harness.h,
                           timed(buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight)), i)),
          GST_FLOW_OK);
    gst_harness_push_event(harness.h,
                           gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                                                gst_structure_new_empty("cudagray-test-marker")));
    ++returned;
  });
  // With one frame in flight the streaming thread pushes it itself, as any
  // synchronous filter does (the latency is then the conversion's alone):
  // it waits at the stuck pad, and the event after it. With more, the
  // output task pushes them, and the streaming thread returns meanwhile.
  const bool synchronous = before == 1;
  const std::thread::id stopped_on = gate.first_stopped_on();
  ASSERT_NE(stopped_on, std::thread::id()) << "no frame reached the stuck pad";
  if (synchronous) {
    EXPECT_EQ(stopped_on, streaming.get_id()) << "the frame was not pushed on the streaming thread";
    EXPECT_EQ(pushed.load(), 0) << "the frame was not pushed on the streaming thread";
  } else {
    EXPECT_NE(stopped_on, streaming.get_id()) << "the streaming thread pushed a frame itself";
    EXPECT_TRUE(wait_for(returned, 1, 20000)) << "the event waited for the frames before it";
    EXPECT_EQ(pushed.load(), before) << "the element held fewer frames than max-inflight";
  }
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
    EXPECT_TRUE(log.wait_for("eos")) << "no EOS after the frames";
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
// and all come out in order, untouched, once downstream moves. The 17th
// push cannot return before the gate opens, so once it has begun exactly
// 16 returned; one that returns sooner is seen whichever thread runs first.
TEST(Passthrough, UpstreamQueuesSixteenBuffersBeforeItWaits) {
  constexpr int kBuffers = 20, kRoom = 16;
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("GRAY8", kWidth, kHeight));
  GstPad *sink = gst_element_get_static_pad(harness.element(), "sink");
  Count entered;
  gst_pad_add_probe(
      sink, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *, gpointer count) {
        ++*static_cast<Count *>(count);
        return GST_PAD_PROBE_OK;
      },
      &entered, nullptr);
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
  EXPECT_TRUE(wait_for(entered, kRoom + 1, 20000)) << "the buffer after the room never came";
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
  gst_object_unref(sink);
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
