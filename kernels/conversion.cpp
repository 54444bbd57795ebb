// SPDX-License-Identifier: LGPL-2.1-or-later
// The checks every conversion passes before a backend takes it.
#include "cudagray/conversion.h"

namespace cudagray {

namespace {

std::string size_text(int width, int height) {
  return std::to_string(width) + "x" + std::to_string(height);
}

std::string rect_text(const Rect &r) {
  return size_text(r.width, r.height) + " at (" + std::to_string(r.x) + ", " + std::to_string(r.y) +
         ")";
}

bool size_allowed(int width, int height) {
  return width >= 1 && height >= 1 && width <= kMaxDimension && height <= kMaxDimension;
}

bool inside(const Rect &r, int width, int height) {
  return r.width >= 1 && r.height >= 1 && r.x >= 0 && r.y >= 0 && r.x <= width - r.width &&
         r.y <= height - r.height;
}

}  // namespace

Conversion same_size_conversion(PixelLayout layout, int width, int height, int out_depth) {
  Conversion c;
  c.layout = layout;
  c.in_width = c.out_width = width;
  c.in_height = c.out_height = height;
  c.crop = c.dest = Rect{0, 0, width, height};
  c.out_depth = out_depth;
  return c;
}

bool valid_conversion(const Conversion &c, std::string *why) {
  const std::string limit = std::to_string(kMaxDimension);
  if (!size_allowed(c.in_width, c.in_height))
    *why = "input size " + size_text(c.in_width, c.in_height) + " is outside 1x1 to " + limit +
           "x" + limit;
  else if (!size_allowed(c.out_width, c.out_height))
    *why = "output size " + size_text(c.out_width, c.out_height) + " is outside 1x1 to " + limit +
           "x" + limit;
  else if (!inside(c.crop, c.in_width, c.in_height))
    *why = "crop " + rect_text(c.crop) + " is empty or not inside the " +
           size_text(c.in_width, c.in_height) + " input";
  else if (!inside(c.dest, c.out_width, c.out_height))
    *why = "destination " + rect_text(c.dest) + " is empty or not inside the " +
           size_text(c.out_width, c.out_height) + " output";
  else if (c.out_depth != 8 && c.out_depth != 16)
    *why = "output depth " + std::to_string(c.out_depth) + " is neither 8 nor 16";
  else
    return true;
  return false;
}

}  // namespace cudagray
