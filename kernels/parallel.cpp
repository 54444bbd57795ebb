// SPDX-License-Identifier: LGPL-2.1-or-later
// The thread pool behind parallel_rows.
#include "parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace cudagray {

namespace {

// Helper threads that stay between frames: starting a thread costs tens of
// microseconds, a sizeable part of a 1080p frame that takes a few hundred.
// A frame is cut into chunks of rows that the caller and the helpers claim in
// turn, so a helper that wakes late just claims fewer (or none). One frame at
// a time has the helpers; a frame converted meanwhile on another thread (a
// second element, say) runs on its own thread alone.
class RowPool {
 public:
  using ChunkFn = void (*)(const void *context, int chunk);

  static RowPool &instance() {
    static RowPool pool;
    return pool;
  }

  // Runs fn(context, c) for every c in [0, chunks) on the calling thread and
  // up to `helpers` pool threads, and returns once all have run. Returns
  // false, having run none, when another caller has the pool.
  bool run(ChunkFn fn, const void *context, int chunks, int helpers) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int>(threads_.size()) < helpers)  // started on first need
        threads_.emplace_back([this, seen = generation_] {
          // named, not the name of the thread that happened to start it
          pthread_setname_np(pthread_self(), "cudagray-rows");
          work(seen);
        });
      fn_ = fn;
      context_ = context;
      chunks_ = chunks;
      next_.store(0, std::memory_order_relaxed);
      wanted_ = helpers;
      joined_ = 0;
      open_ = true;
      ++generation_;
    }
    wake_.notify_all();
    claim_chunks();
    // Every chunk is claimed; wait for the helpers still converting one.
    std::unique_lock<std::mutex> lock(mutex_);
    open_ = false;  // helpers that wake from now on leave this frame alone
    done_.wait(lock, [this] { return inside_.load(std::memory_order_relaxed) == 0; });
    return true;
  }

  ~RowPool() {
    std::lock_guard<std::mutex> busy(busy_);  // let a frame in progress finish
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_) t.join();
  }

 private:
  RowPool() = default;

  void claim_chunks() {
    for (int c; (c = next_.fetch_add(1, std::memory_order_relaxed)) < chunks_;) fn_(context_, c);
  }

  void work(uint64_t seen) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!open_ || joined_ >= wanted_) continue;
      ++joined_;
      inside_.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      claim_chunks();
      lock.lock();
      if (inside_.fetch_sub(1, std::memory_order_release) == 1) done_.notify_one();
    }
  }

  std::mutex busy_;   // held by the caller whose frame has the helpers
  std::mutex mutex_;  // guards everything below but next_ and inside_'s reads
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  uint64_t generation_ = 0;  // one more for every frame
  bool stop_ = false;
  bool open_ = false;  // helpers may still join the current frame
  int wanted_ = 0, joined_ = 0;
  ChunkFn fn_ = nullptr;
  const void *context_ = nullptr;
  int chunks_ = 0;
  std::atomic<int> next_{0};    // the next unclaimed chunk
  std::atomic<int> inside_{0};  // helpers converting a chunk of this frame
};

struct Bands {
  const std::function<void(int, int)> *band;
  int rows, chunk_rows;
  static void run_chunk(const void *context, int chunk) {
    const auto &b = *static_cast<const Bands *>(context);
    const int y0 = chunk * b.chunk_rows;
    (*b.band)(y0, std::min(b.rows, y0 + b.chunk_rows));
  }
};

// A copy is cut into bands of about this many bytes, and a thread is added
// for every kBytesPerThread: one core copies a few GB/s, and waking a helper
// costs about as much as copying this much.
constexpr size_t kBytesPerChunk = 1 << 16;
constexpr size_t kBytesPerThread = 1 << 19;

}  // namespace

void parallel_rows(int rows, int chunk_rows, int threads,
                   const std::function<void(int, int)> &band) {
  if (rows <= 0) return;
  chunk_rows = std::clamp(chunk_rows, 1, rows);
  const int chunks = (rows + chunk_rows - 1) / chunk_rows;
  threads = std::clamp(threads, 1, std::min(chunks, kMaxThreads));
  const Bands bands{&band, rows, chunk_rows};
  if (threads > 1 && RowPool::instance().run(&Bands::run_chunk, &bands, chunks, threads - 1))
    return;
  band(0, rows);
}

void copy_rows(const uint8_t *src, size_t src_stride, uint8_t *dst, size_t dst_stride,
               size_t row_bytes, int rows) {
  if (rows <= 0 || row_bytes == 0) return;
  const size_t bytes = row_bytes * rows;
  const int threads =
      static_cast<int>(std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()),
                                        std::max<size_t>(1, bytes / kBytesPerThread)));
  const int chunk_rows = static_cast<int>(std::max<size_t>(1, kBytesPerChunk / row_bytes));
  parallel_rows(rows, chunk_rows, threads, [&](int y0, int y1) {
    for (int y = y0; y < y1; ++y)
      std::memcpy(dst + y * dst_stride, src + y * src_stride, row_bytes);
  });
}

}  // namespace cudagray
