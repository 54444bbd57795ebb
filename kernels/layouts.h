// SPDX-License-Identifier: LGPL-2.1-or-later
// Compile-time pixel layouts shared by the CPU and CUDA kernels, and the one
// per-pixel formula (weights.h documents it). Plain C++17 that nvcc and g++
// both compile.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cudagray/conversion.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"

namespace cudagray {

// One input frame as the kernels read it: the Conversion's description of
// what it holds joined to an InputFrame's memory. width and height are the
// pixels converted (a strip's, for a strip).
struct SourceFrame {
  PixelLayout layout;
  int width, height;
  const uint8_t *plane[3];
  size_t stride[3];
  bool limited_range;
  int sample_bits;
};

inline SourceFrame source_frame(const Conversion &c, const InputFrame &in) {
  return {c.layout,
          c.in_width,
          c.in_height,
          {in.plane[0], in.plane[1], in.plane[2]},
          {in.stride[0], in.stride[1], in.stride[2]},
          c.limited_range,
          c.sample_bits};
}

// ------------------------------------------------------------- the formula

// 8-bit RGB to GRAY8: the Q16 formula. It equals round(gray16 / 257) of the
// 16-bit result below for every input (weights.h shows why), in 32 bits.
CUDAGRAY_HOST_DEVICE uint8_t luma(uint32_t r, uint32_t g, uint32_t b, const Weights &w) {
  const uint32_t y = (w.r * r + w.g * g + w.b * b + 32768u) >> 16;
  return static_cast<uint8_t>(y > 255u ? 255u : y);
}

// 8-bit limited-range luma (16..235) to full range, exactly as documented in
// weights.h: clamp(round((Y' - 16) * 255 / 219), 0, 255). A multiply and
// shift in 16-bit lanes instead of the division, so that the compiler
// vectorises the CPU loop (plain SSE2 has pmulhuw, no division): 26 * 2935 /
// 65536 is 255/219 to six digits, and the three constants, found by searching
// all 16-bit ones, give the division's result for each of the 256 inputs (the
// tests check every one).
CUDAGRAY_HOST_DEVICE uint8_t expand_limited(uint8_t y) {
  const uint8_t clamped = y < 16 ? 16 : y > 235 ? 235 : y;
  const uint16_t scaled = static_cast<uint16_t>((clamped - 16) * 26 + 11);  // at most 5705
  return static_cast<uint8_t>((uint32_t{scaled} * 2935u) >> 16);
}

// A Depth-bit code to 16 bits by repeating its bits: v * 65535 / (2^Depth - 1)
// rounded, for Depth 8, 10, 12 and 16 (as GStreamer unpacks deep formats);
// 5 and 6 bits are repeated to 10 and 12 first.
template <int Depth>
CUDAGRAY_HOST_DEVICE uint32_t to16(uint32_t v) {
  if constexpr (Depth == 16)
    return v;
  else if constexpr (Depth < 8)
    return to16<2 * Depth>(v << Depth | v);
  else
    return (v << (16 - Depth)) | (v >> (2 * Depth - 16));
}

// RGB of Depth bits to 16-bit gray: each channel to 16 bits, then the Q16
// formula, min(65535, (wR*R16 + wG*G16 + wB*B16 + 32768) >> 16), in 64 bits
// (custom weights reach 2^22 each). 8-bit codes widen to 257 * v, so the sum
// is 257 * S with S the 8-bit formula's sum (below 2^32, weights.h): split at
// bit 16, S = 2^16 h + l gives 257 h + ((257 l + 32768) >> 16), the same
// integer in the 32-bit lanes that vectorise.
template <int Depth>
CUDAGRAY_HOST_DEVICE uint32_t rgb_gray16(uint32_t r, uint32_t g, uint32_t b, const Weights &w) {
  if constexpr (Depth == 8) {
    const uint32_t s = w.r * r + w.g * g + w.b * b;
    const uint32_t y = 257u * (s >> 16) + ((257u * (s & 0xFFFFu) + 32768u) >> 16);
    return y > 65535u ? 65535u : y;
  }
  const uint64_t s = uint64_t{w.r} * to16<Depth>(r) + uint64_t{w.g} * to16<Depth>(g) +
                     uint64_t{w.b} * to16<Depth>(b) + 32768u;
  const uint64_t y = s >> 16;
  return static_cast<uint32_t>(y > 65535u ? 65535u : y);
}

// Luma of Depth bits to 16-bit gray. Full range: to16. Limited range (black
// 16 * 2^(Depth-8), white 235 * 2^(Depth-8)):
// clamp(round((Y' - black) * 65535 / (219 * 2^(Depth-8))), 0, 65535), with
// round half up, in unsigned 32-bit arithmetic (the numerator stays below 2^32
// at 16 bits). The divisor is a constant: compilers make it a multiply.
template <int Depth>
CUDAGRAY_HOST_DEVICE uint32_t luma_gray16(uint32_t y, bool limited) {
  if (!limited) return to16<Depth>(y);
  constexpr uint32_t black = 16u << (Depth - 8), range = 219u << (Depth - 8);
  if (y <= black) return 0;
  const uint32_t v = ((y - black) * 65535u + range / 2) / range;
  return v > 65535u ? 65535u : v;
}

// 16-bit gray to GRAY8: round(g / 257) (65535 = 255 * 257, GStreamer's own
// GRAY8 <-> GRAY16 scale); the multiply and shift equal it for every g.
CUDAGRAY_HOST_DEVICE uint8_t reduce8(uint32_t g16) {
  return static_cast<uint8_t>((g16 * 255u + 32895u) >> 16);
}

// ----------------------------------------------------------------- layouts
//
// Each layout says how many planes it reads, how pixels group in them
// (kGroupPixels pixels in kGroupBytes bytes of each plane), and reads pixel
// x through a byte source: Bytes::at(plane, i) is byte i of that plane,
// counted from the start of the group that holds pixel 0 of the source (a
// row's start, or a chunk that starts on a group). The CUDA kernel hands it
// bytes held in registers, the CPU bytes in memory.

struct Rgb {
  uint32_t r, g, b;
};

template <class Bytes>
CUDAGRAY_HOST_DEVICE uint32_t le16(const Bytes &bytes, int plane, int i) {
  return bytes.at(plane, i) | bytes.at(plane, i + 1) << 8;
}
template <class Bytes>
CUDAGRAY_HOST_DEVICE uint32_t le32(const Bytes &bytes, int plane, int i) {
  return le16(bytes, plane, i) | le16(bytes, plane, i + 2) << 16;
}
template <bool BigEndian, class Bytes>
CUDAGRAY_HOST_DEVICE uint32_t word16(const Bytes &bytes, int plane, int i) {
  return BigEndian ? bytes.at(plane, i) << 8 | bytes.at(plane, i + 1) : le16(bytes, plane, i);
}
template <bool BigEndian, class Bytes>
CUDAGRAY_HOST_DEVICE uint32_t word32(const Bytes &bytes, int plane, int i) {
  return BigEndian ? word16<true>(bytes, plane, i) << 16 | word16<true>(bytes, plane, i + 2)
                   : le32(bytes, plane, i);
}

// RGB, 8 bits, packed: Bpp bytes a pixel; R, G, B are byte offsets.
template <int Bpp, int R, int G, int B>
struct PackedLayout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Rgb;
  static constexpr int kDepth = 8, kPlanes = 1, kGroupPixels = 1, kGroupBytes = Bpp;
  static constexpr int bytes_per_pixel = Bpp, r = R, g = G, b = B;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static Rgb pixel(const Bytes &s, int x) {
    return {s.at(0, x * Bpp + R), s.at(0, x * Bpp + G), s.at(0, x * Bpp + B)};
  }
};

// RGB, 16 bits a channel, packed: 8 bytes a pixel, four little- or
// big-endian words; R, G, B are word indices.
template <int R, int G, int B, bool BigEndian>
struct Packed16Layout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Rgb;
  static constexpr int kDepth = 16, kPlanes = 1, kGroupPixels = 1, kGroupBytes = 8;
  static constexpr int r = -1, g = -1, b = -1;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static Rgb pixel(const Bytes &s, int x) {
    return {word16<BigEndian>(s, 0, 8 * x + 2 * R), word16<BigEndian>(s, 0, 8 * x + 2 * G),
            word16<BigEndian>(s, 0, 8 * x + 2 * B)};
  }
};

// RGB, one plane per channel of Depth-bit codes (8: bytes; more: LSB-aligned
// little- or big-endian words); R, G, B are plane indices.
template <int R, int G, int B, int Depth = 8, bool BigEndian = false>
struct PlanarLayout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Rgb;
  static constexpr int kDepth = Depth, kPlanes = 3, kGroupPixels = 1;
  static constexpr int kGroupBytes = Depth > 8 ? 2 : 1;
  static constexpr int r = R, g = G, b = B;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static uint32_t sample(const Bytes &s, int plane, int x) {
    if constexpr (Depth == 8)
      return s.at(plane, x);
    else
      return word16<BigEndian>(s, plane, 2 * x) & ((1u << Depth) - 1);
  }
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static Rgb pixel(const Bytes &s, int x) {
    return {sample(s, R, x), sample(s, G, x), sample(s, B, x)};
  }
};

// RGB, 10 bits a channel in one little- or big-endian 32-bit word a pixel;
// R, G, B are the channels' lowest bits.
template <int R, int G, int B, bool BigEndian = false>
struct Packed10Layout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Rgb;
  static constexpr int kDepth = 10, kPlanes = 1, kGroupPixels = 1, kGroupBytes = 4;
  static constexpr int r = -1, g = -1, b = -1;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static Rgb pixel(const Bytes &s, int x) {
    const uint32_t word = word32<BigEndian>(s, 0, 4 * x);
    return {(word >> R) & 0x3FF, (word >> G) & 0x3FF, (word >> B) & 0x3FF};
  }
};

// RGB of 5 or 6 bits a channel in one little-endian 16-bit word a pixel: R
// and B of 5 bits from bits RShift and BShift, G of GBits from bit 5. The
// channels differ in depth, so each is made 16 bits (to16) here: the
// layout's samples are 16-bit.
template <int RShift, int BShift, int GBits>
struct Packed565Layout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Rgb;
  static constexpr int kDepth = 16, kPlanes = 1, kGroupPixels = 1, kGroupBytes = 2;
  static constexpr int r = -1, g = -1, b = -1;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static Rgb pixel(const Bytes &s, int x) {
    const uint32_t word = le16(s, 0, 2 * x);
    return {to16<5>((word >> RShift) & 0x1F), to16<GBits>((word >> 5) & ((1u << GBits) - 1)),
            to16<5>((word >> BShift) & 0x1F)};
  }
};

// Luma, 8 bits: byte Y of each Bpp-byte pixel of plane 0.
template <int Bpp = 1, int Y = 0>
struct LumaLayout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Luma;
  static constexpr int kDepth = 8, kPlanes = 1, kGroupPixels = 1, kGroupBytes = Bpp;
  static constexpr int r = -1, g = -1, b = -1;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static uint32_t pixel(const Bytes &s, int x) {
    return s.at(0, x * Bpp + Y);
  }
};

// Luma, 8 bits, IYU1: 4 pixels in 6 bytes, U Y0 Y1 V Y2 Y3.
struct Iyu1Layout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Luma;
  static constexpr int kDepth = 8, kPlanes = 1, kGroupPixels = 4, kGroupBytes = 6;
  static constexpr int r = -1, g = -1, b = -1;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static uint32_t pixel(const Bytes &s, int x) {
    constexpr int kByte[4] = {1, 2, 4, 5};
    return s.at(0, 6 * (x / 4) + kByte[x % 4]);
  }
};

// Luma, Depth-bit codes in 16-bit words of plane 0: LSB-aligned (masked to
// Depth bits) or MSB-aligned (shifted down), little- or big-endian; Words
// words a pixel (planar and semi-planar: 1), Y' in word Y.
template <int Depth, bool Msb = false, bool BigEndian = false, int Words = 1, int Y = 0>
struct Luma16Layout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Luma;
  static constexpr int kDepth = Depth, kPlanes = 1, kGroupPixels = 1, kGroupBytes = 2 * Words;
  static constexpr int r = -1, g = -1, b = -1;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static uint32_t pixel(const Bytes &s, int x) {
    const uint32_t word = word16<BigEndian>(s, 0, kGroupBytes * x + 2 * Y);
    return Msb ? word >> (16 - Depth) : word & ((1u << Depth) - 1);
  }
};

// Luma, 10-bit codes packed in groups of GroupPixels pixels in GroupBytes
// bytes of plane 0: pixel k's code is the 10 bits from bit First + k * Step
// of its group, bits counted from the least significant of each byte, bytes
// in order (little-endian words), or (MsbFirst) from the most significant
// of the first byte. Every code lies within two bytes.
template <int GroupPixels, int GroupBytes, int First, int Step, bool MsbFirst = false>
struct Luma10BitsLayout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Luma;
  static constexpr int kDepth = 10, kPlanes = 1, kGroupPixels = GroupPixels;
  static constexpr int kGroupBytes = GroupBytes;
  static constexpr int r = -1, g = -1, b = -1;
  static constexpr bool fits_two_bytes() {
    for (int k = 0; k < GroupPixels; ++k)
      if ((First + k * Step) % 8 > 6 || (First + k * Step) / 8 + 2 > GroupBytes) return false;
    return true;
  }
  static_assert(fits_two_bytes(), "a code spans three bytes or leaves its group");
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static uint32_t pixel(const Bytes &s, int x) {
    const int bit = First + x % GroupPixels * Step;
    const int at = x / GroupPixels * GroupBytes + bit / 8;
    if constexpr (MsbFirst)
      return ((s.at(0, at) << 8 | s.at(0, at + 1)) >> (6 - bit % 8)) & 0x3FF;
    else
      return (le16(s, 0, at) >> (bit % 8)) & 0x3FF;
  }
};

// v210: 6 pixels in four little-endian 32-bit words of three 10-bit fields,
// U Y V | Y U Y | V Y U | Y V Y; Y' of pixel k is word kWord[k], field kField[k].
struct V210Layout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Luma;
  static constexpr int kDepth = 10, kPlanes = 1, kGroupPixels = 6, kGroupBytes = 16;
  static constexpr int r = -1, g = -1, b = -1;
  template <class Bytes>
  CUDAGRAY_HOST_DEVICE static uint32_t pixel(const Bytes &s, int x) {
    constexpr int kWord[6] = {0, 1, 1, 2, 3, 3}, kField[6] = {1, 0, 2, 1, 0, 2};
    const int group = x / 6, k = x % 6;
    return (le32(s, 0, 16 * group + 4 * kWord[k]) >> (10 * kField[k])) & 0x3FF;
  }
};

// Bayer: plane 0, one sample a pixel (a byte, or a 16-bit word of either
// endianness), the colour of pixel (x, y) given by (x & 1, y & 1) within the
// top-left 2x2 block, whose R and B positions are (RedX, RedY) and
// (1 - RedX, 1 - RedY). Demosaicked from its neighbours (bayer.h); not read
// pixel by pixel like the layouts above.
template <int RedX, int RedY, int SampleBytes = 1, bool BigEndian = false>
struct BayerLayout {
  static constexpr LayoutFamily kFamily = LayoutFamily::Bayer;
  static constexpr int kDepth = 8 * SampleBytes, kPlanes = 1, kGroupPixels = 1;
  static constexpr int kGroupBytes = SampleBytes;
  static constexpr int r = -1, g = -1, b = -1;
  static constexpr int kRedX = RedX, kRedY = RedY;
  static constexpr bool kBigEndian = BigEndian;
};

// Tiled planes (GStreamer's tiled formats). The rows of a frame, as they
// would be stored untiled ("lines"), are cut into tiles of TileRows lines of
// TileRowBytes bytes, each tile stored whole (TileRows * TileRowBytes
// bytes), tiles one after another in rows of x_tiles tiles, in linear order
// or, for 64x32 tiles, in Z-flip order; the frame's stride is GStreamer's
// tile stride (tile_stride, frame.h). Line describes a line's pixels, and is
// read through TiledLine, which finds each of its bytes in its tile. A
// tiled layout is read by pixel_at(plane, stride, x, y) and not row by row:
// its rows are not stride apart.
enum class TileOrder { Linear, ZFlipZ2x2 };

// The index of tile (tx, ty) among all of a plane's, as GStreamer's
// gst_video_tile_get_index numbers them: Z-flip pairs rows of tiles and
// runs through each pair in blocks of 2x2 tiles, Z, flipped Z, Z...; an
// odd last row of tiles is linear.
template <TileOrder Order>
CUDAGRAY_HOST_DEVICE size_t tile_index(unsigned tx, unsigned ty, unsigned x_tiles,
                                       unsigned y_tiles) {
  if constexpr (Order == TileOrder::Linear) {
    return static_cast<size_t>(ty) * x_tiles + tx;
  } else {
    size_t index = static_cast<size_t>(ty & ~1u) * x_tiles + tx;
    if (ty & 1)
      index += 2 + (tx & ~3u);
    else if ((y_tiles & 1) == 0 || ty != y_tiles - 1)
      index += (tx + 2) & ~3u;
    return index;
  }
}

// Line y of a tiled plane as a byte source: byte i of the line, found in its
// tile.
template <int TileRowBytes, int TileRows, TileOrder Order>
struct TiledLine {
  const uint8_t *plane;
  unsigned x_tiles, y_tiles, ty, row;
  CUDAGRAY_HOST_DEVICE TiledLine(const uint8_t *p, size_t stride, int y)
      : plane(p),
        x_tiles(x_tiles_of(stride)),
        y_tiles(y_tiles_of(stride)),
        ty(static_cast<unsigned>(y) / TileRows),
        row(static_cast<unsigned>(y) % TileRows) {}
  CUDAGRAY_HOST_DEVICE uint32_t at(int, int i) const {
    const unsigned tx = static_cast<unsigned>(i) / TileRowBytes;
    return plane[tile_index<Order>(tx, ty, x_tiles, y_tiles) * (TileRows * TileRowBytes) +
                 row * TileRowBytes + static_cast<unsigned>(i) % TileRowBytes];
  }
};

template <class LineLayout, int TileRowBytes, int TileRows, TileOrder Order = TileOrder::Linear>
struct TiledLayout {
  using Line = LineLayout;
  static constexpr LayoutFamily kFamily = Line::kFamily;
  static constexpr int kDepth = Line::kDepth, kPlanes = 1;
  static constexpr int kGroupPixels = Line::kGroupPixels, kGroupBytes = Line::kGroupBytes;
  static constexpr int r = -1, g = -1, b = -1;
  static constexpr int kTileRows = TileRows, kTileRowBytes = TileRowBytes;
  static constexpr int kTileBytes = TileRows * TileRowBytes;
  // Z-flip runs through pairs of columns of tiles
  static constexpr int kXTilesMultiple = Order == TileOrder::ZFlipZ2x2 ? 2 : 1;
  CUDAGRAY_HOST_DEVICE static uint32_t pixel_at(const uint8_t *plane, size_t stride, int x, int y) {
    return Line::pixel(TiledLine<TileRowBytes, TileRows, Order>(plane, stride, y), x);
  }
};

// Mediatek's 10-bit tiles (MT2110T, MT2110R): 16x32 pixels in 640 bytes,
// in linear order, each tile 8 blocks of 4 rows, each block 16 bytes of the
// rows' 2 low bits then 64 bytes of their 8 high bits, row by row. The low
// bits of pixel x of row r of a block: byte x, bits 2r (Raster false), or
// byte 4r + x / 4, bits 2 (x % 4) (Raster true). Its lines are counted by
// the bytes of their high bits.
template <bool Raster>
struct Mt2110Layout {
  using Line = LumaLayout<>;
  static constexpr LayoutFamily kFamily = LayoutFamily::Luma;
  static constexpr int kDepth = 10, kPlanes = 1, kGroupPixels = 1, kGroupBytes = 1;
  static constexpr int r = -1, g = -1, b = -1;
  static constexpr int kTileRows = 32, kTileRowBytes = 16, kTileBytes = 640, kXTilesMultiple = 1;
  CUDAGRAY_HOST_DEVICE static uint32_t pixel_at(const uint8_t *plane, size_t stride, int x, int y) {
    const size_t tile =
        tile_index<TileOrder::Linear>(x / 16, y / 32, x_tiles_of(stride), y_tiles_of(stride));
    const uint8_t *block = plane + tile * kTileBytes + y % 32 / 4 * 80;
    const int column = x % 16, row = y % 4;
    const uint32_t low =
        Raster ? block[4 * row + column / 4] >> (2 * (column % 4)) : block[column] >> (2 * row);
    return static_cast<uint32_t>(block[16 + 16 * row + column]) << 2 | (low & 3);
  }
};

// Whether a layout is tiled, and how (tiled layouts say so with kTileBytes).
template <class Layout, class = void>
struct Tiling {
  static constexpr bool kTiled = false;
  static constexpr int kRows = 0, kRowBytes = 0, kBytes = 0, kXTilesMultiple = 0;
};
template <class Layout>
struct Tiling<Layout, std::void_t<decltype(Layout::kTileBytes)>> {
  static constexpr bool kTiled = true;
  static constexpr int kRows = Layout::kTileRows, kRowBytes = Layout::kTileRowBytes;
  static constexpr int kBytes = Layout::kTileBytes, kXTilesMultiple = Layout::kXTilesMultiple;
};
template <class Layout>
constexpr bool kTiled = Tiling<Layout>::kTiled;

// Calls f with the layout's compile-time description; the single table that
// says how each layout is read.
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
    case PixelLayout::GBR_10LE: return f(PlanarLayout<2, 0, 1, 10>{});
    case PixelLayout::GBR_12LE: return f(PlanarLayout<2, 0, 1, 12>{});
    case PixelLayout::GBR_16LE: return f(PlanarLayout<2, 0, 1, 16>{});
    case PixelLayout::GBR_10BE: return f(PlanarLayout<2, 0, 1, 10, true>{});
    case PixelLayout::GBR_12BE: return f(PlanarLayout<2, 0, 1, 12, true>{});
    case PixelLayout::GBR_16BE: return f(PlanarLayout<2, 0, 1, 16, true>{});
    case PixelLayout::RBGA: return f(PackedLayout<4, 0, 2, 1>{});
    case PixelLayout::RGBA64_LE: return f(Packed16Layout<0, 1, 2, false>{});
    case PixelLayout::RGBA64_BE: return f(Packed16Layout<0, 1, 2, true>{});
    case PixelLayout::ARGB64_LE: return f(Packed16Layout<1, 2, 3, false>{});
    case PixelLayout::ARGB64_BE: return f(Packed16Layout<1, 2, 3, true>{});
    case PixelLayout::BGRA64_LE: return f(Packed16Layout<2, 1, 0, false>{});
    case PixelLayout::BGRA64_BE: return f(Packed16Layout<2, 1, 0, true>{});
    case PixelLayout::ABGR64_LE: return f(Packed16Layout<3, 2, 1, false>{});
    case PixelLayout::ABGR64_BE: return f(Packed16Layout<3, 2, 1, true>{});
    case PixelLayout::RGB10A2_LE: return f(Packed10Layout<0, 10, 20>{});
    case PixelLayout::BGR10A2_LE: return f(Packed10Layout<20, 10, 0>{});
    case PixelLayout::r210: return f(Packed10Layout<20, 10, 0, true>{});
    case PixelLayout::RGB16: return f(Packed565Layout<11, 0, 6>{});
    case PixelLayout::BGR16: return f(Packed565Layout<0, 11, 6>{});
    case PixelLayout::RGB15: return f(Packed565Layout<10, 0, 5>{});
    case PixelLayout::BGR15: return f(Packed565Layout<0, 10, 5>{});
    case PixelLayout::Luma: return f(LumaLayout<>{});
    case PixelLayout::Luma_Y0_2: return f(LumaLayout<2, 0>{});
    case PixelLayout::Luma_Y1_2: return f(LumaLayout<2, 1>{});
    case PixelLayout::Luma_Y1_4: return f(LumaLayout<4, 1>{});
    case PixelLayout::Luma_Y2_4: return f(LumaLayout<4, 2>{});
    case PixelLayout::Luma_Y0_3: return f(LumaLayout<3, 0>{});
    case PixelLayout::Luma_Y1_3: return f(LumaLayout<3, 1>{});
    case PixelLayout::Luma_IYU1: return f(Iyu1Layout{});
    case PixelLayout::Luma10: return f(Luma16Layout<10>{});
    case PixelLayout::Luma12: return f(Luma16Layout<12>{});
    case PixelLayout::Luma16: return f(Luma16Layout<16>{});
    case PixelLayout::Luma10_Msb: return f(Luma16Layout<10, true>{});
    case PixelLayout::Luma12_Msb: return f(Luma16Layout<12, true>{});
    case PixelLayout::Luma16_BE: return f(Luma16Layout<16, false, true>{});
    case PixelLayout::Luma10_BE: return f(Luma16Layout<10, false, true>{});
    case PixelLayout::Luma12_BE: return f(Luma16Layout<12, false, true>{});
    case PixelLayout::Luma10_Msb_BE: return f(Luma16Layout<10, true, true>{});
    case PixelLayout::Luma12_Msb_BE: return f(Luma16Layout<12, true, true>{});
    case PixelLayout::Luma10_Msb_Y0_2: return f(Luma16Layout<10, true, false, 2, 0>{});
    case PixelLayout::Luma12_Msb_Y0_2: return f(Luma16Layout<12, true, false, 2, 0>{});
    case PixelLayout::Luma12_Msb_BE_Y0_2: return f(Luma16Layout<12, true, true, 2, 0>{});
    case PixelLayout::Luma16_Y0_2: return f(Luma16Layout<16, false, false, 2, 0>{});
    case PixelLayout::Luma16_BE_Y0_2: return f(Luma16Layout<16, false, true, 2, 0>{});
    case PixelLayout::Luma16_Y1_2: return f(Luma16Layout<16, false, false, 2, 1>{});
    case PixelLayout::Luma12_Msb_Y1_4: return f(Luma16Layout<12, true, false, 4, 1>{});
    case PixelLayout::Luma12_Msb_BE_Y1_4: return f(Luma16Layout<12, true, true, 4, 1>{});
    case PixelLayout::Luma16_Y1_4: return f(Luma16Layout<16, false, false, 4, 1>{});
    case PixelLayout::Luma16_BE_Y1_4: return f(Luma16Layout<16, false, true, 4, 1>{});
    case PixelLayout::Luma_v210: return f(V210Layout{});
    case PixelLayout::Luma_Y410: return f(Luma10BitsLayout<1, 4, 10, 0>{});
    case PixelLayout::Luma_10LE32: return f(Luma10BitsLayout<3, 4, 0, 10>{});
    case PixelLayout::Luma_10LE40: return f(Luma10BitsLayout<4, 5, 0, 10>{});
    case PixelLayout::Luma_UYVP: return f(Luma10BitsLayout<2, 5, 10, 20, true>{});
    case PixelLayout::Luma_4L4: return f(TiledLayout<LumaLayout<>, 4, 4>{});
    case PixelLayout::Luma_32L32: return f(TiledLayout<LumaLayout<>, 32, 32>{});
    case PixelLayout::Luma_16L32: return f(TiledLayout<LumaLayout<>, 16, 32>{});
    case PixelLayout::Luma_8L128: return f(TiledLayout<LumaLayout<>, 8, 128>{});
    case PixelLayout::Luma_64Z32:
      return f(TiledLayout<LumaLayout<>, 64, 32, TileOrder::ZFlipZ2x2>{});
    case PixelLayout::Luma_10LE40_4L4: return f(TiledLayout<Luma10BitsLayout<4, 5, 0, 10>, 5, 4>{});
    case PixelLayout::Luma_10BE_8L128:
      return f(TiledLayout<Luma10BitsLayout<4, 5, 0, 10, true>, 8, 128>{});
    case PixelLayout::Luma_MT2110T: return f(Mt2110Layout<false>{});
    case PixelLayout::Luma_MT2110R: return f(Mt2110Layout<true>{});
    case PixelLayout::Bayer_BGGR: return f(BayerLayout<1, 1>{});
    case PixelLayout::Bayer_GBRG: return f(BayerLayout<0, 1>{});
    case PixelLayout::Bayer_GRBG: return f(BayerLayout<1, 0>{});
    case PixelLayout::Bayer_RGGB: return f(BayerLayout<0, 0>{});
    case PixelLayout::Bayer16_BGGR: return f(BayerLayout<1, 1, 2>{});
    case PixelLayout::Bayer16_GBRG: return f(BayerLayout<0, 1, 2>{});
    case PixelLayout::Bayer16_GRBG: return f(BayerLayout<1, 0, 2>{});
    case PixelLayout::Bayer16_RGGB: return f(BayerLayout<0, 0, 2>{});
    case PixelLayout::Bayer16BE_BGGR: return f(BayerLayout<1, 1, 2, true>{});
    case PixelLayout::Bayer16BE_GBRG: return f(BayerLayout<0, 1, 2, true>{});
    case PixelLayout::Bayer16BE_GRBG: return f(BayerLayout<1, 0, 2, true>{});
    case PixelLayout::Bayer16BE_RGGB: return f(BayerLayout<0, 0, 2, true>{});
  }
  return f(PackedLayout<3, 0, 1, 2>{});  // unreachable: every enumerator is handled
}

// ---------------------------------------------------- what a pixel becomes

// A pixel's samples to gray of OutDepth bits (8 or 16). Limited: luma
// layouts only, the frame's codes are limited range. 8-bit RGB and 8-bit luma
// keep their 8-bit formulas for GRAY8, which equal round(gray16 / 257).
template <class Layout, int OutDepth, bool Limited>
struct ToGray {
  static constexpr int kOutDepth = OutDepth;
  Weights w;
  CUDAGRAY_HOST_DEVICE uint32_t operator()(const Rgb &c) const {
    if constexpr (OutDepth == 8 && Layout::kDepth == 8)
      return luma(c.r, c.g, c.b, w);
    else if constexpr (OutDepth == 8)
      return reduce8(rgb_gray16<Layout::kDepth>(c.r, c.g, c.b, w));
    else
      return rgb_gray16<Layout::kDepth>(c.r, c.g, c.b, w);
  }
  CUDAGRAY_HOST_DEVICE uint32_t operator()(uint32_t y) const {
    if constexpr (OutDepth == 8 && Layout::kDepth == 8)
      return Limited ? expand_limited(static_cast<uint8_t>(y)) : y;
    else if constexpr (OutDepth == 8)
      return reduce8(luma_gray16<Layout::kDepth>(y, Limited));
    else
      return luma_gray16<Layout::kDepth>(y, Limited);
  }
};

// Calls f with the ToGray for the layout, the output depth and the range.
template <class Layout, class F>
void dispatch_to_gray(Layout, int out_depth, bool limited, const Weights &w, F &&f) {
  const bool lim = Layout::kFamily == LayoutFamily::Luma && limited;
  if (out_depth == 16) {
    if (lim)
      f(ToGray<Layout, 16, true>{w});
    else
      f(ToGray<Layout, 16, false>{w});
  } else {
    if (lim)
      f(ToGray<Layout, 8, true>{w});
    else
      f(ToGray<Layout, 8, false>{w});
  }
}

}  // namespace cudagray
