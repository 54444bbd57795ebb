// SPDX-License-Identifier: LGPL-2.1-or-later
// Helpers shared by the tests: random frames with padded strides, and an
// evaluation of the documented formula that shares no code with kernels/.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cudagray/backend.h"
#include "cudagray/conversion.h"
#include "cudagray/convert_cpu.h"
#include "cudagray/device.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"
#include "frames.h"

namespace cudagray::test {

// One generator per test binary, seeded freshly each run unless
// CUDAGRAY_TEST_SEED is set; the seed is printed so a failure can be replayed.
inline std::mt19937 &rng() {
  static std::mt19937 generator = [] {
    const char *fixed = std::getenv("CUDAGRAY_TEST_SEED");
    const unsigned seed =
        fixed ? static_cast<unsigned>(std::strtoul(fixed, nullptr, 10)) : std::random_device{}();
    std::printf("random seed: %u (set CUDAGRAY_TEST_SEED=%u to replay)\n", seed, seed);
    return std::mt19937(seed);
  }();
  return generator;
}

inline int random_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng()); }

// Random bytes from the harness's generator, seeded from rng() so that
// CUDAGRAY_TEST_SEED replays them.
inline void fill_random(std::vector<uint8_t> &bytes) {
  harness::fill_random(bytes.data(), bytes.size(), rng()());
}

struct Size {
  int width, height;
};
// The sizes every format is tested at: degenerate, odd, full HD, very wide.
inline const std::vector<Size> kSizes = {{1, 1}, {2, 2}, {641, 481}, {1920, 1080}, {4097, 3}};

// A named way of choosing weights, as a user of the element would.
struct WeightChoice {
  std::string name;
  Matrix matrix;
  Coefficients k;  // for custom; the standard ones are filled from the matrix
};
inline const std::vector<WeightChoice> kWeightChoices = {
    {"bt601", Matrix::BT601, {0.299, 0.587, 0.114}},
    {"bt709", Matrix::BT709, {0.2126, 0.7152, 0.0722}},
    {"bt2020", Matrix::BT2020, {0.2627, 0.6780, 0.0593}},
    {"custom", Matrix::Custom, {0.21, 0.72, 0.07}},
    {"custom_saturating", Matrix::Custom, {0.5, 0.9, 0.3}},  // sums past 1: exercises the clamp
};

inline Weights weights_of(const WeightChoice &c) {
  return c.matrix == Matrix::Custom ? custom_weights(c.k) : standard_weights(c.matrix);
}

// A frame in one host allocation; each plane starts after a random gap and
// its rows carry random padding. Every byte, padding included, is random.
struct TestFrame {
  PixelLayout layout;
  int width, height;
  std::vector<uint8_t> bytes;
  size_t offset[3] = {0, 0, 0};
  size_t stride[3] = {0, 0, 0};
  int planes = 1;
  int sample_bits = 0;  // 16-bit Bayer: Conversion::sample_bits

  // The frame converted whole at its own size to gray of depth bits.
  Conversion conversion(int depth = 8, bool limited = false) const {
    Conversion c = same_size_conversion(layout, width, height, depth);
    c.sample_bits = sample_bits;
    c.limited_range = limited;
    return c;
  }
  InputFrame view(const uint8_t *base) const {
    InputFrame f{};
    for (int p = 0; p < planes; ++p) {
      f.plane[p] = base + offset[p];
      f.stride[p] = stride[p];
    }
    return f;
  }
  InputFrame view() const { return view(bytes.data()); }
};

// How a test frame lays out its rows: tight, with random padding anywhere,
// or padded so that every row starts 16-byte aligned (the CUDA kernels' wide
// path).
enum class Rows { Tight, Padded, Aligned16 };

inline TestFrame random_frame(PixelLayout layout, int width, int height, Rows rows = Rows::Padded) {
  const LayoutInfo &info = layout_info(layout);
  TestFrame f{layout, width, height, {}};
  f.planes = info.planes;
  const size_t row_bytes = info.row_bytes(width);
  size_t end = 0;
  if (info.tiled()) {  // one plane of as many tiles as cover it, or (padded) more
    const size_t tight = info.tight_stride(width, height);
    const bool more = rows == Rows::Padded;
    f.offset[0] = rows == Rows::Aligned16 ? 16 * random_int(0, 2) : random_int(0, 40);
    f.stride[0] =
        tile_stride(x_tiles_of(tight) + (more ? random_int(0, 2) : 0) * info.x_tiles_multiple,
                    y_tiles_of(tight) + (more ? random_int(0, 1) : 0));
    f.bytes.resize(f.offset[0] + info.plane_bytes(width, height, f.stride[0]));
    fill_random(f.bytes);
    return f;
  }
  for (int p = 0; p < info.planes; ++p) {
    switch (rows) {
      case Rows::Tight:
        f.offset[p] = end;
        f.stride[p] = row_bytes;
        break;
      case Rows::Padded:
        f.offset[p] = end + random_int(0, 40);
        f.stride[p] = row_bytes + random_int(0, 70);
        break;
      case Rows::Aligned16:
        f.offset[p] = (end + 15) / 16 * 16 + 16 * random_int(0, 2);
        f.stride[p] = (row_bytes + 15) / 16 * 16 + 16 * random_int(0, 2);
        break;
    }
    end = f.offset[p] + f.stride[p] * height;
  }
  f.bytes.resize(end);
  fill_random(f.bytes);
  if (info.family == LayoutFamily::Bayer && info.depth == 16)
    f.sample_bits = 10 + 2 * random_int(0, 3);
  return f;
}

// The channel bytes of pixel (x, y), found from the format's name alone: a
// packed "xBGR" keeps R at byte 3; a planar "GBR" keeps R in plane 2.
inline void pixel_rgb(const TestFrame &f, int x, int y, int rgb[3]) {
  const std::string name = layout_info(f.layout).name;
  const bool planar = f.planes == 3;
  const int bpp = planar ? 1 : static_cast<int>(name.size() == 3 ? 3 : 4);
  const char channels[3] = {'R', 'G', 'B'};
  for (int c = 0; c < 3; ++c) {
    const int at = static_cast<int>(name.find(channels[c]));
    const int plane = planar ? at : 0;
    const int byte = planar ? 0 : at;
    rgb[c] = f.bytes[f.offset[plane] + y * f.stride[plane] + x * bpp + byte];
  }
}

// The documented formula in double precision, from the coefficients.
// depth 16: the same weights on 16-bit codes (257 times the 8-bit ones),
// min(65535, .) (weights.h); every term an integer below 2^53, so exact.
inline int formula_y(const WeightChoice &c, const int rgb[3], int depth = 8) {
  Coefficients k = c.k;
  double wr = std::round(k.r * 65536.0), wb = std::round(k.b * 65536.0);
  double wg = c.matrix == Matrix::Custom ? std::round(k.g * 65536.0) : 65536.0 - wr - wb;
  const double scale = depth == 16 ? 257.0 : 1.0;
  const double y =
      std::floor((scale * (wr * rgb[0] + wg * rgb[1] + wb * rgb[2]) + 32768.0) / 65536.0);
  return static_cast<int>(std::min(depth == 16 ? 65535.0 : 255.0, y));
}

// Gray of depth bits (GRAY8, or GRAY16 in native-endian words) with rows of
// `stride` bytes; padding holds a sentinel so writes past the row show up.
struct GrayImage {
  int width, height;
  size_t stride;
  int depth;
  std::vector<uint8_t> bytes;
  static constexpr uint8_t kSentinel = 0xA5;
  GrayImage(int w, int h, size_t pad = 0, int bits = 8)
      : width(w),
        height(h),
        stride(w * (bits / 8) + pad),
        depth(bits),
        bytes(stride * h, kSentinel) {}
  GrayFrame frame() { return GrayFrame{bytes.data(), stride}; }
  size_t row_bytes() const { return static_cast<size_t>(width) * (depth / 8); }
  unsigned at(int x, int y) const {
    const uint8_t *p = &bytes[y * stride + x * (depth / 8)];
    if (depth == 8) return *p;
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
};

// Compares two gray images; reports the first few differing pixels.
inline ::testing::AssertionResult same_pixels(const GrayImage &a, const GrayImage &b) {
  int bad = 0;
  std::string first;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width; ++x)
      if (a.at(x, y) != b.at(x, y) && bad++ < 5)
        first += " (" + std::to_string(x) + "," + std::to_string(y) +
                 "): " + std::to_string(a.at(x, y)) + " vs " + std::to_string(b.at(x, y));
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " pixels differ, first:" << first;
}

// Whether the padding after each row still holds the sentinel.
inline ::testing::AssertionResult padding_untouched(const GrayImage &g) {
  for (int y = 0; y < g.height; ++y)
    for (size_t x = g.row_bytes(); x < g.stride; ++x)
      if (g.bytes[y * g.stride + x] != GrayImage::kSentinel)
        return ::testing::AssertionFailure() << "row " << y << " written at byte " << x;
  return ::testing::AssertionSuccess();
}

// Every layout the kernels read.
inline std::vector<PixelLayout> every_layout() {
  std::vector<PixelLayout> all;
  for (int i = 0; i < kLayoutCount; ++i) all.push_back(static_cast<PixelLayout>(i));
  return all;
}

// Runs body on a thread of its own and waits for it to return, on a
// condition, at most `seconds` (a bound far past any healthy run). A body
// still running then has hung, and the test fails here, saying what hung.
// A hung thread can be neither stopped nor left behind (it holds the
// element's locks and this test's stack), so the process then ends with
// status 1, saying so: the tests after this one do not run, and the run
// fails even where its failures are only counted from the report.
inline void must_return_within(int seconds, const std::string &what,
                               const std::function<void()> &body) {
  struct Done {
    std::mutex lock;
    std::condition_variable changed;
    bool returned = false;
  };
  auto done = std::make_shared<Done>();
  std::thread runner([done, &body] {
    body();
    std::lock_guard<std::mutex> hold(done->lock);
    done->returned = true;
    done->changed.notify_all();
  });
  {
    std::unique_lock<std::mutex> hold(done->lock);
    if (done->changed.wait_for(hold, std::chrono::seconds(seconds),
                               [&] { return done->returned; })) {
      hold.unlock();
      runner.join();
      return;
    }
  }
  ADD_FAILURE() << what << ": still running after " << seconds << " s (hung)";
  const ::testing::TestInfo *test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("[  FAILED  ] %s.%s: %s hung; the process ends here, so no later test runs\n",
              test ? test->test_suite_name() : "?", test ? test->name() : "?", what.c_str());
  std::fflush(nullptr);
  std::_Exit(1);
}

// Why CUDA tests cannot run here, or "" when a usable GPU exists.
inline std::string no_gpu_reason() {
  std::string reason;
  return cuda_device_count(&reason) > 0 ? "" : "no usable CUDA device: " + reason;
}
#define SKIP_WITHOUT_GPU()                                             \
  do {                                                                 \
    const std::string why_skipped = ::cudagray::test::no_gpu_reason(); \
    if (!why_skipped.empty()) GTEST_SKIP() << why_skipped;             \
  } while (0)

// The CPU backend's result, the reference the CUDA tests compare with.
inline GrayImage cpu_reference(const TestFrame &f, const WeightChoice &c, int depth = 8,
                               bool limited = false) {
  GrayImage out(f.width, f.height, 0, depth);
  convert_cpu(f.conversion(depth, limited), f.view(), out.frame(), weights_of(c));
  return out;
}

}  // namespace cudagray::test
