// SPDX-License-Identifier: LGPL-2.1-or-later
// Timing loops, frames, and small helpers shared by every row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>

#include "bench.h"
#include "frames.h"

namespace bench {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const double at = p * (values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (at - lo);
}

double seconds_per_iteration(const std::function<double(long n)> &run, const Budget &budget,
                             long *iterations) {
  run(3);  // warm-up: first launches, page faults, lazy module loading
  // Probe: grow n until one run takes long enough to estimate from.
  long n = 4;
  double t = run(n);
  while (t < 0.01 && n < budget.max_iterations) {
    n = std::min(n * 4, budget.max_iterations);
    t = run(n);
  }
  const double estimate = t / n;
  const double wanted = budget.seconds / budget.repeats / std::max(estimate, 1e-9);
  const long each = std::clamp(static_cast<long>(std::llround(wanted)), budget.min_iterations,
                               budget.max_iterations);
  std::vector<double> per_iteration;
  long total = 0;
  for (int r = 0; r < budget.repeats; ++r) {
    per_iteration.push_back(run(each) / each);
    total += each;
  }
  if (iterations) *iterations = total;
  return percentile(per_iteration, 0.5);
}

void take_median(Row &row, const std::vector<double> &samples) {
  row.us = percentile(samples, 0.5);
  row.frames = static_cast<long>(samples.size());
  row.note = "median of " + std::to_string(samples.size()) + "; p10 " +
             format_double(percentile(samples, 0.1), 1) + " us, p90 " +
             format_double(percentile(samples, 0.9), 1) + " us";
}

size_t rotation_count(size_t frame_bytes, size_t budget_bytes) {
  const size_t n = (budget_bytes + frame_bytes - 1) / std::max<size_t>(frame_bytes, 1);
  return std::max<size_t>(n, 4);
}

constexpr size_t kPage = 4096;

PageableFrames::PageableFrames(size_t count, size_t bytes, uint64_t seed)
    : count_(count),
      stride_((bytes + kPage - 1) / kPage * kPage),
      data_(static_cast<uint8_t *>(std::aligned_alloc(kPage, count * stride_)), std::free) {
  if (!data_) throw std::bad_alloc();
  harness::fill_random(data_.get(), count * stride_, seed);
}

size_t frame_bytes(PixelLayout layout, const FrameSize &size) {
  const cudagray::LayoutInfo &info = cudagray::layout_info(layout);
  return info.plane_bytes(size.width, size.height, info.tight_stride(size.width, size.height)) *
         info.planes;
}

cudagray::InputFrame frame_at(PixelLayout layout, const FrameSize &size, const uint8_t *base) {
  const cudagray::LayoutInfo &info = cudagray::layout_info(layout);
  cudagray::InputFrame frame{};
  const size_t stride = info.tight_stride(size.width, size.height);
  const size_t plane = info.plane_bytes(size.width, size.height, stride);
  for (int p = 0; p < info.planes; ++p) {
    frame.plane[p] = base + p * plane;
    frame.stride[p] = stride;
  }
  return frame;
}

const char *layout_name(PixelLayout layout) { return cudagray::layout_info(layout).name; }

std::string format_double(double value, int decimals) {
  if (std::isnan(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string join(const std::vector<std::string> &parts, const char *separator) {
  std::string text;
  for (const std::string &p : parts)
    if (!p.empty()) text += (text.empty() ? "" : separator) + p;
  return text;
}

}  // namespace bench
