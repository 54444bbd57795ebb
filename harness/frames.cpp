// SPDX-License-Identifier: LGPL-2.1-or-later
// Random frame bytes, and rings of frames in GstBuffers.
#include "frames.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace harness {

namespace {

// splitmix64: fast, and good enough that no two frames or rows share bytes.
inline uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void fill_chunk(uint8_t *bytes, size_t size, uint64_t seed) {
  uint64_t state = seed;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const uint64_t v = splitmix(state);
    std::memcpy(bytes + i, &v, 8);
  }
  if (i < size) {
    const uint64_t v = splitmix(state);
    std::memcpy(bytes + i, &v, size - i);
  }
}

}  // namespace

void fill_random(void *bytes, size_t size, uint64_t seed) {
  // Chunks are seeded by their index, so the bytes do not depend on how many
  // threads fill them.
  constexpr size_t kChunk = 8u << 20;
  const size_t chunks = (size + kChunk - 1) / kChunk;
  const size_t threads =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), chunks);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t c; (c = next++) < chunks;) {
      const size_t begin = c * kChunk;
      fill_chunk(static_cast<uint8_t *>(bytes) + begin, std::min(kChunk, size - begin),
                 seed * 0x100000001b3ull + c);
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(worker);
  worker();
  for (auto &h : helpers) h.join();
}

void fill_buffer(GstBuffer *buffer, uint64_t seed) {
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_WRITE))
    throw std::runtime_error("cannot map a frame for writing");
  fill_random(map.data, map.size, seed);
  gst_buffer_unmap(buffer, &map);
}

void FrameRing::clear() {
  for (GstBuffer *b : buffers_) gst_buffer_unref(b);
  buffers_.clear();
}

}  // namespace harness
