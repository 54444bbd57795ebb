// SPDX-License-Identifier: LGPL-2.1-or-later
// layout_info: each layout's name, family, depth and how its pixels are
// stored, derived from dispatch_layout (layouts.h) so that the table and the
// kernels cannot disagree.
#include "cudagray/frame.h"
#include "layouts.h"

namespace cudagray {

namespace {

struct LayoutTable {
  LayoutInfo info[kLayoutCount];
  LayoutTable() {
    static const char *const names[kLayoutCount] = {"RGB",
                                                    "BGR",
                                                    "RGBA",
                                                    "BGRA",
                                                    "RGBx",
                                                    "BGRx",
                                                    "xRGB",
                                                    "xBGR",
                                                    "ARGB",
                                                    "ABGR",
                                                    "RGBP",
                                                    "BGRP",
                                                    "GBR",
                                                    "GBR_10LE",
                                                    "GBR_12LE",
                                                    "GBR_16LE",
                                                    "RGB10A2_LE",
                                                    "BGR10A2_LE",
                                                    "Luma",
                                                    "Luma_Y0_2",
                                                    "Luma_Y1_2",
                                                    "Luma_Y1_4",
                                                    "Luma_Y2_4",
                                                    "Luma10",
                                                    "Luma12",
                                                    "Luma16",
                                                    "Luma10_Msb",
                                                    "Luma12_Msb",
                                                    "Luma16_BE",
                                                    "Luma_v210",
                                                    "Bayer_BGGR",
                                                    "Bayer_GBRG",
                                                    "Bayer_GRBG",
                                                    "Bayer_RGGB",
                                                    "Bayer16_BGGR",
                                                    "Bayer16_GBRG",
                                                    "Bayer16_GRBG",
                                                    "Bayer16_RGGB",
                                                    "Bayer16BE_BGGR",
                                                    "Bayer16BE_GBRG",
                                                    "Bayer16BE_GRBG",
                                                    "Bayer16BE_RGGB"};
    for (int i = 0; i < kLayoutCount; ++i) {
      info[i] = dispatch_layout(static_cast<PixelLayout>(i), [](auto l) {
        using L = decltype(l);
        return LayoutInfo{nullptr,        L::kFamily, L::kDepth, L::kPlanes, L::kGroupPixels,
                          L::kGroupBytes, L::r,       L::g,      L::b};
      });
      info[i].name = names[i];
    }
  }
};

}  // namespace

const LayoutInfo &layout_info(PixelLayout layout) {
  static const LayoutTable table;
  return table.info[static_cast<int>(layout)];
}

}  // namespace cudagray
