// SPDX-License-Identifier: LGPL-2.1-or-later
// Bayer demosaicking, pixel by pixel, for the CPU and CUDA kernels: exactly
// what GStreamer's bayer2rgb computes, so that gray from a Bayer frame equals
// bayer2rgb ! RGBx ! cudagray bit for bit (docs/formats.md, "Bayer").
//
// bayer2rgb works in two passes, both with avg(a, b) = (a + b + 1) >> 1:
// - along each row, every column gets two values: E, the colour of the row's
//   even columns, and O, that of its odd ones, each the sample itself where
//   the column has it and the average of its left and right neighbours where
//   not; at the row's ends, where a neighbour is missing, the one neighbour
//   there is (columns 0, width - 2 and width - 1);
// - down the columns, a pixel takes its own colour from its row and the
//   others from the rows above and below: avg(above, below) for the chroma
//   its row lacks, and for green at a chroma site avg(avg(above, below),
//   along the row). Row 0 takes row 1 as the row above; the last row takes
//   row height - 4 as the row below (bayer2rgb's line buffer still holds it),
//   or row 1 when the frame has 3 rows.
// 16-bit samples (10 to 16 bits significant, unmasked) go through the same
// two passes; the colours are then scaled to 16 bits as bayer2rgb's RGBA64
// output does, min(65535, (c * 65535) >> bits), and gray is that of the
// 16-bit RGB picture.
// Where bayer2rgb reads memory that is not the frame's (widths that are odd
// or 2, heights below 3), the values here are defined by the rules above
// with the missing neighbour replaced as at the other edges; docs/formats.md says
// which pixels those are.
#pragma once

#include <cstddef>
#include <cstdint>

#include "layouts.h"

namespace cudagray {

// The mosaic, plane 0 of a Bayer frame.
struct MosaicRows {
  const uint8_t *data;
  size_t pitch;
  int width, height;
};

CUDAGRAY_HOST_DEVICE uint32_t avg_up(uint32_t a, uint32_t b) { return (a + b + 1) >> 1; }

// Sample x of a mosaic row of Layout's samples (bytes, or 16-bit words).
template <class Layout>
CUDAGRAY_HOST_DEVICE uint32_t mosaic_sample(const uint8_t *row, int x) {
  if constexpr (Layout::kGroupBytes == 1)
    return row[x];
  else if constexpr (Layout::kBigEndian)
    return uint32_t{row[2 * x]} << 8 | row[2 * x + 1];
  else
    return row[2 * x] | uint32_t{row[2 * x + 1]} << 8;
}

// Sample x of a mosaic row of width w, x clamped into the row.
template <class Layout>
CUDAGRAY_HOST_DEVICE uint32_t mosaic_sample_clamped(const uint8_t *row, int x, int w) {
  return mosaic_sample<Layout>(row, x < 0 ? 0 : x >= w ? w - 1 : x);
}

// A demosaicked colour of bits-bit samples scaled to 16 bits as bayer2rgb
// does for RGBA64 (bits 0: 16); c * 65535 stays below 2^32.
CUDAGRAY_HOST_DEVICE uint32_t deep_bayer_to16(uint32_t c, int bits) {
  const uint32_t v = (c * 65535u) >> (bits > 0 ? bits : 16);
  return v > 65535u ? 65535u : v;
}

// The colour gray is taken from, given a demosaicked one of Layout's
// samples: as it is for 8 bits, scaled to 16 bits for 16-bit samples of
// sample_bits bits.
template <class Layout>
CUDAGRAY_HOST_DEVICE Rgb bayer_gray_colour(const Rgb &c, int sample_bits) {
  if constexpr (Layout::kDepth == 8)
    return c;
  else
    return {deep_bayer_to16(c.r, sample_bits), deep_bayer_to16(c.g, sample_bits),
            deep_bayer_to16(c.b, sample_bits)};
}

// The row pass at column x of a row of width w: E (colour of even columns)
// and O (colour of odd columns), from the row's samples at x - 1, x and
// x + 1, each clamped into the row (so that every read is inside it).
struct RowColours {
  uint32_t even, odd;
};

// Inside the row (0 < x < w - 2), where both neighbours count:
CUDAGRAY_HOST_DEVICE RowColours inner_row_colours(uint32_t left, uint32_t here, uint32_t right,
                                                  bool even) {
  const uint32_t between = avg_up(left, right);
  return even ? RowColours{here, between} : RowColours{between, here};
}

CUDAGRAY_HOST_DEVICE RowColours row_colours(uint32_t left, uint32_t here, uint32_t right, int x,
                                            int w) {
  const bool even = (x & 1) == 0;
  if (x >= w - 2) {                    // the row's last two columns: the left neighbour only...
    if (x == 0) return {here, right};  // ...or column 1 (itself, clamped, at width 1)
    return even ? RowColours{here, left} : RowColours{left, here};
  }
  if (x == 0) return {here, right};  // the first: the right neighbour only
  return inner_row_colours(left, here, right, even);
}

// The rows a pixel of row y takes as its rows above and below, in a mosaic
// of height rows (the edge rules above).
struct NeighbourRows {
  int above, below;
};

CUDAGRAY_HOST_DEVICE NeighbourRows neighbour_rows(int y, int height) {
  const int above = y > 0 ? y - 1 : (height > 1 ? 1 : 0);
  const int below = y < height - 1 ? y + 1 : height >= 4 ? height - 4 : height == 3 ? 1 : above;
  return {above, below};
}

// Whether row y's even columns hold chroma ("X": red when red is in column
// 0, else blue) and its odd ones green; the other rows hold green in their
// even columns and the other chroma ("Y") in their odd ones.
template <class Layout>
CUDAGRAY_HOST_DEVICE bool chroma_first(int y) {
  return (y & 1) == (Layout::kRedX == 0 ? Layout::kRedY : 1 - Layout::kRedY);
}

// R, G and B of a pixel of column x and row y of a mosaic whose red sample
// sits at (Layout::kRedX, Layout::kRedY) of each 2x2 block, from the row
// passes of the rows above (a), its own (c) and below (b) at that column.
// chroma_row: chroma_first<Layout>(y).
template <class Layout>
CUDAGRAY_HOST_DEVICE Rgb demosaic_in_row(const RowColours &a, const RowColours &c,
                                         const RowColours &b, int x, bool chroma_row) {
  const bool even = (x & 1) == 0;
  uint32_t chroma_x, chroma_y, green;
  if (chroma_row) {
    chroma_x = c.even;
    chroma_y = avg_up(a.odd, b.odd);
    green = even ? avg_up(avg_up(a.even, b.even), c.odd) : c.odd;
  } else {
    chroma_y = c.odd;
    chroma_x = avg_up(a.even, b.even);
    green = even ? c.even : avg_up(avg_up(a.odd, b.odd), c.even);
  }
  if (Layout::kRedX == 0) return {chroma_x, green, chroma_y};
  return {chroma_y, green, chroma_x};
}

template <class Layout>
CUDAGRAY_HOST_DEVICE Rgb demosaic(const RowColours &a, const RowColours &c, const RowColours &b,
                                  int x, int y) {
  return demosaic_in_row<Layout>(a, c, b, x, chroma_first<Layout>(y));
}

// R, G and B, in the samples' codes, of the N pixels of row y from column
// x0 on (as many as the row has), reading each sample of the three rows
// once: a window of N + 2 samples a row, clamped into the row.
template <class Layout, int N>
CUDAGRAY_HOST_DEVICE void bayer_run(const MosaicRows &m, int x0, int y, Rgb (&out)[N]) {
  const NeighbourRows rows = neighbour_rows(y, m.height);
  const int row_of[3] = {rows.above, y, rows.below};
  RowColours pass[3][N];
  for (int r = 0; r < 3; ++r) {
    const uint8_t *row = m.data + static_cast<size_t>(row_of[r]) * m.pitch;
    uint32_t window[N + 2];
    for (int j = 0; j < N + 2; ++j)
      window[j] = mosaic_sample_clamped<Layout>(row, x0 - 1 + j, m.width);
    for (int k = 0; k < N; ++k)
      pass[r][k] = row_colours(window[k], window[k + 1], window[k + 2], x0 + k, m.width);
  }
  for (int k = 0; k < N; ++k)
    out[k] = demosaic<Layout>(pass[0][k], pass[1][k], pass[2][k], x0 + k, y);
}

// R, G and B of pixel (x, y), in the samples' codes.
template <class Layout>
CUDAGRAY_HOST_DEVICE Rgb bayer_pixel(const MosaicRows &m, int x, int y) {
  Rgb c[1];
  bayer_run<Layout, 1>(m, x, y, c);
  return c[0];
}

// The colours gray is taken from, of the N pixels of row y from column x0
// on: bayer_run's, scaled to 16 bits for 16-bit samples of sample_bits bits.
template <class Layout, int N>
CUDAGRAY_HOST_DEVICE void bayer_colours(const MosaicRows &m, int x0, int y, int sample_bits,
                                        Rgb (&out)[N]) {
  bayer_run<Layout, N>(m, x0, y, out);
  for (Rgb &c : out) c = bayer_gray_colour<Layout>(c, sample_bits);
}

// The colour gray is taken from, of pixel (x, y).
template <class Layout>
CUDAGRAY_HOST_DEVICE Rgb bayer_colour(const MosaicRows &m, int x, int y, int sample_bits) {
  Rgb c[1];
  bayer_colours<Layout, 1>(m, x, y, sample_bits, c);
  return c[0];
}

}  // namespace cudagray
