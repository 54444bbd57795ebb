// SPDX-License-Identifier: LGPL-2.1-or-later
// The element scaling: the output size negotiated as videoscale does it
// (display aspect ratio kept, letterboxed with add-borders), and every output
// pixel equal to the kernels' resampler (held to the formula by test_scale).
#include <string>

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

}  // namespace

// Downstream fixing only the width gets the height that keeps the picture's
// shape: 640 wide of 1920x1080 is 640x360, and only the height, 270 high of
// it is 480x270.
TEST_P(ElementScale, FixedWidthOrHeightKeepsTheAspectRatio) {
  const TestFrame f = random_frame(PixelLayout::RGBx, 1920, 1080);
  {
    Harness harness({std::string("backend=") + GetParam()});
    gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY8,width=640");
    harness.set_caps(input_caps(f));
    expect_scaled(harness, f, 640, 360, Rect{0, 0, 640, 360}, ScaleMethod::Area);
  }
  {
    Harness harness({std::string("backend=") + GetParam(), "method=bilinear"});
    gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY16_LE,height=270");
    harness.set_caps(input_caps(f));
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
    gst_harness_set_sink_caps_str(harness.h,
                                  ("video/x-raw,format=GRAY8,width=" + std::to_string(k.out_w) +
                                   ",height=" + std::to_string(k.out_h) + ",pixel-aspect-ratio=1/1")
                                      .c_str());
    harness.set_caps(input_caps(f));
    expect_scaled(harness, f, k.out_w, k.out_h, k.dest, k.method);
  }
}

// A size fixed downstream with the pixel aspect ratio left free: the ratio
// that keeps the picture's shape, and no bars.
TEST_P(ElementScale, FixedSizeWithFreePixelAspectRatioKeepsTheShape) {
  const TestFrame f = random_frame(PixelLayout::RGB, 1920, 1080);
  Harness harness({std::string("backend=") + GetParam()});
  gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY8,width=640,height=640");
  harness.set_caps(input_caps(f));
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
  gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY8");
  harness.set_caps(input_caps(f));
  expect_scaled(harness, f, 333, 187, Rect{0, 0, 333, 187}, ScaleMethod::Nearest);
}

INSTANTIATE_TEST_SUITE_P(Backends, ElementScale, ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return std::string(info.param); });
