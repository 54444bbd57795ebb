// SPDX-License-Identifier: LGPL-2.1-or-later
// Version safety of CUDA memory: the plugin offers memory:CUDAMemory only
// when the running libgstcuda is the minor version it was built against.
#include "element_harness.h"
#include "gstcudagraycontext.h"

#ifdef CUDAGRAY_HAVE_GST_CUDA
TEST(CudaMemoryVersion, MinorVersionReadFromTheLibraryName) {
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library("libgstcuda-1.0.so.0.2602.0"), 26);
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library(
                "/usr/lib/x86_64-linux-gnu/libgstcuda-1.0.so.0.2200.0"),
            22);
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library("/opt/gst/lib/libgstcuda-1.0.so.0.2405.0"),
            24);
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library("libgstcuda-1.0.so.0.2800"), 28);
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library("libgstcuda-1.0.so.0"), -1);
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library("/lib/libgstcuda-1.0.so.0.x.0"), -1);
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library("libgstgl-1.0.so.0.2602.0"), -1);
  EXPECT_EQ(gst_cuda_gray_gst_cuda_minor_from_library(nullptr), -1);
}
#endif

// Built and run against one GStreamer here: the sink template lists CUDA
// memory exactly when the plugin was built with gstreamer-cuda-1.0, and the
// description says why when it does not.
TEST(CudaMemoryVersion, TemplatesListCudaMemoryWhenUsable) {
  std::string why;
  const bool usable = gst_cuda_gray_cuda_memory_usable(&why);
#ifdef CUDAGRAY_HAVE_GST_CUDA
  EXPECT_TRUE(usable) << why;
#else
  EXPECT_FALSE(usable);
  EXPECT_EQ(why, "cudagray was built without gstreamer-cuda-1.0");
#endif
  GstElementFactory *factory = gst_element_factory_find("cudagray");
  ASSERT_NE(factory, nullptr);
  // per pad: whether CUDA memory is listed, and whether it comes after system memory
  bool listed[2] = {false, false}, system_first[2] = {false, false};
  for (const GList *t = gst_element_factory_get_static_pad_templates(factory); t; t = t->next) {
    auto *templ = static_cast<GstStaticPadTemplate *>(t->data);
    const int pad = templ->direction == GST_PAD_SINK;
    GstCaps *caps = gst_static_pad_template_get_caps(templ);
    for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
      const bool cuda =
          gst_caps_features_contains(gst_caps_get_features(caps, i), "memory:CUDAMemory");
      if (i == 0) system_first[pad] = !cuda;
      listed[pad] = listed[pad] || cuda;
    }
    gst_caps_unref(caps);
  }
  for (int pad : {0, 1}) {
    SCOPED_TRACE(pad ? "sink" : "src");
    EXPECT_EQ(listed[pad], usable);
    EXPECT_TRUE(system_first[pad]);
  }
  const std::string description =
      gst_element_factory_get_metadata(factory, GST_ELEMENT_METADATA_DESCRIPTION);
  EXPECT_EQ(description.find("CUDA memory input and output are off") != std::string::npos, !usable)
      << description;
  gst_object_unref(factory);
}
