// SPDX-License-Identifier: LGPL-2.1-or-later
// What a frame is to the kernels: the pixel layouts they read, and the input
// and GRAY8 output frames as plane pointers and row strides.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cudagray {

// Where R, G and B live. Packed layouts store a whole pixel in bytes_per_pixel
// bytes and name each channel's byte offset; planar layouts store one channel
// per plane and name each channel's plane index.
enum class PixelLayout {
  RGB,
  BGR,  // 3 bytes per pixel
  RGBA,
  BGRA,
  RGBx,
  BGRx,
  xRGB,
  xBGR,
  ARGB,
  ABGR,  // 4 bytes, 4th ignored
  RGBP,
  BGRP,
  GBR,   // 3 planes
  Luma,  // YUV: gray is the luma plane (plane 0, 1 byte per pixel)
};

struct LayoutInfo {
  const char *name;
  int planes;           // 1 for packed, 3 for planar
  int bytes_per_pixel;  // within one plane
  int r, g, b;          // byte offset (packed) or plane index (planar)
};

const LayoutInfo &layout_info(PixelLayout layout);
// Every RGB-family layout (Luma aside).
constexpr PixelLayout kAllLayouts[] = {
    PixelLayout::RGB,  PixelLayout::BGR,  PixelLayout::RGBA, PixelLayout::BGRA, PixelLayout::RGBx,
    PixelLayout::BGRx, PixelLayout::xRGB, PixelLayout::xBGR, PixelLayout::ARGB, PixelLayout::ABGR,
    PixelLayout::RGBP, PixelLayout::BGRP, PixelLayout::GBR};

// One input frame: plane pointers and row strides in bytes. Packed layouts use
// plane[0] only. Pointers are host or device pointers, as the call requires.
struct InputFrame {
  PixelLayout layout;
  int width, height;
  const uint8_t *plane[3];
  size_t stride[3];
  // Luma only: the luma plane holds limited-range values (16..235), which
  // are expanded to full range; full-range luma is copied as it is.
  bool limited_range = false;
  // The planes are device memory of the backend's CUDA context: no upload.
  bool on_device = false;
  // On the device only: a CUDA stream (cudaStream_t) whose queued work writes
  // the planes. The backend orders its reads after that work on the GPU,
  // without blocking the calling thread; nullptr when the planes are ready.
  void *producer_stream = nullptr;
};

// One GRAY8 frame: rows of stride bytes.
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
