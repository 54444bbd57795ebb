// SPDX-License-Identifier: LGPL-2.1-or-later
// The resampler, shared by the CPU and CUDA kernels so that both compute the
// same integers: which source pixels an output pixel reads and how much each
// weighs, and the one rounding. The source is the crop's gray at 16 bits,
// g(i, j) = each pixel's GRAY16 (the same-size formula, layouts.h), i and j
// counted from the crop's corner; the result is GRAY16, and GRAY8 is
// reduce8 of it (round(G / 257)), so GRAY8 and GRAY16 still agree.
//
// Along each axis, with in the crop's size and out the destination's, the
// output coordinate x (0 <= x < out, from the destination's corner) reads
// taps i with integer weights a(i) over a denominator D:
//   nearest:  i = floor((2x + 1) * in / (2 out)), a = 1, D = 1: the source
//             pixel whose centre is nearest to the output pixel's centre,
//             the right one of two equally near (PIL's and torchvision's
//             nearest-exact; OpenCV's INTER_NEAREST_EXACT, whose 16-bit fixed
//             point differs only within 1/256 pixel of a boundary).
//   bilinear: the sample position s = (x + 0.5) * in / out - 0.5, written as
//             P / (2 out) with P = (2x + 1) * in - out; i0 = floor(s),
//             r = P - 2 out * i0; taps i0 and i0 + 1 with a = 2 out - r and
//             r, D = 2 out. Edges clamp as OpenCV's INTER_LINEAR: s < 0 takes
//             i0 = 0, r = 0; i0 >= in - 1 takes i0 = in - 1, r = 0.
//   area:     the output pixel's footprint [x * in / out, (x + 1) * in / out)
//             in source pixels; a(i) = out * (the length of source pixel i's
//             overlap with it) = min((x + 1) in, (i + 1) out) - max(x in, i out),
//             D = in: the exact mean over the footprint, fractional edges
//             weighed by how much of them it covers. Shrinking, every source
//             pixel counts (no aliasing: OpenCV's INTER_AREA); enlarging, the
//             footprint is less than a pixel and the mean is over the one or
//             two pixels it touches, which is what OpenCV's INTER_AREA does
//             when enlarging (a bilinear whose weights are the overlaps).
// Then, exactly in integers (64 bits), rounding half up once:
//   G(x, y) = floor((sum_j ay(j) * sum_i ax(i) * g(i, j) + Dx Dy / 2) / (Dx Dy))
// At equal sizes every method gives g itself.
#pragma once

#include <cstdint>

#include "cudagray/conversion.h"
#include "layouts.h"

namespace cudagray {

// The taps of one output coordinate along one axis: count source pixels from
// first (crop coordinates), tap k weighing weight(k) / denominator.
struct AxisTaps {
  int first, count;
  uint32_t denominator;
  // area: source pixel i covers [i * unit, (i + 1) * unit), the footprint
  // [lo, hi); nearest and bilinear: the weights of taps 0 and 1 are lo, hi
  bool area;
  int lo, hi, unit;
  CUDAGRAY_HOST_DEVICE uint32_t weight(int k) const {
    if (!area) return static_cast<uint32_t>(k == 0 ? lo : hi);
    const int i = first + k, start = i * unit, end = start + unit;
    return static_cast<uint32_t>((hi < end ? hi : end) - (lo > start ? lo : start));
  }
};

// The taps of output coordinate x of out along an axis of in source pixels
// (1 <= in, out <= kMaxDimension: every product stays below 2^30).
CUDAGRAY_HOST_DEVICE AxisTaps axis_taps(ScaleMethod method, int in, int out, int x) {
  if (method == ScaleMethod::Area) {
    const int lo = x * in, hi = lo + in;
    const int first = lo / out;
    return {first, (hi - 1) / out - first + 1, static_cast<uint32_t>(in), true, lo, hi, out};
  }
  if (method == ScaleMethod::Nearest) return {(2 * x + 1) * in / (2 * out), 1, 1, false, 1, 0, 0};
  const int p = (2 * x + 1) * in - out, d = 2 * out;
  int first = p > 0 ? p / d : 0, r = p > 0 ? p % d : 0;
  if (first >= in - 1) first = in - 1, r = 0;
  return {first, r ? 2 : 1, static_cast<uint32_t>(d), false, d - r, r, 0};
}

// The one rounding: floor((sum + d / 2) / d), for sum < 2^47 and d < 2^31.
CUDAGRAY_HOST_DEVICE uint32_t round_quotient(uint64_t sum, uint64_t d) {
  return static_cast<uint32_t>((sum + d / 2) / d);
}

// round_quotient by one constant d, without a 64-bit division: the double
// reciprocal's quotient is within 2^-35 of the true one (sum < 2^48, so
// below 2^17 and two roundings of 2^-53), and one step either way makes
// it exact. For the CPU's loops and the CUDA area kernel, where a division
// would cost more than the rest of the pixel.
struct QuotientRounder {
  uint64_t d;
  double inverse;
  CUDAGRAY_HOST_DEVICE explicit QuotientRounder(uint64_t divisor)
      : d(divisor), inverse(1.0 / static_cast<double>(divisor)) {}
  CUDAGRAY_HOST_DEVICE uint32_t operator()(uint64_t sum) const {
    const uint64_t n = sum + d / 2;
    auto q = static_cast<uint64_t>(static_cast<double>(n) * inverse);
    if ((q + 1) * d <= n)
      ++q;
    else if (q * d > n)
      --q;
    return static_cast<uint32_t>(q);
  }
};

// round_quotient by one constant d <= 2^30 of a sum held in a double (exact:
// an integer below 2^47), for the CPU's double lanes, without a correction
// step: q = trunc((sum + floor(d / 2) + 1/2) / d). For sum <= 65535 d the
// exact quotient lies at least 1/(2d) >= 2^-31 from the integers around it,
// and the two roundings (of 1/d and of the product, below 2^16) move it by
// less than 2^-36, so truncating gives floor((sum + floor(d / 2)) / d).
struct DoubleRounder {
  double bias, inverse;
  explicit DoubleRounder(uint64_t d)
      : bias(static_cast<double>(d / 2) + 0.5), inverse(1.0 / static_cast<double>(d)) {}
  uint32_t operator()(double sum) const { return static_cast<uint32_t>((sum + bias) * inverse); }
};

// G of the output pixel whose taps are tx and ty, gray(i, j) giving g;
// round is round_quotient by tx.denominator * ty.denominator, which is
// resample_denominator(c) for every pixel of a frame.
template <class Gray16>
CUDAGRAY_HOST_DEVICE uint32_t resample(const AxisTaps &tx, const AxisTaps &ty, const Gray16 &gray,
                                       const QuotientRounder &round) {
  uint64_t sum = 0;
  for (int j = 0; j < ty.count; ++j) {
    uint32_t row = 0;  // at most 65535 * Dx < 2^31
    for (int i = 0; i < tx.count; ++i) row += tx.weight(i) * gray(tx.first + i, ty.first + j);
    sum += uint64_t{row} * ty.weight(j);
  }
  return round(sum);
}

// Dx Dy of conversion c: every method's denominators are the same for
// every output coordinate (2 out for bilinear, 1 for nearest, in for area).
inline uint64_t resample_denominator(const Conversion &c) {
  return uint64_t{axis_taps(c.method, c.crop.width, c.dest.width, 0).denominator} *
         axis_taps(c.method, c.crop.height, c.dest.height, 0).denominator;
}

}  // namespace cudagray
