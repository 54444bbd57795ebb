// SPDX-License-Identifier: LGPL-2.1-or-later
// The rows measured through GStreamer pipelines: the cudagray element on
// CUDA (upstream in its pinned pool, pageable or in CUDA memory), its
// latency, N streams at once, and the CPU rows (videoconvert, cudagray
// backend=cpu).
#pragma once

#include <string>
#include <vector>

#include "bench.h"

namespace bench {

// What this GStreamer knows of the elements the rows need.
struct Elements {
  bool cudagray = false;
  std::string cudagray_file;         // the plugin file it comes from
  bool max_inflight = false;         // has the property
  std::string max_inflight_default;  // its default, as text
  bool videoconvert = false;
};
Elements inspect_elements();

// Whether the element rows on CUDA can run, and if not why (one reason for all).
struct CudaState {
  bool usable = false;
  std::string reason;
};

// Per size: cudagray backend=cuda, {pinned pool, pageable, CUDA memory} ×
// {max-inflight 1, default} (group "element"). The CUDA memory rows (zero-copy:
// frames already on the GPU, the context shared) need gstreamer-cuda-1.0.
void element_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const CudaState &cuda, std::vector<Row> *rows);

// Single-frame latency, max-inflight 1, {pinned pool, pageable} (group "latency").
void latency_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const CudaState &cuda, std::vector<Row> *rows);

// --streams: N pipelines at once in this process, each a camera-like
// stream of its own, spread over options.devices (group "streams").
void stream_rows(const FrameSize &size, const Options &options, const Elements &elements,
                 const CudaState &cuda, std::vector<Row> *rows);

// videoconvert 1 thread and all cores, cudagray backend=cpu (group "cpu").
void cpu_rows(const FrameSize &size, const Options &options, const Elements &elements,
              std::vector<Row> *rows);

}  // namespace bench
