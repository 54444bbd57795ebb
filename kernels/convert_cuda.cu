// The CUDA kernels: one thread per chunk of a row, 16-byte loads and stores
// where rows are aligned, and convert_cuda, which launches them.
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

template <int Chunk, int Bpp, int R, int G, int B>
__global__ void packed_kernel(const uint8_t *__restrict__ in, size_t in_pitch,
                              uint8_t *__restrict__ out, size_t out_pitch, int width,
                              int height, int chunks, Weights w) {
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  const uint8_t *src = in + row * in_pitch + static_cast<size_t>(x0) * Bpp;
  uint8_t *dst = out + row * out_pitch + x0;
  if (Chunk == kWideChunk && x0 + Chunk <= width) {
    uint32_t words[4 * Bpp];
#pragma unroll
    for (int i = 0; i < Bpp; ++i) {
      const uint4 v = load16(src + 16 * i);
      words[4 * i] = v.x, words[4 * i + 1] = v.y, words[4 * i + 2] = v.z, words[4 * i + 3] = v.w;
    }
    uint32_t gray[4] = {0, 0, 0, 0};
#pragma unroll
    for (int p = 0; p < kWideChunk; ++p)
      gray[p >> 2] |= uint32_t(luma(byte_of(words, p * Bpp + R), byte_of(words, p * Bpp + G),
                                    byte_of(words, p * Bpp + B), w))
                      << ((p & 3) * 8);
    store16(dst, gray);
  } else {
    const int n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x, src += Bpp) dst[x] = luma(src[R], src[G], src[B], w);
  }
}

template <int Chunk>
__global__ void planar_kernel(const uint8_t *__restrict__ r, size_t r_pitch,
                              const uint8_t *__restrict__ g, size_t g_pitch,
                              const uint8_t *__restrict__ b, size_t b_pitch,
                              uint8_t *__restrict__ out, size_t out_pitch, int width,
                              int height, int chunks, Weights w) {
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  r += row * r_pitch + x0;
  g += row * g_pitch + x0;
  b += row * b_pitch + x0;
  uint8_t *dst = out + row * out_pitch + x0;
  if (Chunk == kWideChunk && x0 + Chunk <= width) {
    const uint4 rv = load16(r), gv = load16(g), bv = load16(b);
    const uint32_t rw[4] = {rv.x, rv.y, rv.z, rv.w}, gw[4] = {gv.x, gv.y, gv.z, gv.w},
                   bw[4] = {bv.x, bv.y, bv.z, bv.w};
    uint32_t gray[4] = {0, 0, 0, 0};
#pragma unroll
    for (int p = 0; p < kWideChunk; ++p)
      gray[p >> 2] |= uint32_t(luma(byte_of(rw, p), byte_of(gw, p), byte_of(bw, p), w))
                      << ((p & 3) * 8);
    store16(dst, gray);
  } else {
    const int n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x) dst[x] = luma(r[x], g[x], b[x], w);
  }
}

// Luma: copied, or expanded from limited range.
template <int Chunk>
__global__ void luma_kernel(const uint8_t *__restrict__ in, size_t in_pitch,
                            uint8_t *__restrict__ out, size_t out_pitch, int width, int height,
                            int chunks, bool limited) {
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  const uint8_t *src = in + row * in_pitch + x0;
  uint8_t *dst = out + row * out_pitch + x0;
  if (Chunk == kWideChunk && x0 + Chunk <= width) {
    const uint4 v = load16(src);
    uint32_t words[4] = {v.x, v.y, v.z, v.w};
    if (limited) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t w = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) w |= uint32_t(expand_limited((words[i] >> (8 * b)) & 0xFF)) << (8 * b);
        words[i] = w;
      }
    }
    store16(dst, words);
  } else {
    const int n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x) dst[x] = limited ? expand_limited(src[x]) : src[x];
  }
}

bool aligned16(const void *p, size_t pitch) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && pitch % 16 == 0;
}

// Picks the wide or the pixel-by-pixel instance of a kernel and sizes its grid.
template <class Launch>
void launch_chunked(bool wide, const InputFrame &in, Launch &&launch) {
  auto go = [&](auto chunk) {
    constexpr int Chunk = decltype(chunk)::value;
    const int chunks = (in.width + Chunk - 1) / Chunk;
    const long long threads = static_cast<long long>(chunks) * in.height;
    launch(chunk, chunks, dim3(static_cast<unsigned>((threads + kThreadsPerBlock - 1) / kThreadsPerBlock)));
  };
  if (wide) go(std::integral_constant<int, kWideChunk>{});
  else go(std::integral_constant<int, 1>{});
}

template <int Bpp, int R, int G, int B>
void launch(PackedLayout<Bpp, R, G, B>, const InputFrame &in, const GrayFrame &out,
            const Weights &w, cudaStream_t stream) {
  const bool wide = aligned16(in.plane[0], in.stride[0]) && aligned16(out.data, out.stride);
  launch_chunked(wide, in, [&](auto chunk, int chunks, dim3 grid) {
    packed_kernel<decltype(chunk)::value, Bpp, R, G, B><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[0], in.stride[0], out.data, out.stride, in.width, in.height, chunks, w);
  });
}

template <int R, int G, int B>
void launch(PlanarLayout<R, G, B>, const InputFrame &in, const GrayFrame &out,
            const Weights &w, cudaStream_t stream) {
  bool wide = aligned16(out.data, out.stride);
  for (int p = 0; p < 3; ++p) wide = wide && aligned16(in.plane[p], in.stride[p]);
  launch_chunked(wide, in, [&](auto chunk, int chunks, dim3 grid) {
    planar_kernel<decltype(chunk)::value><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[R], in.stride[R], in.plane[G], in.stride[G], in.plane[B], in.stride[B],
        out.data, out.stride, in.width, in.height, chunks, w);
  });
}

void launch(LumaLayout, const InputFrame &in, const GrayFrame &out, const Weights &,
            cudaStream_t stream) {
  const bool wide = aligned16(in.plane[0], in.stride[0]) && aligned16(out.data, out.stride);
  launch_chunked(wide, in, [&](auto chunk, int chunks, dim3 grid) {
    luma_kernel<decltype(chunk)::value><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[0], in.stride[0], out.data, out.stride, in.width, in.height, chunks,
        in.limited_range);
  });
}

}  // namespace

cudaError_t convert_cuda(const InputFrame &device_in, const GrayFrame &device_out,
                         const Weights &w, cudaStream_t stream) {
  if (device_in.width <= 0 || device_in.height <= 0) return cudaErrorInvalidValue;
  dispatch_layout(device_in.layout, [&](auto layout) { launch(layout, device_in, device_out, w, stream); });
  return cudaGetLastError();
}

}  // namespace cudagray
