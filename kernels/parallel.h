// Row-parallel work on the host: a frame's rows cut into bands, one per
// hardware thread, the calling thread taking the first band.
#pragma once

#include <algorithm>
#include <thread>
#include <vector>

namespace cudagray {

// Below this many bytes of work per thread, starting a thread costs more
// than it saves.
constexpr size_t kBytesPerThread = 1 << 18;

template <class Fn>
void parallel_rows(int rows, size_t bytes, int max_threads, Fn &&band) {
  if (max_threads <= 0) max_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = static_cast<int>(
      std::clamp<size_t>(bytes / kBytesPerThread, 1, std::min(max_threads, std::max(rows, 1))));
  if (threads == 1) {
    band(0, rows);
    return;
  }
  auto start = [&](int i) { return static_cast<int>(static_cast<long long>(rows) * i / threads); };
  std::vector<std::thread> helpers;
  for (int i = 1; i < threads; ++i) helpers.emplace_back([&, i] { band(start(i), start(i + 1)); });
  band(0, start(1));
  for (auto &t : helpers) t.join();
}

}  // namespace cudagray
