// Timing loops, random frames, and small helpers shared by every row.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "bench.h"

namespace bench {

bool Options::wants(const std::string &group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

Row skipped_row(const FrameSize &size, const std::string &group, const std::string &key,
                const std::string &what, const std::string &why) {
  Row row;
  row.size = size;
  row.group = group;
  row.key = key;
  row.what = what;
  row.skipped = why;
  return row;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

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
  return median(per_iteration);
}

size_t rotation_count(size_t frame_bytes, size_t budget_bytes) {
  const size_t n = (budget_bytes + frame_bytes - 1) / std::max<size_t>(frame_bytes, 1);
  return std::max<size_t>(n, 4);
}

PageableBlock::PageableBlock(size_t bytes) : size(bytes) {
  constexpr size_t kPage = 4096;
  data = static_cast<uint8_t *>(std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage));
  if (!data) throw std::bad_alloc();
}

PageableBlock::~PageableBlock() { std::free(data); }

size_t frame_bytes(PixelLayout layout, const FrameSize &size) {
  const cudagray::LayoutInfo &info = cudagray::layout_info(layout);
  return size.pixels() * info.bytes_per_pixel * info.planes;
}

const char *layout_name(PixelLayout layout) { return cudagray::layout_info(layout).name; }

std::string format_double(double value, int decimals) {
  if (std::isnan(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace bench
