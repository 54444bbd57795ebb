// Formats, weights and the CPU backend: the reference every other path must
// match bit for bit.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <thread>
#include <vector>

#include "gray.h"
#include "layouts.h"

namespace cudagray {

namespace {

// Each layout's description, derived from dispatch_layout so that the table
// and the kernels cannot disagree.
struct LayoutTable {
  static constexpr int kCount = sizeof(kAllLayouts) / sizeof(kAllLayouts[0]);
  LayoutInfo info[kCount];
  LayoutTable() {
    static const char *const names[kCount] = {"RGB",  "BGR",  "RGBA", "BGRA", "RGBx",
                                              "BGRx", "xRGB", "xBGR", "ARGB", "ABGR",
                                              "RGBP", "BGRP", "GBR"};
    for (int i = 0; i < kCount; ++i) {
      info[i] = dispatch_layout(kAllLayouts[i], [](auto l) { return describe(l); });
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
};

template <int Bpp, int R, int G, int B>
void convert_rows(PackedLayout<Bpp, R, G, B>, const InputFrame &in,
                  const GrayFrame &out, const Weights &w, int y0, int y1) {
  const Weights weights = w;  // a local copy lets the compiler keep it in registers
  for (int y = y0; y < y1; ++y) {
    const uint8_t *src = in.plane[0] + y * in.stride[0];
    uint8_t *dst = out.data + y * out.stride;
    for (int x = 0; x < in.width; ++x) {
      const uint8_t *px = src + x * Bpp;
      dst[x] = luma(px[R], px[G], px[B], weights);
    }
  }
}

template <int R, int G, int B>
void convert_rows(PlanarLayout<R, G, B>, const InputFrame &in,
                  const GrayFrame &out, const Weights &w, int y0, int y1) {
  const Weights weights = w;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *__restrict r = in.plane[R] + y * in.stride[R];
    const uint8_t *__restrict g = in.plane[G] + y * in.stride[G];
    const uint8_t *__restrict b = in.plane[B] + y * in.stride[B];
    uint8_t *__restrict dst = out.data + y * out.stride;
    for (int x = 0; x < in.width; ++x) dst[x] = luma(r[x], g[x], b[x], weights);
  }
}

// Below this many pixels a frame is converted on the calling thread alone:
// starting threads would cost more than it saves.
constexpr long kPixelsPerThread = 1 << 16;

}  // namespace

const LayoutInfo &layout_info(PixelLayout layout) {
  static const LayoutTable table;
  return table.info[static_cast<int>(layout)];
}

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

bool parse_coefficients(const char *text, Coefficients *out, std::string *error) {
  const std::string s = text ? text : "";
  double values[3];
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t end = i < 2 ? s.find(',', pos) : s.size();
    if (end == std::string::npos || (i == 2 && s.find(',', pos) != std::string::npos)) {
      *error = "expected three comma-separated numbers \"R,G,B\", got \"" + s + "\"";
      return false;
    }
    std::string field = s.substr(pos, end - pos);
    field.erase(0, field.find_first_not_of(" \t"));
    field.erase(field.find_last_not_of(" \t") + 1);
    const char *first = field.c_str(), *last = first + field.size();
    auto [ptr, ec] = std::from_chars(first, last, values[i]);
    if (field.empty() || ec != std::errc() || ptr != last) {
      *error = "\"" + field + "\" is not a number in \"" + s + "\"";
      return false;
    }
    if (!std::isfinite(values[i]) || values[i] < 0.0 || values[i] > kMaxCustomCoefficient) {
      *error = "weight \"" + field + "\" is outside 0.." +
               std::to_string(static_cast<int>(kMaxCustomCoefficient));
      return false;
    }
    pos = end + 1;
  }
  *out = {values[0], values[1], values[2]};
  return true;
}

std::string format_coefficients(const Coefficients &k) {
  std::string text;
  for (double v : {k.r, k.g, k.b}) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (!text.empty()) text += ',';
    text.append(buf, ec == std::errc() ? end : buf);
  }
  return text;
}

void convert_cpu(const InputFrame &in, const GrayFrame &out, const Weights &w,
                 int threads) {
  auto rows = [&](int y0, int y1) {
    dispatch_layout(in.layout, [&](auto layout) { convert_rows(layout, in, out, w, y0, y1); });
  };
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const long pixels = static_cast<long>(in.width) * in.height;
  threads = static_cast<int>(std::clamp<long>(pixels / kPixelsPerThread, 1, threads));
  threads = std::min(threads, in.height);
  if (threads <= 1) {
    rows(0, in.height);
    return;
  }
  // Bands of whole rows; the calling thread takes the first one.
  std::vector<std::thread> helpers;
  auto band_start = [&](int i) { return static_cast<int>(static_cast<long>(in.height) * i / threads); };
  for (int i = 1; i < threads; ++i) helpers.emplace_back(rows, band_start(i), band_start(i + 1));
  rows(0, band_start(1));
  for (auto &t : helpers) t.join();
}

}  // namespace cudagray
