// SPDX-License-Identifier: LGPL-2.1-or-later
// cudagray-bench's common header: the options, rows, timing loops and frame
// helpers its parts share, and the row groups main.cpp runs (those measured
// with CUDA directly are in cuda_rows.h).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cudagray/convert_cpu.h"
#include "cudagray/device.h"
#include "cudagray/frame.h"
#include "cudagray/weights.h"

namespace bench {

using Clock = std::chrono::steady_clock;
using cudagray::PixelLayout;

struct FrameSize {
  std::string name;  // "1080p"
  int width, height;
  size_t pixels() const { return static_cast<size_t>(width) * height; }
};

// What the command line chose.
struct Options {
  std::vector<FrameSize> sizes;
  std::vector<PixelLayout> formats;         // of the kernel rows
  std::vector<PixelLayout> scaled_formats;  // of the scaled kernel rows
  std::vector<int> gray_depths = {8};       // of the kernel rows: 8 (GRAY8), 16 (GRAY16)
  std::vector<std::string> groups;          // kernel copy raw element scaled latency cpu npp
  double seconds = 0.5;                     // measured time per row (after warm-up)
  size_t rotate_bytes = 256u << 20;         // frames rotated per row: at least this much
  int device = 0;                           // CUDA device
  std::string csv = "bench-results.csv";
  std::string npp_lib;        // explicit libnppicc path, if any
  std::vector<int> inflight;  // extra max-inflight values for the element rows
  std::vector<int> streams;   // pipelines at once for the streams rows (none: no such rows)
  std::vector<int> devices;   // the streams rows' GPUs (default: device); several: also 1 GPU
  double paced_fps = 0;       // streams rows: each pushes at this rate (0: as fast as it can)
  bool wants(const std::string &group) const {
    return std::find(groups.begin(), groups.end(), group) != groups.end();
  }
};

// The options on the command line (options.cpp); throws std::invalid_argument
// on a bad one, prints kUsage and exits on --help.
extern const char kUsage[];
Options parse_options(int argc, char **argv);

// One line of the table: one thing measured at one size. The measuring code
// names what the row is compared with (ceiling, peer) by key; report.cpp
// turns keys into ratios once every row is in.
struct Row {
  Row(const FrameSize &size, const std::string &group, const std::string &key,
      const std::string &what, const std::string &format = "", double bytes = 0)
      : size(size), group(group), key(key), what(what), format(format), bytes(bytes) {}
  // The same row, not measured, saying why.
  Row skip(const std::string &why) const {
    Row row = *this;
    row.skipped = why;
    return row;
  }

  FrameSize size;
  std::string group;    // copy, kernel, raw, element, scaled, latency, cpu, npp, streams
  std::string key;      // unique within a size: "kernel:RGB", "raw:pinned", ...
  std::string what;     // readable name
  std::string format;   // input format, or "" when none applies
  double bytes = 0;     // bytes per frame counted for GB/s
  double us = 0;        // µs per frame (latency rows: the median; renegotiation: a flip)
  double cpu_us = NAN;  // pipeline rows: the process's CPU time a frame in the window
  long frames = 0;      // frames (or operations) measured
  std::string ceiling;  // key of the row this one is a ratio to ("" none)
  std::string peer;     // key of a peer row ("" none)
  std::string skipped;  // non-empty: not measured, and why
  std::string note;

  // The streams rows' figures (every pipeline run fills them, only those
  // rows show them): N pipelines at once (us is then per frame of all
  // streams together). Per-stream figures are the process's growth over N.
  struct Load {
    int streams = 0, gpus = 0;
    double stream_fps_min = NAN, stream_fps_max = NAN;  // per-stream spread
    double latency_p50_us = NAN, latency_p99_us = NAN;  // push to sink, every frame
    double gpu_mib = NAN, pinned_mib = NAN, threads = NAN, start_ms = NAN;  // per stream
    int process_threads = 0;
    long dropped = 0, late = 0;  // paced: frames lost, pushes behind their time
  } load;
};

// Thrown by a measurement that cannot apply here (the row reads "n/a: ...");
// any other exception marks the row "failed: ...".
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Measures one row: measure (when given, and the row is not skipped already)
// fills in row or throws. Prints a progress line on stderr and appends the
// row to rows.
void record(std::vector<Row> *rows, Row row, const std::function<void(Row &)> &measure = nullptr);

// ---- timing (measure.cpp) ---------------------------------------------------

struct Budget {
  double seconds;       // total measured time, split over repeats
  long min_iterations;  // per repeat
  long max_iterations;  // per repeat
  int repeats;          // the result is the median repeat
};

// run(n) performs n more iterations and returns the seconds they took. Warms
// up, sizes n from a short probe so that the repeats fill budget.seconds, and
// returns the median seconds per iteration; *iterations gets the total.
double seconds_per_iteration(const std::function<double(long n)> &run, const Budget &budget,
                             long *iterations = nullptr);
// A latency row's figures from its samples (µs): the median, and a note with
// the spread.
void take_median(Row &row, const std::vector<double> &samples);

double percentile(std::vector<double> values, double p);  // p in [0, 1]
double seconds_since(Clock::time_point start);
// The CPU time of every thread of the process so far, those ended included.
double process_cpu_seconds();

// The output size of the scaled rows (issue 31): a detector's input, GRAY8.
inline const FrameSize kScaledOutput = {"640x360", 640, 360};
// The batch rows' sources (issue 51): 1080p NV12 frames in device memory.
inline const FrameSize kBatchSource = {"1080p", 1920, 1080};

// ---- frames -------------------------------------------------------------------

// How many frames of frame_bytes to rotate over so that together they exceed
// budget_bytes (and so any cache); at least 4.
size_t rotation_count(size_t frame_bytes, size_t budget_bytes);

// count frames of bytes each in plain pageable malloc memory, each
// page-aligned, filled with random bytes from seed (touched now, so a timed
// loop does not pay the page faults), picked by a rotating index.
class PageableFrames {
 public:
  PageableFrames(size_t count, size_t bytes, uint64_t seed);
  uint8_t *at(long i) const { return data_.get() + static_cast<size_t>(i) % count_ * stride_; }

 private:
  size_t count_, stride_;
  std::unique_ptr<uint8_t, void (*)(void *)> data_;
};

// Input bytes of one frame of layout (tight rows, planes back to back), and
// the frame at base (converted with cudagray::same_size_conversion).
size_t frame_bytes(PixelLayout layout, const FrameSize &size);
cudagray::InputFrame frame_at(PixelLayout layout, const FrameSize &size, const uint8_t *base);
const char *layout_name(PixelLayout layout);

std::string format_double(double value, int decimals);
// The non-empty parts, joined by separator.
std::string join(const std::vector<std::string> &parts, const char *separator = "; ");

// ---- rows through GStreamer pipelines (gst_rows.cpp) ---------------------------

// What this GStreamer knows of the elements the rows need.
struct Elements {
  bool cudagray = false;
  std::string cudagray_file;         // the plugin file it comes from
  bool max_inflight = false;         // has the property
  std::string max_inflight_default;  // its default, as text
  bool videoconvert = false, videoscale = false, videoconvertscale = false;
};
Elements inspect_elements();

// The element rows on CUDA run only when no_cuda (why CUDA cannot be used
// here) is empty; otherwise each function records one row saying why.

// Per size: cudagray backend=cuda, {pinned pool, pageable, CUDA memory} ×
// {max-inflight 1, default} (group "element"). The CUDA memory rows (zero-copy:
// frames already on the GPU) need gstreamer-cuda-1.0; with it every row's
// element shares the bench's CUDA context.
void element_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const std::string &no_cuda, std::vector<Row> *rows);

// GRAY8 at kScaledOutput in system memory (group "scaled"), default
// max-inflight: cudagray scaling in the same pass, against cudagray at the
// source's size then videoscale on all cores, against videoconvertscale on
// all cores, and against the same-size row (measured here unless its group
// "element" or "cpu" is). On CUDA from each upstream of the element rows
// (from CUDA memory also against raw:device:scaled); on the CPU backend
// from pageable memory, which runs without a GPU.
void scaled_rows(const FrameSize &size, const Options &options, const Elements &elements,
                 const std::string &no_cuda, std::vector<Row> *rows);

// Single-frame latency, max-inflight 1, {pinned pool, pageable} (group "latency").
void latency_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const std::string &no_cuda, std::vector<Row> *rows);

// --streams: N pipelines at once in this process, each a camera-like
// stream of its own, spread over options.devices (group "streams").
void stream_rows(const FrameSize &size, const Options &options, const Elements &elements,
                 const std::string &no_cuda, std::vector<Row> *rows);

// The process's CPU time a frame (group "cputime"), flat out: cudagray
// from pageable RGB and from RGB in CUDA memory, each beside the same
// pipeline without a converter, and from CUDA memory beside nvcodec's
// cudaconvertscale where it registers (output_rows.cpp).
void cputime_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const std::string &no_cuda, std::vector<Row> *rows);

// The wall time one caps flip downstream costs with frames in flight (group
// "renegotiation"): memory, size and format flips at max-inflight 1, 4 and
// 16 on each backend, every frame checked out once and in order
// (output_rows.cpp).
void renegotiation_rows(const FrameSize &size, const Elements &elements, const std::string &no_cuda,
                        std::vector<Row> *rows);

// videoconvert 1 thread and all cores, cudagray backend=cpu (group "cpu").
void cpu_rows(const FrameSize &size, const Options &options, const Elements &elements,
              std::vector<Row> *rows);

// ---- rows without GStreamer or CUDA (cpu_rows.cpp) ------------------------------

// convert_cpu alone on RGB and on YUV luma of both ranges: the "cpu" group.
void cpu_kernel_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows);

// ---- report (report.cpp) --------------------------------------------------------

// The table on out, one block per size, then what the ratios mean.
void print_table(std::FILE *out, const std::vector<Row> &rows);
// One line per row; throws std::runtime_error when the file cannot be written.
void write_csv(const std::string &path, const std::vector<Row> &rows);

}  // namespace bench
