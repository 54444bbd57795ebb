// SPDX-License-Identifier: LGPL-2.1-or-later
// What the pipeline rows ask of bench_pipeline.cpp: run "appsrc ! <middle> !
// fakesink" pipelines, one or many at once, and time them.
#pragma once

#include <gst/gst.h>

#include <memory>
#include <string>
#include <vector>

#include "bench.h"

namespace bench {

// GstCudaContexts the bench makes, one per device, made once for every row at
// a size and handed to elements before they start, as an application shares
// its context; none, and *why, when GStreamer cannot make them (nor frames in
// CUDA memory).
using SharedCudaContexts = std::vector<std::shared_ptr<GstObject>>;
SharedCudaContexts shared_contexts(const std::vector<int> &devices, std::string *why);

// Pipelines run at once and timed together: pipeline i is "appsrc !
// middles[i] ! fakesink" (the element under test named dut), its element
// given contexts[i % size] (none: it makes its own), its RGB frames pushed
// by a thread of its own.
struct Run {
  std::vector<std::string> middles;
  SharedCudaContexts contexts;
  std::vector<int> devices;  // the GPUs whose memory the run's cost counts
  bool pool = false;         // frames from the pinned pool the element offers, else pageable
  bool cuda_memory = false;  // frames in CUDA memory, in pipeline i's context
  long ahead = 1;            // flat out: frames ahead of the sink, at most (1: lone frames)
  double paced_fps = 0;      // > 0: instead one frame every 1 / paced_fps s into a live appsrc
  long min_frames = 10;      // in the window, of all pipelines together
  std::string note;          // for the row's note
};

// Makes the frames (options.rotate_bytes in all), starts the pipelines and
// pushes until every one is past its warm-up, then over a common window of
// options.seconds (and run.min_frames). row gets the µs per frame of all
// pipelines together (a latency row: the median latency of its frames), and
// in row.load the rate of each (its spread), the latency p50 and p99,
// dropped and late frames, and what the process grew by per pipeline:
// start-up time, GPU and pinned memory, threads. Its note: the first
// pipeline's frames (per stream for a streams row, whose row.load.streams
// is set), run.note, the element's stats and its first warning.
void time_pipelines(const Run &run, const Options &options, Row &row);

}  // namespace bench
