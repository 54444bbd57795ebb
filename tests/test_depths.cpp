// SPDX-License-Identifier: LGPL-2.1-or-later
// The 16-bit formula (weights.h) on the CPU kernels, for every layout but
// Bayer (tests/test_formats.cpp checks Bayer against bayer2rgb): every code
// of every depth through each range, RGB on random frames and at the
// extremes, GRAY8 = round(GRAY16 / 257) everywhere. Where samples sit and
// what they become are written here from the formats' documentation, apart
// from kernels/.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "common.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

// Where one sample of pixel x sits in its row: plane, first byte, the
// little- or big-endian word of word_bytes holding it, and its bits there.
struct Spot {
  int plane;
  size_t byte;
  int word_bytes;
  bool big_endian;
  int shift, bits;
};

// channel: 0, 1, 2 for R, G, B; 0 for luma.
Spot spot(PixelLayout layout, int x, int channel) {
  const size_t ux = static_cast<size_t>(x);
  const std::string_view name = layout_info(layout).name;
  switch (layout) {
    case PixelLayout::GBR_10LE:
    case PixelLayout::GBR_12LE:
    case PixelLayout::GBR_16LE:
    case PixelLayout::GBR_10BE:
    case PixelLayout::GBR_12BE:
    case PixelLayout::GBR_16BE: {
      const int plane_of[3] = {2, 0, 1};  // G, B, R planes
      const int bits = name.substr(4, 2) == "10" ? 10 : name.substr(4, 2) == "12" ? 12 : 16;
      return {plane_of[channel], 2 * ux, 2, name.substr(name.size() - 2) == "BE", 0, bits};
    }
    case PixelLayout::RGBA64_LE:
    case PixelLayout::RGBA64_BE:
    case PixelLayout::ARGB64_LE:
    case PixelLayout::ARGB64_BE:
    case PixelLayout::BGRA64_LE:
    case PixelLayout::BGRA64_BE:
    case PixelLayout::ABGR64_LE:
    case PixelLayout::ABGR64_BE: {  // 16-bit words in the order of the name
      const size_t word = name.find("RGB"[channel]);
      return {0, 8 * ux + 2 * word, 2, name.substr(name.size() - 2) == "BE", 0, 16};
    }
    case PixelLayout::RGB10A2_LE: return {0, 4 * ux, 4, false, 10 * channel, 10};
    case PixelLayout::BGR10A2_LE: return {0, 4 * ux, 4, false, 10 * (2 - channel), 10};
    case PixelLayout::r210: return {0, 4 * ux, 4, true, 10 * (2 - channel), 10};
    case PixelLayout::RGB16:
    case PixelLayout::BGR16:
    case PixelLayout::RGB15:
    case PixelLayout::BGR15: {  // the first-named channel in the top bits
      const int g_bits = name[4] == '6' ? 6 : 5;
      const int shift[3] = {g_bits + 5, 5, 0};  // of the channels in the name's order
      const int at = static_cast<int>(name.find("RGB"[channel]));
      return {0, 2 * ux, 2, false, shift[at], channel == 1 ? g_bits : 5};
    }
    case PixelLayout::Luma: return {0, ux, 1, false, 0, 8};
    case PixelLayout::Luma_Y0_2: return {0, 2 * ux, 1, false, 0, 8};
    case PixelLayout::Luma_Y1_2: return {0, 2 * ux + 1, 1, false, 0, 8};
    case PixelLayout::Luma_Y1_4: return {0, 4 * ux + 1, 1, false, 0, 8};
    case PixelLayout::Luma_Y2_4: return {0, 4 * ux + 2, 1, false, 0, 8};
    case PixelLayout::Luma_Y0_3: return {0, 3 * ux, 1, false, 0, 8};
    case PixelLayout::Luma_Y1_3: return {0, 3 * ux + 1, 1, false, 0, 8};
    case PixelLayout::Luma_IYU1: {  // U Y0 Y1 V Y2 Y3
      const size_t at[4] = {1, 2, 4, 5};
      return {0, 6 * (ux / 4) + at[x % 4], 1, false, 0, 8};
    }
    case PixelLayout::Luma10: return {0, 2 * ux, 2, false, 0, 10};
    case PixelLayout::Luma12: return {0, 2 * ux, 2, false, 0, 12};
    case PixelLayout::Luma16: return {0, 2 * ux, 2, false, 0, 16};
    case PixelLayout::Luma10_Msb: return {0, 2 * ux, 2, false, 6, 10};
    case PixelLayout::Luma12_Msb: return {0, 2 * ux, 2, false, 4, 12};
    case PixelLayout::Luma16_BE: return {0, 2 * ux, 2, true, 0, 16};
    case PixelLayout::Luma10_BE: return {0, 2 * ux, 2, true, 0, 10};
    case PixelLayout::Luma12_BE: return {0, 2 * ux, 2, true, 0, 12};
    case PixelLayout::Luma10_Msb_BE: return {0, 2 * ux, 2, true, 6, 10};
    case PixelLayout::Luma12_Msb_BE: return {0, 2 * ux, 2, true, 4, 12};
    // Y210, Y212: Y0 U Y1 V words; Y216 the same; v216: U Y0 V Y1
    case PixelLayout::Luma10_Msb_Y0_2: return {0, 4 * ux, 2, false, 6, 10};
    case PixelLayout::Luma12_Msb_Y0_2: return {0, 4 * ux, 2, false, 4, 12};
    case PixelLayout::Luma12_Msb_BE_Y0_2: return {0, 4 * ux, 2, true, 4, 12};
    case PixelLayout::Luma16_Y0_2: return {0, 4 * ux, 2, false, 0, 16};
    case PixelLayout::Luma16_BE_Y0_2: return {0, 4 * ux, 2, true, 0, 16};
    case PixelLayout::Luma16_Y1_2: return {0, 4 * ux + 2, 2, false, 0, 16};
    // Y412, Y416: U Y V A words; AYUV64: A Y U V
    case PixelLayout::Luma12_Msb_Y1_4: return {0, 8 * ux + 2, 2, false, 4, 12};
    case PixelLayout::Luma12_Msb_BE_Y1_4: return {0, 8 * ux + 2, 2, true, 4, 12};
    case PixelLayout::Luma16_Y1_4: return {0, 8 * ux + 2, 2, false, 0, 16};
    case PixelLayout::Luma16_BE_Y1_4: return {0, 8 * ux + 2, 2, true, 0, 16};
    case PixelLayout::Luma_v210: {
      // each 16 bytes: Cb0 Y0 Cr0 | Y1 Cb1 Y2 | Cr1 Y3 Cb2 | Y4 Cr2 Y5, 10 bits
      // a field from bit 0 of little-endian 32-bit words
      const int word[6] = {0, 1, 1, 2, 3, 3}, field[6] = {1, 0, 2, 1, 0, 2};
      return {0, 16 * (ux / 6) + 4 * word[x % 6], 4, false, 10 * field[x % 6], 10};
    }
    // Y410: U in bits 0-9 of a little-endian 32-bit word, Y 10-19, V 20-29
    case PixelLayout::Luma_Y410: return {0, 4 * ux, 4, false, 10, 10};
    // 3 codes in bits 0-9, 10-19, 20-29 of a little-endian 32-bit word
    case PixelLayout::Luma_10LE32: return {0, 4 * (ux / 3), 4, false, 10 * (x % 3), 10};
    // 4 codes in 5 bytes, from bit 0 of byte 0 on: code k from bit 10 k
    case PixelLayout::Luma_10LE40: {
      const int bit = 10 * (x % 4);
      return {0, 5 * (ux / 4) + bit / 8, 2, false, bit % 8, 10};
    }
    // U0 Y0 V0 Y1 in 5 bytes, from the top bit of byte 0 on: Y0 the 3rd to 12th
    // bits of the big-endian word at byte 1, Y1 the low 10 of the one at byte 3
    case PixelLayout::Luma_UYVP:
      return {0, 5 * (ux / 2) + (x % 2 ? 3 : 1), 2, true, x % 2 ? 0 : 4, 10};
    // tiled: where the code lies in its line, before the line is cut into
    // tiles (line_byte finds each byte in its tile)
    case PixelLayout::Luma_4L4:
    case PixelLayout::Luma_32L32:
    case PixelLayout::Luma_16L32:
    case PixelLayout::Luma_8L128:
    case PixelLayout::Luma_64Z32:
    case PixelLayout::Luma_MT2110T:  // its 8 high bits: code_bits adds the 2 low ones
    case PixelLayout::Luma_MT2110R: return {0, ux, 1, false, 0, 8};
    case PixelLayout::Luma_10LE40_4L4: return spot(PixelLayout::Luma_10LE40, x, channel);
    case PixelLayout::Luma_10BE_8L128: {  // a line of 10-bit codes from its top bit on
      const int bit = 10 * x % 8;
      return {0, 10 * ux / 8, 2, true, 6 - bit, 10};
    }
    default: {  // 8-bit RGB, named by where R, G and B are: "xBGR", "GBR" (planes)
      const bool planar = name == "RGBP" || name == "BGRP" || name == "GBR";
      const int at = static_cast<int>(name.find("RGB"[channel]));
      if (planar) return {at, ux, 1, false, 0, 8};
      return {0, ux * name.size() + at, 1, false, 0, 8};
    }
  }
}

// Bits of a channel's codes.
int channel_bits(PixelLayout layout, int channel) {
  const bool mt2110 = layout == PixelLayout::Luma_MT2110T || layout == PixelLayout::Luma_MT2110R;
  return mt2110 ? 10 : spot(layout, 0, channel).bits;
}

// Tiles: the bytes of a tile's row, its rows, and whether tiles are in
// Z-flip order (0: the layout is not tiled).
struct Tile {
  int row_bytes, rows;
  bool z_flip;
};
Tile tile_of(PixelLayout layout) {
  switch (layout) {
    case PixelLayout::Luma_4L4: return {4, 4, false};
    case PixelLayout::Luma_32L32: return {32, 32, false};
    case PixelLayout::Luma_16L32: return {16, 32, false};
    case PixelLayout::Luma_8L128: return {8, 128, false};
    case PixelLayout::Luma_64Z32: return {64, 32, true};
    case PixelLayout::Luma_10LE40_4L4: return {5, 4, false};
    case PixelLayout::Luma_10BE_8L128: return {8, 128, false};
    case PixelLayout::Luma_MT2110T:
    case PixelLayout::Luma_MT2110R: return {16, 32, false};
    default: return {0, 0, false};
  }
}

// Where byte i of row y of a plane lies among f's bytes. Tiled: tiles of
// Tile::rows rows of Tile::row_bytes bytes, in rows of tiles (as many as
// the stride's low 16 bits say; its high 16 bits count the rows of tiles),
// in linear order, or in Z-flip order: rows of tiles in pairs, each pair
// in blocks of 2 by 2 tiles taken in a Z, then a mirrored Z, and so on (an
// odd last row of tiles linear). MT2110: tiles of 640 bytes, 8 blocks of
// 4 rows of 16 pixels, each block 16 bytes of 2-bit low parts then the
// rows of 8-bit high parts.
size_t line_byte(const TestFrame &f, int plane, int y, size_t i) {
  const Tile t = tile_of(f.layout);
  if (t.rows == 0) return f.offset[plane] + y * f.stride[plane] + i;
  const size_t x_tiles = f.stride[0] & 0xFFFF, y_tiles = f.stride[0] >> 16;
  const size_t tx = i / t.row_bytes, ty = y / t.rows;
  size_t tile = ty * x_tiles + tx;
  if (t.z_flip) {
    const size_t pair = ty / 2 * 2 * x_tiles, block = tx / 4 * 8, in_block = tx % 4;
    const bool linear_last_row = y_tiles % 2 == 1 && ty == y_tiles - 1;
    const size_t order[2][4] = {{0, 1, 6, 7}, {2, 3, 4, 5}};  // tiles of 4 columns, both rows
    tile = linear_last_row ? pair + tx : pair + block + order[ty % 2][in_block];
  }
  if (f.layout == PixelLayout::Luma_MT2110T || f.layout == PixelLayout::Luma_MT2110R)
    return f.offset[0] + tile * 640 + y % 32 / 4 * 80 + 16 + y % 4 * 16 + i % 16;
  return f.offset[0] + tile * t.row_bytes * t.rows + y % t.rows * t.row_bytes + i % t.row_bytes;
}

// Where each bit of a code lies: bit j of the code is bit bit[j] of byte
// byte[j] of f's bytes.
struct CodeBits {
  int count;
  size_t byte[16];
  int bit[16];
};

CodeBits code_bits(const TestFrame &f, int x, int y, int channel) {
  CodeBits c{};
  const Spot s = spot(f.layout, x, channel);
  int j = 0;
  if (f.layout == PixelLayout::Luma_MT2110T || f.layout == PixelLayout::Luma_MT2110R) {
    // the 2 low bits, in the block's first 16 bytes: in byte x, bits 2r and
    // 2r + 1 for row r of the block (T); in byte 4r + x / 4, bits 2 (x % 4)
    // and up (R)
    const size_t high = line_byte(f, 0, y, x), row = y % 4, column = x % 16;
    const size_t block = high - 16 - row * 16 - column;
    const bool raster = f.layout == PixelLayout::Luma_MT2110R;
    for (; j < 2; ++j) {
      c.byte[j] = block + (raster ? 4 * row + column / 4 : column);
      c.bit[j] = static_cast<int>(raster ? 2 * (column % 4) : 2 * row) + j;
    }
  }
  size_t word[4];  // the word's bytes, least significant first
  for (int k = 0; k < s.word_bytes; ++k)
    word[k] = line_byte(f, s.plane, y, s.byte + (s.big_endian ? s.word_bytes - 1 - k : k));
  for (int k = 0; k < s.bits; ++k, ++j) {
    c.byte[j] = word[(s.shift + k) / 8];
    c.bit[j] = (s.shift + k) % 8;
  }
  c.count = j;
  return c;
}

uint32_t code_at(const TestFrame &f, int x, int y, int channel) {
  const Spot s = spot(f.layout, x, channel);
  if (tile_of(f.layout).rows == 0) {  // a word in the row
    const uint8_t *p = f.bytes.data() + f.offset[s.plane] + y * f.stride[s.plane] + s.byte;
    uint32_t word = 0;
    for (int i = 0; i < s.word_bytes; ++i)
      word |= uint32_t{p[s.big_endian ? s.word_bytes - 1 - i : i]} << (8 * i);
    return (word >> s.shift) & ((1u << s.bits) - 1);
  }
  const CodeBits c = code_bits(f, x, y, channel);
  uint32_t code = 0;
  for (int j = 0; j < c.count; ++j) code |= uint32_t{(f.bytes[c.byte[j]] >> c.bit[j]) & 1u} << j;
  return code;
}

// Writes code into its bits, leaving the other bits as they were (random:
// the kernels must ignore them).
void set_code(TestFrame &f, int x, int y, int channel, uint32_t code) {
  const CodeBits c = code_bits(f, x, y, channel);
  for (int j = 0; j < c.count; ++j) {
    uint8_t &byte = f.bytes[c.byte[j]];
    byte = static_cast<uint8_t>((byte & ~(1u << c.bit[j])) | ((code >> j) & 1u) << c.bit[j]);
  }
}

// The documented formula. A d-bit code to 16 bits: its bits repeated (5
// bits: v v v and v's top bit; 6 bits: v v and v's top 4 bits).
uint32_t to16(uint32_t v, int d) {
  if (d == 5) return v << 11 | v << 6 | v << 1 | v >> 4;
  if (d == 6) return v << 10 | v << 4 | v >> 2;
  return d == 16 ? v : v * (1u << (16 - d)) + (v >> (2 * d - 16));
}

uint32_t luma16(uint32_t v, int d, bool limited) {
  if (!limited) return to16(v, d);
  const uint64_t black = 16u << (d - 8), range = 219u << (d - 8);
  if (v <= black) return 0;
  // round half up: floor((2 * n + range) / (2 * range))
  const uint64_t g = (2 * (v - black) * 65535u + range) / (2 * range);
  return static_cast<uint32_t>(std::min<uint64_t>(g, 65535));
}

uint32_t rgb16(const Weights &w, const uint32_t c[3], const int d[3]) {
  const uint64_t s = uint64_t{w.r} * to16(c[0], d[0]) + uint64_t{w.g} * to16(c[1], d[1]) +
                     uint64_t{w.b} * to16(c[2], d[2]) + 32768;
  return static_cast<uint32_t>(std::min<uint64_t>(s / 65536, 65535));
}

uint32_t to8(uint32_t g16) { return (g16 + 128) / 257; }

// Checks every pixel of f converted to GRAY8 and GRAY16 (and, for luma,
// both ranges) against the formula, and the row padding.
void expect_formula(const TestFrame &f, const WeightChoice &c) {
  const LayoutInfo &info = layout_info(f.layout);
  const bool luma = info.family == LayoutFamily::Luma;
  const Weights w = weights_of(c);
  const int bits[3] = {channel_bits(f.layout, 0), channel_bits(f.layout, 1),
                       channel_bits(f.layout, 2)};
  for (int depth : {8, 16}) {
    for (bool limited : {false, true}) {
      if (limited && !luma) continue;
      SCOPED_TRACE(std::string(info.name) + " " + std::to_string(f.width) + "x" +
                   std::to_string(f.height) + " " + c.name + " GRAY" + std::to_string(depth) +
                   (limited ? " limited" : ""));
      GrayImage out(f.width, f.height, 2 * random_int(1, 17), depth);
      convert_cpu(f.conversion(depth, limited), f.view(), out.frame(), w);
      int wrong = 0;
      for (int y = 0; y < f.height; ++y)
        for (int x = 0; x < f.width; ++x) {
          uint32_t g16;
          if (luma) {
            g16 = luma16(code_at(f, x, y, 0), bits[0], limited);
          } else {
            const uint32_t rgb[3] = {code_at(f, x, y, 0), code_at(f, x, y, 1), code_at(f, x, y, 2)};
            g16 = rgb16(w, rgb, bits);
          }
          const uint32_t expected = depth == 16 ? g16 : to8(g16);
          if (out.at(x, y) != expected && wrong++ < 3)
            ADD_FAILURE() << "pixel " << x << "," << y << ": " << out.at(x, y) << " expected "
                          << expected;
        }
      EXPECT_EQ(wrong, 0);
      EXPECT_TRUE(padding_untouched(out));
    }
  }
}

std::vector<PixelLayout> layouts_read_pixel_by_pixel() {
  std::vector<PixelLayout> all;
  for (PixelLayout l : every_layout())
    if (layout_info(l).family != LayoutFamily::Bayer) all.push_back(l);
  return all;
}

class Depths : public ::testing::TestWithParam<PixelLayout> {};

}  // namespace

// Random frames with padded rows at every test size and weight choice.
TEST_P(Depths, EveryPixelOfRandomFrames) {
  for (const Size &size : kSizes) {
    const TestFrame f = random_frame(GetParam(), size.width, size.height);
    for (const WeightChoice &c : kWeightChoices) expect_formula(f, c);
  }
}

// Every width up to 100 (each way a row can end for any block of pixels
// the kernels work in) and the row-aligned layout.
TEST_P(Depths, EveryWidthUpTo100) {
  for (int width = 1; width <= 100; ++width)
    expect_formula(random_frame(GetParam(), width, 2, Rows::Aligned16), kWeightChoices[1]);
}

// Every code of each channel's depth (32 to 65536 of them), in every
// channel, through each range; the other bits of each word random.
TEST_P(Depths, EveryCodeOfTheDepth) {
  const LayoutInfo &info = layout_info(GetParam());
  const int channels = info.family == LayoutFamily::Rgb ? 3 : 1;
  int most = 0;
  for (int channel = 0; channel < channels; ++channel)
    most = std::max(most, 1 << channel_bits(GetParam(), channel));
  const int width = std::min(most, 256), height = most / width;
  TestFrame f = random_frame(GetParam(), width, height);
  for (int channel = 0; channel < channels; ++channel) {
    const int codes = 1 << channel_bits(GetParam(), channel);
    for (int i = 0; i < codes; ++i) set_code(f, i % width, i / width, channel, i);
    for (const WeightChoice &c : kWeightChoices) expect_formula(f, c);
    if (::testing::Test::HasFailure()) return;
    f = random_frame(GetParam(), width, height);
  }
}

// The extremes: every sample 0 or the depth's maximum, with the standard
// and the extreme custom weights (each coefficient 0 or 64).
TEST_P(Depths, Extremes) {
  const LayoutInfo &info = layout_info(GetParam());
  const int channels = info.family == LayoutFamily::Rgb ? 3 : 1;
  std::vector<WeightChoice> choices = kWeightChoices;
  for (double r : {0.0, 64.0})
    for (double g : {0.0, 64.0})
      for (double b : {0.0, 64.0}) choices.push_back({"extreme", Matrix::Custom, {r, g, b}});
  TestFrame f = random_frame(GetParam(), 9, 8);  // one row per pattern of the 3 channels
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 9; ++x)
      for (int c = 0; c < channels; ++c)
        set_code(f, x, y, c, (y >> c) & 1 ? (1u << channel_bits(GetParam(), c)) - 1 : 0);
  for (const WeightChoice &c : choices) expect_formula(f, c);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Depths, ::testing::ValuesIn(layouts_read_pixel_by_pixel()),
                         [](const auto &info) {
                           return std::string(layout_info(info.param).name);
                         });

// GRAY8 of 8-bit RGB keeps the 8-bit formula, which is round(GRAY16 / 257)
// of the 16-bit one: checked on every pixel of a large random sample (64
// frames of 1920x1080 and random custom weights), beside the frames above.
TEST(Gray8, EightBitRgbIsTheSixteenBitFormulaReduced) {
  long checked = 0;
  for (int i = 0; i < 64; ++i) {
    const PixelLayout layout = kRgb8Layouts[i % std::size(kRgb8Layouts)];
    const TestFrame f = random_frame(layout, 1920, 1080);
    auto k = [] { return random_int(0, 4 * 65536) / 65536.0; };
    const WeightChoice c = i % 2 ? kWeightChoices[i % kWeightChoices.size()]
                                 : WeightChoice{"random", Matrix::Custom, {k(), k(), k()}};
    GrayImage g8(f.width, f.height, 0, 8), g16(f.width, f.height, 0, 16);
    convert_cpu(f.conversion(g8.depth), f.view(), g8.frame(), weights_of(c));
    convert_cpu(f.conversion(g16.depth), f.view(), g16.frame(), weights_of(c));
    int wrong = 0;
    for (int y = 0; y < f.height; ++y)
      for (int x = 0; x < f.width; ++x) wrong += g8.at(x, y) != to8(g16.at(x, y));
    EXPECT_EQ(wrong, 0) << layout_info(layout).name << " " << c.name;
    checked += long{f.width} * f.height;
  }
  std::printf("%ld pixels: GRAY8 = round(GRAY16 / 257)\n", checked);
}

// The reduction itself, for every 16-bit value, against the division.
TEST(Gray8, ReductionIsRoundingDivisionBy257ForEveryValue) {
  TestFrame f = random_frame(PixelLayout::Luma16, 256, 256, Rows::Tight);
  for (int v = 0; v < 65536; ++v) set_code(f, v % 256, v / 256, 0, v);
  GrayImage out(256, 256);
  convert_cpu(f.conversion(out.depth), f.view(), out.frame(), standard_weights(Matrix::BT601));
  for (int v = 0; v < 65536; ++v) {
    const int rounded = static_cast<int>(std::lround(v / 257.0));
    ASSERT_EQ(static_cast<int>(out.at(v % 256, v / 256)), rounded) << v;
  }
}
