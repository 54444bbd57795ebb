// SPDX-License-Identifier: LGPL-2.1-or-later
// A producer that leaves its writes pending on its own CUDA stream, as
// GStreamer 1.24+ decoders do when they push a frame (NEED_SYNC): a kernel
// spins for a while, then the frame's bytes are copied into place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cudagray::test {

// Enqueues on stream (a cudaStream_t of the current context): a spin of about
// spin_us microseconds, then a copy of bytes from device_src to device_dst.
// Returns "" or the CUDA error.
std::string write_after_spin(void *stream, void *device_dst, const void *device_src, size_t bytes,
                             int spin_us);

}  // namespace cudagray::test
