// SPDX-License-Identifier: LGPL-2.1-or-later
// The rows measured with CUDA directly (ceilings, the kernel alone, NPP),
// and what their two files share: the check on each CUDA call, event timing,
// rotating frames in device or pinned memory. Compiled only when the project
// is built with CUDA (CUDAGRAY_HAVE_CUDA).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "bench.h"
#include "cudagray/batch.h"
#include "cudagray/conversion.h"
#include "cudagray/cuda_owners.h"

// Throws cudagray::CudaError "<function> failed: ..." unless the call succeeds.
#define CHECK_CUDA(call) ::cudagray::check((call), #call)

namespace bench {

// Makes device current and describes the GPU; throws why when it cannot be
// used.
std::string cuda_open(int device);

// Per size: same-traffic device copies, pinned H2D and D2H (group "copy"),
// and the cudagray kernel alone for each of options.formats ("kernel").
void device_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows);

// Raw CUDA loops, 3 streams: pinned host RGB → device → kernel → pinned host
// GRAY8 ("raw:pinned", the element's ceiling), the same fed through a memcpy
// from pageable memory into pinned staging ("raw:staging"), and from frames
// already on the device, with no upload ("raw:device", the zero-copy ceiling);
// with the "scaled" group, also from the device to GRAY8 at kScaledOutput
// ("raw:device:scaled", the ceiling of cudagray scaling CUDA memory).
void raw_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows);

// One frame at a time on one stream, synchronised: the latency ceiling.
void raw_latency_row(const FrameSize &size, const Options &options, std::vector<Row> *rows);

// The kernel rows' scaled outputs (issue 31): GRAY8 at 640x360, and
// letterboxed into 640x640 (the picture as wide as the box, centred), each
// method; those no larger than the input frame.
struct ScaledOutput {
  std::string box;     // "640x360", "640x640-boxed"
  std::string method;  // "area", "bilinear", "nearest"
  cudagray::Conversion conversion;
  std::string name() const { return box + ":" + method; }
};
std::vector<ScaledOutput> scaled_outputs(PixelLayout layout, const FrameSize &size);

// The key of the same-traffic device copy row: a kernel moving traffic bytes.
std::string copy_key(size_t traffic);

// NPP loaded at run time (npp.cpp). Group "npp": nppiRGBToGray (C3C1R and
// AC4C1R) at the same size; groups "npp" and "scaled": every scaled output
// from 3- and 4-byte RGB as NPP's two passes in either order (to gray then
// nppiResize, nppiResize then to gray) and from a luma plane (nppiResize).
void npp_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows);

// The NPP row a kernel row of layout and gray depth is compared with, at
// the same size (scaled null) or scaled; "" where NPP has no such job, and
// for colour scaled "gray-first|resize-first" keys: the faster is the peer.
std::string npp_peer(PixelLayout layout, int gray_depth, const ScaledOutput *scaled);

// ---- shared by cuda_rows.cpp, batch_rows.cpp and npp.cpp --------------------

// One operation on the stream (a kernel, a copy...), for frame index i.
// Throws on failure.
using Operation = std::function<void(long i, cudaStream_t stream)>;

// Times back-to-back operations with CUDA events into row (µs per
// operation, how they were timed in its note). Captures a batch of them in
// a CUDA graph (at least `rotation` operations, so every rotated frame is
// used) so that host launch overhead does not hide the device time; falls
// back to plain launches when capture fails. best_of_both (for ceilings)
// times plain launches too and keeps the faster.
void time_operations(cudaStream_t stream, long rotation, const Operation &op,
                     const Options &options, Row &row, bool best_of_both = false);

// Device bytes to rotate over so that nothing stays in L2.
size_t device_rotation_bytes(const Options &options);

// count equal frames of bytes each from Make, picked by a rotating index;
// with a seed, frame i holds random bytes from seed + i.
template <class Owner, Owner (*Make)(size_t)>
class Ring {
 public:
  Ring(size_t count, size_t bytes) {
    for (size_t i = 0; i < count; ++i) frames_.push_back(Make(bytes));
  }
  Ring(size_t count, size_t bytes, uint64_t seed) : Ring(count, bytes) {
    for (size_t i = 0; i < count; ++i)
      CHECK_CUDA(
          cudaMemcpy(at(i), PageableFrames(1, bytes, seed + i).at(0), bytes, cudaMemcpyDefault));
  }
  uint8_t *at(long i) const {
    return static_cast<uint8_t *>(frames_[static_cast<size_t>(i) % frames_.size()].get());
  }

 private:
  std::vector<Owner> frames_;
};
using DeviceRing = Ring<cudagray::DeviceMemory, cudagray::make_device_memory>;
using PinnedRing = Ring<cudagray::PinnedMemory, cudagray::make_pinned_memory>;

// ---- batches (batch_rows.cpp; issue 51) -----------------------------------

// One batch job: `sources` frames of kBatchSource, their luma planes (a
// decoder's limited range), into one N x 1 x 640 x 640 float16 batch, each
// slot letterboxed as cudagraybatch letterboxes it (a 640x360 picture
// between bars), scaled by method.
struct BatchJob {
  int sources;
  std::string method;         // "area", "bilinear"
  cudagray::Conversion slot;  // every slot's conversion
  cudagray::BatchFormat format;
  // The bytes a batch must move, which its copy row moves: every byte of
  // the source rows the method's taps read, once (whole rows: neighbouring
  // output columns' taps are at most 3 bytes apart, so every 32-byte sector
  // of such a row is read), plus the batch written.
  size_t traffic;
  std::string key() const { return "batch:" + std::to_string(sources) + ":" + method; }
};
// N 4 and 16, area and bilinear.
std::vector<BatchJob> batch_jobs();

// NV12 frames of kBatchSource in device memory, random, rows kPitch bytes
// apart as decoders pitch them (the chroma plane below, never read), so
// many that a cycle of batches reads more than the L2 holds: batch i of n
// slots reads frames i*n to i*n + n - 1, wrapping round.
class BatchSources {
 public:
  static constexpr size_t kPitch = 2048;  // 1920-byte rows padded as pitched allocations pad them
  explicit BatchSources(const Options &options);
  cudagray::InputFrame luma(long batch, int n, int slot) const;
  // Batches of n slots that read every frame: the rotation to time over.
  long batches(int n) const { return static_cast<long>((count_ + n - 1) / n); }

 private:
  size_t count_;
  DeviceRing frames_;
};

// Group "batch": for each job convert_batch_cuda (us a batch, timed with
// CUDA events; the process's CPU time a batch with plain launches), and
// the device copy of its traffic (group "copy").
void batch_rows(const Options &options, std::vector<Row> *rows);

// Group "batch", NPP's peers of each job (npp.cpp): nppiResizeBatch_8u_C1R
// (one ROI for all) and nppiResizeBatch_8u_C1R_Advanced (ROIs per image)
// into N x 640x640 uint8, then nppiScale_8u32f and nppiConvert_32f16f over
// the whole batch.
void npp_batch_rows(const Options &options, std::vector<Row> *rows);
// The keys of NPP's peers of job, "key|key": the faster is the peer.
std::string npp_batch_peer(const BatchJob &job);

}  // namespace bench
