// SPDX-License-Identifier: LGPL-2.1-or-later
// The element alone in a GstHarness: frames in and out, and what it posts on
// its bus. Pipelines, bus logs and frames shared with the bench come from
// the harness library (harness/).
#pragma once

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>
#include <vector>

#include "common.h"
#include "frames.h"
#include "pipeline.h"

namespace cudagray::test {

using namespace ::harness;

inline GstVideoFormat video_format(PixelLayout layout) {
  return gst_video_format_from_string(layout_info(layout).name);
}

inline std::string caps_string(const char *format, int width, int height) {
  return std::string("video/x-raw,format=") + format + ",width=" + std::to_string(width) +
         ",height=" + std::to_string(height) + ",framerate=30/1";
}

// A harness around a new cudagray configured by "name=value" settings, with a
// bus of its own so that its warnings and errors can be read.
struct Harness {
  GstHarness *h;
  GstBus *bus;
  explicit Harness(const std::vector<std::string> &settings = {}) {
    GstElement *element = gst_element_factory_make("cudagray", nullptr);
    EXPECT_NE(element, nullptr) << "cudagray not found: is GST_PLUGIN_PATH set?";
    for (const std::string &s : settings) {
      const size_t eq = s.find('=');
      gst_util_set_object_arg(G_OBJECT(element), s.substr(0, eq).c_str(), s.substr(eq + 1).c_str());
    }
    bus = gst_bus_new();
    gst_element_set_bus(element, bus);
    h = gst_harness_new_with_element(element, "sink", "src");
    gst_object_unref(element);
  }
  ~Harness() {
    // Messages left on the bus hold the element, which holds the bus: drop
    // them (and the ones teardown posts) or both leak.
    gst_bus_set_flushing(bus, TRUE);
    gst_harness_teardown(h);
    gst_object_unref(bus);
  }
  Harness(const Harness &) = delete;
  Harness &operator=(const Harness &) = delete;

  GstElement *element() const { return h->element; }
  void set_caps(const std::string &caps) { gst_harness_set_src_caps_str(h, caps.c_str()); }

  // Text of the next bus message of this type, or "" when there is none.
  std::string pop_message(GstMessageType type) {
    GstMessage *msg = gst_bus_pop_filtered(bus, type);
    if (!msg) return "";
    BusLog log;
    log.add(msg);
    gst_message_unref(msg);
    return (type == GST_MESSAGE_ERROR ? log.errors : log.warnings).front().text;
  }
};

// Skips a test that needs an element of GStreamer's nvcodec plugin.
#define SKIP_WITHOUT_ELEMENT(name)                                                       \
  do {                                                                                   \
    GstElementFactory *factory = gst_element_factory_find(name);                         \
    if (!factory) GTEST_SKIP() << name " is not available (GStreamer's nvcodec plugin)"; \
    gst_object_unref(factory);                                                           \
  } while (0)

// A count or a mean of the element's stats property (a failure when the
// field is missing).
inline uint64_t stat_of(GstElement *gray, const char *field) {
  GstStructure *stats = nullptr;
  g_object_get(gray, "stats", &stats, nullptr);
  guint64 value = 0;
  EXPECT_TRUE(gst_structure_get_uint64(stats, field, &value)) << field;
  gst_structure_free(stats);
  return value;
}
inline double mean_of(GstElement *gray, const char *field) {
  GstStructure *stats = nullptr;
  g_object_get(gray, "stats", &stats, nullptr);
  double value = -1;
  EXPECT_TRUE(gst_structure_get_double(stats, field, &value)) << field;
  gst_structure_free(stats);
  return value;
}

// A buffer holding a copy of the frame's bytes, with a GstVideoMeta giving
// its plane offsets and padded strides.
inline GstBuffer *buffer_for(const TestFrame &f) {
  GstBuffer *buf = gst_buffer_new_memdup(f.bytes.data(), f.bytes.size());
  gsize offsets[GST_VIDEO_MAX_PLANES] = {f.offset[0], f.offset[1], f.offset[2]};
  gint strides[GST_VIDEO_MAX_PLANES] = {int(f.stride[0]), int(f.stride[1]), int(f.stride[2])};
  gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, video_format(f.layout), f.width,
                                 f.height, f.planes, offsets, strides);
  return buf;
}

// The GRAY8 (depth 8) or GRAY16_LE (depth 16) picture in buf, honouring
// its video meta if any.
inline GrayImage gray_of(GstBuffer *buf, int width, int height, int depth = 8) {
  GstVideoInfo info;
  gst_video_info_set_format(
      &info, depth == 16 ? GST_VIDEO_FORMAT_GRAY16_LE : GST_VIDEO_FORMAT_GRAY8, width, height);
  GstVideoFrame frame;
  GrayImage img(width, height, 0, depth);
  if (!gst_video_frame_map(&frame, &info, buf, GST_MAP_READ)) {
    ADD_FAILURE() << "output buffer does not hold a " << width << "x" << height << " "
                  << GST_VIDEO_INFO_NAME(&info) << " frame";
    return img;
  }
  for (int y = 0; y < height; ++y)
    memcpy(&img.bytes[y * img.stride],
           static_cast<uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0)) +
               y * GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0),
           img.row_bytes());
  gst_video_frame_unmap(&frame);
  return img;
}

// Waits until the element has pushed everything it holds: a DRAIN query,
// which the element answers once the frames and events before it have left
// (an EOS does not wait: it leaves after them).
inline void drain_element(Harness &harness) {
  GstQuery *query = gst_query_new_drain();
  gst_pad_peer_query(harness.h->srcpad, query);
  gst_query_unref(query);
}

// Pushes one frame through the harness and returns what came out (the
// element pushes it from its output task as soon as it is converted, with
// no further input).
inline GrayImage convert_through(Harness &harness, const TestFrame &f) {
  EXPECT_EQ(gst_harness_push(harness.h, buffer_for(f)), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(harness.h);
  if (!out) {
    ADD_FAILURE() << "no output buffer; error: " << harness.pop_message(GST_MESSAGE_ERROR);
    return GrayImage(f.width, f.height);
  }
  GrayImage img = gray_of(out, f.width, f.height);
  gst_buffer_unref(out);
  return img;
}

}  // namespace cudagray::test
