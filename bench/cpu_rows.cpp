// SPDX-License-Identifier: LGPL-2.1-or-later
// The CPU backend's conversion alone (cudagray::convert_cpu on all cores, no
// GStreamer): RGB to GRAY8, to GRAY16 and scaled to kScaledOutput, and the
// luma plane of YUV copied (full range) or expanded (limited range), so that
// each can be compared with RGB to GRAY8 at each size.
#include <vector>

#include "bench.h"

namespace bench {

void cpu_kernel_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  struct Kind {
    const char *key, *what, *format;
    PixelLayout layout;
    bool limited_range;
    int out_depth;
    bool scaled;  // to kScaledOutput by method, else at the source's size
    cudagray::ScaleMethod method;
  };
  const auto area = cudagray::ScaleMethod::Area;
  const Kind kinds[] = {
      {"cpu-kernel:RGB", "convert_cpu RGB", "RGB", PixelLayout::RGB, false, 8, false, area},
      {"cpu-kernel:RGB:GRAY16", "convert_cpu RGB to GRAY16", "RGB", PixelLayout::RGB, false, 16,
       false, area},
      {"cpu-kernel:RGB:area", "convert_cpu RGB scaled to 640x360, area", "RGB", PixelLayout::RGB,
       false, 8, true, area},
      {"cpu-kernel:RGB:bilinear", "convert_cpu RGB scaled to 640x360, bilinear", "RGB",
       PixelLayout::RGB, false, 8, true, cudagray::ScaleMethod::Bilinear},
      {"cpu-kernel:luma-full", "convert_cpu YUV luma, full range (copy)", "I420 full",
       PixelLayout::Luma, false, 8, false, area},
      {"cpu-kernel:luma-limited", "convert_cpu YUV luma, limited range (expand)", "I420 limited",
       PixelLayout::Luma, true, 8, false, area},
  };
  for (const Kind &kind : kinds) {
    const FrameSize &out_size = kind.scaled ? kScaledOutput : size;
    const size_t in_bytes = frame_bytes(kind.layout, size);
    const size_t out_stride = out_size.width * static_cast<size_t>(kind.out_depth / 8);
    const size_t out_bytes = out_stride * out_size.height;
    Row row(size, "cpu", kind.key, kind.what, kind.format,
            static_cast<double>(in_bytes + out_bytes));
    row.ceiling = std::string(kind.key) == "cpu-kernel:RGB" ? "" : "cpu-kernel:RGB";
    record(rows, row, [&](Row &r) {
      const size_t count = rotation_count(in_bytes, options.rotate_bytes);
      const PageableFrames in(count, in_bytes, 1), out(count, out_bytes, 2);
      cudagray::Conversion c =
          cudagray::same_size_conversion(kind.layout, size.width, size.height, kind.out_depth);
      c.limited_range = kind.limited_range;
      c.out_width = out_size.width;
      c.out_height = out_size.height;
      c.dest = cudagray::Rect{0, 0, out_size.width, out_size.height};
      c.method = kind.method;
      long next = 0;
      const auto run = [&](long n) {
        const Clock::time_point start = Clock::now();
        for (long i = 0; i < n; ++i, ++next)
          cudagray::convert_cpu(c, frame_at(kind.layout, size, in.at(next)),
                                {out.at(next), out_stride},
                                cudagray::standard_weights(cudagray::Matrix::BT601));
        return seconds_since(start);
      };
      r.us = seconds_per_iteration(run, Budget{options.seconds, 3, 100000, 5}, &r.frames) * 1e6;
    });
  }
}

}  // namespace bench
