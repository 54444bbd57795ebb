// SPDX-License-Identifier: LGPL-2.1-or-later
// The element scaling: the output size negotiated as videoscale does it
// (display aspect ratio kept, letterboxed with add-borders), and every output
// pixel equal to the kernels' resampler (held to the formula by test_scale).
#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "element_harness.h"
#include "reference.h"

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

// A Bayer format as video/x-bayer names it, and how its samples lie.
struct BayerFormat {
  const char *phase;
  int bits;  // 8: a byte a sample; else 16-bit words
  bool big_endian;
  std::string name() const {
    return bits == 8 ? phase : phase + std::to_string(bits) + (big_endian ? "be" : "le");
  }
  int sample_bytes() const { return bits == 8 ? 1 : 2; }
};

// A random mosaic of width x height samples within the format's bits, in
// rows of stride bytes (padding random too) after a random gap.
struct Mosaic {
  BayerFormat format;
  int width, height, stride;
  size_t offset;
  std::vector<uint8_t> bytes;
};

Mosaic random_mosaic(const BayerFormat &format, int width, int height) {
  Mosaic m{format,
           width,
           height,
           width * format.sample_bytes() + random_int(0, 9),
           static_cast<size_t>(random_int(0, 40)),
           {}};
  m.bytes.resize(m.offset + static_cast<size_t>(m.stride) * height);
  fill_random(m.bytes);
  if (format.bits != 8)
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) {
        uint8_t *p = &m.bytes[m.offset + static_cast<size_t>(y) * m.stride + 2 * x];
        p[format.big_endian ? 0 : 1] &= (1u << (format.bits - 8)) - 1;
      }
  return m;
}

// The whole mosaic's GRAY16 by the documented formula (bt601) on the model
// of bayer2rgb's picture, 16-bit samples' colours scaled to 16 bits first:
// the gray every pixel has in the full-size frame, demosaicked from its
// neighbours there.
GrayImage mosaic_gray16(const Mosaic &m) {
  const std::vector<uint8_t> rows(m.bytes.begin() + m.offset, m.bytes.end());
  const std::vector<uint32_t> rgb =
      bayer2rgb_model(mosaic_samples(rows, m.stride, m.width, m.height, m.format.sample_bytes(),
                                     m.format.big_endian),
                      m.width, m.height, m.format.phase);
  const Q16 w = q16_of(kWeightChoices[0]);
  auto to16 = [&](uint32_t c) {
    return m.format.bits == 8 ? c
                              : std::min<uint32_t>(65535, (uint64_t{c} * 65535) >> m.format.bits);
  };
  GrayImage g(m.width, m.height, 0, 16);
  for (int y = 0; y < m.height; ++y)
    for (int x = 0; x < m.width; ++x) {
      const uint32_t *c = &rgb[(static_cast<size_t>(y) * m.width + x) * 3];
      const uint32_t g16 =
          rgb_to_16(to16(c[0]), to16(c[1]), to16(c[2]), m.format.bits == 8 ? 8 : 16, w);
      std::memcpy(&g.bytes[y * g.stride + 2 * x], &g16, 2);
    }
  return g;
}

// What the element must give for c from the source's full-size GRAY16:
// every pixel by the documented formula (reference.h).
GrayImage expected_image(const GrayImage &g16, const Conversion &c) {
  GrayImage want(c.out_width, c.out_height, 0, c.out_depth);
  for (int y = 0; y < c.out_height; ++y)
    for (int x = 0; x < c.out_width; ++x) {
      const auto v = static_cast<uint16_t>(expected_pixel(g16, c, x, y));
      std::memcpy(&want.bytes[y * want.stride + x * (c.out_depth / 8)], &v, c.out_depth / 8);
    }
  return want;
}

// An 8-bit RGB frame's GRAY16 by the formula (bt601).
GrayImage rgb_gray16(const TestFrame &f) {
  GrayImage g(f.width, f.height, 0, 16);
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < f.width; ++x) {
      int rgb[3];
      pixel_rgb(f, x, y, rgb);
      const auto g16 =
          static_cast<uint16_t>(rgb_to_16(rgb[0], rgb[1], rgb[2], 8, q16_of(kWeightChoices[0])));
      std::memcpy(&g.bytes[y * g.stride + 2 * x], &g16, 2);
    }
  return g;
}

// Counts the element's "sizing the backend" debug lines while it lives.
class BackendSizings {
 public:
  BackendSizings() {
    gst_debug_set_threshold_for_name("cudagray", GST_LEVEL_DEBUG);
    had_default_ = gst_debug_remove_log_function(gst_debug_log_default) > 0;
    gst_debug_add_log_function(&BackendSizings::log, &count_, nullptr);
  }
  ~BackendSizings() {
    gst_debug_remove_log_function(&BackendSizings::log);
    if (had_default_) gst_debug_add_log_function(gst_debug_log_default, nullptr, nullptr);
    gst_debug_unset_threshold_for_name("cudagray");
  }
  int count() const { return count_; }

 private:
  static void log(GstDebugCategory *category, GstDebugLevel, const gchar *, const gchar *, gint,
                  GObject *, GstDebugMessage *message, gpointer count) {
    if (std::string(gst_debug_category_get_name(category)) == "cudagray" &&
        g_str_has_prefix(gst_debug_message_get(message), "sizing the backend"))
      ++*static_cast<std::atomic<int> *>(count);
  }
  std::atomic<int> count_{0};
  bool had_default_ = false;
};

// The mosaic in a buffer described as an application would: a video meta
// of format ENCODED (GStreamer has no Bayer format; libcamerasrc says so)
// giving the whole frame's size, offset and stride, and a crop meta.
GstBuffer *cropped_mosaic_buffer(const Mosaic &m, const Rect &crop) {
  GstBuffer *buf = gst_buffer_new_memdup(m.bytes.data(), m.bytes.size());
  gsize offsets[GST_VIDEO_MAX_PLANES] = {m.offset};
  gint strides[GST_VIDEO_MAX_PLANES] = {m.stride};
  gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_ENCODED, m.width,
                                 m.height, 1, offsets, strides);
  GstVideoCropMeta *meta = gst_buffer_add_video_crop_meta(buf);
  meta->x = crop.x, meta->y = crop.y, meta->width = crop.width, meta->height = crop.height;
  return buf;
}

// Whether the element's ALLOCATION answer for caps lists the crop meta.
bool announces_crop_meta(Harness &harness, const std::string &caps_text) {
  GstCaps *caps = gst_caps_from_string(caps_text.c_str());
  GstQuery *query = gst_query_new_allocation(caps, FALSE);
  const bool announced = gst_pad_peer_query(harness.h->srcpad, query) &&
                         gst_query_find_allocation_meta(query, GST_VIDEO_CROP_META_API_TYPE, NULL);
  gst_query_unref(query);
  gst_caps_unref(caps);
  return announced;
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

// A crop meta on a frame of the caps' size, without a video meta (a
// producer or an application marking a region of interest) or with one of
// that size, only marks a region: the whole frame converts, as videoconvert
// converts it, and the stream goes on.
TEST_P(ElementScale, CropMetaOnAFrameOfTheCapsSizeMarksARegion) {
  const TestFrame f = random_frame(PixelLayout::RGBx, 64, 48);
  Harness harness({std::string("backend=") + GetParam()});
  gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY8");
  harness.set_caps(caps_string("RGBx", 64, 48));
  GrayImage want(64, 48);
  convert_cpu(f.conversion(), f.view(), want.frame(), standard_weights(Matrix::BT601));
  for (const bool video_meta : {false, true}) {
    SCOPED_TRACE(video_meta ? "with a video meta" : "without a video meta");
    GstBuffer *buf = buffer_for(f);
    if (!video_meta) { /* the rows packed as the caps say, no meta */
      GstVideoInfo info;
      gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGBx, 64, 48);
      gst_buffer_unref(buf);
      buf = gst_buffer_new_allocate(NULL, GST_VIDEO_INFO_SIZE(&info), NULL);
      for (int y = 0; y < 48; y++)
        gst_buffer_fill(buf, y * GST_VIDEO_INFO_PLANE_STRIDE(&info, 0),
                        &f.bytes[f.offset[0] + y * f.stride[0]], 64 * 4);
    }
    GstVideoCropMeta *meta = gst_buffer_add_video_crop_meta(buf);
    meta->x = 2, meta->y = 4, meta->width = 32, meta->height = 20;
    ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK)
        << harness.pop_message(GST_MESSAGE_ERROR);
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr);
    EXPECT_TRUE(same_pixels(gray_of(out, 64, 48), want));
    gst_buffer_unref(out);
  }
}

// A Bayer mosaic with a crop meta (from an application: videocrop takes no
// Bayer caps), 8- and 16-bit, crops at odd offsets (the colour filter's
// phase is the whole frame's) and at the frame's edges: the ALLOCATION
// answer lists the crop meta, and the output is the crop of the whole
// frame's gray (each pixel demosaicked from its neighbours in the whole
// frame, outside the crop too), at its own size and scaled.
TEST_P(ElementScale, BayerCropMetaReadsTheWholeFramesNeighbours) {
  std::vector<BayerFormat> formats = {{"grbg", 8, false}, {"bggr", 8, false}};
#if GST_CHECK_VERSION(1, 24, 0)
  formats.insert(formats.end(), {{"rggb", 12, false}, {"gbrg", 16, true}});
#endif
  struct Case {
    Rect crop;
    int out_w, out_h;
    ScaleMethod method;
    int depth;
  };
  const Case cases[] = {
      {{7, 5, 21, 13}, 21, 13, ScaleMethod::Area, 8},        // odd offsets, same size
      {{0, 0, 45, 33}, 45, 33, ScaleMethod::Area, 16},       // the whole frame
      {{3, 20, 17, 13}, 17, 13, ScaleMethod::Nearest, 16},   // down to the last row
      {{1, 3, 43, 29}, 12, 8, ScaleMethod::Area, 8},         // shrunk
      {{24, 1, 21, 31}, 34, 50, ScaleMethod::Bilinear, 16},  // enlarged, to the last column
  };
  for (const BayerFormat &format : formats)
    for (const Case &k : cases) {
      SCOPED_TRACE(format.name() + " crop " + std::to_string(k.crop.width) + "x" +
                   std::to_string(k.crop.height) + " at (" + std::to_string(k.crop.x) + ", " +
                   std::to_string(k.crop.y) + ") to " + std::to_string(k.out_w) + "x" +
                   std::to_string(k.out_h));
      const Mosaic m = random_mosaic(format, 45, 33);
      Harness harness({std::string("backend=") + GetParam(),
                       k.method == ScaleMethod::Area      ? "method=area"
                       : k.method == ScaleMethod::Nearest ? "method=nearest"
                                                          : "method=bilinear"});
      gst_harness_set_sink_caps_str(
          harness.h, (std::string("video/x-raw,format=") + (k.depth == 16 ? "GRAY16_LE" : "GRAY8") +
                      ",width=" + std::to_string(k.out_w) + ",height=" + std::to_string(k.out_h))
                         .c_str());
      const std::string caps = "video/x-bayer,format=" + format.name() +
                               ",width=" + std::to_string(k.crop.width) +
                               ",height=" + std::to_string(k.crop.height) + ",framerate=30/1";
      harness.set_caps(caps);
      EXPECT_TRUE(announces_crop_meta(harness, caps));
      ASSERT_EQ(gst_harness_push(harness.h, cropped_mosaic_buffer(m, k.crop)), GST_FLOW_OK)
          << harness.pop_message(GST_MESSAGE_ERROR);
      GstBuffer *out = gst_harness_pull(harness.h);
      ASSERT_NE(out, nullptr) << harness.pop_message(GST_MESSAGE_ERROR);
      const GrayImage got = gray_of(out, k.out_w, k.out_h, k.depth);
      gst_buffer_unref(out);
      Conversion c = same_size_conversion(PixelLayout::RGB, m.width, m.height, k.depth);
      c.crop = k.crop;
      c.out_width = k.out_w;
      c.out_height = k.out_h;
      c.dest = Rect{0, 0, k.out_w, k.out_h};
      c.method = k.method;
      EXPECT_TRUE(same_pixels(got, expected_image(mosaic_gray16(m), c)));
      EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR), "");
    }
}

// The backend is sized for a crop meta's frames once: new output caps keep
// the frames' crop (they undid it, and the next frame sized the backend
// again), and a new crop meta sizes it again (what was queued leaving
// first). Every frame is its crop's gray at the size asked for.
TEST_P(ElementScale, NewOutputCapsKeepTheFramesCrop) {
  const TestFrame f = random_frame(PixelLayout::RGBx, 100, 80);
  const GrayImage whole = rgb_gray16(f);
  struct Step {
    int out_w, out_h;  // 61x49 fixed to that width: 24.1 and 32.1 rows
    Rect crop;
  };
  const Step steps[] = {
      {30, 24, {13, 7, 61, 49}}, {30, 24, {13, 7, 61, 49}},  {40, 32, {13, 7, 61, 49}},
      {40, 32, {13, 7, 61, 49}}, {40, 32, {39, 31, 61, 49}}, {40, 32, {39, 31, 61, 49}},
  };
  const BackendSizings sizings;
  Harness harness({std::string("backend=") + GetParam(), "max-inflight=4"});
  int asked = steps[0].out_w;
  gst_harness_set_sink_caps_str(
      harness.h, ("video/x-raw,format=GRAY8,width=" + std::to_string(asked)).c_str());
  harness.set_caps(caps_string("RGBx", 61, 49) + ",pixel-aspect-ratio=1/1");
  for (const Step &step : steps) {
    SCOPED_TRACE(std::to_string(step.out_w) + " wide, crop at (" + std::to_string(step.crop.x) +
                 ", " + std::to_string(step.crop.y) + ")");
    if (step.out_w != asked)
      gst_harness_set_sink_caps_str(
          harness.h,
          ("video/x-raw,format=GRAY8,width=" + std::to_string(asked = step.out_w)).c_str());
    GstBuffer *buf = buffer_for(f);
    GstVideoCropMeta *meta = gst_buffer_add_video_crop_meta(buf);
    meta->x = step.crop.x, meta->y = step.crop.y;
    meta->width = step.crop.width, meta->height = step.crop.height;
    ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr) << harness.pop_message(GST_MESSAGE_ERROR);
    Conversion c = same_size_conversion(PixelLayout::RGBx, f.width, f.height);
    c.crop = step.crop;
    c.out_width = step.out_w;
    c.out_height = step.out_h;
    c.dest = Rect{0, 0, step.out_w, step.out_h};
    EXPECT_TRUE(same_pixels(gray_of(out, step.out_w, step.out_h), expected_image(whole, c)));
    gst_buffer_unref(out);
  }
  // the caps, the first crop, the new output caps, the second crop
  EXPECT_EQ(sizings.count(), 4);
}

// Scaled, a region of interest comes out in the output's coordinates (as
// videoconvertscale scales it); with bars, inside the picture between them.
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
    ASSERT_NE(roi, nullptr);
    // a third of the size; the picture 140 rows down between the bars
    const guint top = std::string(downstream) == "width=640" ? 40 : 180;
    EXPECT_EQ(std::vector<guint>({roi->x, roi->y, roi->w, roi->h}),
              std::vector<guint>({100, top, 200, 100}));
    gst_buffer_unref(out);
  }
}

// Regions of interest are in the whole input frame's coordinates; under a
// crop meta each comes out as the part of it inside the crop, from the
// crop's corner, scaled by the picture's size over the crop's (x and width
// rounded down, as videoconvertscale rounds), from the picture's corner
// between the bars; one with nothing left is dropped. Its type, id, parent
// and parameters stay.
TEST_P(ElementScale, RegionsOfInterestFollowTheCropIntoThePicture) {
  const TestFrame f = random_frame(PixelLayout::BGRx, 1001, 701);
  const Rect crop{251, 131, 600, 400};
  struct Region {
    guint x, y, w, h;
  };
  const Region in[] = {
      {401, 231, 121, 61},   // inside
      {201, 101, 100, 100},  // over the crop's top left corner
      {800, 480, 150, 100},  // over its bottom right corner
      {900, 10, 50, 50},     // outside: dropped
      {252, 132, 1, 1},      // a pixel: nothing left once halved
  };
  struct Case {
    const char *downstream;
    std::vector<int> kept;  // ids of the regions that come out
    std::vector<Region> out;
  };
  const Case cases[] = {
      // the crop at its own size: only moved to the crop's corner
      {"width=600,height=400",
       {0, 1, 2, 4},
       {{150, 100, 121, 61}, {0, 0, 50, 70}, {549, 349, 51, 51}, {1, 1, 1, 1}}},
      // halved into 300x200, between bars 50 rows high: (x - 251) / 2,
      // 50 + (y - 131) / 2, sizes halved, each rounded down
      {"width=300,height=300,pixel-aspect-ratio=1/1",
       {0, 1, 2},
       {{75, 100, 60, 30}, {0, 50, 25, 35}, {274, 224, 25, 25}}},
  };
  for (const Case &k : cases) {
    SCOPED_TRACE(k.downstream);
    Harness harness({std::string("backend=") + GetParam()});
    gst_harness_set_sink_caps_str(
        harness.h, (std::string("video/x-raw,format=GRAY8,") + k.downstream).c_str());
    harness.set_caps(caps_string("BGRx", crop.width, crop.height) + ",pixel-aspect-ratio=1/1");
    GstBuffer *buf = buffer_for(f);
    GstVideoCropMeta *meta = gst_buffer_add_video_crop_meta(buf);
    meta->x = crop.x, meta->y = crop.y, meta->width = crop.width, meta->height = crop.height;
    for (int i = 0; i < 5; ++i) {
      GstVideoRegionOfInterestMeta *roi = gst_buffer_add_video_region_of_interest_meta(
          buf, i == 1 ? "face" : "car", in[i].x, in[i].y, in[i].w, in[i].h);
      roi->id = i;
      roi->parent_id = 10 + i;
      gst_video_region_of_interest_meta_add_param(
          roi, gst_structure_new("detection", "confidence", G_TYPE_DOUBLE, 0.5 + i, NULL));
    }
    ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr) << harness.pop_message(GST_MESSAGE_ERROR);
    std::vector<int> kept;
    std::vector<std::vector<guint>> placed, want;
    for (const Region &r : k.out) want.push_back({r.x, r.y, r.w, r.h});
    for (int i = 0; i < 5; ++i) {
      GstVideoRegionOfInterestMeta *roi = gst_buffer_get_video_region_of_interest_meta_id(out, i);
      if (!roi) continue;
      SCOPED_TRACE("region " + std::to_string(i));
      kept.push_back(i);
      placed.push_back({roi->x, roi->y, roi->w, roi->h});
      EXPECT_STREQ(g_quark_to_string(roi->roi_type), i == 1 ? "face" : "car");
      EXPECT_EQ(roi->parent_id, 10 + i);
      const GstStructure *param = gst_video_region_of_interest_meta_get_param(roi, "detection");
      gdouble confidence = 0;
      EXPECT_TRUE(param && gst_structure_get_double(param, "confidence", &confidence));
      EXPECT_EQ(confidence, 0.5 + i);
    }
    EXPECT_EQ(kept, k.kept);
    EXPECT_EQ(placed, want);
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
