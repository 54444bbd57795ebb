// SPDX-License-Identifier: LGPL-2.1-or-later
// layout_info: each layout's name, planes and channel positions, derived
// from dispatch_layout (layouts.h) so that the table and the kernels cannot
// disagree.
#include "cudagray/frame.h"
#include "layouts.h"

namespace cudagray {

namespace {

struct LayoutTable {
  static constexpr int kCount = static_cast<int>(PixelLayout::Luma) + 1;
  LayoutInfo info[kCount];
  LayoutTable() {
    static const char *const names[kCount] = {"RGB",  "BGR",  "RGBA", "BGRA", "RGBx",
                                              "BGRx", "xRGB", "xBGR", "ARGB", "ABGR",
                                              "RGBP", "BGRP", "GBR",  "Luma"};
    for (int i = 0; i < kCount; ++i) {
      info[i] = dispatch_layout(static_cast<PixelLayout>(i), [](auto l) { return describe(l); });
      info[i].name = names[i];
    }
  }
  template <int Bpp, int R, int G, int B>
  static LayoutInfo describe(PackedLayout<Bpp, R, G, B>) {
    return {nullptr, 1, Bpp, R, G, B};
  }
  template <int R, int G, int B>
  static LayoutInfo describe(PlanarLayout<R, G, B>) {
    return {nullptr, 3, 1, R, G, B};
  }
  static LayoutInfo describe(LumaLayout) { return {nullptr, 1, 1, 0, 0, 0}; }
};

}  // namespace

const LayoutInfo &layout_info(PixelLayout layout) {
  static const LayoutTable table;
  return table.info[static_cast<int>(layout)];
}

}  // namespace cudagray
