// The pipeline rows' machinery: "appsrc ! <middle> ! fakesink" with RGB
// frames of one size, the sink's arrival times, where the frames come from
// (the bench's ring or the element's pinned pool), and the two ways of timing
// it: throughput and single-frame latency.
#pragma once

#include <gst/gst.h>

#include <condition_variable>
#include <utility>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench.h"
#include "frames.h"
#include "pipeline.h"

namespace bench {

using harness::FrameRing;

// Arrival times at the sink, written by the streaming thread. The measured
// window starts after a warm-up.
class ArrivalLog {
 public:
  void add();
  void clear();
  long count() const;
  Clock::time_point last() const;
  // Mean time between arrivals so far; zero before two arrivals.
  std::chrono::duration<double> mean_interval() const;
  // Frames that arrived after the warm-up, and the seconds they spanned.
  long window(double *seconds) const;
  // Waits until at least n frames have arrived; false on timeout.
  bool wait_for(long n, std::chrono::milliseconds timeout);

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Clock::time_point> times_;
  long start_ = -1;
};

// "appsrc name=src ! <middle> ! fakesink name=sink"; the element under test
// is the one named "dut" in middle. Frames are RGB, in system memory or
// (cuda_memory) in memory:CUDAMemory. Every failure throws
// std::runtime_error with GStreamer's message; warnings are kept.
class BenchPipeline {
 public:
  BenchPipeline(const std::string &middle, const FrameSize &size, bool cuda_memory = false);

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
  // Pushes a priming frame and returns the buffer pool the element offers
  // for it in its ALLOCATION answer, as an upstream with a pool of its own
  // would ask on its first buffer. Unavailable when it offers none.
  GstBufferPool *offered_pool(GstBuffer *priming, GstCaps **caps, guint *size);

 private:
  static GstPadProbeReturn on_first_buffer(GstPad *pad, GstPadProbeInfo *, gpointer self);

  harness::Pipeline pipeline_;
  ArrivalLog arrivals_;
  std::vector<std::string> warnings_;
  // The ALLOCATION answer, filled on the streaming thread.
  std::mutex offer_mutex_;
  std::condition_variable offer_changed_;
  bool offer_ready_ = false;
  GstQuery *offer_ = nullptr;
};

// Plain malloc'd (pageable) RGB frames, as an upstream without a pool makes.
void add_pageable_frames(FrameRing *ring, const FrameSize &size, const Options &options,
                         uint64_t seed);

// Where a row's frames come from: a ring the bench made, or (pinned) the
// pool the element offers, asked for with one priming frame from the ring.
// The arrival log starts empty after it; one_at_a_time waits for the priming
// frame to come out first, so that it cannot be taken for the next frame's.
class Feed {
 public:
  Feed(FrameRing &ring, const std::string &what);
  Feed(BenchPipeline &pipeline, FrameRing &priming, const FrameSize &size, const Options &options,
       bool one_at_a_time);
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

// RGB frames in CUDA memory from GStreamer's CUDA buffer pool, in a context
// the bench shares with the element, as a decoder or cudaupload upstream
// would. Each frame is filled on the host once and uploaded before the row.
class CudaMemoryFrames {
 public:
  CudaMemoryFrames(const FrameSize &size, const Options &options);
  ~CudaMemoryFrames();
  FrameRing &ring() { return ring_; }
  // Hands the element the bench's context before it starts.
  void share_with(GstElement *element);

 private:
  GstCudaContext *context_ = nullptr;
  GstBufferPool *pool_ = nullptr;
  FrameRing ring_;
};
#endif

}  // namespace bench
