// SPDX-License-Identifier: LGPL-2.1-or-later
// Probes for the reliability and stress tests: frames counted, hashed and
// checked at a pad; the process's memory, open files and threads; how long
// the stress runs last.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "element_harness.h"
#include "process.h"

namespace cudagray::test {

// Tests run once per backend, "cpu" and "cuda"; the CUDA ones skip without
// a usable GPU.
class BackendTest : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    if (backend() == "cuda") SKIP_WITHOUT_GPU();
  }
  std::string backend() const { return GetParam(); }
};

// How much longer the stress tests run: CUDAGRAY_STRESS_SCALE=10 runs ten
// times the counts; 0.01 a hundredth (under valgrind). Never below one.
inline long scaled(long count) {
  const char *text = std::getenv("CUDAGRAY_STRESS_SCALE");
  const double scale = text ? std::atof(text) : 1.0;
  return std::max(1L, static_cast<long>(count * (scale > 0 ? scale : 1.0)));
}

using harness::proc_entries;
using harness::rss_kib;

// FNV-1a over the visible pixels of GRAY8 rows (padding left out).
inline uint64_t fnv_rows(const uint8_t *data, size_t stride, int width, int height) {
  uint64_t h = 1469598103934665603ull;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) h = (h ^ data[y * stride + x]) * 1099511628211ull;
  return h;
}

inline uint64_t gray_hash(GstBuffer *buf, int width, int height) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_GRAY8, width, height);
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buf, GST_MAP_READ)) return 0;
  const uint64_t h = fnv_rows(static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0)),
                              GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0), width, height);
  gst_video_frame_unmap(&frame);
  return h;
}

// A count that threads raise and others wait on (buffers through a probe,
// pushes that returned OK): each raise signals a condition, so a wait
// blocks until the count is reached instead of polling it.
class Count {
 public:
  Count() = default;
  Count(const Count &) = delete;
  Count &operator=(const Count &) = delete;
  Count &operator=(long value) {
    std::lock_guard<std::mutex> hold(lock_);
    value_ = value;
    raised_.notify_all();
    return *this;
  }
  long load() const {
    std::lock_guard<std::mutex> hold(lock_);
    return value_;
  }
  operator long() const { return load(); }
  long operator++() {
    std::lock_guard<std::mutex> hold(lock_);
    raised_.notify_all();
    return ++value_;
  }
  long operator++(int) { return ++*this - 1; }
  // Whether the count reached n before timeout_ms passed.
  bool wait_until(long n, int timeout_ms) const {
    std::unique_lock<std::mutex> hold(lock_);
    return raised_.wait_for(hold, std::chrono::milliseconds(timeout_ms),
                            [&] { return value_ >= n; });
  }

 private:
  mutable std::mutex lock_;
  mutable std::condition_variable raised_;
  long value_ = 0;
};

// Counts the buffers that reach a pad and, when asked, hashes each frame.
struct PadCounter {
  Count buffers;
  // buffers pushed from the thread named from_thread, when set: cudagray's
  // output task is named after its source pad, "<element>:src" (at most 15
  // characters)
  std::string from_thread;
  Count from_that_thread;
  int width = 0, height = 0;  // hash frames of this size when width > 0
  std::vector<uint64_t> hashes;
  GstClockTime last_pts = GST_CLOCK_TIME_NONE;
  bool pts_decreased = false;

  void attach(GstElement *element, const char *pad_name) {
    GstPad *pad = gst_element_get_static_pad(element, pad_name);
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, &PadCounter::probe, this, nullptr);
    gst_object_unref(pad);
  }
  static GstPadProbeReturn probe(GstPad *, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<PadCounter *>(data);
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
    if (self->width > 0) self->hashes.push_back(gray_hash(buf, self->width, self->height));
    const GstClockTime pts = GST_BUFFER_PTS(buf);
    if (GST_CLOCK_TIME_IS_VALID(self->last_pts) && GST_CLOCK_TIME_IS_VALID(pts) &&
        pts < self->last_pts)
      self->pts_decreased = true;
    self->last_pts = pts;
    if (!self->from_thread.empty()) {
      char thread[16] = "";
      pthread_getname_np(pthread_self(), thread, sizeof thread);
      if (self->from_thread == thread) ++self->from_that_thread;
    }
    ++self->buffers;
    return GST_PAD_PROBE_OK;
  }
};

// Checks every frame through a cudagray against the CPU reference (BT.601
// weights, RGB-family input) without keeping frames: at the element's sink
// pad each input is converted by convert_cpu and hashed; at its source pad
// each output must hash the same, in order.
struct FrameChecker {
  std::mutex lock;
  std::deque<uint64_t> expected;
  long checked = 0, mismatched = 0, unexpected = 0;

  void attach(GstElement *gray) {
    GstPad *sink = gst_element_get_static_pad(gray, "sink");
    gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, &FrameChecker::on_input, this, nullptr);
    gst_object_unref(sink);
    GstPad *src = gst_element_get_static_pad(gray, "src");
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, &FrameChecker::on_output, this, nullptr);
    gst_object_unref(src);
  }
  static GstPadProbeReturn on_input(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<FrameChecker *>(data);
    GstCaps *caps = gst_pad_get_current_caps(pad);
    GstVideoInfo vinfo;
    uint64_t h = 0;
    if (caps && gst_video_info_from_caps(&vinfo, caps)) {
      GstVideoFrame frame;
      if (gst_video_frame_map(&frame, &vinfo, GST_PAD_PROBE_INFO_BUFFER(info), GST_MAP_READ)) {
        const std::string format = GST_VIDEO_INFO_NAME(&vinfo);
        PixelLayout layout = PixelLayout::RGB;
        for (PixelLayout l : kRgb8Layouts)
          if (format == layout_info(l).name) layout = l;
        InputFrame in{};
        for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame) && p < 3; ++p) {
          in.plane[p] = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
          in.stride[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
        }
        std::vector<uint8_t> out(static_cast<size_t>(vinfo.width) * vinfo.height);
        convert_cpu(same_size_conversion(layout, vinfo.width, vinfo.height), in,
                    {out.data(), static_cast<size_t>(vinfo.width)}, standard_weights(Matrix::BT601),
                    1);
        h = fnv_rows(out.data(), vinfo.width, vinfo.width, vinfo.height);
        gst_video_frame_unmap(&frame);
      }
    }
    if (caps) gst_caps_unref(caps);
    std::lock_guard<std::mutex> hold(self->lock);
    self->expected.push_back(h);
    return GST_PAD_PROBE_OK;
  }
  static GstPadProbeReturn on_output(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<FrameChecker *>(data);
    GstCaps *caps = gst_pad_get_current_caps(pad);
    GstVideoInfo vinfo;
    const bool ok = caps && gst_video_info_from_caps(&vinfo, caps);
    if (caps) gst_caps_unref(caps);
    const uint64_t h =
        ok ? gray_hash(GST_PAD_PROBE_INFO_BUFFER(info), vinfo.width, vinfo.height) : 1;
    std::lock_guard<std::mutex> hold(self->lock);
    if (self->expected.empty()) {
      ++self->unexpected;
      return GST_PAD_PROBE_OK;
    }
    if (self->expected.front() != h) ++self->mismatched;
    self->expected.pop_front();
    ++self->checked;
    return GST_PAD_PROBE_OK;
  }
};

// Waits until counter reaches at least n; false after timeout_ms (a bound
// generous enough that its expiry is a failure, never a wait that is
// expected to end that way).
inline bool wait_for(const Count &counter, long n, int timeout_ms) {
  return counter.wait_until(n, timeout_ms);
}

// The same for a bare atomic, which signals nothing, so it is polled: only
// test_contract.cpp's FlushesFromAnotherThread still counts with one (issue
// 48: count with Count there, then delete this).
inline bool wait_for(const std::atomic<long> &counter, long n, int timeout_ms) {
  for (int waited = 0; counter.load(std::memory_order_acquire) < n; waited += 1) {
    if (waited >= timeout_ms) return false;
    g_usleep(1000);
  }
  return true;
}

}  // namespace cudagray::test
