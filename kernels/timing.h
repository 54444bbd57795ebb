// SPDX-License-Identifier: LGPL-2.1-or-later
// Accumulates per-frame times into TimingStats.
#pragma once

#include <algorithm>

#include "cudagray/backend.h"

namespace cudagray {

class StatsAccumulator {
 public:
  void add(double device_us, double upload_us, double download_us, bool staged_input = false,
           bool staged_output = false, bool device_input = false, bool device_output = false) {
    stats_.device_inputs += device_input;
    stats_.device_outputs += device_output;
    stats_.staged_inputs += staged_input;
    stats_.staged_outputs += staged_output;
    const uint64_t n = ++stats_.frames;
    stats_.device_us_min = n == 1 ? device_us : std::min(stats_.device_us_min, device_us);
    stats_.device_us_max = std::max(stats_.device_us_max, device_us);
    stats_.device_us_mean += (device_us - stats_.device_us_mean) / n;
    // the upload mean is over the frames that were uploaded
    if (!device_input)
      stats_.upload_us_mean += (upload_us - stats_.upload_us_mean) / (n - stats_.device_inputs);
    // and the download mean over the frames that were downloaded
    if (!device_output)
      stats_.download_us_mean +=
          (download_us - stats_.download_us_mean) / (n - stats_.device_outputs);
  }
  TimingStats get() const { return stats_; }

 private:
  TimingStats stats_;
};

}  // namespace cudagray
