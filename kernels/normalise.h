// SPDX-License-Identifier: LGPL-2.1-or-later
// A batch element from a slot's gray (cudagray/batch.h, docs/batch.md): the
// one definition both the CPU and the CUDA batch compute. Plain C++17 that
// nvcc and g++ both compile.
//
// float32: v = (float(g) / full_scale - mean) / std, three binary32
// operations in that order, each rounded to nearest even, subnormals kept.
// On the GPU they are the _rn intrinsics, which are never approximated or
// fused into a multiply-add; on the host there is no multiply to fuse with.
// Neither build asks for fast math or for flushing subnormals (nvcc
// --use_fast_math or --ftz=true, g++ -ffast-math would break the
// definition). float16: v rounded to nearest even into binary16, in
// integers, the same code on both.
#pragma once

#include <cstdint>
#include <cstring>

#include "cudagray/batch.h"
#include "cudagray/frame.h"

namespace cudagray {

struct Normaliser {
  float full_scale, mean, std;
  CUDAGRAY_HOST_DEVICE float operator()(uint32_t g) const {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(__fsub_rn(__fdiv_rn(static_cast<float>(g), full_scale), mean), std);
#else
    return (static_cast<float>(g) / full_scale - mean) / std;
#endif
  }
};

inline Normaliser normaliser_of(const BatchFormat &f) {
  return {f.gray_depth == 16 ? 65535.0f : 255.0f, f.mean, f.std};
}

CUDAGRAY_HOST_DEVICE uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

// binary32 to binary16, rounded to nearest even: overflow (from 65520 on)
// to infinity, results below 2^-14 subnormal, NaN stays a (quiet) NaN.
CUDAGRAY_HOST_DEVICE uint16_t half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520
  if (magnitude >= 0x38800000u) {  // >= 2^-14: normal; rebias 127 -> 15, 23 -> 10 bits
    const uint32_t v = magnitude - 0x38000000u;
    return static_cast<uint16_t>(sign | (v + 0xFFFu + ((v >> 13) & 1u)) >> 13);
  }
  if (magnitude <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: to 0
  // subnormal: the significand in units of 2^-24, shifted 14..24 bits
  const uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
  const int shift = 126 - static_cast<int>(magnitude >> 23);
  uint32_t q = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

// Element i of a slot's elements at out, of gray g.
CUDAGRAY_HOST_DEVICE void store_element(uint8_t *out, size_t i, BatchDType dtype,
                                        const Normaliser &n, uint32_t g) {
  if (dtype == BatchDType::UInt8) {
    out[i] = static_cast<uint8_t>(g);
    return;
  }
  const float v = n(g);
#if defined(__CUDA_ARCH__)  // a device batch starts aligned (convert_batch_cuda): word stores
  if (dtype == BatchDType::Float16)
    reinterpret_cast<uint16_t *>(out)[i] = half_bits(v);
  else
    reinterpret_cast<float *>(out)[i] = v;
#else  // any alignment
  if (dtype == BatchDType::Float16) {
    const uint16_t h = half_bits(v);
    std::memcpy(out + 2 * i, &h, sizeof h);
  } else {
    std::memcpy(out + 4 * i, &v, sizeof v);
  }
#endif
}

}  // namespace cudagray
