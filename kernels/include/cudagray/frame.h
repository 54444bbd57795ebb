// SPDX-License-Identifier: LGPL-2.1-or-later
// What a frame is to the kernels: the pixel layouts they read, and the input
// and GRAY8 output frames as plane pointers and row strides.
#pragma once

#include <cstddef>
#include <cstdint>

// Functions both the CPU and the GPU call (nvcc compiles them for both).
#if defined(__CUDACC__)
#define CUDAGRAY_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CUDAGRAY_HOST_DEVICE inline
#endif

namespace cudagray {

// How the kernels read a frame: one enumerator per way of storing the
// samples they need. RGB-family layouts give R, G and B (gray from the
// weights); luma layouts give Y' (gray is luma, expanded from limited range
// when the frame says so); Bayer layouts give a mosaic that is demosaicked
// first. layout_info() describes each; layouts.h holds how each is read.
enum class PixelLayout {
  // RGB, 8 bits a channel, packed: 3 bytes a pixel...
  RGB,
  BGR,
  // ...or 4, the 4th ignored
  RGBA,
  BGRA,
  RGBx,
  BGRx,
  xRGB,
  xBGR,
  ARGB,
  ABGR,
  // RGB, 8 bits, one plane per channel (a 4th plane, if any, ignored)
  RGBP,
  BGRP,
  GBR,
  // RGB, 10/12/16 bits in little-endian 16-bit words, one plane per channel
  GBR_10LE,
  GBR_12LE,
  GBR_16LE,
  // ...or big-endian ones
  GBR_10BE,
  GBR_12BE,
  GBR_16BE,
  // RGB, 8 bits, 4 bytes a pixel in the order of the name, A ignored
  RBGA,
  // RGB, 16 bits a channel, 8 bytes a pixel: 16-bit words in the order of
  // the name, little- or big-endian, A ignored
  RGBA64_LE,
  RGBA64_BE,
  ARGB64_LE,
  ARGB64_BE,
  BGRA64_LE,
  BGRA64_BE,
  ABGR64_LE,
  ABGR64_BE,
  // RGB, 10 bits a channel packed in a little-endian 32-bit word, 2 bits alpha
  RGB10A2_LE,  // R in bits 0-9, G 10-19, B 20-29
  BGR10A2_LE,  // B in bits 0-9, G 10-19, R 20-29
  // ...or in a big-endian one
  r210,  // B in bits 0-9, G 10-19, R 20-29
  // RGB, 5 or 6 bits a channel packed in a little-endian 16-bit word
  RGB16,  // R in bits 11-15, G 5-10, B 0-4
  BGR16,  // B in bits 11-15, G 5-10, R 0-4
  RGB15,  // R in bits 10-14, G 5-9, B 0-4
  BGR15,  // B in bits 10-14, G 5-9, R 0-4
  // Luma, 8 bits: plane 0, one byte a pixel (planar and semi-planar YUV, GRAY8)
  Luma,
  // Luma, 8 bits, packed with chroma: 2 bytes a pixel, Y' at byte 0 (YUY2,
  // YVYU) or 1 (UYVY); 4 bytes a pixel, Y' at byte 1 (AYUV) or 2 (VUYA)
  Luma_Y0_2,
  Luma_Y1_2,
  Luma_Y1_4,
  Luma_Y2_4,
  // 3 bytes a pixel, Y' at byte 0 (v308) or 1 (IYU2)
  Luma_Y0_3,
  Luma_Y1_3,
  // IYU1: 4 pixels in 6 bytes, U Y Y V Y Y
  Luma_IYU1,
  // Luma in 16-bit little-endian words of plane 0: LSB-aligned 10/12/16-bit
  // codes (I420_10LE, Y444_16LE, GRAY16_LE, ...) or MSB-aligned (P010, P012)
  Luma10,
  Luma12,
  Luma16,
  Luma10_Msb,
  Luma12_Msb,
  Luma16_BE,  // big-endian words (GRAY16_BE)
  Luma10_BE,
  Luma12_BE,
  Luma10_Msb_BE,
  Luma12_Msb_BE,
  // Luma in 16-bit words packed with chroma: 2 words a pixel, Y' in word 0
  // (Y210, Y212, Y216) or 1 (v216); 4 words a pixel, Y' in word 1 (Y412,
  // Y416, AYUV64)
  Luma10_Msb_Y0_2,
  Luma12_Msb_Y0_2,
  Luma12_Msb_BE_Y0_2,
  Luma16_Y0_2,
  Luma16_BE_Y0_2,
  Luma16_Y1_2,
  Luma12_Msb_Y1_4,
  Luma12_Msb_BE_Y1_4,
  Luma16_Y1_4,
  Luma16_BE_Y1_4,
  // Luma, 10 bits, v210: 6 pixels in four 32-bit words
  Luma_v210,
  // Luma, 10-bit fields packed in bytes: Y410 (bits 10-19 of a
  // little-endian 32-bit word a pixel), 3 pixels a little-endian 32-bit word
  // (NV12_10LE32, GRAY10_LE32), 4 pixels in 5 bytes (NV12_10LE40), 2 pixels
  // in 5 bytes from the most significant bit, U Y V Y (UYVP)
  Luma_Y410,
  Luma_10LE32,
  Luma_10LE40,
  Luma_UYVP,
  // Luma of tiled planes (GStreamer's tiled formats): the rows cut into
  // tiles stored one after another, in rows of tiles; an InputFrame's stride
  // for them is GStreamer's tile stride (tile_stride below). 8 bits in 4x4,
  // 32x32, 16x32 and 8x128 tiles in linear order and in 64x32 tiles in
  // Z-flip order (NV12_64Z32); 10 bits, 4 pixels in 5 bytes, in 4x4 tiles
  // of 5-byte rows (NV12_10LE40_4L4) and from the most significant bit in
  // 8x128-byte tiles (NV12_10BE_8L128); Mediatek's 16x32 tiles of 8-bit
  // codes and their 2 low bits apart, those in 4x4 blocks (MT2110T) or in
  // rows (MT2110R)
  Luma_4L4,
  Luma_32L32,
  Luma_16L32,
  Luma_8L128,
  Luma_64Z32,
  Luma_10LE40_4L4,
  Luma_10BE_8L128,
  Luma_MT2110T,
  Luma_MT2110R,
  // Bayer mosaic, 8 bits, named by its top-left 2x2 block
  Bayer_BGGR,
  Bayer_GBRG,
  Bayer_GRBG,
  Bayer_RGGB,
  // Bayer mosaic of 10 to 16-bit samples (Conversion::sample_bits) in
  // little-endian 16-bit words...
  Bayer16_BGGR,
  Bayer16_GBRG,
  Bayer16_GRBG,
  Bayer16_RGGB,
  // ...or big-endian ones
  Bayer16BE_BGGR,
  Bayer16BE_GBRG,
  Bayer16BE_GRBG,
  Bayer16BE_RGGB,
};
constexpr int kLayoutCount = static_cast<int>(PixelLayout::Bayer16BE_RGGB) + 1;

enum class LayoutFamily { Rgb, Luma, Bayer };

// A tiled plane's stride, as GStreamer's GST_VIDEO_TILE_MAKE_STRIDE makes it:
// tiles a row of tiles in the low 16 bits, rows of tiles above.
constexpr size_t tile_stride(unsigned x_tiles, unsigned y_tiles) {
  return static_cast<size_t>(y_tiles) << 16 | x_tiles;
}
constexpr CUDAGRAY_HOST_DEVICE unsigned x_tiles_of(size_t stride) { return stride & 0xFFFF; }
constexpr CUDAGRAY_HOST_DEVICE unsigned y_tiles_of(size_t stride) {
  return (stride >> 16) & 0xFFFF;
}

struct LayoutInfo {
  const char *name;
  LayoutFamily family;
  int depth;         // bits a sample
  int planes;        // planes read (YUV: the luma plane only)
  int group_pixels;  // pixels stored together in...
  int group_bytes;   // ...this many bytes of each plane read
  int r, g, b;       // 8-bit RGB: byte offset (packed) or plane index (planar)
  // The bytes from a group's start that its first k pixels are read from,
  // k < group_pixels (a row may end inside a group: GStreamer's UYVP rows
  // of odd widths stop at the last pixel's bytes).
  static constexpr int kMaxGroupPixels = 8;
  int partial_bytes[kMaxGroupPixels];
  // Tiled layouts: the rows a tile holds, the bytes of each of its rows and
  // its size, and what the tiles a row of tiles has must be a multiple of
  // (Z-flip order: 2); 0 for the others.
  int tile_rows, tile_row_bytes, tile_bytes, x_tiles_multiple;
  // Bytes of each plane read that a row of width pixels covers (tiled: of
  // the row as it is before it is cut into tiles).
  size_t row_bytes(int width) const {
    return static_cast<size_t>(width) / group_pixels * group_bytes +
           partial_bytes[width % group_pixels];
  }
  bool tiled() const { return tile_bytes != 0; }
  // The bytes of a plane read from its start, for a frame of width x height
  // pixels with rows stride apart (tiled: every tile the tile stride names).
  size_t plane_bytes(int width, int height, size_t stride) const {
    if (tiled()) return static_cast<size_t>(x_tiles_of(stride)) * y_tiles_of(stride) * tile_bytes;
    return stride * (height - 1) + row_bytes(width);
  }
  // The least stride of a plane of width x height pixels: its rows' bytes
  // (tiled: the tile stride of as many tiles as cover it).
  size_t tight_stride(int width, int height) const {
    if (!tiled()) return row_bytes(width);
    const size_t multiple = static_cast<size_t>(tile_row_bytes) * x_tiles_multiple;
    return tile_stride(
        static_cast<unsigned>((row_bytes(width) + multiple - 1) / multiple * x_tiles_multiple),
        static_cast<unsigned>((height + tile_rows - 1) / tile_rows));
  }
  // Whether a tiled plane's tiles cover a frame of width x height pixels
  // (and every tile a pixel's index names is one of them).
  bool tiles_cover(int width, int height, size_t stride) const {
    return static_cast<size_t>(x_tiles_of(stride)) * tile_row_bytes >= row_bytes(width) &&
           static_cast<size_t>(y_tiles_of(stride)) * tile_rows >= static_cast<size_t>(height) &&
           x_tiles_of(stride) % x_tiles_multiple == 0;
  }
};

const LayoutInfo &layout_info(PixelLayout layout);
// Every 8-bit RGB layout, the ones whose name is their GStreamer format's.
constexpr PixelLayout kRgb8Layouts[] = {
    PixelLayout::RGB,  PixelLayout::BGR,  PixelLayout::RGBA, PixelLayout::BGRA, PixelLayout::RGBx,
    PixelLayout::BGRx, PixelLayout::xRGB, PixelLayout::xBGR, PixelLayout::ARGB, PixelLayout::ABGR,
    PixelLayout::RGBP, PixelLayout::BGRP, PixelLayout::GBR};

// One input frame's memory: plane pointers and row strides in bytes; what
// the planes hold is the Conversion's (conversion.h). Packed layouts use
// plane[0] only. Pointers are host or device pointers, as the call requires.
struct InputFrame {
  const uint8_t *plane[3];
  size_t stride[3];
  // The planes are device memory of the backend's CUDA context: no upload.
  bool on_device = false;
  // On the device only: a CUDA stream (cudaStream_t) whose queued work writes
  // the planes. The backend orders its reads after that work on the GPU,
  // without blocking the calling thread; nullptr when the planes are ready.
  void *producer_stream = nullptr;
};

// One gray frame's memory: rows of stride bytes of the Conversion's output,
// GRAY8 or GRAY16 (native-endian 16-bit words, GRAY16_LE on every machine
// cudagray runs on).
struct GrayFrame {
  uint8_t *data;
  size_t stride;
  // data is device memory of the backend's CUDA context: the result is
  // written there and never comes back to the host (a backend whose
  // BackendNeeds::writes_device_memory says it can).
  bool on_device = false;
  // On the device only: a CUDA stream (cudaStream_t) of whoever uses the
  // frame next. The backend's writes wait for the work already queued on it,
  // and work queued on it after submit waits for the writes, both on the GPU,
  // so that its user need not wait for finish_oldest. nullptr: none.
  void *consumer_stream = nullptr;
};

}  // namespace cudagray
