// SPDX-License-Identifier: LGPL-2.1-or-later
/* The element's converter: the backend made at start and sized in
 * set_caps from the caps' description of the conversion, the pools
 * offered and decided, and a frame's way in: an input buffer becomes what
 * the output unit pushes (a frame being converted, or the buffer itself
 * passed through). It knows neither the element's fields nor the output
 * unit: the element hands it what it needs and takes what it makes. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <memory>
#include <string>

#include "cudagray/backend.h"
#include "cudagray/conversion.h"
#include "gstcudagraycontext.h"
#include "gstcudagrayformats.h"
#include "gstcudagrayoutputqueue.h"
#include "gstcudagrayproperties.h"

/* What start returns when the frame needs the backend sized anew (a new
 * crop meta, CUDA memory of another context): everything held must leave
 * first; then resize(), and start the same input again. */
#define GST_CUDA_GRAY_FLOW_DRAIN_FIRST GST_FLOW_CUSTOM_SUCCESS_1

class GstCudaGrayConverter {
 public:
  /* Errors are posted on trans, whose output buffers come from its pool. */
  GstCudaGrayConverter(GstBaseTransform *trans, GstCudaGrayContext *context);
  GstCudaGrayConverter(const GstCudaGrayConverter &) = delete;
  GstCudaGrayConverter &operator=(const GstCudaGrayConverter &) = delete;

  /* start and stop: makes the backend chosen (backend=auto falls back to
   * the CPU with a warning when no GPU can be used; everything else that
   * fails is an error), and lets go of it, the pinned allocator and the
   * CUDA context. */
  gboolean open(GstCudaGrayBackend choice, gint device_id);
  void close();
  /* What the backend in use can do (valid between open and close). */
  const cudagray::BackendNeeds &needs() const { return needs_; }
  int device_id() const { return backend_->device_id(); }

  /* set_caps, with nothing held: the conversion from in (read as format)
   * to out, with method and borders; for the same input, the crop the last
   * frame had. An error posted, naming the sizes, when there is none. */
  gboolean describe(const GstVideoInfo *in, const GstCudaGrayFormat *format,
                    const GstVideoInfo *out, cudagray::ScaleMethod method, gboolean add_borders);
  /* Whether the description is gray of the output's format and size,
   * which goes out as it came. */
  gboolean passes_through(const GstVideoInfo *out) const;
  /* How many frames may be in flight: max-inflight (0: the backend's
   * choice, one for a live upstream), one when passing through. */
  int set_frames_in_flight(guint requested, gboolean passthrough, gboolean live);
  /* Where frames live, from the caps; FALSE after posting an error saying
   * why the backend cannot read or write that memory. */
  gboolean set_memory(gboolean cuda_input, gboolean cuda_output);
  /* Sizes the backend for the frames described (nothing in flight); posts
   * an error, once for the same cause, when it cannot. */
  gboolean resize();

  /* Upstream may write straight into our host memory (pinned for CUDA)
   * or into CUDA memory carrying our stream: adds that pool when upstream
   * has none. */
  void offer_input_pool(GstQuery *query);
  /* Output buffers in system memory come from downstream's pool when it has
   * one, else from ours (pinned for CUDA, so that the download lands in
   * them directly; kept across renegotiations on both backends); in CUDA
   * memory from downstream's CUDA pool of our context,
   * else from ours: the kernel writes into them. FALSE after an error. */
  gboolean decide_output_pool(GstQuery *query);

  /* A frame's way in: inbuf (transfer full) becomes what the output
   * pushes, in *item: a frame being converted into a buffer of trans' pool
   * with weights, or inbuf itself when it passes through; flagged DISCONT
   * when discont. GST_CUDA_GRAY_FLOW_DRAIN_FIRST leaves inbuf to the
   * caller. */
  GstFlowReturn start(GstBuffer *inbuf, bool discont, const cudagray::Weights &weights,
                      GstCudaGrayOutputItem *item);
  /* Starts converting inbuf into outbuf (start's work for a frame). */
  GstFlowReturn convert(GstBuffer *inbuf, GstBuffer *outbuf, const cudagray::Weights &weights,
                        GstCudaGrayOutputItem *item);
  /* Waits for the oldest conversion queued (they finish in the order they
   * were queued); FALSE after posting the error. */
  gboolean finish_oldest();
  /* Waits for every conversion queued; FALSE after posting the error. */
  gboolean finish_all();
  /* Whether as many conversions are queued as the backend was sized for:
   * the next must wait for the oldest to finish. */
  gboolean full() const;
  /* Forgets the conversions queued, once the GPU let go of their buffers. */
  void discard_all();
  /* The backend's figures, and how many frames are in flight. */
  cudagray::TimingStats stats(int *in_flight) const;

  /* GstBaseTransform's transform_meta. The output keeps the input's
   * orientation: metas of geometry (regions of interest) or time
   * (untagged: timecode, reference timestamps) are copied, geometry in the
   * output's coordinates (copy_geometry_meta); any other tag (colorspace,
   * memory) is about what changed, and the meta is dropped, as is a crop
   * meta applied: the output is the crop. */
  gboolean transform_meta(GstBuffer *outbuf, GstMeta *meta, GstBuffer *inbuf);
  /* A geometry meta of inbuf on outbuf: TRUE to copy it as it is (the
   * output is the input), else placed onto outbuf here and FALSE: a region
   * of interest through inbuf's crop into the picture between the bars,
   * others scaled, or dropped when the picture moves (a scale cannot say
   * that). */
  gboolean copy_geometry_meta(GstBuffer *outbuf, GstMeta *meta, GstBuffer *inbuf);

 private:
  GstFlowReturn refuse_input(const std::string &why);
  void post_backend_error(const char *doing, const std::string &why);
  void warn_if_weights_unused(const cudagray::Weights &weights);

  GstBaseTransform *trans_;
  GstElement *element_;
  GstCudaGrayContext *context_;
  std::unique_ptr<cudagray::Backend> backend_;
  cudagray::BackendNeeds needs_;
  GstAllocator *host_ = NULL; /* pinned when the backend wants it, else plain */
  /* the input frame (Bayer: as GRAY8 of its geometry) and its format */
  GstVideoInfo in_info_;
  const GstCudaGrayFormat *format_ = NULL;
  /* what a frame becomes, from the caps and the frames' crop; resize adds
   * where frames live and how many are in flight */
  cudagray::Conversion described_;
  int max_in_flight_ = 1;
  bool cuda_input_ = false;  /* sink caps say memory:CUDAMemory */
  bool cuda_output_ = false; /* src caps say memory:CUDAMemory */
  /* the last sizing failure posted, so that upstream's retries (one per
   * buffer) do not repeat it */
  std::string resize_error_;
  /* the warning that matrix and weights do not apply to luma was posted */
  bool warned_weights_unused_ = false;
  /* why backend=auto converts on the CPU ("" when it does not) */
  std::string cpu_fallback_reason_;
};
