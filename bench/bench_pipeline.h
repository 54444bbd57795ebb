// SPDX-License-Identifier: LGPL-2.1-or-later
// The pipeline rows' machinery: "appsrc ! <middle> ! fakesink" with RGB
// frames of one size, the sink's arrival times, where the frames come from
// (the bench's ring or the element's pinned pool), and the two ways of timing
// it: throughput and single-frame latency.
#pragma once

#include <gst/gst.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "bench.h"
#include "frames.h"
#include "pipeline.h"

namespace bench {

using harness::FrameRing;

// Arrivals at the sink, written by the streaming thread. The measured
// window starts after a warm-up.
class ArrivalLog {
 public:
  struct Counts {
    long frames = 0, window_start = -1;  // the window starts at this arrival
    Clock::time_point first, last, window_start_time;
  };
  // Pushes and arrivals pair up in order (the pipeline keeps frames in
  // order), so each arrival's latency is from the oldest push not yet out.
  void pushed();
  void add();
  void clear() {
    update([this](Counts &c) {
      c = Counts();
      pushes_.clear();
      timeline_ = Timeline();
    });
  }
  Counts counts() const;
  // Every arrival since the log was cleared, with its latency from its push.
  struct Timeline {
    std::vector<Clock::time_point> arrivals;
    std::vector<double> latency_us;
  };
  Timeline timeline() const;
  // Waits until at least n frames have arrived; false on timeout.
  bool wait_for(long n, std::chrono::milliseconds timeout);

 private:
  template <class F>
  void update(F &&f) {
    std::lock_guard<std::mutex> lock(mutex_);
    f(counts_);
    changed_.notify_all();
  }
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Counts counts_;
  std::deque<Clock::time_point> pushes_;
  Timeline timeline_;
};

// "appsrc name=src ! <middle> ! fakesink name=sink"; the element under test
// is the one named "dut" in middle. Frames are RGB, in system memory or
// (cuda_memory) in memory:CUDAMemory; a live appsrc stands for a camera.
// Every failure throws std::runtime_error with GStreamer's message; warnings
// are kept.
class BenchPipeline {
 public:
  BenchPipeline(const std::string &middle, const FrameSize &size, bool cuda_memory = false,
                bool live = false);

  GstElement *dut() const { return pipeline_.by_name("dut"); }
  ArrivalLog &arrivals() { return arrivals_; }
  // Sets a property of the element under test; Unavailable when it has none.
  void set_dut_property(const char *name, const char *value);
  void play();
  void push(GstBuffer *buffer);
  void throw_if_bus_error();
  // Ends the stream and waits until every frame has reached the sink.
  void end();
  // The first warning posted, as a note ("" when none).
  std::string warnings_note() const;
  // Pushes a priming frame and, once it is through (caps are set then),
  // asks the element's sink pad for an allocation pool as an upstream with a
  // pool of its own would. Returns the ALLOCATION query answered.
  GstQuery *ask_for_pool(GstBuffer *priming);

 private:
  harness::Pipeline pipeline_;
  ArrivalLog arrivals_;
  std::vector<std::string> warnings_;
};

// Plain malloc'd (pageable) RGB frames, as an upstream without a pool makes.
void add_pageable_frames(FrameRing *ring, const FrameSize &size, const Options &options,
                         uint64_t seed);

// Where a row's frames come from: a ring the bench made, or (pinned) the
// pool the element offers, asked for with one priming frame from the ring
// (the arrival log starts empty after it).
class Feed {
 public:
  Feed(FrameRing &ring, const std::string &what);
  Feed(BenchPipeline &pipeline, FrameRing &priming, const FrameSize &size, const Options &options);
  ~Feed();
  GstBuffer *next() { return ring_->next(); }
  const std::string &note() const { return note_; }

 private:
  FrameRing *ring_;
  FrameRing pool_frames_;
  GstBufferPool *pool_ = nullptr;
  bool activated_ = false;
  std::string note_;
};

// The element's own figures (its stats property), as a note.
std::string stats_note(GstElement *dut);

// Frames per second at the sink after the warm-up, pushing at most `ahead`
// frames ahead of it (more when the element holds frames); the row gets
// the µs per frame.
void time_throughput(BenchPipeline &p, Feed &feed, const Options &options, long ahead, Row &row);
// Push of a lone frame to its arrival at the sink, one at a time.
void time_latency(BenchPipeline &p, Feed &feed, const Options &options, Row &row);

#ifdef CUDAGRAY_HAVE_GST_CUDA
}  // namespace bench
#include <gst/cuda/gstcudacontext.h>
namespace bench {

// One GstCudaContext per device, made by the bench and handed to elements
// before they start, as an application shares its context.
class SharedCudaContext {
 public:
  explicit SharedCudaContext(int device);
  ~SharedCudaContext();
  SharedCudaContext(const SharedCudaContext &) = delete;
  SharedCudaContext &operator=(const SharedCudaContext &) = delete;
  GstCudaContext *get() const { return context_; }
  void share_with(GstElement *element) const;

 private:
  GstCudaContext *context_ = nullptr;
};

// RGB frames in CUDA memory from GStreamer's CUDA buffer pool in a shared
// context, as a decoder or cudaupload upstream would; together at least
// rotate_bytes. Each frame is filled on the host once and uploaded before
// the row.
class CudaMemoryFrames {
 public:
  CudaMemoryFrames(const FrameSize &size, size_t rotate_bytes, const SharedCudaContext &context);
  ~CudaMemoryFrames();
  FrameRing &ring() { return ring_; }

 private:
  GstBufferPool *pool_ = nullptr;
  FrameRing ring_;
};
#endif

}  // namespace bench
