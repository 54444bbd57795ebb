// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cudagray element's type and instance. */
#pragma once

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>
#include <gst/video/video.h>

#include <deque>
#include <memory>
#include <string>

#include "cudagray/backend.h"
#include "cudagray/conversion.h"
#include "gstcudagraycontext.h"
#include "gstcudagrayformats.h"
#include "gstcudagrayoutput.h"
#include "gstcudagrayproperties.h"

G_BEGIN_DECLS

#define GST_TYPE_CUDA_GRAY (gst_cuda_gray_get_type())
G_DECLARE_FINAL_TYPE(GstCudaGray, gst_cuda_gray, GST, CUDA_GRAY, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(cudagray);

GST_DEBUG_CATEGORY_EXTERN(gst_cuda_gray_debug);

G_END_DECLS

/* How many times a renegotiation is tried before it fails: an application
 * changing a capsfilter while it is being asked makes it answer nothing for
 * a moment. */
#define GST_CUDA_GRAY_RENEGOTIATION_ATTEMPTS 200

/* What the element converts with, set up at start and in set_caps while
 * nothing is in flight; it answers the output unit's questions (it is its
 * client). */
struct GstCudaGrayStreaming final : GstCudaGrayOutputClient {
  explicit GstCudaGrayStreaming(GstCudaGray *element);
  /* start and stop: makes the backend the properties name, and lets go */
  gboolean open();
  void close();
  /* The conversion from in_info (read as format) to out_info, with the
   * method and borders the properties say (for the same input, the crop
   * the last frame had); an error posted, naming the sizes, when there is
   * none. */
  gboolean describe(const GstVideoInfo *in, const GstCudaGrayFormat *fmt, const GstVideoInfo *out);
  /* A geometry meta of inbuf on outbuf: TRUE to copy it as it is (the
   * output is the input), else placed onto outbuf here and FALSE: a region
   * of interest through inbuf's crop into the picture between the bars,
   * others scaled, or dropped when the picture moves (a scale cannot say
   * that). */
  gboolean copy_geometry_meta(GstBuffer *outbuf, GstMeta *meta, GstBuffer *inbuf);
  /* Sizes the backend for the frames set_caps described (nothing in
   * flight); posts an error, once for the same cause, when it cannot. */
  gboolean configure();
  /* How many frames may be in flight (max-inflight, auto resolved: one for
   * a live upstream or passthrough), told to the output unit. */
  void set_frames_in_flight(gboolean passthrough, gboolean live);
  /* Whether the backend reads and writes the memory the caps say (an error
   * posted, saying why, when not). */
  gboolean memory_usable();
  /* Upstream may write straight into pinned memory (system memory) or into
   * CUDA memory carrying our stream: adds that pool when upstream has none. */
  void offer_input_pool(GstQuery *query);
  /* Output buffers in system memory come from downstream's pool when it has
   * one, else from our pinned pool, so that the download lands in them
   * directly; in CUDA memory from downstream's CUDA pool of our context,
   * else from ours: the kernel writes into them. FALSE after an error. */
  gboolean decide_output_pool(GstQuery *query);
  /* The error for an input buffer that does not hold its frame. */
  GstFlowReturn refuse_input(const std::string &why);
  /* Starts converting inbuf into outbuf and hands the frame to output. */
  GstFlowReturn convert(GstBuffer *inbuf, GstBuffer *outbuf);
  /* Negotiates the source pad again until downstream takes its caps,
   * trying GST_CUDA_GRAY_RENEGOTIATION_ATTEMPTS times a millisecond apart. */
  gboolean renegotiate();
  /* Lets go of everything held without pushing it (the output task
   * stopped); the GPU lets go of the buffers first. */
  void discard_in_flight();

  gboolean finish_oldest() override;
  GstFlowReturn convert_again(std::deque<GstCudaGrayOutputItem> &items) override;
  GstFlowReturn convert_again(GstCudaGrayFrame &frame, const cudagray::Weights &weights);

  GstCudaGray *self;
  std::unique_ptr<cudagray::Backend> backend;
  cudagray::BackendNeeds needs;
  GstCudaGrayOutput output;
  GstAllocator *pinned = NULL; /* when the backend wants pinned memory */
  /* the input frame (Bayer: as GRAY8 of its geometry) and its format */
  GstVideoInfo in_info;
  const GstCudaGrayFormat *format = NULL;
  /* what a frame becomes, from the caps; configure_backend adds where
   * frames live and how many are in flight */
  cudagray::Conversion conversion;
  int max_in_flight = 1;    /* max-inflight with auto resolved */
  bool cuda_input = false;  /* sink caps say memory:CUDAMemory */
  bool cuda_output = false; /* src caps say memory:CUDAMemory */
  /* the last configuration failure posted, so that upstream's retries
   * (one per buffer) do not repeat it */
  std::string configure_error;
  /* the warning that matrix and weights do not apply to luma was posted */
  bool warned_weights_unused = false;
  /* why backend=auto converts on the CPU ("" when it does not) */
  std::string cpu_fallback_reason;
};

struct _GstCudaGray {
  GstBaseTransform parent;

  /* Properties and what other threads read, guarded by the object lock. */
  GstCudaGrayProperties props;
  /* whether the backend in use reads / writes CUDA memory; -1 when none is */
  gint reads_device_memory;
  gint writes_device_memory;

  GstCudaGrayStreaming *streaming;
  /* the CUDA context every backend call is made in */
  GstCudaGrayContext *context;
};
