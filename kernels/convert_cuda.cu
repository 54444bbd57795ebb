// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA kernels and convert_cuda, which launches them: one traversal (a
// thread per chunk of a row, 16-byte loads and the widest stores the chunk
// allows where rows are aligned) instantiated per layout with the per-pixel
// operation, as CUB and OpenCV's cudev separate traversal from operation;
// Bayer frames have their own (bayer.h); resampled frames a sampler over the
// source's gray (resample.h), a thread per output pixel.
#include "cudagray/convert_cuda.h"

#include <cstdint>
#include <type_traits>

#include "bayer.h"
#include "layouts.h"
#include "resample.h"

namespace cudagray {

namespace {

constexpr int kThreadsPerBlock = 256;

// Pixels a thread converts on the wide path: 16, fed by 16-byte loads; 8
// where a pixel is 4 bytes or more (planes together), so that a thread holds
// no more than 48 bytes of input; 12 for v210, two of its 16-byte groups of
// 6 pixels. (Measured on an H100: 16 pixels of 4 bytes and 48 of v210 held
// too many registers for the memory's latency to be hidden.)
template <class Layout>
constexpr int kWidePixels = Layout::kGroupPixels == 6                                          ? 12
                            : Layout::kGroupBytes *Layout::kPlanes / Layout::kGroupPixels >= 4 ? 8
                                                                                               : 16;

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
  // where the chunk starts in each plane (x0 is a whole number of groups)
  const size_t at = static_cast<size_t>(x0 / Layout::kGroupPixels) * Layout::kGroupBytes;
  const uint8_t *const start[3] = {in0 + row * pitch0 + at, in1 + row * pitch1 + at,
                                   in2 + row * pitch2 + at};
  Out *dst = reinterpret_cast<Out *>(out + row * out_pitch) + x0;
  if constexpr (Chunk > 1) {
    if (x0 + Chunk <= width) {
      RegisterBytes<kPlanes, kChunkBytes / 4> bytes;
#pragma unroll
      for (int p = 0; p < kPlanes; ++p)
#pragma unroll
        for (int i = 0; i < kChunkBytes / 16; ++i) {
          const uint4 v = load16(start[p] + 16 * i);
          bytes.words[p][4 * i] = v.x, bytes.words[p][4 * i + 1] = v.y;
          bytes.words[p][4 * i + 2] = v.z, bytes.words[p][4 * i + 3] = v.w;
        }
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
  {
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

// Launches the traversal for layout and op: the wide instance when every
// plane read and the output have 16-byte aligned rows, else the
// pixel-by-pixel one.
template <class Layout, class Op>
void launch(const SourceFrame &in, const GrayFrame &out, Op op, cudaStream_t stream) {
  using Out = std::conditional_t<Op::kOutDepth == 16, uint16_t, uint8_t>;
  bool wide = rows_aligned(out.data, out.stride, 16);
  for (int p = 0; p < Layout::kPlanes; ++p)
    wide = wide && rows_aligned(in.plane[p], in.stride[p], 16);
  auto go = [&](auto chunk) {
    constexpr int Chunk = decltype(chunk)::value;
    const int chunks = (in.width + Chunk - 1) / Chunk;
    const long long threads = static_cast<long long>(chunks) * in.height;
    const dim3 grid(static_cast<unsigned>((threads + kThreadsPerBlock - 1) / kThreadsPerBlock));
    convert_kernel<Chunk, Layout, Out><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[0], in.stride[0], in.plane[1], in.stride[1], in.plane[2], in.stride[2], out.data,
        out.stride, in.width, in.height, chunks, op);
  };
  if (wide)
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
constexpr int kBayerRun = 8;
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

template <class Layout, class Op>
__global__ void bayer_kernel(const uint8_t *__restrict__ in, size_t pitch,
                             uint8_t *__restrict__ out, size_t out_pitch, int width, int height,
                             int sample_bits, bool vector_rows, Op op) {
  using Out = std::conditional_t<Op::kOutDepth == 16, uint16_t, uint8_t>;
  const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * kBayerRun;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x0 >= width || y >= height) return;
  const MosaicRows m{in, pitch, width, height};
  Rgb c[kBayerRun];
  if (vector_rows && x0 >= kBayerRun && x0 + kBayerRun + 2 <= width && y >= 1 && y + 1 < height) {
    RowColours above[kBayerRun], here[kBayerRun], below[kBayerRun];
    inner_row_pass<Layout>(m, x0, y - 1, above);
    inner_row_pass<Layout>(m, x0, y, here);
    inner_row_pass<Layout>(m, x0, y + 1, below);
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
  } else {
    bayer_colours<Layout, kBayerRun>(m, x0, y, sample_bits, c);
  }
  store_bayer_run(c, reinterpret_cast<Out *>(out + y * out_pitch) + x0, min(kBayerRun, width - x0),
                  op);
}

template <class Layout, class Op>
void launch_bayer(const SourceFrame &in, const GrayFrame &out, Op op, cudaStream_t stream) {
  const int runs = (in.width + kBayerRun - 1) / kBayerRun;
  const dim3 grid((runs + kBayerBlockRuns - 1) / kBayerBlockRuns,
                  (in.height + kBayerBlockRows - 1) / kBayerBlockRows);
  // whether each row's runs start where their vector loads may
  const bool vector_rows = rows_aligned(in.plane[0], in.stride[0], kBayerRun * Layout::kGroupBytes);
  bayer_kernel<Layout><<<grid, dim3(kBayerBlockRuns, kBayerBlockRows), 0, stream>>>(
      in.plane[0], in.stride[0], out.data, out.stride, in.width, in.height, in.sample_bits,
      vector_rows, op);
}

// Resampled: a thread per output pixel, 0 in the bars around the
// destination, else resample() over the gray of the source pixels its taps
// read, each computed where it is read (Bayer: demosaicked from its
// neighbours in the whole frame). op gives a pixel's GRAY16.
template <class Layout, class Op>
__global__ void resample_kernel(const uint8_t *__restrict__ in0, size_t pitch0,
                                const uint8_t *__restrict__ in1, size_t pitch1,
                                const uint8_t *__restrict__ in2, size_t pitch2,
                                uint8_t *__restrict__ out, size_t out_pitch, Conversion c, Op op) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= c.out_width || y >= c.out_height) return;
  const Rect crop = c.crop, dest = c.dest;
  uint32_t g = 0;
  if (x >= dest.x && x < dest.x + dest.width && y >= dest.y && y < dest.y + dest.height) {
    const AxisTaps tx = axis_taps(c.method, crop.width, dest.width, x - dest.x);
    const AxisTaps ty = axis_taps(c.method, crop.height, dest.height, y - dest.y);
    g = resample(tx, ty, [&](int i, int j) -> uint32_t {
      const int sx = crop.x + i, sy = crop.y + j;
      if constexpr (Layout::kFamily == LayoutFamily::Bayer) {
        const MosaicRows m{in0, pitch0, c.in_width, c.in_height};
        return op(bayer_colour<Layout>(m, sx, sy, c.sample_bits));
      } else {
        const MemoryBytes row{{in0 + sy * pitch0, in1 + sy * pitch1, in2 + sy * pitch2}};
        return op(Layout::pixel(row, sx));
      }
    });
  }
  uint8_t *row = out + y * out_pitch;
  if (c.out_depth == 16)
    reinterpret_cast<uint16_t *>(row)[x] = static_cast<uint16_t>(g);
  else
    row[x] = reduce8(g);
}

template <class Layout, class Op>
void launch_resample(const Conversion &c, const InputFrame &in, const GrayFrame &out, Op op,
                     cudaStream_t stream) {
  const dim3 block(32, 8);
  const dim3 grid((c.out_width + block.x - 1) / block.x, (c.out_height + block.y - 1) / block.y);
  resample_kernel<Layout><<<grid, block, 0, stream>>>(in.plane[0], in.stride[0], in.plane[1],
                                                      in.stride[1], in.plane[2], in.stride[2],
                                                      out.data, out.stride, c, op);
}

}  // namespace

cudaError_t convert_cuda(const Conversion &c, const InputFrame &device_in,
                         const GrayFrame &device_out, const Weights &w, cudaStream_t stream) {
  std::string why;
  if (!valid_conversion(c, &why)) return cudaErrorInvalidValue;
  const SourceFrame in = source_frame(c, device_in);
  dispatch_layout(c.layout, [&](auto layout) {
    using Layout = decltype(layout);
    if (c.resamples()) {
      dispatch_to_gray(layout, 16, c.limited_range, w, [&](auto op) {
        launch_resample<Layout>(c, device_in, device_out, op, stream);
      });
      return;
    }
    dispatch_to_gray(layout, c.out_depth, c.limited_range, w, [&](auto op) {
      if constexpr (Layout::kFamily == LayoutFamily::Bayer)
        launch_bayer<Layout>(in, device_out, op, stream);
      else
        launch<Layout>(in, device_out, op, stream);
    });
  });
  return cudaGetLastError();
}

}  // namespace cudagray
