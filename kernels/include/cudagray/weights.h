// SPDX-License-Identifier: LGPL-2.1-or-later
// The luma weights and the one formula every backend computes exactly:
//   weights in Q16 fixed point
//     wR = round(kR * 65536), wB = round(kB * 65536)
//     wG = 65536 - wR - wB   for the standard matrices (so white stays 255)
//     wG = round(kG * 65536) for custom weights
//   Y = min(255, (wR*R + wG*G + wB*B + 32768) >> 16)
// round() is round-half-away-from-zero; arithmetic is unsigned 32-bit.
//
// YUV input (Luma layout): gray is the luma plane. Full range: copied.
// Limited range: Y = clamp(round((Y' - 16) * 255 / 219), 0, 255), which is
// (2 * 255 * (Y' - 16) + 219) / 438 in integers for 16 < Y' < 235; computed
// with a multiply and shift that gives the same for every Y'.
#pragma once

#include <cstdint>

namespace cudagray {

enum class Matrix { BT601, BT709, BT2020, Custom };

// Luma coefficients as given (kR, kG, kB), before quantisation.
struct Coefficients {
  double r, g, b;
};

// Q16 weights actually used by the kernels.
struct Weights {
  uint32_t r, g, b;
};

Coefficients standard_coefficients(Matrix matrix);  // not for Matrix::Custom
Weights standard_weights(Matrix matrix);            // not for Matrix::Custom
// Custom coefficients must be finite and within [0, kMaxCustomCoefficient];
// the bound keeps 255 * (wR + wG + wB) + 32768 inside 32 bits.
constexpr double kMaxCustomCoefficient = 64.0;
Weights custom_weights(const Coefficients &k);

}  // namespace cudagray
