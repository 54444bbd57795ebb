// SPDX-License-Identifier: LGPL-2.1-or-later
// The CPU backend: frames are converted in submission order on a worker
// thread of the backend's own (its rows split over the row pool), so that
// submit returns at once and up to max_in_flight frames are in flight, as on
// CUDA; finish_oldest waits on a condition the worker signals.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "cudagray/backend.h"
#include "cudagray/convert_cpu.h"
#include "timing.h"

namespace cudagray {

namespace {

// The same frames in flight as the CUDA backend, for the same max-inflight
// meaning on both: the streaming thread maps the next frames while the
// worker converts.
constexpr int kAutoInFlight = 4;
constexpr int kMaxInFlight = 16;

class CpuBackend final : public Backend {
 public:
  CpuBackend() : worker_([this] { work(); }) {}
  ~CpuBackend() override {
    discard_all();
    {
      std::lock_guard<std::mutex> hold(lock_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }

  const char *name() const override { return "cpu"; }
  BackendNeeds needs() const override { return {kAutoInFlight, kMaxInFlight}; }
  bool configure(const Conversion &c, std::string *error) override {
    if (!valid_conversion(c, error)) return false;
    std::lock_guard<std::mutex> hold(lock_);
    conversion_ = c;
    limit_ = static_cast<size_t>(std::max(1, c.max_in_flight));
    return true;
  }
  bool submit(const InputFrame &in, const GrayFrame &out, const Weights &w,
              std::string *error) override {
    {
      std::lock_guard<std::mutex> hold(lock_);
      if (jobs_.size() >= limit_) {
        *error = "too many frames in flight";
        return false;
      }
      jobs_.push_back(Job{in, out, w, conversion_});
    }
    changed_.notify_all();
    return true;
  }
  bool finish_oldest(std::string *error) override {
    std::unique_lock<std::mutex> hold(lock_);
    if (jobs_.empty()) {
      *error = "no frame in flight";
      return false;
    }
    changed_.wait(hold, [&] { return jobs_.front().done; });
    jobs_.pop_front();
    --started_;
    return true;
  }
  // Frames not started are forgotten at once; the one converting is waited
  // for, since it writes into its output until it is done.
  void discard_all() override {
    std::unique_lock<std::mutex> hold(lock_);
    jobs_.resize(started_);
    changed_.wait(hold, [&] { return jobs_.empty() || jobs_.back().done; });
    jobs_.clear();
    started_ = 0;
  }
  int in_flight() const override {
    std::lock_guard<std::mutex> hold(lock_);
    return static_cast<int>(jobs_.size());
  }
  int device_id() const override { return -1; }
  TimingStats stats() const override {
    std::lock_guard<std::mutex> hold(lock_);
    return stats_.get();
  }

 private:
  struct Job {
    InputFrame in;
    GrayFrame out;
    Weights weights;
    Conversion conversion;
    bool done = false;
  };

  // The worker: converts the jobs in order, each outside the lock. A job's
  // place in jobs_ holds (a deque keeps its elements where they are when
  // others come and go at its ends), and only finish_oldest and discard_all
  // take it away, once it is done.
  void work() {
    std::unique_lock<std::mutex> hold(lock_);
    for (;;) {
      changed_.wait(hold, [&] { return stopping_ || started_ < jobs_.size(); });
      if (stopping_) return;
      Job &job = jobs_[started_++];
      hold.unlock();
      const auto start = std::chrono::steady_clock::now();
      convert_cpu(job.conversion, job.in, job.out, job.weights);
      const std::chrono::duration<double, std::micro> took =
          std::chrono::steady_clock::now() - start;
      hold.lock();
      job.done = true;
      stats_.count(false, false, false, false);
      stats_.add_times(took.count(), 0, 0, false, false);
      changed_.notify_all();
    }
  }

  // Guards everything below; changed_ says a job came, a job is done, or
  // the worker is to stop.
  mutable std::mutex lock_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;  // unfinished, oldest first
  size_t started_ = 0;    // jobs_ the worker took (the done ones and the one it converts)
  size_t limit_ = 1;
  bool stopping_ = false;
  Conversion conversion_;
  StatsAccumulator stats_;
  std::thread worker_;  // last: started once everything it reads is made
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace cudagray
