// SPDX-License-Identifier: LGPL-2.1-or-later
// The CPU reference against the documented formula; weights; the formula
// and stats pieces the backends share.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "bayer.h"
#include "common.h"
#include "layouts.h"
#include "resample.h"
#include "timing.h"

using namespace cudagray;
using namespace cudagray::test;

TEST(Layouts, DescriptionsFollowFormatNames) {
  for (PixelLayout layout : kRgb8Layouts) {
    const LayoutInfo &info = layout_info(layout);
    const std::string name = info.name;
    SCOPED_TRACE(name);
    const bool planar = name == "RGBP" || name == "BGRP" || name == "GBR";
    EXPECT_EQ(info.planes, planar ? 3 : 1);
    EXPECT_EQ(info.group_bytes, planar ? 1 : static_cast<int>(name.size()));
    EXPECT_EQ(info.r, static_cast<int>(name.find('R')));
    EXPECT_EQ(info.g, static_cast<int>(name.find('G')));
    EXPECT_EQ(info.b, static_cast<int>(name.find('B')));
  }
}

TEST(Weights, StandardMatricesInQ16) {
  // round(k * 65536) for R and B, G takes the rest so the weights sum to 1.
  const Weights bt601 = standard_weights(Matrix::BT601);
  EXPECT_EQ(bt601.r, 19595u);  // 0.299 * 65536 = 19595.264
  EXPECT_EQ(bt601.b, 7471u);   // 0.114 * 65536 = 7471.104
  EXPECT_EQ(bt601.g, 38470u);
  const Weights bt709 = standard_weights(Matrix::BT709);
  EXPECT_EQ(bt709.r, 13933u);  // 13932.9536
  EXPECT_EQ(bt709.b, 4732u);   // 4731.6992
  EXPECT_EQ(bt709.g, 46871u);
  const Weights bt2020 = standard_weights(Matrix::BT2020);
  EXPECT_EQ(bt2020.r, 17216u);  // 17216.3072
  EXPECT_EQ(bt2020.b, 3886u);   // 3886.2848
  EXPECT_EQ(bt2020.g, 44434u);
}

TEST(Weights, CustomRoundsEachCoefficient) {
  const Weights w = custom_weights({0.21, 0.72, 0.07});
  EXPECT_EQ(w.r, 13763u);  // 13762.56
  EXPECT_EQ(w.g, 47186u);  // 47185.92
  EXPECT_EQ(w.b, 4588u);   // 4587.52
}

TEST(Weights, WhiteStaysWhiteAndBlackStaysBlack) {
  for (const WeightChoice &c : kWeightChoices) {
    SCOPED_TRACE(c.name);
    TestFrame f = random_frame(PixelLayout::RGB, 2, 1, Rows::Tight);
    f.bytes = {255, 255, 255, 0, 0, 0};
    const GrayImage out = cpu_reference(f, c);
    EXPECT_EQ(out.at(0, 0), 255);
    EXPECT_EQ(out.at(1, 0), 0);
  }
}

class CpuReference : public ::testing::TestWithParam<PixelLayout> {};

// Converts f with c's weights to GRAY8 and GRAY16 in outputs with padded
// rows, and checks every pixel against the formula evaluated in double
// precision from the format's name, and that the row padding is not written.
void expect_formula(const TestFrame &f, const WeightChoice &c) {
  for (int depth : {8, 16}) {
    SCOPED_TRACE(std::to_string(f.width) + "x" + std::to_string(f.height) + " " + c.name + " GRAY" +
                 std::to_string(depth));
    GrayImage out(f.width, f.height, random_int(1, 33), depth);
    convert_cpu(f.conversion(out.depth), f.view(), out.frame(), weights_of(c));
    int wrong = 0;
    for (int y = 0; y < f.height; ++y)
      for (int x = 0; x < f.width; ++x) {
        int rgb[3];
        pixel_rgb(f, x, y, rgb);
        const int want = formula_y(c, rgb, depth);
        if (static_cast<int>(out.at(x, y)) != want && wrong++ < 3)
          ADD_FAILURE() << "pixel " << x << "," << y << ": " << out.at(x, y) << " expected "
                        << want;
      }
    EXPECT_EQ(wrong, 0);
    EXPECT_TRUE(padding_untouched(out));
  }
}

// Every pixel of random padded frames equals the formula, GRAY8 and GRAY16.
TEST_P(CpuReference, MatchesFormulaOnEveryPixel) {
  for (const Size &size : kSizes) {
    const TestFrame f = random_frame(GetParam(), size.width, size.height);
    for (const WeightChoice &c : kWeightChoices) expect_formula(f, c);
  }
}

// Custom weights at the ends of what they may be (each coefficient 0..64, so
// a Q16 weight up to 64 * 65536 and the sum before the shift close to 2^32),
// and random ones over that range, at every width up to 150: whatever blocks
// of pixels a kernel works in, each way a row can end is covered.
TEST_P(CpuReference, ExtremeWeightsAtEveryWidth) {
  std::vector<WeightChoice> choices = {
      {"64,64,64", Matrix::Custom, {64, 64, 64}}, {"0,0,0", Matrix::Custom, {0, 0, 0}},
      {"0,64,0", Matrix::Custom, {0, 64, 0}},     {"64,0,0", Matrix::Custom, {64, 0, 0}},
      {"0,0,64", Matrix::Custom, {0, 0, 64}},     {"1,1,1", Matrix::Custom, {1, 1, 1}},
      {"0,1,0", Matrix::Custom, {0, 1, 0}},
  };
  for (double max : {0.5, 1.0, 4.0, kMaxCustomCoefficient}) {
    for (int i = 0; i < 2; ++i) {
      // Multiples of 2^-16: each weight is exactly k * 65536.
      auto k = [max] { return random_int(0, static_cast<int>(max * 65536)) / 65536.0; };
      const Coefficients random{k(), k(), k()};
      choices.push_back({"random " + std::to_string(random.r) + "," + std::to_string(random.g) +
                             "," + std::to_string(random.b),
                         Matrix::Custom, random});
    }
  }
  for (int width = 1; width <= 150; ++width) {
    const TestFrame f = random_frame(GetParam(), width, 3);
    for (const WeightChoice &c : choices) expect_formula(f, c);
    if (::testing::Test::HasFailure()) return;
  }
}

// Splitting rows over threads changes nothing.
TEST_P(CpuReference, ThreadCountDoesNotMatter) {
  const TestFrame f = random_frame(GetParam(), 1921, 1079);
  for (int depth : {8, 16}) {
    GrayImage one(f.width, f.height, 0, depth), many(f.width, f.height, 0, depth);
    convert_cpu(f.conversion(depth), f.view(), one.frame(), standard_weights(Matrix::BT709), 1);
    convert_cpu(f.conversion(depth), f.view(), many.frame(), standard_weights(Matrix::BT709), 7);
    EXPECT_TRUE(same_pixels(one, many)) << "GRAY" << depth;
  }
}

// Several threads converting at once, as several elements would: each frame
// comes out as it does converted alone.
TEST(CpuThreads, ConcurrentCallersGetExactResults) {
  const TestFrame f = random_frame(PixelLayout::BGRx, 1920, 1080);
  const Weights w = standard_weights(Matrix::BT601);
  GrayImage expected(f.width, f.height);
  convert_cpu(f.conversion(expected.depth), f.view(), expected.frame(), w, 1);
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      GrayImage out(f.width, f.height);
      for (int i = 0; i < 20; ++i) {
        std::fill(out.bytes.begin(), out.bytes.end(), 0);
        convert_cpu(f.conversion(out.depth), f.view(), out.frame(), w, t % 2 ? 0 : 3);
        wrong += out.bytes != expected.bytes;
      }
    });
  for (std::thread &t : callers) t.join();
  EXPECT_EQ(wrong, 0);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, CpuReference, ::testing::ValuesIn(kRgb8Layouts),
                         [](const auto &info) {
                           return std::string(layout_info(info.param).name);
                         });

// RBGA: 8-bit and packed, with the same kernels, but a format of GStreamer
// 1.24+ only (kRgb8Layouts' formats are every version's).
INSTANTIATE_TEST_SUITE_P(Rbga, CpuReference, ::testing::Values(PixelLayout::RBGA),
                         [](const auto &info) {
                           return std::string(layout_info(info.param).name);
                         });

// All 2^24 RGB triples in one 4096x4096 frame: the fixed-point result is
// within 1 of the exact weighted sum rounded, and equals the formula.
TEST(Exhaustive, AllRgbTriplesWithinOneOfExact) {
  TestFrame f = random_frame(PixelLayout::RGB, 4096, 4096, Rows::Tight);
  for (uint32_t i = 0; i < (1u << 24); ++i) {
    f.bytes[3 * i] = i >> 16;
    f.bytes[3 * i + 1] = (i >> 8) & 255;
    f.bytes[3 * i + 2] = i & 255;
  }
  for (const WeightChoice &c : kWeightChoices) {
    if (c.k.r + c.k.g + c.k.b > 1.0 + 1e-9) continue;  // saturating weights have no exact match
    SCOPED_TRACE(c.name);
    const GrayImage out = cpu_reference(f, c);
    long off_by_one = 0, off_formula = 0;
    int worst = 0;
    for (uint32_t i = 0; i < (1u << 24); ++i) {
      const int rgb[3] = {int(i >> 16), int((i >> 8) & 255), int(i & 255)};
      const int y = out.bytes[i];
      const int exact =
          static_cast<int>(std::lround(c.k.r * rgb[0] + c.k.g * rgb[1] + c.k.b * rgb[2]));
      worst = std::max(worst, std::abs(y - exact));
      off_by_one += y != exact;
      off_formula += y != formula_y(c, rgb);
    }
    std::printf(
        "%-8s: max |Y - round(kR*R + kG*G + kB*B)| = %d, %ld of 16777216 triples off by one\n",
        c.name.c_str(), worst, off_by_one);
    EXPECT_LE(worst, 1);
    EXPECT_EQ(off_formula, 0);
  }
}

// 8-bit RGB to 16 bits in 32-bit arithmetic (layouts.h, and the CPU's
// SIMD kernels, in every triple's frame) equals the formula in 64 bits for
// every triple, standard weights and custom ones up to the largest allowed
// (the sum close to 2^32).
TEST(Exhaustive, Gray16Of8BitRgbEqualsThe64BitFormula) {
  std::vector<Weights> weights = {standard_weights(Matrix::BT601), standard_weights(Matrix::BT709),
                                  standard_weights(Matrix::BT2020), custom_weights({64, 64, 64}),
                                  custom_weights({64, 0, 1})};
  for (int i = 0; i < 3; ++i)
    weights.push_back(
        custom_weights({random_int(0, 64 << 16) / 65536.0, random_int(0, 64 << 16) / 65536.0,
                        random_int(0, 64 << 16) / 65536.0}));
  TestFrame f = random_frame(PixelLayout::RGB, 4096, 4096, Rows::Tight);
  for (uint32_t i = 0; i < (1u << 24); ++i) {
    f.bytes[3 * i] = i >> 16;
    f.bytes[3 * i + 1] = (i >> 8) & 255;
    f.bytes[3 * i + 2] = i & 255;
  }
  GrayImage out(f.width, f.height, 0, 16);
  for (const Weights &w : weights) {
    convert_cpu(f.conversion(out.depth), f.view(), out.frame(), w);
    long wrong = 0, wrong_frame = 0;
    for (uint32_t i = 0; i < (1u << 24); ++i) {
      const uint64_t r = i >> 16, g = (i >> 8) & 255, b = i & 255;
      const uint64_t s = (w.r * r + w.g * g + w.b * b) * 257 + 32768;
      const uint64_t want = std::min<uint64_t>(65535, s >> 16);
      wrong += rgb_gray16<8>(r, g, b, w) != want;
      wrong_frame += out.at(i % 4096, i / 4096) != want;
    }
    EXPECT_EQ(wrong, 0) << w.r << "," << w.g << "," << w.b;
    EXPECT_EQ(wrong_frame, 0) << w.r << "," << w.g << "," << w.b << " (the frame)";
  }
}

// ------------------------------------------------ YUV: the luma plane

namespace {

// The documented expansion, evaluated independently in double precision.
int expanded(int y) {
  return static_cast<int>(std::clamp(std::round((y - 16) * 255.0 / 219.0), 0.0, 255.0));
}

}  // namespace

TEST(Luma, LimitedRangeExpandsEveryValueAsDocumented) {
  TestFrame f = random_frame(PixelLayout::Luma, 256, 1, Rows::Tight);
  for (int v = 0; v < 256; ++v) f.bytes[v] = static_cast<uint8_t>(v);
  GrayImage out(256, 1);
  convert_cpu(f.conversion(8, true), f.view(), out.frame(), standard_weights(Matrix::BT601));
  for (int v = 0; v < 256; ++v) EXPECT_EQ(out.at(v, 0), expanded(v)) << "Y' = " << v;
  EXPECT_EQ(out.at(16, 0), 0);
  EXPECT_EQ(out.at(235, 0), 255);
  EXPECT_EQ(out.at(126, 0), 128);  // (126 - 16) * 255 / 219 = 128.08
}

// The multiply and shift that replaced the division (so that the CPU loop
// vectorises) gives the division's result for every input byte.
TEST(Luma, ExpansionEqualsTheIntegerDivisionForEveryValue) {
  for (int v = 0; v < 256; ++v) {
    const int by_division = v <= 16 ? 0 : v >= 235 ? 255 : (2 * 255 * (v - 16) + 219) / 438;
    EXPECT_EQ(expand_limited(static_cast<uint8_t>(v)), by_division) << "Y' = " << v;
  }
}

TEST(Luma, EveryPixelOfPaddedFramesFullAndLimited) {
  for (const Size &size : kSizes) {
    const TestFrame f = random_frame(PixelLayout::Luma, size.width, size.height);
    for (bool limited : {false, true}) {
      SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height) +
                   (limited ? " limited" : " full"));
      GrayImage out(size.width, size.height, random_int(1, 33));
      convert_cpu(f.conversion(8, limited), f.view(), out.frame(), standard_weights(Matrix::BT601));
      int wrong = 0;
      for (int y = 0; y < size.height; ++y) {
        for (int x = 0; x < size.width; ++x) {
          const int v = f.bytes[f.offset[0] + y * f.stride[0] + x];
          wrong += static_cast<int>(out.at(x, y)) != (limited ? expanded(v) : v);
        }
        for (size_t x = size.width; x < out.stride; ++x)
          ASSERT_EQ(out.bytes[y * out.stride + x], GrayImage::kSentinel) << "row " << y;
      }
      EXPECT_EQ(wrong, 0);
    }
  }
}

// Frames read from GPU memory count as device inputs and leave the upload
// mean to the timed frames that were uploaded; every timed frame counts in
// the device time.
TEST(Stats, UploadMeanIsOverUploadedFramesOnly) {
  StatsAccumulator stats;
  stats.count(false, false, false, false);
  stats.add_times(10, 40, 6, false, false);
  stats.count(false, false, true, false);
  stats.add_times(20, 0, 8, true, false);
  stats.count(true, false, false, false);
  stats.add_times(30, 60, 10, false, false);
  const TimingStats s = stats.get();
  EXPECT_EQ(s.frames, 3u);
  EXPECT_EQ(s.timed_frames, 3u);
  EXPECT_EQ(s.device_inputs, 1u);
  EXPECT_EQ(s.staged_inputs, 1u);
  EXPECT_DOUBLE_EQ(s.upload_us_mean, 50);
  EXPECT_DOUBLE_EQ(s.device_us_mean, 20);
  EXPECT_DOUBLE_EQ(s.download_us_mean, 8);
  EXPECT_DOUBLE_EQ(s.device_us_min, 10);
  EXPECT_DOUBLE_EQ(s.device_us_max, 30);
}

// Frames written into GPU memory count as device outputs and leave the
// download mean to the timed frames that were downloaded.
TEST(Stats, DownloadMeanIsOverDownloadedFramesOnly) {
  StatsAccumulator stats;
  stats.count(false, false, false, false);
  stats.add_times(10, 40, 6, false, false);
  stats.count(false, false, false, true);
  stats.add_times(20, 30, 0, false, true);
  stats.count(false, false, true, true);
  stats.add_times(30, 0, 0, true, true);
  stats.count(false, false, false, false);
  stats.add_times(40, 50, 12, false, false);
  const TimingStats s = stats.get();
  EXPECT_EQ(s.frames, 4u);
  EXPECT_EQ(s.device_outputs, 2u);
  EXPECT_EQ(s.device_inputs, 1u);
  EXPECT_DOUBLE_EQ(s.download_us_mean, 9);
  EXPECT_DOUBLE_EQ(s.upload_us_mean, 40);
  EXPECT_DOUBLE_EQ(s.device_us_mean, 25);
}

// Frames counted without times (the CUDA backend times one in 16) add to
// the counts and leave every time to the timed frames.
TEST(Stats, TimesAreOverTimedFramesOnly) {
  StatsAccumulator stats;
  stats.count(false, true, false, false);
  stats.add_times(10, 40, 6, false, false);
  stats.count(true, false, false, false);
  stats.count(false, false, true, true);
  stats.count(false, false, false, false);
  stats.add_times(30, 20, 10, false, false);
  const TimingStats s = stats.get();
  EXPECT_EQ(s.frames, 4u);
  EXPECT_EQ(s.timed_frames, 2u);
  EXPECT_EQ(s.staged_inputs, 1u);
  EXPECT_EQ(s.staged_outputs, 1u);
  EXPECT_EQ(s.device_inputs, 1u);
  EXPECT_EQ(s.device_outputs, 1u);
  EXPECT_DOUBLE_EQ(s.device_us_mean, 20);
  EXPECT_DOUBLE_EQ(s.device_us_min, 10);
  EXPECT_DOUBLE_EQ(s.device_us_max, 30);
  EXPECT_DOUBLE_EQ(s.upload_us_mean, 30);
  EXPECT_DOUBLE_EQ(s.download_us_mean, 8);
}

// The CPU backend keeps frames in flight as the CUDA backend does (the same
// max-inflight meaning), in host memory alone.
TEST(CpuBackend, FramesInFlightAsOnCudaAndNoPinnedMemory) {
  const BackendNeeds needs = make_cpu_backend()->needs();
  EXPECT_EQ(needs.auto_in_flight, 4);
  EXPECT_EQ(needs.max_in_flight, 16);
  EXPECT_FALSE(needs.pinned_host_memory);
  EXPECT_FALSE(needs.reads_device_memory);
  EXPECT_FALSE(needs.writes_device_memory);
}

// Frames submitted up to max_in_flight complete later, in order, each
// equal to convert_cpu's result; one more is refused until the oldest is
// finished.
TEST(CpuBackend, FramesCompleteInOrderAsConvertedAlone) {
  constexpr int kInFlight = 5;
  const Weights w = standard_weights(Matrix::BT601);
  std::vector<TestFrame> frames;
  std::vector<GrayImage> expected, out;
  for (int i = 0; i < 3 * kInFlight; ++i) {
    frames.push_back(random_frame(PixelLayout::RGB, 641, 481));
    expected.emplace_back(641, 481, 7);
    out.emplace_back(641, 481, 7);
    convert_cpu(frames[i].conversion(8), frames[i].view(), expected[i].frame(), w, 1);
  }
  auto backend = make_cpu_backend();
  std::string error;
  Conversion c = frames[0].conversion(8);
  c.max_in_flight = kInFlight;
  ASSERT_TRUE(backend->configure(c, &error)) << error;
  size_t submitted = 0, finished = 0;
  for (; submitted < static_cast<size_t>(kInFlight); ++submitted)
    ASSERT_TRUE(backend->submit(frames[submitted].view(), out[submitted].frame(), w, &error));
  EXPECT_EQ(backend->in_flight(), kInFlight);
  EXPECT_FALSE(backend->submit(frames[submitted].view(), out[submitted].frame(), w, &error));
  EXPECT_EQ(error, "too many frames in flight");
  while (finished < frames.size()) {
    ASSERT_TRUE(backend->finish_oldest(&error)) << error;
    EXPECT_TRUE(same_pixels(out[finished], expected[finished])) << "frame " << finished;
    ++finished;
    if (submitted == frames.size()) continue;
    ASSERT_TRUE(backend->submit(frames[submitted].view(), out[submitted].frame(), w, &error));
    ++submitted;
  }
  EXPECT_EQ(backend->in_flight(), 0);
  EXPECT_FALSE(backend->finish_oldest(&error));
  EXPECT_EQ(error, "no frame in flight");
  EXPECT_EQ(backend->stats().frames, frames.size());
}

// discard_all forgets what is in flight once the worker let go of it: the
// backend then takes a full max_in_flight again, and a frame started before
// is either untouched or whole, never half written.
TEST(CpuBackend, DiscardAllLetsGoAndStartsAfresh) {
  const Weights w = standard_weights(Matrix::BT709);
  const TestFrame f = random_frame(PixelLayout::BGRx, 1280, 720);
  GrayImage expected(f.width, f.height);
  convert_cpu(f.conversion(8), f.view(), expected.frame(), w, 1);
  auto backend = make_cpu_backend();
  std::string error;
  Conversion c = f.conversion(8);
  c.max_in_flight = 16;
  ASSERT_TRUE(backend->configure(c, &error)) << error;
  std::vector<GrayImage> out(16, GrayImage(f.width, f.height));
  for (int round = 0; round < 3; ++round) {
    for (GrayImage &o : out) std::fill(o.bytes.begin(), o.bytes.end(), 0);
    for (GrayImage &o : out) ASSERT_TRUE(backend->submit(f.view(), o.frame(), w, &error)) << error;
    backend->discard_all();
    EXPECT_EQ(backend->in_flight(), 0);
    for (size_t i = 0; i < out.size(); ++i) {
      const bool untouched =
          std::all_of(out[i].bytes.begin(), out[i].bytes.end(), [](uint8_t b) { return b == 0; });
      EXPECT_TRUE(untouched || same_pixels(out[i], expected))
          << "round " << round << " frame " << i;
    }
  }
}

// ------------------------------------------------ Bayer: the CPU's row passes

// The CPU demosaicks a row at a time (bayer.h's passes over whole rows);
// every pixel must equal bayer_colour, which the CUDA kernel runs pixel by
// pixel: every phase of 8-bit and of 16-bit (both endiannesses, samples of
// 10 to 16 bits), every size up to 12x8 (narrow rows and short frames take
// the edge rules everywhere) and a few large ones, GRAY8 and GRAY16.
TEST(Bayer, RowPassesEqualPixelByPixel) {
  std::vector<Size> sizes = {{641, 481}, {4097, 3}, {1920, 1080}};
  for (int w = 1; w <= 12; ++w)
    for (int h = 1; h <= 8; ++h) sizes.push_back({w, h});
  const Weights wt = standard_weights(Matrix::BT709);
  for (PixelLayout layout : every_layout()) {
    if (layout_info(layout).family != LayoutFamily::Bayer) continue;
    for (const Size &size : sizes) {
      const TestFrame f = random_frame(layout, size.width, size.height);
      const MosaicRows m{f.bytes.data() + f.offset[0], f.stride[0], size.width, size.height};
      for (int depth : {8, 16}) {
        SCOPED_TRACE(std::string(layout_info(layout).name) + " " + std::to_string(size.width) +
                     "x" + std::to_string(size.height) + " GRAY" + std::to_string(depth) +
                     " sample bits " + std::to_string(f.sample_bits));
        GrayImage cpu(size.width, size.height, 0, depth);
        convert_cpu(f.conversion(depth), f.view(), cpu.frame(), wt);
        int wrong = 0;
        dispatch_layout(layout, [&](auto l) {
          using L = decltype(l);
          if constexpr (L::kFamily == LayoutFamily::Bayer)
            for (int y = 0; y < size.height; ++y)
              for (int x = 0; x < size.width; ++x) {
                const Rgb c = bayer_colour<L>(m, x, y, f.sample_bits);
                const uint32_t g16 = rgb_gray16<L::kDepth>(c.r, c.g, c.b, wt);
                const uint32_t g8 = L::kDepth == 8 ? luma(c.r, c.g, c.b, wt) : reduce8(g16);
                wrong += cpu.at(x, y) != (depth == 16 ? g16 : g8);
              }
        });
        EXPECT_EQ(wrong, 0);
      }
    }
  }
}

// The CUDA kernel demosaicks a run of 8 pixels a thread from one window of
// samples a row (bayer_colours); every pixel of a run, at every start
// column, including runs that cross the row's end, equals the pixel alone
// (bayer_colour): every Bayer layout, widths 1 to 20 and a few large ones.
TEST(Bayer, RunsEqualPixelByPixel) {
  std::vector<Size> sizes = {{641, 5}, {4097, 3}};
  for (int w = 1; w <= 20; ++w) sizes.push_back({w, 1 + w % 6});
  for (PixelLayout layout : every_layout()) {
    if (layout_info(layout).family != LayoutFamily::Bayer) continue;
    for (const Size &size : sizes) {
      SCOPED_TRACE(std::string(layout_info(layout).name) + " " + std::to_string(size.width) + "x" +
                   std::to_string(size.height));
      const TestFrame f = random_frame(layout, size.width, size.height);
      const MosaicRows m{f.bytes.data() + f.offset[0], f.stride[0], size.width, size.height};
      int wrong = 0;
      dispatch_layout(layout, [&](auto l) {
        using L = decltype(l);
        if constexpr (L::kFamily == LayoutFamily::Bayer)
          for (int y = 0; y < size.height; ++y)
            for (int x0 = 0; x0 < size.width; ++x0) {
              Rgb run[8];
              bayer_colours<L, 8>(m, x0, y, f.sample_bits, run);
              for (int k = 0; k < 8 && x0 + k < size.width; ++k) {
                const Rgb one = bayer_colour<L>(m, x0 + k, y, f.sample_bits);
                wrong += run[k].r != one.r || run[k].g != one.g || run[k].b != one.b;
              }
            }
      });
      EXPECT_EQ(wrong, 0);
    }
  }
}

// The scale of 16-bit Bayer colours, for every code at every sample width:
// min(65535, floor(c * 65535 / 2^bits)), bayer2rgb's RGBA64 output.
TEST(Bayer, DeepColoursScaleAsBayer2rgb) {
  for (int bits : {10, 12, 14, 16}) {
    int wrong = 0;
    for (uint32_t c = 0; c <= 65535; ++c) {
      const uint64_t expected = std::min<uint64_t>(65535, uint64_t{c} * 65535 / (1u << bits));
      wrong += deep_bayer_to16(c, bits) != expected;
    }
    EXPECT_EQ(wrong, 0) << bits << " bits";
  }
  EXPECT_EQ(deep_bayer_to16(65535, 0), deep_bayer_to16(65535, 16)) << "0 bits means 16";
}

// The roundings by a double reciprocal (QuotientRounder, and the CPU's
// DoubleRounder on sums held in doubles) equal the integer division, at
// exact multiples (where a reciprocal alone falls short) and halves, for
// denominators up to the largest a conversion has (2^30) and sums up to
// 65535 times them, the largest quotients among them.
TEST(Resample, QuotientRounderEqualsTheDivision) {
  std::vector<uint64_t> divisors = {1, 2, 3, 257, 65535, 1u << 28, (1u << 30) - 1, 1u << 30};
  for (int i = 0; i < 200; ++i) divisors.push_back(random_int(1, 1 << 30));
  for (uint64_t d : divisors) {
    const QuotientRounder round(d);
    const DoubleRounder round_double(d);
    for (int i = 0; i < 2000; ++i) {
      const uint64_t q = static_cast<uint64_t>(i < 10 ? 65535 - i : random_int(0, 65535));
      for (uint64_t sum : {q * d, q * d + d / 2, q * d + (d - 1) / 2, q * d + d - 1,
                           q * d + (d + 1) / 2, q * d - 1, q * d - d / 2, q * d - (d + 1) / 2,
                           q * d + static_cast<uint64_t>(random_int(0, 1 << 30)) % d})
        if (sum <= 65535 * d) {
          ASSERT_EQ(round(sum), round_quotient(sum, d)) << sum << " / " << d;
          ASSERT_EQ(round_double(static_cast<double>(sum)), round_quotient(sum, d))
              << sum << " / " << d << " in a double";
        }
    }
  }
}
