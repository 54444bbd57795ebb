// SPDX-License-Identifier: LGPL-2.1-or-later
// Every input format of the format table (plugin/gstcudagrayformats.cpp)
// through the element on the CPU backend, to GRAY8 and to GRAY16_LE:
// - random frames (padding included) in GStreamer's own layout and with
//   padded strides, each output pixel against a reference computed here from
//   GStreamer's unpack functions and the documented formula (docs/formats.md,
//   "The formula"), written again here without kernels/;
// - GRAY8 and GRAY16_LE of one frame agree; gray passes through or is
//   re-scaled;
// - Bayer gives exactly what bayer2rgb ! RGBx ! cudagray gives;
// - a buffer too small for its caps is an error that names the frame.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <tuple>

#include "element_harness.h"
#include "gstcudagrayformats.h"
#include "reference.h"

using namespace cudagray;
using namespace cudagray::test;

// bayer2rgb (gst-plugins-bad 1.22) run by ORC's JIT writes past its line
// buffers on odd widths: the process aborts, crashes or hangs in malloc
// (gst-launch-1.0 ... ! video/x-bayer,width=641,height=481 ! bayer2rgb hangs;
// 3x3 aborts with "free(): invalid next size"). ORC's own C code for the same
// programs does not, and gives the same values where both are defined. The
// switch is read when ORC starts, so it is set before main; bayer2rgb is not
// run on odd widths and width 2 when ORC_CODE was set to something else.
static const bool kOrcBackupCode = [] {
  const char *code = std::getenv("ORC_CODE");
  if (!code) {
    setenv("ORC_CODE", "backup", 1);
    return true;
  }
  return std::strstr(code, "backup") != nullptr;
}();

// A buffer pool whose buffers are filled with a sentinel each time they are
// handed out, so that bytes the element writes past a row show up in the
// row's padding.
typedef struct {
  GstBufferPool parent;
} TestSentinelPool;
typedef struct {
  GstBufferPoolClass parent_class;
} TestSentinelPoolClass;
G_DEFINE_TYPE(TestSentinelPool, test_sentinel_pool, GST_TYPE_BUFFER_POOL)

static constexpr uint8_t kPoolSentinel = 0xA5;

static GstFlowReturn test_sentinel_pool_acquire(GstBufferPool *pool, GstBuffer **buffer,
                                                GstBufferPoolAcquireParams *params) {
  const GstFlowReturn ret =
      GST_BUFFER_POOL_CLASS(test_sentinel_pool_parent_class)->acquire_buffer(pool, buffer, params);
  if (ret == GST_FLOW_OK)
    gst_buffer_memset(*buffer, 0, kPoolSentinel, gst_buffer_get_size(*buffer));
  return ret;
}

static void test_sentinel_pool_class_init(TestSentinelPoolClass *klass) {
  GST_BUFFER_POOL_CLASS(klass)->acquire_buffer = test_sentinel_pool_acquire;
}

static void test_sentinel_pool_init(TestSentinelPool *) {}

namespace {

// ------------------------------------------------------------ the reference

// The documented formula, from the format's codes. How GStreamer classes the
// format decides which part applies: RGB is weighed, YUV gives its luma
// (expanded from limited range unless the caps say full range), gray is
// taken as it is.
enum class Family { Rgb, Yuv, Gray };

Family family_of(const GstVideoFormatInfo *finfo) {
  if (GST_VIDEO_FORMAT_INFO_IS_RGB(finfo)) return Family::Rgb;
  if (GST_VIDEO_FORMAT_INFO_IS_GRAY(finfo)) return Family::Gray;
  return Family::Yuv;
}

uint32_t luma_to_16(uint32_t v, int depth, bool limited) {
  if (!limited) return replicate16(v, depth);
  const uint64_t black = 16u << (depth - 8), range = 219u << (depth - 8);
  if (v <= black) return 0;
  return static_cast<uint32_t>(
      std::min<uint64_t>(65535, ((v - black) * 65535 + range / 2) / range));
}

// One input frame in one allocation: planes at offset[p] with rows of
// stride[p] bytes; every byte random, padding and gaps included. meta: the
// buffer carries a GstVideoMeta with these offsets and strides (else they
// are GStreamer's defaults for the format and size).
struct InputBytes {
  GstVideoFormat format;
  int width, height;
  std::vector<uint8_t> bytes;
  gsize offset[GST_VIDEO_MAX_PLANES] = {};
  gint stride[GST_VIDEO_MAX_PLANES] = {};
  guint planes = 0;
  bool meta = false;

  GstBuffer *buffer() const {
    GstBuffer *buf = gst_buffer_new_memdup(bytes.data(), bytes.size());
    if (meta)
      gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE, format, width, height, planes,
                                     const_cast<gsize *>(offset), const_cast<gint *>(stride));
    return buf;
  }
};

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// Rows of plane p of a frame of the given height.
int plane_rows(const GstVideoFormatInfo *finfo, guint p, int height) {
  for (guint c = 0; c < GST_VIDEO_FORMAT_INFO_N_COMPONENTS(finfo); ++c)
    if (GST_VIDEO_FORMAT_INFO_PLANE(finfo, c) == p)
      return GST_VIDEO_FORMAT_INFO_SCALE_HEIGHT(finfo, c, height);
  return height;
}

// A random frame: laid out as gst_video_info_set_format says, or (padded)
// with random gaps before the planes and strides longer than GStreamer's
// (tiled: more tiles), described by a video meta. False when GStreamer's video info refuses the
// size for the format.
bool random_input(GstVideoFormat format, int width, int height, bool padded, InputBytes *f) {
  GstVideoInfo info;
  if (!gst_video_info_set_format(&info, format, width, height)) return false;
  f->format = format;
  f->width = width;
  f->height = height;
  f->planes = GST_VIDEO_INFO_N_PLANES(&info);
  f->meta = padded;
  if (!padded) {
    for (guint p = 0; p < f->planes; ++p) {
      f->offset[p] = GST_VIDEO_INFO_PLANE_OFFSET(&info, p);
      f->stride[p] = GST_VIDEO_INFO_PLANE_STRIDE(&info, p);
    }
    f->bytes.resize(GST_VIDEO_INFO_SIZE(&info));
  } else {
    // deep formats keep their 16- and 32-bit words 4-byte aligned, as any
    // producer does; 8-bit ones get any stride
    const size_t align = GST_VIDEO_FORMAT_INFO_DEPTH(info.finfo, 0) > 8 ? 4 : 1;
    size_t end = 0;
    for (guint p = 0; p < f->planes; ++p) {
      f->offset[p] = round_up(end + random_int(0, 40), align);
      const gint stride = GST_VIDEO_INFO_PLANE_STRIDE(&info, p);
      if (GST_VIDEO_FORMAT_INFO_IS_TILED(info.finfo)) {  // more tiles a row, and more rows
        // Z-flip order runs through pairs of columns of tiles
        const int pairs =
            GST_VIDEO_FORMAT_INFO_TILE_MODE(info.finfo) == GST_VIDEO_TILE_MODE_ZFLIPZ_2X2;
        const guint x_tiles = GST_VIDEO_TILE_X_TILES(stride) + (random_int(1, 3) << pairs);
        const guint y_tiles = GST_VIDEO_TILE_Y_TILES(stride) + random_int(0, 1);
        f->stride[p] = GST_VIDEO_TILE_MAKE_STRIDE(x_tiles, y_tiles);
        end = f->offset[p] + static_cast<size_t>(x_tiles) * y_tiles *
                                 GST_VIDEO_FORMAT_INFO_TILE_SIZE(info.finfo, p);
      } else {
        f->stride[p] = static_cast<gint>(round_up(stride + random_int(1, 70), align));
        end = f->offset[p] + static_cast<size_t>(f->stride[p]) * plane_rows(info.finfo, p, height);
      }
    }
    f->bytes.resize(end + random_int(0, 16));
  }
  fill_random(f->bytes);
  return true;
}

// The pixels GStreamer's unpack function gives: every one but in MT2110T
// and MT2110R (GStreamer 1.24+), whose unpack (1.26.2) writes the whole 16
// pixels wide tiles of a row only and leaves the last width % 16 pixels as
// the line held them (test_depths holds those to the format's description).
std::vector<bool> unpacked_pixels(GstVideoFormat format, int width, int height) {
  int unpacked = width;
#if GST_CHECK_VERSION(1, 24, 0)
  if (format == GST_VIDEO_FORMAT_MT2110T || format == GST_VIDEO_FORMAT_MT2110R)
    unpacked = width / 16 * 16;
#endif
  std::vector<bool> given(static_cast<size_t>(width) * height);
  for (size_t i = 0; i < given.size(); ++i) given[i] = static_cast<int>(i % width) < unpacked;
  return given;
}

// The 16-bit gray of every pixel, row by row: each row unpacked by
// GStreamer's own unpack function (to AYUV/ARGB, or AYUV64/ARGB64 for deep
// formats, with TRUNCATE_RANGE: a d-bit code v comes back as v << (8 - d)
// or v << (16 - d)), the code recovered, then the formula.
std::vector<uint32_t> reference_gray16(const InputBytes &f, bool limited, const Q16 &w) {
  const GstVideoFormatInfo *finfo = gst_video_format_get_info(f.format);
  const Family family = family_of(finfo);
  const bool wide = finfo->unpack_format == GST_VIDEO_FORMAT_AYUV64 ||
                    finfo->unpack_format == GST_VIDEO_FORMAT_ARGB64;
  // each component's depth (RGB16: 5, 6, 5), at most what it is unpacked to
  int depth[3];
  for (guint c = 0; c < 3; ++c)
    depth[c] = GST_VIDEO_FORMAT_INFO_DEPTH(finfo, std::min(c, finfo->n_components - 1));
  for (int d : depth) EXPECT_LE(d, wide ? 16 : 8) << gst_video_format_to_string(f.format);
  const int unpacked_bits = wide ? 16 : 8;
  // GStreamer's unpack reads whole pixel groups: UYVP's two pixels in 5
  // bytes run past a frame 1 pixel wide (4 bytes). It reads a copy with
  // room after the frame; the element is given the frame's bytes alone.
  std::vector<uint8_t> readable(f.bytes);
  readable.resize(f.bytes.size() + 16);
  gpointer data[GST_VIDEO_MAX_PLANES] = {};
  gint stride[GST_VIDEO_MAX_PLANES] = {};
  for (guint p = 0; p < f.planes; ++p) {
    data[p] = readable.data() + f.offset[p];
    stride[p] = f.stride[p];
  }
  std::vector<uint16_t> line(static_cast<size_t>(f.width + 64) * 4);
  std::vector<uint32_t> gray(static_cast<size_t>(f.width) * f.height);
  for (int y = 0; y < f.height; ++y) {
    finfo->unpack_func(finfo, GST_VIDEO_PACK_FLAG_TRUNCATE_RANGE, line.data(), data, stride, 0, y,
                       f.width);
    const auto *bytes = reinterpret_cast<const uint8_t *>(line.data());
    for (int x = 0; x < f.width; ++x) {
      uint32_t code[3];  // R G B or Y U V (A left out)
      for (int k = 0; k < 3; ++k)
        code[k] = (wide ? line[4 * x + k + 1] : bytes[4 * x + k + 1]) >> (unpacked_bits - depth[k]);
      uint32_t &out = gray[static_cast<size_t>(y) * f.width + x];
      if (family == Family::Rgb)
        out = rgb_to_16(code, depth, w);
      else
        out = luma_to_16(code[0], depth[0], family == Family::Yuv && limited);
    }
  }
  return gray;
}

// ---------------------------------------------------------- the element

// What the element made of one input buffer.
struct GrayResult {
  bool came_out = false;
  bool same_buffer = false;  // passed through: the input buffer itself
  std::string error;         // the error it posted, if any
  std::string format;        // of the negotiated output caps
  std::vector<uint32_t> pixels;
  std::string padding;  // "" or where a write past a row was found
};

// Adds a sentinel pool to the element's allocation query once downstream
// has answered (the harness offers none).
GstPadProbeReturn offer_sentinel_pool(GstPad *, GstPadProbeInfo *info, gpointer) {
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY(info);
  if (GST_QUERY_TYPE(query) != GST_QUERY_ALLOCATION) return GST_PAD_PROBE_OK;
  GstCaps *caps = nullptr;
  gst_query_parse_allocation(query, &caps, nullptr);
  GstVideoInfo vinfo;
  if (!caps || !gst_video_info_from_caps(&vinfo, caps) ||
      gst_query_get_n_allocation_pools(query) > 0)
    return GST_PAD_PROBE_OK;
  auto *pool = static_cast<GstBufferPool *>(
      gst_object_ref_sink(g_object_new(test_sentinel_pool_get_type(), nullptr)));
  gst_query_add_allocation_pool(query, pool, GST_VIDEO_INFO_SIZE(&vinfo), 1, 0);
  gst_object_unref(pool);
  return GST_PAD_PROBE_OK;
}

// The gray pixels of buf (a width x height frame of format, honouring its
// video meta), and whether the bytes after each row still hold the pool's
// sentinel (checked = the buffer came from the sentinel pool).
void read_gray(GstBuffer *buf, GstVideoFormat format, int width, int height, bool check_padding,
               GrayResult *result) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, format, width, height);
  GstVideoFrame frame;
  if (!gst_video_frame_map(&frame, &info, buf, GST_MAP_READ)) {
    ADD_FAILURE() << "the output buffer does not hold a " << width << "x" << height << " "
                  << gst_video_format_to_string(format) << " frame";
    return;
  }
  const int bytes_per_pixel = format == GST_VIDEO_FORMAT_GRAY8 ? 1 : 2;
  const auto *data = static_cast<const uint8_t *>(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0));
  const size_t stride = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
  const size_t row_bytes = static_cast<size_t>(width) * bytes_per_pixel;
  result->pixels.resize(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y) {
    const uint8_t *row = data + y * stride;
    for (int x = 0; x < width; ++x)
      result->pixels[static_cast<size_t>(y) * width + x] =
          bytes_per_pixel == 1 ? row[x] : GST_READ_UINT16_LE(row + 2 * x);
    for (size_t i = row_bytes; check_padding && i < stride && result->padding.empty(); ++i)
      if (row[i] != kPoolSentinel)
        result->padding = "row " + std::to_string(y) + " written at byte " + std::to_string(i) +
                          " (its pixels end at byte " + std::to_string(row_bytes) + ")";
  }
  gst_video_frame_unmap(&frame);
}

// Pushes in (transfer full) with these caps through a new cudagray with
// these settings whose downstream takes only out_format, and reads what
// comes out.
// backend=cpu unless settings say otherwise.
GrayResult convert(const std::string &caps, GstBuffer *in, GstVideoFormat out_format, int width,
                   int height, const std::vector<std::string> &settings) {
  std::vector<std::string> all = {"backend=cpu"};
  all.insert(all.end(), settings.begin(), settings.end());
  Harness harness(all);
  gst_harness_set_sink_caps_str(
      harness.h,
      (std::string("video/x-raw,format=") + gst_video_format_to_string(out_format)).c_str());
  GstPad *src = gst_element_get_static_pad(harness.element(), "src");
  gst_pad_add_probe(
      src,
      static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM | GST_PAD_PROBE_TYPE_PULL),
      offer_sentinel_pool, nullptr, nullptr);
  gst_object_unref(src);
  harness.set_caps(caps);
  GstBuffer *kept = gst_buffer_ref(in);
  GrayResult result;
  gst_harness_push(harness.h, in);
  drain_element(harness);
  gst_harness_push_event(harness.h, gst_event_new_eos());
  GstBuffer *out = gst_harness_try_pull(harness.h);
  result.error = harness.pop_message(GST_MESSAGE_ERROR);
  if (out) {
    result.came_out = true;
    result.same_buffer = out == kept;
    GstCaps *out_caps = gst_pad_get_current_caps(harness.h->sinkpad);
    if (out_caps) {
      const gchar *f = gst_structure_get_string(gst_caps_get_structure(out_caps, 0), "format");
      result.format = f ? f : "";
      gst_caps_unref(out_caps);
    }
    read_gray(out, out_format, width, height, !result.same_buffer, &result);
    gst_buffer_unref(out);
  }
  gst_buffer_unref(kept);
  return result;
}

// The element's settings that choose these weights.
std::vector<std::string> weight_settings(const WeightChoice &c) {
  if (c.matrix != Matrix::Custom) return {"matrix=" + c.name};
  std::ostringstream text;
  text << "weights=" << c.k.r << "," << c.k.g << "," << c.k.b;
  return {text.str()};
}

// Compares the element's pixels with the expected ones where wanted (all
// pixels when wanted is empty); reports the first few that differ.
::testing::AssertionResult same_gray(const std::vector<uint32_t> &got,
                                     const std::vector<uint32_t> &expected, int width,
                                     const std::vector<bool> &wanted = {}) {
  if (got.size() != expected.size())
    return ::testing::AssertionFailure()
           << got.size() << " pixels came out, " << expected.size() << " expected";
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    if ((!wanted.empty() && !wanted[i]) || got[i] == expected[i]) continue;
    if (bad++ < 5)
      first += " (" + std::to_string(i % width) + "," + std::to_string(i / width) +
               "): " + std::to_string(got[i]) + ", expected " + std::to_string(expected[i]);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " pixels differ:" << first;
}

std::string size_text(int width, int height) {
  return std::to_string(width) + "x" + std::to_string(height);
}

std::vector<const GstCudaGrayFormat *> video_rows() {
  guint n = 0;
  const GstCudaGrayFormat *table = gst_cuda_gray_formats(&n);
  std::vector<const GstCudaGrayFormat *> rows;
  for (guint i = 0; i < n; ++i)
    if (table[i].kind != GST_CUDA_GRAY_KIND_BAYER) rows.push_back(&table[i]);
  return rows;
}

}  // namespace

// ------------------------------------------------ every video/x-raw format

// The test's parameters are the row's name (a readable test name) and the
// backend; the row itself comes from the table. The CUDA backend's cases
// need a GPU (skipped with the reason without one).
class EveryFormat : public ::testing::TestWithParam<std::tuple<const char *, const char *>> {
 protected:
  void SetUp() override {
    if (backend() == "cuda") SKIP_WITHOUT_GPU();
  }
  const GstCudaGrayFormat &row() const {
    for (const GstCudaGrayFormat *f : video_rows())
      if (std::strcmp(f->name, std::get<0>(GetParam())) == 0) return *f;
    throw std::runtime_error("no row");
  }
  std::string backend() const { return std::get<1>(GetParam()); }
};

// A random frame of the format at each size, tight and padded, in limited,
// full and default colorimetry, with weights changing from case to case:
// GRAY8 and GRAY16_LE equal the formula applied to GStreamer's unpacking of
// the frame on every pixel, agree with each other, and leave each row's
// padding alone. 1920x1080 (once, padded, bt709) is big enough for the CPU
// backend to use a second thread.
TEST_P(EveryFormat, GrayIsTheFormulaOnEveryPixel) {
  const GstCudaGrayFormat &row = this->row();
  const GstVideoFormatInfo *finfo = gst_video_format_get_info(row.format);
  ASSERT_NE(finfo, nullptr);
  ASSERT_NE(finfo->unpack_func, nullptr);
  const Family family = family_of(finfo);
  EXPECT_EQ(family == Family::Gray, row.kind == GST_CUDA_GRAY_KIND_GRAY)
      << "GStreamer and the format table class " << row.name << " differently";
  // The CUDA backend's kernels meet the CPU on every layout, size, range and
  // row alignment in test_cuda; here each format's frames through the
  // element on CUDA (upload of its planes, GRAY16 download) at two sizes,
  // padded and not, limited and full range: every case starts a CUDA
  // backend, which takes long enough to keep to these.
  const bool cuda = backend() == "cuda";
  const std::vector<Size> sizes =
      cuda ? std::vector<Size>{{641, 481}, {4097, 3}}
           : std::vector<Size>{{1, 1}, {2, 2}, {641, 481}, {4097, 3}, {1920, 1080}};
  size_t case_index = 0;
  for (const Size &size : sizes) {
    const bool once = size.width == 1920;
    std::vector<const char *> colorimetries = {"bt709"};  // limited
    if (!once) colorimetries = {"", "bt709", "1:3:5:1"};  // default, limited, full
    if (cuda) colorimetries = {size.width == 641 ? "bt709" : "1:3:5:1"};
    for (const char *colorimetry : colorimetries) {
      for (bool padded : {false, true}) {
        if (once && !padded) continue;
        if (cuda && padded != (size.width == 641)) continue;  // 641x481 padded, 4097x3 not
        const WeightChoice &weights = kWeightChoices[case_index++ % kWeightChoices.size()];
        const std::string trace = size_text(size.width, size.height) +
                                  " colorimetry=" + (*colorimetry ? colorimetry : "(none)") +
                                  (padded ? ", padded strides" : ", GStreamer's strides") + ", " +
                                  weights.name;
        SCOPED_TRACE(trace);
        InputBytes in;
        if (!random_input(row.format, size.width, size.height, padded, &in)) {
          std::printf("%s: GStreamer's video info refuses %s, skipped\n", row.name,
                      size_text(size.width, size.height).c_str());
          continue;
        }
        std::string caps = caps_string(row.name, size.width, size.height);
        if (*colorimetry) caps += std::string(",colorimetry=") + colorimetry;
        GstVideoInfo info;
        GstCaps *parsed = gst_caps_from_string(caps.c_str());
        ASSERT_TRUE(gst_video_info_from_caps(&info, parsed));
        gst_caps_unref(parsed);
        const bool limited = info.colorimetry.range != GST_VIDEO_COLOR_RANGE_0_255;
        const std::vector<uint32_t> expected16 = reference_gray16(in, limited, q16_of(weights));
        std::vector<uint32_t> expected8(expected16.size());
        std::transform(expected16.begin(), expected16.end(), expected8.begin(), gray8_of);

        GrayResult out[2];
        const GstVideoFormat out_formats[2] = {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_GRAY16_LE};
        for (int i = 0; i < 2; ++i) {
          SCOPED_TRACE(gst_video_format_to_string(out_formats[i]));
          std::vector<std::string> settings = weight_settings(weights);
          settings.push_back("backend=" + backend());
          out[i] = convert(caps, in.buffer(), out_formats[i], size.width, size.height, settings);
          ASSERT_TRUE(out[i].came_out) << "no output; error: " << out[i].error;
          EXPECT_EQ(out[i].error, "");
          EXPECT_EQ(out[i].format, gst_video_format_to_string(out_formats[i]));
          EXPECT_EQ(out[i].same_buffer, row.format == out_formats[i]) << "passthrough";
          EXPECT_EQ(out[i].padding, "") << "a write past a row";
          EXPECT_TRUE(same_gray(out[i].pixels, i == 0 ? expected8 : expected16, size.width,
                                unpacked_pixels(row.format, size.width, size.height)));
        }
        std::vector<uint32_t> reduced(out[1].pixels.size());
        std::transform(out[1].pixels.begin(), out[1].pixels.end(), reduced.begin(), gray8_of);
        EXPECT_TRUE(same_gray(out[0].pixels, reduced, size.width))
            << "GRAY8 is not round(GRAY16_LE / 257) of the same frame";
      }
    }
  }
}

namespace {

std::vector<const char *> video_row_names() {
  std::vector<const char *> names;
  for (const GstCudaGrayFormat *f : video_rows()) names.push_back(f->name);
  return names;
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(FormatTable, EveryFormat,
                         ::testing::Combine(::testing::ValuesIn(video_row_names()),
                                            ::testing::Values("cpu", "cuda")),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

// ------------------------------------------------ gray in: passthrough and re-scaling

namespace {

// A random gray frame of GStreamer's layout: its bytes, and a buffer of them.
InputBytes random_gray(GstVideoFormat format, int width, int height) {
  InputBytes in;
  EXPECT_TRUE(random_input(format, width, height, false, &in));
  return in;
}

uint32_t word_le(const InputBytes &in, int x, int y) {
  return GST_READ_UINT16_LE(&in.bytes[in.offset[0] + y * in.stride[0] + 2 * x]);
}
uint32_t word_be(const InputBytes &in, int x, int y) {
  return GST_READ_UINT16_BE(&in.bytes[in.offset[0] + y * in.stride[0] + 2 * x]);
}

}  // namespace

// GRAY16_LE to GRAY16_LE leaves as the very same buffer, untouched.
TEST(GrayInput, Gray16LePassesThroughUntouched) {
  Harness harness({"backend=cpu"});
  gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY16_LE");
  harness.set_caps(caps_string("GRAY16_LE", 33, 7));
  const InputBytes in = random_gray(GST_VIDEO_FORMAT_GRAY16_LE, 33, 7);
  GstBuffer *buf = in.buffer();
  gst_buffer_ref(buf);
  ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(harness.h);
  EXPECT_EQ(out, buf);  // the very same buffer: no copy
  EXPECT_TRUE(gst_base_transform_is_passthrough(GST_BASE_TRANSFORM(harness.element())));
  EXPECT_EQ(gst_buffer_memcmp(out, 0, in.bytes.data(), in.bytes.size()), 0);
  gst_buffer_unref(out);
  gst_buffer_unref(buf);
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR), "");
}

// GRAY8 to GRAY16_LE: 257 * v. GRAY16_BE to GRAY16_LE: the bytes swapped.
// GRAY16_LE (and _BE) to GRAY8: (v + 128) / 257. Never passed through, never
// range-expanded (bt709 caps say limited range: it does not apply to gray).
TEST(GrayInput, RescaledBetweenDepthsAndByteOrders) {
  struct Case {
    GstVideoFormat in, out;
    uint32_t (*expected)(const InputBytes &, int, int);
  };
  const Case cases[] = {
      {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_GRAY16_LE,
       [](const InputBytes &in, int x, int y) -> uint32_t {
         return 257u * in.bytes[in.offset[0] + y * in.stride[0] + x];
       }},
      {GST_VIDEO_FORMAT_GRAY16_BE, GST_VIDEO_FORMAT_GRAY16_LE,
       [](const InputBytes &in, int x, int y) { return word_be(in, x, y); }},
      {GST_VIDEO_FORMAT_GRAY16_LE, GST_VIDEO_FORMAT_GRAY8,
       [](const InputBytes &in, int x, int y) { return (word_le(in, x, y) + 128) / 257; }},
      {GST_VIDEO_FORMAT_GRAY16_BE, GST_VIDEO_FORMAT_GRAY8,
       [](const InputBytes &in, int x, int y) { return (word_be(in, x, y) + 128) / 257; }},
  };
  for (const Case &c : cases)
    for (const Size &size : {Size{1, 1}, Size{33, 7}, Size{641, 481}})
      for (const char *colorimetry : {"", ",colorimetry=bt709"}) {
        SCOPED_TRACE(std::string(gst_video_format_to_string(c.in)) + " to " +
                     gst_video_format_to_string(c.out) + " " + size_text(size.width, size.height) +
                     colorimetry);
        const InputBytes in = random_gray(c.in, size.width, size.height);
        const GrayResult out = convert(
            caps_string(gst_video_format_to_string(c.in), size.width, size.height) + colorimetry,
            in.buffer(), c.out, size.width, size.height, {});
        ASSERT_TRUE(out.came_out) << out.error;
        EXPECT_FALSE(out.same_buffer);
        EXPECT_EQ(out.padding, "");
        std::vector<uint32_t> expected;
        for (int y = 0; y < size.height; ++y)
          for (int x = 0; x < size.width; ++x) expected.push_back(c.expected(in, x, y));
        EXPECT_TRUE(same_gray(out.pixels, expected, size.width));
      }
}

// ------------------------------------------------ Bayer: what bayer2rgb gives

namespace {

// Where bayer2rgb's output depends on the frame alone. Elsewhere it reads
// memory that is not the frame's (the byte before the row, scratch lines it
// never wrote, or past the row's end) or leaves the pixel unwritten, so
// those pixels cannot be compared (bayer.h: cudagray defines them from the
// frame's own edge pixels instead):
// - rows: with height 1 no row has a row above and below it, with height 2
//   the last row's row below is a scratch line never written; every row is
//   defined from height 3 on;
// - columns: bayer2rgb writes only width / 2 pixel pairs, so an odd width's
//   last column is never written; its row pass fills columns 0 and 1, pairs
//   from column 2 while two columns are left, then the last two columns, so
//   an odd width (5 and more) leaves column width - 3 unfilled; column 0 of
//   a width-2 row is computed from the byte before the row; column 1 needs
//   column 2 unless the last-two-columns step covers it, and column 0 needs
//   column 1.
std::vector<bool> bayer2rgb_defined(int width, int height) {
  std::vector<bool> column(width, false);
  auto in_row = [&](int i) { return i >= 0 && i < width; };
  auto fill = [&](int x, bool defined) {
    if (in_row(x)) column[x] = defined;
  };
  fill(0, in_row(0) && in_row(1));
  fill(1, in_row(0) && in_row(1) && in_row(2));
  for (int pair = 0; pair < (width - 4) / 2; ++pair) {  // none below width 6
    fill(2 + 2 * pair, true);
    fill(3 + 2 * pair, true);
  }
  for (int x : {width - 2, width - 1})  // even: itself and its left; odd: its left and itself
    if (x >= 0) fill(x, in_row(x) && in_row(x - 1));
  std::vector<bool> defined(static_cast<size_t>(width) * height, false);
  for (int y = 0; y < height; ++y) {
    const bool row = height >= 3 || (height == 2 && y == 0);
    for (int x = 0; x < width; ++x)
      defined[static_cast<size_t>(y) * width + x] = row && x < 2 * (width / 2) && column[x];
  }
  return defined;
}

// bayer2rgb 1.24.0 to 1.24.12 and 1.26.0 to 1.26.2 leave every output frame
// unfilled (fixed in 1.24.13 and 1.26.3): there the element is not run and
// the model above stands in for it. Empty when this one works.
std::string bayer2rgb_broken() {
  GstPlugin *plugin = gst_registry_find_plugin(gst_registry_get(), "bayer");
  if (!plugin) return "bayer2rgb is not installed";
  guint major = 0, minor = 0, micro = 0;
  sscanf(gst_plugin_get_version(plugin), "%u.%u.%u", &major, &minor, &micro);
  const std::string version = gst_plugin_get_version(plugin);
  gst_object_unref(plugin);
  const bool broken = major == 1 && ((minor == 24 && micro <= 12) || (minor == 26 && micro <= 2));
  return broken ? "bayer2rgb " + version +
                      " leaves its output frames unfilled (fixed in 1.24.13 and 1.26.3)"
                : "";
}

std::string bayer_caps(const std::string &phase, int width, int height) {
  return "video/x-bayer,format=" + phase + ",width=" + std::to_string(width) +
         ",height=" + std::to_string(height) + ",framerate=30/1";
}

class Bayer : public ::testing::TestWithParam<const char *> {};

}  // namespace

// Random mosaics (rows of GST_ROUND_UP_4(width) bytes, padding random too)
// of every phase and many sizes: gray straight from the mosaic equals gray
// from bayer2rgb's RGBx bit for bit, and the formula on the model of
// bayer2rgb above, for GRAY8 and GRAY16_LE and three choices of weights,
// wherever bayer2rgb's output is defined.
TEST_P(Bayer, EqualsBayer2rgbThenCudagray) {
  const std::string phase = GetParam();
  std::vector<Size> sizes = {{640, 480}, {641, 481}, {4097, 3}, {4096, 3}, {1920, 1080}, {2, 2},
                             {4, 4},     {6, 5},     {3, 3},    {5, 7},    {7, 4},       {1, 1},
                             {2, 1},     {1, 2},     {4, 2},    {64, 47}};
  for (int i = 0; i < 4; ++i) sizes.push_back({random_int(1, 300), random_int(1, 40)});
  const WeightChoice choices[] = {kWeightChoices[0], kWeightChoices[1], kWeightChoices[3]};
  for (const Size &size : sizes) {
    const std::string trace = phase + " " + size_text(size.width, size.height);
    SCOPED_TRACE(trace);
    const int stride = GST_ROUND_UP_4(size.width);
    std::vector<uint8_t> mosaic(static_cast<size_t>(stride) * size.height);
    fill_random(mosaic);
    const std::string caps = bayer_caps(phase, size.width, size.height);

    // bayer2rgb writes outside its line buffers at width 1 (valgrind: invalid
    // writes; none of its output is defined there anyway), and breaks under
    // ORC's JIT as said at the top: there only cudagray runs, and must give
    // a frame without an error.
    const bool jit_breaks = !kOrcBackupCode && (size.width % 2 == 1 || size.width == 2);
    const std::string broken = bayer2rgb_broken();
    GstBuffer *rgbx = nullptr;
    std::string rgbx_caps_string;
    if (!broken.empty()) {
      std::printf("%s: %s; compared with the model only\n", trace.c_str(), broken.c_str());
    } else if (size.width >= 2 && !jit_breaks) {
      GstHarness *demosaic = gst_harness_new("bayer2rgb");
      ASSERT_NE(demosaic, nullptr);
      gst_harness_set_src_caps_str(demosaic, caps.c_str());
      gst_harness_set_sink_caps_str(demosaic, "video/x-raw,format=RGBx");
      ASSERT_EQ(gst_harness_push(demosaic, gst_buffer_new_memdup(mosaic.data(), mosaic.size())),
                GST_FLOW_OK);
      rgbx = gst_harness_try_pull(demosaic);
      GstCaps *rgbx_caps = gst_pad_get_current_caps(demosaic->sinkpad);
      gst_harness_teardown(demosaic);
      ASSERT_NE(rgbx, nullptr) << "bayer2rgb gave nothing";
      ASSERT_NE(rgbx_caps, nullptr);
      gchar *text = gst_caps_to_string(rgbx_caps);
      rgbx_caps_string = text;
      g_free(text);
      gst_caps_unref(rgbx_caps);
    } else {
      std::printf("%s: cudagray alone (no bayer2rgb at this width)\n", trace.c_str());
    }

    const std::vector<bool> defined = bayer2rgb_defined(size.width, size.height);
    const std::vector<uint32_t> model = bayer2rgb_model(
        mosaic_samples(mosaic, stride, size.width, size.height), size.width, size.height, phase);
    for (const WeightChoice &weights : choices) {
      SCOPED_TRACE(weights.name);
      std::vector<uint32_t> direct8;
      for (GstVideoFormat out_format : {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_GRAY16_LE}) {
        SCOPED_TRACE(gst_video_format_to_string(out_format));
        const GrayResult direct =
            convert(caps, gst_buffer_new_memdup(mosaic.data(), mosaic.size()), out_format,
                    size.width, size.height, weight_settings(weights));
        ASSERT_TRUE(direct.came_out) << direct.error;
        EXPECT_EQ(direct.error, "");
        EXPECT_EQ(direct.padding, "");
        std::vector<uint32_t> formula(model.size() / 3);
        for (size_t i = 0; i < formula.size(); ++i) {
          const uint32_t g16 =
              rgb_to_16(model[3 * i], model[3 * i + 1], model[3 * i + 2], 8, q16_of(weights));
          formula[i] = out_format == GST_VIDEO_FORMAT_GRAY8 ? gray8_of(g16) : g16;
        }
        EXPECT_TRUE(same_gray(direct.pixels, formula, size.width, defined))
            << "against the model of bayer2rgb";
        if (rgbx) {
          const GrayResult via = convert(rgbx_caps_string, gst_buffer_ref(rgbx), out_format,
                                         size.width, size.height, weight_settings(weights));
          ASSERT_TRUE(via.came_out) << via.error;
          EXPECT_TRUE(same_gray(direct.pixels, via.pixels, size.width, defined));
        }
        if (out_format == GST_VIDEO_FORMAT_GRAY8) {
          direct8 = direct.pixels;
        } else {
          std::vector<uint32_t> reduced(direct.pixels.size());
          std::transform(direct.pixels.begin(), direct.pixels.end(), reduced.begin(), gray8_of);
          EXPECT_TRUE(same_gray(direct8, reduced, size.width))
              << "GRAY8 is not round(GRAY16_LE / 257) of the same mosaic";
        }
      }
    }
    if (rgbx) gst_buffer_unref(rgbx);
  }
}

INSTANTIATE_TEST_SUITE_P(Phases, Bayer, ::testing::Values("bggr", "gbrg", "grbg", "rggb"),
                         [](const auto &info) { return std::string(info.param); });

#if GST_CHECK_VERSION(1, 24, 0)
namespace {

// A 16-bit Bayer format: its phase, bits and endianness.
struct DeepBayerFormat {
  const char *phase;
  int bits;
  bool big_endian;
  std::string name() const { return phase + std::to_string(bits) + (big_endian ? "be" : "le"); }
};

void PrintTo(const DeepBayerFormat &format, std::ostream *os) { *os << format.name(); }

class DeepBayer : public ::testing::TestWithParam<DeepBayerFormat> {};

}  // namespace

// 16-bit Bayer (GStreamer 1.24+): random mosaics (rows of
// GST_ROUND_UP_4(width) words, as bayer2rgb reads them) of codes within the
// format's bits, of every 16-bit word (bayer2rgb does not mask them), and
// flat ones at 0, the largest code and 0xFFFF. Gray is the formula on
// bayer2rgb's RGBA64 picture: the model's colours scaled as bayer2rgb
// scales them, min(65535, (c * 65535) >> bits), for GRAY16_LE and GRAY8
// (round(GRAY16 / 257)), wherever bayer2rgb's output is defined.
// (bayer2rgb itself is not run: the 1.26.2 here leaves its frames
// unfilled, see bayer2rgb_broken.)
TEST_P(DeepBayer, EqualsTheFormulaOnBayer2rgbsRgba64) {
  const DeepBayerFormat format = GetParam();
  const uint32_t largest = (1u << format.bits) - 1;
  struct Case {
    Size size;
    enum { kInRange, kAnyWord, kFlat } fill;
    uint32_t flat;
  };
  std::vector<Case> cases = {{{641, 481}, Case::kInRange, 0}, {{4097, 3}, Case::kAnyWord, 0},
                             {{6, 5}, Case::kInRange, 0},     {{64, 47}, Case::kAnyWord, 0},
                             {{2, 2}, Case::kInRange, 0},     {{1, 1}, Case::kInRange, 0},
                             {{9, 9}, Case::kFlat, 0},        {{9, 9}, Case::kFlat, largest},
                             {{9, 9}, Case::kFlat, 0xFFFF}};
  cases.push_back({{random_int(1, 300), random_int(1, 40)}, Case::kInRange, 0});
  const WeightChoice choices[] = {kWeightChoices[1], kWeightChoices[3]};
  for (const Case &c : cases) {
    const Size &size = c.size;
    SCOPED_TRACE(format.name() + " " + size_text(size.width, size.height) +
                 (c.fill == Case::kFlat ? " flat " + std::to_string(c.flat) : ""));
    const int stride = GST_ROUND_UP_4(size.width) * 2;
    std::vector<uint8_t> mosaic(static_cast<size_t>(stride) * size.height);
    fill_random(mosaic);
    for (int y = 0; y < size.height; ++y)
      for (int x = 0; x < size.width; ++x) {
        uint8_t *p = &mosaic[static_cast<size_t>(y) * stride + 2 * x];
        uint32_t word = p[0] | p[1] << 8;
        if (c.fill == Case::kInRange) word &= largest;
        if (c.fill == Case::kFlat) word = c.flat;
        p[format.big_endian ? 1 : 0] = word & 0xFF;
        p[format.big_endian ? 0 : 1] = word >> 8;
      }
    const std::string caps = "video/x-bayer,format=" + format.name() +
                             ",width=" + std::to_string(size.width) +
                             ",height=" + std::to_string(size.height) + ",framerate=30/1";
    const std::vector<bool> defined = bayer2rgb_defined(size.width, size.height);
    const std::vector<uint32_t> model = bayer2rgb_model(
        mosaic_samples(mosaic, stride, size.width, size.height, 2, format.big_endian), size.width,
        size.height, format.phase);
    auto to16 = [&](uint32_t v) {
      return static_cast<uint32_t>(std::min<uint64_t>(65535, (uint64_t{v} * 65535) >> format.bits));
    };
    for (const WeightChoice &weights : choices) {
      SCOPED_TRACE(weights.name);
      std::vector<uint32_t> formula16(model.size() / 3), formula8(model.size() / 3);
      for (size_t i = 0; i < formula16.size(); ++i) {
        formula16[i] = rgb_to_16(to16(model[3 * i]), to16(model[3 * i + 1]), to16(model[3 * i + 2]),
                                 16, q16_of(weights));
        formula8[i] = gray8_of(formula16[i]);
      }
      for (GstVideoFormat out_format : {GST_VIDEO_FORMAT_GRAY8, GST_VIDEO_FORMAT_GRAY16_LE}) {
        SCOPED_TRACE(gst_video_format_to_string(out_format));
        const GrayResult direct =
            convert(caps, gst_buffer_new_memdup(mosaic.data(), mosaic.size()), out_format,
                    size.width, size.height, weight_settings(weights));
        ASSERT_TRUE(direct.came_out) << direct.error;
        EXPECT_EQ(direct.error, "");
        EXPECT_EQ(direct.padding, "");
        EXPECT_TRUE(same_gray(direct.pixels,
                              out_format == GST_VIDEO_FORMAT_GRAY8 ? formula8 : formula16,
                              size.width, defined));
        if (c.fill == Case::kFlat) {  // every pixel is defined: the flat colour
          const uint32_t flat16 =
              rgb_to_16(to16(c.flat), to16(c.flat), to16(c.flat), 16, q16_of(weights));
          const std::vector<uint32_t> all(direct.pixels.size(), out_format == GST_VIDEO_FORMAT_GRAY8
                                                                    ? gray8_of(flat16)
                                                                    : flat16);
          EXPECT_TRUE(same_gray(direct.pixels, all, size.width));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, DeepBayer,
    ::testing::Values(DeepBayerFormat{"bggr", 10, false}, DeepBayerFormat{"gbrg", 12, true},
                      DeepBayerFormat{"grbg", 14, false}, DeepBayerFormat{"rggb", 16, true},
                      DeepBayerFormat{"rggb", 10, true}, DeepBayerFormat{"bggr", 16, false}),
    [](const auto &info) { return info.param.name(); });

// Every 16-bit Bayer name of the format table is one of the 32 GStreamer
// gives (4 phases, 10/12/14/16 bits, le/be) and reads samples of its bits.
TEST(DeepBayerTable, NamesEveryPhaseDepthAndEndianness) {
  std::set<std::string> expected;
  for (const char *phase : {"bggr", "gbrg", "grbg", "rggb"})
    for (int bits : {10, 12, 14, 16})
      for (bool big_endian : {false, true})
        expected.insert(DeepBayerFormat{phase, bits, big_endian}.name());
  guint n;
  const GstCudaGrayFormat *table = gst_cuda_gray_formats(&n);
  std::set<std::string> found;
  for (guint i = 0; i < n; ++i)
    if (table[i].kind == GST_CUDA_GRAY_KIND_BAYER && layout_info(table[i].layout).depth == 16) {
      found.insert(table[i].name);
      const std::string name = table[i].name;
      EXPECT_EQ(table[i].sample_bits, std::stoi(name.substr(4, 2))) << name;
      EXPECT_EQ(layout_info(table[i].layout).name,
                std::string(name.substr(6) == "be" ? "Bayer16BE_" : "Bayer16_") +
                    char(toupper(name[0])) + char(toupper(name[1])) + char(toupper(name[2])) +
                    char(toupper(name[3])))
          << name;
    }
  EXPECT_EQ(found, expected);
}
#endif

// The exclusions above, spelled out for a few sizes.
TEST(BayerDefined, ExcludesOnlyWhatBayer2rgbLeavesUndefined) {
  auto undefined_columns = [](int width, int height, int y) {
    const std::vector<bool> d = bayer2rgb_defined(width, height);
    std::vector<int> columns;
    for (int x = 0; x < width; ++x)
      if (!d[static_cast<size_t>(y) * width + x]) columns.push_back(x);
    return columns;
  };
  EXPECT_EQ(undefined_columns(640, 480, 0), std::vector<int>{});
  EXPECT_EQ(undefined_columns(640, 480, 479), std::vector<int>{});
  EXPECT_EQ(undefined_columns(641, 481, 7), (std::vector<int>{638, 640}));
  EXPECT_EQ(undefined_columns(4097, 3, 2), (std::vector<int>{4094, 4096}));
  EXPECT_EQ(undefined_columns(4, 4, 3), std::vector<int>{});
  EXPECT_EQ(undefined_columns(6, 5, 4), std::vector<int>{});
  EXPECT_EQ(undefined_columns(5, 5, 2), (std::vector<int>{2, 4}));
  EXPECT_EQ(undefined_columns(3, 3, 1), std::vector<int>{2});
  EXPECT_EQ(undefined_columns(2, 2, 0), std::vector<int>{0});
  EXPECT_EQ(undefined_columns(2, 2, 1), (std::vector<int>{0, 1}));
  EXPECT_EQ(undefined_columns(4, 2, 0), std::vector<int>{});
  EXPECT_EQ(undefined_columns(4, 2, 1), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(undefined_columns(1, 1, 0), std::vector<int>{0});
}

// ------------------------------------------------ buffers too small

// A tiled plane whose tile stride (GST_VIDEO_TILE_MAKE_STRIDE) names too few
// tiles for the frame, or an odd number a row in Z-flip order (whose blocks
// are 2 tiles wide), is an error that names the tiles, not a read past them.
TEST(BadInput, TilesThatDoNotCoverTheFrameAreAnError) {
  struct Case {
    GstVideoFormat format;
    guint x_tiles, y_tiles;
    std::string message;
  };
  const Case cases[] = {
      // 64x48 in 4x4 tiles: 16 by 12 of them
      {GST_VIDEO_FORMAT_NV12_4L4, 15, 12,
       "Input buffer does not hold a 64x48 NV12_4L4 frame: plane 0's tiles (15 by 12 of them, "
       "stride 786447) do not cover its 64x48 pixels in the format's order"},
      {GST_VIDEO_FORMAT_NV12_4L4, 16, 11,
       "Input buffer does not hold a 64x48 NV12_4L4 frame: plane 0's tiles (16 by 11 of them, "
       "stride 720912) do not cover its 64x48 pixels in the format's order"},
      // 100x48 in 64x32 tiles: 2 by 2, and never 3 a row
      {GST_VIDEO_FORMAT_NV12_64Z32, 3, 2,
       "Input buffer does not hold a 100x48 NV12_64Z32 frame: plane 0's tiles (3 by 2 of them, "
       "stride 131075) do not cover its 100x48 pixels in the format's order"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.message);
    const int width = c.format == GST_VIDEO_FORMAT_NV12_4L4 ? 64 : 100, height = 48;
    InputBytes in;
    ASSERT_TRUE(random_input(c.format, width, height, false, &in));
    in.meta = true;
    in.stride[0] = GST_VIDEO_TILE_MAKE_STRIDE(c.x_tiles, c.y_tiles);
    in.bytes.resize(in.bytes.size() + 65536);  // room enough: the tiles are what is wrong
    Harness harness({"backend=cpu"});
    harness.set_caps(caps_string(gst_video_format_to_string(c.format), width, height));
    EXPECT_EQ(gst_harness_push(harness.h, in.buffer()), GST_FLOW_ERROR);
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR), c.message);
  }
}

// A buffer shorter than its caps' frame (the luma plane, or the mosaic, does
// not fit) is an error that names the size and format and what is missing,
// not a crash.
TEST(BadInput, BufferTooSmallNamesTheFrame) {
  struct Case {
    std::string caps;
    size_t size;
    std::string message;
  };
  const Case cases[] = {
    // v210 rows of 6 pixels in 16 bytes, GStreamer's stride 128 bytes per 48
    // pixels: 64 pixels are 10 groups and 4 pixels, the 4th of them in the
    // third 32-bit word of its group: 172 bytes of a 256-byte row
    {caps_string("v210", 64, 48), 12000,
     "Input buffer does not hold a 64x48 v210 frame: plane 0 (offset 0, stride 256) needs "
     "12204 bytes, the buffer has 12000"},
    // YUY2: 2 bytes a pixel, rows of GST_ROUND_UP_4(66) = 68 bytes
    {caps_string("YUY2", 33, 20), 1300,
     "Input buffer does not hold a 33x20 YUY2 frame: plane 0 (offset 0, stride 68) needs 1358 "
     "bytes, the buffer has 1300"},
    // P010_10LE: the luma plane alone, 2 bytes a pixel, does not fit
    {caps_string("P010_10LE", 64, 48), 5000,
     "Input buffer does not hold a 64x48 P010_10LE frame: plane 0 (offset 0, stride 128) needs "
     "6144 bytes, the buffer has 5000"},
    // Bayer: rows of GST_ROUND_UP_4(62) = 64 bytes, 62 of them pixels
    {bayer_caps("bggr", 62, 48), 3000,
     "Input buffer does not hold a 62x48 bggr frame: plane 0 (offset 0, stride 64) needs 3070 "
     "bytes, the buffer has 3000"},
#if GST_CHECK_VERSION(1, 24, 0)
    // 16-bit Bayer: rows of GST_ROUND_UP_4(62) = 64 words, 62 of them pixels
    {bayer_caps("rggb12be", 62, 48), 6000,
     "Input buffer does not hold a 62x48 rggb12be frame: plane 0 (offset 0, stride 128) needs "
     "6140 bytes, the buffer has 6000"},
#endif
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.caps);
    Harness harness({"backend=cpu"});
    harness.set_caps(c.caps);
    std::vector<uint8_t> bytes(c.size);
    fill_random(bytes);
    EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
              GST_FLOW_ERROR);
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR), c.message);
    EXPECT_EQ(gst_harness_try_pull(harness.h), nullptr);
  }
}
