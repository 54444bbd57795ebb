// SPDX-License-Identifier: LGPL-2.1-or-later
// The one format table (plugin/gstcudagrayformats.cpp) against what the element
// offers and what the documentation says: the pad templates list exactly the
// table's formats in each memory, and docs/formats.md's format table lists the
// same formats with the same memories.
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gstcudagrayformats.h"

namespace {

using Memories = std::map<std::string, std::set<std::string>>;  // format: {"system", "CUDA"}

// Every format of the element's sink template, with the memories it is
// offered in.
Memories template_formats() {
  Memories found;
  GstElementFactory *factory = gst_element_factory_find("cudagray");
  EXPECT_NE(factory, nullptr);
  if (!factory) return found;
  GstElement *element = gst_element_factory_create(factory, nullptr);
  GstPad *sink = gst_element_get_static_pad(element, "sink");
  GstCaps *caps = gst_pad_get_pad_template_caps(sink);
  for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
    GstCapsFeatures *features = gst_caps_get_features(caps, i);
    const std::string memory =
        features && gst_caps_features_contains(features, "memory:CUDAMemory") ? "CUDA" : "system";
    const GValue *formats = gst_structure_get_value(gst_caps_get_structure(caps, i), "format");
    for (guint f = 0; f < gst_value_list_get_size(formats); ++f)
      found[g_value_get_string(gst_value_list_get_value(formats, f))].insert(memory);
  }
  gst_caps_unref(caps);
  gst_object_unref(sink);
  gst_object_unref(element);
  gst_object_unref(factory);
  return found;
}

// The table's formats and memories.
Memories table_formats(bool cuda_memory_built) {
  Memories found;
  guint n;
  const GstCudaGrayFormat *formats = gst_cuda_gray_formats(&n);
  for (guint i = 0; i < n; ++i) {
    found[formats[i].name].insert("system");
    if (formats[i].cuda_memory && cuda_memory_built) found[formats[i].name].insert("CUDA");
  }
  return found;
}

// The rows of a table of docs/formats.md's section `heading`: each `FORMAT`
// of the first column, with the last column's memories.
Memories documented_formats(const std::string &heading = "## Formats") {
  Memories found;
  const char *source = std::getenv("CUDAGRAY_SOURCE_DIR");
  EXPECT_NE(source, nullptr) << "CUDAGRAY_SOURCE_DIR names the source tree";
  std::ifstream doc(std::string(source ? source : ".") + "/docs/formats.md");
  std::string line;
  bool in_section = false;
  while (std::getline(doc, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == heading;
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    const std::string first = line.substr(0, line.find(" | "));
    const std::string memory = line.substr(line.rfind(" | ") + 3);
    std::set<std::string> memories = {"system"};
    if (memory.find("CUDA") != std::string::npos) memories.insert("CUDA");
    const std::regex name("`([A-Za-z0-9_]+)`");
    for (std::sregex_iterator m(first.begin(), first.end(), name), end; m != end; ++m)
      found[(*m)[1]] = memories;
  }
  return found;
}

// Every format of videoconvert's sink template.
std::set<std::string> videoconvert_formats() {
  std::set<std::string> found;
  GstElementFactory *factory = gst_element_factory_find("videoconvert");
  EXPECT_NE(factory, nullptr);
  if (!factory) return found;
  for (const GList *t = gst_element_factory_get_static_pad_templates(factory); t; t = t->next) {
    const auto *templ = static_cast<const GstStaticPadTemplate *>(t->data);
    if (templ->direction != GST_PAD_SINK) continue;
    GstCaps *caps = gst_static_caps_get(const_cast<GstStaticCaps *>(&templ->static_caps));
    for (guint i = 0; i < gst_caps_get_size(caps); ++i) {
      const GValue *formats = gst_structure_get_value(gst_caps_get_structure(caps, i), "format");
      for (guint f = 0; formats && f < gst_value_list_get_size(formats); ++f)
        found.insert(g_value_get_string(gst_value_list_get_value(formats, f)));
    }
    gst_caps_unref(caps);
  }
  gst_object_unref(factory);
  return found;
}

std::string describe(const Memories &m) {
  std::ostringstream out;
  for (const auto &[format, memories] : m) {
    out << format << ":";
    for (const std::string &memory : memories) out << " " << memory;
    out << "\n";
  }
  return out.str();
}

}  // namespace

TEST(FormatTable, TemplatesListExactlyTheTable) {
  const Memories offered = template_formats();
  bool cuda_offered = false;
  for (const auto &[format, memories] : offered)
    cuda_offered = cuda_offered || memories.count("CUDA");
  EXPECT_EQ(describe(offered), describe(table_formats(cuda_offered)));
}

// A documented row may name a format this GStreamer does not know yet (the
// table says from which version it is taken); every other must agree.
TEST(FormatTable, DocumentedTableListsTheTable) {
  Memories documented = documented_formats();
  ASSERT_FALSE(documented.empty()) << "no format table under docs/formats.md's \"## Formats\"";
  const Memories table = table_formats(true);
  for (auto it = documented.begin(); it != documented.end();) {
    const bool known =
        gst_video_format_from_string(it->first.c_str()) != GST_VIDEO_FORMAT_UNKNOWN ||
        gst_cuda_gray_format_for_bayer(it->first.c_str());
    it = !known && !table.count(it->first) ? documented.erase(it) : std::next(it);
  }
  EXPECT_EQ(describe(documented), describe(table));
}

// Every format videoconvert takes is in the table or named under
// docs/formats.md's "## Formats left out", never both (a row there may name a
// format this GStreamer does not know yet).
TEST(FormatTable, EveryVideoconvertFormatIsTakenOrLeftOutWithItsReason) {
  const std::set<std::string> videoconvert = videoconvert_formats();
  ASSERT_FALSE(videoconvert.empty());
  const Memories table = table_formats(true);
  const Memories left_out = documented_formats("## Formats left out");
  ASSERT_FALSE(left_out.empty()) << "no table under docs/formats.md's \"## Formats left out\"";
  std::string neither, both;
  for (const std::string &format : videoconvert)
    if (!table.count(format) && !left_out.count(format)) neither += " " + format;
  for (const auto &[format, memories] : left_out)
    if (table.count(format)) both += " " + format;
  EXPECT_EQ(neither, "") << "videoconvert takes these, cudagray neither takes nor leaves them out";
  EXPECT_EQ(both, "") << "taken and documented as left out";
}
