// SPDX-License-Identifier: LGPL-2.1-or-later
// The element scaling: the output size negotiated as videoscale does it
// (display aspect ratio kept, letterboxed with add-borders), and every output
// pixel equal to the kernels' resampler (held to the formula by test_scale).
#include <map>
#include <string>
#include <vector>

#include "element_harness.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

class ElementScale : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cuda") SKIP_WITHOUT_GPU();
  }
};

// The width and height of the caps on the harness's sink (what the element
// pushed).
Size output_size(Harness &harness) {
  GstCaps *caps = gst_pad_get_current_caps(harness.h->sinkpad);
  Size size{0, 0};
  if (!caps) return size;
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  gst_structure_get_int(s, "width", &size.width);
  gst_structure_get_int(s, "height", &size.height);
  gst_caps_unref(caps);
  return size;
}

// Pushes f (its caps already set) and checks the output: out_width x
// out_height, the picture in dest, equal to the CPU kernels' conversion by
// method, black (0) around it.
void expect_scaled(Harness &harness, const TestFrame &f, int out_width, int out_height,
                   const Rect &dest, ScaleMethod method, int depth = 8) {
  ASSERT_EQ(gst_harness_push(harness.h, buffer_for(f)), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(harness.h);
  ASSERT_NE(out, nullptr) << harness.pop_message(GST_MESSAGE_ERROR);
  const Size size = output_size(harness);
  EXPECT_EQ(size.width, out_width);
  EXPECT_EQ(size.height, out_height);
  const GrayImage got = gray_of(out, out_width, out_height, depth);
  gst_buffer_unref(out);
  Conversion c = f.conversion(depth);
  c.out_width = out_width;
  c.out_height = out_height;
  c.dest = dest;
  c.method = method;
  GrayImage want(out_width, out_height, 0, depth);
  convert_cpu(c, f.view(), want.frame(), standard_weights(Matrix::BT601));
  EXPECT_TRUE(same_pixels(got, want));
  int bars = 0;
  for (int y = 0; y < out_height; ++y)
    for (int x = 0; x < out_width; ++x)
      if (x < dest.x || x >= dest.x + dest.width || y < dest.y || y >= dest.y + dest.height)
        bars += got.at(x, y) != 0;
  EXPECT_EQ(bars, 0) << "pixels of the bars not black";
}

std::string input_caps(const TestFrame &f) {
  return caps_string(layout_info(f.layout).name, f.width, f.height) + ",pixel-aspect-ratio=1/1";
}

// Downstream's caps first, so that f's caps negotiate the output against
// them.
void negotiate(Harness &harness, const std::string &downstream, const TestFrame &f) {
  gst_harness_set_sink_caps_str(harness.h, downstream.c_str());
  harness.set_caps(input_caps(f));
}

}  // namespace

// Downstream fixing only the width gets the height that keeps the picture's
// shape: 640 wide of 1920x1080 is 640x360, and only the height, 270 high of
// it is 480x270.
TEST_P(ElementScale, FixedWidthOrHeightKeepsTheAspectRatio) {
  const TestFrame f = random_frame(PixelLayout::RGBx, 1920, 1080);
  {
    Harness harness({std::string("backend=") + GetParam()});
    negotiate(harness, "video/x-raw,format=GRAY8,width=640", f);
    expect_scaled(harness, f, 640, 360, Rect{0, 0, 640, 360}, ScaleMethod::Area);
  }
  {
    Harness harness({std::string("backend=") + GetParam(), "method=bilinear"});
    negotiate(harness, "video/x-raw,format=GRAY16_LE,height=270", f);
    expect_scaled(harness, f, 480, 270, Rect{0, 0, 480, 270}, ScaleMethod::Bilinear, 16);
  }
}

// A size and pixel aspect ratio fixed downstream that do not keep the
// shape: letterboxed (add-borders, the default) or pillarboxed, else
// stretched.
TEST_P(ElementScale, FixedSizeLetterboxesWithAddBorders) {
  struct Case {
    const char *setting;
    int in_w, in_h, out_w, out_h;
    Rect dest;
    ScaleMethod method;
  };
  const Case cases[] = {
      {"method=area", 1920, 1080, 640, 640, {0, 140, 640, 360}, ScaleMethod::Area},
      // 301 * 1080 / 1920 = 169.3 rows, centred
      {"method=nearest", 1920, 1080, 301, 400, {0, 115, 301, 169}, ScaleMethod::Nearest},
      {"method=bilinear", 641, 961, 640, 480, {160, 0, 320, 480}, ScaleMethod::Bilinear},
      {"add-borders=false", 1920, 1080, 640, 640, {0, 0, 640, 640}, ScaleMethod::Area},
  };
  for (const Case &k : cases) {
    SCOPED_TRACE(k.setting);
    const TestFrame f = random_frame(PixelLayout::BGRx, k.in_w, k.in_h);
    Harness harness({std::string("backend=") + GetParam(), k.setting});
    negotiate(harness,
              "video/x-raw,format=GRAY8,width=" + std::to_string(k.out_w) +
                  ",height=" + std::to_string(k.out_h) + ",pixel-aspect-ratio=1/1",
              f);
    expect_scaled(harness, f, k.out_w, k.out_h, k.dest, k.method);
  }
}

// A size fixed downstream with the pixel aspect ratio left free: the ratio
// that keeps the picture's shape, and no bars.
TEST_P(ElementScale, FixedSizeWithFreePixelAspectRatioKeepsTheShape) {
  const TestFrame f = random_frame(PixelLayout::RGB, 1920, 1080);
  Harness harness({std::string("backend=") + GetParam()});
  negotiate(harness, "video/x-raw,format=GRAY8,width=640,height=640", f);
  expect_scaled(harness, f, 640, 640, Rect{0, 0, 640, 640}, ScaleMethod::Area);
  GstCaps *caps = gst_pad_get_current_caps(harness.h->sinkpad);
  ASSERT_NE(caps, nullptr);
  gint par_n = 0, par_d = 0;
  EXPECT_TRUE(gst_structure_get_fraction(gst_caps_get_structure(caps, 0), "pixel-aspect-ratio",
                                         &par_n, &par_d));
  EXPECT_EQ(par_n, 16);  // 1920/1080 displayed on 640x640 pixels
  EXPECT_EQ(par_d, 9);
  gst_caps_unref(caps);
}

// Downstream asking for nothing gets the input's size: today's conversion.
TEST_P(ElementScale, FreeSizeKeepsTheInputSize) {
  const TestFrame f = random_frame(PixelLayout::BGRA, 333, 187);
  Harness harness({std::string("backend=") + GetParam(), "method=nearest"});
  negotiate(harness, "video/x-raw,format=GRAY8", f);
  expect_scaled(harness, f, 333, 187, Rect{0, 0, 333, 187}, ScaleMethod::Nearest);
}

// A buffer of the whole frame with a GstVideoCropMeta, as videocrop sends
// when cudagray accepts the meta: the rectangle is read where it is, and
// the result is the rectangle's gray scaled to the size asked for, with no
// crop meta left. A crop that leaves the frame is refused, naming the sizes.
TEST_P(ElementScale, CropMetaIsReadWhereItIs) {
  const TestFrame f = random_frame(PixelLayout::RGBx, 100, 80);
  const Rect crops[] = {{13, 7, 61, 49}, {0, 0, 61, 49}, {39, 31, 61, 49}};
  Harness harness({std::string("backend=") + GetParam()});
  gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY8,width=30");
  harness.set_caps(caps_string("RGBx", 61, 49) + ",pixel-aspect-ratio=1/1");
  for (const Rect &crop : crops) {
    SCOPED_TRACE(std::to_string(crop.x) + "," + std::to_string(crop.y));
    GstBuffer *buf = buffer_for(f);
    GstVideoCropMeta *meta = gst_buffer_add_video_crop_meta(buf);
    meta->x = crop.x, meta->y = crop.y, meta->width = crop.width, meta->height = crop.height;
    ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr) << harness.pop_message(GST_MESSAGE_ERROR);
    EXPECT_EQ(output_size(harness).height, 24);  // 30 * 49 / 61 = 24.1
    Conversion c = f.conversion();
    c.crop = crop;
    c.out_width = 30;
    c.out_height = 24;
    c.dest = Rect{0, 0, 30, 24};
    GrayImage want(30, 24);
    convert_cpu(c, f.view(), want.frame(), standard_weights(Matrix::BT601));
    EXPECT_TRUE(same_pixels(gray_of(out, 30, 24), want));
    EXPECT_EQ(gst_buffer_get_video_crop_meta(out), nullptr) << "applied, so not passed on";
    gst_buffer_unref(out);
  }
  GstBuffer *outside = buffer_for(f);
  GstVideoCropMeta *meta = gst_buffer_add_video_crop_meta(outside);
  meta->x = 40, meta->y = 7, meta->width = 61, meta->height = 49;
  EXPECT_EQ(gst_harness_push(harness.h, outside), GST_FLOW_ERROR);
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR),
            "Input buffer does not hold a 61x49 RGBx frame: its crop meta's rectangle (61x49 at "
            "(40, 7)) is not inside its 100x80 frame");
}

// Scaled, a region of interest comes out in the output's coordinates (as
// videoconvertscale scales it); with bars it is dropped.
TEST_P(ElementScale, RegionsOfInterestAreScaled) {
  const TestFrame f = random_frame(PixelLayout::RGBx, 1920, 1080);
  for (const char *downstream : {"width=640", "width=640,height=640,pixel-aspect-ratio=1/1"}) {
    SCOPED_TRACE(downstream);
    Harness harness({std::string("backend=") + GetParam()});
    gst_harness_set_sink_caps_str(harness.h,
                                  (std::string("video/x-raw,format=GRAY8,") + downstream).c_str());
    harness.set_caps(caps_string("RGBx", 1920, 1080) + ",pixel-aspect-ratio=1/1");
    GstBuffer *in = buffer_for(f);
    gst_buffer_add_video_region_of_interest_meta(in, "face", 300, 120, 600, 300);
    ASSERT_EQ(gst_harness_push(harness.h, in), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr);
    const GstVideoRegionOfInterestMeta *roi =
        gst_buffer_get_video_region_of_interest_meta_id(out, 0);
    if (std::string(downstream) == "width=640") {
      ASSERT_NE(roi, nullptr);
      EXPECT_EQ(std::vector<guint>({roi->x, roi->y, roi->w, roi->h}),
                std::vector<guint>({100, 40, 200, 100}));
    } else {
      EXPECT_EQ(roi, nullptr);
    }
    gst_buffer_unref(out);
  }
}

// videocrop upstream attaches a crop meta and copies nothing, in system
// memory and (through cudaupload) CUDA memory: the gray is the crop of the
// whole frame's, scaled.
TEST_P(ElementScale, VideocropUpstreamCopiesNothing) {
  const bool cuda = std::string(GetParam()) == "cuda";
  SKIP_WITHOUT_ELEMENT("videocrop");
  if (cuda) SKIP_WITHOUT_ELEMENT("cudaupload");
  Pipeline p(std::string("videotestsrc num-buffers=3 pattern=snow ! "
                         "video/x-raw,format=RGBx,width=320,height=240 ! ") +
             (cuda ? "cudaupload ! " : "") +
             "videocrop top=10 left=21 right=30 bottom=41 ! cudagray name=gray backend=" +
             GetParam() + " ! video/x-raw,width=135 ! fakesink name=out");
  struct Seen {
    std::vector<GstBuffer *> in, out;
  } seen;
  auto keep = [](GstPad *, GstPadProbeInfo *info, gpointer list) {
    static_cast<std::vector<GstBuffer *> *>(list)->push_back(
        gst_buffer_ref(GST_PAD_PROBE_INFO_BUFFER(info)));
    return GST_PAD_PROBE_OK;
  };
  GstElement *gray = p.by_name("gray");
  GstPad *sink = gst_element_get_static_pad(gray, "sink"),
         *src = gst_element_get_static_pad(gray, "src");
  gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, keep, &seen.in, nullptr);
  gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, keep, &seen.out, nullptr);
  gst_object_unref(sink);
  gst_object_unref(src);
  p.play();
  BusLog log;
  ASSERT_EQ(p.wait_end(20 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
  ASSERT_EQ(seen.in.size(), 3u);
  ASSERT_EQ(seen.out.size(), 3u);
  for (size_t i = 0; i < seen.in.size(); ++i) {
    const GstVideoCropMeta *crop = gst_buffer_get_video_crop_meta(seen.in[i]);
    ASSERT_NE(crop, nullptr) << "videocrop copied the frame instead of attaching a crop meta";
    EXPECT_EQ(crop->x, 21u);
    EXPECT_EQ(crop->y, 10u);
    EXPECT_EQ(crop->width, 269u);
    EXPECT_EQ(crop->height, 189u);
    {  // the whole frame (CUDA memory mapped to the host), then its crop scaled
      GstVideoInfo info;
      gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGBx, 320, 240);
      GstVideoFrame frame;
      ASSERT_TRUE(gst_video_frame_map(&frame, &info, seen.in[i], GST_MAP_READ));
      const InputFrame in{{static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0))},
                          {static_cast<size_t>(GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0))}};
      Conversion c = same_size_conversion(PixelLayout::RGBx, 320, 240);
      c.crop = Rect{21, 10, 269, 189};
      c.out_width = 135;
      c.out_height = 95;  // 135 * 189 / 269 = 94.85
      c.dest = Rect{0, 0, 135, 95};
      GrayImage want(135, 95);
      convert_cpu(c, in, want.frame(), standard_weights(Matrix::BT601));
      gst_video_frame_unmap(&frame);
      EXPECT_TRUE(same_pixels(gray_of(seen.out[i], 135, 95), want)) << "frame " << i;
    }
  }
  for (GstBuffer *b : seen.in) gst_buffer_unref(b);
  for (GstBuffer *b : seen.out) gst_buffer_unref(b);
}

// Downstream asks for another size every 3 frames, 600 frames, pushed
// while earlier ones are still in flight (max-inflight 4 on CUDA): every
// frame comes out, each at the size asked for when it went in.
TEST_P(ElementScale, OutputSizeRenegotiatedWhilePlaying) {
  const int widths[] = {32, 128, 16, 64, 100};
  Harness harness({std::string("backend=") + GetParam(), "max-inflight=4"});
  const TestFrame f = random_frame(PixelLayout::BGR, 64, 48);
  harness.set_caps(input_caps(f));
  std::vector<int> asked;
  for (int i = 0; i < 600; ++i) {
    if (i % 3 == 0) {
      asked.push_back(widths[i / 3 % 5]);
      gst_harness_set_sink_caps_str(
          harness.h, ("video/x-raw,format=GRAY8,width=" + std::to_string(asked.back())).c_str());
    }
    ASSERT_EQ(gst_harness_push(harness.h, buffer_for(f)), GST_FLOW_OK) << "frame " << i;
  }
  std::map<int, GrayImage> want;
  for (int w : widths) {
    Conversion c = f.conversion();
    c.out_width = w;
    c.out_height = w * 3 / 4;
    c.dest = Rect{0, 0, c.out_width, c.out_height};
    want.emplace(w, GrayImage(c.out_width, c.out_height));
    convert_cpu(c, f.view(), want.at(w).frame(), standard_weights(Matrix::BT601));
  }
  for (int i = 0; i < 600; ++i) {
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr) << "frame " << i << " did not come out";
    const int w = asked[i / 3];
    EXPECT_TRUE(same_pixels(gray_of(out, w, w * 3 / 4), want.at(w))) << "frame " << i;
    gst_buffer_unref(out);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR), "");
}

INSTANTIATE_TEST_SUITE_P(Backends, ElementScale, ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return std::string(info.param); });
