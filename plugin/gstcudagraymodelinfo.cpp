// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reads a modelinfo file's input tensor range for cudagraybatch. */
#include "gstcudagraymodelinfo.h"

#include <glib.h>

#include <cmath>
#include <memory>
#include <vector>

/* GStreamer's modelinfo files keep their version in this section */
#define MODELINFO_SECTION "modelinfo"

namespace {

struct KeyFileFree {
  void operator()(GKeyFile *f) const { g_key_file_free(f); }
};
struct GFree {
  void operator()(void *p) const { g_free(p); }
};
struct StrvFree {
  void operator()(gchar **v) const { g_strfreev(v); }
};

/* A whole number text, surrounding blanks allowed: its value, or false. */
bool parse_number(const char *text, double *value) {
  std::unique_ptr<gchar, GFree> copy(g_strstrip(g_strdup(text)));
  char *end = nullptr;
  *value = g_ascii_strtod(copy.get(), &end);
  return copy.get()[0] != '\0' && end && *end == '\0' && std::isfinite(*value);
}

}  // namespace

bool gst_cuda_gray_model_info_load(const char *path, GstCudaGrayModelInfo *info, std::string *why,
                                   std::string *details) {
  const std::string file = path;
  std::unique_ptr<GKeyFile, KeyFileFree> kf(g_key_file_new());
  GError *error = nullptr;
  gchar *contents = nullptr;
  gsize length = 0;
  if (!g_file_get_contents(path, &contents, &length, &error)) {
    *why = "Cannot read the model-info file " + file;
    *details = error->message;
    g_error_free(error);
    return false;
  }
  const gboolean parsed =
      g_key_file_load_from_data(kf.get(), contents, length, G_KEY_FILE_NONE, &error);
  g_free(contents);
  if (!parsed) {
    *why = "The model-info file " + file + " is not a key file of [sections]";
    *details = error->message;
    g_error_free(error);
    return false;
  }

  /* the input tensor: the one section (but the version's) with dir=input */
  std::unique_ptr<gchar *, StrvFree> groups(g_key_file_get_groups(kf.get(), nullptr));
  std::vector<std::string> inputs;
  for (gchar **g = groups.get(); *g; ++g) {
    std::unique_ptr<gchar, GFree> dir(g_key_file_get_string(kf.get(), *g, "dir", nullptr));
    if (g_strcmp0(*g, MODELINFO_SECTION) != 0 && dir && g_str_equal(dir.get(), "input"))
      inputs.push_back(*g);
  }
  if (inputs.size() != 1) {
    *why = "The model-info file " + file +
           (inputs.empty() ? " has no input tensor (a section with dir=input)"
                           : " has " + std::to_string(inputs.size()) +
                                 " input tensors (sections with dir=input); a batch is one");
    return false;
  }
  const std::string &tensor = inputs.front();
  const std::string where = "The model-info file " + file + ", input tensor [" + tensor + "]: ";

  std::unique_ptr<gchar, GFree> ranges(
      g_key_file_get_string(kf.get(), tensor.c_str(), "ranges", nullptr));
  if (!ranges) {
    *why = where + "no ranges";
    return false;
  }
  /* ranges: a min,max pair a channel, the pairs separated by ';' */
  std::unique_ptr<gchar *, StrvFree> channels(g_strsplit(ranges.get(), ";", -1));
  const guint n_channels = g_strv_length(channels.get());
  if (n_channels != 1) {
    *why = where + "ranges=" + ranges.get() + " has " + std::to_string(n_channels) +
           " channels; a gray batch has 1";
    return false;
  }
  std::unique_ptr<gchar *, StrvFree> pair(g_strsplit(channels.get()[0], ",", -1));
  if (g_strv_length(pair.get()) != 2 || !parse_number(pair.get()[0], &info->lo) ||
      !parse_number(pair.get()[1], &info->hi)) {
    *why = where + "ranges=" + ranges.get() + " is not min,max of two finite numbers";
    return false;
  }
  if (info->lo == info->hi) {
    *why = where + "ranges=" + ranges.get() + " is empty: min and max are equal";
    return false;
  }
  info->mean = -info->lo / (info->hi - info->lo);
  info->std = 1 / (info->hi - info->lo);
  std::unique_ptr<gchar, GFree> id(g_key_file_get_string(kf.get(), tensor.c_str(), "id", nullptr));
  info->id = id ? id.get() : "";
  return true;
}
