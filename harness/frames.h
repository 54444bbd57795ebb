// SPDX-License-Identifier: LGPL-2.1-or-later
// Frames for the tests and the bench: random bytes that depend on a seed
// only, and a ring of frames handed out again and again.
#pragma once

#include <gst/gst.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace harness {

// Fills bytes with a fast pseudo-random sequence that depends on seed only
// (not on how many threads fill it).
void fill_random(void *bytes, size_t size, uint64_t seed);
// The same over a buffer's memory; throws std::runtime_error when it does
// not map.
void fill_buffer(GstBuffer *buffer, uint64_t seed);

// Buffers kept referenced: next() hands out another reference, round and
// round, so a buffer is never freed, recycled into a pool, or written while
// in use (consumers only read it).
class FrameRing {
 public:
  FrameRing() = default;
  FrameRing(const FrameRing &) = delete;
  FrameRing &operator=(const FrameRing &) = delete;
  ~FrameRing() { clear(); }

  void add(GstBuffer *owned) { buffers_.push_back(owned); }
  GstBuffer *next() { return gst_buffer_ref(buffers_[next_++ % buffers_.size()]); }
  GstBuffer *front() const { return buffers_.front(); }
  size_t size() const { return buffers_.size(); }
  void clear();

 private:
  std::vector<GstBuffer *> buffers_;
  size_t next_ = 0;
};

}  // namespace harness
