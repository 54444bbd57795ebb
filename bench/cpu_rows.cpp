// SPDX-License-Identifier: LGPL-2.1-or-later
// The CPU backend's conversion alone (cudagray::convert_cpu on all cores, no
// GStreamer): RGB, and the luma plane of YUV copied (full range) or expanded
// (limited range), so that the three can be compared at each size.
#include <vector>

#include "bench.h"

namespace bench {

void cpu_kernel_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  struct Kind {
    const char *key, *what, *format;
    PixelLayout layout;
    bool limited_range;
  };
  const Kind kinds[] = {
      {"cpu-kernel:RGB", "convert_cpu RGB", "RGB", PixelLayout::RGB, false},
      {"cpu-kernel:luma-full", "convert_cpu YUV luma, full range (copy)", "I420 full",
       PixelLayout::Luma, false},
      {"cpu-kernel:luma-limited", "convert_cpu YUV luma, limited range (expand)", "I420 limited",
       PixelLayout::Luma, true},
  };
  for (const Kind &kind : kinds) {
    const size_t in_bytes = frame_bytes(kind.layout, size);
    Row row(size, "cpu", kind.key, kind.what, kind.format,
            static_cast<double>(in_bytes + size.pixels()));
    row.ceiling = kind.layout == PixelLayout::RGB ? "" : "cpu-kernel:RGB";
    record(rows, row, [&](Row &r) {
      const size_t count = rotation_count(in_bytes, options.rotate_bytes);
      const PageableFrames in(count, in_bytes, 1), out(count, size.pixels(), 2);
      long next = 0;
      const auto run = [&](long n) {
        const Clock::time_point start = Clock::now();
        for (long i = 0; i < n; ++i, ++next) {
          cudagray::Conversion c =
              cudagray::same_size_conversion(kind.layout, size.width, size.height);
          c.limited_range = kind.limited_range;
          cudagray::convert_cpu(c, frame_at(kind.layout, size, in.at(next)),
                                {out.at(next), static_cast<size_t>(size.width)},
                                cudagray::standard_weights(cudagray::Matrix::BT601));
        }
        return seconds_since(start);
      };
      r.us = seconds_per_iteration(run, Budget{options.seconds, 3, 100000, 5}, &r.frames) * 1e6;
    });
  }
}

}  // namespace bench
