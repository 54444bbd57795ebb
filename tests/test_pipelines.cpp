// The example scripts in pipelines/, run as a user would run them.
#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>

#include <cstdlib>
#include <fstream>

#include "gst_helpers.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

std::string script(const char *name) {
  const char *root = std::getenv("CUDAGRAY_SOURCE_DIR");
  return std::string(root ? root : ".") + "/pipelines/" + name;
}

// Runs a shell command; returns its exit status and appends its output.
int shell(const std::string &command, std::string *output) {
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  char line[4096];
  while (fgets(line, sizeof line, pipe)) *output += line;
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Every decoded frame of a file, as raw video in `caps`.
std::vector<GstSample *> decode(const std::string &path, const char *caps) {
  GstElement *pipeline = gst_parse_launch(
      ("filesrc location=\"" + path + "\" ! decodebin ! videoconvert ! " + caps +
       " ! appsink name=out sync=false max-buffers=0")
          .c_str(),
      nullptr);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "out");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  std::vector<GstSample *> samples;
  while (GstSample *s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND)) samples.push_back(s);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return samples;
}

struct TempDir {
  std::string path;
  TempDir() {
    gchar *p = g_dir_make_tmp("cudagray-XXXXXX", nullptr);
    path = p;
    g_free(p);
  }
  ~TempDir() { shell("rm -rf '" + path + "'", new std::string); }
};

}  // namespace

// With no input the file script encodes a gray MP4 and writes a PNG of the
// first gray frame, which is the formula applied to the first test frame.
TEST(FilePipeline, DefaultInputGivesGrayVideoAndPng) {
  TempDir dir;
  const std::string out = dir.path + "/gray.mp4";
  std::string log;
  ASSERT_EQ(shell("CUDAGRAY_FRAMES=90 '" + script("file") + "' - '" + out + "' matrix=bt709", &log), 0) << log;
  EXPECT_NE(log.find("gst-launch-1.0 -e videotestsrc"), std::string::npos) << log;

  std::vector<GstSample *> frames = decode(out, "video/x-raw,format=I420");
  EXPECT_EQ(frames.size(), 90u);  // more than a default queue holds: a stalled tee would show
  for (GstSample *s : frames) {  // the video is gray: chroma stays neutral
    GstMapInfo map;
    GstBuffer *buf = gst_sample_get_buffer(s);
    gst_buffer_map(buf, &map, GST_MAP_READ);
    const size_t luma = 640 * 480;
    for (size_t i = luma; i < map.size; ++i) ASSERT_NEAR(map.data[i], 128, 3) << "chroma sample " << i - luma;
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
  GstElement *src = gst_parse_launch(
      "videotestsrc pattern=smpte horizontal-speed=4 num-buffers=1 ! "
      "video/x-raw,format=RGB,width=640,height=480 ! appsink name=out",
      nullptr);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(src), "out");
  gst_element_set_state(src, GST_STATE_PLAYING);
  GstSample *first = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
  ASSERT_NE(first, nullptr);
  GstMapInfo map;
  gst_buffer_map(gst_sample_get_buffer(first), &map, GST_MAP_READ);
  TestFrame rgb = random_frame(PixelLayout::RGB, 640, 480, Rows::Tight);
  rgb.bytes.assign(map.data, map.data + map.size);
  gst_buffer_unmap(gst_sample_get_buffer(first), &map);
  EXPECT_TRUE(same_pixels(snapshot, cpu_reference(rgb, kWeightChoices[1])));
  gst_sample_unref(first);
  gst_element_set_state(src, GST_STATE_NULL);
  gst_object_unref(sink);
  gst_object_unref(src);
}

TEST(FilePipeline, BadArgumentsFail) {
  TempDir dir;
  std::string log;
  EXPECT_NE(shell("'" + script("file") + "' '" + dir.path + "/missing.mp4' '" + dir.path + "/o.mp4'", &log), 0);
  EXPECT_NE(log.find("cannot read"), std::string::npos) << log;
  log.clear();
  EXPECT_NE(shell("CUDAGRAY_FRAMES=2 '" + script("file") + "' - '" + dir.path + "/o.mp4' colour=red", &log), 0);
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
  EXPECT_NE(log.find("cudagray backend=cpu matrix=bt2020"), std::string::npos) << log;
}

// The GPU-decode script: with NVDEC it writes the gray video, every frame
// decoded on the GPU; without it, it says what is missing and fails.
TEST(GpuDecodePipeline, DecodesOnTheGpuOrSaysWhatIsMissing) {
  TempDir dir;
  const std::string clip = dir.path + "/in.mp4", out = dir.path + "/out.mp4";
  std::string log;
  ASSERT_EQ(shell("CUDAGRAY_FRAMES=30 '" + script("file") + "' - '" + clip + "' backend=cpu", &log), 0) << log;
  log.clear();
  GstElementFactory *nvdec = gst_element_factory_find("nvh264dec");
  const int status = shell("'" + script("gpu-decode") + "' '" + clip + "' '" + out + "'", &log);
  if (!nvdec) {
    EXPECT_EQ(status, 1);
    EXPECT_NE(log.find("error: nvh264dec not found: GPU decoding needs gst-plugins-bad's nvcodec and an NVIDIA driver"),
              std::string::npos)
        << log;
    return;
  }
  gst_object_unref(nvdec);
  ASSERT_EQ(status, 0) << log;
  EXPECT_NE(log.find("nvh264dec ! video/x-raw\\(memory:CUDAMemory\\) ! cudagray"), std::string::npos) << log;
  std::vector<GstSample *> frames = decode(out, "video/x-raw,format=I420");
  EXPECT_EQ(frames.size(), 30u);
  for (GstSample *f : frames) gst_sample_unref(f);
}
