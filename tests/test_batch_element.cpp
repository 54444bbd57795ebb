// SPDX-License-Identifier: LGPL-2.1-or-later
// The cudagraybatch element on the CPU backend (docs/batch.md): batches
// from appsrc frames of random bytes, odd sizes, padded strides and
// different formats a pad, every element against the documented formula
// written again here (each source's gray at its own size from the CPU
// converter, held to the gray formulas by test_kernels; the scaling and
// letterbox from tests/reference.h and the rule of docs/batch.md; the
// normalisation in binary32 operations); the timing of the ticks from
// timestamps alone (no clock, no sleeps: every wait is for a sample or a
// message, bounded); pads requested and released while playing; a flushing
// seek; the GstTensorMeta of GStreamer 1.26; mean and std from a modelinfo
// file's range; and the errors of invalid settings and files.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "element_harness.h"
#include "gstcudagraybatchmeta.h"
#include "reference.h"
#include "shell.h"

#ifdef CUDAGRAY_HAVE_GST_TENSOR_META
#include <gst/analytics/analytics.h>
#endif

using namespace cudagray;
using namespace cudagray::test;

namespace {

constexpr GstClockTime kWait = 10 * GST_SECOND;   // far past any healthy run
constexpr GstClockTime kTick = 40 * GST_MSECOND;  // 25 frames a second
const WeightChoice &kBT601 = kWeightChoices[0];

// A source frame: its caps, its bytes with the plane offsets and strides
// of its video meta, and its gray at 16 bits at its own size.
struct Source {
  std::string format;
  int width = 0, height = 0;
  std::vector<uint8_t> bytes;
  std::vector<gsize> offsets;
  std::vector<gint> strides;
  GrayImage gray16{1, 1, 0, 16};
  // The part of the frame the caps describe: all of it, or the rectangle of
  // a crop meta on each buffer (as videocrop attaches).
  Rect crop{0, 0, 0, 0};
  bool crop_meta = false;

  std::string caps() const {
    return "video/x-raw,format=" + format + ",width=" + std::to_string(crop.width) +
           ",height=" + std::to_string(crop.height) + ",framerate=25/1";
  }
  // A buffer of the frame at pts, one tick long.
  GstBuffer *buffer(GstClockTime pts) const {
    GstBuffer *buf = gst_buffer_new_memdup(bytes.data(), bytes.size());
    gsize offset[GST_VIDEO_MAX_PLANES] = {};
    gint stride[GST_VIDEO_MAX_PLANES] = {};
    for (size_t p = 0; p < offsets.size(); ++p) offset[p] = offsets[p], stride[p] = strides[p];
    gst_buffer_add_video_meta_full(buf, GST_VIDEO_FRAME_FLAG_NONE,
                                   gst_video_format_from_string(format.c_str()), width, height,
                                   offsets.size(), offset, stride);
    if (crop_meta) {
      GstVideoCropMeta *c = gst_buffer_add_video_crop_meta(buf);
      c->x = crop.x, c->y = crop.y, c->width = crop.width, c->height = crop.height;
    }
    GST_BUFFER_PTS(buf) = pts;
    GST_BUFFER_DURATION(buf) = kTick;
    return buf;
  }
};

// An RGB-family frame of random bytes in rows of random padding.
Source rgb_source(PixelLayout layout, int width, int height) {
  const TestFrame f = random_frame(layout, width, height, Rows::Padded);
  Source s{layout_info(layout).name, width, height, f.bytes, {f.offset[0]}, {int(f.stride[0])}};
  s.gray16 = cpu_reference(f, kBT601, 16);
  s.crop = {0, 0, width, height};
  return s;
}

// An NV12 frame: a random luma plane (its gray, limited range as NV12
// caps without colorimetry say) and a random chroma plane after it.
Source nv12_source(int width, int height) {
  const TestFrame luma = random_frame(PixelLayout::Luma, width, height, Rows::Padded);
  Source s{"NV12", width, height, luma.bytes, {luma.offset[0]}, {int(luma.stride[0])}};
  const size_t uv_stride = GST_ROUND_UP_2(width) + random_int(0, 30);
  s.offsets.push_back(s.bytes.size() + random_int(0, 20));
  s.strides.push_back(int(uv_stride));
  std::vector<uint8_t> uv(uv_stride * ((height + 1) / 2));
  fill_random(uv);
  s.bytes.resize(s.offsets[1]);
  s.bytes.insert(s.bytes.end(), uv.begin(), uv.end());
  s.gray16 = cpu_reference(luma, kBT601, 16, true);
  s.crop = {0, 0, width, height};
  return s;
}

// A frame as a source pushed it (a sample from an appsink before the
// batcher): RGBx or NV12, its planes where its video meta or caps say.
Source source_of(GstSample *sample) {
  GstVideoInfo info;
  EXPECT_TRUE(gst_video_info_from_caps(&info, gst_sample_get_caps(sample)));
  GstBuffer *buf = gst_sample_get_buffer(sample);
  const GstVideoMeta *meta = gst_buffer_get_video_meta(buf);
  const int planes = GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_NV12 ? 2 : 1;
  Source s{GST_VIDEO_INFO_NAME(&info), GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info)};
  s.bytes.resize(gst_buffer_get_size(buf));
  gst_buffer_extract(buf, 0, s.bytes.data(), s.bytes.size());
  TestFrame f{planes == 2 ? PixelLayout::Luma : PixelLayout::RGBx, s.width, s.height, s.bytes};
  for (int p = 0; p < planes; ++p) {
    s.offsets.push_back(meta ? meta->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(&info, p));
    s.strides.push_back(meta ? meta->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(&info, p));
  }
  f.offset[0] = s.offsets[0];
  f.stride[0] = s.strides[0];
  s.gray16 = cpu_reference(f, kBT601, 16,
                           info.colorimetry.range != GST_VIDEO_COLOR_RANGE_0_255 && planes == 2);
  s.crop = {0, 0, s.width, s.height};
  return s;
}

// What the batcher was set to make.
struct Settings {
  const char *dtype = "float32";
  int width = 64, height = 48;
  float mean = 0, std = 1;
  const char *backend = "cpu";

  std::string properties() const {
    return std::string("backend=") + backend + " dtype=" + dtype +
           " width=" + std::to_string(width) + " height=" + std::to_string(height) +
           " mean=" + std::to_string(mean) + " std=" + std::to_string(std);
  }
  size_t element_bytes() const { return dtype[0] == 'u' ? 1 : dtype[5] == '1' ? 2 : 4; }
};

// Where a source's picture goes in a slot (docs/batch.md, square pixels):
// the largest rectangle of its shape, rounded to nearest, centred.
Rect letterbox(int in_w, int in_h, int out_w, int out_h) {
  const int64_t wide = int64_t{in_w} * out_h, tall = int64_t{out_w} * in_h;
  if (wide == tall) return {0, 0, out_w, out_h};
  if (wide > tall) {
    const int h = std::clamp<int>((2 * int64_t{out_w} * in_h + in_w) / (2 * in_w), 1, out_h);
    return {0, (out_h - h) / 2, out_w, h};
  }
  const int w = std::clamp<int>((2 * int64_t{out_h} * in_w + in_h) / (2 * in_h), 1, out_w);
  return {(out_w - w) / 2, 0, w, out_h};
}

// The bytes of the element of gray g: (g / full scale - mean) / std in
// binary32 operations in that order (volatile: nothing wider, nothing
// fused), then binary16 as the compiler rounds it; or g itself.
std::vector<uint8_t> element_of(const Settings &s, int64_t g) {
  if (s.element_bytes() == 1) return {uint8_t(g)};
  volatile float v = float(g);
  v = v / 65535.0f;
  v = v - s.mean;
  v = v / s.std;
  std::vector<uint8_t> bytes(s.element_bytes());
  if (bytes.size() == 2) {
    const _Float16 h = _Float16(float(v));
    std::memcpy(bytes.data(), &h, 2);
  } else {
    const float f = v;
    std::memcpy(bytes.data(), &f, 4);
  }
  return bytes;
}

// A slot as a test expects it: the source of its frame and that frame's
// PTS, or absent (source nullptr).
struct Slot {
  const Source *source;
  GstClockTime pts;
  int pad;
};

// Checks a batch against the settings and its slots: caps, size, PTS,
// the meta of each slot, and every element.
void expect_batch(GstSample *sample, const Settings &s, const std::vector<Slot> &slots,
                  GstClockTime pts) {
  ASSERT_NE(sample, nullptr) << "no batch";
  const GstStructure *caps = gst_caps_get_structure(gst_sample_get_caps(sample), 0);
  int batch = 0, channels = 0, width = 0, height = 0;
  EXPECT_TRUE(gst_structure_has_name(caps, "application/x-cudagray-batch"));
  gst_structure_get_int(caps, "batch", &batch);
  gst_structure_get_int(caps, "channels", &channels);
  gst_structure_get_int(caps, "width", &width);
  gst_structure_get_int(caps, "height", &height);
  EXPECT_EQ(batch, int(slots.size()));
  EXPECT_EQ(channels, 1);
  EXPECT_EQ(width, s.width);
  EXPECT_EQ(height, s.height);
  EXPECT_STREQ(gst_structure_get_string(caps, "dtype"), s.dtype);

  GstBuffer *buf = gst_sample_get_buffer(sample);
  EXPECT_EQ(GST_BUFFER_PTS(buf), pts);
  const size_t slot_elements = size_t(s.width) * s.height;
  ASSERT_EQ(gst_buffer_get_size(buf), slots.size() * slot_elements * s.element_bytes());
  const GstCudaGrayBatchMeta *meta = gst_buffer_get_cuda_gray_batch_meta(buf);
  ASSERT_NE(meta, nullptr);
  ASSERT_EQ(meta->n_slots, slots.size());

  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(buf, &map, GST_MAP_READ));
  for (size_t n = 0; n < slots.size(); ++n) {
    const Source *src = slots[n].source;
    const GstCudaGrayBatchSlotInfo &info = meta->slots[n];
    EXPECT_EQ(info.pad_index, slots[n].pad) << "slot " << n;
    EXPECT_EQ(bool(info.present), src != nullptr) << "slot " << n;
    Conversion c;
    c.method = ScaleMethod::Area;
    c.out_depth = s.element_bytes() == 1 ? 8 : 16;
    if (src) {
      EXPECT_EQ(info.pts, slots[n].pts) << "slot " << n;
      c.crop = src->crop;
      c.dest = letterbox(c.crop.width, c.crop.height, s.width, s.height);
      EXPECT_DOUBLE_EQ(info.scale_x, double(c.crop.width) / c.dest.width) << "slot " << n;
      EXPECT_DOUBLE_EQ(info.scale_y, double(c.crop.height) / c.dest.height) << "slot " << n;
      EXPECT_DOUBLE_EQ(info.offset_x, -c.dest.x * info.scale_x) << "slot " << n;
      EXPECT_DOUBLE_EQ(info.offset_y, -c.dest.y * info.scale_y) << "slot " << n;
    }
    int wrong = 0;
    for (int y = 0; y < s.height; ++y)
      for (int x = 0; x < s.width; ++x) {
        const int64_t g = src ? expected_pixel(src->gray16, c, x, y) : 0;
        const std::vector<uint8_t> want = element_of(s, g);
        const uint8_t *got =
            map.data + ((n * s.height + y) * size_t(s.width) + x) * s.element_bytes();
        if (std::memcmp(got, want.data(), want.size()) != 0 && wrong++ == 0)
          ADD_FAILURE() << "slot " << n << " (" << (src ? src->format : "absent") << ") pixel ("
                        << x << ", " << y << "): gray " << g << " gives other bytes";
      }
    EXPECT_EQ(wrong, 0) << "elements of slot " << n << " that differ from the formula";
  }
  gst_buffer_unmap(buf, &map);
}

// A batcher fed by appsrcs a0, a1, ... (one a pad, sink_0, sink_1, ...)
// into appsink "out", played.
struct Rig {
  Pipeline pipeline;
  Rig(const Settings &s, const std::vector<std::string> &caps, const std::string &extra = "")
      : pipeline(description(s, caps.size(), extra)) {
    for (size_t i = 0; i < caps.size(); ++i) set_caps(i, caps[i]);
    EXPECT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  }
  static std::string description(const Settings &s, size_t pads, const std::string &extra) {
    std::string d =
        "cudagraybatch name=b " + s.properties() + " " + extra + " ! appsink name=out sync=false";
    for (size_t i = 0; i < pads; ++i)
      d += " appsrc name=a" + std::to_string(i) + " format=time ! b.sink_" + std::to_string(i);
    return d;
  }
  void set_caps(size_t pad, const std::string &caps) const {
    GstCaps *c = gst_caps_from_string(caps.c_str());
    g_object_set(pipeline.by_name(("a" + std::to_string(pad)).c_str()), "caps", c, nullptr);
    gst_caps_unref(c);
  }
  void push(size_t pad, const Source &s, GstClockTime pts) const {
    EXPECT_EQ(pipeline.push(("a" + std::to_string(pad)).c_str(), s.buffer(pts)), GST_FLOW_OK);
  }
  void end(size_t pad) const { pipeline.end_of_stream(("a" + std::to_string(pad)).c_str()); }
  GstSample *pull() const { return pipeline.pull("out", kWait); }
  // Whether the stream ended (EOS at the appsink) with no error.
  bool ended() const {
    GstSample *extra = pull();
    if (extra) {
      ADD_FAILURE() << "a batch more than expected";
      gst_sample_unref(extra);
      return false;
    }
    BusLog log;
    return pipeline.wait_end(kWait, &log) == GST_MESSAGE_EOS;
  }
};

void expect_and_unref(GstSample *sample, const Settings &s, const std::vector<Slot> &slots,
                      GstClockTime pts) {
  expect_batch(sample, s, slots, pts);
  if (sample) gst_sample_unref(sample);
}

// ------------------------------------------------------------------ tests

// Each test of this suite on each backend; CUDA's where a GPU is.
class BatchBackends : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda") SKIP_WITHOUT_GPU();
  }
};

INSTANTIATE_TEST_SUITE_P(, BatchBackends, ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return info.param; });

// The pipeline: two videotestsrc, 2x1x48x64 float32 batches.
TEST_P(BatchBackends, TwoTestSourcesGiveFloat32BatchesOfTwoSlots) {
  const Pipeline p(
      "videotestsrc num-buffers=3 ! cudagraybatch name=b width=64 height=48 dtype=float32 "
      "backend=" +
      GetParam() +
      " ! appsink name=out sync=false  videotestsrc num-buffers=3 "
      "pattern=ball ! b.");
  ASSERT_NE(p.play(), GST_STATE_CHANGE_FAILURE);
  for (int k = 0; k < 3; ++k) {
    GstSample *sample = p.pull("out", kWait);
    ASSERT_NE(sample, nullptr) << "batch " << k;
    GstCaps *want = gst_caps_from_string(
        "application/x-cudagray-batch,batch=2,channels=1,width=64,height=48,dtype=float32,"
        "framerate=30/1");
    EXPECT_TRUE(gst_caps_is_equal(gst_sample_get_caps(sample), want))
        << gst_caps_to_string(gst_sample_get_caps(sample));
    gst_caps_unref(want);
    GstBuffer *buf = gst_sample_get_buffer(sample);
    EXPECT_EQ(gst_buffer_get_size(buf), 2u * 1 * 48 * 64 * 4);
    EXPECT_EQ(GST_BUFFER_PTS(buf), gst_util_uint64_scale(k, GST_SECOND, 30));
    gst_sample_unref(sample);
  }
  EXPECT_EQ(p.pull("out", kWait), nullptr);
  EXPECT_EQ(p.wait_end(kWait), GST_MESSAGE_EOS);
}

// Batches in system memory come from a pool of the element's, as
// compositor's frames do (GstVideoAggregator makes one when downstream has
// none): not an allocation a batch. Its memory is reused as batches come
// back (appsink holding one, so that at most four are out at once), and
// each batch starts on a cache line.
TEST_P(BatchBackends, SystemMemoryBatchesComeFromAPoolAsCompositorsFrames) {
  constexpr int kBatches = 8;
  for (const std::string &aggregator :
       {std::string("compositor name=b ! video/x-raw,width=64,height=48"),
        "cudagraybatch name=b width=64 height=48 dtype=float32 backend=" + GetParam()}) {
    SCOPED_TRACE(aggregator);
    const Pipeline p("videotestsrc num-buffers=" + std::to_string(kBatches) + " ! " + aggregator +
                     " ! appsink name=out sync=false max-buffers=1  videotestsrc num-buffers=" +
                     std::to_string(kBatches) + " pattern=ball ! b.");
    ASSERT_NE(p.play(), GST_STATE_CHANGE_FAILURE);
    std::set<const void *> data;
    for (int k = 0; k < kBatches; ++k) {
      GstSample *sample = p.pull("out", kWait);
      ASSERT_NE(sample, nullptr) << "output " << k;
      GstBuffer *buffer = gst_sample_get_buffer(sample);
      EXPECT_NE(buffer->pool, nullptr) << "output " << k;
      GstMapInfo map;
      ASSERT_TRUE(gst_buffer_map(buffer, &map, GST_MAP_READ));
      data.insert(map.data);
      if (aggregator.rfind("cudagraybatch", 0) == 0) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(map.data) % 64, 0u) << "output " << k;
      }
      gst_buffer_unmap(buffer, &map);
      gst_sample_unref(sample);
    }
    EXPECT_LE(data.size(), 4u) << "memory of batches given back was not used again";
    EXPECT_EQ(p.wait_end(kWait), GST_MESSAGE_EOS);
  }
}

// The same with the test sources' frames seen on their way in: every
// element equals the formula over them.
void expect_test_sources_equal_the_formula(const std::string &backend, const std::string &upload,
                                           const std::string &out_caps = "") {
  const Pipeline p(
      "videotestsrc num-buffers=3 ! video/x-raw,format=RGBx,width=320,height=240 ! tee name=t0 "
      "! queue ! " +
      upload +
      "b.sink_0  t0. ! queue ! appsink name=in0 sync=false  "
      "videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=NV12,width=160,height=90 ! "
      "tee name=t1 ! queue ! " +
      upload +
      "b.sink_1  t1. ! queue ! appsink name=in1 sync=false  "
      "cudagraybatch name=b width=64 height=48 dtype=float32 backend=" +
      backend + " ! " + out_caps + " appsink name=out sync=false");
  ASSERT_NE(p.play(), GST_STATE_CHANGE_FAILURE);
  const Settings s;
  for (int k = 0; k < 3; ++k) {
    GstSample *in0 = p.pull("in0", kWait), *in1 = p.pull("in1", kWait);
    ASSERT_TRUE(in0 && in1);
    const Source s0 = source_of(in0), s1 = source_of(in1);
    const GstClockTime pts = GST_BUFFER_PTS(gst_sample_get_buffer(in0));
    gst_sample_unref(in0);
    gst_sample_unref(in1);
    GstSample *out = p.pull("out", kWait);
    if (out && !out_caps.empty()) {  // read through a host mapping by expect_batch
      EXPECT_TRUE(gst_caps_features_contains(gst_caps_get_features(gst_sample_get_caps(out), 0),
                                             "memory:CUDAMemory"));
      GstBuffer *batch = gst_sample_get_buffer(out);
      EXPECT_EQ(gst_buffer_n_memory(batch), 1u);
      EXPECT_TRUE(gst_memory_is_type(gst_buffer_peek_memory(batch, 0), "gst.cuda.memory"));
    }
    expect_and_unref(out, s, {{&s0, pts, 0}, {&s1, pts, 1}}, pts);
  }
  EXPECT_EQ(p.wait_end(kWait), GST_MESSAGE_EOS);
}

TEST_P(BatchBackends, TestSourcesFramesEqualTheFormula) {
  expect_test_sources_equal_the_formula(GetParam(), "");
}

// Frames in CUDA memory (cudaupload's, in the context the batcher shares):
// read where they are on CUDA, through a host mapping on the CPU.
TEST_P(BatchBackends, FramesInCudaMemoryEqualTheFormula) {
  SKIP_WITHOUT_ELEMENT("cudaupload");
  expect_test_sources_equal_the_formula(GetParam(), "cudaupload ! ");
}

// Batches in CUDA memory where downstream asks for them (the CUDA backend
// only), from frames in system and in CUDA memory.
TEST(BatchElement, CudaBatchesLeaveInCudaMemory) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_ELEMENT("cudaupload");
  const std::string caps = "application/x-cudagray-batch(memory:CUDAMemory) ! ";
  expect_test_sources_equal_the_formula("cuda", "", caps);
  expect_test_sources_equal_the_formula("cuda", "cudaupload ! ", caps);
}

class BatchDTypes : public ::testing::TestWithParam<Settings> {};

// Random frames of odd sizes and padded rows, a different format a pad,
// and a caps change on one pad: every element of every batch.
TEST_P(BatchDTypes, RandomFramesEqualTheFormula) {
  const Settings s = GetParam();
  if (std::string(s.backend) == "cuda") SKIP_WITHOUT_GPU();
  const Source big = nv12_source(641, 481), one = rgb_source(PixelLayout::RGBx, 1, 1);
  const Source odd = rgb_source(PixelLayout::BGR, 33, 17);
  const Rig rig(s, {big.caps(), one.caps()});
  rig.push(0, big, 0);
  rig.push(1, one, 0);
  rig.push(0, big, kTick);
  rig.push(1, one, kTick);
  rig.set_caps(1, odd.caps());
  rig.push(0, big, 2 * kTick);
  rig.push(1, odd, 2 * kTick);
  rig.end(0);
  rig.end(1);
  expect_and_unref(rig.pull(), s, {{&big, 0, 0}, {&one, 0, 1}}, 0);
  expect_and_unref(rig.pull(), s, {{&big, kTick, 0}, {&one, kTick, 1}}, kTick);
  expect_and_unref(rig.pull(), s, {{&big, 2 * kTick, 0}, {&odd, 2 * kTick, 1}}, 2 * kTick);
  EXPECT_TRUE(rig.ended());
}

INSTANTIATE_TEST_SUITE_P(, BatchDTypes,
                         ::testing::Values(Settings{"float32", 64, 48, 0.485f, 0.229f},
                                           Settings{"float16", 37, 23, 0.5f, 0.0625f},
                                           Settings{"uint8", 37, 23, 0, 1},
                                           Settings{"float32", 64, 48, 0.485f, 0.229f, "cuda"},
                                           Settings{"float16", 37, 23, 0.5f, 0.0625f, "cuda"},
                                           Settings{"uint8", 37, 23, 0, 1, "cuda"}),
                         [](const auto &info) {
                           return std::string(info.param.dtype) + "_" + info.param.backend;
                         });

// A crop meta (videocrop's way) picks the part of each frame the caps
// describe, on one pad; the other pad's frames are whole.
TEST(BatchElement, CropMetasPickThePartOfTheFrame) {
  const Settings s{"float32", 30, 30, 0.5f, 0.25f};
  Source cropped = rgb_source(PixelLayout::BGRx, 97, 61);
  cropped.crop = {13, 7, 41, 29};
  cropped.crop_meta = true;
  const Source whole = nv12_source(29, 41);
  const Rig rig(s, {cropped.caps(), whole.caps()});
  rig.push(0, cropped, 0);
  rig.push(1, whole, 0);
  rig.end(0);
  rig.end(1);
  expect_and_unref(rig.pull(), s, {{&cropped, 0, 0}, {&whole, 0, 1}}, 0);
  EXPECT_TRUE(rig.ended());
}

// A pad with no frame before a tick's end leaves its slot absent (black:
// -mean / std) in that batch, and its next frame goes in the next.
TEST(BatchElement, PadWithoutAFrameForATickGivesAnAbsentSlot) {
  const Settings s{"float32", 40, 30, 0.25f, 0.5f};
  const Source a = rgb_source(PixelLayout::RGBx, 50, 30), b = nv12_source(31, 47);
  const Rig rig(s, {a.caps(), b.caps()});
  for (int k = 0; k < 3; ++k) rig.push(0, a, k * kTick);
  rig.push(1, b, 0);
  rig.push(1, b, 2 * kTick);  // none for the tick at kTick
  rig.end(0);
  rig.end(1);
  expect_and_unref(rig.pull(), s, {{&a, 0, 0}, {&b, 0, 1}}, 0);
  expect_and_unref(rig.pull(), s, {{&a, kTick, 0}, {nullptr, 0, 1}}, kTick);
  expect_and_unref(rig.pull(), s, {{&a, 2 * kTick, 0}, {&b, 2 * kTick, 1}}, 2 * kTick);
  EXPECT_TRUE(rig.ended());
}

// Frames older than the tick are dropped for the newest before its end.
TEST(BatchElement, NewestFrameBeforeTheTicksEndIsTaken) {
  const Settings s{"float32", 16, 16, 0, 1};
  const Source a = rgb_source(PixelLayout::RGBx, 16, 16), b = rgb_source(PixelLayout::BGR, 8, 8);
  const Source late = rgb_source(PixelLayout::BGR, 8, 8);
  const Rig rig(s, {a.caps(), b.caps()});
  rig.push(0, a, 0);
  rig.push(1, b, 0);
  rig.push(1, late, kTick / 2);  // the same tick: it replaces b
  rig.end(0);
  rig.end(1);
  expect_and_unref(rig.pull(), s, {{&a, 0, 0}, {&late, kTick / 2, 1}}, 0);
  EXPECT_TRUE(rig.ended());
}

// A source that ends early: its slot is absent from then on, and the
// stream ends when the last source does.
TEST(BatchElement, SourceEndingEarlyLeavesItsSlotAbsent) {
  const Settings s{"float16", 24, 24, 0.5f, 0.5f};
  const Source a = rgb_source(PixelLayout::RGBx, 24, 24), b = nv12_source(24, 24);
  const Rig rig(s, {a.caps(), b.caps()});
  rig.push(1, b, 0);
  rig.end(1);
  for (int k = 0; k < 3; ++k) rig.push(0, a, k * kTick);
  rig.end(0);
  expect_and_unref(rig.pull(), s, {{&a, 0, 0}, {&b, 0, 1}}, 0);
  expect_and_unref(rig.pull(), s, {{&a, kTick, 0}, {nullptr, 0, 1}}, kTick);
  expect_and_unref(rig.pull(), s, {{&a, 2 * kTick, 0}, {nullptr, 0, 1}}, 2 * kTick);
  EXPECT_TRUE(rig.ended());
}

// A pad requested while playing joins the batch (its caps say batch=2),
// and one released leaves it (batch=1 again). A tick waits for a frame at
// or after its end on every pad (or its end): the pushes say when.
TEST(BatchElement, PadRequestedAndReleasedWhilePlaying) {
  const Settings s{"float32", 20, 20, 0, 1};
  const Source a = rgb_source(PixelLayout::RGBx, 20, 20), b = nv12_source(10, 20);
  const Rig rig(s, {a.caps()});
  rig.push(0, a, 0);
  rig.push(0, a, kTick);
  expect_and_unref(rig.pull(), s, {{&a, 0, 0}}, 0);

  GstElement *batcher = rig.pipeline.by_name("b");
  GstPad *sink = gst_element_request_pad_simple(batcher, "sink_%u");
  ASSERT_NE(sink, nullptr);
  EXPECT_STREQ(GST_OBJECT_NAME(sink), "sink_1");
  GstElement *src = gst_element_factory_make("appsrc", "a1");
  gst_util_set_object_arg(G_OBJECT(src), "format", "time");
  gst_bin_add(GST_BIN(rig.pipeline.get()), src);
  GstPad *src_pad = gst_element_get_static_pad(src, "src");
  ASSERT_EQ(gst_pad_link(src_pad, sink), GST_PAD_LINK_OK);
  rig.set_caps(1, b.caps());
  ASSERT_TRUE(gst_element_sync_state_with_parent(src));
  rig.push(1, b, kTick);
  rig.push(1, b, 2 * kTick);
  rig.push(0, a, 2 * kTick);
  expect_and_unref(rig.pull(), s, {{&a, kTick, 0}, {&b, kTick, 1}}, kTick);

  gst_element_set_state(src, GST_STATE_NULL);
  gst_pad_unlink(src_pad, sink);
  gst_element_release_request_pad(batcher, sink);
  gst_object_unref(sink);
  gst_object_unref(src_pad);
  gst_bin_remove(GST_BIN(rig.pipeline.get()), src);
  rig.end(0);
  expect_and_unref(rig.pull(), s, {{&a, 2 * kTick, 0}}, 2 * kTick);
  EXPECT_TRUE(rig.ended());
}

// A flushing seek: the batches after it start at the seek's position,
// made of the sources' frames from there.
TEST(BatchElement, FlushingSeekRestartsTheBatchesAtItsPosition) {
  const Pipeline p(
      "videotestsrc ! video/x-raw,width=32,height=24,framerate=25/1 ! cudagraybatch name=b "
      "width=16 height=16 backend=cpu ! appsink name=out sync=false max-buffers=1  "
      "videotestsrc pattern=ball ! video/x-raw,width=24,height=24,framerate=25/1 ! b.");
  ASSERT_NE(p.play(), GST_STATE_CHANGE_FAILURE);
  for (int k = 0; k < 3; ++k) {
    GstSample *sample = p.pull("out", kWait);
    ASSERT_NE(sample, nullptr);
    EXPECT_EQ(GST_BUFFER_PTS(gst_sample_get_buffer(sample)), k * kTick);
    gst_sample_unref(sample);
  }
  ASSERT_TRUE(gst_element_seek_simple(p.get(), GST_FORMAT_TIME,
                                      GstSeekFlags(GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE),
                                      2 * GST_SECOND));
  for (int k = 0; k < 2; ++k) {
    GstSample *sample = p.pull("out", kWait);
    ASSERT_NE(sample, nullptr);
    GstBuffer *buf = gst_sample_get_buffer(sample);
    EXPECT_EQ(GST_BUFFER_PTS(buf), 2 * GST_SECOND + k * kTick) << "batch " << k << " after";
    EXPECT_EQ(gst_sample_get_segment(sample)->start, 2 * GST_SECOND);
    const GstCudaGrayBatchMeta *meta = gst_buffer_get_cuda_gray_batch_meta(buf);
    ASSERT_NE(meta, nullptr);
    for (guint n = 0; n < meta->n_slots; ++n) {
      EXPECT_TRUE(meta->slots[n].present);
      EXPECT_EQ(meta->slots[n].pts, 2 * GST_SECOND + k * kTick) << "slot " << n;
    }
    gst_sample_unref(sample);
  }
}

// Live sources: the batcher adds one tick to the latency upstream reports
// (a frame may come up to a tick after its tick began), and batches come
// with both slots present.
TEST(BatchElement, LiveSourcesAddOneTickOfLatency) {
  const Pipeline p(
      "videotestsrc name=s0 is-live=true ! video/x-raw,framerate=25/1 ! cudagraybatch name=b "
      "width=16 height=16 backend=cpu ! appsink name=out  "
      "videotestsrc is-live=true pattern=ball ! video/x-raw,framerate=25/1 ! b.");
  ASSERT_NE(p.play(), GST_STATE_CHANGE_FAILURE);
  GstSample *sample = p.pull("out", kWait);
  ASSERT_NE(sample, nullptr);
  const GstCudaGrayBatchMeta *meta =
      gst_buffer_get_cuda_gray_batch_meta(gst_sample_get_buffer(sample));
  ASSERT_NE(meta, nullptr);
  EXPECT_TRUE(meta->slots[0].present && meta->slots[1].present);
  gst_sample_unref(sample);

  GstQuery *upstream = gst_query_new_latency(), *batcher = gst_query_new_latency();
  GstPad *src_pad = gst_element_get_static_pad(p.by_name("s0"), "src");
  GstPad *out_pad = gst_element_get_static_pad(p.by_name("b"), "src");
  ASSERT_TRUE(gst_pad_query(src_pad, upstream));
  ASSERT_TRUE(gst_pad_query(out_pad, batcher));
  gboolean live = FALSE;
  GstClockTime upstream_min = 0, min = 0;
  gst_query_parse_latency(upstream, nullptr, &upstream_min, nullptr);
  gst_query_parse_latency(batcher, &live, &min, nullptr);
  EXPECT_TRUE(live);
  EXPECT_EQ(min, upstream_min + kTick);
  gst_query_unref(upstream);
  gst_query_unref(batcher);
  gst_object_unref(src_pad);
  gst_object_unref(out_pad);
}

// Settings a batch cannot have fail the start, saying why.
TEST(BatchElement, InvalidSettingsFailTheStartSayingWhy) {
  const struct {
    const char *properties, *error;
    bool whole = true;  // the whole text, or how it starts
  } cases[] = {
      {"std=0", "Invalid batch settings: std 0 is not a finite number other than 0"},
      {"dtype=uint8 mean=0.5",
       "Invalid batch settings: uint8 holds the gray itself: mean 0.5 and std 1 need float16 or "
       "float32"},
      // no such device, on machines with a GPU and without
      {"backend=cuda cuda-device-id=99", "No usable CUDA device: ", false},
  };
  for (const auto &c : cases) {
    const Pipeline p(std::string("videotestsrc num-buffers=1 ! cudagraybatch ") + c.properties +
                     " ! fakesink");
    EXPECT_EQ(p.play(), GST_STATE_CHANGE_FAILURE) << c.properties;
    BusLog log;
    EXPECT_EQ(p.wait_end(kWait, &log), GST_MESSAGE_ERROR) << c.properties;
    ASSERT_FALSE(log.errors.empty()) << c.properties;
    const std::string &text = log.errors.front().text;
    EXPECT_EQ(c.whole ? text : text.substr(0, std::strlen(c.error)), c.error);
  }
}

}  // namespace

namespace {

// A modelinfo file as GStreamer's tools write them: the version, an input
// tensor with the ranges given (and the id, when not empty), an output.
std::string write_model_info(const TempDir &dir, const std::string &input_lines) {
  const std::string path = dir.path + "/model.onnx.modelinfo";
  std::ofstream(path) << "[modelinfo]\nversion=1.0\ngroup-id=test-model\n\n"
                      << "[images]\ntype=float32\ndims=-1,1,48,64\ndir=input\n"
                      << input_lines << "\n[scores]\nid=scores\ntype=float32\ndims=-1,10\n"
                      << "dir=output\n";
  return path;
}

// The batch's GstTensorMeta: one tensor [n, 1, H, W] of the dtype, the id,
// row-major, whose data is the batch's own memory.
void expect_tensor(GstBuffer *batch, const Settings &s, gsize n, const char *id) {
#ifdef CUDAGRAY_HAVE_GST_TENSOR_META
  GstTensorMeta *meta = gst_buffer_get_tensor_meta(batch);
  ASSERT_NE(meta, nullptr) << "no GstTensorMeta";
  ASSERT_EQ(meta->num_tensors, 1u);
  const GstTensor *t = gst_tensor_meta_get(meta, 0);
  EXPECT_STREQ(g_quark_to_string(t->id), id);
  EXPECT_EQ(gst_tensor_meta_get_index_from_id(meta, g_quark_from_string(id)), 0);
  EXPECT_EQ(t->layout, GST_TENSOR_LAYOUT_CONTIGUOUS);
  const GstTensorDataType want = s.element_bytes() == 1   ? GST_TENSOR_DATA_TYPE_UINT8
                                 : s.element_bytes() == 2 ? GST_TENSOR_DATA_TYPE_FLOAT16
                                                          : GST_TENSOR_DATA_TYPE_FLOAT32;
  EXPECT_EQ(t->data_type, want);
  EXPECT_EQ(t->dims_order, GST_TENSOR_DIM_ORDER_ROW_MAJOR);
  ASSERT_EQ(t->num_dims, 4u);
  EXPECT_EQ(std::vector<gsize>(t->dims, t->dims + 4),
            (std::vector<gsize>{n, 1, gsize(s.height), gsize(s.width)}));
  ASSERT_NE(t->data, nullptr);
  GstMapInfo tensor_map, batch_map;
  ASSERT_TRUE(gst_buffer_map(t->data, &tensor_map, GST_MAP_READ));
  ASSERT_TRUE(gst_buffer_map(batch, &batch_map, GST_MAP_READ));
  EXPECT_EQ(tensor_map.size, batch_map.size);
  EXPECT_EQ(tensor_map.data, batch_map.data) << "the tensor's data is a copy, not the batch";
  gst_buffer_unmap(t->data, &tensor_map);
  gst_buffer_unmap(batch, &batch_map);
#else
  ADD_FAILURE() << "built without GstTensorMeta";
#endif
}

// On GStreamer 1.26 or later each batch carries a GstTensorMeta describing
// it, for each dtype; with batch-size, N counts the absent slots too; a
// model-info file's input id names the tensor.
TEST(BatchElement, TensorMetaDescribesTheBatch) {
#ifndef CUDAGRAY_HAVE_GST_TENSOR_META
#if GST_CHECK_VERSION(1, 26, 0)
  FAIL() << "GStreamer " << GST_VERSION_MAJOR << "." << GST_VERSION_MINOR
         << " has GstTensorMeta, but this build found no gstreamer-analytics-1.0 >= 1.26 "
            "(libgstreamer-plugins-bad1.0-dev)";
#else
  GTEST_SKIP() << "GstTensorMeta is GStreamer 1.26's (gstreamer-analytics-1.0); this build "
                  "has GStreamer "
               << GST_VERSION_MAJOR << "." << GST_VERSION_MINOR
               << ", where the caps and GstCudaGrayBatchMeta carry the same";
#endif
#endif
  const TempDir dir;
  const std::string named = write_model_info(dir, "id=images\nranges=0.0,1.0\n");
  const struct {
    Settings s;
    std::string extra;
    const char *id;
  } cases[] = {
      {{"float32", 64, 48, 0.5f, 0.25f}, "batch-size=3", "cudagray-batch"},
      {{"float16", 37, 23, 0, 1}, "batch-size=3 model-info=" + named, "images"},
      {{"uint8", 16, 9, 0, 1}, "batch-size=3", "cudagray-batch"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(std::string(c.s.dtype) + " " + c.extra);
    const Source a = rgb_source(PixelLayout::RGBx, 40, 30), b = nv12_source(31, 47);
    const Rig rig(c.s, {a.caps(), b.caps()}, c.extra);
    rig.push(0, a, 0);
    rig.push(1, b, 0);
    rig.end(0);
    rig.end(1);
    GstSample *sample = rig.pull();
    expect_batch(sample, c.s, {{&a, 0, 0}, {&b, 0, 1}, {nullptr, 0, -1}}, 0);
    if (sample) {
      expect_tensor(gst_sample_get_buffer(sample), c.s, 3, c.id);
      gst_sample_unref(sample);
    }
    EXPECT_TRUE(rig.ended());
  }
}

// The mean and std a range [lo, hi] stands for (docs/batch.md): gray / full
// scale spread over lo..hi, v = lo + (hi - lo) * g / F, is (g / F - m) / s
// for m = -lo / (hi - lo) and s = 1 / (hi - lo), each computed in double
// and rounded to binary32.
struct Range {
  const char *dtype, *text;
  double lo, hi;
};

class BatchModelInfo : public ::testing::TestWithParam<Range> {};

// Every element of a batch made with model-info equals the formula with
// the range's mean and std, which replace the mean and std properties.
TEST_P(BatchModelInfo, RangeGivesMeanAndStd) {
  const Range r = GetParam();
  const TempDir dir;
  const std::string path = write_model_info(dir, std::string("ranges=") + r.text + "\n");
  const Settings properties{r.dtype, 33, 21, 0.25f, 4};
  const Settings expected{r.dtype, 33, 21, float(-r.lo / (r.hi - r.lo)), float(1 / (r.hi - r.lo))};
  const Source a = rgb_source(PixelLayout::BGRx, 50, 31), b = nv12_source(20, 40);
  const Rig rig(properties, {a.caps(), b.caps()}, "model-info=" + path);
  rig.push(0, a, 0);
  rig.push(1, b, 0);
  rig.push(0, a, kTick);
  rig.end(0);
  rig.end(1);
  expect_and_unref(rig.pull(), expected, {{&a, 0, 0}, {&b, 0, 1}}, 0);
  expect_and_unref(rig.pull(), expected, {{&a, kTick, 0}, {nullptr, 0, 1}}, kTick);
  EXPECT_TRUE(rig.ended());
}

INSTANTIATE_TEST_SUITE_P(, BatchModelInfo,
                         ::testing::Values(Range{"float32", "0.0,1.0", 0, 1},
                                           Range{"float32", "-1.0,1.0", -1, 1},
                                           Range{"float16", "0.0,255.0", 0, 255},
                                           Range{"float32", " -0.485 , 3.5 ", -0.485, 3.5},
                                           Range{"float32", "1,-1", 1, -1},
                                           Range{"uint8", "0,1", 0, 1}),
                         [](const auto &info) { return "Case" + std::to_string(info.index); });

// The binary32 mean and std of common ranges, as docs/batch.md lists them.
TEST(BatchModelInfoValues, CommonRangesGiveTheDocumentedBinary32) {
  const auto mean = [](double lo, double hi) { return float(-lo / (hi - lo)); };
  const auto std = [](double lo, double hi) { return float(1 / (hi - lo)); };
  EXPECT_EQ(mean(0, 1), 0.0f);
  EXPECT_EQ(std(0, 1), 1.0f);
  EXPECT_EQ(mean(-1, 1), 0.5f);
  EXPECT_EQ(std(-1, 1), 0.5f);
  EXPECT_EQ(mean(0, 255), 0.0f);
  EXPECT_EQ(std(0, 255), 0x1.010102p-8f);
}

// A model-info file that cannot give one range fails the start, naming
// the file and what is wrong with it.
TEST(BatchElement, InvalidModelInfoFailsTheStartSayingWhy) {
  const TempDir dir;
  const std::string missing = dir.path + "/missing.modelinfo";
  const auto file = [&](const std::string &name, const std::string &text) {
    const std::string path = dir.path + "/" + name;
    std::ofstream(path) << text;
    return path;
  };
  const std::string not_keys = file("not-keys", "ranges=0,1\n");
  const std::string no_input = file("no-input", "[scores]\ndir=output\nranges=0,1\n");
  const std::string two = file("two", "[a]\ndir=input\nranges=0,1\n[b]\ndir=input\nranges=0,1\n");
  const std::string no_ranges = file("no-ranges", "[images]\ndir=input\ntype=float32\n");
  const std::string rgb = file("rgb", "[images]\ndir=input\nranges=0,255;0,255;0,255\n");
  const std::string one = file("one", "[images]\ndir=input\nranges=0\n");
  const std::string inf = file("inf", "[images]\ndir=input\nranges=0,inf\n");
  const std::string empty = file("empty", "[images]\ndir=input\nranges=2.5,2.5\n");
  const struct {
    std::string properties, error;
  } cases[] = {
      {"model-info=" + missing, "Cannot read the model-info file " + missing},
      {"model-info=" + not_keys,
       "The model-info file " + not_keys + " is not a key file of [sections]"},
      {"model-info=" + no_input,
       "The model-info file " + no_input + " has no input tensor (a section with dir=input)"},
      {"model-info=" + two, "The model-info file " + two +
                                " has 2 input tensors (sections with dir=input); a batch is one"},
      {"model-info=" + no_ranges,
       "The model-info file " + no_ranges + ", input tensor [images]: no ranges"},
      {"model-info=" + rgb, "The model-info file " + rgb +
                                ", input tensor [images]: ranges=0,255;0,255;0,255 has 3 "
                                "channels; a gray batch has 1"},
      {"model-info=" + one, "The model-info file " + one +
                                ", input tensor [images]: ranges=0 is not min,max of two finite "
                                "numbers"},
      {"model-info=" + inf, "The model-info file " + inf +
                                ", input tensor [images]: ranges=0,inf is not min,max of two "
                                "finite numbers"},
      {"model-info=" + empty, "The model-info file " + empty +
                                  ", input tensor [images]: ranges=2.5,2.5 is empty: min and "
                                  "max are equal"},
      {"dtype=uint8 model-info=" + file("signed", "[i]\ndir=input\nranges=-1,1\n"),
       "Invalid batch settings: uint8 holds the gray itself: mean 0.5 and std 0.5 need float16 "
       "or float32"},
  };
  for (const auto &c : cases) {
    const Pipeline p("videotestsrc num-buffers=1 ! cudagraybatch " + c.properties + " ! fakesink");
    EXPECT_EQ(p.play(), GST_STATE_CHANGE_FAILURE) << c.properties;
    BusLog log;
    EXPECT_EQ(p.wait_end(kWait, &log), GST_MESSAGE_ERROR) << c.properties;
    ASSERT_FALSE(log.errors.empty()) << c.properties;
    EXPECT_EQ(log.errors.front().text, c.error);
  }
}

}  // namespace
