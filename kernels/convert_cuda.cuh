// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA kernels, for the .cu files that launch them (convert_cuda.cu:
// a frame; batch_cuda.cu: a batch): one traversal (a thread per chunk of a
// row, 16-byte loads and the widest stores the chunk allows where rows are
// aligned) instantiated per layout with the per-pixel operation, as CUB and
// OpenCV's cudev separate traversal from operation; Bayer frames have their
// own (bayer.h); resampled frames a thread per output pixel sampling the
// source's gray (resample.h), and for area a block per tile of them that
// reads its footprint's runs as the same-size kernels do and sums them in
// shared memory. The resampling blocks hand each output pixel to a store
// of their caller's. Internal linkage: each .cu file has its own kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "bayer.h"
#include "cudagray/conversion.h"
#include "layouts.h"
#include "resample.h"

namespace cudagray {

namespace {

constexpr int kThreadsPerBlock = 256;

// Pixels a thread converts on the wide path: 16, fed by 16-byte loads; 8
// where a pixel is 4 bytes or more (planes together) and 4 where it is 8, so
// that a thread holds no more than 48 bytes of input; 12 for v210, two of its
// 16-byte groups of 6 pixels. (Measured on an H100: 16 pixels of 4 bytes and
// 48 of v210 held too many registers for the memory's latency to be hidden.)
// Rounded up to whole groups that fill whole 16-byte loads (3 pixels in 4
// bytes: 24 pixels; 4 in 5: 64).
constexpr int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }
template <class Layout>
constexpr int wide_pixels() {
  constexpr int bytes_per_pixel = Layout::kGroupBytes * Layout::kPlanes / Layout::kGroupPixels;
  constexpr int wanted = Layout::kGroupPixels == 6 ? 12
                         : bytes_per_pixel >= 8    ? 4
                         : bytes_per_pixel >= 4    ? 8
                                                   : 16;
  constexpr int unit = 16 / gcd(Layout::kGroupBytes, 16) * Layout::kGroupPixels;
  return (wanted + unit - 1) / unit * unit;
}
template <class Layout>
constexpr int kWidePixels = wide_pixels<Layout>();
// Bayer pixels a thread demosaics (see bayer_kernel).
constexpr int kBayerRun = 8;

// Stores a chunk's Words words of gray with the widest stores it allows: a
// chunk of Words words starts at a multiple of 4 * Words bytes of a row that
// is 16-byte aligned.
template <int Words>
__device__ __forceinline__ void store_words(uint32_t *dst, const uint32_t (&w)[Words]) {
  if constexpr (Words % 4 == 0) {
#pragma unroll
    for (int k = 0; k < Words; k += 4)
      __stcs(reinterpret_cast<uint4 *>(dst + k), make_uint4(w[k], w[k + 1], w[k + 2], w[k + 3]));
  } else if constexpr (Words % 2 == 0) {
#pragma unroll
    for (int k = 0; k < Words; k += 2)
      __stcs(reinterpret_cast<uint2 *>(dst + k), make_uint2(w[k], w[k + 1]));
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) __stcs(dst + k, w[k]);
  }
}

__device__ __forceinline__ uint4 load16(const uint8_t *p) {
  return __ldcs(reinterpret_cast<const uint4 *>(p));  // read once: stream past the cache
}

// A chunk's bytes of each plane read, loaded into registers; the layouts
// read them with constant indices once the loops are unrolled, so that each
// access is a shift and mask of a register.
template <int Planes, int Words>
struct RegisterBytes {
  uint32_t words[Planes][Words];
  __device__ __forceinline__ uint32_t at(int plane, int i) const {
    return (words[plane][i >> 2] >> ((i & 3) * 8)) & 0xFF;
  }
};

// The Bytes bytes (a multiple of 16) of each plane from start, 16-byte
// aligned, in registers.
template <int Planes, int Bytes>
__device__ __forceinline__ RegisterBytes<Planes, Bytes / 4> load_chunk(
    const uint8_t *const (&start)[3]) {
  RegisterBytes<Planes, Bytes / 4> bytes;
#pragma unroll
  for (int p = 0; p < Planes; ++p)
#pragma unroll
    for (int i = 0; i < Bytes / 16; ++i) {
      const uint4 v = load16(start[p] + 16 * i);
      bytes.words[p][4 * i] = v.x, bytes.words[p][4 * i + 1] = v.y;
      bytes.words[p][4 * i + 2] = v.z, bytes.words[p][4 * i + 3] = v.w;
    }
  return bytes;
}

// Bytes in memory from a row's (or a chunk's) start, one pointer per plane.
struct MemoryBytes {
  const uint8_t *row[3];
  __device__ __forceinline__ uint32_t at(int plane, int i) const { return row[plane][i]; }
};

// Thread t of the grid converts pixels [Chunk*c, Chunk*c + Chunk) of row r,
// the rows being cut into `chunks` chunks.
template <int Chunk>
__device__ __forceinline__ bool chunk_of_thread(int height, int chunks, int *row, int *x) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(chunks) * height) return false;
  *row = static_cast<int>(t / chunks);
  *x = static_cast<int>(t - static_cast<long long>(*row) * chunks) * Chunk;
  return true;
}

// The one traversal: each thread converts one chunk of a row, with 16-byte
// loads and stores when Chunk is the wide chunk and the chunk is whole, else
// pixel by pixel from memory. Out is uint8_t (GRAY8) or uint16_t (GRAY16).
// The planes are separate __restrict__ parameters (unused ones null) so that
// the compiler knows they do not alias the output.
template <int Chunk, class Layout, class Out, class Op>
__global__ void convert_kernel(const uint8_t *__restrict__ in0, size_t pitch0,
                               const uint8_t *__restrict__ in1, size_t pitch1,
                               const uint8_t *__restrict__ in2, size_t pitch2,
                               uint8_t *__restrict__ out, size_t out_pitch, int width, int height,
                               int chunks, Op op) {
  constexpr int kPlanes = Layout::kPlanes;
  constexpr int kChunkBytes = Chunk / Layout::kGroupPixels * Layout::kGroupBytes;
  static_assert(Chunk == 1 || (kChunkBytes % 16 == 0 && Chunk * sizeof(Out) % 4 == 0),
                "a wide chunk is whole 16-byte loads and whole words of gray");
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  Out *dst = reinterpret_cast<Out *>(out + row * out_pitch) + x0;
  if constexpr (kTiled<Layout>) {  // pixel by pixel, each where its tile keeps it
    for (int x = 0; x < min(Chunk, width - x0); ++x)
      dst[x] = static_cast<Out>(op(Layout::pixel_at(in0, pitch0, x0 + x, row)));
  } else {
    // where the chunk starts in each plane (x0 is a whole number of groups)
    const size_t at = static_cast<size_t>(x0 / Layout::kGroupPixels) * Layout::kGroupBytes;
    const uint8_t *const start[3] = {in0 + row * pitch0 + at, in1 + row * pitch1 + at,
                                     in2 + row * pitch2 + at};
    if constexpr (Chunk > 1) {
      if (x0 + Chunk <= width) {
        const auto bytes = load_chunk<kPlanes, kChunkBytes>(start);
        constexpr int kPerWord = 4 / sizeof(Out);
        uint32_t gray[Chunk / kPerWord];
#pragma unroll
        for (int k = 0; k < Chunk / kPerWord; ++k) gray[k] = 0;
#pragma unroll
        for (int p = 0; p < Chunk; ++p)
          gray[p / kPerWord] |= op(Layout::pixel(bytes, p)) << (p % kPerWord * 8 * sizeof(Out));
        store_words(reinterpret_cast<uint32_t *>(dst), gray);
        return;
      }
    }
    // the bytes start at the group holding pixel x0, which is pixel
    // x0 % kGroupPixels of it
    const MemoryBytes bytes{{start[0], start[1], start[2]}};
    const int first = x0 % Layout::kGroupPixels, n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x) dst[x] = static_cast<Out>(op(Layout::pixel(bytes, first + x)));
  }
}

// Whether every row of a plane at p, pitch bytes apart, starts on a
// multiple of bytes.
bool rows_aligned(const void *p, size_t pitch, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0 && pitch % bytes == 0;
}

// Whether every row of every plane the layout reads starts where its wide
// loads may (Bayer: its vector rows).
template <class Layout, class Frame>
bool reads_wide(const Frame &in) {
  if constexpr (kTiled<Layout>)  // a tile's rows are apart: no run of a row is whole loads
    return false;
  else if constexpr (Layout::kFamily == LayoutFamily::Bayer)
    return rows_aligned(in.plane[0], in.stride[0], kBayerRun * Layout::kGroupBytes);
  bool wide = true;
  for (int p = 0; p < Layout::kPlanes; ++p)
    wide = wide && rows_aligned(in.plane[p], in.stride[p], 16);
  return wide;
}

// Launches the traversal for layout and op: the wide instance when every
// plane read and the output have 16-byte aligned rows, else the
// pixel-by-pixel one.
template <class Layout, class Op>
void launch(const SourceFrame &in, const GrayFrame &out, Op op, cudaStream_t stream) {
  using Out = std::conditional_t<Op::kOutDepth == 16, uint16_t, uint8_t>;
  const bool wide = rows_aligned(out.data, out.stride, 16) && reads_wide<Layout>(in);
  auto go = [&](auto chunk) {
    constexpr int Chunk = decltype(chunk)::value;
    const int chunks = (in.width + Chunk - 1) / Chunk;
    const long long threads = static_cast<long long>(chunks) * in.height;
    const dim3 grid(static_cast<unsigned>((threads + kThreadsPerBlock - 1) / kThreadsPerBlock));
    convert_kernel<Chunk, Layout, Out><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[0], in.stride[0], in.plane[1], in.stride[1], in.plane[2], in.stride[2], out.data,
        out.stride, in.width, in.height, chunks, op);
  };
  if constexpr (kTiled<Layout>)
    go(std::integral_constant<int, 1>{});
  else if (wide)
    go(std::integral_constant<int, kWidePixels<Layout>>{});
  else
    go(std::integral_constant<int, 1>{});
}

// Bayer: a thread per run of kBayerRun pixels of a row, in blocks of 32
// runs by 8 rows, so that a block's rows share their neighbours in the
// cache. Inside the frame (both neighbours of every column and row are the
// frame's own, rows aligned for vector loads) a thread reads each of its
// three rows with one vector load of the run's samples and two loads of
// their neighbours; at the frame's edges it runs bayer_colours. The frame is
// whole (the backend does not cut Bayer frames into strips).
constexpr int kBayerBlockRuns = 32, kBayerBlockRows = 8;

// The vector of a run's samples of a row, or of its gray: 8 or 16 bytes.
template <int Bytes>
using RunVector =
    std::enable_if_t<Bytes == 8 || Bytes == 16, std::conditional_t<Bytes == 8, uint2, uint4>>;

// The row pass (bayer.h) of the run of row y that starts at x0
// (even), inside the row: column x0 + k is even when k is.
template <class Layout>
__device__ __forceinline__ void inner_row_pass(const MosaicRows &m, int x0, int y,
                                               RowColours (&pass)[kBayerRun]) {
  using Samples = RunVector<kBayerRun * Layout::kGroupBytes>;
  const uint8_t *row = m.data + static_cast<size_t>(y) * m.pitch;
  union {
    Samples vector;
    uint8_t bytes[sizeof(Samples)];
  } run;
  run.vector = *reinterpret_cast<const Samples *>(row + x0 * Layout::kGroupBytes);
  uint32_t s[kBayerRun + 2];  // samples x0 - 1 to x0 + kBayerRun
  s[0] = mosaic_sample<Layout>(row, x0 - 1);
#pragma unroll
  for (int k = 0; k < kBayerRun; ++k) s[k + 1] = mosaic_sample<Layout>(run.bytes, k);
  s[kBayerRun + 1] = mosaic_sample<Layout>(row, x0 + kBayerRun);
#pragma unroll
  for (int k = 0; k < kBayerRun; ++k)
    pass[k] = inner_row_colours(s[k], s[k + 1], s[k + 2], (k & 1) == 0);
}

template <class Op, class Out>
__device__ __forceinline__ void store_bayer_run(const Rgb (&c)[kBayerRun], Out *dst, int n, Op op) {
  using Stored = RunVector<kBayerRun * sizeof(Out)>;
  if (n == kBayerRun && reinterpret_cast<uintptr_t>(dst) % sizeof(Stored) == 0) {
    union {
      Stored vector;
      Out pixel[kBayerRun];
    } values;
#pragma unroll
    for (int k = 0; k < kBayerRun; ++k) values.pixel[k] = static_cast<Out>(op(c[k]));
    *reinterpret_cast<Stored *>(dst) = values.vector;
  } else {
    for (int k = 0; k < n; ++k) dst[k] = static_cast<Out>(op(c[k]));
  }
}

// Whether the runs from column x0 have both neighbours of each of their
// columns inside the row, and rows that vector loads can read.
__device__ __forceinline__ bool inner_bayer_columns(const MosaicRows &m, int x0, bool vector_rows) {
  return vector_rows && x0 >= kBayerRun && x0 + kBayerRun + 2 <= m.width;
}

// The colours gray is taken from of an inner run of row y, from the row
// passes of the rows above it, its own and below it.
template <class Layout>
__device__ __forceinline__ void inner_run_colours(const RowColours (&above)[kBayerRun],
                                                  const RowColours (&here)[kBayerRun],
                                                  const RowColours (&below)[kBayerRun], int y,
                                                  int sample_bits, Rgb (&c)[kBayerRun]) {
  // a warp is one row: the row's kind, a branch that does not diverge
  auto demosaic_run = [&](bool chroma_row) {
#pragma unroll
    for (int k = 0; k < kBayerRun; ++k)
      c[k] = bayer_gray_colour<Layout>(
          demosaic_in_row<Layout>(above[k], here[k], below[k], k, chroma_row), sample_bits);
  };
  if (chroma_first<Layout>(y))
    demosaic_run(true);
  else
    demosaic_run(false);
}

// The colours gray is taken from of the run of row y from x0 (a multiple
// of kBayerRun), as many as the row has.
template <class Layout>
__device__ __forceinline__ void bayer_run_colours(const MosaicRows &m, int x0, int y,
                                                  int sample_bits, bool vector_rows,
                                                  Rgb (&c)[kBayerRun]) {
  if (inner_bayer_columns(m, x0, vector_rows) && y >= 1 && y + 1 < m.height) {
    RowColours above[kBayerRun], here[kBayerRun], below[kBayerRun];
    inner_row_pass<Layout>(m, x0, y - 1, above);
    inner_row_pass<Layout>(m, x0, y, here);
    inner_row_pass<Layout>(m, x0, y + 1, below);
    inner_run_colours<Layout>(above, here, below, y, sample_bits, c);
  } else {
    bayer_colours<Layout, kBayerRun>(m, x0, y, sample_bits, c);
  }
}

// The gray (op) of the inner runs from column x0 of rows [top, bottom) of
// the frame, each handed to put(y, gray) (y the row, gray its kBayerRun
// pixels'), the rows' passes made once each as the window of three moves
// down. false, and nothing done, where a row's neighbours or the columns'
// are not all inside the frame: then bayer_run_colours does each row.
template <class Layout, class Op, class Put>
__device__ __forceinline__ bool inner_bayer_rows_gray(const MosaicRows &m, int x0, int top,
                                                      int bottom, int sample_bits, bool vector_rows,
                                                      Op op, Put put) {
  if (!inner_bayer_columns(m, x0, vector_rows) || top < 1 || bottom >= m.height) return false;
  RowColours above[kBayerRun], here[kBayerRun], below[kBayerRun];
  inner_row_pass<Layout>(m, x0, top - 1, above);
  inner_row_pass<Layout>(m, x0, top, here);
  for (int y = top; y < bottom; ++y) {
    inner_row_pass<Layout>(m, x0, y + 1, below);
    Rgb colours[kBayerRun];
    inner_run_colours<Layout>(above, here, below, y, sample_bits, colours);
    uint32_t gray[kBayerRun];
#pragma unroll
    for (int k = 0; k < kBayerRun; ++k) {
      gray[k] = op(colours[k]);
      above[k] = here[k];
      here[k] = below[k];
    }
    put(y, gray);
  }
  return true;
}

template <class Layout, class Op>
__global__ void bayer_kernel(const uint8_t *__restrict__ in, size_t pitch,
                             uint8_t *__restrict__ out, size_t out_pitch, int width, int height,
                             int sample_bits, bool vector_rows, Op op) {
  using Out = std::conditional_t<Op::kOutDepth == 16, uint16_t, uint8_t>;
  const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * kBayerRun;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x0 >= width || y >= height) return;
  Rgb c[kBayerRun];
  bayer_run_colours<Layout>(MosaicRows{in, pitch, width, height}, x0, y, sample_bits, vector_rows,
                            c);
  store_bayer_run(c, reinterpret_cast<Out *>(out + y * out_pitch) + x0, min(kBayerRun, width - x0),
                  op);
}

template <class Layout, class Op>
void launch_bayer(const SourceFrame &in, const GrayFrame &out, Op op, cudaStream_t stream) {
  const int runs = (in.width + kBayerRun - 1) / kBayerRun;
  const dim3 grid((runs + kBayerBlockRuns - 1) / kBayerBlockRuns,
                  (in.height + kBayerBlockRows - 1) / kBayerBlockRows);
  const bool vector_rows = reads_wide<Layout>(in);
  bayer_kernel<Layout><<<grid, dim3(kBayerBlockRuns, kBayerBlockRows), 0, stream>>>(
      in.plane[0], in.stride[0], out.data, out.stride, in.width, in.height, in.sample_bits,
      vector_rows, op);
}

// The planes a resampled frame reads, and the gray at 16 bits (op) of its
// pixel (sx, sy), in the whole frame's coordinates, computed where it is
// read (Bayer: demosaicked from its neighbours in the whole frame).
struct Planes {
  const uint8_t *data[3];
  size_t pitch[3];
};

template <class Layout, class Op>
__device__ __forceinline__ uint32_t source_gray(const Planes &p, const Conversion &c, Op op, int sx,
                                                int sy) {
  if constexpr (Layout::kFamily == LayoutFamily::Bayer) {
    const MosaicRows m{p.data[0], p.pitch[0], c.in_width, c.in_height};
    return op(bayer_colour<Layout>(m, sx, sy, c.sample_bits));
  } else if constexpr (kTiled<Layout>) {
    return op(Layout::pixel_at(p.data[0], p.pitch[0], sx, sy));
  } else {
    const MemoryBytes row{
        {p.data[0] + sy * p.pitch[0], p.data[1] + sy * p.pitch[1], p.data[2] + sy * p.pitch[2]}};
    return op(Layout::pixel(row, sx));
  }
}

// Where the resampling kernels' pixels go: store(x, y, G) for output pixel
// (x, y), G at 16 bits (0 in the bars around the destination). A frame's
// kernels store gray, a batch's its elements (convert_batch_cuda).
struct GrayStore {
  uint8_t *__restrict__ out;
  size_t pitch;
  int depth;
  __device__ __forceinline__ void operator()(int x, int y, uint32_t g) const {
    uint8_t *row = out + y * pitch;
    if (depth == 16)
      reinterpret_cast<uint16_t *>(row)[x] = static_cast<uint16_t>(g);
    else
      row[x] = reduce8(g);
  }
};

__device__ __forceinline__ bool in_rect(const Rect &r, int x, int y) {
  return x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height;
}

// Nearest and bilinear: a thread per output pixel, resample() over the gray
// of the one to four source pixels its taps read. A block's column and row
// taps are worked out once, into shared memory: their divisions cost more
// than the rest of a luma pixel.
constexpr int kSampleColumns = 32, kSampleRows = 8;

// A block of kSampleColumns x kSampleRows threads, one output pixel each.
template <class Layout, class Op, class Store>
__device__ __forceinline__ void sample_block(const Planes &planes, const Conversion &c,
                                             const QuotientRounder &round, Op op, Store store) {
  __shared__ AxisTaps column_taps[kSampleColumns], row_taps[kSampleRows];
  const Rect crop = c.crop, dest = c.dest;
  const int t = threadIdx.y * kSampleColumns + threadIdx.x;
  // a column or row outside the picture takes its nearest picture one's taps
  if (t < kSampleColumns) {
    const int x = min(max(int(blockIdx.x) * kSampleColumns + t - dest.x, 0), dest.width - 1);
    column_taps[t] = axis_taps(c.method, crop.width, dest.width, x);
  } else if (t < kSampleColumns + kSampleRows) {
    const int r = t - kSampleColumns;
    const int y = min(max(int(blockIdx.y) * kSampleRows + r - dest.y, 0), dest.height - 1);
    row_taps[r] = axis_taps(c.method, crop.height, dest.height, y);
  }
  __syncthreads();
  const int x = blockIdx.x * kSampleColumns + threadIdx.x;
  const int y = blockIdx.y * kSampleRows + threadIdx.y;
  if (x >= c.out_width || y >= c.out_height) return;
  uint32_t g = 0;
  if (in_rect(dest, x, y))
    g = resample(
        column_taps[threadIdx.x], row_taps[threadIdx.y],
        [&](int i, int j) { return source_gray<Layout>(planes, c, op, crop.x + i, crop.y + j); },
        round);
  store(x, y, g);
}

template <class Layout, class Op>
__global__ void __launch_bounds__(kSampleColumns *kSampleRows)
    sample_kernel(const uint8_t *__restrict__ in0, size_t pitch0, const uint8_t *__restrict__ in1,
                  size_t pitch1, const uint8_t *__restrict__ in2, size_t pitch2,
                  uint8_t *__restrict__ out, size_t out_pitch, Conversion c, QuotientRounder round,
                  Op op) {
  sample_block<Layout>(Planes{{in0, in1, in2}, {pitch0, pitch1, pitch2}}, c, round, op,
                       GrayStore{out, out_pitch, c.out_depth});
}

// The gray at 16 bits (op) of the run of kRunPixels<Layout> pixels of row y
// from column x0 (a multiple of it), handed to put(k, g) for each pixel k
// of the run inside the row, read as the same-size kernels read it: wide
// (16-byte loads; Bayer: vector rows) where `wide` says the rows allow it;
// tiled rows pixel by pixel, 8 a run.
template <class Layout>
constexpr int kRunPixels = Layout::kFamily == LayoutFamily::Bayer ? kBayerRun
                           : kTiled<Layout>                       ? 8
                                                                  : kWidePixels<Layout>;

template <class Layout, class Op, class Put>
__device__ __forceinline__ void run_gray(const Planes &p, const Conversion &c, bool wide, int x0,
                                         int y, Op op, Put put) {
  constexpr int kRun = kRunPixels<Layout>;
  const int n = min(kRun, c.in_width - x0);
  if constexpr (Layout::kFamily == LayoutFamily::Bayer) {
    Rgb colours[kRun];
    bayer_run_colours<Layout>(MosaicRows{p.data[0], p.pitch[0], c.in_width, c.in_height}, x0, y,
                              c.sample_bits, wide, colours);
#pragma unroll
    for (int k = 0; k < kRun; ++k)
      if (k < n) put(k, op(colours[k]));
  } else if constexpr (kTiled<Layout>) {
    for (int k = 0; k < n; ++k) put(k, op(Layout::pixel_at(p.data[0], p.pitch[0], x0 + k, y)));
  } else {
    const size_t at = static_cast<size_t>(x0 / Layout::kGroupPixels) * Layout::kGroupBytes;
    const uint8_t *const start[3] = {p.data[0] + y * p.pitch[0] + at,
                                     p.data[1] + y * p.pitch[1] + at,
                                     p.data[2] + y * p.pitch[2] + at};
    if (wide && n == kRun) {
      const auto bytes =
          load_chunk<Layout::kPlanes, kRun / Layout::kGroupPixels * Layout::kGroupBytes>(start);
#pragma unroll
      for (int k = 0; k < kRun; ++k) put(k, op(Layout::pixel(bytes, k)));
    } else {
      const MemoryBytes bytes{{start[0], start[1], start[2]}};
      for (int k = 0; k < n; ++k) put(k, op(Layout::pixel(bytes, k)));
    }
  }
}

// Area: every source pixel of an output pixel's footprint counts, and
// neighbours' footprints share their edge pixels. A block makes a tile of
// kAreaColumns x kAreaRows output pixels in two passes over shared memory:
// down, a thread per run of source columns (read as the same-size kernels
// read them) and output row sums the run's gray down that row's taps;
// across, a thread per output column sums those down-sums across its taps
// for each of the tile's rows. resample()'s integers, in the other order.
// The footprint's columns go in bands where they do not fit. A 640x360
// output is few tiles, each a chain of dependent loads: 4 rows a tile
// (900 blocks) was 1.0-1.35x faster than 8 on an H100, except luma
// letterboxed at 1080p (7 % slower); 1 output row a thread was slower.
constexpr int kAreaColumns = 64, kAreaRows = 4, kAreaThreads = 128;
constexpr int kAreaRowsPerThread = kAreaRows * kAreaColumns / kAreaThreads;
constexpr int kAreaBandWords = 8192;  // down-sums a band holds at most: 32 KB

// An area footprint's weights by source index: the partly covered pixels
// at its ends, out (a whole pixel's overlap times out) between them:
// AxisTaps::weight with its arithmetic done once.
struct AreaWeights {
  int first, last;
  uint32_t first_weight, last_weight, inner;
  __device__ explicit AreaWeights(const AxisTaps &t)
      : first(t.first),
        last(t.first + t.count - 1),
        first_weight(t.weight(0)),
        last_weight(t.weight(t.count - 1)),
        inner(static_cast<uint32_t>(t.unit)) {}
  __device__ uint32_t operator()(int i) const {
    return i == first ? first_weight : i == last ? last_weight : inner;
  }
};

// Stores a run's words with the widest stores its place (a multiple of the
// run from a 16-byte aligned row) allows.
template <int Words>
__device__ __forceinline__ void store_shared(uint32_t *at, const uint32_t (&w)[Words]) {
  if constexpr (Words % 4 == 0) {
#pragma unroll
    for (int k = 0; k < Words; k += 4)
      reinterpret_cast<uint4 *>(at)[k / 4] = make_uint4(w[k], w[k + 1], w[k + 2], w[k + 3]);
  } else {
#pragma unroll
    for (int k = 0; k < Words; ++k) at[k] = w[k];
  }
}

// A block of kAreaThreads threads, a tile of output pixels, band_columns
// down-sums a row in its dynamic shared memory.
template <class Layout, class Op, class Store>
__device__ __forceinline__ void area_block(const Planes &planes, const Conversion &c,
                                           int band_columns, bool wide,
                                           const QuotientRounder &round, Op op, Store store) {
  constexpr int kRun = kRunPixels<Layout>;
  constexpr int kRowsInFlight = Layout::kFamily == LayoutFamily::Bayer ? 1 : 4;
  extern __shared__ uint32_t down[];  // [kAreaRows][band_columns]
  const Rect crop = c.crop, dest = c.dest;
  const auto taps = [](int in, int out, int at) {
    return axis_taps(ScaleMethod::Area, in, out, at);
  };
  // this thread's output column of the tile, and its rows row0 + kRowStep * m
  const int column = threadIdx.x % kAreaColumns, row0 = threadIdx.x / kAreaColumns;
  const int x = blockIdx.x * kAreaColumns + column, y0 = blockIdx.y * kAreaRows;
  constexpr int kRowStep = kAreaThreads / kAreaColumns;
  // the tile's columns [px0, px1) and rows [py0, py1) of the picture, from
  // the destination's corner: the same for the whole block
  const int px0 = max(int(blockIdx.x) * kAreaColumns, dest.x) - dest.x;
  const int px1 = min(int(blockIdx.x + 1) * kAreaColumns, dest.x + dest.width) - dest.x;
  const int py0 = max(y0, dest.y) - dest.y;
  const int py1 = min(y0 + kAreaRows, dest.y + dest.height) - dest.y;
  uint64_t sum[kAreaRowsPerThread] = {};
  if (px0 < px1 && py0 < py1) {
    // the frame's columns [ax0, ax1) the tile reads, from a run's start; a
    // thread outside the picture takes its nearest picture column's taps
    const AxisTaps last = taps(crop.width, dest.width, px1 - 1);
    const int ax0 = (crop.x + taps(crop.width, dest.width, px0).first) / kRun * kRun;
    const int ax1 = crop.x + last.first + last.count;
    const AxisTaps tx = taps(crop.width, dest.width, min(max(x - dest.x, px0), px1 - 1));
    const AreaWeights wx(tx);
    const int rows = py1 - py0;
    for (int a0 = ax0; a0 < ax1; a0 += band_columns) {
      const int runs = (min(band_columns, ax1 - a0) + kRun - 1) / kRun;
      __syncthreads();  // every thread is done with the previous band
      for (int t = threadIdx.x; t < rows * runs; t += kAreaThreads) {
        const int r = t / runs, x0 = a0 + (t - r * runs) * kRun;
        const AxisTaps ty = taps(crop.height, dest.height, py0 + r);
        const AreaWeights wy(ty);
        uint32_t v[kRun] = {};  // at most 65535 * Dy < 2^31
        bool summed = false;
        if constexpr (Layout::kFamily == LayoutFamily::Bayer)
          summed = inner_bayer_rows_gray<Layout>(
              MosaicRows{planes.data[0], planes.pitch[0], c.in_width, c.in_height}, x0,
              crop.y + ty.first, crop.y + ty.first + ty.count, c.sample_bits, wide, op,
              [&](int y, const uint32_t(&gray)[kRun]) {
                const uint32_t w = wy(y - crop.y);
#pragma unroll
                for (int k = 0; k < kRun; ++k) v[k] += w * gray[k];
              });
        if (!summed) {
          // unrolled so that the loads of several rows are in flight at once
          // (measured on an H100: not for Bayer, whose runs read three rows
          // each and whose registers then run out)
#pragma unroll(kRowsInFlight)
          for (int j = ty.first; j < ty.first + ty.count; ++j) {
            const uint32_t w = wy(j);
            run_gray<Layout>(planes, c, wide, x0, crop.y + j, op,
                             [&](int k, uint32_t g) { v[k] += w * g; });
          }
        }
        store_shared(down + r * band_columns + (x0 - a0), v);
      }
      __syncthreads();
      const int i0 = max(tx.first, a0 - crop.x);
      const int i1 = min(tx.first + tx.count, a0 + band_columns - crop.x);
#pragma unroll
      for (int m = 0; m < kAreaRowsPerThread; ++m) {
        // the tile's row row0 + kRowStep * m, as a row of the picture's part
        const int r = y0 + row0 + kRowStep * m - dest.y - py0;
        if (r < 0 || r >= rows) continue;
        const uint32_t *const d = down + r * band_columns + (crop.x - a0);
        for (int i = i0; i < i1; ++i) sum[m] += uint64_t{wx(i)} * d[i];
      }
    }
  }
  if (x >= c.out_width) return;
#pragma unroll
  for (int m = 0; m < kAreaRowsPerThread; ++m) {
    const int y = y0 + row0 + kRowStep * m;
    if (y >= c.out_height) break;
    store(x, y, in_rect(dest, x, y) ? round(sum[m]) : 0);
  }
}

template <class Layout, class Op>
__global__ void __launch_bounds__(kAreaThreads)
    area_kernel(const uint8_t *__restrict__ in0, size_t pitch0, const uint8_t *__restrict__ in1,
                size_t pitch1, const uint8_t *__restrict__ in2, size_t pitch2,
                uint8_t *__restrict__ out, size_t out_pitch, Conversion c, int band_columns,
                bool wide, QuotientRounder round, Op op) {
  area_block<Layout>(Planes{{in0, in1, in2}, {pitch0, pitch1, pitch2}}, c, band_columns, wide,
                     round, op, GrayStore{out, out_pitch, c.out_depth});
}

// The columns of a band of down-sums: a tile's whole footprint (its share
// of the crop, a pixel at each fractional edge and the run it starts in)
// where that fits, else as many runs as fit.
template <class Layout>
int area_band_columns(const Conversion &c) {
  constexpr int kRun = kRunPixels<Layout>;
  const long long span =
      (static_cast<long long>(kAreaColumns) * c.crop.width + c.dest.width - 1) / c.dest.width + 2 +
      kRun;
  return static_cast<int>(
             std::min<long long>((span + kRun - 1) / kRun, kAreaBandWords / kAreaRows / kRun)) *
         kRun;
}

}  // namespace

}  // namespace cudagray
