// SPDX-License-Identifier: LGPL-2.1-or-later
// convert_cpu: the reference every other path must match bit for bit, with
// AVX-512, AVX2 and portable row kernels picked at run time.
#include "cudagray/convert_cpu.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "bayer.h"
#include "layouts.h"
#include "parallel.h"
#include "resample.h"

namespace cudagray {

namespace {

// ---------------------------------------------------------------- row kernels
//
// A kernel converts rows [y0, y1) of a frame of one layout into out's rows
// from its first on (row y0 at out.data), the layout coming
// from dispatch_layout at compile time, so one template per instruction set
// serves every format. All of them evaluate the formula itself in unsigned
// 32-bit lanes, S = wR*R + wG*G + wB*B + 32768 and Y = min(255, S >> 16),
// which is exact for every weight the API allows: each weight is at most
// 64 * 65536, so S stays below 2^32.

using RowsFn = void (*)(const SourceFrame &in, const GrayFrame &out, const Weights &w, int y0,
                        int y1);

// Bytes of the rows being converted, one pointer per plane read.
struct RowBytes {
  const uint8_t *row[3];
  uint32_t at(int plane, int i) const { return row[plane][i]; }
};

// Every layout read pixel by pixel (layouts.h) into gray of Out (uint8_t or
// uint16_t), for any op (ToGray): the one loop for every format the SIMD
// kernels below do not cover. Written so that the compiler vectorises it
// (fixed layout, fixed output type); CUDAGRAY_AVX2 instantiates it again
// for AVX2 where the CPU has it.
#if defined(__GNUC__) || defined(__clang__)
#define CUDAGRAY_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define CUDAGRAY_ALWAYS_INLINE inline
#endif

template <class Layout, class Out, class Op>
CUDAGRAY_ALWAYS_INLINE void pixels_body(const SourceFrame &in, const GrayFrame &out, const Op op,
                                        int y0, int y1) {
  const int width = in.width;  // a store could alias in.width: read it once
  for (int y = y0; y < y1; ++y) {
    Out *__restrict dst = reinterpret_cast<Out *>(out.data + (y - y0) * out.stride);
    if constexpr (kTiled<Layout>) {  // each pixel read where its tile keeps it
      for (int x = 0; x < width; ++x)
        dst[x] = static_cast<Out>(op(Layout::pixel_at(in.plane[0], in.stride[0], x, y)));
    } else {
      RowBytes src;
      for (int p = 0; p < Layout::kPlanes; ++p) src.row[p] = in.plane[p] + y * in.stride[p];
      constexpr int G = Layout::kGroupPixels;
      if constexpr (G == 1) {
        for (int x = 0; x < width; ++x) dst[x] = static_cast<Out>(op(Layout::pixel(src, x)));
      } else {
        // group by group (v210: 6 pixels in 16 bytes), so that each pixel's
        // place in its group is a constant; the ragged end pixel by pixel
        const int groups = width / G;
        for (int g = 0; g < groups; ++g) {
          RowBytes group = src;
          for (int p = 0; p < Layout::kPlanes; ++p) group.row[p] += g * Layout::kGroupBytes;
          for (int k = 0; k < G; ++k)
            dst[g * G + k] = static_cast<Out>(op(Layout::pixel(group, k)));
        }
        for (int x = groups * G; x < width; ++x)
          dst[x] = static_cast<Out>(op(Layout::pixel(src, x)));
      }
    }
  }
}

// 8-bit full-range luma to GRAY8 is the luma plane itself: rows copied.
template <class Layout, class Op>
constexpr bool kCopiesRows =
    std::is_same_v<Layout, LumaLayout<>> &&std::is_same_v<Op, ToGray<LumaLayout<>, 8, false>>;

template <class Layout, class Op>
CUDAGRAY_ALWAYS_INLINE void pixel_rows(const SourceFrame &in, const GrayFrame &out,
                                       const Weights &w, int y0, int y1) {
  if constexpr (kCopiesRows<Layout, Op>) {
    for (int y = y0; y < y1; ++y)
      std::memcpy(out.data + (y - y0) * out.stride, in.plane[0] + y * in.stride[0], in.width);
  } else {
    using Out = std::conditional_t<Op::kOutDepth == 16, uint16_t, uint8_t>;
    pixels_body<Layout, Out>(in, out, Op{w}, y0, y1);
  }
}

template <class Layout, class Op>
void rows_pixels(const SourceFrame &in, const GrayFrame &out, const Weights &w, int y0, int y1) {
  pixel_rows<Layout, Op>(in, out, w, y0, y1);
}

// Bayer, a row at a time, in loops the compiler vectorises: bayer.h's row
// pass over whole rows (E and O of every column), kept for the next output
// row, which needs two of the same rows; then the chroma at even columns
// (X), the other chroma (Y) and green of every column, which is
// bayer_pixel's arithmetic with its choices made per row and per column
// parity; then gray, as from planar RGB. The edge columns come from
// bayer.h's row_colours itself.
template <class Sample>
struct RowPass {
  int row = -1;
  std::vector<Sample> even, odd;
};

template <class Layout, class Sample>
void row_pass(const MosaicRows &m, int y, RowPass<Sample> *pass) {
  const int w = m.width;
  pass->row = y;
  pass->even.resize(w);
  pass->odd.resize(w);
  const uint8_t *__restrict row = m.data + static_cast<size_t>(y) * m.pitch;
  Sample *__restrict e = pass->even.data();
  Sample *__restrict o = pass->odd.data();
  // the middle columns: the sample, and the average of its two neighbours
  for (int x = 1; x < w - 2; ++x) {
    const auto sample = static_cast<Sample>(mosaic_sample<Layout>(row, x));
    const auto between = static_cast<Sample>(
        avg_up(mosaic_sample<Layout>(row, x - 1), mosaic_sample<Layout>(row, x + 1)));
    e[x] = x & 1 ? between : sample;
    o[x] = x & 1 ? sample : between;
  }
  for (int x : {0, 1, 2, w - 2, w - 1})  // the edges, and every column of a narrow row
    if (x >= 0 && x < w && (x == 0 || x >= w - 2 || w < 4)) {
      const RowColours c = row_colours(mosaic_sample_clamped<Layout>(row, x - 1, w),
                                       mosaic_sample_clamped<Layout>(row, x, w),
                                       mosaic_sample_clamped<Layout>(row, x + 1, w), x, w);
      e[x] = static_cast<Sample>(c.even), o[x] = static_cast<Sample>(c.odd);
    }
}

// The row passes of rows a, b and c (in that order), made from those of the
// last call where they were there.
template <class Layout, class Sample>
void row_passes(const MosaicRows &m, const int (&rows)[3], RowPass<Sample> (&cache)[3],
                const RowPass<Sample> *(&found)[3]) {
  bool kept[3] = {false, false, false};
  for (int i = 0; i < 3; ++i) {
    found[i] = nullptr;
    for (int k = 0; k < 3 && !found[i]; ++k)  // the first copy (a row may be there twice)
      if (cache[k].row == rows[i]) found[i] = &cache[k], kept[k] = true;
  }
  for (int i = 0; i < 3; ++i) {
    if (found[i]) continue;
    int k = 0;
    while (kept[k]) ++k;
    row_pass<Layout>(m, rows[i], &cache[k]);
    kept[k] = true;
    for (int j = i; j < 3; ++j)
      if (rows[j] == rows[i]) found[j] = &cache[k];
  }
}

template <class Layout, int OutDepth>
void rows_bayer(const SourceFrame &in, const GrayFrame &out, const Weights &w, int y0, int y1) {
  using Out = std::conditional_t<OutDepth == 16, uint16_t, uint8_t>;
  using Sample = std::conditional_t<Layout::kDepth == 16, uint16_t, uint8_t>;
  const ToGray<Layout, OutDepth, false> op{w};
  const MosaicRows mosaic{in.plane[0], in.stride[0], in.width, in.height};
  const int width = in.width;
  RowPass<Sample> cache[3];
  std::vector<Sample> chroma_x(width), chroma_y(width), green(width);
  for (int y = y0; y < y1; ++y) {
    const NeighbourRows rows = neighbour_rows(y, in.height);
    const RowPass<Sample> *pass[3];
    row_passes<Layout>(mosaic, {rows.above, y, rows.below}, cache, pass);
    const Sample *__restrict ae = pass[0]->even.data(), *__restrict ao = pass[0]->odd.data();
    const Sample *__restrict ce = pass[1]->even.data(), *__restrict co = pass[1]->odd.data();
    const Sample *__restrict be = pass[2]->even.data(), *__restrict bo = pass[2]->odd.data();
    Sample *__restrict cx = chroma_x.data(), *__restrict cy = chroma_y.data(),
                       *__restrict g = green.data();
    if (chroma_first<Layout>(y)) {  // X at even columns, green at odd
      for (int x = 0; x < width; ++x) {
        cx[x] = ce[x];
        cy[x] = static_cast<Sample>(avg_up(ao[x], bo[x]));
        const auto across = static_cast<Sample>(avg_up(avg_up(ae[x], be[x]), co[x]));
        g[x] = x & 1 ? co[x] : across;
      }
    } else {  // green at even columns, Y at odd
      for (int x = 0; x < width; ++x) {
        cy[x] = co[x];
        cx[x] = static_cast<Sample>(avg_up(ae[x], be[x]));
        const auto across = static_cast<Sample>(avg_up(avg_up(ao[x], bo[x]), ce[x]));
        g[x] = x & 1 ? across : ce[x];
      }
    }
    // X is red when red sits in column 0
    const Sample *__restrict r = Layout::kRedX == 0 ? cx : cy;
    const Sample *__restrict b = Layout::kRedX == 0 ? cy : cx;
    Out *__restrict dst = reinterpret_cast<Out *>(out.data + (y - y0) * out.stride);
    for (int x = 0; x < width; ++x)
      dst[x] =
          static_cast<Out>(op(bayer_gray_colour<Layout>(Rgb{r[x], g[x], b[x]}, in.sample_bits)));
  }
}

// Portable 8-bit RGB: pixel by pixel, left to the compiler's vectoriser. The
// SIMD kernels below use it for the few pixels at the end of a row that their
// blocks do not cover.
template <int Bpp, int R, int G, int B>
void scalar_pixels(const uint8_t *src, uint8_t *dst, int x0, int x1, const Weights &w) {
  for (int x = x0; x < x1; ++x)
    dst[x] = luma(src[x * Bpp + R], src[x * Bpp + G], src[x * Bpp + B], w);
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CUDAGRAY_X86_SIMD 1
// Compiled for these instruction sets whatever the build targets; used only
// where the CPU running the code has them (detect_simd below).
#define CUDAGRAY_AVX2 __attribute__((target("avx2")))
#define CUDAGRAY_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// pshufb control for 16-byte lanes holding 4 pixels of Bpp bytes: byte
// j*Bpp + C of the lane goes to the low byte of its 32-bit lane j, the other
// three bytes are zeroed. 64 bytes, enough for a 512-bit register.
struct ShuffleBytes {
  alignas(64) int8_t b[64];
};
constexpr ShuffleBytes spread_channel(int bpp, int c) {
  ShuffleBytes m{};
  for (int i = 0; i < 64; ++i)
    m.b[i] = i % 4 == 0 ? static_cast<int8_t>(i % 16 / 4 * bpp + c) : -128;
  return m;
}
template <int Bpp, int C>
inline constexpr ShuffleBytes kSpread = spread_channel(Bpp, C);

// ---- AVX2: 32 pixels a block, 8 in each register of 32-bit lanes.

struct Avx2Weights {
  __m256i r, g, b, half;
};

CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE __m256i avx2_sum(__m256i r, __m256i g, __m256i b,
                                                      const Avx2Weights &w) {
  const __m256i s =
      _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(r, w.r), _mm256_mullo_epi32(g, w.g)),
                       _mm256_add_epi32(_mm256_mullo_epi32(b, w.b), w.half));
  return _mm256_srli_epi32(s, 16);  // S >> 16: below 2^16
}

// Four registers of S >> 16 to 32 bytes, min(255, .) on the way.
// packus_epi32 is exact (each value < 2^16); the 16-bit min makes
// packus_epi16's signed view harmless.
CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE __m256i avx2_pack(__m256i s0, __m256i s1, __m256i s2,
                                                       __m256i s3) {
  const __m256i max = _mm256_set1_epi16(255);
  const __m256i lo = _mm256_min_epu16(_mm256_packus_epi32(s0, s1), max);
  const __m256i hi = _mm256_min_epu16(_mm256_packus_epi32(s2, s3), max);
  return _mm256_packus_epi16(lo, hi);
}

// Packed: register k holds pixels 4k..4k+3 in its low 128-bit lane and
// 16+4k..16+4k+3 in its high lane, the order in which the in-lane packs above
// put 32 pixels back in sequence. Each 4-pixel group is one 16-byte load
// (for 3-byte pixels the last 4 bytes of it belong to the next group).
template <int Bpp, int R, int G, int B>
CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE void avx2_packed_block(const uint8_t *src, uint8_t *dst,
                                                            const Avx2Weights &w) {
  const __m256i mr = _mm256_load_si256(reinterpret_cast<const __m256i *>(kSpread<Bpp, R>.b));
  const __m256i mg = _mm256_load_si256(reinterpret_cast<const __m256i *>(kSpread<Bpp, G>.b));
  const __m256i mb = _mm256_load_si256(reinterpret_cast<const __m256i *>(kSpread<Bpp, B>.b));
  __m256i s[4];
  for (int k = 0; k < 4; ++k) {
    const __m256i px = _mm256_inserti128_si256(
        _mm256_castsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 4 * k * Bpp))),
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + (16 + 4 * k) * Bpp)), 1);
    s[k] = avx2_sum(_mm256_shuffle_epi8(px, mr), _mm256_shuffle_epi8(px, mg),
                    _mm256_shuffle_epi8(px, mb), w);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), avx2_pack(s[0], s[1], s[2], s[3]));
}

CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE __m256i avx2_widen8(const uint8_t *p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
}

// Planar: register k holds pixels 8k..8k+7; one permutation restores the
// order after the in-lane packs.
CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE void avx2_planar_block(const uint8_t *r, const uint8_t *g,
                                                            const uint8_t *b, uint8_t *dst,
                                                            const Avx2Weights &w) {
  __m256i s[4];
  for (int k = 0; k < 4; ++k)
    s[k] = avx2_sum(avx2_widen8(r + 8 * k), avx2_widen8(g + 8 * k), avx2_widen8(b + 8 * k), w);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst),
                      _mm256_permutevar8x32_epi32(avx2_pack(s[0], s[1], s[2], s[3]), order));
}

CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE Avx2Weights avx2_weights(const Weights &w) {
  return {_mm256_set1_epi32(static_cast<int>(w.r)), _mm256_set1_epi32(static_cast<int>(w.g)),
          _mm256_set1_epi32(static_cast<int>(w.b)), _mm256_set1_epi32(32768)};
}

// Rows of whole blocks; a row's last block overlaps the one before it rather
// than leaving a ragged end (rewriting a few outputs with the same values).
// Rows narrower than a block go pixel by pixel.
constexpr int kAvx2Block = 32;

template <int Bpp, int R, int G, int B>
CUDAGRAY_AVX2 void rows_avx2_packed(const SourceFrame &in, const GrayFrame &out, const Weights &w,
                                    int y0, int y1) {
  const Avx2Weights v = avx2_weights(w);
  // A 3-byte block's last load reads 4 bytes past the block: stop 2 pixels
  // short of the row's end and finish those pixel by pixel.
  constexpr int kPad = Bpp == 3 ? 2 : 0;
  const int last = in.width - kAvx2Block - kPad;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *src = in.plane[0] + y * in.stride[0];
    uint8_t *dst = out.data + (y - y0) * out.stride;
    int x = 0;
    if (last >= 0) {
      for (; x < last; x += kAvx2Block) avx2_packed_block<Bpp, R, G, B>(src + x * Bpp, dst + x, v);
      avx2_packed_block<Bpp, R, G, B>(src + last * Bpp, dst + last, v);
      x = last + kAvx2Block;
    }
    scalar_pixels<Bpp, R, G, B>(src, dst, x, in.width, w);
  }
}

template <int R, int G, int B>
CUDAGRAY_AVX2 void rows_avx2_planar(const SourceFrame &in, const GrayFrame &out, const Weights &w,
                                    int y0, int y1) {
  const Avx2Weights v = avx2_weights(w);
  const int last = in.width - kAvx2Block;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *r = in.plane[R] + y * in.stride[R];
    const uint8_t *g = in.plane[G] + y * in.stride[G];
    const uint8_t *b = in.plane[B] + y * in.stride[B];
    uint8_t *dst = out.data + (y - y0) * out.stride;
    int x = 0;
    if (last >= 0) {
      for (; x < last; x += kAvx2Block) avx2_planar_block(r + x, g + x, b + x, dst + x, v);
      avx2_planar_block(r + last, g + last, b + last, dst + last, v);
      x = last + kAvx2Block;
    }
    for (; x < in.width; ++x) dst[x] = luma(r[x], g[x], b[x], w);
  }
}

template <int Bpp, int R, int G, int B>
RowsFn avx2_kernel(PackedLayout<Bpp, R, G, B>) {
  return &rows_avx2_packed<Bpp, R, G, B>;
}
template <int R, int G, int B>
RowsFn avx2_kernel(PlanarLayout<R, G, B>) {
  return &rows_avx2_planar<R, G, B>;
}

// ---- AVX-512: 16 pixels a register; a row's end goes through masked loads
// and stores, which touch no byte outside the row.

// GCC 12 warns about the self-initialised placeholder inside its own AVX-512
// intrinsics (GCC bug 105593); nothing in this code is uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

struct Avx512Weights {
  __m512i r, g, b, half;
};

// S >> 16 for 16 pixels, stored with unsigned saturation: min(255, .).
CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE __m512i avx512_sum(__m512i r, __m512i g, __m512i b,
                                                          const Avx512Weights &w) {
  const __m512i s =
      _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(r, w.r), _mm512_mullo_epi32(g, w.g)),
                       _mm512_add_epi32(_mm512_mullo_epi32(b, w.b), w.half));
  return _mm512_srli_epi32(s, 16);
}

// 16 packed pixels: their Bpp*16 bytes spread so that each 128-bit lane holds
// 4 whole pixels at its start, then one pshufb per channel.
template <int Bpp, int R, int G, int B>
CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE __m512i avx512_packed16(__m512i bytes,
                                                               const Avx512Weights &w) {
  if constexpr (Bpp == 3)
    bytes = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 3, 4, 5, 6, 6, 7, 8, 9, 9, 10, 11, 12), bytes);
  const __m512i mr = _mm512_load_si512(kSpread<Bpp, R>.b);
  const __m512i mg = _mm512_load_si512(kSpread<Bpp, G>.b);
  const __m512i mb = _mm512_load_si512(kSpread<Bpp, B>.b);
  return avx512_sum(_mm512_shuffle_epi8(bytes, mr), _mm512_shuffle_epi8(bytes, mg),
                    _mm512_shuffle_epi8(bytes, mb), w);
}

CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE Avx512Weights avx512_weights(const Weights &w) {
  return {_mm512_set1_epi32(static_cast<int>(w.r)), _mm512_set1_epi32(static_cast<int>(w.g)),
          _mm512_set1_epi32(static_cast<int>(w.b)), _mm512_set1_epi32(32768)};
}

template <int Bpp, int R, int G, int B>
CUDAGRAY_AVX512 void rows_avx512_packed(const SourceFrame &in, const GrayFrame &out,
                                        const Weights &w, int y0, int y1) {
  const Avx512Weights v = avx512_weights(w);
  // Full loads are 64 bytes: for 3-byte pixels 16 more than 16 pixels need.
  constexpr int kPad = Bpp == 3 ? 6 : 0;
  const int width = in.width;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *src = in.plane[0] + y * in.stride[0];
    uint8_t *dst = out.data + (y - y0) * out.stride;
    int x = 0;
    for (; x + 64 + kPad <= width; x += 64)
      for (int k = 0; k < 4; ++k) {
        const __m512i s =
            avx512_packed16<Bpp, R, G, B>(_mm512_loadu_si512(src + (x + 16 * k) * Bpp), v);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + x + 16 * k), _mm512_cvtusepi32_epi8(s));
      }
    for (; x + 16 + kPad <= width; x += 16) {
      const __m512i s = avx512_packed16<Bpp, R, G, B>(_mm512_loadu_si512(src + x * Bpp), v);
      _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + x), _mm512_cvtusepi32_epi8(s));
    }
    for (; x < width; x += 16) {
      const int n = std::min(16, width - x);
      const __mmask64 bytes = n * Bpp == 64 ? ~__mmask64{0} : (__mmask64{1} << (n * Bpp)) - 1;
      const __m512i s =
          avx512_packed16<Bpp, R, G, B>(_mm512_maskz_loadu_epi8(bytes, src + x * Bpp), v);
      _mm512_mask_cvtusepi32_storeu_epi8(dst + x, static_cast<__mmask16>((1u << n) - 1), s);
    }
  }
}

CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE __m512i avx512_widen16(const uint8_t *p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

template <int R, int G, int B>
CUDAGRAY_AVX512 void rows_avx512_planar(const SourceFrame &in, const GrayFrame &out,
                                        const Weights &w, int y0, int y1) {
  const Avx512Weights v = avx512_weights(w);
  const int width = in.width;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *r = in.plane[R] + y * in.stride[R];
    const uint8_t *g = in.plane[G] + y * in.stride[G];
    const uint8_t *b = in.plane[B] + y * in.stride[B];
    uint8_t *dst = out.data + (y - y0) * out.stride;
    int x = 0;
    for (; x + 16 <= width; x += 16) {
      const __m512i s =
          avx512_sum(avx512_widen16(r + x), avx512_widen16(g + x), avx512_widen16(b + x), v);
      _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + x), _mm512_cvtusepi32_epi8(s));
    }
    if (x < width) {
      const auto n = static_cast<__mmask16>((1u << (width - x)) - 1);
      const __m512i s = avx512_sum(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(n, r + x)),
                                   _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(n, g + x)),
                                   _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(n, b + x)), v);
      _mm512_mask_cvtusepi32_storeu_epi8(dst + x, n, s);
    }
  }
}

template <int Bpp, int R, int G, int B>
RowsFn avx512_kernel(PackedLayout<Bpp, R, G, B>) {
  return &rows_avx512_packed<Bpp, R, G, B>;
}
template <int R, int G, int B>
RowsFn avx512_kernel(PlanarLayout<R, G, B>) {
  return &rows_avx512_planar<R, G, B>;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// The pixel-by-pixel loop again, vectorised with AVX2.
template <class Layout, class Op>
CUDAGRAY_AVX2 void rows_pixels_avx2(const SourceFrame &in, const GrayFrame &out, const Weights &w,
                                    int y0, int y1) {
  pixel_rows<Layout, Op>(in, out, w, y0, y1);
}
#endif  // x86 SIMD

// The instruction sets the kernels may use: the best this CPU has, or less
// when CUDAGRAY_CPU_SIMD=scalar|avx2 says so (to test every kernel on one
// machine).
enum class Simd { kScalar, kAvx2, kAvx512 };

Simd detect_simd() {
  Simd best = Simd::kScalar;
#ifdef CUDAGRAY_X86_SIMD
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) best = Simd::kAvx2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    best = Simd::kAvx512;
#endif
  const char *cap = std::getenv("CUDAGRAY_CPU_SIMD");
  if (cap && std::strcmp(cap, "scalar") == 0) return Simd::kScalar;
  if (cap && std::strcmp(cap, "avx2") == 0) return std::min(best, Simd::kAvx2);
  return best;
}

// 8-bit RGB to GRAY8 has hand-written SIMD kernels.
template <class Layout>
constexpr bool kHasRgb8Simd = false;
template <int Bpp, int R, int G, int B>
constexpr bool kHasRgb8Simd<PackedLayout<Bpp, R, G, B>> = true;
template <int R, int G, int B>
constexpr bool kHasRgb8Simd<PlanarLayout<R, G, B, 8>> = true;

Simd cpu_simd() {
  static const Simd simd = detect_simd();
  return simd;
}

RowsFn rows_kernel(const SourceFrame &in, int out_depth) {
  const Simd simd = cpu_simd();
  RowsFn rows = nullptr;
  dispatch_layout(in.layout, [&](auto layout) {
    using Layout = decltype(layout);
    if constexpr (Layout::kFamily == LayoutFamily::Bayer) {
      rows = out_depth == 16 ? &rows_bayer<Layout, 16> : &rows_bayer<Layout, 8>;
    } else {
      dispatch_to_gray(layout, out_depth, in.limited_range, Weights{}, [&](auto op) {
        using Op = decltype(op);
        rows = &rows_pixels<Layout, Op>;
#ifdef CUDAGRAY_X86_SIMD
        if (simd != Simd::kScalar) rows = &rows_pixels_avx2<Layout, Op>;
#endif
      });
#ifdef CUDAGRAY_X86_SIMD
      // 8-bit RGB to GRAY8: the hand-written kernels (chosen here, where the
      // call depends on the layout, so that other layouts never name them)
      if constexpr (kHasRgb8Simd<Layout>) {
        if (out_depth == 8 && simd == Simd::kAvx512) rows = avx512_kernel(layout);
        if (out_depth == 8 && simd == Simd::kAvx2) rows = avx2_kernel(layout);
      }
#endif
    }
  });
  return rows;
}

// ------------------------------------------------------------- resampling

// Source rows are converted to 16-bit gray at most this many at a time into
// a thread's buffer, which therefore holds a few rows of the input's width
// however many source rows an output row's taps cover.
constexpr int kGrayRows = 8;

// Per thread, kept between frames so that a frame allocates nothing once its
// sizes have been seen: the output columns' taps (the calling thread's), up
// to kGrayRows source rows at 16 bits and their sum down an output row's
// taps. Each is O(width), whatever the scale.
struct ColumnTaps {
  int taps;                       // every column's, the most any column has
  std::vector<int> first;         // each column's first tap, from the crop's edge
  std::vector<uint32_t> weights;  // taps weights a column
};
struct Scratch {
  ColumnTaps across;
  std::vector<uint16_t> gray;
  std::vector<uint32_t> column;
};

Scratch &scratch() {
  thread_local Scratch s;
  return s;
}

// Grows v to at least n elements, never shrinking it (resizing down and up
// again would zero the elements every frame).
template <class T>
void grow(std::vector<T> *v, size_t n) {
  if (v->size() < n) v->resize(n);
}

// column[i] (+)= sum_j ty.weight(j) * gray(i, ty.first + j) over taps
// [j0, j1) for width columns, rows stride elements apart from rows[0] (the row
// ty.first + j0), adding to column where add says so, else replacing it: at
// most 65535 * Dy < 2^31 over all the taps, in the uint32 lanes the compiler
// vectorises.
using SumRowsFn = void (*)(const AxisTaps &ty, int j0, int j1, const uint16_t *rows, size_t stride,
                           int width, bool add, uint32_t *column);

CUDAGRAY_ALWAYS_INLINE void sum_rows_body(const AxisTaps &ty, int j0, int j1, const uint16_t *rows,
                                          size_t stride, int width, bool add,
                                          uint32_t *__restrict column) {
  int j = j0;
  if (!add) {
    const uint32_t w0 = ty.weight(j++);
    const uint16_t *__restrict g = rows;
    for (int i = 0; i < width; ++i) column[i] = w0 * g[i];
    rows += stride;
  }
  for (; j < j1; ++j, rows += stride) {
    const uint32_t wj = ty.weight(j);
    const uint16_t *__restrict g = rows;
    for (int i = 0; i < width; ++i) column[i] += wj * g[i];
  }
}

void sum_rows_portable(const AxisTaps &ty, int j0, int j1, const uint16_t *rows, size_t stride,
                       int width, bool add, uint32_t *column) {
  sum_rows_body(ty, j0, j1, rows, stride, width, add, column);
}

#ifdef CUDAGRAY_X86_SIMD
CUDAGRAY_AVX2 void sum_rows_avx2(const AxisTaps &ty, int j0, int j1, const uint16_t *rows,
                                 size_t stride, int width, bool add, uint32_t *column) {
  sum_rows_body(ty, j0, j1, rows, stride, width, add, column);
}
#endif

SumRowsFn sum_rows_kernel() {
#ifdef CUDAGRAY_X86_SIMD
  if (cpu_simd() != Simd::kScalar) return &sum_rows_avx2;
#endif
  return &sum_rows_portable;
}

// Each output column's sum across its taps of column (at most 65535 * Dx * Dy
// < 2^46), rounded once, to GRAY16 or, reduced, GRAY8.
template <class Out>
void sum_columns(const uint32_t *__restrict column, const ColumnTaps &across,
                 const QuotientRounder &round, int width, Out *__restrict dst) {
  const int taps = across.taps;
  const uint32_t *__restrict weights = across.weights.data();
  for (int x = 0; x < width; ++x, weights += taps) {
    const uint32_t *__restrict c = column + across.first[x];
    uint64_t sum = 0;
    for (int k = 0; k < taps; ++k) sum += uint64_t{weights[k]} * c[k];
    const uint32_t g = round(sum);
    dst[x] = static_cast<Out>(sizeof(Out) == 2 ? g : reduce8(g));
  }
}

// Work is split into chunks of about this many pixels (whole rows)...
constexpr long kPixelsPerChunk = 1 << 15;
// ...and a thread is added for every this many pixels of the frame: below
// that, waking a helper costs more than it saves.
constexpr long kPixelsPerThread = 1 << 18;

}  // namespace

void convert_cpu(const Conversion &c, const InputFrame &frame, const GrayFrame &out,
                 const Weights &w, int threads) {
  if (c.in_width <= 0 || c.in_height <= 0 || c.out_width <= 0 || c.out_height <= 0) return;
  const SourceFrame in = source_frame(c, frame);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // a resampled source pixel costs about three same-size ones (its 16-bit
  // gray, the sums down and across; measured on 16 cores at 1080p)
  const long pixels = std::max(static_cast<long>(c.in_width) * c.in_height,
                               static_cast<long>(c.out_width) * c.out_height) *
                      (c.resamples() ? 3 : 1);
  threads = static_cast<int>(
      std::clamp<long>(pixels / kPixelsPerThread, 1, std::min(threads, kMaxThreads)));
  if (!c.resamples()) {
    const RowsFn rows = rows_kernel(in, c.out_depth);
    const int chunk_rows =
        static_cast<int>(std::clamp<long>(kPixelsPerChunk / in.width, 1, in.height));
    parallel_rows(in.height, chunk_rows, threads, [&](int y0, int y1) {
      GrayFrame band = out;
      band.data += static_cast<size_t>(y0) * out.stride;
      rows(in, band, w, y0, y1);
    });
    return;
  }
  // Resampled: resample()'s integers in two passes, down then across, so
  // that the pass over every source row is a plain loop over whole rows
  // (vectorised) and the tap-by-tap pass runs once an output row. Each output
  // row converts the source rows its taps read that the row above did not
  // leave in the thread's buffer (whole rows, at 16 bits, by the same-size
  // kernels, at most kGrayRows at a time), sums them down its taps for every
  // source column as they come, then sums those across each output column's
  // taps and rounds once. Memory per thread: kGrayRows rows of the input's
  // width and one of uint32 sums, however far the picture shrinks.
  const RowsFn gray16_rows = rows_kernel(in, 16);
  const SumRowsFn sum_rows = sum_rows_kernel();
  const Rect crop = c.crop, dest = c.dest;
  ColumnTaps &across = scratch().across;
  across.taps = 1;
  for (int x = 0; x < dest.width; ++x)
    across.taps = std::max(across.taps, axis_taps(c.method, crop.width, dest.width, x).count);
  grow(&across.first, dest.width);
  grow(&across.weights, static_cast<size_t>(dest.width) * across.taps);
  for (int x = 0; x < dest.width; ++x) {
    const AxisTaps t = axis_taps(c.method, crop.width, dest.width, x);
    // every column reads taps columns: those past its own weigh 0, and
    // those past the crop's edge move to its front
    const int first = std::min(t.first, crop.width - across.taps);
    across.first[x] = first;
    uint32_t *weights = across.weights.data() + static_cast<size_t>(x) * across.taps;
    for (int k = 0; k < across.taps; ++k) {
      const int tap = first + k - t.first;
      weights[k] = tap >= 0 && tap < t.count ? t.weight(tap) : 0;
    }
  }
  const QuotientRounder round(uint64_t{axis_taps(c.method, crop.width, dest.width, 0).denominator} *
                              axis_taps(c.method, crop.height, dest.height, 0).denominator);
  // chunks of output rows whose source rows add up to about kPixelsPerChunk
  const long source_pixels_per_row =
      static_cast<long>(in.width) * std::max(1, crop.height / dest.height);
  const int chunk_rows =
      static_cast<int>(std::clamp<long>(kPixelsPerChunk / source_pixels_per_row, 1, c.out_height));
  parallel_rows(c.out_height, chunk_rows, threads, [&](int y0, int y1) {
    const int top = std::max(y0, dest.y), bottom = std::min(y1, dest.y + dest.height);
    Scratch &s = scratch();
    grow(&s.gray, static_cast<size_t>(kGrayRows) * in.width);
    grow(&s.column, crop.width);
    int lo = 0, hi = 0;  // s.gray holds the crop's rows [lo, hi), at most kGrayRows
    auto gray_row = [&](int j) { return s.gray.data() + static_cast<size_t>(j - lo) * in.width; };
    auto convert = [&](int from, int to) {  // rows [from, to), into s.gray from row from - lo
      const GrayFrame rows{reinterpret_cast<uint8_t *>(gray_row(from)),
                           in.width * sizeof(uint16_t)};
      gray16_rows(in, rows, w, crop.y + from, crop.y + to);
    };
    const size_t pixel_bytes = c.out_depth / 8, bytes = c.out_width * pixel_bytes;
    const size_t right = (dest.x + dest.width) * pixel_bytes;  // where the right bar starts
    for (int y = y0; y < y1; ++y) {
      uint8_t *row = out.data + static_cast<size_t>(y) * out.stride;
      if (y < top || y >= bottom) {  // a bar above or below the picture
        std::memset(row, 0, bytes);
        continue;
      }
      std::memset(row, 0, dest.x * pixel_bytes);  // the bars left and right
      std::memset(row + right, 0, bytes - right);
      const AxisTaps ty = axis_taps(c.method, crop.height, dest.height, y - dest.y);
      const int end = ty.first + ty.count;
      int next = ty.first;  // the first of its rows not yet summed down
      // the rows it shares with the row above, and after them the rest where
      // there is room
      if (ty.first >= lo && ty.first < hi) {
        if (end > hi && end - ty.first <= kGrayRows) {
          std::memmove(s.gray.data(), gray_row(ty.first),
                       static_cast<size_t>(hi - ty.first) * in.width * sizeof(uint16_t));
          lo = ty.first;
          convert(hi, end);
          hi = end;
        }
        next = std::min(end, hi);
        sum_rows(ty, 0, next - ty.first, gray_row(ty.first) + crop.x, in.width, crop.width, false,
                 s.column.data());
      }
      // the rest, at most kGrayRows at a time, the last time the most (the
      // rows the row below may share)
      while (next < end) {
        lo = next;
        hi = next + (end - next - 1) % kGrayRows + 1;
        convert(lo, hi);
        sum_rows(ty, lo - ty.first, hi - ty.first, gray_row(lo) + crop.x, in.width, crop.width,
                 lo > ty.first, s.column.data());
        next = hi;
      }
      uint8_t *picture = row + dest.x * pixel_bytes;
      if (c.out_depth == 16)
        sum_columns(s.column.data(), across, round, dest.width,
                    reinterpret_cast<uint16_t *>(picture));
      else
        sum_columns(s.column.data(), across, round, dest.width, picture);
    }
  });
}

}  // namespace cudagray
