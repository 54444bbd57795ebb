// SPDX-License-Identifier: LGPL-2.1-or-later
// One conversion, described once: what the input holds, which part of it is
// read, the gray it becomes and where that goes in the output. The element
// builds it from its caps and properties, a backend's configure takes it, and
// frames then carry only memory (frame.h).
#pragma once

#include <string>

#include "cudagray/frame.h"

namespace cudagray {

// The largest width or height of an input or output frame.
constexpr int kMaxDimension = 16384;

// A rectangle of pixels: columns [x, x + width), rows [y, y + height).
struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
};
inline bool operator==(const Rect &a, const Rect &b) {
  return a.x == b.x && a.y == b.y && a.width == b.width && a.height == b.height;
}

// How the crop's gray is resampled to the destination rectangle's size;
// resample.h defines each exactly.
enum class ScaleMethod {
  Nearest,   // the source pixel whose centre is nearest (nearest-exact)
  Bilinear,  // at (x + 0.5) * in / out - 0.5, edges clamped (INTER_LINEAR)
  Area,      // the mean over the output pixel's footprint (INTER_AREA)
};
// Area by default: it is the only one of the three that does not alias when
// shrinking (every source pixel counts, by how much of it the footprint
// covers), and enlarging with it is bilinear between the two nearest pixels.
constexpr ScaleMethod kDefaultScaleMethod = ScaleMethod::Area;

struct Conversion {
  // What the input holds.
  PixelLayout layout = PixelLayout::RGB;
  // 16-bit Bayer only: the bits a sample has (10, 12, 14 or 16; 0: 16). The
  // demosaicked colours are scaled from them to 16 bits as GStreamer's
  // bayer2rgb does (bayer.h).
  int sample_bits = 0;
  // Luma only: the codes are limited range (16..235, scaled for deeper
  // codes) and are expanded to full range; full-range luma is taken as it is.
  bool limited_range = false;
  int in_width = 0, in_height = 0;
  // The part of the input that is read, inside it.
  Rect crop;
  // The output frame, and where the crop's gray goes in it (the destination,
  // inside it); every pixel outside the destination is black (0).
  int out_width = 0, out_height = 0;
  Rect dest;
  ScaleMethod method = kDefaultScaleMethod;
  int out_depth = 8;  // 8: GRAY8; 16: GRAY16 (native-endian words)
  // Where frames live (InputFrame::on_device, GrayFrame::on_device), and how
  // many a backend must be able to hold at once (at least 1).
  bool inputs_on_device = false, outputs_on_device = false;
  int max_in_flight = 1;

  // Whether the gray is resampled, cropped or placed: anything but the
  // whole input converted at its own size.
  bool resamples() const {
    return !(crop == Rect{0, 0, in_width, in_height} && dest == Rect{0, 0, out_width, out_height} &&
             in_width == out_width && in_height == out_height);
  }
};

// The whole input converted at its own size, in host memory.
Conversion same_size_conversion(PixelLayout layout, int width, int height, int out_depth = 8);

// Whether c is one the kernels can carry out: sizes 1..kMaxDimension, the
// crop inside the input and the destination inside the output, both not
// empty, depth 8 or 16; otherwise *why names the sizes that are wrong.
bool valid_conversion(const Conversion &c, std::string *why);

}  // namespace cudagray
