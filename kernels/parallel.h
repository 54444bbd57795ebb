// SPDX-License-Identifier: LGPL-2.1-or-later
// Row-parallel work on the host, on a small pool of threads that stay
// between frames (starting a thread costs tens of microseconds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace cudagray {

// Cap on the threads any one job uses.
constexpr int kMaxThreads = 16;

// Runs band(y0, y1) over rows [0, rows), cut into bands of chunk_rows rows,
// on the calling thread and up to threads - 1 pool threads; returns when every
// band has run. While another caller has the pool, runs on the calling
// thread alone.
void parallel_rows(int rows, int chunk_rows, int threads,
                   const std::function<void(int, int)> &band);

// Copies rows of row_bytes bytes between buffers with the given strides,
// over several threads when there is enough to copy.
void copy_rows(const uint8_t *src, size_t src_stride, uint8_t *dst, size_t dst_stride,
               size_t row_bytes, int rows);

}  // namespace cudagray
