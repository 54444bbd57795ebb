// SPDX-License-Identifier: LGPL-2.1-or-later
// The documented formulas (docs/formats.md), written again for the tests
// without kernels/: the Q16 RGB formula at 16 bits and GRAY8 from it,
// bayer2rgb's demosaic, and each resampling method over a frame's GRAY16.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace cudagray::test {

// A d-bit code to 16 bits by bit replication: its bits written again and
// again from the top, cut at 16 (v << (16 - d) | v >> (2d - 16) for d >= 8).
inline uint32_t replicate16(uint32_t v, int depth) {
  uint32_t bits = 0;
  int filled = 0;
  for (; filled < 16; filled += depth) bits = bits << depth | v;
  return bits >> (filled - 16);
}

// Q16 weights from the coefficients: wR = round(kR * 65536), wB likewise;
// wG = 65536 - wR - wB for the standard matrices, round(kG * 65536) custom.
struct Q16 {
  uint64_t r, g, b;
};

inline Q16 q16_of(const WeightChoice &c) {
  const uint64_t r = std::llround(c.k.r * 65536.0), b = std::llround(c.k.b * 65536.0);
  const uint64_t g = c.matrix == Matrix::Custom ? std::llround(c.k.g * 65536.0) : 65536 - r - b;
  return {r, g, b};
}

// Channels of different depths (RGB16: 5, 6 and 5 bits).
inline uint32_t rgb_to_16(const uint32_t code[3], const int depth[3], const Q16 &w) {
  const uint64_t sum = w.r * replicate16(code[0], depth[0]) + w.g * replicate16(code[1], depth[1]) +
                       w.b * replicate16(code[2], depth[2]) + 32768;
  return static_cast<uint32_t>(std::min<uint64_t>(65535, sum >> 16));
}

inline uint32_t rgb_to_16(uint32_t r, uint32_t g, uint32_t b, int depth, const Q16 &w) {
  const uint32_t code[3] = {r, g, b};
  const int depths[3] = {depth, depth, depth};
  return rgb_to_16(code, depths, w);
}

inline uint32_t gray8_of(uint32_t g16) { return (g16 + 128) / 257; }

// bayer2rgb's picture as its source describes it, in its own two passes
// (independent of kernels/bayer.h, which works pixel by pixel): each row is
// split into E (the colour of its even columns) and O (of its odd ones),
// each the sample where the column has it, else the average of its left and
// right neighbours, with columns 0, width - 2 and width - 1 taking the one
// neighbour on their side; then each pixel takes its own colour from its
// row and the others from the rows above and below (row 0: row 1 above; the
// last row: row height - 4 below, or row 1 at height 3), all with
// avg(a, b) = (a + b + 1) >> 1. Phases are BGGR with the row parity flipped
// (grbg, gbrg) and R and B swapped (rggb, gbrg). R, G, B per pixel. Where
// bayer2rgb itself leaves a pixel undefined (test_formats'
// bayer2rgb_defined) these are cudagray's documented values: a missing
// neighbour is taken as at the other edges.
inline std::vector<uint32_t> bayer2rgb_model(const std::vector<uint32_t> &samples, int width,
                                             int height, const std::string &phase) {
  auto avg = [](uint32_t a, uint32_t b) { return (a + b + 1) >> 1; };
  std::vector<uint32_t> even(static_cast<size_t>(width) * height),
      odd(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y) {
    const uint32_t *s = &samples[static_cast<size_t>(y) * width];
    uint32_t *e = &even[static_cast<size_t>(y) * width], *o = &odd[static_cast<size_t>(y) * width];
    auto at = [&](int x) { return s[std::clamp(x, 0, width - 1)]; };
    for (int x = 0; x < width; ++x) {
      if (x % 2 == 0) {
        e[x] = at(x);
        o[x] = avg(at(x - 1), at(x + 1));
      } else {
        o[x] = at(x);
        e[x] = avg(at(x - 1), at(x + 1));
      }
    }
    if (width >= 2) o[0] = at(1);
    for (int x = std::max(0, width - 2); x < width; ++x) {
      if (x % 2 == 0)
        o[x] = at(x - 1);
      else
        e[x] = at(x - 1);
    }
  }
  const bool flip = phase == "grbg" || phase == "gbrg", swap = phase == "rggb" || phase == "gbrg";
  std::vector<uint32_t> rgb(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    const int above = y == 0 ? std::min(1, height - 1) : y - 1;
    const int below = y < height - 1 ? y + 1 : height >= 4 ? height - 4 : height == 3 ? 1 : above;
    for (int x = 0; x < width; ++x) {
      auto E = [&](int row) { return even[static_cast<size_t>(row) * width + x]; };
      auto O = [&](int row) { return odd[static_cast<size_t>(row) * width + x]; };
      uint32_t r, g, b;
      if ((y + flip) % 2 == 0) {  // a B G row of BGGR
        b = E(y);
        r = avg(O(above), O(below));
        g = x % 2 == 0 ? avg(avg(E(above), E(below)), O(y)) : O(y);
      } else {  // a G R row
        r = O(y);
        b = avg(E(above), E(below));
        g = x % 2 == 0 ? E(y) : avg(avg(O(above), O(below)), E(y));
      }
      if (swap) std::swap(r, b);
      uint32_t *p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = r, p[1] = g, p[2] = b;
    }
  }
  return rgb;
}

// The samples of a mosaic of rows of stride bytes, width a row, each
// sample_bytes bytes (16-bit: little- or big-endian words).
inline std::vector<uint32_t> mosaic_samples(const std::vector<uint8_t> &mosaic, int stride,
                                            int width, int height, int sample_bytes = 1,
                                            bool big_endian = false) {
  std::vector<uint32_t> samples;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const uint8_t *p = &mosaic[static_cast<size_t>(y) * stride + x * sample_bytes];
      samples.push_back(sample_bytes == 1 ? p[0]
                        : big_endian      ? p[0] << 8 | p[1]
                                          : p[0] | p[1] << 8);
    }
  return samples;
}

// n / d rounded half up, for n >= 0 and d > 0.
inline int64_t round_half_up(__int128 n, __int128 d) {
  return static_cast<int64_t>((2 * n + d) / (2 * d));
}

// The two bilinear taps along one axis: pixels i0 and i1 with weights
// (2 out - f) / (2 out) and f / (2 out); clamped at the edges as OpenCV does.
struct LinearTaps {
  int i0, i1;
  int64_t f, d;
};
inline LinearTaps linear_taps(int in, int out, int x) {
  const double s = (x + 0.5) * in / out - 0.5;
  int64_t i0 = static_cast<int64_t>(std::floor(s));
  int64_t f = int64_t{2 * x + 1} * in - out - 2 * int64_t{out} * i0;  // (s - i0) * 2 out
  if (s < 0) i0 = 0, f = 0;
  if (i0 >= in - 1) i0 = in - 1, f = 0;
  return {static_cast<int>(i0), static_cast<int>(std::min<int64_t>(i0 + 1, in - 1)), f, 2 * out};
}

// G of destination pixel (x, y) (from the destination's corner) from the
// source gray g, by the formula of c.method.
inline int64_t reference_g(const GrayImage &g, const Conversion &c, int x, int y) {
  const Rect &s = c.crop, &d = c.dest;
  auto at = [&](int i, int j) -> int64_t { return g.at(s.x + i, s.y + j); };
  switch (c.method) {
    case ScaleMethod::Nearest:
      return at(static_cast<int>(std::floor((x + 0.5) * s.width / d.width)),
                static_cast<int>(std::floor((y + 0.5) * s.height / d.height)));
    case ScaleMethod::Bilinear: {
      const LinearTaps h = linear_taps(s.width, d.width, x), v = linear_taps(s.height, d.height, y);
      const __int128 n = (h.d - h.f) * (v.d - v.f) * at(h.i0, v.i0) +
                         h.f * (v.d - v.f) * at(h.i1, v.i0) + (h.d - h.f) * v.f * at(h.i0, v.i1) +
                         h.f * v.f * at(h.i1, v.i1);
      return round_half_up(n, __int128{h.d} * v.d);
    }
    case ScaleMethod::Area: {
      // each source pixel by the length of its overlap with the footprint
      // [x in / out, (x + 1) in / out), in units of 1 / out
      auto overlaps = [](int in, int out, int x) {
        std::vector<int64_t> length(in);
        for (int i = 0; i < in; ++i)
          length[i] =
              std::max<int64_t>(0, std::min<int64_t>(int64_t{x + 1} * in, int64_t{i + 1} * out) -
                                       std::max<int64_t>(int64_t{x} * in, int64_t{i} * out));
        return length;
      };
      const std::vector<int64_t> h = overlaps(s.width, d.width, x),
                                 v = overlaps(s.height, d.height, y);
      __int128 n = 0;
      for (int j = 0; j < s.height; ++j)
        if (v[j])
          for (int i = 0; i < s.width; ++i) n += __int128{h[i]} * v[j] * at(i, j);
      // the footprint's area is (in_w / out_w) (in_h / out_h)
      return round_half_up(n, int64_t{s.width} * s.height);
    }
  }
  return -1;
}

// What output pixel (x, y) must hold: 0 in the bars, else G, or round(G / 257)
// for GRAY8.
inline int64_t expected_pixel(const GrayImage &g, const Conversion &c, int x, int y) {
  const Rect &d = c.dest;
  if (x < d.x || x >= d.x + d.width || y < d.y || y >= d.y + d.height) return 0;
  const int64_t g16 = reference_g(g, c, x - d.x, y - d.y);
  return c.out_depth == 16 ? g16 : round_half_up(g16, 257);
}

}  // namespace cudagray::test
