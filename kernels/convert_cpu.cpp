// SPDX-License-Identifier: LGPL-2.1-or-later
// convert_cpu: the reference every other path must match bit for bit, with
// AVX-512, AVX2 and portable row kernels picked at run time.
#include "cudagray/convert_cpu.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <utility>
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

// The resampler converts source rows to 16-bit gray at most this many at a
// time into a thread's buffer, which therefore holds a few rows of the
// input's width however many source rows an output row's taps cover.
constexpr int kGrayRows = 8;

// For the resampler: rows [y0, y0 + n) of the frame (n at most kGrayRows),
// columns [x0, x0 + width), converted to GRAY16 and summed down as its
// SumDownFn does, column[i] (+)= sum_j weights[j] * gray(x0 + i, y0 + j),
// without storing the gray.
using ConvertDownFn = void (*)(const SourceFrame &in, const Weights &w, int x0, int width, int y0,
                               int n, const uint32_t *weights, bool add, uint32_t *column);

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

// 8-bit RGB to Out (uint8_t: GRAY8, the Q16 formula; uint16_t: GRAY16,
// rgb_gray16<8>), one pixel.
template <class Out>
CUDAGRAY_ALWAYS_INLINE Out rgb8_gray(uint32_t r, uint32_t g, uint32_t b, const Weights &w) {
  if constexpr (sizeof(Out) == 1)
    return luma(r, g, b, w);
  else
    return static_cast<Out>(rgb_gray16<8>(r, g, b, w));
}

// Portable 8-bit RGB: pixel by pixel, left to the compiler's vectoriser. The
// SIMD kernels below use it for the few pixels at the end of a row that their
// blocks do not cover.
template <int Bpp, int R, int G, int B, class Out>
void scalar_pixels(const uint8_t *src, Out *dst, int x0, int x1, const Weights &w) {
  for (int x = x0; x < x1; ++x)
    dst[x] = rgb8_gray<Out>(src[x * Bpp + R], src[x * Bpp + G], src[x * Bpp + B], w);
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

// The SIMD kernels compute each pixel's S = wR*R + wG*G + wB*B in a 32-bit
// lane, then finish it: GRAY8 min(255, (S + 32768) >> 16) (luma), the min
// the saturating pack that stores it; GRAY16 rgb_gray16<8>, which is
// min(65535, (257 S + 32768) >> 16) (S below 2^32, the product in 64 bits).
// That is 65535 from S = kGray16TopSum on, and below it 257 S + 32768 stays
// below 2^32: so (257 min(S, kGray16TopSum) + 32768) >> 16 in 32-bit lanes.
constexpr uint32_t kGray16TopSum = 16711553;  // ceil((65535 * 65536 - 32768) / 257)
static_assert((uint64_t{257} * kGray16TopSum + 32768) >> 16 == 65535 &&
              (uint64_t{257} * (kGray16TopSum - 1) + 32768) >> 16 == 65534 &&
              uint64_t{257} * kGray16TopSum + 32768 < (uint64_t{1} << 32));

// ---- AVX2: 32 pixels a block, 8 in each register of 32-bit lanes.

struct Avx2Weights {
  __m256i r, g, b;
};

CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE __m256i avx2_sum(__m256i r, __m256i g, __m256i b,
                                                      const Avx2Weights &w) {
  return _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(r, w.r), _mm256_mullo_epi32(g, w.g)),
                          _mm256_mullo_epi32(b, w.b));
}

// S to GRAY8 before its min(255, .), or to GRAY16.
template <class Out>
CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE __m256i avx2_finish(__m256i s) {
  const __m256i half = _mm256_set1_epi32(32768);
  if constexpr (sizeof(Out) == 1) return _mm256_srli_epi32(_mm256_add_epi32(s, half), 16);
  s = _mm256_min_epu32(s, _mm256_set1_epi32(static_cast<int>(kGray16TopSum)));
  return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(s, 8), s), half),
                           16);
}

// Four registers of S, 32 pixels, finished and stored at dst in sequence.
// InLane: register k holds pixels 4k..4k+3 in its low 128-bit lane and
// 16+4k..16+4k+3 in its high lane, the order in which the in-lane packs
// put them back in sequence (packed loads); else register k holds pixels
// 8k..8k+7 and a permutation restores the order (planar loads).
// packus_epi32 is exact below 2^16; for GRAY8 the 16-bit min makes
// packus_epi16's signed view harmless.
template <class Out, bool InLane>
CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE void avx2_store(const __m256i (&s)[4], Out *dst) {
  const __m256i lo = _mm256_packus_epi32(avx2_finish<Out>(s[0]), avx2_finish<Out>(s[1]));
  const __m256i hi = _mm256_packus_epi32(avx2_finish<Out>(s[2]), avx2_finish<Out>(s[3]));
  auto *out = reinterpret_cast<__m256i *>(dst);
  if constexpr (sizeof(Out) == 1) {
    const __m256i max = _mm256_set1_epi16(255);
    const __m256i bytes = _mm256_packus_epi16(_mm256_min_epu16(lo, max), _mm256_min_epu16(hi, max));
    _mm256_storeu_si256(out, InLane ? bytes
                                    : _mm256_permutevar8x32_epi32(
                                          bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  } else if constexpr (InLane) {  // lo: pixels 0-7, 16-23; hi: 8-15, 24-31
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(lo, hi, 0x31));
  } else {  // lo: pixels 0-3, 8-11, 4-7, 12-15 in 64-bit quarters; hi likewise from 16
    _mm256_storeu_si256(out, _mm256_permute4x64_epi64(lo, 0xD8));
    _mm256_storeu_si256(out + 1, _mm256_permute4x64_epi64(hi, 0xD8));
  }
}

// Packed: each 4-pixel group is one 16-byte load (for 3-byte pixels the last
// 4 bytes of it belong to the next group), in the in-lane order.
template <int Bpp, int R, int G, int B, class Out>
CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE void avx2_packed_block(const uint8_t *src, Out *dst,
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
  avx2_store<Out, true>(s, dst);
}

CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE __m256i avx2_widen8(const uint8_t *p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
}

template <class Out>
CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE void avx2_planar_block(const uint8_t *r, const uint8_t *g,
                                                            const uint8_t *b, Out *dst,
                                                            const Avx2Weights &w) {
  __m256i s[4];
  for (int k = 0; k < 4; ++k)
    s[k] = avx2_sum(avx2_widen8(r + 8 * k), avx2_widen8(g + 8 * k), avx2_widen8(b + 8 * k), w);
  avx2_store<Out, false>(s, dst);
}

CUDAGRAY_AVX2 CUDAGRAY_ALWAYS_INLINE Avx2Weights avx2_weights(const Weights &w) {
  return {_mm256_set1_epi32(static_cast<int>(w.r)), _mm256_set1_epi32(static_cast<int>(w.g)),
          _mm256_set1_epi32(static_cast<int>(w.b))};
}

// Rows of whole blocks; a row's last block overlaps the one before it rather
// than leaving a ragged end (rewriting a few outputs with the same values).
// Rows narrower than a block go pixel by pixel.
constexpr int kAvx2Block = 32;

template <int Bpp, int R, int G, int B, class Out>
CUDAGRAY_AVX2 void rows_avx2_packed(const SourceFrame &in, const GrayFrame &out, const Weights &w,
                                    int y0, int y1) {
  const Avx2Weights v = avx2_weights(w);
  // A 3-byte block's last load reads 4 bytes past the block: stop 2 pixels
  // short of the row's end and finish those pixel by pixel.
  constexpr int kPad = Bpp == 3 ? 2 : 0;
  const int last = in.width - kAvx2Block - kPad;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *src = in.plane[0] + y * in.stride[0];
    Out *dst = reinterpret_cast<Out *>(out.data + (y - y0) * out.stride);
    int x = 0;
    if (last >= 0) {
      for (; x < last; x += kAvx2Block) avx2_packed_block<Bpp, R, G, B>(src + x * Bpp, dst + x, v);
      avx2_packed_block<Bpp, R, G, B>(src + last * Bpp, dst + last, v);
      x = last + kAvx2Block;
    }
    scalar_pixels<Bpp, R, G, B>(src, dst, x, in.width, w);
  }
}

template <int R, int G, int B, class Out>
CUDAGRAY_AVX2 void rows_avx2_planar(const SourceFrame &in, const GrayFrame &out, const Weights &w,
                                    int y0, int y1) {
  const Avx2Weights v = avx2_weights(w);
  const int last = in.width - kAvx2Block;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *r = in.plane[R] + y * in.stride[R];
    const uint8_t *g = in.plane[G] + y * in.stride[G];
    const uint8_t *b = in.plane[B] + y * in.stride[B];
    Out *dst = reinterpret_cast<Out *>(out.data + (y - y0) * out.stride);
    int x = 0;
    if (last >= 0) {
      for (; x < last; x += kAvx2Block) avx2_planar_block(r + x, g + x, b + x, dst + x, v);
      avx2_planar_block(r + last, g + last, b + last, dst + last, v);
      x = last + kAvx2Block;
    }
    for (; x < in.width; ++x) dst[x] = rgb8_gray<Out>(r[x], g[x], b[x], w);
  }
}

template <class Out, int Bpp, int R, int G, int B>
RowsFn avx2_kernel(PackedLayout<Bpp, R, G, B>) {
  return &rows_avx2_packed<Bpp, R, G, B, Out>;
}
template <class Out, int R, int G, int B>
RowsFn avx2_kernel(PlanarLayout<R, G, B>) {
  return &rows_avx2_planar<R, G, B, Out>;
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
  __m512i r, g, b;
};

CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE __m512i avx512_sum(__m512i r, __m512i g, __m512i b,
                                                          const Avx512Weights &w) {
  return _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(r, w.r), _mm512_mullo_epi32(g, w.g)),
                          _mm512_mullo_epi32(b, w.b));
}

// 16 sums S to GRAY16.
CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE __m512i avx512_gray16(__m512i s) {
  s = _mm512_min_epu32(s, _mm512_set1_epi32(static_cast<int>(kGray16TopSum)));
  return _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(s, 8), s), _mm512_set1_epi32(32768)), 16);
}

// 16 sums S finished and stored at dst (GRAY8's min the saturating store);
// mask: the pixels stored.
template <class Out>
CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE void avx512_store(__m512i s, Out *dst,
                                                         __mmask16 mask = 0xFFFF) {
  if constexpr (sizeof(Out) == 1) {
    const __m512i g = _mm512_srli_epi32(_mm512_add_epi32(s, _mm512_set1_epi32(32768)), 16);
    if (mask == 0xFFFF)
      _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), _mm512_cvtusepi32_epi8(g));
    else
      _mm512_mask_cvtusepi32_storeu_epi8(dst, mask, g);
  } else {
    const __m512i g = avx512_gray16(s);
    if (mask == 0xFFFF)
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), _mm512_cvtepi32_epi16(g));
    else
      _mm512_mask_cvtepi32_storeu_epi16(dst, mask, g);
  }
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
          _mm512_set1_epi32(static_cast<int>(w.b))};
}

template <int Bpp, int R, int G, int B, class Out>
CUDAGRAY_AVX512 void rows_avx512_packed(const SourceFrame &in, const GrayFrame &out,
                                        const Weights &w, int y0, int y1) {
  const Avx512Weights v = avx512_weights(w);
  // Full loads are 64 bytes: for 3-byte pixels 16 more than 16 pixels need.
  constexpr int kPad = Bpp == 3 ? 6 : 0;
  const int width = in.width;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *src = in.plane[0] + y * in.stride[0];
    Out *dst = reinterpret_cast<Out *>(out.data + (y - y0) * out.stride);
    int x = 0;
    for (; x + 64 + kPad <= width; x += 64)
      for (int k = 0; k < 4; ++k)
        avx512_store(avx512_packed16<Bpp, R, G, B>(_mm512_loadu_si512(src + (x + 16 * k) * Bpp), v),
                     dst + x + 16 * k);
    for (; x + 16 + kPad <= width; x += 16)
      avx512_store(avx512_packed16<Bpp, R, G, B>(_mm512_loadu_si512(src + x * Bpp), v), dst + x);
    for (; x < width; x += 16) {
      const int n = std::min(16, width - x);
      const __mmask64 bytes = n * Bpp == 64 ? ~__mmask64{0} : (__mmask64{1} << (n * Bpp)) - 1;
      avx512_store(avx512_packed16<Bpp, R, G, B>(_mm512_maskz_loadu_epi8(bytes, src + x * Bpp), v),
                   dst + x, static_cast<__mmask16>((1u << n) - 1));
    }
  }
}

CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE __m512i avx512_widen16(const uint8_t *p,
                                                              __mmask16 mask = 0xFFFF) {
  return _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, p));
}

template <int R, int G, int B, class Out>
CUDAGRAY_AVX512 void rows_avx512_planar(const SourceFrame &in, const GrayFrame &out,
                                        const Weights &w, int y0, int y1) {
  const Avx512Weights v = avx512_weights(w);
  const int width = in.width;
  for (int y = y0; y < y1; ++y) {
    const uint8_t *r = in.plane[R] + y * in.stride[R];
    const uint8_t *g = in.plane[G] + y * in.stride[G];
    const uint8_t *b = in.plane[B] + y * in.stride[B];
    Out *dst = reinterpret_cast<Out *>(out.data + (y - y0) * out.stride);
    for (int x = 0; x < width; x += 16) {
      const auto n = static_cast<__mmask16>(width - x >= 16 ? 0xFFFF : (1u << (width - x)) - 1);
      avx512_store(avx512_sum(avx512_widen16(r + x, n), avx512_widen16(g + x, n),
                              avx512_widen16(b + x, n), v),
                   dst + x, n);
    }
  }
}

template <class Out, int Bpp, int R, int G, int B>
RowsFn avx512_kernel(PackedLayout<Bpp, R, G, B>) {
  return &rows_avx512_packed<Bpp, R, G, B, Out>;
}
template <class Out, int R, int G, int B>
RowsFn avx512_kernel(PlanarLayout<R, G, B>) {
  return &rows_avx512_planar<R, G, B, Out>;
}

// The resampler's ConvertDownFn for 8-bit RGB: 16 columns at a time, every
// row's gray in a register. sums(j, x, mask) gives the S of row y0 + j's
// pixels from x0 + x (mask: those in the row); rows of one weight are summed
// first and multiplied once.
template <class Sums>
CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE void avx512_convert_down(int width, int n,
                                                                const uint32_t *weights, bool add,
                                                                uint32_t *column,
                                                                const Sums &sums) {
  __m512i weight[kGrayRows];
  bool one_weight = true;
  for (int j = 0; j < n; ++j) {
    weight[j] = _mm512_set1_epi32(static_cast<int>(weights[j]));
    one_weight = one_weight && weights[j] == weights[0];
  }
  for (int x = 0; x < width; x += 16) {
    const auto mask = static_cast<__mmask16>(width - x >= 16 ? 0xFFFF : (1u << (width - x)) - 1);
    __m512i sum = _mm512_setzero_si512();
    if (one_weight) {
      for (int j = 0; j < n; ++j) sum = _mm512_add_epi32(sum, avx512_gray16(sums(j, x, mask)));
      sum = _mm512_mullo_epi32(sum, weight[0]);
    } else {
      for (int j = 0; j < n; ++j)
        sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(avx512_gray16(sums(j, x, mask)), weight[j]));
    }
    if (add) sum = _mm512_add_epi32(sum, _mm512_maskz_loadu_epi32(mask, column + x));
    _mm512_mask_storeu_epi32(column + x, mask, sum);
  }
}

template <int Bpp, int R, int G, int B>
CUDAGRAY_AVX512 void convert_down_avx512_packed(const SourceFrame &in, const Weights &w, int x0,
                                                int width, int y0, int n, const uint32_t *weights,
                                                bool add, uint32_t *column) {
  const Avx512Weights v = avx512_weights(w);
  // pixels from x0 that whole 64-byte loads may read (3-byte pixels: 16
  // more bytes than 16 pixels)
  const int whole = in.width - x0 - (Bpp == 3 ? 6 : 0);
  const uint8_t *rows[kGrayRows];
  for (int j = 0; j < n; ++j) rows[j] = in.plane[0] + (y0 + j) * in.stride[0] + x0 * Bpp;
  avx512_convert_down(
      width, n, weights, add, column, [&](int j, int x, __mmask16 mask) CUDAGRAY_AVX512 {
        const uint8_t *src = rows[j] + x * Bpp;
        if (x + 16 <= whole) return avx512_packed16<Bpp, R, G, B>(_mm512_loadu_si512(src), v);
        const int count = __builtin_popcount(mask);
        const __mmask64 bytes =
            count * Bpp == 64 ? ~__mmask64{0} : (__mmask64{1} << (count * Bpp)) - 1;
        return avx512_packed16<Bpp, R, G, B>(_mm512_maskz_loadu_epi8(bytes, src), v);
      });
}

template <int R, int G, int B>
CUDAGRAY_AVX512 void convert_down_avx512_planar(const SourceFrame &in, const Weights &w, int x0,
                                                int width, int y0, int n, const uint32_t *weights,
                                                bool add, uint32_t *column) {
  const Avx512Weights v = avx512_weights(w);
  const uint8_t *rows[kGrayRows][3];
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < 3; ++p) rows[j][p] = in.plane[p] + (y0 + j) * in.stride[p] + x0;
  avx512_convert_down(width, n, weights, add, column,
                      [&](int j, int x, __mmask16 mask) CUDAGRAY_AVX512 {
                        return avx512_sum(avx512_widen16(rows[j][R] + x, mask),
                                          avx512_widen16(rows[j][G] + x, mask),
                                          avx512_widen16(rows[j][B] + x, mask), v);
                      });
}

template <int Bpp, int R, int G, int B>
ConvertDownFn avx512_convert_down_kernel(PackedLayout<Bpp, R, G, B>) {
  return &convert_down_avx512_packed<Bpp, R, G, B>;
}
template <int R, int G, int B>
ConvertDownFn avx512_convert_down_kernel(PlanarLayout<R, G, B>) {
  return &convert_down_avx512_planar<R, G, B>;
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

// 8-bit RGB has hand-written SIMD kernels.
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
      // 8-bit RGB: the hand-written kernels (chosen here, where the call
      // depends on the layout, so that other layouts never name them)
      if constexpr (kHasRgb8Simd<Layout>) {
        if (simd == Simd::kAvx512)
          rows = out_depth == 16 ? avx512_kernel<uint16_t>(layout) : avx512_kernel<uint8_t>(layout);
        if (simd == Simd::kAvx2)
          rows = out_depth == 16 ? avx2_kernel<uint16_t>(layout) : avx2_kernel<uint8_t>(layout);
      }
#endif
    }
  });
  return rows;
}

// The kernel that converts and sums down at once, for 8-bit RGB with
// AVX-512; null for the other layouts, which go through 16-bit gray rows.
ConvertDownFn convert_down_kernel(const SourceFrame &in) {
  ConvertDownFn kernel = nullptr;
#ifdef CUDAGRAY_X86_SIMD
  dispatch_layout(in.layout, [&](auto layout) {
    if constexpr (kHasRgb8Simd<decltype(layout)>)
      if (cpu_simd() == Simd::kAvx512) kernel = avx512_convert_down_kernel(layout);
  });
#endif
  return kernel;
}

// ------------------------------------------------------------- resampling

// The sums across take output columns eight at a time, a block, in eight
// double lanes. Where every block reads its sums down from within
// kBlockSpan columns (shrinking up to about 7 times), the AVX-512 pass picks
// them out of four registers rather than gathering them one by one (a
// gather costs more than the rest of the pass).
constexpr int kBlockColumns = 8;
constexpr int kBlockSpan = 64;

// The output columns' taps, built once a frame by the calling thread: each
// column reads `taps` sums down (those past its own taps weigh 0), block b's
// from base[b] on; tap k of the block's lane l (column 8b + l) is the sum
// down at base[b] + offset[i] weighing weights[i], i = (b * taps + k) * 8 + l.
// Lanes past the last column read base[b] with weight 0.
struct ColumnTaps {
  int taps;                     // every column's, the most any column has
  int span;                     // the most sums down a block reads from its base
  std::vector<int32_t> base;    // a block's first sum down, from the crop's edge
  std::vector<int32_t> offset;  // from the block's base
  std::vector<double> weights;
};

// Per thread, kept between frames so that a frame allocates nothing once its
// sizes have been seen: up to kGrayRows source rows at 16 bits and their
// sums down an output row's taps (with kBlockSpan more, which no sum reads,
// so that a block's registers may load past the last). Each is O(width),
// whatever the scale.
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

void build_column_taps(ScaleMethod method, int crop_width, int dest_width, ColumnTaps *across) {
  int taps = 1;
  for (int x = 0; x < dest_width; ++x)
    taps = std::max(taps, axis_taps(method, crop_width, dest_width, x).count);
  // every column reads taps columns: those past its own weigh 0, and those
  // past the crop's edge move to its front (so first never decreases)
  auto first = [&](int x) {
    return std::min(axis_taps(method, crop_width, dest_width, x).first, crop_width - taps);
  };
  const int blocks = (dest_width + kBlockColumns - 1) / kBlockColumns;
  across->taps = taps;
  across->span = 0;
  grow(&across->base, blocks);
  grow(&across->offset, static_cast<size_t>(blocks) * taps * kBlockColumns);
  grow(&across->weights, static_cast<size_t>(blocks) * taps * kBlockColumns);
  for (int b = 0; b < blocks; ++b) {
    const int base = first(b * kBlockColumns);
    across->base[b] = base;
    for (int lane = 0; lane < kBlockColumns; ++lane) {
      const int x = b * kBlockColumns + lane;
      const AxisTaps t = axis_taps(method, crop_width, dest_width, std::min(x, dest_width - 1));
      const int from = x < dest_width ? first(x) : base;
      across->span = std::max(across->span, from + taps - base);
      for (int k = 0; k < taps; ++k) {
        const size_t i = (static_cast<size_t>(b) * taps + k) * kBlockColumns + lane;
        const int tap = from + k - t.first;
        across->offset[i] = from + k - base;
        across->weights[i] = x < dest_width && tap >= 0 && tap < t.count ? t.weight(tap) : 0;
      }
    }
  }
}

// The sums down: column[i] (+)= sum_j ty.weight(j) * gray(i, ty.first + j)
// over taps [j0, j1) (at most kGrayRows) for width columns, the rows stride
// elements apart from rows (the row ty.first + j0), adding to column where
// add says so, else replacing it. At most 65535 * Dy < 2^31 over all the
// taps, in uint32 lanes the compiler vectorises, a column's taps summed in a
// register and stored once; where they all weigh the same (an area footprint
// of whole rows), summed first and multiplied once.
using SumDownFn = void (*)(const AxisTaps &ty, int j0, int j1, const uint16_t *rows, size_t stride,
                           int width, bool add, uint32_t *column);

template <int N, bool OneWeight>
CUDAGRAY_ALWAYS_INLINE void sum_down_rows(const uint32_t *weights, const uint16_t *rows,
                                          size_t stride, int width, bool add,
                                          uint32_t *__restrict column) {
  const uint16_t *gray[N];
  uint32_t w[N];
  for (int j = 0; j < N; ++j) gray[j] = rows + j * stride, w[j] = weights[j];
  for (int i = 0; i < width; ++i) {
    uint32_t sum = 0;
    if constexpr (OneWeight) {
      for (int j = 0; j < N; ++j) sum += gray[j][i];
      sum *= w[0];
    } else {
      for (int j = 0; j < N; ++j) sum += w[j] * gray[j][i];
    }
    column[i] = (add ? column[i] : 0) + sum;
  }
}

template <int... N>
CUDAGRAY_ALWAYS_INLINE void sum_down_body(const AxisTaps &ty, int j0, int j1, const uint16_t *rows,
                                          size_t stride, int width, bool add, uint32_t *column,
                                          std::integer_sequence<int, N...>) {
  uint32_t weights[kGrayRows];
  bool one_weight = true;
  for (int j = j0; j < j1; ++j)
    weights[j - j0] = ty.weight(j), one_weight = one_weight && weights[j - j0] == weights[0];
  // the loop for this many rows, N + 1 of them
  ((j1 - j0 == N + 1 ? one_weight
                           ? sum_down_rows<N + 1, true>(weights, rows, stride, width, add, column)
                           : sum_down_rows<N + 1, false>(weights, rows, stride, width, add, column)
                     : void()),
   ...);
}

void sum_down_portable(const AxisTaps &ty, int j0, int j1, const uint16_t *rows, size_t stride,
                       int width, bool add, uint32_t *column) {
  sum_down_body(ty, j0, j1, rows, stride, width, add, column,
                std::make_integer_sequence<int, kGrayRows>{});
}

// The sums across: each output column's sum over its taps of column, at most
// 65535 * Dx * Dy < 2^47, so exact in double lanes (which vectorise where
// 64-bit integers do not), rounded once (DoubleRounder) to GRAY16 or,
// reduced, GRAY8, at dst (width columns).
using SumAcrossFn = void (*)(const uint32_t *column, const ColumnTaps &across,
                             const DoubleRounder &round, int width, uint8_t *dst);

// The portable pass, a block at a time: column's values gathered one by one.
template <class Out>
CUDAGRAY_ALWAYS_INLINE void sum_across_body(const uint32_t *column, const ColumnTaps &across,
                                            const DoubleRounder &round, int width, uint8_t *out) {
  // column's values are below 2^31: int32 converts to double in one step
  const auto *c = reinterpret_cast<const int32_t *>(column);
  Out *dst = reinterpret_cast<Out *>(out);
  const int taps = across.taps;
  const int32_t *__restrict offset = across.offset.data();
  const double *__restrict weights = across.weights.data();
  for (int x0 = 0, b = 0; x0 < width; x0 += kBlockColumns, ++b) {
    const int32_t *__restrict from = c + across.base[b];
    double sum[kBlockColumns] = {};
    for (int k = 0; k < taps; ++k, offset += kBlockColumns, weights += kBlockColumns)
      for (int l = 0; l < kBlockColumns; ++l) sum[l] += weights[l] * from[offset[l]];
    Out g[kBlockColumns];
    for (int l = 0; l < kBlockColumns; ++l) {
      const uint32_t g16 = round(sum[l]);
      g[l] = static_cast<Out>(sizeof(Out) == 2 ? g16 : reduce8(g16));
    }
    std::memcpy(dst + x0, g, std::min(kBlockColumns, width - x0) * sizeof(Out));
  }
}

template <class Out>
void sum_across_portable(const uint32_t *column, const ColumnTaps &across,
                         const DoubleRounder &round, int width, uint8_t *dst) {
  sum_across_body<Out>(column, across, round, width, dst);
}

#ifdef CUDAGRAY_X86_SIMD
CUDAGRAY_AVX2 void sum_down_avx2(const AxisTaps &ty, int j0, int j1, const uint16_t *rows,
                                 size_t stride, int width, bool add, uint32_t *column) {
  sum_down_body(ty, j0, j1, rows, stride, width, add, column,
                std::make_integer_sequence<int, kGrayRows>{});
}
CUDAGRAY_AVX512 void sum_down_avx512(const AxisTaps &ty, int j0, int j1, const uint16_t *rows,
                                     size_t stride, int width, bool add, uint32_t *column) {
  sum_down_body(ty, j0, j1, rows, stride, width, add, column,
                std::make_integer_sequence<int, kGrayRows>{});
}
template <class Out>
CUDAGRAY_AVX2 void sum_across_avx2(const uint32_t *column, const ColumnTaps &across,
                                   const DoubleRounder &round, int width, uint8_t *dst) {
  sum_across_body<Out>(column, across, round, width, dst);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as above
#endif
// AVX-512, a block's sums down out of 32 (Four: 64) of them in two (four)
// registers, picked by the offsets in one or two permutes a tap.
template <class Out, bool Four>
CUDAGRAY_AVX512 CUDAGRAY_ALWAYS_INLINE void sum_across_permuted(const uint32_t *column,
                                                                const ColumnTaps &across,
                                                                const DoubleRounder &round,
                                                                int width, uint8_t *out) {
  const __m512d bias = _mm512_set1_pd(round.bias), inverse = _mm512_set1_pd(round.inverse);
  const int taps = across.taps;
  const int32_t *base = across.base.data(), *offset = across.offset.data();
  const double *weights = across.weights.data();
  Out *dst = reinterpret_cast<Out *>(out);
  for (int x0 = 0; x0 < width; x0 += kBlockColumns, ++base) {
    const uint32_t *from = column + *base;
    const __m512i c0 = _mm512_loadu_si512(from), c1 = _mm512_loadu_si512(from + 16);
    const __m512i c2 = Four ? _mm512_loadu_si512(from + 32) : c0;
    const __m512i c3 = Four ? _mm512_loadu_si512(from + 48) : c1;
    __m512d sum = _mm512_setzero_pd();
    for (int k = 0; k < taps; ++k, offset += kBlockColumns, weights += kBlockColumns) {
      const __m512i at =
          _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(offset)));
      __m512i v = _mm512_permutex2var_epi32(c0, at, c1);
      if constexpr (Four)  // offsets from 32 on: the upper two registers
        v = _mm512_mask_blend_epi32(_mm512_test_epi32_mask(at, _mm512_set1_epi32(32)), v,
                                    _mm512_permutex2var_epi32(c2, at, c3));
      sum = _mm512_fmadd_pd(_mm512_loadu_pd(weights), _mm512_cvtepi32_pd(_mm512_castsi512_si256(v)),
                            sum);
    }
    __m256i g = _mm512_cvttpd_epi32(_mm512_mul_pd(_mm512_add_pd(sum, bias), inverse));
    if constexpr (sizeof(Out) == 1)  // reduce8: (g * 255 + 32895) >> 16
      g = _mm256_srli_epi32(
          _mm256_add_epi32(_mm256_sub_epi32(_mm256_slli_epi32(g, 8), g), _mm256_set1_epi32(32895)),
          16);
    if (width - x0 >= kBlockColumns) {
      if constexpr (sizeof(Out) == 2)
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + x0), _mm256_cvtepi32_epi16(g));
      else
        _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + x0), _mm256_cvtepi32_epi8(g));
    } else {
      const auto lanes = static_cast<__mmask8>((1u << (width - x0)) - 1);
      if constexpr (sizeof(Out) == 2)
        _mm256_mask_cvtepi32_storeu_epi16(dst + x0, lanes, g);
      else
        _mm256_mask_cvtepi32_storeu_epi8(dst + x0, lanes, g);
    }
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

template <class Out>
CUDAGRAY_AVX512 void sum_across_avx512(const uint32_t *column, const ColumnTaps &across,
                                       const DoubleRounder &round, int width, uint8_t *dst) {
  if (across.span <= 32)
    sum_across_permuted<Out, false>(column, across, round, width, dst);
  else if (across.span <= kBlockSpan)
    sum_across_permuted<Out, true>(column, across, round, width, dst);
  else
    sum_across_body<Out>(column, across, round, width, dst);
}
#endif

struct ResampleKernels {
  SumDownFn down;
  SumAcrossFn across;
};

template <class Out>
ResampleKernels resample_kernels_of() {
#ifdef CUDAGRAY_X86_SIMD
  if (cpu_simd() == Simd::kAvx512) return {&sum_down_avx512, &sum_across_avx512<Out>};
  if (cpu_simd() == Simd::kAvx2) return {&sum_down_avx2, &sum_across_avx2<Out>};
#endif
  return {&sum_down_portable, &sum_across_portable<Out>};
}

ResampleKernels resample_kernels(int out_depth) {
  return out_depth == 16 ? resample_kernels_of<uint16_t>() : resample_kernels_of<uint8_t>();
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
  // a resampled pixel (of the larger of input and output) costs up to about
  // two same-size ones (one core: RGB shrunk by area to 640x360 1.0-1.1,
  // 1080p to 1280x720 2.1, enlarged three times 1.6-2.2)
  const long pixels = std::max(static_cast<long>(c.in_width) * c.in_height,
                               static_cast<long>(c.out_width) * c.out_height) *
                      (c.resamples() ? 2 : 1);
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
  // row sums the source rows its taps read down for every source column of
  // the crop, then sums those across each output column's taps and rounds
  // once. Every source row is converted once a band of output rows: those
  // the output row below reads too are kept at 16 bits in the thread's
  // buffer for it; the others, for 8-bit RGB, are converted and summed down
  // at once, never stored (convert_down), else go through that buffer a few
  // at a time. Memory per thread: kGrayRows rows of the input's width and
  // one of uint32 sums, however far the picture shrinks.
  const RowsFn gray16_rows = rows_kernel(in, 16);
  const ConvertDownFn convert_down = convert_down_kernel(in);
  const ResampleKernels sum = resample_kernels(c.out_depth);
  const Rect crop = c.crop, dest = c.dest;
  ColumnTaps &across = scratch().across;
  build_column_taps(c.method, crop.width, dest.width, &across);
  const DoubleRounder round(resample_denominator(c));
  // chunks of output rows whose source rows add up to about kPixelsPerChunk
  const long source_pixels_per_row =
      static_cast<long>(in.width) * std::max(1, crop.height / dest.height);
  const int chunk_rows =
      static_cast<int>(std::clamp<long>(kPixelsPerChunk / source_pixels_per_row, 1, c.out_height));
  parallel_rows(c.out_height, chunk_rows, threads, [&](int y0, int y1) {
    const int top = std::max(y0, dest.y), bottom = std::min(y1, dest.y + dest.height);
    Scratch &s = scratch();
    grow(&s.gray, static_cast<size_t>(kGrayRows) * in.width);
    grow(&s.column, static_cast<size_t>(crop.width) + kBlockSpan);
    int lo = 0, hi = 0;  // s.gray holds the crop's rows [lo, hi), at most kGrayRows
    auto gray_row = [&](int j) { return s.gray.data() + static_cast<size_t>(j - lo) * in.width; };
    auto convert = [&](int from, int to) {  // rows [from, to), into s.gray from row from - lo
      const GrayFrame rows{reinterpret_cast<uint8_t *>(gray_row(from)),
                           in.width * sizeof(uint16_t)};
      gray16_rows(in, rows, w, crop.y + from, crop.y + to);
    };
    // rows [from, to) of the taps ty, held in s.gray, summed down into s.column
    auto down = [&](const AxisTaps &ty, int from, int to) {
      sum.down(ty, from - ty.first, to - ty.first, gray_row(from) + crop.x, in.width, crop.width,
               from > ty.first, s.column.data());
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
      const int first = ty.first, end = first + ty.count;
      // its rows from keep on the output row below reads too
      int keep = end;
      if (y + 1 < bottom)
        keep = std::clamp(axis_taps(c.method, crop.height, dest.height, y + 1 - dest.y).first,
                          first, end);
      keep = std::max(keep, end - kGrayRows);
      int next = first;                 // the first of its rows not yet summed down
      if (first >= lo && first < hi) {  // those the row above kept
        next = std::min(end, hi);
        down(ty, first, next);
      }
      // those no other output row reads
      for (int to; next < keep; next = to) {
        to = std::min(keep, next + kGrayRows);
        if (convert_down) {
          uint32_t weights[kGrayRows];
          for (int j = next; j < to; ++j) weights[j - next] = ty.weight(j - first);
          convert_down(in, w, crop.x, crop.width, crop.y + next, to - next, weights, next > first,
                       s.column.data());
        } else {
          lo = hi = next;
          convert(next, to);
          hi = to;
          down(ty, next, to);
        }
      }
      // the rest, kept after those of them s.gray holds
      if (next < end) {
        if (keep < next) {
          std::memmove(s.gray.data(), gray_row(keep),
                       static_cast<size_t>(next - keep) * in.width * sizeof(uint16_t));
          lo = keep;
        } else {
          lo = next;
        }
        hi = next;
        convert(next, end);
        hi = end;
        down(ty, next, end);
      }
      sum.across(s.column.data(), across, round, dest.width, row + dest.x * pixel_bytes);
    }
  });
}

}  // namespace cudagray
