// SPDX-License-Identifier: LGPL-2.1-or-later
/* The frame bridge: a GstBuffer checked to hold its frame, mapped with
 * gst_video_frame_map, and shown to the kernels as an InputFrame or a
 * GrayFrame. */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>

#include "cudagray/frame.h"

/* Whether buffer holds every row of the planes layout reads of a frame of
 * info (its video meta, if any, agreeing with info); otherwise *why says
 * what is wrong, in the words of the element's error. Maps nothing. */
gboolean gst_cuda_gray_frame_check(GstBuffer *buffer, const GstVideoInfo *info,
                                   cudagray::PixelLayout layout, std::string *why);

/* One frame in flight: its input and output buffers, mapped (and so
 * referenced) from map_input / map_output until release or destruction.
 * Moves, never copies: one owner at a time. */
class GstCudaGrayFrame {
 public:
  GstCudaGrayFrame() = default;
  GstCudaGrayFrame(GstCudaGrayFrame &&other) noexcept;
  GstCudaGrayFrame &operator=(GstCudaGrayFrame &&other) noexcept;
  GstCudaGrayFrame(const GstCudaGrayFrame &) = delete;
  GstCudaGrayFrame &operator=(const GstCudaGrayFrame &) = delete;
  ~GstCudaGrayFrame();

  /* Checks buffer (gst_cuda_gray_frame_check) and maps it with flags (GST_MAP_READ,
   * plus GST_MAP_CUDA for device pointers); FALSE with why otherwise. */
  gboolean map_input(GstBuffer *buffer, const GstVideoInfo *info, cudagray::PixelLayout layout,
                     GstMapFlags flags, std::string *why);
  /* Maps buffer for writing a width x height gray frame of depth bits (8:
   * GRAY8, 16: GRAY16_LE) with flags (GST_MAP_WRITE, plus GST_MAP_CUDA for
   * the device pointer of CUDA memory: on_device). */
  gboolean map_output(GstBuffer *buffer, gint width, gint height, int depth, GstMapFlags flags,
                      gboolean on_device);

  /* What the kernels read and write: valid while mapped. */
  const cudagray::InputFrame &input() const { return input_; }
  cudagray::InputFrame &input() { return input_; }
  const cudagray::GrayFrame &output() const { return output_; }
  cudagray::GrayFrame &output() { return output_; }
  GstBuffer *input_buffer() const { return in_.buffer; }

  /* Unmaps the output buffer and hands it over (transfer full); the input
   * stays mapped until the frame goes. */
  GstBuffer *release_output();

 private:
  void unmap();

  GstVideoFrame in_ = GstVideoFrame();
  GstVideoFrame out_ = GstVideoFrame();
  bool in_mapped_ = false, out_mapped_ = false;
  cudagray::InputFrame input_ = cudagray::InputFrame();
  cudagray::GrayFrame output_ = cudagray::GrayFrame();
};
