// SPDX-License-Identifier: LGPL-2.1-or-later
// Scaling, cropping and letterboxing on the CPU against the README's
// formulas, evaluated here on their own terms: the source is the frame's
// GRAY16 at its own size (the same-size path, checked against the per-pixel
// formula by test_kernels and test_depths); nearest takes the pixel under
// (x + 0.5) * in / out, bilinear weighs the two pixels around
// (x + 0.5) * in / out - 0.5, area weighs every source pixel by the area of
// its overlap with the output pixel's footprint; each is an exact fraction
// rounded half up once, and GRAY8 is round(GRAY16 / 257) of it.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "reference.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

const ScaleMethod kMethods[] = {ScaleMethod::Nearest, ScaleMethod::Bilinear, ScaleMethod::Area};

const char *method_name(ScaleMethod m) {
  return m == ScaleMethod::Nearest ? "nearest" : m == ScaleMethod::Bilinear ? "bilinear" : "area";
}

// The frame's GRAY16 at its own size: the source every method reads.
GrayImage full_gray16(const TestFrame &f, const Conversion &c, const Weights &w) {
  GrayImage g(f.width, f.height, 0, 16);
  Conversion whole = f.conversion(16, c.limited_range);
  convert_cpu(whole, f.view(), g.frame(), w);
  return g;
}

std::string describe(const Conversion &c) {
  auto rect = [](const Rect &r) {
    return std::to_string(r.width) + "x" + std::to_string(r.height) + "+" + std::to_string(r.x) +
           "+" + std::to_string(r.y);
  };
  return std::string(layout_info(c.layout).name) + " " + std::to_string(c.in_width) + "x" +
         std::to_string(c.in_height) + " crop " + rect(c.crop) + " -> " +
         std::to_string(c.out_width) + "x" + std::to_string(c.out_height) + " dest " +
         rect(c.dest) + " " + method_name(c.method) + " GRAY" + std::to_string(c.out_depth) +
         (c.limited_range ? " limited" : "");
}

// Converts f by c on the CPU into an output with padded rows and checks every
// pixel against the formula and the padding untouched. Returns the output.
GrayImage expect_reference(const TestFrame &f, const Conversion &c, const Weights &w,
                           int threads = 0) {
  GrayImage out(c.out_width, c.out_height, 2 * random_int(0, 9), c.out_depth);
  convert_cpu(c, f.view(), out.frame(), w, threads);
  const GrayImage g = full_gray16(f, c, w);
  int wrong = 0;
  std::string first;
  for (int y = 0; y < c.out_height; ++y)
    for (int x = 0; x < c.out_width; ++x) {
      const int64_t want = expected_pixel(g, c, x, y);
      if (out.at(x, y) != want && wrong++ < 3)
        first += " (" + std::to_string(x) + "," + std::to_string(y) +
                 "): " + std::to_string(out.at(x, y)) + " want " + std::to_string(want);
    }
  EXPECT_EQ(wrong, 0) << describe(c) << ":" << first;
  EXPECT_TRUE(padding_untouched(out)) << describe(c);
  return out;
}

// A conversion of f, whole, to out_width x out_height, filling the output.
Conversion scaled(const TestFrame &f, int out_width, int out_height, ScaleMethod method,
                  int depth) {
  Conversion c =
      f.conversion(depth, layout_info(f.layout).family == LayoutFamily::Luma && random_int(0, 1));
  c.out_width = out_width;
  c.out_height = out_height;
  c.dest = Rect{0, 0, out_width, out_height};
  c.method = method;
  return c;
}

PixelLayout random_layout() { return static_cast<PixelLayout>(random_int(0, kLayoutCount - 1)); }

// A random frame up to 40x40 and its conversion by method to a random size
// up to 30x30, GRAY8 or GRAY16.
struct RandomScaling {
  TestFrame f;
  Conversion c;
};
RandomScaling random_scaling(ScaleMethod method) {
  TestFrame f = random_frame(random_layout(), random_int(1, 40), random_int(1, 40));
  Conversion c = scaled(f, random_int(1, 30), random_int(1, 30), method, random_int(0, 1) ? 16 : 8);
  return {std::move(f), c};
}

// A rectangle of any size anywhere inside width x height.
Rect random_rect(int width, int height) {
  Rect r{};
  r.width = random_int(1, width);
  r.height = random_int(1, height);
  r.x = random_int(0, width - r.width);
  r.y = random_int(0, height - r.height);
  return r;
}

}  // namespace

// Every input size 1..17 x 1..17 to every output size 1..17 x 1..17, each
// method, GRAY8 and GRAY16, every layout in turn, random frames with padded
// rows.
TEST(Scale, EverySizePairUpTo17MatchesTheFormula) {
  const Weights w = weights_of(kWeightChoices[random_int(0, 4)]);
  int n = 0;
  for (int in_w = 1; in_w <= 17; ++in_w)
    for (int in_h = 1; in_h <= 17; ++in_h) {
      const TestFrame f = random_frame(static_cast<PixelLayout>(n++ % kLayoutCount), in_w, in_h);
      for (int out_w = 1; out_w <= 17; ++out_w)
        for (int out_h = 1; out_h <= 17; ++out_h)
          for (ScaleMethod method : kMethods)
            for (int depth : {8, 16}) {
              expect_reference(f, scaled(f, out_w, out_h, method, depth), w);
              if (::testing::Test::HasFailure()) return;
            }
    }
}

// Odd sizes both ways, the smallest frames, and the largest dimension.
TEST(Scale, OddLargeAndDegenerateSizes) {
  const Weights w = standard_weights(Matrix::BT709);
  struct Case {
    int in_w, in_h, out_w, out_h;
  };
  const Case cases[] = {{641, 481, 333, 187}, {333, 187, 641, 481}, {1, 1, 1, 1},    {1, 1, 17, 9},
                        {97, 61, 1, 1},       {16384, 2, 7, 1},     {3, 1, 16384, 1}};
  for (const Case &k : cases)
    for (ScaleMethod method : kMethods) {
      const TestFrame f = random_frame(random_layout(), k.in_w, k.in_h);
      expect_reference(f, scaled(f, k.out_w, k.out_h, method, random_int(0, 1) ? 16 : 8), w);
    }
}

// The longest footprints: the largest dimension shrunk to one pixel (and to
// three, whose rows share a source row), by area, every layout, so that an
// output row sums all 16384 source rows, converted a few at a time, or one
// row sums 16384 columns.
TEST(Scale, LargestDimensionShrunkToOnePixel) {
  const Weights w = standard_weights(Matrix::BT601);
  struct Case {
    int in_w, in_h, out_w, out_h;
  };
  const Case cases[] = {{kMaxDimension, 2, 1, 1},
                        {2, kMaxDimension, 1, 1},
                        {kMaxDimension, 2, 3, 1},
                        {2, kMaxDimension, 1, 3}};
  for (PixelLayout layout : every_layout())
    for (const Case &k : cases) {
      const TestFrame f = random_frame(layout, k.in_w, k.in_h);
      for (int depth : {8, 16})
        expect_reference(f, scaled(f, k.out_w, k.out_h, ScaleMethod::Area, depth), w);
      if (::testing::Test::HasFailure()) return;
    }
}

// Rows shrunk by every factor from 1 to 16 in steps of about a quarter, so
// that eight neighbouring output columns read from a few to over a hundred
// source columns (the CPU picks its pass across by that span), each method,
// GRAY8 and GRAY16, cropped or letterboxed at random, every layout in turn.
TEST(Scale, EveryShrinkFactorAcrossRows) {
  const Weights w = standard_weights(Matrix::BT2020);
  int n = 0;
  for (int out_w : {3, 8, 13, 17})
    for (int quarters = 4; quarters <= 64; quarters += 3)
      for (ScaleMethod method : kMethods) {
        const int in_w = out_w * quarters / 4 + random_int(0, 3);
        const TestFrame f = random_frame(static_cast<PixelLayout>(n++ % kLayoutCount),
                                         in_w + random_int(0, 5), random_int(1, 9));
        Conversion c = scaled(f, out_w, random_int(1, 4), method, random_int(0, 1) ? 16 : 8);
        c.crop = Rect{random_int(0, f.width - in_w), 0, in_w, f.height};
        if (random_int(0, 1)) {
          c.out_width += random_int(1, 9);
          c.dest.x = random_int(0, c.out_width - out_w);
        }
        expect_reference(f, c, w);
        if (::testing::Test::HasFailure()) return;
      }
}

// A crop rectangle anywhere, of any size, scaled to any size.
TEST(Scale, CropRectangles) {
  const Weights w = standard_weights(Matrix::BT601);
  for (int i = 0; i < 300; ++i) {
    auto [f, c] = random_scaling(kMethods[i % 3]);
    c.crop = random_rect(f.width, f.height);
    expect_reference(f, c, w);
    if (::testing::Test::HasFailure()) return;
  }
}

// Letterboxed (and pillarboxed): the bars are exactly 0 and the picture is
// the output the same conversion gives with no bars.
TEST(Scale, LetterboxBarsAreBlackAndThePictureUnchanged) {
  const Weights w = standard_weights(Matrix::BT709);
  for (int i = 0; i < 200; ++i) {
    auto [f, c] = random_scaling(kMethods[i % 3]);
    c.dest = random_rect(c.out_width, c.out_height);
    const GrayImage boxed = expect_reference(f, c, w);
    Conversion bare = c;
    bare.out_width = c.dest.width;
    bare.out_height = c.dest.height;
    bare.dest = Rect{0, 0, c.dest.width, c.dest.height};
    GrayImage picture(bare.out_width, bare.out_height, 0, c.out_depth);
    convert_cpu(bare, f.view(), picture.frame(), w);
    int wrong = 0;
    for (int y = 0; y < c.out_height; ++y)
      for (int x = 0; x < c.out_width; ++x) {
        const bool in_picture = x >= c.dest.x && x < c.dest.x + c.dest.width && y >= c.dest.y &&
                                y < c.dest.y + c.dest.height;
        const unsigned want = in_picture ? picture.at(x - c.dest.x, y - c.dest.y) : 0;
        wrong += boxed.at(x, y) != want;
      }
    EXPECT_EQ(wrong, 0) << describe(c);
    if (::testing::Test::HasFailure()) return;
  }
}

// At equal sizes every method is the same-size conversion.
TEST(Scale, EqualSizesGiveTheSameSizeResult) {
  const Weights w = standard_weights(Matrix::BT601);
  for (PixelLayout layout : every_layout())
    for (ScaleMethod method : kMethods) {
      const TestFrame f = random_frame(layout, random_int(1, 70), random_int(1, 50));
      const int depth = random_int(0, 1) ? 16 : 8;
      GrayImage same(f.width, f.height, 0, depth), cropped(f.width, f.height, 0, depth);
      convert_cpu(f.conversion(depth), f.view(), same.frame(), w);
      // a crop of the whole frame into a letterbox of no bars, by method:
      // the same numbers through the resampler
      Conversion c = f.conversion(depth);
      c.method = method;
      c.out_width = f.width + 1;
      c.dest = Rect{1, 0, f.width, f.height};
      GrayImage boxed(c.out_width, c.out_height, 0, depth);
      convert_cpu(c, f.view(), boxed.frame(), w);
      for (int y = 0; y < f.height; ++y)
        for (int x = 0; x < f.width; ++x) ASSERT_EQ(boxed.at(x + 1, y), same.at(x, y));
    }
}

// Splitting output rows over threads changes nothing, shrinking and
// enlarging.
TEST(Scale, ThreadCountDoesNotMatter) {
  const Weights w = standard_weights(Matrix::BT709);
  for (ScaleMethod method : kMethods)
    for (const PixelLayout layout : {PixelLayout::RGB, PixelLayout::Bayer16_GRBG}) {
      const TestFrame big = random_frame(layout, 1921, 1079),
                      small = random_frame(layout, 301, 199);
      for (const Conversion &c :
           {scaled(big, 640, 360, method, 8), scaled(small, 1500, 1001, method, 16)}) {
        const TestFrame &f = c.in_width == big.width ? big : small;
        GrayImage one(c.out_width, c.out_height, 0, c.out_depth),
            many(c.out_width, c.out_height, 0, c.out_depth);
        convert_cpu(c, f.view(), one.frame(), w, 1);
        convert_cpu(c, f.view(), many.frame(), w, 7);
        EXPECT_TRUE(same_pixels(one, many)) << describe(c);
      }
    }
}

TEST(Scale, ConversionsOutsideTheLimitsAreRefusedNamingTheSizes) {
  std::string why;
  Conversion c = same_size_conversion(PixelLayout::RGB, kMaxDimension, kMaxDimension);
  EXPECT_TRUE(valid_conversion(c, &why)) << why;
  c.out_width = kMaxDimension + 1;
  c.dest.width = c.out_width;
  EXPECT_FALSE(valid_conversion(c, &why));
  EXPECT_EQ(why, "output size 16385x16384 is outside 1x1 to 16384x16384");
  c = same_size_conversion(PixelLayout::RGB, 0, 10);
  EXPECT_FALSE(valid_conversion(c, &why));
  EXPECT_EQ(why, "input size 0x10 is outside 1x1 to 16384x16384");
  c = same_size_conversion(PixelLayout::RGB, 100, 50);
  c.crop = Rect{60, 0, 41, 50};
  EXPECT_FALSE(valid_conversion(c, &why));
  EXPECT_EQ(why, "crop 41x50 at (60, 0) is empty or not inside the 100x50 input");
  c.crop = Rect{0, 0, 100, 50};
  c.dest = Rect{0, 0, 100, 0};
  EXPECT_FALSE(valid_conversion(c, &why));
  EXPECT_EQ(why, "destination 100x0 at (0, 0) is empty or not inside the 100x50 output");
  std::string error;
  auto backend = make_cpu_backend();
  c.dest = Rect{0, 0, 101, 50};
  EXPECT_FALSE(backend->configure(c, &error));
  EXPECT_EQ(error, "destination 101x50 at (0, 0) is empty or not inside the 100x50 output");
}
