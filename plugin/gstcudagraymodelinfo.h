// SPDX-License-Identifier: LGPL-2.1-or-later
/* A GStreamer modelinfo file's input tensor, read for cudagraybatch's
 * model-info property (docs/batch.md, "Mean and std from a model-info
 * file"): its one range, as mean and std, and its id. Read with GKeyFile
 * alone, so that it works on every GStreamer (the analytics library's
 * reader exists from 1.28 only). */
#pragma once

#include <string>

/* What an input tensor's ranges=lo,hi make of the batch's formula. */
struct GstCudaGrayModelInfo {
  double lo = 0, hi = 1;
  /* mean = -lo / (hi - lo) and std = 1 / (hi - lo), in doubles: the
   * batch takes each as the nearest binary32, as it takes the mean and std
   * properties */
  double mean = 0, std = 1;
  /* the section's id; empty when it has none */
  std::string id;
};

/* Reads path. false when it cannot be used, with *why the message (naming
 * the file and what is wrong) and *details what GLib said, if anything. */
bool gst_cuda_gray_model_info_load(const char *path, GstCudaGrayModelInfo *info, std::string *why,
                                   std::string *details);
