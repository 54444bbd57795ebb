// SPDX-License-Identifier: LGPL-2.1-or-later
// The cudagray element through GstHarness: conversion on both backends,
// caps, properties and bad input.
#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "element_harness.h"
#include "gstcudagrayformats.h"
#include "gstcudagrayweights.h"
#include "probes.h"

using namespace cudagray;
using namespace cudagray::test;

namespace {

void select_weights(GstElement *element, const WeightChoice &c) {
  if (c.matrix == Matrix::Custom)
    g_object_set(element, "weights", gst_cuda_gray_format_weights(c.k).c_str(), nullptr);
  else
    gst_util_set_object_arg(G_OBJECT(element), "matrix", c.name.c_str());
}

struct BackendAndLayout {
  const char *backend;
  PixelLayout layout;
};

std::vector<BackendAndLayout> all_cases() {
  std::vector<BackendAndLayout> cases;
  for (const char *backend : {"cpu", "cuda"})
    for (PixelLayout layout : kRgb8Layouts) cases.push_back({backend, layout});
  return cases;
}

}  // namespace

class ElementConversion : public ::testing::TestWithParam<BackendAndLayout> {
 protected:
  void SetUp() override {
    if (std::string(GetParam().backend) == "cuda") SKIP_WITHOUT_GPU();
  }
};

// Random padded frames at every size and matrix (changed while PLAYING)
// come out equal to the CPU reference.
TEST_P(ElementConversion, EqualsCpuReference) {
  const auto [backend, layout] = GetParam();
  for (const Size &size : kSizes) {
    SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height));
    Harness harness({std::string("backend=") + backend});
    harness.set_caps(caps_string(layout_info(layout).name, size.width, size.height));
    for (const WeightChoice &c : kWeightChoices) {
      SCOPED_TRACE(c.name);
      select_weights(harness.element(), c);
      const TestFrame f = random_frame(layout, size.width, size.height);
      EXPECT_TRUE(same_pixels(convert_through(harness, f), cpu_reference(f, c)));
    }
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR), "");
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_WARNING), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ElementConversion, ::testing::ValuesIn(all_cases()),
                         [](const auto &info) {
                           return std::string(info.param.backend) + "_" +
                                  layout_info(info.param.layout).name;
                         });

TEST(Caps, EachFormatBecomesFullRangeGray8OfTheSameGeometry) {
  for (PixelLayout layout : kRgb8Layouts) {
    SCOPED_TRACE(layout_info(layout).name);
    Harness harness({"backend=cpu"});
    harness.set_caps(caps_string(layout_info(layout).name, 641, 481));
    convert_through(harness, random_frame(layout, 641, 481));
    GstCaps *caps = gst_pad_get_current_caps(harness.h->sinkpad);
    ASSERT_NE(caps, nullptr);
    GstVideoInfo info;
    ASSERT_TRUE(gst_video_info_from_caps(&info, caps));
    EXPECT_EQ(GST_VIDEO_INFO_FORMAT(&info), GST_VIDEO_FORMAT_GRAY8);
    EXPECT_EQ(info.width, 641);
    EXPECT_EQ(info.height, 481);
    EXPECT_EQ(info.fps_n, 30);
    EXPECT_EQ(info.fps_d, 1);
    EXPECT_EQ(info.colorimetry.range, GST_VIDEO_COLOR_RANGE_0_255);
    gst_caps_unref(caps);
  }
}

TEST(Caps, Gray8PassesThroughUntouched) {
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("GRAY8", 33, 7));
  std::vector<uint8_t> bytes(36 * 7);
  fill_random(bytes);
  GstBuffer *in = gst_buffer_new_memdup(bytes.data(), bytes.size());
  gst_buffer_ref(in);
  ASSERT_EQ(gst_harness_push(harness.h, in), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(harness.h);
  EXPECT_EQ(out, in);  // the very same buffer: no copy
  EXPECT_TRUE(gst_base_transform_is_passthrough(GST_BASE_TRANSFORM(harness.element())));
  EXPECT_EQ(gst_buffer_memcmp(out, 0, bytes.data(), bytes.size()), 0);
  gst_buffer_unref(out);
  gst_buffer_unref(in);
}

TEST(Caps, AcceptsOnlyTheDocumentedFormatsAndSizes) {
  Harness harness({"backend=cpu"});
  GstPad *sink = gst_element_get_static_pad(harness.element(), "sink");
  auto accepts = [&](const std::string &s) {
    GstCaps *caps = gst_caps_from_string(s.c_str());
    const bool ok = gst_pad_query_accept_caps(sink, caps);
    gst_caps_unref(caps);
    return ok;
  };
  for (PixelLayout layout : kRgb8Layouts)
    EXPECT_TRUE(accepts(caps_string(layout_info(layout).name, 64, 48)));
  EXPECT_TRUE(accepts(caps_string("GRAY8", 64, 48)));
  EXPECT_TRUE(accepts(caps_string("RGB", 16384, 16384)));
  EXPECT_TRUE(accepts(caps_string("RGB", 1, 1)));
  for (const char *format :
       {"I420", "YV12", "NV12", "NV21", "Y444", "Y42B", "YUY2", "UYVY", "P010_10LE", "GRAY16_LE"})
    EXPECT_TRUE(accepts(caps_string(format, 64, 48))) << format;
  // every row of the format table, in system memory; in CUDA memory exactly
  // the rows that say so (on a gstreamer-cuda build), never otherwise
  guint n_formats = 0;
  const GstCudaGrayFormat *formats = gst_cuda_gray_formats(&n_formats);
  EXPECT_GT(n_formats, 0u);
  for (guint i = 0; i < n_formats; ++i) {
    const GstCudaGrayFormat &f = formats[i];
    SCOPED_TRACE(f.name);
    const std::string sizes = ",width=64,height=48,framerate=30/1";
    if (f.kind == GST_CUDA_GRAY_KIND_BAYER) {
      EXPECT_TRUE(accepts(std::string("video/x-bayer,format=") + f.name + sizes));
      EXPECT_FALSE(accepts(std::string("video/x-raw,format=") + f.name + sizes));
      EXPECT_FALSE(
          accepts(std::string("video/x-bayer(memory:CUDAMemory),format=") + f.name + sizes));
      continue;
    }
    EXPECT_TRUE(accepts(caps_string(f.name, 64, 48)));
    EXPECT_FALSE(accepts(std::string("video/x-bayer,format=") + f.name + sizes));
    const bool in_cuda_memory =
        accepts(std::string("video/x-raw(memory:CUDAMemory),format=") + f.name + sizes);
#ifdef CUDAGRAY_HAVE_GST_CUDA
    EXPECT_EQ(in_cuda_memory, f.cuda_memory != FALSE);
#else
    EXPECT_FALSE(in_cuda_memory);
#endif
  }
  for (const char *format : {"RGB8P", "ENCODED", "DMA_DRM"})
    EXPECT_FALSE(accepts(caps_string(format, 64, 48))) << format;
  // Bayer names outside the table: deep ones before GStreamer 1.24 named
  // them, odd depths and other spellings always
  std::vector<const char *> not_bayer = {"bggr8le", "rggb11le", "gbrg16", "BGGR", "sbggr8"};
#if !GST_CHECK_VERSION(1, 24, 0)
  not_bayer.insert(not_bayer.end(), {"bggr16le", "rggb10le"});
#endif
  for (const char *format : not_bayer)
    EXPECT_FALSE(accepts(std::string("video/x-bayer,format=") + format +
                         ",width=64,height=48,framerate=30/1"))
        << format;
  EXPECT_FALSE(accepts(caps_string("RGB", 16385, 48)));
  EXPECT_FALSE(accepts(caps_string("RGB", 64, 16385)));
  EXPECT_FALSE(accepts("video/x-bayer,format=bggr,width=16385,height=48,framerate=30/1"));
#ifdef CUDAGRAY_HAVE_GST_CUDA
  EXPECT_TRUE(
      accepts("video/x-raw(memory:CUDAMemory),format=RGB,width=64,height=48,framerate=30/1"));
  EXPECT_TRUE(
      accepts("video/x-raw(memory:CUDAMemory),format=NV12,width=64,height=48,framerate=30/1"));
#else
  EXPECT_FALSE(
      accepts("video/x-raw(memory:CUDAMemory),format=RGB,width=64,height=48,framerate=30/1"));
#endif
  // no passthrough of GRAY8 on the GPU: gray input is taken in system memory only
  EXPECT_FALSE(
      accepts("video/x-raw(memory:CUDAMemory),format=GRAY8,width=64,height=48,framerate=30/1"));
  EXPECT_FALSE(
      accepts("video/x-raw(memory:GLMemory),format=RGBA,width=64,height=48,framerate=30/1"));
  EXPECT_FALSE(accepts("audio/x-raw,format=S16LE,rate=48000,channels=2"));
  gst_object_unref(sink);
}

TEST(Caps, RefusedFormatIsNotNegotiated) {
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("RGB8P", 64, 48));
  std::vector<uint8_t> bytes(64 * 48 * 2);
  fill_random(bytes);
  EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
            GST_FLOW_NOT_NEGOTIATED);
}

// Upstream asked what we take given downstream's GRAY8 caps: every converted
// format of the format table first, then Bayer, and the gray formats
// (passed through or re-scaled) last, each at any size (cudagray scales).
TEST(Caps, UpstreamQuerySeesConvertedFormatsFirst) {
  Harness harness({"backend=cpu"});
  gst_harness_set_sink_caps_str(harness.h, "video/x-raw,format=GRAY8,width=320,height=240");
  GstCaps *caps = gst_pad_peer_query_caps(harness.h->srcpad, nullptr);
  ASSERT_GE(gst_caps_get_size(caps), 2u);
  guint n_formats = 0;
  const GstCudaGrayFormat *table = gst_cuda_gray_formats(&n_formats);
  std::vector<std::string> converted;
  for (guint i = 0; i < n_formats; ++i)
    if (table[i].kind == GST_CUDA_GRAY_KIND_CONVERTED) converted.push_back(table[i].name);
  const GstStructure *first = gst_caps_get_structure(caps, 0);
  EXPECT_TRUE(gst_structure_has_name(first, "video/x-raw"));
  const GValue *formats = gst_structure_get_value(first, "format");
  ASSERT_TRUE(GST_VALUE_HOLDS_LIST(formats));
  ASSERT_EQ(gst_value_list_get_size(formats), converted.size());
  for (guint i = 0; i < converted.size(); ++i)  // in the table's order of preference
    EXPECT_STREQ(g_value_get_string(gst_value_list_get_value(formats, i)), converted[i].c_str());
  for (PixelLayout layout : kRgb8Layouts) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, G_TYPE_STRING);
    g_value_set_string(&v, layout_info(layout).name);
    EXPECT_TRUE(gst_value_can_intersect(formats, &v)) << layout_info(layout).name;
    g_value_unset(&v);
  }
  auto any_width = [](const GstStructure *s) {
    const GValue *width = gst_structure_get_value(s, "width");
    return width && GST_VALUE_HOLDS_INT_RANGE(width) && gst_value_get_int_range_min(width) == 1 &&
           gst_value_get_int_range_max(width) == kMaxDimension;
  };
  EXPECT_TRUE(any_width(first));
  const GstStructure *last = gst_caps_get_structure(caps, gst_caps_get_size(caps) - 1);
  EXPECT_TRUE(gst_structure_has_name(last, "video/x-raw"));
  const GValue *gray = gst_structure_get_value(last, "format");
  ASSERT_TRUE(gray && GST_VALUE_HOLDS_LIST(gray));
  std::vector<std::string> gray_formats;
  for (guint i = 0; i < gst_value_list_get_size(gray); ++i)
    gray_formats.push_back(g_value_get_string(gst_value_list_get_value(gray, i)));
  std::vector<std::string> gray_rows;
  for (guint i = 0; i < n_formats; ++i)
    if (table[i].kind == GST_CUDA_GRAY_KIND_GRAY) gray_rows.push_back(table[i].name);
  EXPECT_EQ(gray_formats, gray_rows);
  EXPECT_EQ(gray_formats.front(), "GRAY8");
  EXPECT_TRUE(any_width(last));
  gst_caps_unref(caps);
}

namespace {

// The caps cudagray's source pad offers, before start (for any input) or
// once started on RGB input: index of each structure in CUDA memory,
// whether every one is gray (GRAY8 or GRAY16_LE, each one or a list of both),
// and the format offered first.
struct SourceOffer {
  std::vector<guint> cuda_memory;
  guint size = 0;
  bool all_gray = true, gray16 = false;
  std::string first_format;
};

// The format names of a structure's format field (a string or a list).
std::vector<std::string> formats_of(const GstStructure *s) {
  const GValue *value = gst_structure_get_value(s, "format");
  std::vector<std::string> names;
  if (value && G_VALUE_HOLDS_STRING(value)) names.push_back(g_value_get_string(value));
  if (value && GST_VALUE_HOLDS_LIST(value))
    for (guint i = 0; i < gst_value_list_get_size(value); ++i) {
      const GValue *v = gst_value_list_get_value(value, i);
      names.push_back(G_VALUE_HOLDS_STRING(v) ? g_value_get_string(v) : "?");
    }
  return names;
}

SourceOffer offer_of(GstElement *element) {
  GstCaps *caps = gst_pad_query_caps(GST_BASE_TRANSFORM_SRC_PAD(element), nullptr);
  SourceOffer offer;
  offer.size = gst_caps_get_size(caps);
  for (guint i = 0; i < offer.size; ++i) {
    if (gst_caps_features_contains(gst_caps_get_features(caps, i), "memory:CUDAMemory"))
      offer.cuda_memory.push_back(i);
    const std::vector<std::string> formats = formats_of(gst_caps_get_structure(caps, i));
    offer.all_gray = offer.all_gray && !formats.empty();
    for (const std::string &format : formats) {
      offer.all_gray = offer.all_gray && (format == "GRAY8" || format == "GRAY16_LE");
      offer.gray16 = offer.gray16 || format == "GRAY16_LE";
    }
    if (i == 0 && !formats.empty()) offer.first_format = formats[0];
  }
  gst_caps_unref(caps);
  return offer;
}

SourceOffer source_offer(const char *backend, bool started) {
  Harness harness({std::string("backend=") + backend});
  if (!started) {
    GstElement *idle = gst_element_factory_make("cudagray", nullptr);
    gst_util_set_object_arg(G_OBJECT(idle), "backend", backend);
    const SourceOffer offer = offer_of(idle);
    gst_object_unref(idle);
    return offer;
  }
  harness.set_caps(caps_string("RGB", 320, 240));
  return offer_of(harness.element());
}

}  // namespace

// Gray (GRAY8, GRAY16_LE) may leave in CUDA memory (a gstreamer-cuda build,
// backend=auto or cuda), offered after system memory so that a downstream
// that takes both gets system memory as before; backend=cpu never offers it.
TEST(Caps, CudaMemoryOutputComesAfterSystemMemoryAndNeverFromBackendCpu) {
#ifdef CUDAGRAY_HAVE_GST_CUDA
  const bool built_for_it = true;
#else
  const bool built_for_it = false;
#endif
  if (!no_gpu_reason().empty())
    std::printf("no GPU (%s): backend=auto, once started, is the CPU\n", no_gpu_reason().c_str());
  struct Case {
    const char *backend;
    bool started, offered;
  };
  const Case cases[] = {{"cpu", false, false},
                        {"cpu", true, false},
                        {"auto", false, built_for_it},
                        // on the CPU too: a downstream wanting only CUDA
                        // memory then gets the element's error saying why
                        {"auto", true, built_for_it}};
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string("backend=") + c.backend +
                 (c.started ? ", started" : ", before start"));
    const SourceOffer offer = source_offer(c.backend, c.started);
    EXPECT_GT(offer.size, 0u);
    EXPECT_TRUE(offer.all_gray);
    EXPECT_EQ(offer.first_format, "GRAY8");  // the default
    EXPECT_TRUE(offer.gray16);
    EXPECT_EQ(offer.cuda_memory.size(), c.offered ? 1u : 0u);
    if (!offer.cuda_memory.empty()) {
      EXPECT_GT(offer.cuda_memory[0], 0u) << "CUDA memory offered first";
    }
  }
}

// Downstream that takes only CUDA memory cannot be fed by backend=cpu: the
// stream is not negotiated, on any machine.
TEST(Caps, CpuBackendCannotFeedCudaMemoryOnly) {
  const PipelineRun run = run_pipeline(
      "videotestsrc num-buffers=2 ! video/x-raw,format=RGBx,width=64,height=48 ! cudagray "
      "backend=cpu ! "
      "video/x-raw(memory:CUDAMemory),format=GRAY8 ! fakesink");
  EXPECT_FALSE(run.reached_eos);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_EQ(run.errors[0], "Internal data stream error.");
}

// A source that could produce GRAY8 itself still hands RGB to cudagray.
TEST(Caps, SourceIsNotAskedForGray8) {
  const PipelineRun run =
      run_pipeline("videotestsrc num-buffers=1 ! cudagray backend=cpu name=g ! fakesink");
  EXPECT_TRUE(run.reached_eos);
  const Pipeline pipeline("videotestsrc num-buffers=1 ! cudagray backend=cpu name=g ! fakesink");
  ASSERT_NE(gst_element_set_state(pipeline.get(), GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  ASSERT_EQ(gst_element_get_state(pipeline.get(), nullptr, nullptr, 10 * GST_SECOND),
            GST_STATE_CHANGE_SUCCESS);
  GstElement *gray = pipeline.by_name("g");
  GstPad *sink = gst_element_get_static_pad(gray, "sink");
  GstCaps *caps = gst_pad_get_current_caps(sink);
  ASSERT_NE(caps, nullptr);
  EXPECT_STRNE(gst_structure_get_string(gst_caps_get_structure(caps, 0), "format"), "GRAY8");
  EXPECT_FALSE(gst_base_transform_is_passthrough(GST_BASE_TRANSFORM(gray)));
  gst_caps_unref(caps);
  gst_object_unref(sink);
}

TEST(Properties, Defaults) {
  GstElement *e = gst_element_factory_make("cudagray", nullptr);
  ASSERT_NE(e, nullptr);
  gint backend, matrix, device;
  gchar *weights;
  g_object_get(e, "backend", &backend, "matrix", &matrix, "cuda-device-id", &device, "weights",
               &weights, nullptr);
  EXPECT_EQ(backend, 0);  // auto
  EXPECT_EQ(matrix, 0);   // bt601
  EXPECT_EQ(device, -1);
  EXPECT_STREQ(weights, "0.299,0.587,0.114");
  g_free(weights);
  GParamSpec *spec = g_object_class_find_property(G_OBJECT_GET_CLASS(e), "cuda-device-id");
  EXPECT_EQ(G_PARAM_SPEC_INT(spec)->minimum, -1);
  EXPECT_EQ(G_PARAM_SPEC_INT(spec)->maximum, G_MAXINT);
  GEnumClass *backends = G_ENUM_CLASS(g_type_class_peek(
      G_PARAM_SPEC_VALUE_TYPE(g_object_class_find_property(G_OBJECT_GET_CLASS(e), "backend"))));
  EXPECT_STREQ(g_enum_get_value(backends, 0)->value_nick, "auto");
  EXPECT_STREQ(g_enum_get_value(backends, 1)->value_nick, "cuda");
  EXPECT_STREQ(g_enum_get_value(backends, 2)->value_nick, "cpu");
  GEnumClass *matrices = G_ENUM_CLASS(g_type_class_peek(
      G_PARAM_SPEC_VALUE_TYPE(g_object_class_find_property(G_OBJECT_GET_CLASS(e), "matrix"))));
  int i = 0;
  for (const char *nick : {"bt601", "bt709", "bt2020", "custom"})
    EXPECT_STREQ(g_enum_get_value(matrices, i++)->value_nick, nick);
  gst_object_unref(e);
}

TEST(Properties, WeightsSelectCustomAndReadBack) {
  GstElement *e = gst_element_factory_make("cudagray", nullptr);
  gchar *text;
  gint matrix;
  g_object_set(e, "weights", "0.21, 0.72 ,0.07", nullptr);
  g_object_get(e, "weights", &text, "matrix", &matrix, nullptr);
  EXPECT_STREQ(text, "0.21,0.72,0.07");
  EXPECT_EQ(matrix, 3);  // custom
  g_free(text);
  gst_util_set_object_arg(G_OBJECT(e), "matrix", "bt709");
  g_object_get(e, "weights", &text, nullptr);
  EXPECT_STREQ(text, "0.2126,0.7152,0.0722");
  g_free(text);
  gst_util_set_object_arg(G_OBJECT(e), "matrix", "custom");  // the last custom weights come back
  g_object_get(e, "weights", &text, nullptr);
  EXPECT_STREQ(text, "0.21,0.72,0.07");
  g_free(text);
  gst_object_unref(e);
}

TEST(Properties, InvalidWeightsWarnAndKeepTheOldOnes) {
  Harness harness({"backend=cpu", "matrix=bt2020"});
  g_object_set(harness.element(), "weights", "0.3,0.6", nullptr);
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_WARNING),
            "Ignoring invalid weights \"0.3,0.6\": expected three comma-separated numbers "
            "\"R,G,B\", got \"0.3,0.6\"");
  g_object_set(harness.element(), "weights", "0.3,-0.6,0.1", nullptr);
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_WARNING),
            "Ignoring invalid weights \"0.3,-0.6,0.1\": weight \"-0.6\" is outside 0..64");
  gchar *text;
  gint matrix;
  g_object_get(harness.element(), "weights", &text, "matrix", &matrix, nullptr);
  EXPECT_STREQ(text, "0.2627,0.678,0.0593");
  EXPECT_EQ(matrix, 2);  // still bt2020
  g_free(text);
  // and frames still use BT.2020
  harness.set_caps(caps_string("RGBx", 37, 5));
  const TestFrame f = random_frame(PixelLayout::RGBx, 37, 5);
  EXPECT_TRUE(same_pixels(convert_through(harness, f), cpu_reference(f, kWeightChoices[2])));
}

TEST(BadInput, TruncatedBufferIsAnError) {
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("RGB", 64, 48));
  std::vector<uint8_t> bytes(9000);  // the frame needs 64 * 3 * 48 = 9216
  fill_random(bytes);
  EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
            GST_FLOW_ERROR);
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR),
            "Input buffer does not hold a 64x48 RGB frame: plane 0 (offset 0, stride 192) needs "
            "9216 bytes, the buffer has 9000");
}

TEST(BadInput, VideoMetaOutsideTheBufferIsAnError) {
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("RGBP", 16, 4));
  TestFrame f = random_frame(PixelLayout::RGBP, 16, 4, Rows::Tight);  // 3 planes of 64 bytes
  f.offset[2] = 150;  // last plane runs 22 bytes past the end
  EXPECT_EQ(gst_harness_push(harness.h, buffer_for(f)), GST_FLOW_ERROR);
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR),
            "Input buffer does not hold a 16x4 RGBP frame: plane 2 (offset 150, stride 16) needs "
            "214 bytes, the buffer has 192");
}

TEST(BadInput, VideoMetaOfAnotherFormatIsAnError) {
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("BGRx", 16, 4));
  TestFrame f = random_frame(PixelLayout::RGBx, 16, 4);
  EXPECT_EQ(gst_harness_push(harness.h, buffer_for(f)), GST_FLOW_ERROR);
  EXPECT_EQ(
      harness.pop_message(GST_MESSAGE_ERROR),
      "Input buffer does not hold a 16x4 BGRx frame: its video meta describes a 16x4 RGBx frame");
}

TEST(CudaBackend, AutoPicksTheGpuWithoutWarning) {
  SKIP_WITHOUT_GPU();
  Harness harness;
  harness.set_caps(caps_string("RGB", 64, 48));
  const TestFrame f = random_frame(PixelLayout::RGB, 64, 48);
  EXPECT_TRUE(same_pixels(convert_through(harness, f), cpu_reference(f, kWeightChoices[0])));
  EXPECT_EQ(harness.pop_message(GST_MESSAGE_WARNING), "");
  GstStructure *stats = nullptr;
  g_object_get(harness.element(), "stats", &stats, nullptr);
  int device = -2;
  EXPECT_TRUE(gst_structure_get_int(stats, "cuda-device-id", &device));
  EXPECT_EQ(device, 0);  // the first usable device
  gst_structure_free(stats);
}

TEST(CudaBackend, DeviceBeyondTheLastIsAnError) {
  SKIP_WITHOUT_GPU();
  std::string reason;
  const int count = cuda_device_count(&reason);
  for (const char *backend : {"cuda", "auto"}) {
    const PipelineRun run =
        run_pipeline("videotestsrc num-buffers=2 ! cudagray backend=" + std::string(backend) +
                     " cuda-device-id=" + std::to_string(count) + " ! fakesink");
    ASSERT_EQ(run.errors.size(), 1u) << backend;
    EXPECT_EQ(run.errors[0], "No usable CUDA device: CUDA device " + std::to_string(count) +
                                 " does not exist: " + std::to_string(count) +
                                 " device(s) found, numbered from 0");
  }
}

// ------------------------------------------------ frames in flight

namespace {

class InFlight : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cuda") SKIP_WITHOUT_GPU();
  }
  std::vector<std::string> settings(int max_inflight) const {
    return {std::string("backend=") + GetParam(), "max-inflight=" + std::to_string(max_inflight)};
  }
};

GstBuffer *timed_buffer(const TestFrame &f, int index) {
  GstBuffer *buf = buffer_for(f);
  GST_BUFFER_PTS(buf) = index * GST_SECOND / 30;
  GST_BUFFER_DURATION(buf) = GST_SECOND / 30;
  GST_BUFFER_OFFSET(buf) = index;
  return buf;
}

// Pushes count random frames of one layout and size, the first timestamped
// as frame `first`, and keeps them in *frames.
void push_random_frames(Harness &harness, PixelLayout layout, int width, int height, int first,
                        int count, std::vector<TestFrame> *frames) {
  for (int i = first; i < first + count; ++i) {
    frames->push_back(random_frame(layout, width, height));
    ASSERT_EQ(gst_harness_push(harness.h, timed_buffer(frames->back(), i)), GST_FLOW_OK);
  }
}

// Pulls every output buffer there is and checks it against the frame that
// should come next.
void expect_outputs(Harness &harness, const std::vector<TestFrame> &frames, size_t *next) {
  while (GstBuffer *out = gst_harness_try_pull(harness.h)) {
    ASSERT_LT(*next, frames.size()) << "more outputs than inputs";
    const TestFrame &f = frames[*next];
    EXPECT_EQ(GST_BUFFER_PTS(out), *next * GST_SECOND / 30) << "output " << *next;
    EXPECT_EQ(GST_BUFFER_DURATION(out), GST_SECOND / 30);
    EXPECT_TRUE(same_pixels(gray_of(out, f.width, f.height), cpu_reference(f, kWeightChoices[0])))
        << "output " << *next;
    gst_buffer_unref(out);
    ++*next;
  }
}

}  // namespace

// An EOS does not wait for the frames before it, but leaves after them: every
// frame still comes out, then the EOS.
TEST_P(InFlight, FramesLeaveInOrderWithTheirTimestampsAndEosLeavesAfterThem) {
  for (int max_inflight : {1, 3, 16}) {
    SCOPED_TRACE(max_inflight);
    Harness harness(settings(max_inflight));
    harness.set_caps(caps_string("RGB", 641, 481));
    std::vector<TestFrame> frames;
    size_t next = 0;
    for (int i = 0; i < 12; ++i) {
      ASSERT_NO_FATAL_FAILURE(
          push_random_frames(harness, PixelLayout::RGB, 641, 481, i, 1, &frames));
      expect_outputs(harness, frames, &next);
      EXPECT_GE(next + max_inflight, frames.size()) << "held more than max-inflight frames";
    }
    ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
    while (next < frames.size()) {
      GstBuffer *out = gst_harness_pull(harness.h);
      ASSERT_NE(out, nullptr) << "frame " << next << " did not come out";
      EXPECT_EQ(GST_BUFFER_PTS(out), next * GST_SECOND / 30) << "output " << next;
      gst_buffer_unref(out);
      ++next;
    }
    bool eos = false;  // pushed just after the last frame; each pull waits up to 60 s
    while (!eos) {
      GstEvent *event = gst_harness_pull_event(harness.h);
      if (!event) break;
      eos = GST_EVENT_TYPE(event) == GST_EVENT_EOS;
      gst_event_unref(event);
    }
    EXPECT_TRUE(eos) << "no EOS after the frames";
    EXPECT_EQ(gst_harness_try_pull(harness.h), nullptr);
  }
}

TEST_P(InFlight, FlushDropsHeldFramesAndStreamingGoesOn) {
  Harness harness(settings(8));
  harness.set_caps(caps_string("BGRA", 320, 240));
  std::vector<TestFrame> frames;
  ASSERT_NO_FATAL_FAILURE(push_random_frames(harness, PixelLayout::BGRA, 320, 240, 0, 5, &frames));
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_flush_stop(TRUE)));
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_segment(&segment)));
  const guint before = gst_harness_buffers_received(harness.h);  // what left before the flush
  EXPECT_LE(before, 5u);
  for (guint i = 0; i < before; ++i) gst_buffer_unref(gst_harness_pull(harness.h));
  std::vector<TestFrame> after;
  ASSERT_NO_FATAL_FAILURE(push_random_frames(harness, PixelLayout::BGRA, 320, 240, 0, 3, &after));
  drain_element(harness);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
  size_t next = 0;
  expect_outputs(harness, after, &next);
  EXPECT_EQ(next, after.size());
}

TEST_P(InFlight, NewCapsDrainTheOldSizeFirst) {
  Harness harness(settings(4));
  harness.set_caps(caps_string("RGB", 64, 48));
  std::vector<TestFrame> frames;
  ASSERT_NO_FATAL_FAILURE(push_random_frames(harness, PixelLayout::RGB, 64, 48, 0, 3, &frames));
  harness.set_caps(caps_string("xBGR", 33, 17));
  ASSERT_NO_FATAL_FAILURE(push_random_frames(harness, PixelLayout::xBGR, 33, 17, 3, 3, &frames));
  drain_element(harness);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
  size_t next = 0;
  expect_outputs(harness, frames, &next);
  EXPECT_EQ(next, frames.size());
}

// Frames held back are latency: max-inflight 3 at 30 fps adds two frames,
// on either backend.
TEST_P(InFlight, LatencyCountsHeldFrames) {
  Harness harness(settings(3));
  gst_harness_set_upstream_latency(harness.h, 5 * GST_MSECOND);
  harness.set_caps(caps_string("RGBx", 64, 48));
  ASSERT_EQ(gst_harness_push(harness.h, buffer_for(random_frame(PixelLayout::RGBx, 64, 48))),
            GST_FLOW_OK);
  GstQuery *query = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_peer_query(harness.h->sinkpad, query));
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(query, &live, &min, &max);
  EXPECT_EQ(min, 5 * GST_MSECOND + 2 * GST_SECOND / 30);
  gst_query_unref(query);
}

TEST_P(InFlight, StatsCountFrames) {
  Harness harness(settings(2));
  harness.set_caps(caps_string("RGBP", 160, 90));
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(gst_harness_push(harness.h, buffer_for(random_frame(PixelLayout::RGBP, 160, 90))),
              GST_FLOW_OK);
  drain_element(harness);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
  EXPECT_EQ(gst_harness_buffers_received(harness.h), 6u);
  GstStructure *stats = nullptr;
  g_object_get(harness.element(), "stats", &stats, nullptr);
  ASSERT_NE(stats, nullptr);
  guint64 frames = 0, timed = 0;
  double mean = 0, min = 0, max = 0;
  EXPECT_TRUE(gst_structure_get_uint64(stats, "frames", &frames));
  EXPECT_TRUE(gst_structure_get_uint64(stats, "timed-frames", &timed));
  EXPECT_EQ(timed, std::string(GetParam()) == "cuda" ? 1u : 6u)
      << "CUDA times the first frame and every 16th after it, the CPU every frame";
  EXPECT_TRUE(gst_structure_get_double(stats, "gpu-time-mean-us", &mean));
  EXPECT_TRUE(gst_structure_get_double(stats, "gpu-time-min-us", &min));
  EXPECT_TRUE(gst_structure_get_double(stats, "gpu-time-max-us", &max));
  EXPECT_EQ(frames, 6u);
  EXPECT_GT(min, 0.0);
  EXPECT_LE(min, mean);
  EXPECT_LE(mean, max);
  guint in_flight = 99;
  EXPECT_TRUE(gst_structure_get_uint(stats, "in-flight", &in_flight));
  EXPECT_EQ(in_flight, 0u);
  gst_structure_free(stats);
}

INSTANTIATE_TEST_SUITE_P(Backends, InFlight, ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return std::string(info.param); });

// ------------------------------------------------ host memory pools

namespace {

// The element's pools of host memory, offered upstream and used for the
// output, on either backend.
class HostPool : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cuda") SKIP_WITHOUT_GPU();
  }
};

// The pool cudagray offers upstream for caps, with its allocator,
// configured as offered and active; given back at scope end.
struct OfferedPool {
  GstBufferPool *pool = nullptr;
  GstAllocator *allocator = nullptr;
  guint size = 0;
  ~OfferedPool() {
    if (pool) gst_buffer_pool_set_active(pool, FALSE);
    gst_clear_object(&pool);
    gst_clear_object(&allocator);
  }
};

// Asks the element behind harness for its pool for caps, as upstream does:
// one of allocator_name's memory.
void take_offered_pool(Harness &harness, GstCaps *caps, OfferedPool *offered,
                       const char *allocator_name = "CudaGrayPinned") {
  GstQuery *query = gst_query_new_allocation(caps, TRUE);
  const gboolean answered = gst_pad_peer_query(harness.h->srcpad, query);
  const guint pools = gst_query_get_n_allocation_pools(query);
  guint min = 0, max = 0;
  GstAllocationParams params;
  if (pools > 0) {
    gst_query_parse_nth_allocation_pool(query, 0, &offered->pool, &offered->size, &min, &max);
    gst_query_parse_nth_allocation_param(query, 0, &offered->allocator, &params);
  }
  gst_query_unref(query);
  ASSERT_TRUE(answered);
  ASSERT_GE(pools, 1u);
  ASSERT_NE(offered->pool, nullptr);
  ASSERT_NE(offered->allocator, nullptr);
  EXPECT_STREQ(offered->allocator->mem_type, allocator_name);
  GstStructure *config = gst_buffer_pool_get_config(offered->pool);
  gst_buffer_pool_config_set_params(config, caps, offered->size, min, max);
  gst_buffer_pool_config_set_allocator(config, offered->allocator, &params);
  ASSERT_TRUE(gst_buffer_pool_set_config(offered->pool, config));
  ASSERT_TRUE(gst_buffer_pool_set_active(offered->pool, TRUE));
}

}  // namespace

// Upstream that asks gets a pool, as from videoconvert (GstVideoFilter
// proposes one): of pinned memory on CUDA, of plain memory on the CPU,
// kept across renegotiations either way; frames written there convert
// correctly.
TEST_P(HostPool, OfferedUpstream) {
  const bool cuda = std::string(GetParam()) == "cuda";
  Harness harness({std::string("backend=") + GetParam()});
  const std::string caps_text = caps_string("RGBx", 641, 481);
  harness.set_caps(caps_text);
  GstCaps *caps = gst_caps_from_string(caps_text.c_str());
  OfferedPool offered;
  ASSERT_NO_FATAL_FAILURE(
      take_offered_pool(harness, caps, &offered, cuda ? "CudaGrayPinned" : "CudaGraySystem"));
  GstBufferPool *pool = offered.pool;

  for (int i = 0; i < 4; ++i) {
    GstBuffer *buf = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buf, nullptr), GST_FLOW_OK);
    GstVideoInfo info;
    gst_video_info_from_caps(&info, caps);
    GstVideoFrame frame;
    ASSERT_TRUE(gst_video_frame_map(&frame, &info, buf, GST_MAP_WRITE));
    EXPECT_EQ(is_pinned(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0)), cuda);
    TestFrame f = random_frame(PixelLayout::RGBx, 641, 481, Rows::Tight);
    f.stride[0] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, 0);
    f.bytes.resize(f.stride[0] * 481);
    fill_random(f.bytes);
    memcpy(GST_VIDEO_FRAME_PLANE_DATA(&frame, 0), f.bytes.data(), f.bytes.size());
    gst_video_frame_unmap(&frame);
    ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK);
    drain_element(harness);
    GstBuffer *out = gst_harness_pull(harness.h);
    EXPECT_TRUE(same_pixels(gray_of(out, 641, 481), cpu_reference(f, kWeightChoices[0])));
    gst_buffer_unref(out);
  }
  gst_caps_unref(caps);
}

// A mosaic's pool holds whole frames, and a mosaic written there converts
// as the same bytes do on the CPU. (GstVideoInfo takes video/x-bayer for an
// encoded format of size 0: the pool offered for it gave empty buffers, and
// rgb2bayer in front of cudagray wrote past them.)
TEST(PinnedPool, OfferedUpstreamForBayerHoldsWholeFrames) {
  SKIP_WITHOUT_GPU();
  const int width = 641, height = 481;
  const gsize frame_bytes = static_cast<gsize>(GST_ROUND_UP_4(width)) * height;
  const std::string caps_text = "video/x-bayer,format=grbg,width=" + std::to_string(width) +
                                ",height=" + std::to_string(height) + ",framerate=30/1";
  Harness cuda({"backend=cuda"}), cpu({"backend=cpu"});
  cuda.set_caps(caps_text);
  cpu.set_caps(caps_text);
  GstCaps *caps = gst_caps_from_string(caps_text.c_str());
  OfferedPool offered;
  ASSERT_NO_FATAL_FAILURE(take_offered_pool(cuda, caps, &offered));
  EXPECT_GE(offered.size, frame_bytes);
  GstBufferPool *pool = offered.pool;
  for (int i = 0; i < 3; ++i) {
    GstBuffer *buf = nullptr;
    ASSERT_EQ(gst_buffer_pool_acquire_buffer(pool, &buf, nullptr), GST_FLOW_OK);
    ASSERT_GE(gst_buffer_get_size(buf), frame_bytes);
    std::vector<uint8_t> mosaic(frame_bytes);
    fill_random(mosaic);
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(buf, &map, GST_MAP_WRITE));
    EXPECT_TRUE(is_pinned(map.data));
    memcpy(map.data, mosaic.data(), mosaic.size());
    gst_buffer_unmap(buf, &map);
    ASSERT_EQ(gst_harness_push(cuda.h, buf), GST_FLOW_OK);
    ASSERT_EQ(gst_harness_push(cpu.h, gst_buffer_new_memdup(mosaic.data(), mosaic.size())),
              GST_FLOW_OK);
    drain_element(cuda);
    drain_element(cpu);
    GstBuffer *on_gpu = gst_harness_pull(cuda.h), *on_cpu = gst_harness_pull(cpu.h);
    ASSERT_NE(on_gpu, nullptr);
    ASSERT_NE(on_cpu, nullptr);
    EXPECT_TRUE(same_pixels(gray_of(on_gpu, width, height), gray_of(on_cpu, width, height)));
    gst_buffer_unref(on_gpu);
    gst_buffer_unref(on_cpu);
  }
  EXPECT_EQ(cuda.pop_message(GST_MESSAGE_ERROR), "");
  gst_caps_unref(caps);
}

// Output buffers are allocated as agreed with downstream: the element asks
// downstream's ALLOCATION (whose pool or allocator it then uses, or else
// offers its pinned pool). It has no transform vfunc, which GstBaseTransform
// otherwise takes for an in-place element, never asking and allocating every
// output buffer afresh in plain memory.
TEST(Allocation, DownstreamIsAskedForItsPool) {
  Harness harness({"backend=cpu"});
  int asked = 0;
  gst_pad_add_probe(
      harness.h->sinkpad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      [](GstPad *, GstPadProbeInfo *info, gpointer data) {
        if (GST_QUERY_TYPE(GST_PAD_PROBE_INFO_QUERY(info)) == GST_QUERY_ALLOCATION)
          ++*static_cast<int *>(data);
        return GST_PAD_PROBE_OK;
      },
      &asked, nullptr);
  harness.set_caps(caps_string("BGR", 641, 481));
  const TestFrame f = random_frame(PixelLayout::BGR, 641, 481);
  ASSERT_EQ(gst_harness_push(harness.h, buffer_for(f)), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(harness.h);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(same_pixels(gray_of(out, 641, 481), cpu_reference(f, kWeightChoices[0])));
  gst_buffer_unref(out);
  EXPECT_GE(asked, 1) << "downstream was never asked how to allocate the output";
}

// Downstream without a pool of its own gets output buffers in pinned memory.
TEST(PinnedPool, UsedForOutputWhenDownstreamHasNone) {
  SKIP_WITHOUT_GPU();
  const Pipeline pipeline(
      "videotestsrc num-buffers=5 ! video/x-raw,format=BGR,width=320,height=240 ! "
      "cudagray backend=cuda name=gray ! fakesink name=sink");
  GstPad *pad = gst_element_get_static_pad(pipeline.by_name("sink"), "sink");
  int pinned = 0, buffers = 0;
  std::pair<int *, int *> counts{&pinned, &buffers};
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *info, gpointer data) {
        auto *c = static_cast<std::pair<int *, int *> *>(data);
        GstMapInfo map;
        gst_buffer_map(GST_PAD_PROBE_INFO_BUFFER(info), &map, GST_MAP_READ);
        *c->first += is_pinned(map.data);
        ++*c->second;
        gst_buffer_unmap(GST_PAD_PROBE_INFO_BUFFER(info), &map);
        return GST_PAD_PROBE_OK;
      },
      &counts, nullptr);
  pipeline.play();
  BusLog log;
  ASSERT_EQ(pipeline.wait_end(10 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
  // The element's own account: no frame went through a staging copy, since
  // videotestsrc wrote into the pinned pool offered to it.
  GstStructure *stats = nullptr;
  g_object_get(pipeline.by_name("gray"), "stats", &stats, nullptr);
  guint64 staged_inputs = 99, staged_outputs = 99;
  EXPECT_TRUE(gst_structure_get_uint64(stats, "staged-inputs", &staged_inputs));
  EXPECT_TRUE(gst_structure_get_uint64(stats, "staged-outputs", &staged_outputs));
  EXPECT_EQ(staged_inputs, 0u);
  EXPECT_EQ(staged_outputs, 0u);
  gst_structure_free(stats);
  EXPECT_EQ(buffers, 5);
  EXPECT_EQ(pinned, 5);
  gst_object_unref(pad);
}

// A live source needs no frames held: max-inflight=0 then means 1.
TEST(InFlightAuto, LiveUpstreamAddsNoLatency) {
  SKIP_WITHOUT_GPU();
  Harness harness({"backend=cuda"});  // the harness source reports itself live
  gst_harness_set_upstream_latency(harness.h, 0);
  harness.set_caps(caps_string("RGB", 64, 48));
  convert_through(harness, random_frame(PixelLayout::RGB, 64, 48));
  GstQuery *query = gst_query_new_latency();
  ASSERT_TRUE(gst_pad_peer_query(harness.h->sinkpad, query));
  GstClockTime min;
  gst_query_parse_latency(query, nullptr, &min, nullptr);
  EXPECT_EQ(min, 0u);
  gst_query_unref(query);
}

// Two elements on two GPUs at once in one process, each converting its own
// random frames correctly on the device it was given.
TEST(TwoGpus, ElementsOnDifferentDevicesConvertAtOnce) {
  SKIP_WITHOUT_GPU();
  std::string reason;
  const int count = cuda_device_count(&reason);
  if (count < 2) GTEST_SKIP() << "needs two GPUs, found " << count;
  auto convert_on = [](int device) {
    Harness harness({"backend=cuda", "cuda-device-id=" + std::to_string(device), "max-inflight=3"});
    harness.set_caps(caps_string("BGRx", 1280, 720));
    std::vector<TestFrame> frames;
    for (int i = 0; i < 20; ++i) {
      frames.push_back(random_frame(PixelLayout::BGRx, 1280, 720));
      EXPECT_EQ(gst_harness_push(harness.h, buffer_for(frames.back())), GST_FLOW_OK);
    }
    EXPECT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
    for (const TestFrame &f : frames) {
      GstBuffer *out = gst_harness_pull(harness.h);
      EXPECT_TRUE(
          same_pixels(gray_of(out, f.width, f.height), cpu_reference(f, kWeightChoices[0])));
      gst_buffer_unref(out);
    }
    GstStructure *stats = nullptr;
    g_object_get(harness.element(), "stats", &stats, nullptr);
    int used = -2;
    EXPECT_TRUE(gst_structure_get_int(stats, "cuda-device-id", &used));
    EXPECT_EQ(used, device);
    gst_structure_free(stats);
  };
  std::thread first(convert_on, 0), second(convert_on, 1);
  first.join();
  second.join();
}

// ------------------------------------------------ output pools

namespace {

// The buffers reaching a pad: how many, how many from a buffer pool, and
// where the data of each starts.
class SeenBuffers {
 public:
  explicit SeenBuffers(GstElement *sink) : pad_(gst_element_get_static_pad(sink, "sink")) {
    probe_ = gst_pad_add_probe(pad_, GST_PAD_PROBE_TYPE_BUFFER, seen, this, nullptr);
  }
  // Seen no more, so that a test ending early leaves no probe behind.
  ~SeenBuffers() {
    gst_pad_remove_probe(pad_, probe_);
    gst_object_unref(pad_);
  }
  SeenBuffers(const SeenBuffers &) = delete;
  SeenBuffers &operator=(const SeenBuffers &) = delete;
  // Waits (at most 20 s) until count buffers have come.
  bool wait_for(int count) {
    std::unique_lock<std::mutex> hold(lock_);
    return arrived_.wait_for(hold, std::chrono::seconds(20), [&] { return count_ >= count; });
  }
  int count() {
    std::lock_guard<std::mutex> hold(lock_);
    return count_;
  }
  int pooled() {
    std::lock_guard<std::mutex> hold(lock_);
    return pooled_;
  }
  // Where the buffers since the last call started, and forgets them.
  std::set<const void *> take_data() {
    std::lock_guard<std::mutex> hold(lock_);
    return std::exchange(data_, {});
  }

 private:
  static GstPadProbeReturn seen(GstPad *, GstPadProbeInfo *info, gpointer user_data) {
    auto *self = static_cast<SeenBuffers *>(user_data);
    GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
    GstMapInfo map;
    const bool mapped = gst_buffer_map(buffer, &map, GST_MAP_READ);
    {
      std::lock_guard<std::mutex> hold(self->lock_);
      ++self->count_;
      self->pooled_ += buffer->pool != nullptr;
      if (mapped) self->data_.insert(map.data);
    }
    if (mapped) gst_buffer_unmap(buffer, &map);
    self->arrived_.notify_all();
    return GST_PAD_PROBE_OK;
  }

  std::mutex lock_;
  std::condition_variable arrived_;
  int count_ = 0, pooled_ = 0;
  std::set<const void *> data_;
  GstPad *pad_;
  gulong probe_ = 0;
};

}  // namespace

// Downstream without a pool of its own: the output comes from a pool of the
// element's, as videoconvert's does, not from an allocation a frame.
TEST_P(HostPool, UsedWhenDownstreamHasNoneAsByVideoconvert) {
  const std::string convert = std::string("cudagray backend=") + GetParam();
  for (const std::string &middle :
       {std::string("videoconvert ! video/x-raw,format=GRAY8"), convert}) {
    SCOPED_TRACE(middle);
    const Pipeline pipeline(
        "videotestsrc num-buffers=8 ! video/x-raw,format=BGR,width=320,"
        "height=240 ! " +
        middle + " ! fakesink name=sink");
    SeenBuffers seen(pipeline.by_name("sink"));
    pipeline.play();
    BusLog log;
    ASSERT_EQ(pipeline.wait_end(20 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
    EXPECT_EQ(seen.count(), 8);
    EXPECT_EQ(seen.pooled(), 8);
  }
}

// Caps served again after a flip take the memory their frames had before
// (the pool of the first caps was let go at the flip), so that flipping
// back and forth allocates and faults in no new memory.
TEST_P(HostPool, CapsServedAgainTakeTheMemoryTheyHad) {
  constexpr int kWidth = 641, kHeight = 481, kFramesEach = 8;
  const std::string gray16 = "video/x-raw,format=GRAY16_LE", gray8 = "video/x-raw,format=GRAY8";
  const Pipeline pipeline(
      "appsrc name=src format=time caps=\"video/x-raw,format=RGB,width=" + std::to_string(kWidth) +
      ",height=" + std::to_string(kHeight) + ",framerate=30/1\" ! cudagray backend=" + GetParam() +
      " max-inflight=4 ! capsfilter name=flip caps=" + gray16 + " ! fakesink name=sink");
  SeenBuffers seen(pipeline.by_name("sink"));
  ASSERT_NE(pipeline.play(), GST_STATE_CHANGE_FAILURE);
  const TestFrame frame = random_frame(PixelLayout::RGB, kWidth, kHeight);
  int pushed = 0;
  // kFramesEach frames, each out before the next goes in, so that every
  // buffer of the pool is taken in turn.
  auto serve = [&](const std::string &caps) {
    GstCaps *parsed = gst_caps_from_string(caps.c_str());
    g_object_set(pipeline.by_name("flip"), "caps", parsed, nullptr);
    gst_caps_unref(parsed);
    for (int i = 0; i < kFramesEach; ++i) {
      GstBuffer *buffer = buffer_for(frame);
      GST_BUFFER_PTS(buffer) = pushed * GST_SECOND / 30;
      EXPECT_EQ(pipeline.push("src", buffer), GST_FLOW_OK);
      EXPECT_TRUE(seen.wait_for(++pushed)) << "frame " << pushed << " did not come out";
    }
    return seen.take_data();
  };
  const std::set<const void *> first = serve(gray16);
  serve(gray8);
  const std::set<const void *> again = serve(gray16);
  ASSERT_FALSE(first.empty());
  for (const void *data : again)
    EXPECT_TRUE(first.count(data)) << "GRAY16 again in memory it did not have before";
  // the element's memory starts rows on a cache line, recycled or not
  for (const std::set<const void *> *served : {&first, &again})
    for (const void *data : *served) EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 64, 0u);
  pipeline.end_of_stream("src");
  BusLog log;
  EXPECT_EQ(pipeline.wait_end(20 * GST_SECOND, &log), GST_MESSAGE_EOS) << describe(log.errors);
}

INSTANTIATE_TEST_SUITE_P(Backends, HostPool, ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return std::string(info.param); });

// ------------------------------------------------ YUV input: the luma plane

namespace {

struct YuvCase {
  const char *backend;
  const char *format;
  bool limited;
};

std::vector<YuvCase> yuv_cases() {
  std::vector<YuvCase> cases;
  for (const char *backend : {"cpu", "cuda"})
    for (const char *format : {"I420", "YV12", "NV12", "NV21", "Y444", "Y42B"})
      for (bool limited : {true, false}) cases.push_back({backend, format, limited});
  return cases;
}

class Yuv : public ::testing::TestWithParam<YuvCase> {
 protected:
  void SetUp() override {
    if (std::string(GetParam().backend) == "cuda") SKIP_WITHOUT_GPU();
  }
};

}  // namespace

// Random frames in GStreamer's own layout for the format (chroma planes and
// all): out comes the luma plane, copied (full range) or expanded (limited).
TEST_P(Yuv, GrayIsTheLumaPlane) {
  const auto [backend, format, limited] = GetParam();
  for (const Size &size : kSizes) {
    SCOPED_TRACE(std::to_string(size.width) + "x" + std::to_string(size.height));
    const std::string caps = caps_string(format, size.width, size.height) +
                             (limited ? ",colorimetry=bt601" : ",colorimetry=1:4:0:0");
    Harness harness({std::string("backend=") + backend});
    harness.set_caps(caps);
    GstVideoInfo info;
    GstCaps *parsed = gst_caps_from_string(caps.c_str());
    ASSERT_TRUE(gst_video_info_from_caps(&info, parsed));
    gst_caps_unref(parsed);
    ASSERT_EQ(info.colorimetry.range,
              limited ? GST_VIDEO_COLOR_RANGE_16_235 : GST_VIDEO_COLOR_RANGE_0_255);
    std::vector<uint8_t> bytes(GST_VIDEO_INFO_SIZE(&info));
    fill_random(bytes);
    TestFrame luma = random_frame(PixelLayout::Luma, size.width, size.height, Rows::Tight);
    luma.offset[0] = GST_VIDEO_INFO_PLANE_OFFSET(&info, 0);
    luma.stride[0] = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
    luma.bytes = bytes;
    ASSERT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
              GST_FLOW_OK);
    ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_eos()));
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr) << harness.pop_message(GST_MESSAGE_ERROR);
    const GrayImage gray = gray_of(out, size.width, size.height);
    gst_buffer_unref(out);
    int wrong = 0;
    for (int y = 0; y < size.height; ++y)
      for (int x = 0; x < size.width; ++x) {
        const int v = bytes[luma.offset[0] + y * luma.stride[0] + x];
        const int expected =
            limited ? static_cast<int>(std::clamp(std::round((v - 16) * 255.0 / 219.0), 0.0, 255.0))
                    : v;
        wrong += static_cast<int>(gray.at(x, y)) != expected;
      }
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(harness.pop_message(GST_MESSAGE_ERROR), "");
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Yuv, ::testing::ValuesIn(yuv_cases()), [](const auto &info) {
  return std::string(info.param.backend) + "_" + info.param.format +
         (info.param.limited ? "_limited" : "_full");
});

// A decoder's I420 goes straight in: no videoconvert between them.
TEST(YuvPipeline, DecodedVideoNeedsNoVideoconvert) {
  const PipelineRun run = run_pipeline(
      "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=320,height=240 ! "
      "cudagray backend=cpu ! video/x-raw,format=GRAY8 ! fakesink");
  EXPECT_TRUE(run.reached_eos);
  EXPECT_TRUE(run.errors.empty());
}

// ------------------------------------------------ frames leave when converted

namespace {

struct OutputCase {
  const char *name;
  const char *settings;  // cudagray's properties
  bool gpu;
};

const OutputCase kOutputCases[] = {
    {"cpu", "backend=cpu", false},
    {"cuda_default", "backend=cuda", true},
    {"cuda_inflight_1", "backend=cuda max-inflight=1", true},
    {"cuda_inflight_4", "backend=cuda max-inflight=4", true},
    {"cuda_inflight_16", "backend=cuda max-inflight=16", true},
};

// appsrc (not live, as most applications leave it) ! cudagray ! appsink: the
// application pushes a frame and waits for its result.
class FrameLeaves : public ::testing::TestWithParam<OutputCase> {
 protected:
  void SetUp() override {
    if (GetParam().gpu) SKIP_WITHOUT_GPU();
    const std::string launch = "appsrc name=src format=time caps=\"" +
                               caps_string("BGRx", 641, 481) + "\" ! cudagray name=gray " +
                               GetParam().settings + " ! appsink name=sink sync=false";
    pipeline = std::make_unique<Pipeline>(launch);
    ASSERT_NE(pipeline->play(), GST_STATE_CHANGE_FAILURE);
  }

  // Pushes frame i and waits at most 1 s for its result, with no further
  // input; returns how long it took, in ms (-1: it did not come).
  double push_and_pull(int i) {
    const TestFrame f = random_frame(PixelLayout::BGRx, 641, 481);
    GstBuffer *buf = buffer_for(f);
    GST_BUFFER_PTS(buf) = i * GST_SECOND / 30;
    GST_BUFFER_DURATION(buf) = GST_SECOND / 30;
    const gint64 start = g_get_monotonic_time();
    EXPECT_EQ(pipeline->push("src", buf), GST_FLOW_OK);
    GstSample *sample = pipeline->pull("sink", GST_SECOND);
    const double took_ms = (g_get_monotonic_time() - start) / 1000.0;
    if (!sample) {
      ADD_FAILURE() << "frame " << i << " did not come out within 1 s of its push";
      return -1;
    }
    GstBuffer *out = gst_sample_get_buffer(sample);
    EXPECT_EQ(GST_BUFFER_PTS(out), i * GST_SECOND / 30);
    EXPECT_TRUE(same_pixels(gray_of(out, 641, 481), cpu_reference(f, kWeightChoices[0])))
        << "frame " << i;
    gst_sample_unref(sample);
    return took_ms;
  }

  std::unique_ptr<Pipeline> pipeline;
};

}  // namespace

// One frame, no EOS, nothing after it: its result still comes out.
TEST_P(FrameLeaves, OneFrameWithoutFurtherInput) {
  const double took = push_and_pull(0);
  std::printf("%s: one 641x481 frame out %.2f ms after its push\n", GetParam().name, took);
}

// Frames 200 ms apart: each result arrives before the next frame is pushed.
TEST_P(FrameLeaves, EachFrameLeavesBeforeTheNextArrives) {
  double slowest = 0;
  for (int i = 0; i < 6; ++i) {
    slowest = std::max(slowest, push_and_pull(i));
    g_usleep(200 * 1000);
  }
  std::printf("%s: slowest of 6 frames 200 ms apart out %.2f ms after its push\n", GetParam().name,
              slowest);
}

INSTANTIATE_TEST_SUITE_P(Configurations, FrameLeaves, ::testing::ValuesIn(kOutputCases),
                         [](const auto &info) { return std::string(info.param.name); });
// ------------------------------------------------ what users trip over (issue 13)

namespace {

// Pushes one random limited-range I420 frame; true when a frame came out.
bool push_yuv_frame(Harness &harness, int width, int height) {
  GstVideoInfo info;
  gst_video_info_set_format(&info, GST_VIDEO_FORMAT_I420, width, height);
  std::vector<uint8_t> bytes(GST_VIDEO_INFO_SIZE(&info));
  fill_random(bytes);
  EXPECT_EQ(gst_harness_push(harness.h, gst_buffer_new_memdup(bytes.data(), bytes.size())),
            GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(harness.h);  // the output task pushes it
  if (out) gst_buffer_unref(out);
  return out != nullptr;
}

// All warnings on the bus, in order.
std::vector<std::string> warnings(Harness &harness) {
  std::vector<std::string> texts;
  for (std::string t; !(t = harness.pop_message(GST_MESSAGE_WARNING)).empty();) texts.push_back(t);
  return texts;
}

}  // namespace

// matrix and weights cannot change YUV's gray (its luma plane): one warning
// says so when they are set away from the default, none otherwise.
TEST(YuvWeights, SetAwayFromTheDefaultTheyWarnOnce) {
  const std::string kLimited =
      "matrix and weights do not apply to I420 input: its gray is the luma, expanded from limited "
      "range";
  for (const std::string setting : {"matrix=bt709", "weights=0.21,0.72,0.07", "matrix=custom"}) {
    SCOPED_TRACE(setting);
    Harness harness({"backend=cpu", setting});
    harness.set_caps(caps_string("I420", 641, 481) + ",colorimetry=bt601");
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(push_yuv_frame(harness, 641, 481));
    const std::vector<std::string> expected = setting == "matrix=custom"
                                                  ? std::vector<std::string>{}
                                                  : std::vector<std::string>{kLimited};
    EXPECT_EQ(warnings(harness), expected);  // matrix=custom alone keeps BT.601's weights
  }
  // Full range, and a matrix chosen while playing.
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("I420", 17, 3) + ",colorimetry=1:4:0:0");
  ASSERT_TRUE(push_yuv_frame(harness, 17, 3));
  EXPECT_EQ(warnings(harness), std::vector<std::string>{});
  gst_util_set_object_arg(G_OBJECT(harness.element()), "matrix", "bt2020");
  ASSERT_TRUE(push_yuv_frame(harness, 17, 3));
  ASSERT_TRUE(push_yuv_frame(harness, 17, 3));
  EXPECT_EQ(warnings(harness),
            std::vector<std::string>{
                "matrix and weights do not apply to I420 input: its gray is the luma, "
                "taken as it is"});
}

// On RGB input they apply, so no warning; the BT.601 weights given as
// custom text are the default and give none on YUV either.
TEST(YuvWeights, NoWarningWhereTheyApplyOrEqualTheDefault) {
  Harness rgb({"backend=cpu", "matrix=bt709"});
  rgb.set_caps(caps_string("RGB", 641, 481));
  const TestFrame f = random_frame(PixelLayout::RGB, 641, 481);
  EXPECT_TRUE(same_pixels(convert_through(rgb, f), cpu_reference(f, kWeightChoices[1])));
  EXPECT_EQ(warnings(rgb), std::vector<std::string>{});
  Harness yuv({"backend=cpu", "weights=0.299,0.587,0.114"});
  yuv.set_caps(caps_string("I420", 4097, 3));
  ASSERT_TRUE(push_yuv_frame(yuv, 4097, 3));
  EXPECT_EQ(warnings(yuv), std::vector<std::string>{});
}

// gst-inspect's descriptions say what happens to YUV.
TEST(YuvWeights, DescriptionsMentionYuv) {
  GstElement *e = gst_element_factory_make("cudagray", nullptr);
  ASSERT_NE(e, nullptr);
  for (const char *name : {"matrix", "weights"}) {
    const std::string blurb =
        g_param_spec_get_blurb(g_object_class_find_property(G_OBJECT_GET_CLASS(e), name));
    EXPECT_NE(blurb.find("RGB input only"), std::string::npos) << name << ": " << blurb;
  }
  const std::string description = gst_element_get_metadata(e, GST_ELEMENT_METADATA_DESCRIPTION);
  EXPECT_NE(description.find("YUV video gives its luma"), std::string::npos) << description;
  gst_object_unref(e);
}

// Weights that do not parse, set before start (as gst-launch does), stop the
// start with an error naming them; valid weights set after them win.
TEST(Properties, InvalidWeightsBeforeStartAreAnError) {
  const PipelineRun bad =
      run_pipeline("videotestsrc num-buffers=1 ! cudagray backend=cpu weights=a,b,c ! fakesink");
  EXPECT_FALSE(bad.reached_eos);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0],
            "Invalid weights \"a,b,c\": \"a\" is not a number in \"a,b,c\"; expected \"R,G,B\", "
            "each between 0 and 64");
  const PipelineRun range =
      run_pipeline("videotestsrc num-buffers=1 ! cudagray backend=cpu weights=0.3,65,0 ! fakesink");
  ASSERT_EQ(range.errors.size(), 1u);
  EXPECT_EQ(range.errors[0],
            "Invalid weights \"0.3,65,0\": weight \"65\" is outside 0..64; expected \"R,G,B\", "
            "each between 0 and 64");
  // RGB in: the weights apply, and no warning says they do not
  const PipelineRun fixed = run_pipeline(
      "videotestsrc num-buffers=1 ! video/x-raw,format=RGBx ! "
      "cudagray backend=cpu weights=a,b,c weights=0.2,0.7,0.1 ! fakesink");
  EXPECT_TRUE(fixed.reached_eos);
  EXPECT_EQ(fixed.errors, std::vector<std::string>{});
  EXPECT_EQ(fixed.warnings, std::vector<std::string>{});
}

TEST(Properties, NegativeZeroWeightReadsBackAsZero) {
  GstElement *e = gst_element_factory_make("cudagray", nullptr);
  ASSERT_NE(e, nullptr);
  gst_util_set_object_arg(G_OBJECT(e), "weights", "-0,0.5,-0.0");
  gchar *text = nullptr;
  g_object_get(e, "weights", &text, nullptr);
  EXPECT_STREQ(text, "0,0.5,0");
  g_free(text);
  gst_object_unref(e);
}

// ------------------------------------------------ metas

namespace {

const char *const kColorspaceTags[] = {GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_COLORSPACE_STR,
                                       nullptr};
const char *const kSizeTags[] = {GST_META_TAG_VIDEO_STR, GST_META_TAG_VIDEO_SIZE_STR, nullptr};

// Adds a custom meta with these tags (registered on first use), standing
// for a pixel-format meta or a geometry meta.
void add_tagged_meta(GstBuffer *buffer, const char *name, const char *const *tags) {
  if (!gst_meta_get_info(name))
    gst_meta_register_custom(name, const_cast<const gchar **>(tags), nullptr, nullptr, nullptr);
  ASSERT_NE(gst_buffer_add_custom_meta(buffer, name), nullptr);
}

}  // namespace

// The gray frame has the input's size: regions of interest, timecode and
// reference timestamps still describe it and come out unchanged; a meta
// about the input's pixel format (tagged colorspace) does not.
// (A crop meta is applied: tests/test_element_scale.cpp.)
TEST(Metas, GeometryAndTimeAreKeptPixelFormatIsDropped) {
  Harness harness({"backend=cpu"});
  harness.set_caps(caps_string("RGBx", 641, 481));
  const TestFrame f = random_frame(PixelLayout::RGBx, 641, 481);
  GstBuffer *in = buffer_for(f);
  gst_buffer_add_video_region_of_interest_meta(in, "face", 10, 20, 30, 40);
  gst_buffer_add_video_time_code_meta_full(in, 30, 1, nullptr, GST_VIDEO_TIME_CODE_FLAGS_NONE, 1, 2,
                                           3, 4, 0);
  GstCaps *ntp = gst_caps_from_string("timestamp/x-ntp");
  gst_buffer_add_reference_timestamp_meta(in, ntp, 123456789, 1000);
  add_tagged_meta(in, "CudaGrayTestColorspaceMeta", kColorspaceTags);
  add_tagged_meta(in, "CudaGrayTestSizeMeta", kSizeTags);
  ASSERT_EQ(gst_harness_push(harness.h, in), GST_FLOW_OK);
  GstBuffer *out = gst_harness_pull(harness.h);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(same_pixels(gray_of(out, 641, 481), cpu_reference(f, kWeightChoices[0])));

  const GstVideoRegionOfInterestMeta *roi = gst_buffer_get_video_region_of_interest_meta_id(out, 0);
  ASSERT_NE(roi, nullptr);
  EXPECT_STREQ(g_quark_to_string(roi->roi_type), "face");
  EXPECT_EQ(std::vector<guint>({roi->x, roi->y, roi->w, roi->h}),
            std::vector<guint>({10, 20, 30, 40}));
  const GstVideoTimeCodeMeta *tc = gst_buffer_get_video_time_code_meta(out);
  ASSERT_NE(tc, nullptr);
  EXPECT_EQ(std::vector<guint>({tc->tc.hours, tc->tc.minutes, tc->tc.seconds, tc->tc.frames}),
            std::vector<guint>({1, 2, 3, 4}));
  const GstReferenceTimestampMeta *ref = gst_buffer_get_reference_timestamp_meta(out, ntp);
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->timestamp, 123456789u);
  EXPECT_EQ(ref->duration, 1000u);
  EXPECT_NE(gst_buffer_get_custom_meta(out, "CudaGrayTestSizeMeta"), nullptr);
  EXPECT_EQ(gst_buffer_get_custom_meta(out, "CudaGrayTestColorspaceMeta"), nullptr);
  // the input's video meta (RGBx, its padded strides) is not carried over
  const GstVideoMeta *vmeta = gst_buffer_get_video_meta(out);
  if (vmeta) {
    EXPECT_EQ(vmeta->format, GST_VIDEO_FORMAT_GRAY8);
  }
  gst_caps_unref(ntp);
  gst_buffer_unref(out);
}

// ------------------------------------------------ QoS

namespace {

guint64 frames_converted(GstElement *element) {
  GstStructure *stats = nullptr;
  g_object_get(element, "stats", &stats, nullptr);
  guint64 frames = 0;
  EXPECT_TRUE(gst_structure_get_uint64(stats, "frames", &frames));
  gst_structure_free(stats);
  return frames;
}

}  // namespace

// qos is on by default, like videoconvert's: once the sink reports frames
// late up to 1 s, a frame due at 0.5 s is dropped before it is converted
// (with a QoS message) and a frame due at 2 s is converted. With qos=false
// the late frame is converted too.
TEST(Qos, OnByDefaultLateFramesAreDroppedBeforeConversion) {
  for (bool qos : {true, false}) {
    SCOPED_TRACE(qos ? "default" : "qos=false");
    Harness harness({"backend=cpu"});
    gboolean enabled = FALSE;
    g_object_get(harness.element(), "qos", &enabled, nullptr);
    EXPECT_TRUE(enabled);
    if (!qos) g_object_set(harness.element(), "qos", FALSE, nullptr);
    harness.set_caps(caps_string("BGR", 641, 481));
    ASSERT_TRUE(gst_harness_push_upstream_event(
        harness.h, gst_event_new_qos(GST_QOS_TYPE_UNDERFLOW, 1.0, 0, GST_SECOND)));
    std::vector<TestFrame> frames = {random_frame(PixelLayout::BGR, 641, 481),
                                     random_frame(PixelLayout::BGR, 641, 481)};
    ASSERT_EQ(gst_harness_push(harness.h, timed_buffer(frames[0], 15)),
              GST_FLOW_OK);  // due at 0.5 s
    ASSERT_EQ(gst_harness_push(harness.h, timed_buffer(frames[1], 60)), GST_FLOW_OK);  // due at 2 s
    for (size_t i = qos ? 1 : 0; i < frames.size(); ++i) {
      GstBuffer *out = gst_harness_pull(harness.h);
      ASSERT_NE(out, nullptr);
      EXPECT_EQ(GST_BUFFER_PTS(out), (i == 0 ? 15 : 60) * GST_SECOND / 30);
      EXPECT_TRUE(same_pixels(gray_of(out, 641, 481), cpu_reference(frames[i], kWeightChoices[0])));
      gst_buffer_unref(out);
    }
    EXPECT_EQ(gst_harness_try_pull(harness.h), nullptr);
    EXPECT_EQ(frames_converted(harness.element()), qos ? 1u : 2u);  // the late one never was
    GstMessage *message = gst_bus_pop_filtered(harness.bus, GST_MESSAGE_QOS);
    EXPECT_EQ(message != nullptr, qos);
    if (message) gst_message_unref(message);
  }
}

// A crop meta on a frame of the caps' size only marks a region (the whole
// frame converts): it goes on to the output, as videoconvert passes it. One
// that crops (the frame larger than the caps) is applied and dropped.
TEST(Metas, CropMetaMarkingARegionGoesOnAndAnAppliedOneIsDropped) {
  for (bool applied : {false, true}) {
    SCOPED_TRACE(applied ? "applied" : "marking a region");
    Harness harness({"backend=cpu"});
    const int width = applied ? 32 : 64, height = applied ? 20 : 48;
    harness.set_caps(caps_string("RGBx", width, height));
    GstBuffer *buf = buffer_for(random_frame(PixelLayout::RGBx, 64, 48));
    GstVideoCropMeta *crop = gst_buffer_add_video_crop_meta(buf);
    crop->x = 2;
    crop->y = 4;
    crop->width = 32;
    crop->height = 20;
    ASSERT_EQ(gst_harness_push(harness.h, buf), GST_FLOW_OK);
    GstBuffer *out = gst_harness_pull(harness.h);
    ASSERT_NE(out, nullptr);
    const GstVideoCropMeta *kept = gst_buffer_get_video_crop_meta(out);
    if (applied) {
      EXPECT_EQ(kept, nullptr) << "the output is the crop";
    } else {
      ASSERT_NE(kept, nullptr) << "the region's mark was dropped";
      EXPECT_EQ(kept->x, 2u);
      EXPECT_EQ(kept->y, 4u);
      EXPECT_EQ(kept->width, 32u);
      EXPECT_EQ(kept->height, 20u);
    }
    gst_buffer_unref(out);
  }
}

// After downstream answered EOS, as gstqueue: a serialized event that is
// not sticky is refused; a new segment makes the output push again, so the
// next frame goes out.
TEST(Output, DownstreamEosRefusesEventsUntilANewSegment) {
  Harness harness({"backend=cpu", "max-inflight=1"});
  harness.set_caps(caps_string("RGBx", 64, 48));
  std::atomic<bool> ended{true};
  GstPad *src = gst_element_get_static_pad(harness.element(), "src");
  gst_pad_add_probe(
      src, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad *, GstPadProbeInfo *info, gpointer data) {
        if (!static_cast<std::atomic<bool> *>(data)->load()) return GST_PAD_PROBE_OK;
        gst_buffer_unref(GST_PAD_PROBE_INFO_BUFFER(info));
        GST_PAD_PROBE_INFO_DATA(info) = nullptr;
        GST_PAD_PROBE_INFO_FLOW_RETURN(info) = GST_FLOW_EOS;
        return GST_PAD_PROBE_HANDLED;
      },
      &ended, nullptr);
  gst_object_unref(src);
  const TestFrame f = random_frame(PixelLayout::RGBx, 64, 48);
  EXPECT_EQ(gst_harness_push(harness.h, timed_buffer(f, 0)), GST_FLOW_EOS);
  EXPECT_FALSE(gst_harness_push_event(
      harness.h, gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                                      gst_structure_new_empty("cudagray-test-after-eos"))))
      << "a serialized event after downstream's EOS was taken";
  EXPECT_EQ(gst_harness_push(harness.h, timed_buffer(f, 1)), GST_FLOW_EOS);
  ended = false;
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(harness.h, gst_event_new_segment(&segment)));
  EXPECT_EQ(gst_harness_push(harness.h, timed_buffer(f, 2)), GST_FLOW_OK)
      << "still EOS after a new segment";
  GstBuffer *out = gst_harness_pull(harness.h);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(GST_BUFFER_PTS(out), 2 * GST_SECOND / 30);
  EXPECT_TRUE(same_pixels(gray_of(out, 64, 48), cpu_reference(f, kWeightChoices[0])));
  gst_buffer_unref(out);
}

// What gst-inspect-1.0 shows: the klass of GStreamer's converters plus
// Hardware, a description that names the CPU path, an author as
// "Name <address>", and a stats blurb that names every field the structure
// has.
TEST(Metadata, KlassDescriptionAndStatsBlurb) {
  GstElement *e = gst_element_factory_make("cudagray", nullptr);
  ASSERT_NE(e, nullptr);
  EXPECT_STREQ(gst_element_get_metadata(e, GST_ELEMENT_METADATA_KLASS),
               "Filter/Converter/Video/Colorspace/Hardware");
  const std::string description = gst_element_get_metadata(e, GST_ELEMENT_METADATA_DESCRIPTION);
  EXPECT_NE(description.find("or on the CPU"), std::string::npos) << description;
  const char *author = gst_element_get_metadata(e, GST_ELEMENT_METADATA_AUTHOR);
  EXPECT_TRUE(g_regex_match_simple("^[^<>@]+ <[^<>@ ]+@[^<>@ ]+\\.[^<>@ ]+>$", author,
                                   GRegexCompileFlags(0), GRegexMatchFlags(0)))
      << author;
  const std::string blurb =
      g_param_spec_get_blurb(g_object_class_find_property(G_OBJECT_GET_CLASS(e), "stats"));
  GstStructure *stats = nullptr;
  g_object_get(e, "stats", &stats, nullptr);
  ASSERT_NE(stats, nullptr);
  for (int i = 0; i < gst_structure_n_fields(stats); ++i) {
    const std::string field = gst_structure_nth_field_name(stats, i);
    // the blurb may name -min-us and -max-us after -mean-us
    const std::string named = field.size() > 7 && (field.rfind("-min-us") == field.size() - 7 ||
                                                   field.rfind("-max-us") == field.size() - 7)
                                  ? field.substr(field.size() - 7)
                                  : field;
    EXPECT_NE(blurb.find(named), std::string::npos) << field << " is not in the blurb";
  }
  gst_structure_free(stats);
  gst_object_unref(e);
}

// Output not linked (a tee without branches): one error on the bus, the
// source's, as with videoconvert; cudagray's own only where upstream never
// got the flow return (its last frames' pushes failed after upstream's
// last buffer).
TEST(Errors, NotLinkedIsReportedOnceAsVideoconvertDoes) {
  for (const char *buffers : {"30", "1"})  // 1: cudagray's push fails after upstream's last
    for (const char *element : {"videoconvert", "cudagray backend=cpu"}) {
      SCOPED_TRACE(std::string(element) + ", num-buffers=" + buffers);
      GstElement *pipeline = gst_parse_launch(
          (std::string("videotestsrc num-buffers=") + buffers + " ! " + element + " ! tee").c_str(),
          nullptr);
      ASSERT_NE(pipeline, nullptr);
      GstBus *bus = gst_element_get_bus(pipeline);
      gst_element_set_state(pipeline, GST_STATE_PLAYING);
      GstMessage *first = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
      ASSERT_NE(first, nullptr) << "no error";
      gst_message_unref(first);
      // READY stops and joins every streaming thread, the elements' own
      // tasks too: what they posted is on the bus by then (NULL would set
      // the bus flushing and drop it)
      ASSERT_EQ(gst_element_set_state(pipeline, GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
      EXPECT_EQ(describe(pop_messages(bus, GST_MESSAGE_ERROR)), "") << "a second error";
      gst_element_set_state(pipeline, GST_STATE_NULL);
      gst_object_unref(bus);
      gst_object_unref(pipeline);
    }
}

// A branch relinked mid-stream (a recording branch, an RTSP client): the
// converter's source pad unlinked while a live source keeps the tee going,
// then linked again. Frames flow again, with no error, as through
// videoconvert: the NOT_LINKED is forgotten at the relink's RECONFIGURE.
TEST(Errors, RelinkedSourcePadFlowsAgainAsVideoconvertDoes) {
  for (const char *converter :
       {"videoconvert ! capsfilter caps=video/x-raw,format=GRAY8 name=conv",
        "cudagray backend=cpu name=conv", "cudagray backend=cpu max-inflight=4 name=conv"}) {
    SCOPED_TRACE(converter);
    GstElement *pipeline = gst_parse_launch(
        (std::string("videotestsrc is-live=true ! video/x-raw,width=64,height=48,framerate=200/1 "
                     "! tee name=t allow-not-linked=true t. ! queue ! fakesink sync=false "
                     "t. ! queue ! ") +
         converter + " ! queue name=out ! fakesink sync=false")
            .c_str(),
        nullptr);
    ASSERT_NE(pipeline, nullptr);
    GstElement *conv = gst_bin_get_by_name(GST_BIN(pipeline), "conv");
    GstElement *out = gst_bin_get_by_name(GST_BIN(pipeline), "out");
    GstPad *src = gst_element_get_static_pad(conv, "src");
    GstPad *out_sink = gst_element_get_static_pad(out, "sink");
    Count pushed, left;
    auto count = [](GstPad *, GstPadProbeInfo *, gpointer counter) {
      ++*static_cast<Count *>(counter);
      return GST_PAD_PROBE_OK;
    };
    // a push's probes run before it finds no peer
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count, &pushed, nullptr);
    gst_pad_add_probe(out_sink, GST_PAD_PROBE_TYPE_BUFFER, count, &left, nullptr);
    GstBus *bus = gst_element_get_bus(pipeline);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    ASSERT_TRUE(wait_for(left, 5, 20000)) << "no frames before the unlink";
    ASSERT_TRUE(gst_pad_unlink(src, out_sink));
    const long pushed_linked = pushed.load();
    ASSERT_TRUE(wait_for(pushed, pushed_linked + 1, 20000)) << "no push while unlinked";
    const long left_before = left.load();
    ASSERT_EQ(gst_pad_link(src, out_sink), GST_PAD_LINK_OK);
    EXPECT_TRUE(wait_for(left, left_before + 10, 20000))
        << "no frame after the relink: " << left.load() - left_before;
    EXPECT_EQ(describe(pop_messages(bus, GST_MESSAGE_ERROR)), "");
    gst_element_set_state(pipeline, GST_STATE_NULL);
    for (GstPad *pad : {src, out_sink}) gst_object_unref(pad);
    for (GstElement *e : {conv, out, pipeline}) gst_object_unref(e);
    gst_object_unref(bus);
  }
}
