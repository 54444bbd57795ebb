// SPDX-License-Identifier: LGPL-2.1-or-later
// libFuzzer target: the input bytes become a short session with one cudagray
// (CPU backend) in a GstHarness: caps (any of its formats, a few it refuses,
// sizes from 0 to past 16384), buffers that hold the frame or not (short,
// long, with a GstVideoMeta of random offsets, strides, planes and format),
// flushes, gaps, EOS, state cycles and property values (weights text,
// matrix, max-inflight). Any crash, sanitizer report, hang, or broken
// invariant (a flow return other than OK, ERROR, NOT_NEGOTIATED, FLUSHING or
// EOS; more outputs than inputs; an output that does not hold its frame; a
// converted frame that differs from the CPU reference) is a finding.
//
// Built two ways:
//  - by tests/fuzz/run with clang -fsanitize=fuzzer,address,undefined, the
//    element compiled in (CUDAGRAY_FUZZ_STATIC) so that it is instrumented;
//  - by meson as test_fuzz_corpus (replay_main.cpp), which runs every file of
//    tests/fuzz/corpus through it against the built plugin, in CI.
#include <gst/base/gstbasetransform.h>
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cudagray/convert_cpu.h"
#include "gstcudagrayweights.h"

#ifdef CUDAGRAY_FUZZ_STATIC
#include "gstcudagray.h"
#endif

namespace {

// Reads the input front to back; past the end every read gives zeros.
struct Reader {
  const uint8_t *data;
  size_t size, at = 0;
  bool done() const { return at >= size; }
  uint8_t byte() { return at < size ? data[at++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(byte() | byte() << 8); }
  uint32_t u32() { return u16() | static_cast<uint32_t>(u16()) << 16; }
  std::string text(size_t max) {
    const size_t n = byte() % (max + 1);
    std::string s;
    for (size_t i = 0; i < n && !done(); ++i) s += static_cast<char>(byte());
    return s;
  }
};

// Indices are the corpus's: new formats go at the end.
const char *const kFormats[] = {
    "RGB",        "BGR",       "RGBx",      "BGRx",      "xRGB",      "xBGR",        "RGBA",
    "BGRA",       "ARGB",      "ABGR",      "RGBP",      "BGRP",      "GBR",         "I420",
    "YV12",       "NV12",      "NV21",      "Y444",      "Y42B",      "GRAY8",       "GRAY16_LE",
    "RGB16",      "v210",      "AYUV64",    "YUY2",      "UYVY",      "YVYU",        "AYUV",
    "VUYA",       "P010_10LE", "P012_LE",   "P016_LE",   "I420_10LE", "I420_12LE",   "I422_10LE",
    "I422_12LE",  "Y444_10LE", "Y444_12LE", "Y444_16LE", "GBR_10LE",  "GBR_12LE",    "RGB10A2_LE",
    "BGR10A2_LE", "GBRA",      "GRAY16_BE", "r210",
    "RGB8P",  // refused: cudagray must not negotiate it
    "RGBA64_BE",  "RGB15",     "IYU1",      "v216",      "Y410",      "NV12_10LE40", "GRAY10_LE32",
    "Y212_BE",    "UYVP"};
constexpr int kFormatCount = sizeof(kFormats) / sizeof(kFormats[0]);
const char *const kBayer[] = {"bggr", "gbrg", "grbg", "rggb"};

// Mostly small sizes, sometimes the edges: 0, 1, 16384 (with the other side
// kept small so that a frame stays small), past the limit, and absurd.
int dimension(Reader &r, bool *big) {
  const uint8_t b = r.byte();
  if (b < 200) return 1 + b % 96;
  switch (b % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: *big = true; return 16384;
    case 3: *big = true; return 16385;
    case 4: return -1;
    case 5: *big = true; return 4096 + r.u16() % 4096;
    case 6: return G_MAXINT;
    default: return 1 + r.u16() % 700;
  }
}

bool verbose() {
  static const bool v = std::getenv("CUDAGRAY_FUZZ_VERBOSE") != nullptr;
  return v;
}

[[noreturn]] void finding(const std::string &what) {
  std::fprintf(stderr, "cudagray fuzz finding: %s\n", what.c_str());
  std::abort();
}

cudagray::Weights weights_in_use(GstElement *e) {
  gint matrix = 0;
  gchar *text = nullptr;
  g_object_get(e, "matrix", &matrix, "weights", &text, nullptr);
  cudagray::Coefficients k{};
  std::string error;
  const bool parsed = gst_cuda_gray_parse_weights(text, &k, &error);
  g_free(text);
  if (matrix == 3) {
    if (!parsed) finding("weights property does not read back as three numbers");
    return cudagray::custom_weights(k);
  }
  return cudagray::standard_weights(static_cast<cudagray::Matrix>(matrix));
}

struct Session {
  GstHarness *h;
  GstElement *element;
  GstBus *bus;
  std::string caps;   // the last caps sent
  GstVideoInfo info;  // and what they describe, when valid
  bool info_valid = false;
  long pushed = 0, pulled = 0;

  Session() {
    element = gst_element_factory_make("cudagray", nullptr);
    if (!element) finding("no cudagray element: is GST_PLUGIN_PATH set?");
    gst_util_set_object_arg(G_OBJECT(element), "backend", "cpu");
    bus = gst_bus_new();
    gst_element_set_bus(element, bus);
    h = gst_harness_new_with_element(element, "sink", "src");
  }
  ~Session() {
    gst_harness_push_event(h, gst_event_new_eos());
    drain_outputs(nullptr);
    gst_harness_teardown(h);
    gst_object_unref(element);
    gst_bus_set_flushing(bus, TRUE);
    gst_object_unref(bus);
  }

  void send_caps(const std::string &text) {
    caps = text;
    GstCaps *c = gst_caps_from_string(text.c_str());
    if (!c) return;
    info_valid = gst_video_info_from_caps(&info, c);
    gst_harness_push_event(h, gst_event_new_caps(c));
    gst_caps_unref(c);
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    gst_harness_push_event(h, gst_event_new_segment(&segment));
  }

  // Whether the element took the caps last sent (they are its current ones).
  bool caps_taken() {
    GstPad *pad = gst_element_get_static_pad(element, "sink");
    GstCaps *current = gst_pad_get_current_caps(pad);
    gst_object_unref(pad);
    if (!current) return false;
    GstCaps *sent = gst_caps_from_string(caps.c_str());
    const bool same = sent && gst_caps_is_equal(current, sent);
    gst_caps_unref(current);
    if (sent) gst_caps_unref(sent);
    return same;
  }

  void push(GstBuffer *buf, const std::vector<uint8_t> *plain_frame) {
    const bool check = plain_frame && info_valid && caps_taken();
    const cudagray::Weights w = weights_in_use(element);
    const GstFlowReturn ret = gst_harness_push(h, buf);
    ++pushed;
    switch (ret) {
      case GST_FLOW_OK:
      case GST_FLOW_ERROR:
      case GST_FLOW_NOT_NEGOTIATED:
      case GST_FLOW_FLUSHING:
      case GST_FLOW_EOS: break;
      default: finding(std::string("push returned ") + gst_flow_get_name(ret));
    }
    if (verbose()) std::fprintf(stderr, "push %s -> %s\n", caps.c_str(), gst_flow_get_name(ret));
    // A buffer taken, converted or passed through, leaves from the
    // element's output task, maybe after the push returned: wait for it, so
    // that it is checked against the caps it was taken with.
    drain_outputs(ret == GST_FLOW_OK && check ? plain_frame : nullptr, w, ret == GST_FLOW_OK);
  }

  // Pulls every output (waiting for the first when one is due); each must
  // map as the negotiated GRAY8 frame, and the first, when asked, equal the
  // reference for the frame just pushed.
  void drain_outputs(const std::vector<uint8_t> *expect_from, cudagray::Weights w = {},
                     bool one_due = false) {
    for (GstBuffer *out = one_due ? gst_harness_pull(h) : gst_harness_try_pull(h); out;
         out = gst_harness_try_pull(h)) {
      if (++pulled > pushed) finding("more outputs than inputs");
      GstPad *pad = gst_element_get_static_pad(element, "src");
      GstCaps *caps_out = gst_pad_get_current_caps(pad);
      gst_object_unref(pad);
      GstVideoInfo out_info;
      // GRAY8 input passes through untouched, unchecked (like identity): only
      // converted outputs must hold their frame.
      const bool passthrough = gst_base_transform_is_passthrough(GST_BASE_TRANSFORM(element));
      if (!passthrough && caps_out && gst_video_info_from_caps(&out_info, caps_out)) {
        GstVideoFrame frame;
        if (!gst_video_frame_map(&frame, &out_info, out, GST_MAP_READ))
          finding("an output buffer does not hold its frame");
        const bool gray = GST_VIDEO_INFO_FORMAT(&out_info) == GST_VIDEO_FORMAT_GRAY8;
        // scaled outputs are held to the formula by test_scale and test_element_scale
        const bool same_size = GST_VIDEO_INFO_WIDTH(&out_info) == GST_VIDEO_INFO_WIDTH(&info) &&
                               GST_VIDEO_INFO_HEIGHT(&out_info) == GST_VIDEO_INFO_HEIGHT(&info);
        if (expect_from && gray && same_size &&
            GST_VIDEO_INFO_FORMAT(&info) != GST_VIDEO_FORMAT_GRAY8)
          compare(*expect_from, frame, w);
        expect_from = nullptr;
        gst_video_frame_unmap(&frame);
      }
      if (caps_out) gst_caps_unref(caps_out);
      gst_buffer_unref(out);
    }
  }

  // The reference for an RGB-family frame laid out as GstVideoInfo says.
  void compare(const std::vector<uint8_t> &in_bytes, GstVideoFrame &out,
               const cudagray::Weights &w) {
    const std::string name = GST_VIDEO_INFO_NAME(&info);
    const cudagray::PixelLayout *layout = nullptr;
    for (const cudagray::PixelLayout &l : cudagray::kRgb8Layouts)
      if (name == cudagray::layout_info(l).name) layout = &l;
    if (!layout) return;  // YUV: the luma plane, checked by the element tests
    cudagray::InputFrame in{};
    for (int p = 0; p < cudagray::layout_info(*layout).planes; ++p) {
      in.plane[p] = in_bytes.data() + GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
      in.stride[p] = GST_VIDEO_INFO_PLANE_STRIDE(&info, p);
    }
    std::vector<uint8_t> expected(static_cast<size_t>(info.width) * info.height);
    cudagray::convert_cpu(cudagray::same_size_conversion(*layout, info.width, info.height), in,
                          {expected.data(), static_cast<size_t>(info.width)}, w, 1);
    for (int y = 0; y < info.height; ++y) {
      const uint8_t *row = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&out, 0)) +
                           y * GST_VIDEO_FRAME_PLANE_STRIDE(&out, 0);
      for (int x = 0; x < info.width; ++x)
        if (row[x] != expected[static_cast<size_t>(y) * info.width + x])
          finding("pixel (" + std::to_string(x) + "," + std::to_string(y) + ") of a " + caps +
                  " frame differs from the CPU reference");
    }
  }
};

// Bytes for a buffer: the input's next bytes, repeated; exactly n of them in
// a plain malloc'd block, so that a sanitizer sees any read past them.
GstBuffer *buffer_of(Reader &r, size_t n, std::vector<uint8_t> *copy) {
  auto *bytes = static_cast<uint8_t *>(g_malloc(n ? n : 1));
  const uint8_t seed = r.byte();
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 167 + (i >> 7));
  if (copy) copy->assign(bytes, bytes + n);
  return gst_buffer_new_wrapped(bytes, n);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  g_setenv("GST_DEBUG", "0", FALSE);
  gst_init(argc, argv);
#ifdef CUDAGRAY_FUZZ_STATIC
  GST_ELEMENT_REGISTER(cudagray, nullptr);
#endif
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, size};
  Session s;
  g_object_set(s.element, "max-inflight", static_cast<guint>(r.byte() % 17), nullptr);
  for (int op = 0; op < 24 && !r.done(); ++op) {
    switch (r.byte() % 10) {
      case 0:
      case 1: {  // caps
        bool big = false;
        const char *format = kFormats[r.byte() % kFormatCount];
        int w = dimension(r, &big), hgt = dimension(r, &big);
        if (big && w > 64 && hgt > 64) hgt = 1 + hgt % 8;  // one long side at a time
        std::string caps = std::string("video/x-raw,format=") + format +
                           ",width=" + std::to_string(w) + ",height=" + std::to_string(hgt) +
                           ",framerate=30/1";
        switch (r.byte() % 6) {
          case 0: caps += ",colorimetry=bt709"; break;
          case 1: caps += ",colorimetry=1:4:0:0"; break;
          case 2: caps += ",colorimetry=(string)bt601"; break;
          case 3: caps = "audio/x-raw,format=S16LE,rate=48000,channels=2"; break;
          case 4:  // a Bayer mosaic of the same size (its buffers: case 4 below)
            caps = std::string("video/x-bayer,format=") + kBayer[static_cast<unsigned>(w) % 4] +
                   ",width=" + std::to_string(w) + ",height=" + std::to_string(hgt) +
                   ",framerate=30/1";
            break;
          default: break;
        }
        s.send_caps(caps);
        break;
      }
      case 2:
      case 3: {  // a buffer of exactly the frame's size
        if (!s.info_valid || GST_VIDEO_INFO_SIZE(&s.info) > (64u << 20)) break;
        std::vector<uint8_t> copy;
        GstBuffer *buf = buffer_of(r, GST_VIDEO_INFO_SIZE(&s.info), &copy);
        s.push(buf, &copy);
        break;
      }
      case 4: {  // a buffer shorter or longer than the frame
        const size_t want = s.info_valid ? GST_VIDEO_INFO_SIZE(&s.info) : 64;
        if (want > (64u << 20)) break;
        const int delta = static_cast<int8_t>(r.byte()) * (1 + r.byte() % 64);
        const size_t n = delta < 0 && static_cast<size_t>(-delta) > want ? 0 : want + delta;
        s.push(buffer_of(r, n, nullptr), nullptr);
        break;
      }
      case 5: {  // a buffer with a video meta of random layout
        const size_t want = s.info_valid ? GST_VIDEO_INFO_SIZE(&s.info) : 256;
        if (want > (64u << 20)) break;
        const size_t n = r.byte() % 2 ? want : r.u32() % (want + 4096);
        GstBuffer *buf = buffer_of(r, n, nullptr);
        const bool same_format = r.byte() % 4 != 0;
        GstVideoFormat format =
            s.info_valid && same_format
                ? GST_VIDEO_INFO_FORMAT(&s.info)
                : gst_video_format_from_string(kFormats[r.byte() % kFormatCount]);
        const bool same_size = r.byte() % 4 != 0;
        const guint w = s.info_valid && same_size ? s.info.width : 1 + r.byte() % 64;
        const guint hgt = s.info_valid && same_size ? s.info.height : 1 + r.byte() % 64;
        const guint planes = r.byte() % 5;
        gsize offsets[GST_VIDEO_MAX_PLANES] = {};
        gint strides[GST_VIDEO_MAX_PLANES] = {};
        for (guint p = 0; p < GST_VIDEO_MAX_PLANES; ++p) {
          const bool plain =
              s.info_valid && p < GST_VIDEO_INFO_N_PLANES(&s.info) && r.byte() % 3 == 0;
          offsets[p] = plain ? GST_VIDEO_INFO_PLANE_OFFSET(&s.info, p)
                             : (r.byte() % 8 == 0 ? G_MAXSIZE - r.byte() : r.u32() % (n + 256));
          strides[p] =
              plain ? GST_VIDEO_INFO_PLANE_STRIDE(&s.info, p)
                    : (r.byte() % 8 == 0 ? G_MININT + r.byte() : static_cast<int16_t>(r.u16()));
        }
        if (format != GST_VIDEO_FORMAT_UNKNOWN && format != GST_VIDEO_FORMAT_ENCODED)
          gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, format, w, hgt, planes,
                                         offsets, strides);
        if (r.byte() % 3 == 0) {  // a crop meta, inside the frame or not
          GstVideoCropMeta *crop = gst_buffer_add_video_crop_meta(buf);
          crop->x = r.byte() % 8 == 0 ? G_MAXUINT - r.byte() : r.u16() % 80;
          crop->y = r.u16() % 80;
          crop->width = s.info_valid && r.byte() % 2 ? s.info.width : r.u16() % 80;
          crop->height = s.info_valid && r.byte() % 2 ? s.info.height : r.u16() % 80;
        }
        s.push(buf, nullptr);
        break;
      }
      case 6: {  // events
        switch (r.byte() % 4) {
          case 0:
            gst_harness_push_event(s.h, gst_event_new_flush_start());
            gst_harness_push_event(s.h, gst_event_new_flush_stop(TRUE));
            if (!s.caps.empty()) s.send_caps(s.caps);
            break;
          case 1: gst_harness_push_event(s.h, gst_event_new_gap(0, GST_CLOCK_TIME_NONE)); break;
          case 2: gst_harness_push_event(s.h, gst_event_new_eos()); break;
          default: gst_harness_push_event(s.h, gst_event_new_flush_start()); break;
        }
        s.drain_outputs(nullptr);
        break;
      }
      case 7: {  // properties, and the output size downstream asks for
        switch (r.byte() % 7) {
          case 0: {
            const std::string text = r.text(24);
            g_object_set(s.element, "weights", text.c_str(), nullptr);
            break;
          }
          case 1: g_object_set(s.element, "matrix", r.byte() % 4, nullptr); break;
          case 2:
            g_object_set(s.element, "max-inflight", static_cast<guint>(r.byte() % 17), nullptr);
            break;
          case 3: g_object_set(s.element, "method", r.byte() % 3, nullptr); break;
          case 4: g_object_set(s.element, "add-borders", r.byte() % 2, nullptr); break;
          case 5: {  // sizes out of range too: negotiation must refuse them
            bool big = false;
            const int w = dimension(r, &big), hgt = dimension(r, &big);
            gst_harness_set_sink_caps_str(
                s.h, ("video/x-raw,format=GRAY8,width=" + std::to_string(w) +
                      ",height=" + std::to_string(big && w > 64 ? 1 + hgt % 8 : hgt))
                         .c_str());
            break;
          }
          default: {
            GstStructure *stats = nullptr;
            g_object_get(s.element, "stats", &stats, nullptr);
            if (stats) gst_structure_free(stats);
            break;
          }
        }
        break;
      }
      case 8: {  // a state cycle, then stream-start and the caps again
        const GstState down = r.byte() % 2 ? GST_STATE_NULL : GST_STATE_READY;
        gst_element_set_state(s.element, down);
        if (gst_element_set_state(s.element, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
          finding("the CPU backend failed to start");
        gst_harness_push_event(s.h, gst_event_new_stream_start("fuzz"));
        if (!s.caps.empty()) s.send_caps(s.caps);
        break;
      }
      default: s.drain_outputs(nullptr); break;
    }
  }
  return 0;
}
