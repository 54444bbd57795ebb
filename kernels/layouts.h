// SPDX-License-Identifier: LGPL-2.1-or-later
// Compile-time pixel layouts shared by the CPU and CUDA kernels, and the one
// per-pixel formula. Plain C++17 that nvcc and g++ both compile.
#pragma once

#include <cstdint>

#include "cudagray/frame.h"
#include "cudagray/weights.h"

#if defined(__CUDACC__)
#define CUDAGRAY_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CUDAGRAY_HOST_DEVICE inline
#endif

namespace cudagray {

// One pixel: the documented Q16 formula.
CUDAGRAY_HOST_DEVICE uint8_t luma(uint32_t r, uint32_t g, uint32_t b, const Weights &w) {
  const uint32_t y = (w.r * r + w.g * g + w.b * b + 32768u) >> 16;
  return static_cast<uint8_t>(y > 255u ? 255u : y);
}

// Limited-range luma (16..235) to full range, exactly as documented in weights.h:
// clamp(round((Y' - 16) * 255 / 219), 0, 255). A multiply and shift in 16-bit
// lanes instead of the division, so that the compiler vectorises the CPU loop
// (plain SSE2 has pmulhuw, no division): 26 * 2935 / 65536 is 255/219 to six
// digits, and the three constants, found by searching all 16-bit ones, give
// the division's result for each of the 256 inputs (the tests check every one).
CUDAGRAY_HOST_DEVICE uint8_t expand_limited(uint8_t y) {
  const uint8_t clamped = y < 16 ? 16 : y > 235 ? 235 : y;
  const uint16_t scaled = static_cast<uint16_t>((clamped - 16) * 26 + 11);  // at most 5705
  return static_cast<uint8_t>((uint32_t{scaled} * 2935u) >> 16);
}

// Bpp bytes per pixel in one plane; R, G, B are byte offsets in the pixel.
template <int Bpp, int R, int G, int B>
struct PackedLayout {
  static constexpr int bytes_per_pixel = Bpp, r = R, g = G, b = B;
};

// One plane per channel; R, G, B are plane indices.
template <int R, int G, int B>
struct PlanarLayout {
  static constexpr int r = R, g = G, b = B;
};

// YUV's luma plane: plane 0, one byte per pixel.
struct LumaLayout {};

// Calls f with the layout's compile-time description; the single table that
// says where each format keeps its channels.
template <class F>
decltype(auto) dispatch_layout(PixelLayout layout, F &&f) {
  switch (layout) {
    case PixelLayout::RGB: return f(PackedLayout<3, 0, 1, 2>{});
    case PixelLayout::BGR: return f(PackedLayout<3, 2, 1, 0>{});
    case PixelLayout::RGBA:
    case PixelLayout::RGBx: return f(PackedLayout<4, 0, 1, 2>{});
    case PixelLayout::BGRA:
    case PixelLayout::BGRx: return f(PackedLayout<4, 2, 1, 0>{});
    case PixelLayout::xRGB:
    case PixelLayout::ARGB: return f(PackedLayout<4, 1, 2, 3>{});
    case PixelLayout::xBGR:
    case PixelLayout::ABGR: return f(PackedLayout<4, 3, 2, 1>{});
    case PixelLayout::RGBP: return f(PlanarLayout<0, 1, 2>{});
    case PixelLayout::BGRP: return f(PlanarLayout<2, 1, 0>{});
    case PixelLayout::GBR: return f(PlanarLayout<2, 0, 1>{});
    case PixelLayout::Luma: return f(LumaLayout{});
  }
  return f(PackedLayout<3, 0, 1, 2>{});  // unreachable: every enumerator is handled
}

}  // namespace cudagray
