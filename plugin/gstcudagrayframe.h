// SPDX-License-Identifier: LGPL-2.1-or-later
/* The frame bridge: a frame's input and output GstBuffers checked, mapped
 * with gst_video_frame_map (a Bayer mosaic as bytes) where the kernels can
 * reach them, and shown to the kernels as an InputFrame and a GrayFrame. */
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>

#include "cudagray/backend.h"
#include "cudagray/conversion.h"
#include "cudagray/frame.h"
#include "gstcudagraycontext.h"

/* The frame buffer holds and the rectangle of it that info (the caps)
 * describes: with a GstVideoCropMeta (videocrop attaches one instead of
 * copying) the frame is the video meta's size and the rectangle the crop
 * meta's, which must be info's size; otherwise both are info's size.
 * Otherwise why says what is wrong, in the words of the element's error. */
gboolean gst_cuda_gray_frame_geometry(GstBuffer *buffer, const GstVideoInfo *info, gint *width,
                                      gint *height, cudagray::Rect *crop, std::string *why);

/* Sets the input size and crop of conversion c to buffer's geometry;
 * *changed says whether they were different. FALSE and why as above. */
gboolean gst_cuda_gray_frame_crop(GstBuffer *buffer, const GstVideoInfo *info,
                                  cudagray::Conversion *c, bool *changed, std::string *why);

/* Whether buffer holds every row of the planes layout reads of its frame
 * (gst_cuda_gray_frame_geometry; its video meta, if any, agreeing with
 * info); otherwise *why says what is wrong, in the words of the element's
 * error. Maps nothing. */
gboolean gst_cuda_gray_frame_check(GstBuffer *buffer, const GstVideoInfo *info,
                                   cudagray::PixelLayout layout, std::string *why);

/* Posts the element's error for a backend call that failed: the backend
 * named, what it was doing and why. */
void gst_cuda_gray_post_backend_error(GstElement *element, const char *backend, const char *doing,
                                      const std::string &why);

/* What stopped a frame from being mapped, for the element's error. */
typedef enum {
  GST_CUDA_GRAY_MAP_OK,
  /* the input is CUDA memory on another device than the element's */
  GST_CUDA_GRAY_MAP_OTHER_DEVICE,
  /* the input buffer does not hold its frame, or cannot be mapped */
  GST_CUDA_GRAY_MAP_BAD_INPUT,
  /* the output buffer is not the memory negotiated, or cannot be mapped */
  GST_CUDA_GRAY_MAP_BAD_OUTPUT,
} GstCudaGrayMapResult;

/* One frame in flight: its input and output buffers, mapped (and so
 * referenced) from map until release or destruction. Stays where it is made
 * (the output queue holds it by pointer): it is neither copied nor moved. */
class GstCudaGrayFrame {
 public:
  GstCudaGrayFrame() = default;
  GstCudaGrayFrame(const GstCudaGrayFrame &) = delete;
  GstCudaGrayFrame &operator=(const GstCudaGrayFrame &) = delete;
  ~GstCudaGrayFrame();

  /* The one mapping of a frame, for system and CUDA memory alike. Maps
   * inbuf, a frame of info read as conversion's layout, where the kernels
   * can read it (CUDA memory of context on the GPU, anything else through a
   * host mapping) after gst_cuda_gray_frame_check, and outbuf for writing
   * the conversion's gray frame (its output size, GRAY8 or GRAY16_LE),
   * in CUDA memory of context when cuda_output, else in host memory. Sets
   * the kernels' frames, with the streams a 1.24+ producer is still
   * writing on and that the output memory carries. context may be NULL:
   * system memory only. Otherwise why says what is wrong. */
  GstCudaGrayMapResult map(GstCudaGrayContext *context, GstBuffer *inbuf, const GstVideoInfo *info,
                           const cudagray::Conversion &conversion, GstBuffer *outbuf,
                           gboolean cuda_output, std::string *why);
  /* The input half of map, alone: cudagraybatch writes no gray frame. */
  GstCudaGrayMapResult map_input(GstCudaGrayContext *context, GstBuffer *inbuf,
                                 const GstVideoInfo *info, cudagray::PixelLayout layout,
                                 std::string *why);

  /* What the kernels read and write: valid while mapped. */
  const cudagray::InputFrame &input() const { return input_; }
  const cudagray::GrayFrame &output() const { return output_; }
  GstBuffer *input_buffer() const { return in_mapped_ ? in_.buffer : in_bytes_buffer_; }
  /* Whether the output was flagged DISCONT when mapped (it stays so after
   * release_output handed it over). */
  bool output_discont() const { return output_discont_; }

  /* The frame was submitted to backend, which converts frames in the
   * order they came: finish waits for its conversion (the oldest
   * unfinished), once, and says how it went. */
  void submitted(cudagray::Backend *backend) { backend_ = backend; }
  bool finish(std::string *why);
  const char *backend_name() const { return backend_ ? backend_->name() : ""; }

  /* Unmaps the output buffer and hands it over (transfer full), flagged
   * for downstream to wait on its stream when the conversion is still
   * queued there (output().consumer_stream); the input stays mapped until
   * the frame goes. */
  GstBuffer *release_output();

 private:
  GstCudaGrayMapResult map_output(GstCudaGrayContext *context, GstBuffer *outbuf,
                                  const cudagray::Conversion &conversion, gboolean cuda_output,
                                  std::string *why);
  void unmap();

  GstVideoFrame in_ = GstVideoFrame();
  /* a Bayer mosaic, mapped as bytes instead of in_ */
  GstBuffer *in_bytes_buffer_ = nullptr;
  GstMapInfo in_bytes_ = GstMapInfo();
  GstVideoFrame out_ = GstVideoFrame();
  bool in_mapped_ = false, out_mapped_ = false;
  bool output_discont_ = false;
  cudagray::Backend *backend_ = nullptr; /* converting it, until finished */
  cudagray::InputFrame input_ = cudagray::InputFrame();
  cudagray::GrayFrame output_ = cudagray::GrayFrame();
};
