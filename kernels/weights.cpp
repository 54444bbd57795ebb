// SPDX-License-Identifier: LGPL-2.1-or-later
// The standard matrices' coefficients and their Q16 weights (weights.h has
// the formula).
#include "cudagray/weights.h"

#include <cmath>

namespace cudagray {

Coefficients standard_coefficients(Matrix matrix) {
  switch (matrix) {
    case Matrix::BT709: return {0.2126, 0.7152, 0.0722};
    case Matrix::BT2020: return {0.2627, 0.6780, 0.0593};
    case Matrix::BT601:
    case Matrix::Custom: break;
  }
  return {0.299, 0.587, 0.114};
}

Weights standard_weights(Matrix matrix) {
  const Coefficients k = standard_coefficients(matrix);
  const auto r = static_cast<uint32_t>(std::lround(k.r * 65536.0));
  const auto b = static_cast<uint32_t>(std::lround(k.b * 65536.0));
  return {r, 65536u - r - b, b};
}

Weights custom_weights(const Coefficients &k) {
  return {static_cast<uint32_t>(std::lround(k.r * 65536.0)),
          static_cast<uint32_t>(std::lround(k.g * 65536.0)),
          static_cast<uint32_t>(std::lround(k.b * 65536.0))};
}

}  // namespace cudagray
