// SPDX-License-Identifier: LGPL-2.1-or-later
// Accumulates per-frame times into TimingStats.
#pragma once

#include <algorithm>

#include "cudagray/backend.h"

namespace cudagray {

class StatsAccumulator {
 public:
  // Every frame: where its input came from and its output went.
  void count(bool staged_input, bool staged_output, bool device_input, bool device_output) {
    ++stats_.frames;
    stats_.staged_inputs += staged_input;
    stats_.staged_outputs += staged_output;
    stats_.device_inputs += device_input;
    stats_.device_outputs += device_output;
  }
  // A timed frame's times in µs; its upload and download count only if it
  // had them (not device_input, not device_output).
  void add_times(double device_us, double upload_us, double download_us, bool device_input,
                 bool device_output) {
    const uint64_t n = ++stats_.timed_frames;
    stats_.device_us_min = n == 1 ? device_us : std::min(stats_.device_us_min, device_us);
    stats_.device_us_max = std::max(stats_.device_us_max, device_us);
    stats_.device_us_mean += (device_us - stats_.device_us_mean) / n;
    if (!device_input) stats_.upload_us_mean += (upload_us - stats_.upload_us_mean) / ++uploads_;
    if (!device_output)
      stats_.download_us_mean += (download_us - stats_.download_us_mean) / ++downloads_;
  }
  TimingStats get() const { return stats_; }

 private:
  TimingStats stats_;
  uint64_t uploads_ = 0, downloads_ = 0;  // timed frames that had one
};

}  // namespace cudagray
