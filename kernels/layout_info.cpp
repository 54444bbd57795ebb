// SPDX-License-Identifier: LGPL-2.1-or-later
// layout_info: each layout's name, family, depth and how its pixels are
// stored, derived from dispatch_layout (layouts.h) so that the table and the
// kernels cannot disagree.
#include "cudagray/frame.h"
#include "layouts.h"

namespace cudagray {

namespace {

// A byte source that reads nothing and remembers how far it was read.
struct ReadExtent {
  mutable int end = 0;
  uint32_t at(int, int i) const {
    end = end > i + 1 ? end : i + 1;
    return 0;
  }
};

// The bytes of a group that its first k pixels read, for each k (tiled
// layouts: of their lines).
template <class L>
void find_partial_bytes(LayoutInfo *info) {
  if constexpr (kTiled<L>) {
    find_partial_bytes<typename L::Line>(info);
  } else {
    static_assert(L::kGroupPixels <= LayoutInfo::kMaxGroupPixels, "a group of too many pixels");
    const ReadExtent read;
    info->partial_bytes[0] = 0;
    for (int k = 1; k < L::kGroupPixels; ++k) {
      L::pixel(read, k - 1);
      info->partial_bytes[k] = read.end;
    }
  }
}

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
                                                    "GBR_10BE",
                                                    "GBR_12BE",
                                                    "GBR_16BE",
                                                    "RBGA",
                                                    "RGBA64_LE",
                                                    "RGBA64_BE",
                                                    "ARGB64_LE",
                                                    "ARGB64_BE",
                                                    "BGRA64_LE",
                                                    "BGRA64_BE",
                                                    "ABGR64_LE",
                                                    "ABGR64_BE",
                                                    "RGB10A2_LE",
                                                    "BGR10A2_LE",
                                                    "r210",
                                                    "RGB16",
                                                    "BGR16",
                                                    "RGB15",
                                                    "BGR15",
                                                    "Luma",
                                                    "Luma_Y0_2",
                                                    "Luma_Y1_2",
                                                    "Luma_Y1_4",
                                                    "Luma_Y2_4",
                                                    "Luma_Y0_3",
                                                    "Luma_Y1_3",
                                                    "Luma_IYU1",
                                                    "Luma10",
                                                    "Luma12",
                                                    "Luma16",
                                                    "Luma10_Msb",
                                                    "Luma12_Msb",
                                                    "Luma16_BE",
                                                    "Luma10_BE",
                                                    "Luma12_BE",
                                                    "Luma10_Msb_BE",
                                                    "Luma12_Msb_BE",
                                                    "Luma10_Msb_Y0_2",
                                                    "Luma12_Msb_Y0_2",
                                                    "Luma12_Msb_BE_Y0_2",
                                                    "Luma16_Y0_2",
                                                    "Luma16_BE_Y0_2",
                                                    "Luma16_Y1_2",
                                                    "Luma12_Msb_Y1_4",
                                                    "Luma12_Msb_BE_Y1_4",
                                                    "Luma16_Y1_4",
                                                    "Luma16_BE_Y1_4",
                                                    "Luma_v210",
                                                    "Luma_Y410",
                                                    "Luma_10LE32",
                                                    "Luma_10LE40",
                                                    "Luma_UYVP",
                                                    "Luma_4L4",
                                                    "Luma_32L32",
                                                    "Luma_16L32",
                                                    "Luma_8L128",
                                                    "Luma_64Z32",
                                                    "Luma_10LE40_4L4",
                                                    "Luma_10BE_8L128",
                                                    "Luma_MT2110T",
                                                    "Luma_MT2110R",
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
        using T = Tiling<L>;
        LayoutInfo info{nullptr,
                        L::kFamily,
                        L::kDepth,
                        L::kPlanes,
                        L::kGroupPixels,
                        L::kGroupBytes,
                        L::r,
                        L::g,
                        L::b,
                        {},
                        T::kRows,
                        T::kRowBytes,
                        T::kBytes,
                        T::kXTilesMultiple};
        if constexpr (L::kFamily != LayoutFamily::Bayer) find_partial_bytes<L>(&info);
        return info;
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
