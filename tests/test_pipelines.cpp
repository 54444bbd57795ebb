// SPDX-License-Identifier: LGPL-2.1-or-later
// The example scripts in pipelines/, run as a user would run them.
#include <glib/gstdio.h>

#include <cstdlib>
#include <fstream>

#include "element_harness.h"
#include "shell.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

std::string script(const char *name) {
  const char *root = std::getenv("CUDAGRAY_SOURCE_DIR");
  return std::string(root ? root : ".") + "/pipelines/" + name;
}

// How long a pull may wait for the next frame. A pull returns at once at
// the end of the stream, so this only bounds a decode that stalled: a GPU
// machine running the suite's binaries side by side took more than 10 s
// to the first frame of decodebin.
constexpr GstClockTime kFrameWait = 120 * GST_SECOND;

// Every decoded frame of a file, as raw video in `caps`.
std::vector<GstSample *> decode(const std::string &path, const char *caps) {
  const Pipeline pipeline("filesrc location=\"" + path + "\" ! decodebin ! videoconvert ! " + caps +
                          " ! appsink name=out sync=false max-buffers=0");
  pipeline.play();
  std::vector<GstSample *> samples;
  while (GstSample *s = pipeline.pull("out", kFrameWait)) samples.push_back(s);
  return samples;
}

}  // namespace

// With no input the file script encodes a gray MP4 and writes a PNG of the
// first gray frame, which is the formula applied to the first test frame.
TEST(FilePipeline, DefaultInputGivesGrayVideoAndPng) {
  TempDir dir;
  const std::string out = dir.path + "/gray.mp4";
  std::string log;
  ASSERT_EQ(shell("CUDAGRAY_FRAMES=90 '" + script("file") + "' - '" + out + "' matrix=bt709", &log),
            0)
      << log;
  EXPECT_NE(log.find("gst-launch-1.0 -e videotestsrc"), std::string::npos) << log;

  std::vector<GstSample *> frames = decode(out, "video/x-raw,format=I420");
  EXPECT_EQ(frames.size(), 90u);  // more than a default queue holds: a stalled tee would show
  for (GstSample *s : frames) {   // the video is gray: chroma stays neutral
    GstMapInfo map;
    GstBuffer *buf = gst_sample_get_buffer(s);
    gst_buffer_map(buf, &map, GST_MAP_READ);
    const size_t luma = 640 * 480;
    for (size_t i = luma; i < map.size; ++i)
      ASSERT_NEAR(map.data[i], 128, 3) << "chroma sample " << i - luma;
    gst_buffer_unmap(buf, &map);
    gst_sample_unref(s);
  }

  std::vector<GstSample *> png = decode(dir.path + "/gray.png", "video/x-raw");
  ASSERT_EQ(png.size(), 1u);
  GstVideoInfo info;
  ASSERT_TRUE(gst_video_info_from_caps(&info, gst_sample_get_caps(png[0])));
  EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&info), GST_VIDEO_FORMAT_GRAY8);
  const GrayImage snapshot = gray_of(gst_sample_get_buffer(png[0]), 640, 480);
  gst_sample_unref(png[0]);

  // The same first frame, drawn again as RGB and converted by the reference.
  const Pipeline src(
      "videotestsrc pattern=smpte horizontal-speed=4 num-buffers=1 ! "
      "video/x-raw,format=RGB,width=640,height=480 ! appsink name=out");
  src.play();
  GstSample *first = src.pull("out", kFrameWait);
  ASSERT_NE(first, nullptr);
  GstMapInfo map;
  gst_buffer_map(gst_sample_get_buffer(first), &map, GST_MAP_READ);
  TestFrame rgb = random_frame(PixelLayout::RGB, 640, 480, Rows::Tight);
  rgb.bytes.assign(map.data, map.data + map.size);
  gst_buffer_unmap(gst_sample_get_buffer(first), &map);
  EXPECT_TRUE(same_pixels(snapshot, cpu_reference(rgb, kWeightChoices[1])));
  gst_sample_unref(first);
}

TEST(FilePipeline, BadArgumentsFail) {
  TempDir dir;
  std::string log;
  EXPECT_NE(
      shell("'" + script("file") + "' '" + dir.path + "/missing.mp4' '" + dir.path + "/o.mp4'",
            &log),
      0);
  EXPECT_NE(log.find("cannot read"), std::string::npos) << log;
  log.clear();
  EXPECT_NE(
      shell("CUDAGRAY_FRAMES=2 '" + script("file") + "' - '" + dir.path + "/o.mp4' colour=red",
            &log),
      0);
}

// Without a camera the webcam script says so and shows a live test pattern.
TEST(WebcamPipeline, FallsBackToLiveTestPattern) {
  std::string log;
  ASSERT_EQ(shell("CUDAGRAY_SINK=fakesink CUDAGRAY_FRAMES=10 '" + script("webcam") +
                      "' /dev/no-such-camera backend=cpu matrix=bt2020",
                  &log),
            0)
      << log;
  EXPECT_NE(log.find("no readable camera at /dev/no-such-camera"), std::string::npos) << log;
  EXPECT_NE(log.find("videotestsrc is-live=true"), std::string::npos) << log;
  // matrix weighs R, G and B: the video is made RGB for it
  EXPECT_NE(log.find("videoconvert ! video/x-raw,format=RGBx ! cudagray backend=cpu matrix=bt2020"),
            std::string::npos)
      << log;
}

// The GPU-decode script: with NVDEC it writes the gray video, every frame
// decoded on the GPU; without it, it says what is missing and fails.
TEST(GpuDecodePipeline, DecodesOnTheGpuOrSaysWhatIsMissing) {
  TempDir dir;
  const std::string clip = dir.path + "/in.mp4", out = dir.path + "/out.mp4";
  std::string log;
  ASSERT_EQ(shell("CUDAGRAY_FRAMES=30 '" + script("file") + "' - '" + clip + "' backend=cpu", &log),
            0)
      << log;
  log.clear();
  GstElementFactory *nvdec = gst_element_factory_find("nvh264dec");
  const int status = shell("'" + script("gpu-decode") + "' '" + clip + "' '" + out + "'", &log);
  if (!nvdec) {
    EXPECT_EQ(status, 1);
    EXPECT_NE(log.find("error: nvh264dec not found: GPU decoding needs gst-plugins-bad's nvcodec "
                       "and an NVIDIA driver"),
              std::string::npos)
        << log;
    return;
  }
  gst_object_unref(nvdec);
  ASSERT_EQ(status, 0) << log;
  EXPECT_NE(log.find("nvh264dec ! video/x-raw\\(memory:CUDAMemory\\) ! cudagray"),
            std::string::npos)
      << log;
  std::vector<GstSample *> frames = decode(out, "video/x-raw,format=I420");
  EXPECT_EQ(frames.size(), 30u);
  for (GstSample *f : frames) gst_sample_unref(f);
}

namespace {

std::string file_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

// An output that is the input file, under any name, is refused before the
// pipeline starts, and the input is left as it was. (Before, the file script
// emptied it and the side-by-side one emptied it and hung.)
TEST(Scripts, RefuseToWriteOverTheirInput) {
  TempDir dir;
  const std::string input = dir.path + "/v.mp4";
  std::vector<uint8_t> noise(6000);
  fill_random(noise);
  const std::string original(noise.begin(), noise.end());
  std::ofstream(input, std::ios::binary) << original;
  std::string log;
  ASSERT_EQ(shell("cd '" + dir.path +
                      "' && ln -s v.mp4 symlink.mp4 && ln v.mp4 hardlink.mp4 && mkdir sub",
                  &log),
            0)
      << log;
  struct Case {
    const char *script, *in, *out;
  };
  const Case cases[] = {
      {"file", "v.mp4", "v.mp4"},       {"file", "v.mp4", "sub/../v.mp4"},
      {"file", "v.mp4", "symlink.mp4"}, {"file", "v.mp4", "hardlink.mp4"},
      {"file", "v.png", "v"},  // its PNG would be the input
      {"sidebyside", "v.mp4", "v.mp4"}, {"sidebyside", "v.mp4", "./symlink.mp4"},
      {"gpu-decode", "v.mp4", "v.mp4"}, {"gpu-decode", "symlink.mp4", "hardlink.mp4"},
  };
  ASSERT_EQ(shell("cp '" + input + "' '" + dir.path + "/v.png'", &log), 0) << log;
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.script) + " " + c.in + " " + c.out);
    log.clear();
    EXPECT_EQ(shell("cd '" + dir.path + "' && timeout 60 '" + script(c.script) + "' " + c.in + " " +
                        c.out + " backend=cpu",
                    &log),
              2);
    const std::string written = std::string(c.out) == "v" ? "v.png" : c.out;
    EXPECT_EQ(log, "error: output " + written + " is the same file as input " + c.in +
                       "; write to another file\n");
    EXPECT_TRUE(file_bytes(input) == original) << "the input was changed";
  }
}

// Decoded video is YUV: for matrix and weights to apply, the file script
// makes it RGB first (322x242: H.264's 4:2:0 needs even sizes, and these are
// not whole macroblocks). Its PNG is then the BT.709 formula applied to the
// decoded frame's RGB, pixel for pixel (the luma plane would not be).
TEST(FilePipeline, MatrixAppliesToDecodedVideo) {
  TempDir dir;
  const std::string clip = dir.path + "/in.mp4", out = dir.path + "/gray.mp4";
  std::string log;
  ASSERT_EQ(
      shell(
          "gst-launch-1.0 -q videotestsrc pattern=smpte num-buffers=3 ! "
          "video/x-raw,width=322,height=242,format=I420 ! x264enc ! mp4mux ! filesink location='" +
              clip + "'",
          &log),
      0)
      << log;
  ASSERT_EQ(
      shell("'" + script("file") + "' '" + clip + "' '" + out + "' backend=cpu matrix=bt709", &log),
      0)
      << log;
  EXPECT_NE(log.find("videoconvert ! video/x-raw,format=RGBx ! cudagray backend=cpu matrix=bt709"),
            std::string::npos)
      << log;
  std::vector<GstSample *> png = decode(dir.path + "/gray.png", "video/x-raw");
  ASSERT_EQ(png.size(), 1u);
  const GrayImage snapshot = gray_of(gst_sample_get_buffer(png[0]), 322, 242);
  gst_sample_unref(png[0]);

  std::vector<GstSample *> rgb = decode(clip, "video/x-raw,format=RGBx");
  ASSERT_EQ(rgb.size(), 3u);
  GstMapInfo map;
  gst_buffer_map(gst_sample_get_buffer(rgb[0]), &map, GST_MAP_READ);
  TestFrame first = random_frame(PixelLayout::RGBx, 322, 242, Rows::Tight);
  first.bytes.assign(map.data, map.data + map.size);
  gst_buffer_unmap(gst_sample_get_buffer(rgb[0]), &map);
  for (GstSample *s : rgb) gst_sample_unref(s);
  EXPECT_TRUE(same_pixels(snapshot, cpu_reference(first, kWeightChoices[1])));
}
