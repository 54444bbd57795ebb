// Rows measured through GStreamer: appsrc ! <element> ! fakesink, one
// process, frames rotated from a set the bench keeps referenced.
//
// Throughput is the rate at which frames reach the sink, after a warm-up,
// with upstream kept a few frames ahead (appsrc queue), so the element never
// waits for input. Latency is from the push of a lone frame to its arrival
// at the sink, one frame at a time.
#include "gst_rows.h"

#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#ifdef CUDAGRAY_HAVE_CUDA
#include "cuda_rows.h"
#endif
#ifdef CUDAGRAY_HAVE_GST_CUDA
#include <gst/cuda/gstcudabufferpool.h>
#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

namespace bench {

namespace {

using namespace std::chrono_literals;

// The measured window starts after kWarmupFrames arrivals, or kWarmupSeconds
// after the first arrival for slow rows, but never before kMinWarmup.
constexpr long kWarmupFrames = 20;
constexpr auto kWarmupTime = 250ms;
constexpr long kMinWarmup = 2;
constexpr long kMinFrames = 10;        // measured frames, at least
constexpr long kMaxFrames = 200000;    // measured frames, at most
constexpr long kElementAhead = 24;     // frames pushed ahead of the sink (max-inflight is <= 16)
constexpr long kCpuAhead = 2;          // enough for a synchronous element never to wait
constexpr long kMaxAhead = 32;         // if an element holds more frames than `ahead`
constexpr auto kHoldSuspicion = 500ms; // nothing out for this long (or 4 frame times): feed more
constexpr auto kStallTime = 30s;       // no arrival for this long: the row fails
constexpr auto kLoneFrameTime = 5s;    // latency: one frame must arrive within this
constexpr GstClockTime kEosTime = 120 * GST_SECOND;

// Arrival times at the sink, written by the streaming thread.
class ArrivalLog {
 public:
  struct Window {
    long frames = 0;
    double seconds = 0;
  };

  void add() {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    times_.push_back(now);
    const long i = static_cast<long>(times_.size()) - 1;
    if (start_ < 0 && i >= kMinWarmup && (i >= kWarmupFrames || now - times_[0] >= kWarmupTime))
      start_ = i;
    changed_.notify_all();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    times_.clear();
    start_ = -1;
  }
  long count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<long>(times_.size());
  }
  Clock::time_point last() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return times_.empty() ? Clock::time_point() : times_.back();
  }
  // Mean time between arrivals so far; zero before two arrivals.
  std::chrono::duration<double> mean_interval() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (times_.size() < 2) return std::chrono::duration<double>(0);
    return (times_.back() - times_.front()) / double(times_.size() - 1);
  }
  // Frames that arrived after the warm-up, and the time they spanned.
  Window window() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (start_ < 0) return {};
    return {static_cast<long>(times_.size()) - 1 - start_,
            std::chrono::duration<double>(times_.back() - times_[start_]).count()};
  }
  // Waits until at least n frames have arrived; false on timeout.
  bool wait_for(long n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return static_cast<long>(times_.size()) >= n; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Clock::time_point> times_;
  long start_ = -1;
};

// A pool the element offered in its answer to our ALLOCATION query.
struct PoolOffer {
  GstBufferPool *pool = nullptr;  // owned
  GstCaps *caps = nullptr;        // owned
  guint size = 0;
  std::string why_none;           // when pool is null
};

// "appsrc name=src ! <middle> ! fakesink name=sink", RGB frames of one size,
// in system memory or (cuda_memory) in memory:CUDAMemory. The element under
// test is the one named "dut" in middle. Every failure throws
// std::runtime_error with GStreamer's message.
class BenchPipeline {
 public:
  BenchPipeline(const std::string &middle, const FrameSize &size, bool cuda_memory = false) {
    const std::string description = "appsrc name=src ! " + middle +
                                    " ! fakesink name=sink sync=false async=false enable-last-sample=false";
    GError *error = nullptr;
    pipeline_ = gst_parse_launch(description.c_str(), &error);
    if (error) {
      const std::string text = error->message;
      g_error_free(error);
      if (pipeline_) gst_object_unref(pipeline_);
      pipeline_ = nullptr;
      throw std::runtime_error("cannot build \"" + description + "\": " + text);
    }
    bus_ = gst_element_get_bus(pipeline_);
    src_ = gst_bin_get_by_name(GST_BIN(pipeline_), "src");
    dut_ = gst_bin_get_by_name(GST_BIN(pipeline_), "dut");
    GstCaps *caps = gst_caps_new_simple("video/x-raw", "format", G_TYPE_STRING, "RGB", "width",
                                        G_TYPE_INT, size.width, "height", G_TYPE_INT, size.height,
                                        "framerate", GST_TYPE_FRACTION, 30, 1, nullptr);
    if (cuda_memory)
      gst_caps_set_features_simple(caps, gst_caps_features_new_single("memory:CUDAMemory"));
    // Unbounded appsrc queue: the bench itself keeps it a few frames deep.
    g_object_set(src_, "caps", caps, "format", GST_FORMAT_TIME, "is-live", FALSE, "block", FALSE,
                 "max-bytes", static_cast<guint64>(0), "emit-signals", FALSE, nullptr);
    gst_caps_unref(caps);
    GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline_), "sink");
    GstPad *pad = gst_element_get_static_pad(sink, "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_arrival, this, nullptr);
    gst_object_unref(pad);
    gst_object_unref(sink);
  }

  ~BenchPipeline() {
    if (!pipeline_) return;
    gst_element_set_state(pipeline_, GST_STATE_NULL);
    if (offer_.pool) gst_object_unref(offer_.pool);
    if (offer_.caps) gst_caps_unref(offer_.caps);
    gst_object_unref(src_);
    if (dut_) gst_object_unref(dut_);
    gst_object_unref(bus_);
    gst_object_unref(pipeline_);
  }
  BenchPipeline(const BenchPipeline &) = delete;
  BenchPipeline &operator=(const BenchPipeline &) = delete;

  GstElement *dut() const { return dut_; }
  ArrivalLog &arrivals() { return arrivals_; }

  // Sets a property of the element under test; Unavailable when it has none.
  void set_dut_property(const char *name, const char *value) {
    if (!dut_ || !g_object_class_find_property(G_OBJECT_GET_CLASS(dut_), name))
      throw Unavailable(std::string("the element has no property ") + name);
    gst_util_set_object_arg(G_OBJECT(dut_), name, value);
  }

  void play() {
    if (gst_element_set_state(pipeline_, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
      throw_if_bus_error();
      throw std::runtime_error("the pipeline did not start");
    }
  }

  void push(GstBuffer *buffer) {
    const GstFlowReturn flow = gst_app_src_push_buffer(GST_APP_SRC(src_), buffer);
    if (flow != GST_FLOW_OK) {
      throw_if_bus_error();
      throw std::runtime_error(std::string("appsrc refused a buffer: ") + gst_flow_get_name(flow));
    }
  }

  // Throws the first error on the bus, if any; keeps warnings.
  void throw_if_bus_error() {
    while (GstMessage *message = gst_bus_pop_filtered(
               bus_, GstMessageType(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING)))
      take(message);
  }

  // Ends the stream and waits until every frame has reached the sink.
  void end() {
    gst_app_src_end_of_stream(GST_APP_SRC(src_));
    for (;;) {
      GstMessage *message = gst_bus_timed_pop_filtered(
          bus_, kEosTime, GstMessageType(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING));
      if (!message) throw std::runtime_error("no end of stream within the time limit");
      if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS) {
        gst_message_unref(message);
        return;
      }
      take(message);
    }
  }

  const std::vector<std::string> &warnings() const { return warnings_; }

  // Upstream's side of negotiation, as a source with a pool of its own
  // would do it: on the first buffer (caps are set downstream by then),
  // ask the peer for an allocation pool. Call before the first push.
  void ask_for_pool_on_first_buffer() {
    GstPad *pad = gst_element_get_static_pad(src_, "src");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_first_buffer, this, nullptr);
    gst_object_unref(pad);
  }

  // The answer to that query; the caller owns the pool and caps it returns.
  PoolOffer wait_for_pool_offer() {
    std::unique_lock<std::mutex> lock(offer_mutex_);
    for (int tenths = 0; !offer_ready_; ++tenths) {
      offer_changed_.wait_for(lock, 100ms);
      lock.unlock();
      throw_if_bus_error();
      lock.lock();
      if (tenths > 100) throw std::runtime_error("the first frame never reached the element");
    }
    PoolOffer offer = offer_;
    offer_ = PoolOffer();
    return offer;
  }

 private:
  static GstPadProbeReturn on_arrival(GstPad *, GstPadProbeInfo *, gpointer self) {
    static_cast<BenchPipeline *>(self)->arrivals_.add();
    return GST_PAD_PROBE_OK;
  }

  static GstPadProbeReturn on_first_buffer(GstPad *pad, GstPadProbeInfo *, gpointer data) {
    auto *self = static_cast<BenchPipeline *>(data);
    PoolOffer offer;
    offer.caps = gst_pad_get_current_caps(pad);
    GstQuery *query = gst_query_new_allocation(offer.caps, TRUE);
    if (!gst_pad_peer_query(pad, query)) {
      offer.why_none = "the element did not answer the ALLOCATION query";
    } else if (gst_query_get_n_allocation_pools(query) == 0) {
      offer.why_none = "the element offered no buffer pool in its ALLOCATION answer";
    } else {
      guint min = 0, max = 0;
      gst_query_parse_nth_allocation_pool(query, 0, &offer.pool, &offer.size, &min, &max);
      if (!offer.pool) offer.why_none = "the element's ALLOCATION answer has a size but no pool";
    }
    gst_query_unref(query);
    std::lock_guard<std::mutex> lock(self->offer_mutex_);
    self->offer_ = offer;
    self->offer_ready_ = true;
    self->offer_changed_.notify_all();
    return GST_PAD_PROBE_REMOVE;
  }

  // Errors throw; warnings are kept.
  void take(GstMessage *message) {
    GError *error = nullptr;
    gchar *debug = nullptr;
    const bool is_error = GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR;
    if (is_error) gst_message_parse_error(message, &error, &debug);
    else gst_message_parse_warning(message, &error, &debug);
    const std::string text = error ? error->message : "unknown";
    if (error) g_error_free(error);
    g_free(debug);
    gst_message_unref(message);
    if (is_error) throw std::runtime_error(text);
    warnings_.push_back(text);
  }

  GstElement *pipeline_ = nullptr, *src_ = nullptr, *dut_ = nullptr;
  GstBus *bus_ = nullptr;
  ArrivalLog arrivals_;
  std::vector<std::string> warnings_;
  std::mutex offer_mutex_;
  std::condition_variable offer_changed_;
  bool offer_ready_ = false;
  PoolOffer offer_;
};

// Input buffers, each one random frame, that the bench keeps a reference on:
// next() hands out another reference, so a buffer is never freed, recycled
// into a pool, or written while the row runs (consumers only read it).
class FrameRing {
 public:
  FrameRing() = default;
  FrameRing(const FrameRing &) = delete;
  FrameRing &operator=(const FrameRing &) = delete;
  ~FrameRing() { clear(); }

  void add(GstBuffer *owned) { buffers_.push_back(owned); }
  GstBuffer *next() { return gst_buffer_ref(buffers_[next_++ % buffers_.size()]); }
  GstBuffer *front() const { return buffers_.front(); }
  size_t size() const { return buffers_.size(); }
  void clear() {
    for (GstBuffer *b : buffers_) gst_buffer_unref(b);
    buffers_.clear();
  }

 private:
  std::vector<GstBuffer *> buffers_;
  size_t next_ = 0;
};

void fill_buffer(GstBuffer *buffer, uint64_t seed) {
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_WRITE)) throw std::runtime_error("cannot map a frame for writing");
  fill_random(map.data, map.size, seed);
  gst_buffer_unmap(buffer, &map);
}

size_t rgb_frame_bytes(const FrameSize &size) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, size.width, size.height);
  return GST_VIDEO_INFO_SIZE(&info);
}

// What CUDA says about the memory of a buffer ("pinned", "pageable").
std::string memory_kind(GstBuffer *buffer) {
#ifdef CUDAGRAY_HAVE_CUDA
  GstMapInfo map;
  if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return "unmappable";
  const std::string kind = host_memory_kind(map.data);
  gst_buffer_unmap(buffer, &map);
  return kind;
#else
  (void)buffer;
  return "unknown (no CUDA in this build)";
#endif
}

// Plain malloc'd (pageable) frames, as an upstream without a pool makes.
void add_pageable_frames(FrameRing *ring, const FrameSize &size, const Options &options, uint64_t seed) {
  const size_t bytes = rgb_frame_bytes(size);
  const size_t count = rotation_count(bytes, options.rotate_bytes);
  for (size_t i = 0; i < count; ++i) {
    GstBuffer *buffer = gst_buffer_new_allocate(nullptr, bytes, nullptr);
    if (!buffer) throw std::bad_alloc();
    ring->add(buffer);
    fill_buffer(buffer, seed + i);
  }
}

// Frames from the pool the element offered: configured for as many buffers
// as the rotation wants (unless the pool is active already), activated, and
// each buffer filled once. Deactivates what it activated when done.
class PoolFrames {
 public:
  PoolFrames(PoolOffer offer, const FrameSize &size, const Options &options)
      : pool_(offer.pool), caps_(offer.caps) {
    if (!pool_) throw Unavailable(offer.why_none);
    const size_t bytes = rgb_frame_bytes(size);
    const size_t wanted = rotation_count(bytes, options.rotate_bytes);
    if (!gst_buffer_pool_is_active(pool_)) {
      configure(std::max(bytes, static_cast<size_t>(offer.size)));
      if (!gst_buffer_pool_set_active(pool_, TRUE)) throw std::runtime_error("the element's pool could not be activated");
      activated_ = true;
    }
    GstBufferPoolAcquireParams params{};
    params.flags = GST_BUFFER_POOL_ACQUIRE_FLAG_DONTWAIT;
    for (size_t i = 0; i < wanted; ++i) {
      GstBuffer *buffer = nullptr;
      if (gst_buffer_pool_acquire_buffer(pool_, &buffer, &params) != GST_FLOW_OK || !buffer) break;
      ring_.add(buffer);
      fill_buffer(buffer, 8000 + i);
    }
    if (ring_.size() == 0) throw std::runtime_error("the element's pool gave no buffer");
    note_ = std::to_string(ring_.size()) + " pool frames" +
            (ring_.size() < wanted ? " (of " + std::to_string(wanted) + " wanted)" : "") +
            ", memory " + memory_kind(ring_.front());
  }
  ~PoolFrames() {
    ring_.clear();  // back to the pool before it goes
    if (activated_) gst_buffer_pool_set_active(pool_, FALSE);
    if (pool_) gst_object_unref(pool_);
    if (caps_) gst_caps_unref(caps_);
  }
  PoolFrames(const PoolFrames &) = delete;
  PoolFrames &operator=(const PoolFrames &) = delete;

  FrameRing &ring() { return ring_; }
  const std::string &note() const { return note_; }

 private:
  // Keeps the pool's own options (video meta...) and asks for no maximum.
  void configure(size_t bytes) {
    GstStructure *config = gst_buffer_pool_get_config(pool_);
    GstCaps *caps = nullptr;
    guint size = 0, min = 0, max = 0;
    gst_buffer_pool_config_get_params(config, &caps, &size, &min, &max);
    GstCaps *use = caps ? gst_caps_ref(caps) : caps_ ? gst_caps_ref(caps_) : nullptr;
    gst_buffer_pool_config_set_params(config, use, std::max<guint>(size, static_cast<guint>(bytes)), min, 0);
    if (use) gst_caps_unref(use);
    if (gst_buffer_pool_set_config(pool_, config)) return;
    // Refused: take the pool's counter-proposal as it stands.
    if (!gst_buffer_pool_set_config(pool_, gst_buffer_pool_get_config(pool_)))
      throw std::runtime_error("the element's pool refused its configuration");
  }

  GstBufferPool *pool_;
  GstCaps *caps_;
  bool activated_ = false;
  FrameRing ring_;
  std::string note_;
};

// Where a pipeline's frames come from: a ring the bench made (pageable or
// CUDA memory), or (pinned) the element's pool, asked for with one priming
// pageable frame. The arrival log starts empty after it; one_at_a_time waits
// for the priming frame to come out first, so that it cannot be taken for the
// next frame's.
class Feed {
 public:
  Feed(BenchPipeline &pipeline, bool pinned, FrameRing &pageable, const FrameSize &size,
       const Options &options, bool one_at_a_time, const std::string &what = "pageable")
      : ring_(&pageable) {
    if (!pinned) {
      note_ = std::to_string(pageable.size()) + " " + what + " frames";
      return;
    }
    pipeline.ask_for_pool_on_first_buffer();
    pipeline.push(pageable.next());
    pool_ = std::make_unique<PoolFrames>(pipeline.wait_for_pool_offer(), size, options);
    ring_ = &pool_->ring();
    note_ = pool_->note();
    if (one_at_a_time && !pipeline.arrivals().wait_for(1, kLoneFrameTime)) {
      pipeline.throw_if_bus_error();
      throw std::runtime_error("the priming frame did not reach the sink within 5 s");
    }
    pipeline.arrivals().clear();
  }
  GstBuffer *next() { return ring_->next(); }
  const std::string &note() const { return note_; }

 private:
  std::unique_ptr<PoolFrames> pool_;
  FrameRing *ring_;
  std::string note_;
};

#ifdef CUDAGRAY_HAVE_GST_CUDA
// RGB frames in CUDA memory from GStreamer's CUDA buffer pool, in a context
// the bench shares with the element, as a decoder or cudaupload upstream
// would. Each frame is filled on the host once and uploaded before the row.
class CudaMemoryFrames {
 public:
  CudaMemoryFrames(const FrameSize &size, const Options &options) {
    if (!gst_cuda_load_library()) throw Unavailable("GStreamer's CUDA library could not load the CUDA driver");
    gst_cuda_memory_init_once();
    context_ = gst_cuda_context_new(options.device);
    if (!context_)
      throw Unavailable("GStreamer could not make a CUDA context on device " + std::to_string(options.device));
    pool_ = gst_cuda_buffer_pool_new(context_);
    GstVideoInfo info;
    gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, size.width, size.height);
    const size_t count = rotation_count(GST_VIDEO_INFO_SIZE(&info), options.rotate_bytes);
    GstCaps *caps = gst_video_info_to_caps(&info);
    gst_caps_set_features_simple(caps, gst_caps_features_new_single(GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY));
    GstStructure *config = gst_buffer_pool_get_config(pool_);
    gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), count, 0);
    gst_caps_unref(caps);
    if (!gst_buffer_pool_set_config(pool_, config) || !gst_buffer_pool_set_active(pool_, TRUE))
      throw std::runtime_error("GStreamer's CUDA buffer pool could not be set up");
    for (size_t i = 0; i < count; ++i) {
      GstBuffer *buffer = nullptr;
      if (gst_buffer_pool_acquire_buffer(pool_, &buffer, nullptr) != GST_FLOW_OK || !buffer)
        throw std::runtime_error("GStreamer's CUDA buffer pool gave no buffer");
      ring_.add(buffer);
      fill_buffer(buffer, 11000 + i);  // on the host: uploaded by the next CUDA mapping
      GstMapInfo map;
      if (!gst_buffer_map(buffer, &map, GstMapFlags(GST_MAP_READ | GST_MAP_CUDA)))
        throw std::runtime_error("a CUDA memory frame could not be uploaded");
      gst_buffer_unmap(buffer, &map);
    }
  }
  ~CudaMemoryFrames() {
    ring_.clear();  // back to the pool before it goes
    if (pool_) {
      gst_buffer_pool_set_active(pool_, FALSE);
      gst_object_unref(pool_);
    }
    if (context_) gst_object_unref(context_);
  }
  CudaMemoryFrames(const CudaMemoryFrames &) = delete;
  CudaMemoryFrames &operator=(const CudaMemoryFrames &) = delete;

  FrameRing &ring() { return ring_; }
  // Hands the element the bench's context before it starts.
  void share_with(GstElement *element) {
    GstContext *shared = gst_context_new_cuda_context(context_);
    gst_element_set_context(element, shared);
    gst_context_unref(shared);
  }

 private:
  GstCudaContext *context_ = nullptr;
  GstBufferPool *pool_ = nullptr;
  FrameRing ring_;
};
#endif

struct Measured {
  double us;
  long frames;
};

// Frames per second at the sink: pushes until the window after warm-up is
// long enough, at most `ahead` frames ahead of the sink, then drains. An
// element that holds frames until more come (max-inflight) gets more ahead.
Measured time_throughput(BenchPipeline &p, Feed &feed, const Options &options, long ahead) {
  ArrivalLog &arrivals = p.arrivals();
  long pushed = arrivals.count();
  long seen = pushed;
  Clock::time_point changed = Clock::now();  // when seen last changed, or ahead grew
  for (long k = 0;; ++k) {
    const ArrivalLog::Window w = arrivals.window();
    if (w.frames >= kMinFrames && (w.seconds >= options.seconds || w.frames >= kMaxFrames)) break;
    if (arrivals.wait_for(pushed - ahead + 1, 100ms)) {
      p.push(feed.next());
      ++pushed;
      if (k % 64 == 0) p.throw_if_bus_error();
      continue;
    }
    p.throw_if_bus_error();
    const Clock::time_point now = Clock::now();
    if (arrivals.count() != seen) {
      seen = arrivals.count();
      changed = now;
    } else if (now - changed > kStallTime) {
      throw std::runtime_error("no frame reached the sink for 30 s");
    } else if (ahead < kMaxAhead &&
               now - changed > std::max<std::chrono::duration<double>>(kHoldSuspicion, 4 * arrivals.mean_interval())) {
      ahead = std::min(2 * ahead, kMaxAhead);
      changed = now;
    }
  }
  p.end();
  const ArrivalLog::Window w = arrivals.window();
  return {w.seconds / w.frames * 1e6, w.frames};
}

// Push of a lone frame to its arrival at the sink, one frame at a time.
Measured time_latency(BenchPipeline &p, Feed &feed, const Options &options, std::string *note) {
  ArrivalLog &arrivals = p.arrivals();
  long arrived = arrivals.count();
  std::vector<double> samples;
  const Clock::time_point begin = Clock::now();
  for (long i = 0; samples.size() < 2000; ++i) {
    const Clock::time_point pushed_at = Clock::now();
    p.push(feed.next());
    if (!arrivals.wait_for(arrived + 1, kLoneFrameTime)) {
      p.throw_if_bus_error();
      throw std::runtime_error("a frame pushed alone did not reach the sink within 5 s");
    }
    ++arrived;
    if (i >= 10)  // after a warm-up
      samples.push_back(std::chrono::duration<double, std::micro>(arrivals.last() - pushed_at).count());
    if (samples.size() >= 100 && seconds_since(begin) >= options.seconds) break;
  }
  p.end();
  *note = "median of " + std::to_string(samples.size()) + "; p10 " +
          format_double(percentile(samples, 0.1), 1) + " us, p90 " +
          format_double(percentile(samples, 0.9), 1) + " us";
  return {median(samples), static_cast<long>(samples.size())};
}

// The element's own figures (its stats property), for the note.
std::string stats_note(GstElement *dut, const Elements &elements) {
  if (!elements.stats || !dut) return "";
  GstStructure *stats = nullptr;
  g_object_get(dut, "stats", &stats, nullptr);
  if (!stats) return "";
  guint64 frames = 0, device_inputs = 0, device_outputs = 0;
  double gpu = NAN, upload = NAN, download = NAN;
  gst_structure_get_uint64(stats, "frames", &frames);
  gst_structure_get_uint64(stats, "device-inputs", &device_inputs);
  gst_structure_get_uint64(stats, "device-outputs", &device_outputs);
  gst_structure_get_double(stats, "gpu-time-mean-us", &gpu);
  gst_structure_get_double(stats, "upload-time-mean-us", &upload);
  gst_structure_get_double(stats, "download-time-mean-us", &download);
  gst_structure_free(stats);
  return "element stats: gpu " + format_double(gpu, 1) + " us, upload " + format_double(upload, 1) +
         " us, download " + format_double(download, 1) + " us, frames " + std::to_string(frames) +
         (device_inputs ? " (" + std::to_string(device_inputs) + " read in CUDA memory)" : "") +
         (device_outputs ? " (" + std::to_string(device_outputs) + " left in CUDA memory)" : "");
}

std::string join(const std::vector<std::string> &parts) {
  std::string text;
  for (const std::string &p : parts) {
    if (p.empty()) continue;
    if (!text.empty()) text += "; ";
    text += p;
  }
  return text;
}

std::string warnings_note(const BenchPipeline &p) {
  return p.warnings().empty() ? "" : "warning: " + p.warnings().front();
}

std::string cudagray_cuda(const Options &options) {
  return "cudagray name=dut backend=cuda cuda-device-id=" + std::to_string(options.device);
}

// The one reason every element row on CUDA is skipped, if there is one.
std::string why_no_element(const Elements &elements, const CudaState &cuda) {
  if (!elements.cudagray) return "n/a: cudagray plugin not found (set GST_PLUGIN_PATH to build/plugin)";
  if (!cuda.usable) return "skipped: " + cuda.reason;
  return "";
}

}  // namespace

Elements inspect_elements() {
  Elements e;
  if (GstElementFactory *factory = gst_element_factory_find("cudagray")) {
    e.cudagray = true;
    if (GstPlugin *plugin = gst_plugin_feature_get_plugin(GST_PLUGIN_FEATURE(factory))) {
      if (const gchar *file = gst_plugin_get_filename(plugin)) e.cudagray_file = file;
      gst_object_unref(plugin);
    }
    if (GstElement *element = gst_element_factory_create(factory, nullptr)) {
      gst_object_ref_sink(element);
      GObjectClass *klass = G_OBJECT_GET_CLASS(element);
      if (GParamSpec *spec = g_object_class_find_property(klass, "max-inflight")) {
        e.max_inflight = true;
        gchar *text = g_strdup_value_contents(g_param_spec_get_default_value(spec));
        e.max_inflight_default = text;
        g_free(text);
      }
      if (GParamSpec *spec = g_object_class_find_property(klass, "stats"))
        e.stats = G_PARAM_SPEC_VALUE_TYPE(spec) == GST_TYPE_STRUCTURE;
      gst_object_unref(element);
    }
    gst_object_unref(factory);
  }
  if (GstElementFactory *factory = gst_element_factory_find("videoconvert")) {
    e.videoconvert = true;
    gst_object_unref(factory);
  }
  return e;
}

void element_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const CudaState &cuda, std::vector<Row> *rows) {
  const std::string why_not = why_no_element(elements, cuda);
  if (!why_not.empty()) {
    record(rows, skipped_row(size, "element", "element:*", "cudagray backend=cuda (all upstreams)", why_not),
           nullptr);
    return;
  }
  FrameRing pageable;
  add_pageable_frames(&pageable, size, options, 7000);
  // Frames already on the GPU, when GStreamer's CUDA library can make them.
#ifdef CUDAGRAY_HAVE_GST_CUDA
  std::unique_ptr<CudaMemoryFrames> on_device;
  std::string why_no_device;
  try {
    on_device = std::make_unique<CudaMemoryFrames>(size, options);
  } catch (const Unavailable &e) {
    why_no_device = std::string("n/a: ") + e.what();
  } catch (const std::exception &e) {
    why_no_device = std::string("failed: ") + e.what();
  }
#else
  const std::string why_no_device = "n/a: bench built without gstreamer-cuda-1.0";
#endif
  enum class Upstream { PinnedPool, Pageable, CudaMemory };
  struct Case {
    Upstream upstream;
    int inflight;
    bool to_device;  // GRAY8 left in CUDA memory
  };
  const Upstream upstreams[] = {Upstream::PinnedPool, Upstream::Pageable, Upstream::CudaMemory};
  // max-inflight values: 1, the default (0), then any asked for; GRAY8 in
  // system memory from every upstream, then in CUDA memory from CUDA memory
  // and from the pinned pool
  std::vector<Case> cases;
  for (const bool to_device : {false, true}) {
    const std::vector<Upstream> from = to_device ? std::vector<Upstream>{Upstream::CudaMemory, Upstream::PinnedPool}
                                                 : std::vector<Upstream>(std::begin(upstreams), std::end(upstreams));
    for (const Upstream u : from)
      for (const int n : {1, 0}) cases.push_back({u, n, to_device});
    for (const Upstream u : from)
      for (const int n : options.inflight) cases.push_back({u, n, to_device});
  }
  for (const auto &[upstream, inflight, to_device] : cases) {
    const std::string inflight_key = inflight == 0 ? "default" : std::to_string(inflight);
    Row row;
    row.size = size;
    row.group = "element";
    row.format = "RGB";
    row.bytes = 4.0 * size.pixels();
    row.ceiling = "raw:pinned";
    if (upstream == Upstream::PinnedPool) {
      row.key = "element:pinned:" + inflight_key;
      row.what = "cudagray cuda, upstream in its pinned pool";
    } else if (upstream == Upstream::Pageable) {
      row.key = "element:pageable:" + inflight_key;
      row.what = "cudagray cuda, pageable upstream";
      row.peer = "raw:staging";
    } else {
      row.key = "element:device:" + inflight_key;
      row.what = "cudagray cuda, upstream in CUDA memory (zero-copy)";
      row.ceiling = "raw:device";
      row.peer = "element:pinned:" + inflight_key;
    }
    if (to_device) {  // the same upstreams, GRAY8 left in CUDA memory: no download
      const bool from_device = upstream == Upstream::CudaMemory;
      row.key = std::string("element:") + (from_device ? "device" : "pinned") + "-to-device:" + inflight_key;
      row.what = from_device ? "cudagray cuda, CUDA memory in, GRAY8 CUDA memory out"
                             : "cudagray cuda, upstream in its pinned pool, GRAY8 CUDA memory out";
      row.ceiling = from_device ? "kernel:RGB" : "raw:pinned";
      row.peer = std::string("element:") + (from_device ? "device:" : "pinned:") + inflight_key;
    }
    row.what += ", max-inflight " +
                (inflight > 0 ? std::to_string(inflight)
                              : elements.max_inflight ? "default (" + elements.max_inflight_default + ")" : "(none)");
    if ((upstream == Upstream::CudaMemory || to_device) && !why_no_device.empty()) {
      row.skipped = why_no_device;
      record(rows, row, nullptr);
      continue;
    }
    record(rows, row, [&](Row &r) {
      const bool cuda_memory = upstream == Upstream::CudaMemory;
      BenchPipeline p(cudagray_cuda(options) + (to_device ? " ! video/x-raw(memory:CUDAMemory),format=GRAY8" : ""),
                      size, cuda_memory);
      if (inflight > 0) p.set_dut_property("max-inflight", std::to_string(inflight).c_str());
#ifdef CUDAGRAY_HAVE_GST_CUDA
      if (cuda_memory) on_device->share_with(p.dut());
      FrameRing &ring = cuda_memory ? on_device->ring() : pageable;
#else
      FrameRing &ring = pageable;
#endif
      p.play();
      Feed feed(p, upstream == Upstream::PinnedPool, ring, size, options, false,
                cuda_memory ? "CUDA memory" : "pageable");
      const Measured m = time_throughput(p, feed, options, kElementAhead);
      r.us = m.us;
      r.frames = m.frames;
      r.note = join({feed.note(), stats_note(p.dut(), elements), warnings_note(p)});
    });
  }
}

void latency_rows(const FrameSize &size, const Options &options, const Elements &elements,
                  const CudaState &cuda, std::vector<Row> *rows) {
  const std::string why_not = why_no_element(elements, cuda);
  if (!why_not.empty()) {
    record(rows, skipped_row(size, "latency", "latency:*", "cudagray single-frame latency", why_not), nullptr);
    return;
  }
  FrameRing pageable;
  add_pageable_frames(&pageable, size, options, 9000);
  for (const bool pinned : {true, false}) {
    Row row;
    row.size = size;
    row.group = "latency";
    row.key = std::string("latency:") + (pinned ? "pinned" : "pageable");
    row.what = std::string("cudagray cuda latency, ") + (pinned ? "pinned pool" : "pageable") +
               ", max-inflight 1, push to sink";
    row.format = "RGB";
    row.bytes = 4.0 * size.pixels();
    row.ceiling = "raw:latency";
    row.versus_videoconvert = false;
    record(rows, row, [&](Row &r) {
      BenchPipeline p(cudagray_cuda(options), size);
      if (elements.max_inflight) p.set_dut_property("max-inflight", "1");
      p.play();
      Feed feed(p, pinned, pageable, size, options, true);
      std::string spread;
      const Measured m = time_latency(p, feed, options, &spread);
      r.us = m.us;
      r.frames = m.frames;
      r.note = join({spread, feed.note(),
                     elements.max_inflight ? "" : "element has no max-inflight property",
                     stats_note(p.dut(), elements), warnings_note(p)});
    });
  }
}

void cpu_rows(const FrameSize &size, const Options &options, const Elements &elements,
              std::vector<Row> *rows) {
  struct Variant {
    const char *key, *what;
    std::string middle;
    const char *ceiling;
    bool available;
    const char *missing;
  };
  const std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  const Variant variants[] = {
      {"videoconvert:1", "videoconvert n-threads=1",
       "videoconvert name=dut n-threads=1 ! video/x-raw,format=GRAY8", "", elements.videoconvert,
       "videoconvert not found"},
      {"videoconvert:all", "videoconvert n-threads=0 (all cores)",
       "videoconvert name=dut n-threads=0 ! video/x-raw,format=GRAY8", "videoconvert:1",
       elements.videoconvert, "videoconvert not found"},
      {"cudagray:cpu", "cudagray backend=cpu", "cudagray name=dut backend=cpu", "videoconvert:1",
       elements.cudagray, "cudagray plugin not found (set GST_PLUGIN_PATH to build/plugin)"},
  };
  FrameRing pageable;
  add_pageable_frames(&pageable, size, options, 10000);
  for (const Variant &v : variants) {
    if (!v.available) {
      record(rows, skipped_row(size, "cpu", v.key, v.what, std::string("n/a: ") + v.missing), nullptr);
      continue;
    }
    Row row;
    row.size = size;
    row.group = "cpu";
    row.key = v.key;
    row.what = v.what;
    row.format = "RGB";
    row.bytes = 4.0 * size.pixels();
    row.ceiling = v.ceiling;
    record(rows, row, [&](Row &r) {
      BenchPipeline p(v.middle, size);
      p.play();
      Feed feed(p, false, pageable, size, options, false);
      const Measured m = time_throughput(p, feed, options, kCpuAhead);
      r.us = m.us;
      r.frames = m.frames;
      const bool cudagray = std::string(v.key) == "cudagray:cpu";
      r.note = join({feed.note(), std::string(v.key) == "videoconvert:all" ? cores + " cores" : "",
                     cudagray ? stats_note(p.dut(), elements) : "", warnings_note(p)});
    });
  }
}

}  // namespace bench
