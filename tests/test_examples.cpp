// SPDX-License-Identifier: LGPL-2.1-or-later
// What a user of cudagray runs: the embedding examples in examples/, the
// side-by-side picture script, live use at 30 fps 1080p, and docs/formats.md's
// comparison of the formula with videoconvert and OpenCV.
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common.h"
#include "pipeline.h"
#include "shell.h"

namespace {

using cudagray::test::shell;
using cudagray::test::TempDir;
using harness::Pipeline;

std::string env(const char *name, const char *fallback = "") {
  const char *v = std::getenv(name);
  return v ? v : fallback;
}
std::string source_dir() { return env("CUDAGRAY_SOURCE_DIR", "."); }
std::string example(const char *name) {
  return env("CUDAGRAY_EXAMPLES_DIR", "examples") + "/" + name;
}
std::string quote(const std::string &s) { return "'" + s + "'"; }

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// The formula of docs/formats.md, written out again here: Q16 weights from the
// coefficients, white kept at 255 for the standard matrices.
struct Q16 {
  long r, g, b;
};
Q16 standard_q16(double kr, double kb) {
  const long r = std::lround(kr * 65536), b = std::lround(kb * 65536);
  return {r, 65536 - r - b, b};
}
const Q16 kBt601 = standard_q16(0.299, 0.114);
const Q16 kBt709 = standard_q16(0.2126, 0.0722);
int formula(const Q16 &w, int r, int g, int b) {
  return int(std::min(255L, (w.r * r + w.g * g + w.b * b + 32768) >> 16));
}

// A decoded picture, RGB or GRAY8, rows without padding.
struct Picture {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> bytes;
  const uint8_t *at(int x, int y) const { return &bytes[(size_t(y) * width + x) * channels]; }
};

Picture picture_of(GstSample *sample) {
  Picture p;
  GstVideoInfo info;
  GstVideoFrame frame;
  if (!gst_video_info_from_caps(&info, gst_sample_get_caps(sample)) ||
      !gst_video_frame_map(&frame, &info, gst_sample_get_buffer(sample), GST_MAP_READ)) {
    ADD_FAILURE() << "cannot map a sample";
    return p;
  }
  p.width = info.width;
  p.height = info.height;
  p.channels = GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_GRAY8 ? 1 : 3;
  p.bytes.resize(size_t(p.width) * p.height * p.channels);
  for (int y = 0; y < p.height; ++y)
    memcpy(&p.bytes[size_t(y) * p.width * p.channels],
           static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0)) +
               y * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0),
           size_t(p.width) * p.channels);
  gst_video_frame_unmap(&frame);
  return p;
}

// The next frame at appsink "out", as a picture; a failure naming what
// when none comes within timeout.
Picture pull_picture(const Pipeline &pipeline, GstClockTime timeout, const std::string &what) {
  Picture p;
  if (GstSample *s = pipeline.pull("out", timeout)) {
    p = picture_of(s);
    gst_sample_unref(s);
  } else {
    ADD_FAILURE() << "no frame from " << what;
  }
  return p;
}

// The first frame of an image or video file, as RGB.
Picture first_frame(const std::string &path) {
  const Pipeline pipeline(
      "filesrc location=\"" + path +
      "\" ! decodebin ! videoconvert ! video/x-raw,format=RGB ! appsink name=out sync=false");
  pipeline.play();
  return pull_picture(pipeline, 10 * GST_SECOND, path);
}

// Checks that the right half of a side-by-side picture is the formula applied
// to the left half, on all three channels.
void expect_gray_beside_input(const Picture &p, const Q16 &w) {
  ASSERT_EQ(p.channels, 3);
  ASSERT_EQ(p.width % 2, 0);
  const int half = p.width / 2;
  long wrong = 0, colourful = 0;
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < half; ++x) {
      const uint8_t *in = p.at(x, y), *out = p.at(x + half, y);
      const int want = formula(w, in[0], in[1], in[2]);
      if (out[0] != want || out[1] != want || out[2] != want) {
        if (wrong++ == 0)
          ADD_FAILURE() << "at (" << x << "," << y << ") RGB " << int(in[0]) << "," << int(in[1])
                        << "," << int(in[2]) << ": gray side " << int(out[0]) << "," << int(out[1])
                        << "," << int(out[2]) << ", want " << want;
      }
      colourful += in[0] != in[1] || in[1] != in[2];
    }
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(colourful, 0) << "the input half is gray already: nothing was shown";
}

}  // namespace

// ---- examples/appsrc_roundtrip.cpp and examples/launch.cpp

TEST(CppExamples, AppsrcRoundTripMatchesTheFormula) {
  for (const char *args :
       {"backend=cpu", "backend=cpu matrix=bt709", "backend=cpu weights=0.5,0.9,0.3", ""}) {
    SCOPED_TRACE(args);
    std::string log;
    ASSERT_EQ(shell(quote(example("appsrc-roundtrip")) + " " + args, &log), 0) << log;
    EXPECT_TRUE(contains(
        log, "30 frames of 640x360 RGB converted; all 6912000 gray pixels match the formula"))
        << log;
    EXPECT_TRUE(contains(log, "stats: cudagray-stats, frames=(guint64)30, timed-frames=(guint64)"))
        << log;
  }
  std::string log;
  EXPECT_EQ(shell(quote(example("appsrc-roundtrip")) + " colour=red", &log), 2) << log;
  EXPECT_TRUE(contains(log, "cudagray has no property colour")) << log;
}

TEST(CppExamples, LaunchRunsToTheEndAndPrintsStats) {
  std::string log;
  ASSERT_EQ(shell(quote(example("cudagray-launch")), &log), 0) << log;
  EXPECT_TRUE(contains(log, "end of stream")) << log;
  EXPECT_TRUE(contains(log, "cudagray0 stats: cudagray-stats, frames=(guint64)60,")) << log;
}

TEST(CppExamples, LaunchReportsBusErrors) {
  std::string log;
  EXPECT_EQ(
      shell(quote(example("cudagray-launch")) + " filesrc location=/no/such/file.mp4 ! decodebin ! "
                                                "videoconvert ! cudagray backend=cpu ! fakesink",
            &log),
      1);
  EXPECT_TRUE(
      contains(log, "error from /GstPipeline:pipeline0/GstFileSrc:filesrc0: Resource not found."))
      << log;
  EXPECT_TRUE(contains(log, "debug: ")) << log;
  EXPECT_FALSE(contains(log, "end of stream")) << log;
}

TEST(CppExamples, LaunchReportsParseErrors) {
  std::string log;
  EXPECT_EQ(
      shell(quote(example("cudagray-launch")) + " 'videotestsrc ! cudagrey ! fakesink'", &log), 2);
  EXPECT_TRUE(contains(log, "cannot build the pipeline: no element \"cudagrey\"")) << log;
  EXPECT_TRUE(contains(log, "is the plugin installed?")) << log;

  // cudagray only makes GRAY8: asking it for RGB cannot be linked.
  log.clear();
  EXPECT_EQ(
      shell(quote(example("cudagray-launch")) + " 'videotestsrc num-buffers=3 ! cudagray "
                                                "backend=cpu ! video/x-raw,format=RGB ! fakesink'",
            &log),
      2)
      << log;
  EXPECT_TRUE(contains(log, "cannot build the pipeline: could not link cudagray0")) << log;
}

// GRAY8 left in CUDA memory, read by the application's own CUDA kernel: its
// GPU histograms equal the CPU backend's, for uploaded frames and (when
// nvh264dec and a software decoder exist) decoded ones.
TEST(CppExamples, GpuHistogramOfCudaMemoryGrayEqualsTheCpu) {
  const std::string exe = example("cudagray-gpu-histogram");
  if (!g_file_test(exe.c_str(), G_FILE_TEST_EXISTS))
    GTEST_SKIP()
        << "cudagray-gpu-histogram is not built: it needs the CUDA backend and gstreamer-cuda-1.0";
  SKIP_WITHOUT_GPU();  // skipped as the other GPU cases are, for the same reason
  std::string log;
  int status = shell(quote(exe) + " 30 641x481", &log);
  ASSERT_EQ(status, 0) << log;
  EXPECT_TRUE(contains(
      log,
      "30 frames of 641x481: every GPU histogram of cudagray's CUDA-memory GRAY8 equals the CPU's"))
      << log;
  log.clear();
  status = shell(quote(exe) + " --decode 20 320x240", &log);
  if (status == 77) {
    std::printf("decoded frames not tested: %s", log.c_str());
    return;
  }
  EXPECT_EQ(status, 0) << log;
  EXPECT_TRUE(contains(log, "20 frames of 320x240 decoded by nvh264dec: every GPU histogram"))
      << log;
}

// Ctrl-C sends EOS: the pipeline ends cleanly, with status 0.
TEST(CppExamples, LaunchEndsCleanlyOnInterrupt) {
  std::string log;
  ASSERT_EQ(
      shell(quote(example("cudagray-launch")) +
                " videotestsrc is-live=true ! cudagray backend=cpu ! fakesink & pid=$!; sleep 1.5; "
                "kill -INT $pid; wait $pid",
            &log),
      0)
      << log;
  EXPECT_TRUE(contains(log, "interrupted: sending end-of-stream")) << log;
  EXPECT_TRUE(contains(log, "end of stream")) << log;
}

// ---- examples/appsrc_roundtrip.py

TEST(PythonExample, NumpyRoundTripMatchesTheFormula) {
  const std::string python = env("CUDAGRAY_PYTHON", "python3");
  std::string log;
  if (shell(quote(python) + " -c 'import gi; gi.require_version(\"GstApp\", \"1.0\"); "
                            "gi.require_version(\"GstVideo\", \"1.0\"); "
                            "import numpy'",
            &log) != 0)
    GTEST_SKIP() << python
                 << " cannot import gi (GstApp, GstVideo) and numpy: install python3-gst-1.0, "
                 << "gir1.2-gst-plugins-base-1.0 and python3-numpy";
  for (const char *args :
       {"backend=cpu", "backend=cpu matrix=bt2020", "backend=cpu weights=0.21,0.72,0.07", ""}) {
    SCOPED_TRACE(args);
    log.clear();
    ASSERT_EQ(shell(quote(python) + " " + quote(source_dir() + "/examples/appsrc_roundtrip.py") +
                        " " + args,
                    &log),
              0)
        << log;
    EXPECT_TRUE(contains(
        log, "30 frames of 640x360 RGB converted; all 6912000 gray pixels match the formula"))
        << log;
    EXPECT_TRUE(contains(log, "stats: cudagray-stats, frames=(guint64)30,")) << log;
  }
  log.clear();
  EXPECT_EQ(shell(quote(python) + " " + quote(source_dir() + "/examples/appsrc_roundtrip.py") +
                      " colour=red",
                  &log),
            2);
}

// ---- examples/opencv_gray.py

// OpenCV's VideoCapture (CAP_GSTREAMER) reads cudagray's GRAY8 into numpy,
// every pixel the formula; where OpenCV is missing, skipped saying so.
TEST(OpenCvExample, VideoCaptureReadsTheFormula) {
  const std::string python = env("CUDAGRAY_PYTHON", "python3");
  const std::string example = source_dir() + "/examples/opencv_gray.py";
  std::string log;
  const int status = shell(quote(python) + " " + quote(example) + " backend=cpu", &log);
  if (status == 3) GTEST_SKIP() << log;
  ASSERT_EQ(status, 0) << log;
  EXPECT_TRUE(contains(
      log, "10 frames of 320x240 read by OpenCV; all 768000 gray pixels match the formula"))
      << log;
  EXPECT_EQ(shell(quote(python) + " " + quote(example) + " matrix=bt709", &log), 2) << log;
}

// A python3 that cannot import gi (here: any python3 without its site
// packages, -S) gets one line saying what to install and which python3 to use.
TEST(PythonExample, WithoutGiSaysWhatToInstallInOneLine) {
  const std::string python = env("CUDAGRAY_PYTHON", "python3");
  const std::string example = source_dir() + "/examples/appsrc_roundtrip.py";
  std::string log, executable;
  ASSERT_EQ(
      shell(quote(python) + " -S -c 'import sys; print(sys.executable, end=\"\")'", &executable),
      0);
  EXPECT_EQ(shell(quote(python) + " -S " + quote(example) + " backend=cpu", &log), 3);
  EXPECT_EQ(
      log, example + ": " + executable +
               " cannot use GStreamer from Python (No module named 'gi'): install python3-gst-1.0, "
               "gir1.2-gst-plugins-base-1.0 and python3-numpy, and run it with /usr/bin/python3\n");
}

// ---- pipelines/sidebyside

TEST(SideBySide, TestPatternBesideItsGray) {
  TempDir dir;
  const std::string out = dir.path + "/bars.png";
  std::string log;
  ASSERT_EQ(
      shell(quote(source_dir() + "/pipelines/sidebyside") + " - " + quote(out) + " matrix=bt709",
            &log),
      0)
      << log;
  EXPECT_TRUE(contains(log, "gst-launch-1.0 videotestsrc pattern=smpte num-buffers=1")) << log;
  EXPECT_TRUE(contains(log, "compositor name=comp")) << log;
  const Picture p = first_frame(out);
  EXPECT_EQ(p.width, 640);
  EXPECT_EQ(p.height, 240);
  expect_gray_beside_input(p, kBt709);
}

TEST(SideBySide, FileInputAtAnotherSize) {
  TempDir dir;
  const std::string clip = dir.path + "/in.mp4", out = dir.path + "/clip.png";
  std::string log;
  ASSERT_EQ(shell("gst-launch-1.0 -q videotestsrc pattern=colors num-buffers=5 ! "
                  "video/x-raw,width=400,height=300 ! "
                  "videoconvert ! video/x-raw,format=I420 ! x264enc ! mp4mux ! filesink location=" +
                      quote(clip),
                  &log),
            0)
      << log;
  ASSERT_EQ(shell("CUDAGRAY_SIZE=200x150 " + quote(source_dir() + "/pipelines/sidebyside") + " " +
                      quote(clip) + " " + quote(out) + " backend=cpu",
                  &log),
            0)
      << log;
  const Picture p = first_frame(out);
  EXPECT_EQ(p.width, 400);
  EXPECT_EQ(p.height, 150);
  expect_gray_beside_input(p, kBt601);

  log.clear();
  EXPECT_NE(shell("CUDAGRAY_SIZE=big " + quote(source_dir() + "/pipelines/sidebyside"), &log), 0);
  EXPECT_TRUE(contains(log, "CUDAGRAY_SIZE must be WIDTHxHEIGHT")) << log;
}

// The picture in the README is what the script makes, pixel for pixel.
TEST(SideBySide, ReadmePictureIsTheScriptsOutput) {
  TempDir dir;
  const std::string out = dir.path + "/sidebyside.png";
  std::string log;
  ASSERT_EQ(shell(quote(source_dir() + "/pipelines/sidebyside") + " - " + quote(out), &log), 0)
      << log;
  const Picture made = first_frame(out),
                committed = first_frame(source_dir() + "/docs/sidebyside.png");
  EXPECT_EQ(made.width, committed.width);
  EXPECT_EQ(made.height, committed.height);
  EXPECT_TRUE(made.bytes == committed.bytes)
      << "docs/sidebyside.png is out of date: make it again with "
         "pipelines/sidebyside - docs/sidebyside.png";
  expect_gray_beside_input(committed, kBt601);
}

// ---- live use: 1080p at 30 fps on the CPU backend (run alone: see meson.build)

TEST(Live, CpuAt1080p30AddsNoLatencyAndAccountsForEveryFrame) {
  const int frames = 90;
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(
      ("videotestsrc name=src is-live=true pattern=ball num-buffers=" + std::to_string(frames) +
       " ! video/x-raw,format=RGB,width=1920,height=1080,framerate=30/1"
       " ! cudagray name=gray backend=cpu"
       // a video sink's own rule: a frame more than 20 ms late is dropped
       " ! fakesink name=sink sync=true qos=true max-lateness=20000000")
          .c_str(),
      &error);
  ASSERT_EQ(error, nullptr) << error->message;
  GstElement *src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement *gray = gst_bin_get_by_name(GST_BIN(pipeline), "gray");
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstBus *bus = gst_element_get_bus(pipeline);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  ASSERT_EQ(gst_element_get_state(pipeline, nullptr, nullptr, 10 * GST_SECOND),
            GST_STATE_CHANGE_SUCCESS);

  // Latency: what the source reports, what cudagray's src pad reports, and
  // what the whole pipeline reports. The CPU backend holds no frame back.
  auto latency = [](auto query_on, gboolean *live, GstClockTime *min, GstClockTime *max) {
    GstQuery *q = gst_query_new_latency();
    const bool ok = query_on(q);
    if (ok) gst_query_parse_latency(q, live, min, max);
    gst_query_unref(q);
    return ok;
  };
  gboolean src_live = FALSE, gray_live = FALSE, live = FALSE;
  GstClockTime src_min = 0, src_max = 0, gray_min = 0, gray_max = 0, min = 0, max = 0;
  ASSERT_TRUE(latency([&](GstQuery *q) { return gst_element_query(src, q); }, &src_live, &src_min,
                      &src_max));
  GstPad *gray_src = gst_element_get_static_pad(gray, "src");
  ASSERT_TRUE(latency([&](GstQuery *q) { return gst_pad_query(gray_src, q); }, &gray_live,
                      &gray_min, &gray_max));
  gst_object_unref(gray_src);
  ASSERT_TRUE(
      latency([&](GstQuery *q) { return gst_element_query(pipeline, q); }, &live, &min, &max));
  EXPECT_TRUE(src_live && gray_live && live);
  EXPECT_EQ(src_min, gst_util_uint64_scale(GST_SECOND, 1, 30)) << "videotestsrc: one frame";
  EXPECT_EQ(gray_min, src_min) << "cudagray adds no latency on the CPU";
  EXPECT_EQ(gray_max, src_max);
  // The pipeline adds the sink's processing deadline (20 ms by default).
  GstClockTime deadline = 0;
  g_object_get(sink, "processing-deadline", &deadline, nullptr);
  EXPECT_EQ(min, src_min + deadline);

  // Whether each frame arrives in time depends on the machine's load (a
  // frame more than 20 ms late is dropped, then QoS drops the next ones);
  // how fast the CPU backend converts is the bench's (rows cpu). What holds
  // anywhere: every frame is rendered, or dropped by the sink or by
  // cudagray, each drop announced by a QoS message of the element that
  // dropped it.
  int gray_qos = 0, sink_qos = 0;
  bool eos = false;
  while (GstMessage *msg = gst_bus_timed_pop_filtered(
             bus, 20 * GST_SECOND,
             GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_QOS))) {
    const GstMessageType type = GST_MESSAGE_TYPE(msg);
    if (type == GST_MESSAGE_ERROR) {
      GError *err = nullptr;
      gst_message_parse_error(msg, &err, nullptr);
      ADD_FAILURE() << err->message;
      g_error_free(err);
    }
    if (type == GST_MESSAGE_QOS) {
      gray_qos += GST_MESSAGE_SRC(msg) == GST_OBJECT(gray);
      sink_qos += GST_MESSAGE_SRC(msg) == GST_OBJECT(sink);
    }
    eos = type == GST_MESSAGE_EOS;
    gst_message_unref(msg);
    if (type != GST_MESSAGE_QOS) break;
  }
  EXPECT_TRUE(eos);

  GstStructure *sink_stats = nullptr, *gray_stats = nullptr;
  g_object_get(sink, "stats", &sink_stats, nullptr);
  g_object_get(gray, "stats", &gray_stats, nullptr);
  guint64 rendered = 0, dropped = 0;
  double mean_us = 0, max_us = 0;
  gst_structure_get_uint64(sink_stats, "rendered", &rendered);
  gst_structure_get_uint64(sink_stats, "dropped", &dropped);
  gst_structure_get_double(gray_stats, "gpu-time-mean-us", &mean_us);
  gst_structure_get_double(gray_stats, "gpu-time-max-us", &max_us);
  std::printf(
      "1080p RGB on the CPU backend: %.0f us a frame on average, %.0f us at most; "
      "rendered %" G_GUINT64_FORMAT ", dropped by the sink %" G_GUINT64_FORMAT ", by cudagray %d\n",
      mean_us, max_us, rendered, dropped, gray_qos);
  EXPECT_EQ(rendered + dropped + guint64(gray_qos), guint64(frames))
      << "a frame neither rendered nor dropped with a QoS message";
  EXPECT_EQ(dropped, guint64(sink_qos)) << "a frame the sink dropped without a QoS message";
  gst_structure_free(sink_stats);
  gst_structure_free(gray_stats);

  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(src);
  gst_object_unref(gray);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
}

// The webcam script's live pipeline (its test pattern stands in for a
// camera), run under gst-launch-check: live, latency of one frame plus the
// sink's 20 ms processing deadline, frames flowing, every drop announced.
TEST(Live, WebcamScriptReportsLatencyAndAnnouncesEveryDrop) {
  TempDir dir;
  std::string log;
  ASSERT_EQ(shell("ln -s " + quote(env("CUDAGRAY_LAUNCH_CHECK")) + " " +
                      quote(dir.path + "/gst-launch-1.0"),
                  &log),
            0)
      << log;
  ASSERT_EQ(
      shell("PATH=" + quote(dir.path) +
                ":$PATH CUDAGRAY_CHECK_FRAMES=60 CUDAGRAY_SINK='fakesink sync=true "
                "qos=true max-lateness=20000000' " +
                quote(source_dir() + "/pipelines/webcam") + " /dev/no-such-camera backend=cpu",
            &log),
      0)
      << log;
  EXPECT_TRUE(contains(log, "check: latency live=1 min=53333333 max=")) << log;
  EXPECT_TRUE(contains(log, "check: cudagray cudagray0 frames 6")) << log;  // 60 or a few more
  // Frames late on a loaded machine are dropped (Live.CpuAt1080p30...):
  // every drop of the sink's is announced by a QoS message.
  unsigned long long rendered = 0, dropped = 0;
  int qos = -1;
  const size_t sink_line = log.find("check: sink ");
  ASSERT_NE(sink_line, std::string::npos) << log;
  ASSERT_EQ(std::sscanf(log.c_str() + sink_line, "check: sink %*s rendered %llu dropped %llu",
                        &rendered, &dropped),
            2)
      << log;
  const size_t qos_line = log.find("check: qos messages ");
  ASSERT_NE(qos_line, std::string::npos) << log;
  ASSERT_EQ(std::sscanf(log.c_str() + qos_line, "check: qos messages %d", &qos), 1) << log;
  EXPECT_GE(qos, static_cast<int>(dropped)) << log;
}

// ---- docs/formats.md's comparison with videoconvert and OpenCV, over all 2^24 RGB triples

namespace {

// A 4096x4096 RGB frame holding every triple once.
std::vector<uint8_t> all_triples() {
  std::vector<uint8_t> rgb(size_t(3) << 24);
  for (uint32_t v = 0; v < (1u << 24); ++v) {
    rgb[3 * size_t(v)] = uint8_t(v >> 16);
    rgb[3 * size_t(v) + 1] = uint8_t(v >> 8);
    rgb[3 * size_t(v) + 2] = uint8_t(v);
  }
  return rgb;
}

// The frame through "appsrc ! CONVERTER ! appsink", GRAY8 out.
Picture convert_all(
    const std::vector<uint8_t> &rgb, const std::string &converter,
    const std::string &caps = "video/x-raw,format=RGB,width=4096,height=4096,framerate=1/1") {
  const Pipeline pipeline("appsrc name=in format=time caps=" + caps + " ! " + converter +
                          " ! appsink name=out sync=false");
  pipeline.play();
  GstBuffer *buf = gst_buffer_new_memdup(rgb.data(), rgb.size());
  GST_BUFFER_PTS(buf) = 0;
  pipeline.push("in", buf);
  pipeline.end_of_stream("in");
  const Picture p = pull_picture(pipeline, 30 * GST_SECOND, converter);
  EXPECT_EQ(p.channels, 1);
  return p;
}

}  // namespace

// videoconvert's RGB → GRAY8 (GRAY8 caps without colorimetry, as in
// docs/formats.md) uses BT.601 with 8-bit weights 77, 150, 29 and truncates: it is
// never above cudagray's rounded value and at most 1 below.
TEST(Comparison, VideoconvertIsTheSameOrOneBelow) {
  const std::vector<uint8_t> rgb = all_triples();
  struct Case {
    const char *name, *caps;
    double kr, kb;
  };
  for (const Case &c : {Case{"bt601", "video/x-raw,format=GRAY8", 0.299, 0.114}}) {
    SCOPED_TRACE(c.name);
    const Picture ours = convert_all(rgb, std::string("cudagray backend=cpu matrix=") + c.name);
    const Picture theirs = convert_all(rgb, std::string("videoconvert ! ") + c.caps);
    ASSERT_EQ(ours.bytes.size(), size_t(1) << 24);
    ASSERT_EQ(theirs.bytes.size(), size_t(1) << 24);
    const long w8r = std::lround(c.kr * 256), w8b = std::lround(c.kb * 256), w8g = 256 - w8r - w8b;
    long below = 0, other = 0, not_truncated = 0;
    for (uint32_t v = 0; v < (1u << 24); ++v) {
      const int d = ours.bytes[v] - theirs.bytes[v];
      below += d == 1;
      other += d != 0 && d != 1;
      const long r = v >> 16, g = (v >> 8) & 255, b = v & 255;
      not_truncated += theirs.bytes[v] != (w8r * r + w8g * g + w8b * b) >> 8;
    }
    std::printf("%s: videoconvert is 1 below cudagray on %ld triples\n", c.name, below);
    EXPECT_EQ(other, 0);
    EXPECT_GT(below, 0);
    EXPECT_EQ(not_truncated, 0) << "videoconvert no longer computes (" << w8r << "R + " << w8g
                                << "G + " << w8b
                                << "B) >> 8: the comparison in docs/formats.md needs updating";
  }
}

// Limited-range YUV (I420 as decoders give it): videoconvert 1.22 copies the
// luma plane into GRAY8, cudagray expands it to full range, so the same
// video is 16 levels apart at black. docs/formats.md's table gives 16/128/235.
TEST(Comparison, LimitedRangeYuvVideoconvertCopiesCudagrayExpands) {
  constexpr int kWidth = 256, kHeight = 2;  // every luma value, twice
  std::vector<uint8_t> i420(kWidth * kHeight * 3 / 2);
  cudagray::test::fill_random(i420);  // chroma: random, and it must not matter
  for (int i = 0; i < kWidth * kHeight; ++i) i420[i] = static_cast<uint8_t>(i % kWidth);
  const std::string caps =
      "video/x-raw,format=I420,width=256,height=2,framerate=1/1,colorimetry=bt601";
  const Picture copied = convert_all(i420, "videoconvert ! video/x-raw,format=GRAY8", caps);
  const Picture expanded = convert_all(i420, "cudagray backend=cpu", caps);
  ASSERT_EQ(copied.bytes.size(), i420.size() * 2 / 3);
  ASSERT_EQ(expanded.bytes.size(), i420.size() * 2 / 3);
  for (int i = 0; i < kWidth * kHeight; ++i) {
    const int y = i % kWidth;
    EXPECT_EQ(copied.bytes[i], y) << "videoconvert, Y' = " << y;
    EXPECT_EQ(expanded.bytes[i], std::clamp(std::lround((y - 16) * 255.0 / 219.0), 0L, 255L))
        << "cudagray, Y' = " << y;
  }
  EXPECT_EQ(std::vector<int>({copied.bytes[16], copied.bytes[128], copied.bytes[235]}),
            std::vector<int>({16, 128, 235}));
  EXPECT_EQ(std::vector<int>({expanded.bytes[16], expanded.bytes[128], expanded.bytes[235]}),
            std::vector<int>({0, 130, 255}));
}

// OpenCV's cvtColor(RGB2GRAY) on 8 bits: Q14 weights 4899, 9617, 1868,
// rounded (imgproc color_rgb: R2Y, G2Y, B2Y, yuv_shift = 14).
// docs/formats.md gives these counts.
TEST(Comparison, OpenCvFormulaDiffersByOneOnFewTriples) {
  long up = 0, down = 0, other = 0;
  for (uint32_t v = 0; v < (1u << 24); ++v) {
    const int r = v >> 16, g = (v >> 8) & 255, b = v & 255;
    const int opencv = (4899 * r + 9617 * g + 1868 * b + 8192) >> 14;
    const int d = opencv - formula(kBt601, r, g, b);
    up += d == 1;
    down += d == -1;
    other += d < -1 || d > 1;
  }
  EXPECT_EQ(up, 19756);
  EXPECT_EQ(down, 19379);
  EXPECT_EQ(other, 0);
}

// ---- the properties tables of the README and docs/properties.md against the element

namespace {
// What a new element has, as gst-inspect-1.0 shows it (qos: the element's
// own default, not GstBaseTransform's).
std::string default_text(GObject *fresh, GParamSpec *spec) {
  GValue v = G_VALUE_INIT;
  g_value_init(&v, spec->value_type);
  g_object_get_property(fresh, spec->name, &v);
  std::string text;
  if (G_IS_PARAM_SPEC_ENUM(spec)) {
    GEnumValue *e = g_enum_get_value(G_PARAM_SPEC_ENUM(spec)->enum_class, g_value_get_enum(&v));
    text = e ? e->value_nick : "";
  } else if (G_VALUE_HOLDS_STRING(&v)) {
    text = g_value_get_string(&v) ? std::string("\"") + g_value_get_string(&v) + "\"" : "";
  } else if (G_VALUE_HOLDS_BOXED(&v)) {
    text = "";
  } else if (G_VALUE_HOLDS_BOOLEAN(&v)) {
    text = g_value_get_boolean(&v) ? "true" : "false";
  } else {
    gchar *s = g_strdup_value_contents(&v);
    text = s;
    g_free(s);
  }
  g_value_unset(&v);
  return text;
}
// The rows of the first table under the heading `heading` of a Markdown
// file of the source tree: property name, default cell (backquotes dropped).
std::map<std::string, std::string> property_rows(const std::string &file,
                                                 const std::string &heading) {
  GError *error = nullptr;
  gchar *text = nullptr;
  std::map<std::string, std::string> rows;
  EXPECT_TRUE(g_file_get_contents((source_dir() + "/" + file).c_str(), &text, nullptr, &error))
      << file;
  if (!text) return rows;
  const std::string doc = std::string("\n") + text;
  g_free(text);
  const size_t start = doc.find("\n" + heading + "\n");
  EXPECT_NE(start, std::string::npos) << file << " has no heading " << heading;
  if (start == std::string::npos) return rows;
  const std::string section = doc.substr(start, doc.find("\n## ", start + 1) - start);
  size_t pos = 0;
  while ((pos = section.find("\n| `", pos)) != std::string::npos) {
    const size_t end = section.find('\n', pos + 1);
    std::vector<std::string> cells;
    std::string line = section.substr(pos + 1, end - pos - 1), cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    auto strip = [](std::string s) {
      std::string out;
      for (char c : s)
        if (c != '`') out += c;
      const size_t a = out.find_first_not_of(' '), b = out.find_last_not_of(' ');
      return a == std::string::npos ? std::string() : out.substr(a, b - a + 1);
    };
    if (cells.size() >= 3) rows[strip(cells[0])] = strip(cells[2]);
    pos = end;
  }
  return rows;
}
}  // namespace

// Each property the element has, apart from those of every element (name,
// parent), is a row of the README's table at a glance and of
// docs/properties.md's in full, with the default it has.
TEST(Readme, PropertiesTablesMatchTheElement) {
  GstElement *gray = gst_element_factory_make("cudagray", nullptr);
  ASSERT_NE(gray, nullptr);
  guint n = 0;
  GParamSpec **specs = g_object_class_list_properties(G_OBJECT_GET_CLASS(gray), &n);
  for (const auto &[file, heading] :
       {std::pair<std::string, std::string>{"README.md", "## Properties"},
        {"docs/properties.md", "# Properties"}}) {
    SCOPED_TRACE(file);
    std::map<std::string, std::string> rows = property_rows(file, heading);
    std::set<std::string> listed;
    for (guint i = 0; i < n; ++i) {
      const std::string name = specs[i]->name;
      if (name == "name" || name == "parent") continue;
      listed.insert(name);
      SCOPED_TRACE(name);
      ASSERT_TRUE(rows.count(name)) << "the properties table has no row for " << name;
      EXPECT_EQ(rows[name], default_text(G_OBJECT(gray), specs[i])) << "default in the table";
    }
    for (const auto &[name, cell] : rows)
      EXPECT_TRUE(listed.count(name)) << "the table lists " << name << ", which cudagray lacks";
  }
  g_free(specs);
  gst_object_unref(gray);
}
