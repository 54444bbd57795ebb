// SPDX-License-Identifier: LGPL-2.1-or-later
// The differential contract suite: one table of scenarios (dynamic
// pipelines, flips from the application, flushes, seeks, queries, metas),
// each run around a converter slot holding videoconvert (the control) or
// cudagray on each backend, max-inflight and output memory; cudagray's
// observable outcome must equal the control's.
#include <gst/app/gstappsink.h>
#include <gst/check/gsttestclock.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "element_harness.h"
#include "probes.h"
#include "reference.h"

namespace cudagray::test {
namespace {

constexpr GstClockTime kGenerous = 20 * GST_SECOND;
constexpr int kWidth = 64, kHeight = 48;
constexpr GstClockTime kFrame = GST_SECOND / 30;

std::string frame_caps(const char *format, int width = kWidth, int height = kHeight, int fps = 30) {
  return std::string("video/x-raw,format=") + format + ",width=" + std::to_string(width) +
         ",height=" + std::to_string(height) + ",framerate=" + std::to_string(fps) + "/1";
}

std::string yes_no(bool value) { return value ? "yes" : "no"; }

// ------------------------------------------------------------------ the slot

// What fills the converter slot: the control (backend empty) or cudagray.
struct Converter {
  std::string name;
  std::string backend;
  int max_inflight = 0;
  bool cuda_memory = false;

  bool is_control() const { return backend.empty(); }
  // How many frames the converter may hold: max-inflight, whose default
  // (0) is 4 on both backends when upstream is not live (docs/properties.md);
  // the control holds none beyond the one it is converting.
  int frames_in_flight() const { return is_control() ? 1 : max_inflight > 0 ? max_inflight : 4; }
  // Gray caps in this converter's output memory (the control's is system).
  std::string gray_caps(const std::string &format, int width = 0, int height = 0) const {
    std::string caps = cuda_memory ? "video/x-raw(memory:CUDAMemory)" : "video/x-raw";
    caps += ",format=" + format;
    if (width) caps += ",width=" + std::to_string(width) + ",height=" + std::to_string(height);
    return caps;
  }
  // The slot's description: the converter named convin, then a capsfilter
  // named convout holding caps. The control scales only where sizes change.
  std::string slot(const std::string &caps, bool sizes_change = false) const {
    std::string converter;
    if (!is_control()) {
      converter = "cudagray name=convin backend=" + backend +
                  " max-inflight=" + std::to_string(max_inflight);
    } else if (!sizes_change) {
      converter = "videoconvert name=convin";
    } else if (GstElementFactory *factory = gst_element_factory_find("videoconvertscale")) {
      gst_object_unref(factory);
      converter = "videoconvertscale name=convin";
    } else {
      converter = "videoscale name=convin ! videoconvert name=convin2";
    }
    return converter + " ! capsfilter name=convout caps=\"" + caps + "\"";
  }
  // A new instance of the slot's converter (the control where sizes do
  // not change), to put in the place of another.
  GstElement *make() const {
    if (is_control()) return gst_element_factory_make("videoconvert", nullptr);
    GstElement *element = gst_element_factory_make("cudagray", nullptr);
    gst_util_set_object_arg(G_OBJECT(element), "backend", backend.c_str());
    g_object_set(element, "max-inflight", static_cast<guint>(max_inflight), nullptr);
    return element;
  }
  // How far from the formula a pixel from 8-bit RGB may be, below and
  // above: cudagray is the formula; videoconvert's GRAY8 truncates its 8-bit
  // weights, so is the same or 1 below (docs/formats.md, "Compared with
  // videoconvert"), and its GRAY16 was measured within 300 of it either way
  // (two GRAY8 levels allowed).
  std::pair<unsigned, unsigned> rgb_slack(int depth) const {
    if (!is_control()) return {0, 0};
    return depth == 8 ? std::make_pair(1u, 0u) : std::make_pair(514u, 514u);
  }
};

// Where a message came from, the same for the control and cudagray: the
// converter, its capsfilter, or the factory of any other element.
std::string role_of(GstObject *source) {
  const std::string name = GST_OBJECT_NAME(source);
  if (name.rfind("convout", 0) == 0) return "converter's capsfilter";
  if (name.rfind("convin", 0) == 0) return "converter";
  if (GST_IS_ELEMENT(source))
    if (GstElementFactory *factory = gst_element_get_factory(GST_ELEMENT(source)))
      return GST_OBJECT_NAME(factory);
  return name;
}

// ------------------------------------------------------------------ outcome

// What a scenario observed, as "what: value" lines compared whole; details
// (message texts, latencies) are shown beside a difference, not compared.
struct Outcome {
  std::vector<std::string> facts;
  std::string details;
  // buffers at the sink, and those pushed by cudagray's output task (its
  // thread is named after the pad, "convin:src"): reported, not compared
  long frames_out = 0, pushed_by_task = 0;
  template <class T>
  void note(const std::string &what, const T &value) {
    std::ostringstream line;
    line << what << ": " << value;
    facts.push_back(line.str());
  }
  std::string text() const {
    std::string all;
    for (const std::string &f : facts) all += f + "\n";
    return all;
  }
};

// Integers as runs: "0-4 9 12-10".
std::string runs(const std::vector<long> &values) {
  std::string text;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    const long step = i + 1 < values.size() ? values[i + 1] - values[i] : 0;
    if (step == 1 || step == -1)
      while (j + 1 < values.size() && values[j + 1] - values[j] == step) ++j;
    text += (text.empty() ? "" : " ") + std::to_string(values[i]);
    if (j > i) text += "-" + std::to_string(values[j]);
    i = j + 1;
  }
  return text.empty() ? "none" : text;
}

// Items in order, a repeated one once with its count: "a x3, b".
template <class T>
std::string listed(const T &items) {
  std::vector<std::pair<std::string, int>> counted;
  for (const std::string &item : items)
    if (!counted.empty() && counted.back().first == item)
      ++counted.back().second;
    else
      counted.emplace_back(item, 1);
  std::string text;
  for (const auto &[item, count] : counted)
    text += (text.empty() ? "" : ", ") + item + (count > 1 ? " x" + std::to_string(count) : "");
  return text.empty() ? "none" : text;
}

// ------------------------------------------------------------------ the bus

// Errors, warnings, QoS messages and EOS as posted, kept from the sync
// handler (the messages are dropped there, so none holds the pipeline).
struct BusRecord {
  std::mutex lock;
  std::condition_variable changed;
  std::vector<std::string> errors, warnings, qos;
  std::vector<std::pair<std::string, GstClockTime>> qos_at;  // role, running time
  std::string texts;
  bool eos = false;
  std::string ignored_warning;  // a warning text that is timing noise in a scenario

  static GstBusSyncReply on_message(GstBus *, GstMessage *message, gpointer data) {
    auto *self = static_cast<BusRecord *>(data);
    std::lock_guard<std::mutex> hold(self->lock);
    const std::string role = role_of(GST_MESSAGE_SRC(message));
    switch (GST_MESSAGE_TYPE(message)) {
      case GST_MESSAGE_ERROR:
      case GST_MESSAGE_WARNING: {
        const BusMessage m = read_message(message);
        if (m.is_error || m.text != self->ignored_warning) {
          (m.is_error ? self->errors : self->warnings)
              .push_back("[" + role + "] " + m.domain + " " + std::to_string(m.code));
          self->texts += std::string(m.is_error ? "error" : "warning") + " [" + role + "] " +
                         m.text + " | " + m.debug + "\n";
        }
        break;
      }
      case GST_MESSAGE_QOS: {
        GstFormat format;
        guint64 processed = 0, dropped = 0;
        gst_message_parse_qos_stats(message, &format, &processed, &dropped);
        self->qos.push_back("[" + role + "] " + gst_format_get_name(format) + " processed=" +
                            std::to_string(processed) + " dropped=" + std::to_string(dropped));
        GstClockTime running_time;
        gst_message_parse_qos(message, nullptr, &running_time, nullptr, nullptr, nullptr);
        self->qos_at.emplace_back(role, running_time);
        break;
      }
      case GST_MESSAGE_EOS: self->eos = true; break;
      default: break;
    }
    self->changed.notify_all();
    gst_message_unref(message);  // a sync handler that drops a message owns it
    return GST_BUS_DROP;
  }
  // Waits until an error came from a source whose role starts with role;
  // whether one did.
  bool wait_error_from(const std::string &role, GstClockTime timeout = kGenerous) {
    std::unique_lock<std::mutex> hold(lock);
    return changed.wait_for(hold, std::chrono::nanoseconds(timeout), [&] {
      return std::any_of(errors.begin(), errors.end(),
                         [&](const std::string &e) { return e.rfind("[" + role, 0) == 0; });
    });
  }
  // Waits for EOS or an error; whether EOS came.
  bool wait_end(GstClockTime timeout = kGenerous) {
    std::unique_lock<std::mutex> hold(lock);
    changed.wait_for(hold, std::chrono::nanoseconds(timeout),
                     [&] { return eos || !errors.empty(); });
    return eos;
  }
  bool has_error() {
    std::lock_guard<std::mutex> hold(lock);
    return !errors.empty();
  }
};

// ------------------------------------------------------------------ frames

// The 16-bit gray the documented formula makes of a frame (BT.601, the
// default), found at the converter's sink pad by timestamp.
struct Expectations {
  struct Source {
    int width = 0, height = 0;
    bool from_rgb = false;
    std::vector<uint16_t> g16;  // empty: a format the check does not read
  };
  std::mutex lock;
  std::map<GstClockTime, Source> by_pts;
  std::set<std::string> formats_in;
  std::set<guint32> seqnums_in;  // of the events that came in
  GstClockTime first_pts = GST_CLOCK_TIME_NONE;

  void attach(GstElement *converter) {
    GstPad *pad = gst_element_get_static_pad(converter, "sink");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, this, nullptr);
    gst_pad_add_probe(
        pad, GstPadProbeType(GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM | GST_PAD_PROBE_TYPE_EVENT_FLUSH),
        on_event, this, nullptr);
    gst_object_unref(pad);
  }
  static GstPadProbeReturn on_event(GstPad *, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<Expectations *>(data);
    std::lock_guard<std::mutex> hold(self->lock);
    self->seqnums_in.insert(gst_event_get_seqnum(GST_PAD_PROBE_INFO_EVENT(info)));
    return GST_PAD_PROBE_OK;
  }
  // Whether an event out carries the seqnum of one that came in (an event
  // made from another keeps its seqnum: GstValidate checks EOS, segments
  // and flushes for it).
  bool seqnum_came_in(guint32 seqnum) {
    std::lock_guard<std::mutex> hold(lock);
    return seqnums_in.count(seqnum) > 0;
  }
  static GstPadProbeReturn on_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<Expectations *>(data);
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
    GstCaps *caps = gst_pad_get_current_caps(pad);
    GstVideoInfo vinfo;
    Source source;
    std::string format = "unknown";
    if (caps && gst_video_info_from_caps(&vinfo, caps)) {
      format = GST_VIDEO_INFO_NAME(&vinfo);
      source = read(vinfo, buf);
    }
    if (caps) gst_caps_unref(caps);
    std::lock_guard<std::mutex> hold(self->lock);
    self->formats_in.insert(format + " " + std::to_string(GST_VIDEO_INFO_WIDTH(&vinfo)) + "x" +
                            std::to_string(GST_VIDEO_INFO_HEIGHT(&vinfo)));
    if (!GST_CLOCK_TIME_IS_VALID(self->first_pts)) self->first_pts = GST_BUFFER_PTS(buf);
    self->by_pts[GST_BUFFER_PTS(buf)] = std::move(source);
    return GST_PAD_PROBE_OK;
  }
  static Source read(const GstVideoInfo &vinfo, GstBuffer *buf) {
    Source s;
    s.width = GST_VIDEO_INFO_WIDTH(&vinfo);
    s.height = GST_VIDEO_INFO_HEIGHT(&vinfo);
    const GstVideoFormat format = GST_VIDEO_INFO_FORMAT(&vinfo);
    const bool rgb8 = GST_VIDEO_INFO_IS_RGB(&vinfo) && GST_VIDEO_INFO_COMP_DEPTH(&vinfo, 0) == 8;
    if (!rgb8 && format != GST_VIDEO_FORMAT_GRAY8 && format != GST_VIDEO_FORMAT_GRAY16_LE) return s;
    GstVideoFrame frame;
    if (!gst_video_frame_map(&frame, &vinfo, buf, GST_MAP_READ)) return s;
    const Q16 w = q16_of(kWeightChoices[0]);
    s.from_rgb = rgb8;
    for (int y = 0; y < s.height; ++y)
      for (int x = 0; x < s.width; ++x) {
        auto at = [&](int c) {
          return static_cast<const uint8_t *>(GST_VIDEO_FRAME_COMP_DATA(&frame, c)) +
                 y * GST_VIDEO_FRAME_COMP_STRIDE(&frame, c) +
                 x * GST_VIDEO_FRAME_COMP_PSTRIDE(&frame, c);
        };
        if (rgb8)
          s.g16.push_back(rgb_to_16(*at(0), *at(1), *at(2), 8, w));
        else if (format == GST_VIDEO_FORMAT_GRAY8)
          s.g16.push_back(replicate16(*at(0), 8));
        else
          s.g16.push_back(at(0)[0] | at(0)[1] << 8);
      }
    gst_video_frame_unmap(&frame);
    return s;
  }
  // The source of the frame with this timestamp, taken out (a second frame
  // out with the same timestamp has none).
  bool take(GstClockTime pts, Source *source) {
    std::lock_guard<std::mutex> hold(lock);
    auto it = by_pts.find(pts);
    if (it == by_pts.end()) return false;
    *source = std::move(it->second);
    by_pts.erase(it);
    return true;
  }
  std::string formats() {
    std::lock_guard<std::mutex> hold(lock);
    return listed(formats_in);
  }
};

// What reached the sink, in order: buffers (checked against the formula
// when their size is the input's) and the events that shape a stream.
struct FrameLog {
  const Converter &converter;
  Expectations &expected;
  GstClockTime frame;
  std::mutex lock;
  std::condition_variable changed;
  std::vector<std::string> items;  // "b<frame index>", "segment ...", "gap<index>", "eos", ...
  std::vector<long> indices, discont;
  std::set<std::string> caps_out;
  long off_formula = 0, without_input = 0, checked = 0;
  long pushed_by_task = 0;  // buffers that came on the thread "convin:src"

  FrameLog(const Converter &c, Expectations &e, GstClockTime duration)
      : converter(c), expected(e), frame(duration) {}
  void attach(GstElement *sink) {
    GstPad *pad = gst_element_get_static_pad(sink, "sink");
    gst_pad_add_probe(
        pad,
        GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM |
                        GST_PAD_PROBE_TYPE_EVENT_FLUSH),
        on_item, this, nullptr);
    gst_object_unref(pad);
  }
  long index_of(GstClockTime t) const {
    return GST_CLOCK_TIME_IS_VALID(t) ? static_cast<long>((t + frame / 2) / frame) : -1;
  }
  static GstPadProbeReturn on_item(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<FrameLog *>(data);
    if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
      self->judge(pad, GST_PAD_PROBE_INFO_BUFFER(info));
      return GST_PAD_PROBE_OK;
    }
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    std::string item;
    switch (GST_EVENT_TYPE(event)) {
      case GST_EVENT_SEGMENT: {
        const GstSegment *s;
        gst_event_parse_segment(event, &s);
        std::ostringstream text;
        text << "segment(rate " << s->rate << ", applied " << s->applied_rate << ", from "
             << self->index_of(s->start) << " to ";
        if (GST_CLOCK_TIME_IS_VALID(s->stop))
          text << self->index_of(s->stop) << ")";
        else
          text << "the end)";
        item = text.str();
        break;
      }
      case GST_EVENT_GAP: {
        GstClockTime start, duration;
        gst_event_parse_gap(event, &start, &duration);
        item = "gap" + std::to_string(self->index_of(start));
        break;
      }
      case GST_EVENT_EOS: item = "eos"; break;
      case GST_EVENT_FLUSH_STOP: item = "flush-stop"; break;
      default: return GST_PAD_PROBE_OK;
    }
    if (!self->expected.seqnum_came_in(gst_event_get_seqnum(event))) item += " with a new seqnum";
    std::lock_guard<std::mutex> hold(self->lock);
    self->items.push_back(item);
    self->changed.notify_all();
    return GST_PAD_PROBE_OK;
  }
  void judge(GstPad *pad, GstBuffer *buf) {
    GstCaps *caps = gst_pad_get_current_caps(pad);
    GstVideoInfo vinfo;
    const bool known = caps && gst_video_info_from_caps(&vinfo, caps);
    std::string described = "unknown caps";
    if (known) {
      const bool cuda =
          gst_caps_features_contains(gst_caps_get_features(caps, 0), "memory:CUDAMemory");
      // the memory the converter's slot asked for is the same outcome as
      // the control's system memory; any other is not
      described = std::string(GST_VIDEO_INFO_NAME(&vinfo)) + " " +
                  std::to_string(GST_VIDEO_INFO_WIDTH(&vinfo)) + "x" +
                  std::to_string(GST_VIDEO_INFO_HEIGHT(&vinfo)) +
                  (cuda == converter.cuda_memory ? ""
                   : cuda                        ? " in CUDA memory, not asked for"
                                                 : " in system memory, not asked for");
    }
    if (caps) gst_caps_unref(caps);
    Expectations::Source source;
    const bool has_input = expected.take(GST_BUFFER_PTS(buf), &source);
    bool checked_here = false, exact = true;
    if (known && has_input && !source.g16.empty() && source.width == GST_VIDEO_INFO_WIDTH(&vinfo) &&
        source.height == GST_VIDEO_INFO_HEIGHT(&vinfo)) {
      const int depth = GST_VIDEO_INFO_FORMAT(&vinfo) == GST_VIDEO_FORMAT_GRAY8 ? 8 : 16;
      const auto slack = source.from_rgb ? converter.rgb_slack(depth) : std::make_pair(0u, 0u);
      GstVideoFrame frame_out;
      if (gst_video_frame_map(&frame_out, &vinfo, buf, GST_MAP_READ)) {
        checked_here = true;
        const auto *data = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame_out, 0));
        const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame_out, 0);
        for (int y = 0; y < source.height && exact; ++y)
          for (int x = 0; x < source.width && exact; ++x) {
            const uint32_t g16 = source.g16[y * source.width + x];
            const uint8_t *p = data + y * stride + x * (depth / 8);
            const unsigned want = depth == 8 ? gray8_of(g16) : g16;
            const unsigned got = depth == 8 ? p[0] : p[0] | p[1] << 8;
            exact = got <= want + slack.second && got + slack.first >= want;
          }
        gst_video_frame_unmap(&frame_out);
      }
    }
    char thread[16] = "";
    pthread_getname_np(pthread_self(), thread, sizeof thread);
    std::lock_guard<std::mutex> hold(lock);
    if (std::string(thread) == "convin:src") ++pushed_by_task;
    const long index = index_of(GST_BUFFER_PTS(buf));
    items.push_back("b" + std::to_string(index));
    indices.push_back(index);
    if (GST_BUFFER_IS_DISCONT(buf)) discont.push_back(index);
    caps_out.insert(described);
    if (!has_input) ++without_input;
    if (checked_here) ++checked;
    if (checked_here && !exact) ++off_formula;
    changed.notify_all();
  }
  long count() {
    std::lock_guard<std::mutex> hold(lock);
    return static_cast<long>(indices.size());
  }
  // Waits until at least n buffers have come; whether they did.
  bool wait_count(long n, GstClockTime timeout = kGenerous) {
    std::unique_lock<std::mutex> hold(lock);
    return changed.wait_for(hold, std::chrono::nanoseconds(timeout),
                            [&] { return static_cast<long>(indices.size()) >= n; });
  }
  bool wait_item(const std::string &item, GstClockTime timeout = kGenerous) {
    std::unique_lock<std::mutex> hold(lock);
    return changed.wait_for(hold, std::chrono::nanoseconds(timeout), [&] {
      return std::find(items.begin(), items.end(), item) != items.end();
    });
  }
  // The items, consecutive buffers as runs: "segment(...) b0-9 gap10 eos".
  std::string sequence(size_t from = 0) {
    std::lock_guard<std::mutex> hold(lock);
    std::string text;
    std::vector<long> buffers;
    auto flush_buffers = [&] {
      if (!buffers.empty()) text += (text.empty() ? "b" : " b") + runs(buffers);
      buffers.clear();
    };
    for (size_t i = from; i < items.size(); ++i) {
      if (items[i][0] == 'b') {
        buffers.push_back(std::stol(items[i].substr(1)));
        continue;
      }
      flush_buffers();
      text += (text.empty() ? "" : " ") + items[i];
    }
    flush_buffers();
    return text.empty() ? "none" : text;
  }
  size_t size() {
    std::lock_guard<std::mutex> hold(lock);
    return items.size();
  }
  // Where the items after the last one named begin; 0 when there is none.
  size_t after_last(const std::string &item) {
    std::lock_guard<std::mutex> hold(lock);
    auto last = std::find(items.rbegin(), items.rend(), item);
    return last == items.rend() ? 0 : items.rend() - last;
  }
};

// ------------------------------------------------------------------ a run

// A scenario's pipeline with its bus record and the frames in and out: the
// converter slot's input (element convin) and the sink named "sink", when
// the pipeline has them.
struct Run {
  const Converter &converter;
  Pipeline pipeline;
  BusRecord bus;
  Expectations in;
  FrameLog out;

  Run(const Converter &c, const std::string &description, GstClockTime frame = kFrame)
      : converter(c), pipeline(description), out(c, in, frame) {
    gst_bus_set_sync_handler(pipeline.bus(), BusRecord::on_message, &bus, nullptr);
    if (GstElement *convin = pipeline.by_name("convin")) in.attach(convin);
    if (GstElement *sink = pipeline.by_name("sink")) out.attach(sink);
  }
  ~Run() {
    gst_element_set_state(pipeline.get(), GST_STATE_NULL);
    gst_bus_set_sync_handler(pipeline.bus(), nullptr, nullptr, nullptr);
  }
  GstElement *element(const char *name) const { return pipeline.by_name(name); }
  bool play() const { return pipeline.play() != GST_STATE_CHANGE_FAILURE; }
  // What every scenario reports: the formula's verdict on the frames out,
  // and what the bus said.
  void report(Outcome &outcome, bool pixels = true) {
    {
      std::lock_guard<std::mutex> hold(out.lock);
      if (pixels) {
        outcome.note("frames off the formula", out.off_formula);
        outcome.note("frames out with no such frame in", out.without_input);
      }
      outcome.frames_out = static_cast<long>(out.indices.size());
      outcome.pushed_by_task = out.pushed_by_task;
    }
    std::lock_guard<std::mutex> hold(bus.lock);
    outcome.note("errors", listed(bus.errors));
    outcome.note("warnings", listed(bus.warnings));
    outcome.details += bus.texts;
  }
};

// A source pad of the test's own, linked to the converter's sink pad: the
// application pushes frames and events on it from whichever thread the
// scenario says.
struct PadSource {
  GstPad *pad;
  explicit PadSource(GstElement *converter, const std::string &caps) {
    pad = gst_pad_new("testsrc", GST_PAD_SRC);
    gst_pad_set_active(pad, TRUE);
    GstPad *sink = gst_element_get_static_pad(converter, "sink");
    EXPECT_EQ(gst_pad_link(pad, sink), GST_PAD_LINK_OK);
    gst_object_unref(sink);
    gst_pad_push_event(pad, gst_event_new_stream_start("contract"));
    GstCaps *c = gst_caps_from_string(caps.c_str());
    gst_pad_push_event(pad, gst_event_new_caps(c));
    gst_caps_unref(c);
    segment(1.0, 0, GST_CLOCK_TIME_NONE);
  }
  ~PadSource() {
    if (GstPad *peer = gst_pad_get_peer(pad)) {
      gst_pad_unlink(pad, peer);
      gst_object_unref(peer);
    }
    gst_pad_set_active(pad, FALSE);
    gst_object_unref(pad);
  }
  bool segment(double rate, GstClockTime start, GstClockTime stop,
               GstSegmentFlags flags = GST_SEGMENT_FLAG_NONE) {
    GstSegment s;
    gst_segment_init(&s, GST_FORMAT_TIME);
    s.rate = rate;
    s.start = start;
    s.stop = stop;
    s.time = start;
    s.position = rate > 0 ? start : stop;
    s.flags = flags;
    return gst_pad_push_event(pad, gst_event_new_segment(&s));
  }
  GstFlowReturn push(GstBuffer *buf, long index) {
    GST_BUFFER_PTS(buf) = index * kFrame;
    GST_BUFFER_DURATION(buf) = kFrame;
    return gst_pad_push(pad, buf);
  }
  GstFlowReturn push_bgrx(long index) {
    return push(buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight)), index);
  }
  bool event(GstEvent *event) { return gst_pad_push_event(pad, event); }
};

// Pulls appsink "sink" until EOS, an error, or kGenerous without a sample,
// calling after(n) once the n-th sample is out; how many came.
long pull_all(
    Run &run, const std::function<void(long)> &after = [](long) {}) {
  GstAppSink *sink = GST_APP_SINK(run.element("sink"));
  long pulled = 0;
  auto last = std::chrono::steady_clock::now();
  while (!gst_app_sink_is_eos(sink) && !run.bus.has_error() &&
         std::chrono::steady_clock::now() - last < std::chrono::nanoseconds(kGenerous)) {
    GstSample *sample = gst_app_sink_try_pull_sample(sink, 50 * GST_MSECOND);
    if (!sample) continue;
    gst_sample_unref(sample);
    last = std::chrono::steady_clock::now();
    after(++pulled);
  }
  return pulled;
}

void set_caps(GstElement *capsfilter, const std::string &caps) {
  GstCaps *c = gst_caps_from_string(caps.c_str());
  g_object_set(capsfilter, "caps", c, nullptr);
  gst_caps_unref(c);
}

// Holds the buffers that cudagray's output task pushes through a pad until
// released; buffers pushed by any other thread (all of the control's, and
// cudagray's own when it pushes on the streaming thread) pass. cudagray then
// keeps frames in flight, whatever the machine's speed, while the
// application acts.
struct TaskHold {
  std::mutex lock;
  std::condition_variable changed;
  bool holding = true;
  long arrived = 0;  // buffers that reached the pad, held or not

  void attach(GstElement *element, const char *pad_name) {
    GstPad *pad = gst_element_get_static_pad(element, pad_name);
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, this, nullptr);
    gst_object_unref(pad);
  }
  static GstPadProbeReturn on_buffer(GstPad *, GstPadProbeInfo *, gpointer data) {
    auto *self = static_cast<TaskHold *>(data);
    char thread[16] = "";
    pthread_getname_np(pthread_self(), thread, sizeof thread);
    std::unique_lock<std::mutex> hold(self->lock);
    ++self->arrived;
    self->changed.notify_all();
    if (std::string(thread) == "convin:src")
      self->changed.wait_for(hold, std::chrono::nanoseconds(kGenerous),
                             [&] { return !self->holding; });
    return GST_PAD_PROBE_OK;
  }
  bool wait_arrived(long n) {
    std::unique_lock<std::mutex> hold(lock);
    return changed.wait_for(hold, std::chrono::nanoseconds(kGenerous),
                            [&] { return arrived >= n; });
  }
  void release() {
    std::lock_guard<std::mutex> hold(lock);
    holding = false;
    changed.notify_all();
  }
};

// Waits until no push is under way on pad (an IDLE probe: at once when
// none is); whether it came.
bool wait_idle(GstPad *pad) {
  struct Idle {
    std::mutex lock;
    std::condition_variable changed;
    bool idle = false;
  };
  auto idle = std::make_shared<Idle>();
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_IDLE,
      [](GstPad *, GstPadProbeInfo *, gpointer data) {
        Idle &i = **static_cast<std::shared_ptr<Idle> *>(data);
        std::lock_guard<std::mutex> hold(i.lock);
        i.idle = true;
        i.changed.notify_all();
        return GST_PAD_PROBE_REMOVE;
      },
      new std::shared_ptr<Idle>(idle),
      [](gpointer data) { delete static_cast<std::shared_ptr<Idle> *>(data); });
  std::unique_lock<std::mutex> hold(idle->lock);
  return idle->changed.wait_for(hold, std::chrono::nanoseconds(kGenerous),
                                [&] { return idle->idle; });
}

// ------------------------------------------------------------------ scenarios

// A live source feeds a tee whose second branch keeps it going; the
// converter's src pad is unlinked and linked again: frames flow again.
Outcome relink_src_pad(const Converter &c) {
  Run run(c,
          "videotestsrc is-live=true pattern=ball ! " + frame_caps("BGRx", kWidth, kHeight, 100) +
              " ! tee name=t allow-not-linked=true ! queue ! " + c.slot(c.gray_caps("GRAY8")) +
              " ! queue ! fakesink name=sink sync=false t. ! queue ! fakesink name=other "
              "sync=false",
          GST_SECOND / 100);
  PadCounter other;
  other.attach(run.element("other"), "sink");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  outcome.note("frames before unlinking", yes_no(run.out.wait_count(10)));
  GstPad *src = gst_element_get_static_pad(run.element("convin"), "src");
  GstPad *peer = gst_pad_get_peer(src);
  EXPECT_TRUE(gst_pad_unlink(src, peer));
  // the source goes on while the branch is unlinked
  outcome.note("the other branch goes on while unlinked",
               yes_no(wait_for(other.buffers, other.buffers.load() + 10, 20000)));
  const long before = run.out.count();
  EXPECT_EQ(gst_pad_link(src, peer), GST_PAD_LINK_OK);
  const bool resumed = run.out.wait_count(before + 10);
  EXPECT_TRUE(resumed) << c.name << ": no frame after relinking (" << before << " before)";
  outcome.note("frames again after relinking", yes_no(resumed));
  gst_object_unref(peer);
  gst_object_unref(src);
  gst_element_set_state(run.pipeline.get(), GST_STATE_NULL);
  run.report(outcome);
  return outcome;
}

// Tee branches holding the converter, added and removed while a live source
// plays: the first added and removed under IDLE probes, the second added
// under a BLOCK probe and removed under one after EOS has gone through it.
Outcome tee_branches(const Converter &c) {
  Run run(c,
          "videotestsrc is-live=true pattern=ball ! " + frame_caps("BGRx", kWidth, kHeight, 100) +
              " ! tee name=t allow-not-linked=true ! queue ! fakesink name=other sync=false",
          GST_SECOND / 100);
  PadCounter other;
  other.attach(run.element("other"), "sink");
  GstElement *tee = run.element("t");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  struct Probe {
    std::mutex lock;
    std::condition_variable done_changed;
    bool done = false;
    GstPad *tee_pad = nullptr, *branch_pad = nullptr;
    bool link = true;
    static GstPadProbeReturn act(GstPad *, GstPadProbeInfo *, gpointer data) {
      auto *self = static_cast<Probe *>(data);
      std::lock_guard<std::mutex> hold(self->lock);
      if (self->done) return GST_PAD_PROBE_REMOVE;
      if (self->link)
        gst_pad_link(self->tee_pad, self->branch_pad);
      else
        gst_pad_unlink(self->tee_pad, self->branch_pad);
      self->done = true;
      self->done_changed.notify_all();
      return GST_PAD_PROBE_REMOVE;
    }
    bool wait() {
      std::unique_lock<std::mutex> hold(lock);
      return done_changed.wait_for(hold, std::chrono::nanoseconds(kGenerous), [&] { return done; });
    }
  };
  for (GstPadProbeType type : {GST_PAD_PROBE_TYPE_IDLE, GST_PAD_PROBE_TYPE_BLOCK_DOWNSTREAM}) {
    const std::string how = type == GST_PAD_PROBE_TYPE_IDLE ? "IDLE" : "BLOCK";
    GError *error = nullptr;
    GstElement *branch = gst_parse_bin_from_description(
        ("queue ! " + c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false").c_str(),
        TRUE, &error);
    if (!branch) {
      ADD_FAILURE() << error->message;
      g_error_free(error);
      return outcome;
    }
    const long before = run.out.count();
    GstElement *convin = gst_bin_get_by_name(GST_BIN(branch), "convin");
    GstElement *sink = gst_bin_get_by_name(GST_BIN(branch), "sink");
    run.in.attach(convin);
    run.out.attach(sink);
    gst_object_unref(convin);
    gst_object_unref(sink);
    gst_bin_add(GST_BIN(run.pipeline.get()), branch);
    gst_element_sync_state_with_parent(branch);
    Probe add;
    add.tee_pad = gst_element_request_pad_simple(tee, "src_%u");
    add.branch_pad = gst_element_get_static_pad(branch, "sink");
    gst_pad_add_probe(add.tee_pad, type, Probe::act, &add, nullptr);
    outcome.note("linked under " + how, yes_no(add.wait()));
    outcome.note("frames through the branch added under " + how,
                 yes_no(run.out.wait_count(before + 10)));
    Probe remove;
    remove.link = false;
    remove.tee_pad = add.tee_pad;
    remove.branch_pad = add.branch_pad;
    gst_pad_add_probe(remove.tee_pad, type, Probe::act, &remove, nullptr);
    outcome.note("unlinked under " + how, yes_no(remove.wait()));
    if (type != GST_PAD_PROBE_TYPE_IDLE) {
      gst_pad_send_event(remove.branch_pad, gst_event_new_eos());
      outcome.note("EOS through the branch removed under " + how, yes_no(run.out.wait_item("eos")));
    }
    outcome.note("branch to NULL", gst_element_state_change_return_get_name(
                                       gst_element_set_state(branch, GST_STATE_NULL)));
    gst_bin_remove(GST_BIN(run.pipeline.get()), branch);
    gst_element_release_request_pad(tee, remove.tee_pad);
    gst_object_unref(remove.tee_pad);
    gst_object_unref(remove.branch_pad);
  }
  outcome.note("the other branch goes on",
               yes_no(wait_for(other.buffers, other.buffers.load() + 10, 20000)));
  gst_element_set_state(run.pipeline.get(), GST_STATE_NULL);
  run.report(outcome);
  return outcome;
}

// The application flips a capsfilter (convout, after the converter, or
// incaps, before it) through caps_list while frames are in flight: every
// frame comes out, in order, and every caps of the list came out. It asks
// for a flip once `every` frames have come since the last one and that one
// has been negotiated; the flip is made when no buffer is on its way from
// the source (an IDLE probe on incaps' sink pad), so that the control, which
// holds no frame, meets no buffer made for the caps before (its
// capsfilter refuses one with not-negotiated, which ends its stream),
// while whatever cudagray holds does. The appsink holds three samples, so
// that the source cannot run ahead of the flips.
Outcome flip_from_application(const Converter &c, const std::string &input_caps,
                              const std::string &output_caps, const char *flipped,
                              const std::vector<std::string> &caps_list, int frames, int every,
                              bool sizes_change) {
  Run run(c, "videotestsrc pattern=ball num-buffers=" + std::to_string(frames) +
                 " ! capsfilter name=incaps caps=\"" + input_caps + "\" ! " +
                 c.slot(output_caps, sizes_change) +
                 " ! appsink name=sink sync=false max-buffers=3 drop=false");
  // GstBaseTransform warns when the capsfilter it asks is being changed at
  // that moment and the answer fails; it tries again and nothing is lost.
  run.bus.ignored_warning = "not negotiated";
  GstElement *filter = run.element(flipped);
  // The old caps stay accepted until the new ones are negotiated: with the
  // default (immediate) mode a buffer already past the control's
  // renegotiation is refused and ends its stream in some runs (1 in 9 here).
  gst_util_set_object_arg(G_OBJECT(filter), "caps-change-mode", "delayed");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  struct Flip {
    GstElement *filter;
    std::string caps;
    std::atomic<bool> pending{false};
    static GstPadProbeReturn when_idle(GstPad *, GstPadProbeInfo *, gpointer data) {
      auto *self = static_cast<Flip *>(data);
      // setting the caps pushes events through this pad, calling this again
      if (self->pending.exchange(false)) set_caps(self->filter, self->caps);
      return GST_PAD_PROBE_REMOVE;
    }
  } flip{filter, ""};
  GstPad *negotiated = gst_element_get_static_pad(filter, "src");
  GstPad *source_side = gst_element_get_static_pad(run.element("incaps"), "sink");
  size_t target = 0;
  long flipped_at = 0;
  const long pulled = pull_all(run, [&](long n) {
    if (n - flipped_at < every || flip.pending) return;
    GstCaps *current = gst_pad_get_current_caps(negotiated);
    GstCaps *wanted = gst_caps_from_string(caps_list[target].c_str());
    const bool settled = current && gst_caps_is_subset(current, wanted);
    gst_caps_unref(wanted);
    if (current) gst_caps_unref(current);
    if (!settled) return;
    target = (target + 1) % caps_list.size();
    flip.caps = caps_list[target];
    flip.pending = true;
    gst_pad_add_probe(source_side, GST_PAD_PROBE_TYPE_IDLE, Flip::when_idle, &flip, nullptr);
    flipped_at = n;
  });
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  gst_element_set_state(run.pipeline.get(), GST_STATE_NULL);  // before flip goes
  gst_object_unref(source_side);
  gst_object_unref(negotiated);
  EXPECT_EQ(pulled, frames) << c.name;
  outcome.note("frames pulled", pulled);
  outcome.note("frames out", runs(run.out.indices));
  const std::string input = run.in.formats();
  outcome.note("input", input);
  outcome.note("output", listed(run.out.caps_out));
  const size_t distinct = std::string(flipped) == "incaps"
                              ? std::count(input.begin(), input.end(), ',') + 1
                              : run.out.caps_out.size();
  EXPECT_EQ(distinct, caps_list.size()) << c.name << ": not every flipped caps came out";
  outcome.note("every flipped caps came out", yes_no(distinct == caps_list.size()));
  run.report(outcome);
  return outcome;
}

Outcome flip_output_format_from_bgrx(const Converter &c) {
  std::vector<std::string> list = {c.gray_caps("GRAY8"), c.gray_caps("GRAY16_LE")};
  return flip_from_application(c, frame_caps("BGRx"), list[0], "convout", list, 300, 3, false);
}

// Gray input is taken and given in system memory only (docs/formats.md):
// where a row asks for CUDA memory out, a scenario with gray in asks for
// system memory, as of the control.
Converter gray_input(const Converter &c) {
  Converter system = c;
  system.cuda_memory = false;
  return system;
}

// GRAY8 in: the converter passes it through while GRAY8 is asked.
Outcome flip_output_format_from_gray8(const Converter &c) {
  const Converter g = gray_input(c);
  std::vector<std::string> list = {g.gray_caps("GRAY8"), g.gray_caps("GRAY16_LE")};
  return flip_from_application(g, frame_caps("GRAY8"), list[0], "convout", list, 300, 3, false);
}

// GRAY8 640x360 in, the size after the converter flipped between 640x360
// (passthrough) and 320x180.
Outcome flip_output_size_through_passthrough(const Converter &c) {
  const Converter g = gray_input(c);
  std::vector<std::string> list = {g.gray_caps("GRAY8", 640, 360), g.gray_caps("GRAY8", 320, 180)};
  return flip_from_application(g, frame_caps("GRAY8", 640, 360), list[0], "convout", list, 200, 2,
                               true);
}

// The input flipped between formats (gray among them) and sizes; the output
// follows the input's size.
Outcome flip_input_format_and_size(const Converter &c) {
  const Converter g = gray_input(c);
  std::vector<std::string> list = {frame_caps("BGRx"), frame_caps("GRAY8"),
                                   frame_caps("RGB", 96, 72), frame_caps("GRAY8", 96, 72)};
  return flip_from_application(g, list[0], g.gray_caps("GRAY8"), "incaps", list, 300, 3, false);
}

// The input's caps change right behind frames in flight: ten rounds of four
// caps (a format, a size, gray passed through, an odd size), five frames of
// each pushed back to back: every frame out, in order, each by the formula
// of its own caps.
Outcome input_caps_flips_in_flight(const Converter &c) {
  const Converter g = gray_input(c);
  Run run(g, g.slot(g.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  struct Input {
    const char *format;
    PixelLayout layout;
    int width, height;
  };
  const Input inputs[] = {{"BGRx", PixelLayout::BGRx, kWidth, kHeight},
                          {"RGB", PixelLayout::RGB, 96, 72},
                          {"GRAY8", PixelLayout::Luma, kWidth, kHeight},
                          {"BGRx", PixelLayout::BGRx, 33, 17}};
  long index = 0, refused = 0;
  for (int round = 0; round < 10; ++round)
    for (const Input &input : inputs) {
      GstCaps *caps =
          gst_caps_from_string(frame_caps(input.format, input.width, input.height).c_str());
      if (!src.event(gst_event_new_caps(caps))) ++refused;
      gst_caps_unref(caps);
      for (int i = 0; i < 5; ++i) {
        GstBuffer *buf = buffer_for(random_frame(input.layout, input.width, input.height));
        // the luma layout's meta names no format: this one is GRAY8
        gst_buffer_get_video_meta(buf)->format = gst_video_format_from_string(input.format);
        if (src.push(buf, index++) != GST_FLOW_OK) ++refused;
      }
    }
  outcome.note("caps or frames refused", refused);
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("frames out", runs(run.out.indices));
  outcome.note("input", run.in.formats());
  outcome.note("output", listed(run.out.caps_out));
  outcome.note("frames checked", run.out.checked);
  run.report(outcome);
  return outcome;
}

// Downstream answers a new ALLOCATION with another pool mid-stream (it sent
// RECONFIGURE after frame 5): frames 0-5 come from the first pool, 6-11
// from the second, whose rows are padded (a video meta says so); every
// frame by the formula. In system memory, where downstream's pool is used.
Outcome new_pool_mid_stream(const Converter &c) {
  const Converter g = gray_input(c);
  Run run(g, g.slot(g.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  struct Pools {
    std::mutex lock;
    int generation = 0;
    GstBufferPool *pools[2] = {nullptr, nullptr};
    std::vector<std::string> used;
    // the pool of this generation, made for the caps asked the first time
    static GstBufferPool *make(GstCaps *caps, int padding) {
      GstVideoInfo info;
      if (!caps || !gst_video_info_from_caps(&info, caps)) return nullptr;
      GstVideoAlignment align;
      gst_video_alignment_reset(&align);
      align.padding_right = padding;
      gst_video_info_align(&info, &align);
      GstBufferPool *pool = gst_video_buffer_pool_new();
      GstStructure *config = gst_buffer_pool_get_config(pool);
      gst_buffer_pool_config_set_params(config, caps, GST_VIDEO_INFO_SIZE(&info), 2, 0);
      gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_META);
      gst_buffer_pool_config_add_option(config, GST_BUFFER_POOL_OPTION_VIDEO_ALIGNMENT);
      gst_buffer_pool_config_set_video_alignment(config, &align);
      gst_buffer_pool_set_config(pool, config);
      return pool;
    }
    static GstPadProbeReturn on_query(GstPad *, GstPadProbeInfo *info, gpointer data) {
      GstQuery *query = GST_PAD_PROBE_INFO_QUERY(info);
      if (GST_QUERY_TYPE(query) != GST_QUERY_ALLOCATION) return GST_PAD_PROBE_OK;
      auto *self = static_cast<Pools *>(data);
      GstCaps *caps;
      gst_query_parse_allocation(query, &caps, nullptr);
      std::lock_guard<std::mutex> hold(self->lock);
      GstBufferPool *&pool = self->pools[self->generation];
      if (!pool) pool = make(caps, self->generation == 0 ? 0 : 13);
      if (!pool) return GST_PAD_PROBE_OK;
      GstStructure *config = gst_buffer_pool_get_config(pool);
      guint size;
      gst_buffer_pool_config_get_params(config, nullptr, &size, nullptr, nullptr);
      gst_structure_free(config);
      gst_query_add_allocation_pool(query, pool, size, 2, 0);
      gst_query_add_allocation_meta(query, GST_VIDEO_META_API_TYPE, nullptr);
      return GST_PAD_PROBE_HANDLED;
    }
    static GstPadProbeReturn on_buffer(GstPad *, GstPadProbeInfo *info, gpointer data) {
      auto *self = static_cast<Pools *>(data);
      GstBufferPool *from = GST_PAD_PROBE_INFO_BUFFER(info)->pool;
      std::lock_guard<std::mutex> hold(self->lock);
      self->used.push_back(from && from == self->pools[0]   ? "first pool"
                           : from && from == self->pools[1] ? "second pool"
                                                            : "another pool");
      return GST_PAD_PROBE_OK;
    }
  } pools;
  GstPad *sink = gst_element_get_static_pad(run.element("sink"), "sink");
  gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM, Pools::on_query, &pools, nullptr);
  gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, Pools::on_buffer, &pools, nullptr);
  Outcome outcome;
  EXPECT_TRUE(run.play());
  {
    PadSource src(run.element("convin"), frame_caps("BGRx"));
    for (long i = 0; i < 6; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
    {
      std::lock_guard<std::mutex> hold(pools.lock);
      pools.generation = 1;
    }
    outcome.note("RECONFIGURE sent", yes_no(gst_pad_push_event(sink, gst_event_new_reconfigure())));
    for (long i = 6; i < 12; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
    src.event(gst_event_new_eos());
    outcome.note("EOS", yes_no(run.bus.wait_end()));
    gst_element_set_state(run.pipeline.get(), GST_STATE_NULL);
  }
  gst_object_unref(sink);
  {
    std::lock_guard<std::mutex> hold(pools.lock);
    outcome.note("buffers by pool", listed(pools.used));
    for (GstBufferPool *pool : pools.pools)
      if (pool) gst_object_unref(pool);
  }
  outcome.note("frames out", runs(run.out.indices));
  outcome.note("frames checked", run.out.checked);
  run.report(outcome);
  return outcome;
}

// Flushing seeks on a playing pipeline with frames in flight: each answered,
// the segment of each seek downstream, then frames from its position, and
// EOS at the end.
Outcome flushing_seeks(const Converter &c) {
  Run run(c, "videotestsrc name=src pattern=ball ! " + frame_caps("BGRx") + " ! " +
                 c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  outcome.note("frames before seeking", yes_no(run.out.wait_count(10)));
  std::vector<long> firsts;
  for (int i = 0; i < 20; ++i) {
    const size_t mark = run.out.size();
    const long position = (i * 7) % 40;
    EXPECT_TRUE(gst_element_seek_simple(run.pipeline.get(), GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH,
                                        position * kFrame))
        << "seek " << i;
    EXPECT_EQ(gst_element_get_state(run.pipeline.get(), nullptr, nullptr, kGenerous),
              GST_STATE_CHANGE_SUCCESS);
    // the first buffer after this seek's flush and segment (prerolling took one)
    std::lock_guard<std::mutex> hold(run.out.lock);
    const auto &items = run.out.items;
    auto flushed = std::find(items.begin() + mark, items.end(), "flush-stop");
    auto segment = std::find_if(flushed, items.end(), [](const std::string &item) {
      return item.rfind("segment", 0) == 0;
    });
    auto first =
        std::find_if(segment, items.end(), [](const std::string &item) { return item[0] == 'b'; });
    firsts.push_back(first == items.end() ? -1 : std::stol(first->substr(1)));
  }
  outcome.note("first frame after each seek", runs(firsts));
  gst_element_send_event(run.pipeline.get(), gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  run.report(outcome);
  return outcome;
}

// A storm of flushing seeks from another thread while frames flow: sixty
// back to back, none waiting for frames between them, the last with a stop.
// Each is answered; after the last flush, the frames from its start to its
// stop, then EOS.
Outcome seek_storm(const Converter &c) {
  Run run(c, "videotestsrc name=src pattern=ball ! " + frame_caps("BGRx") + " ! " +
                 c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  outcome.note("frames before seeking", yes_no(run.out.wait_count(10)));
  int answered = 0;
  std::thread seeker([&] {
    for (int i = 0; i < 60; ++i)
      answered += gst_element_seek_simple(run.pipeline.get(), GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH,
                                          ((i * 13) % 50) * kFrame);
    answered += gst_element_seek(run.pipeline.get(), 1.0, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH,
                                 GST_SEEK_TYPE_SET, 40 * kFrame, GST_SEEK_TYPE_SET, 70 * kFrame);
  });
  seeker.join();
  outcome.note("seeks answered", answered);
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("state after the seeks",
               gst_element_state_change_return_get_name(
                   gst_element_get_state(run.pipeline.get(), nullptr, nullptr, kGenerous)));
  outcome.note("after the last flush", run.out.sequence(run.out.after_last("flush-stop")));
  run.report(outcome);
  return outcome;
}

// A flushing seek while downstream refused a frame that cudagray holds:
// frames stay in flight (TaskHold) while the application changes the caps
// after the converter (the old ones refused from then on), then the frame
// held is refused and waits to be converted again on the streaming thread,
// which is idle; a flush comes from upstream meanwhile. After it, the new
// frames come out in the new caps, then EOS; nothing hangs. Frames in
// flight before the flush may be dropped by it, so only what follows it is
// compared.
Outcome flush_while_refused(const Converter &c) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  // the capsfilter warns when a buffer of the caps it dropped meets it
  run.bus.ignored_warning = "not negotiated";
  gst_util_set_object_arg(G_OBJECT(run.element("convout")), "caps-change-mode", "immediate");
  TaskHold hold;
  hold.attach(run.element("sink"), "sink");
  PadCounter at_filter;
  at_filter.attach(run.element("convout"), "sink");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  // within max-inflight: the pushes return while the output task is held
  const long frames = std::min(c.frames_in_flight(), 3);
  for (long i = 0; i < frames; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  outcome.note("the first frame reached the sink", yes_no(hold.wait_arrived(1)));
  set_caps(run.element("convout"), c.gray_caps("GRAY16_LE"));
  // a buffer in the caps before is refused from now on, as a sink pad that
  // no longer takes them refuses it
  GstPad *filter_sink = gst_element_get_static_pad(run.element("convout"), "sink");
  Count refused;
  gst_pad_add_probe(
      filter_sink, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *pad, GstPadProbeInfo *info, gpointer data) {
        GstCaps *caps = gst_pad_get_current_caps(pad);
        GstStructure *s = caps ? gst_caps_get_structure(caps, 0) : nullptr;
        const bool old = s && g_strcmp0(gst_structure_get_string(s, "format"), "GRAY8") == 0;
        if (caps) gst_caps_unref(caps);
        if (!old) return GST_PAD_PROBE_OK;
        gst_buffer_unref(GST_PAD_PROBE_INFO_BUFFER(info));
        GST_PAD_PROBE_INFO_DATA(info) = nullptr;
        GST_PAD_PROBE_INFO_FLOW_RETURN(info) = GST_FLOW_NOT_NEGOTIATED;
        ++*static_cast<Count *>(data);
        return GST_PAD_PROBE_HANDLED;
      },
      &refused, nullptr);
  gst_object_unref(filter_sink);
  hold.release();
  // the frame after the first met the capsfilter (refused, where it was
  // held), and no push is under way
  GstPad *converter_src = gst_element_get_static_pad(run.element("convin"), "src");
  const bool settled =
      wait_for(at_filter.buffers, std::min(frames, 2L), 20000) && wait_idle(converter_src);
  outcome.note("the refusal settled", yes_no(settled));
  outcome.details += "frames refused: " + std::to_string(refused.load()) + "\n";
  gst_object_unref(converter_src);
  EXPECT_TRUE(src.event(gst_event_new_flush_start()));
  EXPECT_TRUE(src.event(gst_event_new_flush_stop(TRUE)));
  EXPECT_TRUE(src.segment(1.0, 0, GST_CLOCK_TIME_NONE));
  for (long i = 10; i < 15; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK) << "frame " << i;
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("after the flush", run.out.sequence(run.out.after_last("flush-stop")));
  outcome.note("output", listed(run.out.caps_out));
  run.report(outcome);
  return outcome;
}

// A flushing seek while cudagray drains the frames it holds (held by
// TaskHold) for a new input caps or for an ALLOCATION query on the
// streaming thread: the flush comes from the application's thread once the
// event or query reached the converter, and ends the drain. After it, the
// new frames come out (in the new caps), then EOS; nothing hangs.
Outcome flush_while_draining(const Converter &c, bool for_caps) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  TaskHold hold;
  // before the capsfilter: a sink's FLUSH_START waits for a buffer held at its pad
  hold.attach(run.element("convout"), "sink");
  struct Arrival {
    std::mutex lock;
    std::condition_variable changed;
    GstPadProbeType type;
    bool arrived = false;
    static GstPadProbeReturn seen(GstPad *, GstPadProbeInfo *info, gpointer data) {
      auto *self = static_cast<Arrival *>(data);
      if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM) {
        if (GST_QUERY_TYPE(GST_PAD_PROBE_INFO_QUERY(info)) != GST_QUERY_ALLOCATION)
          return GST_PAD_PROBE_OK;
      } else if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) != GST_EVENT_CAPS) {
        return GST_PAD_PROBE_OK;
      }
      std::lock_guard<std::mutex> hold(self->lock);
      self->arrived = true;
      self->changed.notify_all();
      return GST_PAD_PROBE_OK;
    }
    bool wait() {
      std::unique_lock<std::mutex> hold(lock);
      return changed.wait_for(hold, std::chrono::nanoseconds(kGenerous), [&] { return arrived; });
    }
  } arrival;
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  const long frames = std::min(c.frames_in_flight(), 3);
  for (long i = 0; i < frames; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  outcome.note("the first frame reached the sink", yes_no(hold.wait_arrived(1)));
  GstPad *converter_sink = gst_element_get_static_pad(run.element("convin"), "sink");
  gst_pad_add_probe(
      converter_sink,
      for_caps ? GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM : GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      Arrival::seen, &arrival, nullptr);
  gst_object_unref(converter_sink);
  const std::string new_caps = for_caps ? frame_caps("BGRx", 96, 72) : frame_caps("BGRx");
  std::thread streaming([&] {
    if (for_caps) {
      GstCaps *caps = gst_caps_from_string(new_caps.c_str());
      src.event(gst_event_new_caps(caps));
      gst_caps_unref(caps);
    } else {
      GstCaps *caps = gst_caps_from_string(frame_caps("BGRx").c_str());
      GstQuery *allocation = gst_query_new_allocation(caps, TRUE);
      gst_caps_unref(caps);
      gst_pad_peer_query(src.pad, allocation);
      gst_query_unref(allocation);
    }
  });
  outcome.note("the drain began", yes_no(arrival.wait()));
  EXPECT_TRUE(src.event(gst_event_new_flush_start()));
  streaming.join();
  hold.release();
  EXPECT_TRUE(src.event(gst_event_new_flush_stop(TRUE)));
  EXPECT_TRUE(src.segment(1.0, 0, GST_CLOCK_TIME_NONE));
  const int width = for_caps ? 96 : kWidth, height = for_caps ? 72 : kHeight;
  for (long i = 10; i < 15; ++i)
    EXPECT_EQ(src.push(buffer_for(random_frame(PixelLayout::BGRx, width, height)), i), GST_FLOW_OK)
        << "frame " << i;
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("after the flush", run.out.sequence(run.out.after_last("flush-stop")));
  run.report(outcome);
  return outcome;
}

// Flushes from the application's thread while a second thread pushes as
// fast as it can, as a flushing seek does it: flush-start, then, holding
// the stream lock, flush-stop and a segment. Each flush waits until pushes
// have gone through and one has met it; after the last one five frames
// come out, then EOS.
Outcome flush_from_another_thread(const Converter &c) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  std::vector<TestFrame> pool;
  for (int i = 0; i < 4; ++i) pool.push_back(random_frame(PixelLayout::BGRx, kWidth, kHeight));
  std::mutex stream_lock;  // what GstPad's stream lock is to a source's task
  std::atomic<bool> stop{false};
  std::atomic<long> ok{0}, flushing{0}, other{0};
  std::thread streaming([&] {
    for (long i = 0; !stop; ++i) {
      GstFlowReturn ret;
      {
        std::lock_guard<std::mutex> hold(stream_lock);
        ret = src.push(buffer_for(pool[i % pool.size()]), i);
      }
      (ret == GST_FLOW_OK ? ok : ret == GST_FLOW_FLUSHING ? flushing : other)++;
      if (ret == GST_FLOW_FLUSHING) g_usleep(100);  // a paused task lets the seek take the lock
    }
  });
  // A flush once pushes have gone through since the last one; its
  // flush-stop once a push has met its flush-start.
  auto flush = [&] {
    const bool pushed = wait_for(ok, ok.load() + 3, 20000);
    const long met = flushing.load();
    EXPECT_TRUE(src.event(gst_event_new_flush_start()));
    const bool was_met = wait_for(flushing, met + 1, 20000);
    std::lock_guard<std::mutex> hold(stream_lock);
    EXPECT_TRUE(src.event(gst_event_new_flush_stop(TRUE)));
    EXPECT_TRUE(src.segment(1.0, 0, GST_CLOCK_TIME_NONE));
    return pushed && was_met;
  };
  bool every_flush_met = true;
  for (int i = 0; i < 20; ++i) every_flush_met = flush() && every_flush_met;
  stop = true;
  streaming.join();
  outcome.note("pushes went through and met every flush", yes_no(every_flush_met));
  outcome.note("pushes returning neither OK nor FLUSHING", other.load());
  EXPECT_TRUE(src.event(gst_event_new_flush_start()));  // drops what is still in flight
  EXPECT_TRUE(src.event(gst_event_new_flush_stop(TRUE)));
  EXPECT_TRUE(src.segment(1.0, 0, GST_CLOCK_TIME_NONE));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  // Serialized events may leave an element after the call that brought
  // them returned (a queue's do), so what counts is what the sink saw
  // after the last flush-stop.
  outcome.note("after the last flush", run.out.sequence(run.out.after_last("flush-stop")));
  run.report(outcome);
  return outcome;
}

// Downstream ends first (identity eos-after): the pipeline still ends with
// EOS, as many frames reach the sink.
Outcome eos_from_downstream_first(const Converter &c) {
  Run run(c, "videotestsrc num-buffers=300 pattern=ball ! " + frame_caps("BGRx") + " ! " +
                 c.slot(c.gray_caps("GRAY8")) +
                 " ! identity eos-after=10 ! fakesink name=sink sync=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("at the sink", run.out.sequence());
  run.report(outcome);
  return outcome;
}

// Downstream ends (identity eos-after or error-after) while the converter
// holds frames behind the one it ends on: frame 9 waits before identity
// until the converter has taken as many frames as it may hold. Then as
// eos_from_downstream_first and error_from_downstream: the same frames at
// the sink as through the control, the EOS, the errors.
Outcome downstream_ends_with_frames_in_flight(const Converter &c, const std::string &ending) {
  Run run(c, "videotestsrc num-buffers=300 pattern=ball ! " + frame_caps("BGRx") + " ! " +
                 c.slot(c.gray_caps("GRAY8")) + " ! identity name=ending " + ending +
                 "=10 ! fakesink name=sink sync=false");
  struct Hold {
    PadCounter in;
    long until;
    std::atomic<bool> held{false};
    static GstPadProbeReturn on_buffer(GstPad *, GstPadProbeInfo *info, gpointer data) {
      auto *self = static_cast<Hold *>(data);
      if (GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info)) / kFrame == 9)
        self->held = wait_for(self->in.buffers, self->until, 20000);
      return GST_PAD_PROBE_OK;
    }
  } hold;
  hold.until = 9 + c.frames_in_flight();
  hold.in.attach(run.element("convin"), "sink");
  GstPad *pad = gst_element_get_static_pad(run.element("ending"), "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, Hold::on_buffer, &hold, nullptr);
  gst_object_unref(pad);
  Outcome outcome;
  EXPECT_TRUE(run.play());
  if (ending == "eos-after") {
    outcome.note("EOS", yes_no(run.bus.wait_end()));
  } else {
    outcome.note("upstream stopped with an error", yes_no(run.bus.wait_error_from("videotestsrc")));
    outcome.note("EOS at the sink", yes_no(run.out.wait_item("eos")));
  }
  outcome.note("frames in flight behind frame 9", yes_no(hold.held.load()));
  outcome.note("at the sink", run.out.sequence());
  run.report(outcome);
  return outcome;
}

// A branch holding the converter removed from a tee under an IDLE probe
// while a source that is not live runs (so that frames are in flight in
// it), then drained with EOS as GStreamer's dynamic-pipeline guide does:
// every frame that went into the converter comes out, in order, then the
// EOS; the branch goes to NULL; the other branch goes on.
Outcome branch_removal_under_idle_probe(const Converter &c) {
  Run run(c,
          "videotestsrc pattern=ball ! " + frame_caps("BGRx") +
              " ! tee name=t ! queue ! fakesink name=other sync=false t. ! queue name=branch ! " +
              c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false");
  PadCounter other;
  other.attach(run.element("other"), "sink");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  outcome.note("frames through the branch", yes_no(run.out.wait_count(20)));
  GstPad *branch_sink = gst_element_get_static_pad(run.element("branch"), "sink");
  GstPad *tee_pad = gst_pad_get_peer(branch_sink);
  struct Unlink {
    std::mutex lock;
    std::condition_variable changed;
    bool done = false;
    GstPad *branch_sink;
    static GstPadProbeReturn when_idle(GstPad *pad, GstPadProbeInfo *, gpointer data) {
      auto *self = static_cast<Unlink *>(data);
      std::lock_guard<std::mutex> hold(self->lock);
      if (!self->done) gst_pad_unlink(pad, self->branch_sink);
      self->done = true;
      self->changed.notify_all();
      return GST_PAD_PROBE_REMOVE;
    }
  } unlink;
  unlink.branch_sink = branch_sink;
  gst_pad_add_probe(tee_pad, GST_PAD_PROBE_TYPE_IDLE, Unlink::when_idle, &unlink, nullptr);
  {
    std::unique_lock<std::mutex> hold(unlink.lock);
    outcome.note("unlinked under IDLE",
                 yes_no(unlink.changed.wait_for(hold, std::chrono::nanoseconds(kGenerous),
                                                [&] { return unlink.done; })));
  }
  gst_pad_send_event(branch_sink, gst_event_new_eos());
  outcome.note("EOS through the removed branch", yes_no(run.out.wait_item("eos")));
  bool to_null = true;
  for (const char *name : {"branch", "convin", "convout", "sink"}) {
    GstElement *element = run.element(name);
    to_null = gst_element_set_state(element, GST_STATE_NULL) == GST_STATE_CHANGE_SUCCESS && to_null;
    gst_bin_remove(GST_BIN(run.pipeline.get()), element);
  }
  outcome.note("branch to NULL", yes_no(to_null));
  GstElement *tee = run.element("t");
  gst_element_release_request_pad(tee, tee_pad);
  gst_object_unref(tee_pad);
  gst_object_unref(branch_sink);
  outcome.note("the other branch goes on",
               yes_no(wait_for(other.buffers, other.buffers.load() + 10, 20000)));
  {
    std::lock_guard<std::mutex> hold(run.in.lock);
    outcome.note("frames in that never came out", static_cast<long>(run.in.by_pts.size()));
  }
  {
    std::lock_guard<std::mutex> hold(run.out.lock);
    long next = 0;
    for (long index : run.out.indices) next += index == next;
    outcome.note("frames out from the first, in order, each once",
                 yes_no(next == static_cast<long>(run.out.indices.size())));
  }
  gst_element_set_state(run.pipeline.get(), GST_STATE_NULL);
  run.report(outcome);
  return outcome;
}

// The dynamic-pipeline element swap of GStreamer's documentation: a BLOCK
// probe on the pad before the converter sends EOS into it; once the EOS
// reaches the converter's source pad (an event probe there), the probe sets
// the converter to NULL, removes it and links a new one in its place, and
// drops the EOS. Ten swaps with frames flowing in between, then EOS: every
// frame that went into a converter comes out, once.
struct ElementSwap {
  Run &run;
  const Converter &converter;
  GstElement *current, *before, *after;
  std::mutex lock;
  std::condition_variable changed;
  int swaps = 0;

  ElementSwap(Run &r, const Converter &c)
      : run(r),
        converter(c),
        current(r.element("convin")),
        before(r.element("feed")),
        after(r.element("convout")) {}
  // Starts a swap from the streaming thread; true once it is done.
  bool swap() {
    const int done = swaps;
    GstPad *pad = gst_element_get_static_pad(before, "src");
    gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BLOCK_DOWNSTREAM, on_blocked, this, nullptr);
    gst_object_unref(pad);
    std::unique_lock<std::mutex> hold(lock);
    return changed.wait_for(hold, std::chrono::nanoseconds(kGenerous),
                            [&] { return swaps > done; });
  }
  static GstPadProbeReturn on_blocked(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    auto *self = static_cast<ElementSwap *>(data);
    gst_pad_remove_probe(pad, GST_PAD_PROBE_INFO_ID(info));
    GstPad *src = gst_element_get_static_pad(self->current, "src");
    gst_pad_add_probe(
        src, GstPadProbeType(GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
        on_event, self, nullptr);
    gst_object_unref(src);
    GstPad *sink = gst_element_get_static_pad(self->current, "sink");
    gst_pad_send_event(sink, gst_event_new_eos());
    gst_object_unref(sink);
    return GST_PAD_PROBE_OK;
  }
  static GstPadProbeReturn on_event(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
    if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_DATA(info)) != GST_EVENT_EOS) return GST_PAD_PROBE_PASS;
    auto *self = static_cast<ElementSwap *>(data);
    gst_pad_remove_probe(pad, GST_PAD_PROBE_INFO_ID(info));
    GstElement *bin = self->run.pipeline.get();
    gst_element_set_state(self->current, GST_STATE_NULL);
    gst_bin_remove(GST_BIN(bin), self->current);
    GstElement *next = self->converter.make();
    self->run.in.attach(next);
    gst_bin_add(GST_BIN(bin), next);
    const bool linked = gst_element_link_many(self->before, next, self->after, nullptr);
    EXPECT_TRUE(linked) << "the new converter could not be linked";
    gst_element_sync_state_with_parent(next);
    std::lock_guard<std::mutex> hold(self->lock);
    self->current = next;
    ++self->swaps;
    self->changed.notify_all();
    return GST_PAD_PROBE_DROP;
  }
};

Outcome element_swap_from_eos_probe(const Converter &c) {
  Run run(c, "videotestsrc name=src pattern=ball ! " + frame_caps("BGRx") +
                 " ! identity name=feed ! " + c.slot(c.gray_caps("GRAY8")) +
                 " ! fakesink name=sink sync=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  ElementSwap swapper(run, c);
  int swaps = 0;
  for (; swaps < 10; ++swaps) {
    if (!run.out.wait_count(run.out.count() + 5) || !swapper.swap()) break;
  }
  outcome.note("swaps, each after frames came out", swaps);
  gst_element_send_event(run.element("src"), gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  {
    std::lock_guard<std::mutex> hold(run.in.lock);
    outcome.note("frames in that never came out", static_cast<long>(run.in.by_pts.size()));
  }
  {
    std::lock_guard<std::mutex> hold(run.out.lock);
    long next = 0;
    for (long index : run.out.indices) next += index == next;
    outcome.note("frames out from the first, in order, each once",
                 yes_no(next == static_cast<long>(run.out.indices.size())));
  }
  run.report(outcome);
  return outcome;
}

// An appsink taking one sample (drop=false max-buffers=1) that the
// application leaves unpulled while the short stream's EOS arrives: every
// frame comes out, then the EOS, once the application pulls.
Outcome appsink_blocked_while_eos_arrives(const Converter &c) {
  Run run(c, "videotestsrc num-buffers=3 pattern=ball ! " + frame_caps("BGRx") + " ! " +
                 c.slot(c.gray_caps("GRAY8")) +
                 " ! appsink name=sink sync=false max-buffers=1 drop=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  // one queued in the appsink, the next waiting in its render
  outcome.note("the appsink stood full", yes_no(run.out.wait_count(2)));
  outcome.note("frames pulled", pull_all(run));
  outcome.note("at the sink", run.out.sequence());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  run.report(outcome);
  return outcome;
}

// Downstream fails (identity error-after) with frames in flight: its error,
// then upstream's once the flow error reaches it, and the EOS the source
// sends after it (both waited for), as through the control; no frame after
// the failed one at the sink.
Outcome error_from_downstream(const Converter &c) {
  Run run(c, "videotestsrc num-buffers=300 pattern=ball ! " + frame_caps("BGRx") + " ! " +
                 c.slot(c.gray_caps("GRAY8")) +
                 " ! identity error-after=10 ! fakesink name=sink sync=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  outcome.note("upstream stopped with an error", yes_no(run.bus.wait_error_from("videotestsrc")));
  // the source sends EOS after its error
  outcome.note("EOS at the sink", yes_no(run.out.wait_item("eos")));
  outcome.note("at the sink", run.out.sequence());
  run.report(outcome);
  return outcome;
}

// PAUSED, PLAYING and READY in turn with frames in flight (a sink that
// syncs keeps them held); in PLAYING until a new frame has come each time.
Outcome state_cycles(const Converter &c) {
  Run run(c,
          "videotestsrc name=src pattern=ball ! " + frame_caps("BGRx", kWidth, kHeight, 1000) +
              " ! " + c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=true",
          GST_MSECOND);
  Outcome outcome;
  bool changes = true, frames = true;
  for (int i = 0; i < 30; ++i)
    for (GstState state : {GST_STATE_PAUSED, GST_STATE_PLAYING, GST_STATE_READY}) {
      const long before = run.out.count();
      changes = gst_element_set_state(run.pipeline.get(), state) != GST_STATE_CHANGE_FAILURE &&
                gst_element_get_state(run.pipeline.get(), nullptr, nullptr, kGenerous) ==
                    GST_STATE_CHANGE_SUCCESS &&
                changes;
      if (state == GST_STATE_PLAYING) frames = run.out.wait_count(before + 2) && frames;
    }
  outcome.note("every state change succeeded", yes_no(changes));
  outcome.note("frames in every PLAYING", yes_no(frames));
  EXPECT_TRUE(run.play());
  const long before = run.out.count();
  outcome.note("frames after the cycles", yes_no(run.out.wait_count(before + 10)));
  gst_element_send_event(run.element("src"), gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  run.report(outcome);
  return outcome;
}

// An appsink holding two samples that the application stops pulling (until
// the pipeline stands behind it) and then pulls to the end.
Outcome appsink_stops_and_resumes(const Converter &c) {
  Run run(c, "videotestsrc num-buffers=120 pattern=ball ! " + frame_caps("BGRx") + " ! " +
                 c.slot(c.gray_caps("GRAY8")) +
                 " ! appsink name=sink sync=false max-buffers=2 drop=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  GstAppSink *sink = GST_APP_SINK(run.element("sink"));
  long pulled = 0;
  for (; pulled < 20; ++pulled) {
    GstSample *sample = gst_app_sink_try_pull_sample(sink, kGenerous);
    if (!sample) break;
    gst_sample_unref(sample);
  }
  // two queued in the appsink, one waiting in its render
  outcome.note("stood behind the stopped appsink", yes_no(run.out.wait_count(pulled + 3)));
  pulled += pull_all(run);
  outcome.note("frames pulled", pulled);
  outcome.note("frames out", runs(run.out.indices));
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  run.report(outcome);
  return outcome;
}

// QoS: after frame 1 a QoS event says frames before 1 s are late; frame 15
// is dropped, 60 and 61 come out, 60 flagged DISCONT, and the QoS message
// counts two processed and one dropped.
Outcome qos(const Converter &c) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! appsink name=sink sync=false async=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  GstAppSink *sink = GST_APP_SINK(run.element("sink"));
  for (long i : {0, 1, 15, 60, 61}) {
    if (i == 15) {
      GstPad *pad = gst_element_get_static_pad(run.element("convin"), "src");
      gst_pad_send_event(pad, gst_event_new_qos(GST_QOS_TYPE_UNDERFLOW, 1.0, 0, GST_SECOND));
      gst_object_unref(pad);
    }
    EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
    if (i == 15) continue;
    GstSample *sample = gst_app_sink_try_pull_sample(sink, kGenerous);
    EXPECT_NE(sample, nullptr) << "no frame " << i;
    if (sample) gst_sample_unref(sample);
  }
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("frames out", runs(run.out.indices));
  outcome.note("DISCONT", runs(run.out.discont));
  {
    std::lock_guard<std::mutex> hold(run.bus.lock);
    outcome.note("QoS messages", listed(run.bus.qos));
  }
  run.report(outcome);
  return outcome;
}

// QoS as a slow sink and a source that drops frames make it, on a test
// clock that only the sink moves, so that every run is the same: the sink
// syncs, drops what is more than a quarter frame late and sends QoS events
// upstream; rendering frames 10-39 takes 2.5 frames of clock time, the
// source drops 50-54 and delivers 55-69 5.5 frames late. Each frame is
// rendered, dropped late by the sink or dropped by the converter's QoS, the
// same ones as through the control: a frame the converter holds when a QoS
// event says it is late is dropped as one arriving then would be.
Outcome qos_slow_sink_and_upstream_drops(const Converter &c) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) +
                 " ! fakesink name=sink sync=true qos=true async=false signal-handoffs=true "
                 "max-lateness=" +
                 std::to_string(kFrame / 4));
  GstClock *clock = gst_test_clock_new();
  gst_pipeline_use_clock(GST_PIPELINE(run.pipeline.get()), clock);
  gst_element_set_start_time(run.pipeline.get(), GST_CLOCK_TIME_NONE);
  gst_element_set_base_time(run.pipeline.get(), 0);  // running time is clock time
  struct SlowSink {
    GstTestClock *clock;
    std::vector<long> rendered = {};
    static void move_to(GstTestClock *clock, GstClockTime t) {
      if (t > gst_clock_get_time(GST_CLOCK(clock))) gst_test_clock_set_time(clock, t);
    }
    // a frame reaches the sink no earlier than its time, 5.5 frames late from 55 to 69
    static GstPadProbeReturn arrives(GstPad *, GstPadProbeInfo *info, gpointer data) {
      auto *self = static_cast<SlowSink *>(data);
      if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
        const GstClockTime pts = GST_BUFFER_PTS(GST_PAD_PROBE_INFO_BUFFER(info));
        const long index = static_cast<long>(pts / kFrame);
        move_to(self->clock, pts + (index >= 55 && index < 70 ? 11 * kFrame / 2 : 0));
      } else if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_EOS) {
        move_to(self->clock, gst_clock_get_time(GST_CLOCK(self->clock)) + GST_SECOND * 3600);
      }
      return GST_PAD_PROBE_OK;
    }
    // rendering takes 2.5 frames from 10 to 39
    static void renders(GstElement *, GstBuffer *buf, GstPad *, gpointer data) {
      auto *self = static_cast<SlowSink *>(data);
      const long index = static_cast<long>(GST_BUFFER_PTS(buf) / kFrame);
      self->rendered.push_back(index);
      if (index >= 10 && index < 40)
        move_to(self->clock, gst_clock_get_time(GST_CLOCK(self->clock)) + 5 * kFrame / 2);
    }
  } sink{GST_TEST_CLOCK(clock)};
  GstElement *fakesink = run.element("sink");
  GstPad *pad = gst_element_get_static_pad(fakesink, "sink");
  gst_pad_add_probe(
      pad, GstPadProbeType(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
      SlowSink::arrives, &sink, nullptr);
  gst_object_unref(pad);
  g_signal_connect(fakesink, "handoff", G_CALLBACK(SlowSink::renders), &sink);
  // A test clock's waits return once released, every one here at a time
  // already reached (the sink's, since it moves the clock first); the last
  // one released is the test's own, ending the thread.
  std::atomic<GstClockID> last{nullptr};
  std::thread release([&] {
    for (bool done = false; !done;) {
      gst_test_clock_wait_for_next_pending_id(GST_TEST_CLOCK(clock), nullptr);
      GstClockID id = gst_test_clock_process_next_clock_id(GST_TEST_CLOCK(clock));
      done = id && id == last.load();
      if (id) gst_clock_id_unref(id);
    }
  });
  auto end_release = [&] {
    GstClockID id = gst_clock_new_single_shot_id(clock, 0);
    last = id;
    gst_clock_id_wait(id, nullptr);
    release.join();
    gst_clock_id_unref(id);
  };
  Outcome outcome;
  EXPECT_TRUE(run.play());
  {
    PadSource src(run.element("convin"), frame_caps("BGRx"));
    for (long i = 0; i < 80; ++i) {
      if (i >= 50 && i < 55) continue;
      GstBuffer *buf = buffer_for(random_frame(PixelLayout::BGRx, kWidth, kHeight));
      if (i == 55) GST_BUFFER_FLAG_SET(buf, GST_BUFFER_FLAG_DISCONT);
      EXPECT_EQ(src.push(buf, i), GST_FLOW_OK) << "frame " << i;
    }
    src.event(gst_event_new_eos());
    outcome.note("EOS", yes_no(run.bus.wait_end()));
    gst_element_set_state(run.pipeline.get(), GST_STATE_NULL);
  }
  end_release();
  gst_object_unref(clock);
  outcome.note("rendered", runs(sink.rendered));
  outcome.note("at the sink", runs(run.out.indices));
  outcome.note("DISCONT at the sink", runs(run.out.discont));
  {
    std::lock_guard<std::mutex> hold(run.bus.lock);
    std::map<std::string, std::vector<long>> dropped;
    for (const auto &[role, running_time] : run.bus.qos_at)
      dropped[role].push_back(static_cast<long>(running_time / kFrame));
    // frames the converter still held are dropped on its output's thread,
    // so its messages may come in another order
    for (auto &[role, frames] : dropped) {
      std::sort(frames.begin(), frames.end());
      outcome.note("QoS drops by the " + role, runs(frames));
    }
  }
  run.report(outcome);
  return outcome;
}

// Segments of rate 1, 2, -1 and -4 (trick mode) in turn, frames in each in
// the segment's direction: all at the sink in order, the segments with them.
// Backwards, each frame is at the sink when its push returns, as the
// control's are: held, it would leave after an event stamped before it
// (GstValidate's serialized-event-wasnt-pushed-in-time).
Outcome rates_and_reverse(const Converter &c) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  for (long i = 0; i < 5; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  EXPECT_TRUE(src.segment(2.0, 5 * kFrame, GST_CLOCK_TIME_NONE));
  for (long i = 5; i < 10; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  long pushed = 10, held_back = 0;
  auto push_backwards = [&](long i) {
    EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
    if (run.out.count() != ++pushed) ++held_back;
  };
  EXPECT_TRUE(src.segment(-1.0, 10 * kFrame, 20 * kFrame));
  for (long i = 19; i >= 10; --i) push_backwards(i);
  EXPECT_TRUE(src.segment(-4.0, 20 * kFrame, 40 * kFrame, GST_SEGMENT_FLAG_TRICKMODE));
  for (long i = 39; i >= 20; i -= 4) push_backwards(i);
  outcome.note("backwards, frames not at the sink when their push returned", held_back);
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("at the sink", run.out.sequence());
  run.report(outcome);
  return outcome;
}

// GAP events between frames keep their place.
Outcome gap_events(const Converter &c) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  for (long i = 0; i < 14; ++i) {
    if (i == 5 || i == 10 || i == 11)
      EXPECT_TRUE(src.event(gst_event_new_gap(i * kFrame, kFrame)));
    else
      EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  }
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("at the sink", run.out.sequence());
  run.report(outcome);
  return outcome;
}

// DRAIN mid-stream returns once every frame before it is out; ALLOCATION
// is answered; POSITION then is the end of the last frame out.
Outcome drain_and_allocation(const Converter &c) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"), frame_caps("BGRx"));
  for (long i = 0; i < 6; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  GstQuery *drain = gst_query_new_drain();
  outcome.note("DRAIN answered", yes_no(gst_pad_peer_query(src.pad, drain)));
  gst_query_unref(drain);
  outcome.note("frames out when DRAIN returned", run.out.count());
  GstPad *convin_src = gst_element_get_static_pad(run.element("convin"), "src");
  gint64 position = -1;
  outcome.note("POSITION answered",
               yes_no(gst_pad_query_position(convin_src, GST_FORMAT_TIME, &position)));
  outcome.note("POSITION in frames", position < 0 ? -1 : run.out.index_of(position));
  gst_object_unref(convin_src);
  for (long i = 6; i < 9; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  GstCaps *caps = gst_caps_from_string(frame_caps("BGRx").c_str());
  GstQuery *allocation = gst_query_new_allocation(caps, TRUE);
  gst_caps_unref(caps);
  outcome.note("ALLOCATION answered", yes_no(gst_pad_peer_query(src.pad, allocation)));
  outcome.note("video meta accepted", yes_no(gst_query_find_allocation_meta(
                                          allocation, GST_VIDEO_META_API_TYPE, nullptr)));
  gst_query_unref(allocation);
  for (long i = 9; i < 12; ++i) EXPECT_EQ(src.push_bgrx(i), GST_FLOW_OK);
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("at the sink", run.out.sequence());
  run.report(outcome);
  return outcome;
}

// A live source into a sink that syncs: LATENCY answered as live, every
// frame out in order, EOS. The latency's value is a detail: cudagray adds
// the frames it may hold, as documented. A live source stamps its first
// frame with the running time it was made at, which depends on how long
// negotiation took, so frames count from the first one in.
Outcome live_source(const Converter &c) {
  Run run(c,
          "videotestsrc is-live=true num-buffers=60 pattern=ball ! " +
              frame_caps("BGRx", kWidth, kHeight, 100) + " ! " + c.slot(c.gray_caps("GRAY8")) +
              " ! fakesink name=sink sync=true",
          GST_SECOND / 100);
  Outcome outcome;
  EXPECT_TRUE(run.play());
  outcome.note("frames", yes_no(run.out.wait_count(10)));
  GstQuery *latency = gst_query_new_latency();
  const bool answered = gst_element_query(run.pipeline.get(), latency);
  gboolean live = FALSE;
  GstClockTime min = 0, max = 0;
  gst_query_parse_latency(latency, &live, &min, &max);
  gst_query_unref(latency);
  outcome.note("LATENCY answered", yes_no(answered));
  outcome.note("live", yes_no(live));
  outcome.note("min latency at most max", yes_no(!GST_CLOCK_TIME_IS_VALID(max) || min <= max));
  outcome.details +=
      "latency: min " + std::to_string(min) + " ns, max " + std::to_string(max) + " ns\n";
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  GstClockTime first_in;
  {
    std::lock_guard<std::mutex> hold(run.in.lock);
    first_in = run.in.first_pts;
  }
  std::vector<long> from_first_in;
  {
    std::lock_guard<std::mutex> hold(run.out.lock);
    for (long index : run.out.indices) from_first_in.push_back(index - run.out.index_of(first_in));
  }
  outcome.note("frames out, counted from the first in", runs(from_first_in));
  run.report(outcome);
  return outcome;
}

// How a frame carries its crop meta (32x20 at (2, 4)) of a 64x48 RGB frame.
enum class Crop {
  kVideoMetaFullFrame,  // GStreamer's way: caps of the crop's size, a video meta of the frame's
  kVideoMetaCapsSize,   // a region of interest inside a frame of the caps' size, video meta too
  kNoVideoMeta,         // the frame is the caps' size, GStreamer's own layout
};

// RGB frames carrying a GstVideoCropMeta. videoconvert may ignore the crop,
// so what is compared is what both show: every frame out, its caps, no
// error.
Outcome crop_meta(const Converter &c, Crop crop) {
  Run run(c, c.slot(c.gray_caps("GRAY8")) + " ! fakesink name=sink sync=false async=false");
  Outcome outcome;
  EXPECT_TRUE(run.play());
  PadSource src(run.element("convin"),
                crop == Crop::kVideoMetaFullFrame ? frame_caps("RGB", 32, 20) : frame_caps("RGB"));
  int refused = 0;
  for (long i = 0; i < 10; ++i) {
    GstBuffer *buf;
    if (crop != Crop::kNoVideoMeta) {
      buf = buffer_for(random_frame(PixelLayout::RGB, kWidth, kHeight));
    } else {
      GstVideoInfo info;
      gst_video_info_set_format(&info, GST_VIDEO_FORMAT_RGB, kWidth, kHeight);
      std::vector<uint8_t> bytes(GST_VIDEO_INFO_SIZE(&info));
      fill_random(bytes);
      buf = gst_buffer_new_memdup(bytes.data(), bytes.size());
    }
    GstVideoCropMeta *meta = gst_buffer_add_video_crop_meta(buf);
    meta->x = 2;
    meta->y = 4;
    meta->width = 32;
    meta->height = 20;
    if (src.push(buf, i) != GST_FLOW_OK) ++refused;
  }
  outcome.note("pushes refused", refused);
  src.event(gst_event_new_eos());
  outcome.note("EOS", yes_no(run.bus.wait_end()));
  outcome.note("frames out", runs(run.out.indices));
  outcome.note("output", listed(run.out.caps_out));
  run.report(outcome, false);
  return outcome;
}

// ------------------------------------------------------------------ the table

struct Scenario {
  const char *name;
  std::function<Outcome(const Converter &)> run;
};

const std::vector<Scenario> &scenarios() {
  static const std::vector<Scenario> table = {
      {"relink_src_pad", relink_src_pad},
      {"tee_branches_idle_and_block", tee_branches},
      {"flip_output_format_from_bgrx", flip_output_format_from_bgrx},
      {"flip_output_format_from_gray8", flip_output_format_from_gray8},
      {"flip_output_size_through_passthrough", flip_output_size_through_passthrough},
      {"flip_input_format_and_size", flip_input_format_and_size},
      {"input_caps_flips_with_frames_in_flight", input_caps_flips_in_flight},
      {"new_allocation_pool_mid_stream", new_pool_mid_stream},
      {"flushing_seeks", flushing_seeks},
      {"flush_from_another_thread", flush_from_another_thread},
      {"seek_storm_from_another_thread", seek_storm},
      {"flushing_seek_while_a_refused_frame_waits", flush_while_refused},
      {"flushing_seek_while_draining_for_caps",
       [](const Converter &c) { return flush_while_draining(c, true); }},
      {"flushing_seek_while_draining_for_allocation",
       [](const Converter &c) { return flush_while_draining(c, false); }},
      {"eos_from_downstream_first", eos_from_downstream_first},
      {"downstream_eos_with_frames_in_flight",
       [](const Converter &c) { return downstream_ends_with_frames_in_flight(c, "eos-after"); }},
      {"downstream_error_with_frames_in_flight",
       [](const Converter &c) { return downstream_ends_with_frames_in_flight(c, "error-after"); }},
      {"branch_removal_under_idle_probe", branch_removal_under_idle_probe},
      {"element_swap_from_eos_probe", element_swap_from_eos_probe},
      {"appsink_blocked_while_eos_arrives", appsink_blocked_while_eos_arrives},
      {"error_from_downstream", error_from_downstream},
      {"state_cycles_with_frames_in_flight", state_cycles},
      {"appsink_stops_and_resumes", appsink_stops_and_resumes},
      {"qos", qos},
      {"qos_slow_sink_and_upstream_drops", qos_slow_sink_and_upstream_drops},
      {"rates_and_reverse_playback", rates_and_reverse},
      {"gap_events", gap_events},
      {"drain_and_allocation_mid_stream", drain_and_allocation},
      {"live_source", live_source},
      {"crop_meta_with_video_meta",
       [](const Converter &c) { return crop_meta(c, Crop::kVideoMetaFullFrame); }},
      {"crop_meta_inside_caps_size_with_video_meta",
       [](const Converter &c) { return crop_meta(c, Crop::kVideoMetaCapsSize); }},
      {"crop_meta_without_video_meta",
       [](const Converter &c) { return crop_meta(c, Crop::kNoVideoMeta); }},
  };
  return table;
}

const std::vector<Converter> &converters() {
  static const std::vector<Converter> all = [] {
    std::vector<Converter> list = {{"control", "", 0, false}};
    for (const char *backend : {"cpu", "cuda"})
      for (int inflight : {0, 1, 4, 16})
        for (bool cuda_memory : {false, true}) {
          if (cuda_memory && std::string(backend) == "cpu") continue;
          list.push_back({std::string(backend) + "_inflight" + std::to_string(inflight) +
                              (cuda_memory ? "_cudamemory" : "_system"),
                          backend, inflight, cuda_memory});
        }
    return list;
  }();
  return all;
}

// The control's outcome of a scenario, run once per process.
const Outcome &control_outcome(size_t scenario) {
  static std::map<size_t, Outcome> cache;
  auto it = cache.find(scenario);
  if (it == cache.end())
    it = cache.emplace(scenario, scenarios()[scenario].run(converters()[0])).first;
  return it->second;
}

class Contract : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(Contract, SameOutcomeAsTheControl) {
  const size_t scenario = std::get<0>(GetParam());
  const Converter &converter = converters()[std::get<1>(GetParam())];
  if (converter.backend == "cuda") {
    SKIP_WITHOUT_GPU();
#ifndef CUDAGRAY_TEST_HAVE_CUDA
    GTEST_SKIP() << "this build of the plugin has no CUDA backend";
#endif
  }
  const Outcome &control = control_outcome(scenario);
  if (converter.is_control()) {
    std::printf("%s", (control.text() + control.details).c_str());
    return;
  }
  const Outcome ours = scenarios()[scenario].run(converter);
  // which path the frames took: with more than one in flight, the output task
  std::printf("frames out %ld, pushed by cudagray's output task %ld\n", ours.frames_out,
              ours.pushed_by_task);
  EXPECT_EQ(ours.text(), control.text()) << "cudagray said:\n"
                                         << ours.details << "the control said:\n"
                                         << control.details;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Contract,
                         ::testing::Combine(::testing::Range(size_t{0}, scenarios().size()),
                                            ::testing::Range(size_t{0}, converters().size())),
                         [](const ::testing::TestParamInfo<Contract::ParamType> &info) {
                           return std::string(scenarios()[std::get<0>(info.param)].name) + "_" +
                                  converters()[std::get<1>(info.param)].name;
                         });

}  // namespace
}  // namespace cudagray::test
