// SPDX-License-Identifier: LGPL-2.1-or-later
// The CPU backend: converts at submit, so every frame is ready at once.
#include <atomic>
#include <chrono>

#include "cudagray/backend.h"
#include "cudagray/convert_cpu.h"
#include "timing.h"

namespace cudagray {

namespace {

class CpuBackend final : public Backend {
 public:
  const char *name() const override { return "cpu"; }
  // Each frame is converted in submit: nothing to gain from more in flight.
  BackendNeeds needs() const override { return {}; }
  bool configure(const Conversion &c, std::string *error) override {
    if (!valid_conversion(c, error)) return false;
    conversion_ = c;
    return true;
  }
  bool submit(const InputFrame &in, const GrayFrame &out, const Weights &w,
              std::string *) override {
    const auto start = std::chrono::steady_clock::now();
    convert_cpu(conversion_, in, out, w);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    stats_.count(false, false, false, false);
    stats_.add_times(took.count(), 0, 0, false, false);
    ++in_flight_;
    return true;
  }
  bool finish_oldest(std::string *) override {
    --in_flight_;
    return true;
  }
  void discard_all() override { in_flight_ = 0; }
  int in_flight() const override { return in_flight_; }
  int device_id() const override { return -1; }
  TimingStats stats() const override { return stats_.get(); }

 private:
  Conversion conversion_;
  std::atomic<int> in_flight_{0};
  StatsAccumulator stats_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace cudagray
