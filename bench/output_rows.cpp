// SPDX-License-Identifier: LGPL-2.1-or-later
// What the output path costs beyond converting: the process's CPU time a
// frame (group "cputime": cudagray beside the same pipeline without it and
// beside nvcodec's cudaconvertscale), and the wall time a caps flip costs
// with frames in flight (group "renegotiation").
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "bench_pipeline.h"
#include "frames.h"
#include "pipeline.h"

namespace bench {

namespace {

constexpr long kAhead = 24;  // frames pushed ahead of the sink: more than max-inflight's 16

// ---------------------------------------------------------------- CPU a frame

struct CpuTimeRow {
  const char *key, *what, *middle;
  bool cuda_memory;   // RGB frames in CUDA memory, in the bench's context
  const char *needs;  // an element the row needs, or null
};

// Each upstream's rows: without a converter first (every row's peer), then
// cudagray, then nvcodec's converter where the upstream is CUDA memory.
const CpuTimeRow kCpuTimeRows[] = {
    {"cputime:pageable:none", "pageable RGB, no converter (identity)", "identity name=dut", false,
     nullptr},
    {"cputime:pageable:cudagray", "pageable RGB, cudagray cuda to GRAY8 in system memory",
     "cudagray name=dut backend=cuda ! video/x-raw,format=GRAY8", false, "cudagray"},
    {"cputime:device:none", "RGB in CUDA memory, no converter (identity)", "identity name=dut",
     true, nullptr},
    {"cputime:device:cudagray", "RGB in CUDA memory, cudagray cuda to GRAY8 in CUDA memory",
     "cudagray name=dut backend=cuda ! video/x-raw(memory:CUDAMemory),format=GRAY8", true,
     "cudagray"},
    {"cputime:device:cudaconvertscale",
     "RGB in CUDA memory, nvcodec cudaconvertscale to GRAY8 in CUDA memory",
     "cudaconvertscale name=dut ! video/x-raw(memory:CUDAMemory),format=GRAY8", true,
     "cudaconvertscale"},
};

bool element_exists(const char *name) {
  GstElementFactory *factory = gst_element_factory_find(name);
  if (factory) gst_object_unref(factory);
  return factory != nullptr;
}

// ---------------------------------------------------------------- caps flips

constexpr long kFlipsTimed = 30;  // flips a run times, after its warm-up
constexpr long kFlipsWarmup = 3;  // flips through before the clock starts
// Frames between two flips: 10, and for frames in flight of more than half
// that also 40, so that the frames in flight at one flip are out before
// the next (flips 10 frames apart at max-inflight 16 meet a pipeline that
// has not refilled since the last).
constexpr long kFlipEvery = 10, kFlipEveryApart = 40;
constexpr int kFlipRepeats = 3;  // runs of each kind; the medians are taken
constexpr GstClockTime kFlipLimit = 120 * GST_SECOND;

// Two caps downstream flips between: the memory (system and CUDA), the size
// (the source's and half of it) or the format (GRAY8 and GRAY16_LE).
struct Flip {
  const char *kind, *what;
  bool cuda_only;  // flips into CUDA memory: the CUDA backend alone makes it
  std::string caps(const FrameSize &size, bool second) const {
    const std::string kind_name = kind;
    if (kind_name == "memory")
      return second ? "video/x-raw(memory:CUDAMemory),format=GRAY8" : "video/x-raw,format=GRAY8";
    if (kind_name == "size")
      return "video/x-raw,format=GRAY8,width=" +
             std::to_string(second ? size.width / 2 : size.width) +
             ",height=" + std::to_string(second ? size.height / 2 : size.height);
    return std::string("video/x-raw,format=") + (second ? "GRAY16_LE" : "GRAY8");
  }
};
const Flip kFlips[] = {
    {"memory", "GRAY8 between system and CUDA memory", true},
    {"size", "GRAY8 between the source's size and half of it", false},
    {"format", "between GRAY8 and GRAY16_LE", false},
};

// "appsrc ! cudagray ! capsfilter ! fakesink" fed pageable RGB frames kAhead
// ahead of the sink; its capsfilter's caps set to one caps or the other by
// the pushing thread every flip_every frames (0: never). Times `frames`
// after a warm-up, to the end of the stream, and checks that every frame
// came out once, in order.
class FlipRun {
 public:
  FlipRun(const FrameSize &size, const std::string &backend, int inflight, const std::string &first,
          const std::string &second)
      : first_(first),
        second_(second),
        pipeline_("appsrc name=src format=time ! cudagray name=dut backend=" + backend +
                  " max-inflight=" + std::to_string(inflight) + " ! capsfilter name=flip caps=\"" +
                  first +
                  "\" ! fakesink name=sink sync=false async=false enable-last-sample=false") {
    GstVideoInfo info;
    gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, size.width, size.height);
    GstCaps *caps = gst_video_info_to_caps(&info);
    g_object_set(pipeline_.by_name("src"), "caps", caps, "block", FALSE, "max-bytes",
                 static_cast<guint64>(0), nullptr);
    gst_caps_unref(caps);
    for (size_t k = 0; k < rotation_count(GST_VIDEO_INFO_SIZE(&info), 64u << 20); ++k) {
      GstBuffer *buffer = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
      if (!buffer) throw std::bad_alloc();
      harness::fill_buffer(buffer, 7000 + k);
      frames_.add(buffer);
    }
    GstPad *pad = gst_element_get_static_pad(pipeline_.by_name("sink"), "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, arrived, this, nullptr);
    gst_object_unref(pad);
    if (pipeline_.play() == GST_STATE_CHANGE_FAILURE)
      throw std::runtime_error("the pipeline did not start: " +
                               harness::describe(harness::BusLog(pipeline_.bus()).errors));
  }

  // Seconds from the warm-up's last arrival to the end of the stream. A
  // flipping run's warm-up serves each caps once: what a flip costs the
  // first time it meets caps (their buffers allocated) is not a flip's
  // steady cost.
  double run(long warmup, long frames, long flip_every) {
    push_until(warmup, flip_every);
    wait_arrived(warmup);
    const Clock::time_point start = Clock::now();
    push_until(warmup + frames, flip_every);
    pipeline_.end_of_stream("src");
    harness::BusLog log;
    if (pipeline_.wait_end(kFlipLimit, &log) != GST_MESSAGE_EOS)
      throw std::runtime_error("no end of stream: " + harness::describe(log.errors));
    const double seconds = seconds_since(start);
    std::lock_guard<std::mutex> lock(mutex_);
    for (long k = 0; k < pushed_; ++k)
      if (k >= static_cast<long>(arrived_.size()) || arrived_[k] != pts(k))
        throw std::runtime_error("frame " + std::to_string(k) + " of " + std::to_string(pushed_) +
                                 " lost, duplicated or out of order (" +
                                 std::to_string(arrived_.size()) + " arrived)");
    if (static_cast<long>(arrived_.size()) != pushed_)
      throw std::runtime_error(std::to_string(arrived_.size()) + " frames arrived of " +
                               std::to_string(pushed_));
    return seconds;
  }

 private:
  static GstClockTime pts(long k) { return k * GST_SECOND / 30; }

  static GstPadProbeReturn arrived(GstPad *, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<FlipRun *>(data);
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->arrived_.push_back(GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info)));
    }
    self->changed_.notify_all();
    return GST_PAD_PROBE_OK;
  }

  void wait_arrived(long n) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::seconds(60),
                           [&] { return static_cast<long>(arrived_.size()) >= n; }))
      throw std::runtime_error("the warm-up's frames did not arrive within 60 s");
  }

  // Pushes frames up to (not including) frame `until`, kAhead ahead of the
  // sink, flipping the capsfilter before every flip_every-th.
  void push_until(long until, long flip_every) {
    GstElement *flip = pipeline_.by_name("flip");
    for (long k = pushed_; k < until; ++k) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!changed_.wait_for(lock, std::chrono::seconds(60),
                               [&] { return static_cast<long>(arrived_.size()) > k - kAhead; }))
          throw std::runtime_error("no frame arrived for 60 s, " + std::to_string(k) + " pushed");
      }
      if (flip_every > 0 && k % flip_every == 0) {
        second_now_ = !second_now_;
        GstCaps *caps = gst_caps_from_string((second_now_ ? second_ : first_).c_str());
        g_object_set(flip, "caps", caps, nullptr);
        gst_caps_unref(caps);
      }
      GstBuffer *frame = frames_.next();
      GstBuffer *buffer = gst_buffer_copy(frame);  // shares the frame's memory
      gst_buffer_unref(frame);
      GST_BUFFER_PTS(buffer) = pts(k);
      GST_BUFFER_DURATION(buffer) = GST_SECOND / 30;
      const GstFlowReturn flow = pipeline_.push("src", buffer);
      if (flow != GST_FLOW_OK)
        throw std::runtime_error(std::string("appsrc refused a frame: ") + gst_flow_get_name(flow) +
                                 " " + harness::describe(harness::BusLog(pipeline_.bus()).errors));
      ++pushed_;
    }
  }

  const std::string first_, second_;
  bool second_now_ = false;
  long pushed_ = 0;
  std::mutex mutex_;  // the sink's streaming thread is done with these once the pipeline is
  std::condition_variable changed_;
  std::vector<GstClockTime> arrived_;  // the PTS of each frame at the sink
  harness::FrameRing frames_;
  harness::Pipeline pipeline_;
};

double median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

// The wall time a flip costs: a run flipping every `every` frames against
// runs of as many frames with each caps alone, kFlipRepeats times each, in
// turns.
void time_flips(const Flip &flip, const std::string &backend, int inflight, long every, Row &row) {
  const FrameSize &size = row.size;
  const std::string first = flip.caps(size, false), second = flip.caps(size, true);
  const long warmup = kFlipsWarmup * every, frames = kFlipsTimed * every;
  std::vector<double> flipping, only_first, only_second;
  for (int r = 0; r < kFlipRepeats; ++r) {
    only_first.push_back(FlipRun(size, backend, inflight, first, second).run(warmup, frames, 0));
    only_second.push_back(FlipRun(size, backend, inflight, second, first).run(warmup, frames, 0));
    flipping.push_back(FlipRun(size, backend, inflight, first, second).run(warmup, frames, every));
  }
  const double steady = (median(only_first) + median(only_second)) / 2;
  const double cost_us = (median(flipping) - steady) / kFlipsTimed * 1e6;
  row.us = std::max(1e-3, cost_us);  // a row needs a time: none measured reads 0.00
  row.frames = kFlipsTimed;
  char note[256];
  std::snprintf(note, sizeof note,
                "%ld frames, a flip every %ld after each caps was served once, every frame out "
                "once and in order; medians of %d: %.1f ms flipping, %.1f / %.1f ms with either "
                "caps alone%s",
                frames, every, kFlipRepeats, 1e3 * median(flipping), 1e3 * median(only_first),
                1e3 * median(only_second),
                cost_us <= 0 ? " (flipping took no longer: no cost measured)" : "");
  row.note = note;
}

}  // namespace

void cputime_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const std::string &no_cuda, std::vector<Row> *rows) {
  std::string why_no_context;
  const SharedCudaContexts contexts = shared_contexts({options.device}, &why_no_context);
  for (const CpuTimeRow &c : kCpuTimeRows) {
    Row row(size, "cputime", c.key, c.what, "RGB");
    row.peer = std::string(c.key).substr(0, std::string(c.key).rfind(':')) + ":none";
    if (c.needs && std::string(c.needs) == "cudagray" && !elements.cudagray)
      row.skipped = "n/a: cudagray plugin not found";
    else if (c.needs && !element_exists(c.needs))
      row.skipped = std::string("n/a: ") + c.needs + " is not registered here";
    else if (!no_cuda.empty())
      row.skipped = "skipped: " + no_cuda;
    else if (c.cuda_memory && contexts.empty())
      row.skipped = why_no_context;
    Run run;
    run.middles = {c.middle};
    run.contexts = contexts;
    run.devices = {options.device};
    run.cuda_memory = c.cuda_memory;
    run.ahead = kAhead;
    record(rows, row, [&](Row &r) { time_pipelines(run, options, r); });
  }
}

void renegotiation_rows(const FrameSize &size, const Elements &elements, const std::string &no_cuda,
                        std::vector<Row> *rows) {
  for (const char *backend : {"cuda", "cpu"})
    for (const Flip &flip : kFlips)
      for (const int inflight : {1, 4, 16})
        for (const long every : {kFlipEvery, kFlipEveryApart}) {
          const std::string b = backend;
          if ((b == "cpu" && flip.cuda_only) ||
              (every == kFlipEveryApart && 2 * inflight <= kFlipEvery))
            continue;
          const bool apart = every == kFlipEveryApart;
          Row row(size, "renegotiation",
                  "renegotiation:" + b + ":" + flip.kind + ":" + std::to_string(inflight) +
                      (apart ? ":apart" : ""),
                  "caps flip, " + std::string(flip.what) + ", cudagray " + b + " max-inflight " +
                      std::to_string(inflight) + (apart ? ", flips 40 frames apart" : ""),
                  "RGB");
          if (!elements.cudagray)
            row.skipped = "n/a: cudagray plugin not found";
          else if (b == "cuda" && !no_cuda.empty())
            row.skipped = "skipped: " + no_cuda;
          record(rows, row, [&](Row &r) { time_flips(flip, b, inflight, every, r); });
        }
}

}  // namespace bench
