// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA kernel and convert_cuda, which launches it: one traversal (a
// thread per chunk of a row, 16-byte loads and stores where rows are
// aligned) instantiated per layout with the per-pixel operation, as CUB and
// OpenCV's cudev separate traversal from operation.
#include "cudagray/convert_cuda.h"

#include <cstdint>
#include <type_traits>

#include "layouts.h"

namespace cudagray {

namespace {

constexpr int kThreadsPerBlock = 256;
// Pixels per thread in the wide kernels: one 16-byte store of GRAY8, fed by
// 16-byte loads (3 for RGB, 4 for 4-byte formats, 1 per plane for planar).
constexpr int kWideChunk = 16;

__device__ __forceinline__ uint4 load16(const uint8_t *p) {
  return __ldcs(reinterpret_cast<const uint4 *>(p));  // read once: stream past the cache
}

__device__ __forceinline__ void store16(uint8_t *p, const uint32_t (&w)[4]) {
  __stcs(reinterpret_cast<uint4 *>(p), make_uint4(w[0], w[1], w[2], w[3]));
}

template <int N>
__device__ __forceinline__ uint32_t byte_of(const uint32_t (&words)[N], int i) {
  return (words[i >> 2] >> ((i & 3) * 8)) & 0xFF;
}

// Thread t of the grid converts pixels [Chunk*c, Chunk*c + Chunk) of row r,
// the rows being cut into `chunks` chunks. Chunk is kWideChunk for frames
// whose rows start 16-byte aligned (wide loads, one 16-byte store) and 1
// otherwise; a row's ragged end is converted pixel by pixel.
template <int Chunk>
__device__ __forceinline__ bool chunk_of_thread(int height, int chunks, int *row, int *x) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(chunks) * height) return false;
  *row = static_cast<int>(t / chunks);
  *x = static_cast<int>(t - static_cast<long long>(*row) * chunks) * Chunk;
  return true;
}

// ---- where each layout keeps a pixel's channels, as the kernel reads them:
// Reader<Layout> starts at pixel x0 of a row (one pointer per plane it
// reads), gives pixel x's channels one at a time, or loads 16 pixels with
// 16-byte loads and picks pixel p's channels out of the loaded words.

template <class Layout>
struct Reader;

struct Rgb {
  uint32_t r, g, b;
};

// Packed: 16 pixels are Bpp loads of 16 bytes.
template <int Bpp, int R, int G, int B>
struct Reader<PackedLayout<Bpp, R, G, B>> {
  static constexpr int kPlanes = 1, kWords = 4 * Bpp;
  const uint8_t *src;
  __device__ __forceinline__ Reader(const uint8_t *const *rows, int x0)
      : src(rows[0] + static_cast<size_t>(x0) * Bpp) {}
  __device__ __forceinline__ Rgb pixel(int x) const {
    return {src[x * Bpp + R], src[x * Bpp + G], src[x * Bpp + B]};
  }
  __device__ __forceinline__ void load16(uint32_t (&words)[kWords]) const {
#pragma unroll
    for (int i = 0; i < Bpp; ++i) {
      const uint4 v = cudagray::load16(src + 16 * i);
      words[4 * i] = v.x, words[4 * i + 1] = v.y, words[4 * i + 2] = v.z, words[4 * i + 3] = v.w;
    }
  }
  __device__ static __forceinline__ Rgb pixel(const uint32_t (&words)[kWords], int p) {
    return {byte_of(words, p * Bpp + R), byte_of(words, p * Bpp + G), byte_of(words, p * Bpp + B)};
  }
};

// Planar, whichever the layout's plane order: the launch passes the R, G
// and B planes in that order. One 16-byte load each.
struct RgbPlanes {};

template <>
struct Reader<RgbPlanes> {
  static constexpr int kPlanes = 3, kWords = 12;
  const uint8_t *r, *g, *b;
  __device__ __forceinline__ Reader(const uint8_t *const *rows, int x0)
      : r(rows[0] + x0), g(rows[1] + x0), b(rows[2] + x0) {}
  __device__ __forceinline__ Rgb pixel(int x) const { return {r[x], g[x], b[x]}; }
  __device__ __forceinline__ void load16(uint32_t (&words)[kWords]) const {
    const uint4 rv = cudagray::load16(r), gv = cudagray::load16(g), bv = cudagray::load16(b);
    const uint32_t loaded[kWords] = {rv.x, rv.y, rv.z, rv.w, gv.x, gv.y,
                                     gv.z, gv.w, bv.x, bv.y, bv.z, bv.w};
#pragma unroll
    for (int i = 0; i < kWords; ++i) words[i] = loaded[i];
  }
  __device__ static __forceinline__ Rgb pixel(const uint32_t (&words)[kWords], int p) {
    return {byte_of(words, p), byte_of(words, 16 + p), byte_of(words, 32 + p)};
  }
};

// YUV's luma plane: one byte a pixel, 16 pixels one load.
template <>
struct Reader<LumaLayout> {
  static constexpr int kPlanes = 1, kWords = 4;
  const uint8_t *src;
  __device__ __forceinline__ Reader(const uint8_t *const *rows, int x0) : src(rows[0] + x0) {}
  __device__ __forceinline__ uint32_t pixel(int x) const { return src[x]; }
  __device__ __forceinline__ void load16(uint32_t (&words)[kWords]) const {
    const uint4 v = cudagray::load16(src);
    words[0] = v.x, words[1] = v.y, words[2] = v.z, words[3] = v.w;
  }
  __device__ static __forceinline__ uint32_t pixel(const uint32_t (&words)[kWords], int p) {
    return byte_of(words, p);
  }
};

// ---- what each pixel becomes

struct RgbToGray {
  Weights w;
  __device__ __forceinline__ uint8_t operator()(const Rgb &c) const {
    return luma(c.r, c.g, c.b, w);
  }
};

struct ExpandLimitedLuma {
  __device__ __forceinline__ uint8_t operator()(uint32_t y) const {
    return expand_limited(static_cast<uint8_t>(y));
  }
};

struct CopyLuma {
  __device__ __forceinline__ uint8_t operator()(uint32_t y) const {
    return static_cast<uint8_t>(y);
  }
};

// The one traversal: each thread converts one chunk of a row (chunk_of_thread),
// reading it through Reader<Layout> and writing op of each pixel. The planes
// are separate __restrict__ parameters (unused ones null) so that the
// compiler knows they do not alias the output.
template <int Chunk, class Layout, class Op>
__global__ void convert_kernel(const uint8_t *__restrict__ in0, size_t pitch0,
                               const uint8_t *__restrict__ in1, size_t pitch1,
                               const uint8_t *__restrict__ in2, size_t pitch2,
                               uint8_t *__restrict__ out, size_t out_pitch, int width, int height,
                               int chunks, Op op) {
  using In = Reader<Layout>;
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  // the rows' starts (an unused plane is null with pitch 0, and stays null)
  const uint8_t *const rows[3] = {in0 + row * pitch0, in1 + row * pitch1, in2 + row * pitch2};
  const In src(rows, x0);
  uint8_t *dst = out + row * out_pitch + x0;
  if (Chunk == kWideChunk && x0 + Chunk <= width) {
    uint32_t words[In::kWords];
    src.load16(words);
    uint32_t gray[4] = {0, 0, 0, 0};
#pragma unroll
    for (int p = 0; p < kWideChunk; ++p)
      gray[p >> 2] |= uint32_t(op(In::pixel(words, p))) << ((p & 3) * 8);
    store16(dst, gray);
  } else {
    const int n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x) dst[x] = op(src.pixel(x));
  }
}

bool aligned16(const void *p, size_t pitch) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && pitch % 16 == 0;
}

// The planes a layout reads, in the order its Reader takes them.
struct Planes {
  const uint8_t *data[3] = {nullptr, nullptr, nullptr};
  size_t pitch[3] = {0, 0, 0};
};

// Launches the kernel for layout and op: the wide instance when every plane
// and the output have 16-byte aligned rows, else the pixel-by-pixel one.
template <class Layout, class Op>
void launch(Layout, const Planes &in, const InputFrame &frame, const GrayFrame &out, Op op,
            cudaStream_t stream) {
  bool wide = aligned16(out.data, out.stride);
  for (int p = 0; p < Reader<Layout>::kPlanes; ++p)
    wide = wide && aligned16(in.data[p], in.pitch[p]);
  auto go = [&](auto chunk) {
    constexpr int Chunk = decltype(chunk)::value;
    const int chunks = (frame.width + Chunk - 1) / Chunk;
    const long long threads = static_cast<long long>(chunks) * frame.height;
    const dim3 grid(static_cast<unsigned>((threads + kThreadsPerBlock - 1) / kThreadsPerBlock));
    convert_kernel<Chunk, Layout><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.data[0], in.pitch[0], in.data[1], in.pitch[1], in.data[2], in.pitch[2], out.data,
        out.stride, frame.width, frame.height, chunks, op);
  };
  if (wide)
    go(std::integral_constant<int, kWideChunk>{});
  else
    go(std::integral_constant<int, 1>{});
}

template <int Bpp, int R, int G, int B>
void convert(PackedLayout<Bpp, R, G, B> layout, const InputFrame &in, const GrayFrame &out,
             const Weights &w, cudaStream_t stream) {
  Planes planes;
  planes.data[0] = in.plane[0], planes.pitch[0] = in.stride[0];
  launch(layout, planes, in, out, RgbToGray{w}, stream);
}

template <int R, int G, int B>
void convert(PlanarLayout<R, G, B>, const InputFrame &in, const GrayFrame &out, const Weights &w,
             cudaStream_t stream) {
  Planes planes;
  const int order[3] = {R, G, B};
  for (int c = 0; c < 3; ++c)
    planes.data[c] = in.plane[order[c]], planes.pitch[c] = in.stride[order[c]];
  launch(RgbPlanes{}, planes, in, out, RgbToGray{w}, stream);
}

void convert(LumaLayout layout, const InputFrame &in, const GrayFrame &out, const Weights &,
             cudaStream_t stream) {
  Planes planes;
  planes.data[0] = in.plane[0], planes.pitch[0] = in.stride[0];
  if (in.limited_range)
    launch(layout, planes, in, out, ExpandLimitedLuma{}, stream);
  else
    launch(layout, planes, in, out, CopyLuma{}, stream);
}

}  // namespace

cudaError_t convert_cuda(const InputFrame &device_in, const GrayFrame &device_out, const Weights &w,
                         cudaStream_t stream) {
  if (device_in.width <= 0 || device_in.height <= 0) return cudaErrorInvalidValue;
  dispatch_layout(device_in.layout,
                  [&](auto layout) { convert(layout, device_in, device_out, w, stream); });
  return cudaGetLastError();
}

}  // namespace cudagray
