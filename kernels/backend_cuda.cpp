// SPDX-License-Identifier: LGPL-2.1-or-later
// The CUDA backend: frames in flight through an upload stream and work
// streams, pinned or staged host memory, strips for a lone frame.
#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_check.h"
#include "cuda_gate.h"
#include "cudagray/backend.h"
#include "cudagray/convert_cuda.h"
#include "cudagray/device.h"
#include "parallel.h"
#include "timing.h"

namespace cudagray {

namespace {

// Device rows are padded to 16 bytes only (the wide kernel's need): that is
// the stride GStreamer gives most frames, and equal pitches on both sides
// make each copy one contiguous DMA transfer.
constexpr size_t kPitchAlignment = 16;
// Uploads run in order on one stream; kernels and downloads take turns on
// kStreams streams, so that they overlap the uploads that follow.
constexpr int kStreams = 3;
// With one frame in flight, a frame is cut into strips of about this many
// input bytes (at most kMaxStrips), so that its kernel and download overlap
// its upload. Each extra copy costs a few microseconds of DMA set-up, so few
// large strips win: measured on an H200, 3 strips for 1080p RGB.
constexpr size_t kStripBytes = 2u << 20;
constexpr int kMaxStrips = 8;
// Frames in flight for a non-live upstream when the user leaves it to the
// element (measured: docs/performance.md), and the most the element offers.
constexpr int kAutoInFlight = 4;
constexpr int kMaxInFlight = 16;
// Frames timed for the stats: the first and every kTimedEvery-th after it.
// Each timed event costs the copy engine about 1 µs a frame (measured on an
// H200: four made 1080p downloads 8 % slower), untimed ones nothing.
constexpr uint64_t kTimedEvery = 16;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Waits for event by polling, and returns how it ended. The CUDA context's
// lock favours readers, and cudaEventSynchronize spin-waits holding it for
// reading: with tens of backends waiting in one shared context (many
// cameras) one that starts then never gets it for writing to allocate.
// Measured on an H200 beside 32 waiting threads: cudaHostAlloc did not return
// in 45 s behind cudaEventSynchronize, and took 9 ms at worst behind polling.
cudaError_t poll_event(cudaEvent_t event) {
  cudaError_t state;
  while ((state = cudaEventQuery(event)) == cudaErrorNotReady) std::this_thread::yield();
  return state;
}

float elapsed_us(const EventOwner &from, const EventOwner &to) {
  float ms = 0;
  CUDAGRAY_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return ms * 1000.0f;
}

// The strips a frame of c is cut into. A Bayer pixel reads the rows around
// it, a resampled one the rows its taps read, a tiled row is spread over its
// tiles: those frames stay whole.
int strip_count(const Conversion &c) {
  const LayoutInfo &info = layout_info(c.layout);
  if (c.max_in_flight > 1 || info.family == LayoutFamily::Bayer || info.tiled() || c.resamples())
    return 1;
  const size_t in_bytes = info.row_bytes(c.in_width) * c.in_height * info.planes;
  return static_cast<int>(std::clamp<size_t>((in_bytes + kStripBytes - 1) / kStripBytes, 1,
                                             std::min(kMaxStrips, c.in_height)));
}

// One frame's worth of device buffers and events; frames take slots in turn.
struct Slot {
  // Kept, with their sizes, from one configuration to the next while they are
  // large enough: a renegotiation allocates only what grew (pinned memory
  // takes milliseconds to allocate and free).
  DeviceMemory device_in, device_out;  // used while inputs / outputs are in host memory
  size_t device_in_bytes = 0, device_out_bytes = 0;
  size_t in_plane_bytes = 0;             // each input plane's room in device_in and staging_in
  PinnedMemory staging_in, staging_out;  // allocated on first use, for pageable host memory
  size_t staging_in_bytes = 0, staging_out_bytes = 0;
  // timed, recorded on timed frames only
  EventOwner upload_start, upload_end, kernel_start, kernel_end, download_start, download_end;
  EventOwner input_written;  // the producer's writes to a device input, recorded on its stream
  EventOwner output_free;    // the work queued on a device output's consumer stream before ours
  EventOwner strip_uploaded[kMaxStrips], strip_done[kMaxStrips];
  GrayFrame out{};
  bool in_staged = false, out_staged = false, on_device = false, timed = false;
};

// Frames go host → device (upload stream) → kernel → host (work streams),
// up to max_in_flight at once; pinned host memory is copied by DMA directly,
// pageable memory through the slot's pinned staging buffers. Frames on the
// device skip their upload, results on the device their download. Everything lives
// in one CUDA context, which each call enters itself (context_).
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaContextSwitch context) : context_(std::move(context)) {
    const InCudaContext in(context_);
    CUDAGRAY_CHECK(cudaGetDevice(&device_));
    const CudaResourceChange change;  // one wait for the context's lock, not one per stream
    upload_stream_ = make_stream();
    for (auto &s : work_streams_) s = make_stream();
  }
  ~CudaBackend() override {
    const InCudaContext in(context_);
    discard_all();
    const CudaResourceChange change;  // one wait for the context's lock, not one per buffer
    slots_.clear();
    upload_stream_.reset();
    for (auto &s : work_streams_) s.reset();
  }

  const char *name() const override { return "cuda"; }
  BackendNeeds needs() const override { return {kAutoInFlight, kMaxInFlight, true, true, true}; }

  bool configure(const Conversion &c, std::string *error) override {
    if (!valid_conversion(c, error)) return false;
    // the same frames into the same results (a new crop of them, another
    // placement or method): the buffers and strips serve as they are, and
    // a crop changing from frame to frame costs no allocation
    const Conversion &old = conversion_;
    if (!slots_.empty() && c.layout == old.layout && c.in_width == old.in_width &&
        c.in_height == old.in_height && c.out_width == old.out_width &&
        c.out_height == old.out_height && c.out_depth == old.out_depth &&
        c.inputs_on_device == old.inputs_on_device &&
        c.outputs_on_device == old.outputs_on_device && c.max_in_flight == old.max_in_flight &&
        strip_count(c) == strips_) {
      conversion_ = c;
      return true;
    }
    const InCudaContext in_context(context_);
    discard_all();
    const CudaResourceChange change;  // one wait for the context's lock, not one per buffer
    try {
      conversion_ = c;
      info_ = &layout_info(c.layout);
      row_bytes_ = info_->row_bytes(c.in_width);
      out_row_bytes_ = static_cast<size_t>(c.out_width) * (c.out_depth / 8);
      in_pitch_ = align_up(row_bytes_, kPitchAlignment);
      out_pitch_ = align_up(out_row_bytes_, kPitchAlignment);
      // tiled: as many tiles as cover the frame; a frame whose tile stride
      // names more makes room for them when it comes (make_room)
      plane_bytes_ = info_->tiled()
                         ? info_->plane_bytes(c.in_width, c.in_height,
                                              info_->tight_stride(c.in_width, c.in_height))
                         : in_pitch_ * c.in_height;
      strips_ = strip_count(c);
      const bool kept = !slots_.empty();
      slots_.resize(std::max(1, c.max_in_flight));
      try {
        for (Slot &s : slots_) fit_slot(s);
      } catch (const CudaError &) {  // what the slots kept may be what is missing: free it all
        if (!kept) throw;
        slots_.clear();
        slots_.resize(std::max(1, c.max_in_flight));
        for (Slot &s : slots_) fit_slot(s);
      }
      return true;
    } catch (const CudaError &e) {
      slots_.clear();
      *error = e.what();
      return false;
    }
  }

  bool submit(const InputFrame &in, const GrayFrame &out, const Weights &w,
              std::string *error) override {
    const InCudaContext in_context(context_);
    size_t index;
    {
      std::lock_guard<std::mutex> hold(lock_);
      if (count_ == slots_.size()) {
        *error = "too many frames in flight";
        return false;
      }
      index = (first_ + count_) % slots_.size();
    }
    // every slot has the device buffers configure was asked for
    if (!in.on_device && conversion_.inputs_on_device) {
      *error = "a frame in host memory, but the backend was configured for frames on the GPU";
      return false;
    }
    if (!out.on_device && conversion_.outputs_on_device) {
      *error = "a result in host memory, but the backend was configured for results on the GPU";
      return false;
    }
    try {
      Slot &s = slots_[index];
      s.timed = submitted_++ % kTimedEvery == 0;
      s.on_device = in.on_device;
      s.in_staged = !in.on_device && !planes_pinned(in);
      s.out = out;
      s.out_staged = !out.on_device && !is_pinned(out.data);
      const InputRows rows = input_rows(in);
      if (!in.on_device) make_room(s, rows.pitch * rows.count);
      allocate_staging(s);
      const uint8_t *source[3];
      size_t source_pitch[3];
      for (int p = 0; p < info_->planes; ++p) {
        source[p] = in.plane[p];
        source_pitch[p] = rows.source_pitch(in, p);
      }
      if (s.in_staged) stage_input(s, in, rows, source, source_pitch);
      const GrayFrame download_to = s.out_staged ? slot_gray(s.staging_out.get()) : out;

      const CudaQueueing queueing;
      auto *device_in = static_cast<uint8_t *>(s.device_in.get());
      // where the kernel writes: the result itself when it stays on the device
      const GrayFrame written = out.on_device ? out : slot_gray(s.device_out.get());
      const auto consumer =
          out.on_device ? static_cast<cudaStream_t>(out.consumer_stream) : nullptr;
      if (consumer) CUDAGRAY_CHECK(cudaEventRecord(s.output_free.get(), consumer));
      // strips of input rows; a frame in strips is converted at its own size,
      // so that each strip's output rows are its input rows
      const int in_height = conversion_.in_height;
      const int strip_rows = (in_height + strips_ - 1) / strips_;
      auto strip_start = [&](int i) { return i * strip_rows; };
      auto strip_height = [&](int i) { return std::min(strip_rows, in_height - i * strip_rows); };
      // the rows of the planes each strip uploads (tiled: one strip, rows of tiles)
      auto strip_copied_rows = [&](int i) { return strips_ == 1 ? rows.count : strip_height(i); };
      auto strip_out_rows = [&](int i) {
        return strips_ == 1 ? conversion_.out_height : strip_height(i);
      };
      // Every strip's upload first, back to back on the one upload stream (the
      // copy engine runs them in order anyway)...
      cudaStream_t up = upload_stream_.get();
      const bool wait_for_producer = in.on_device && in.producer_stream;
      if (wait_for_producer)
        CUDAGRAY_CHECK(
            cudaEventRecord(s.input_written.get(), static_cast<cudaStream_t>(in.producer_stream)));
      // A timed frame's end events come before its strip events, so that
      // they are complete once the strips are.
      const auto record_if_timed = [&](const EventOwner &event, cudaStream_t stream) {
        if (s.timed) CUDAGRAY_CHECK(cudaEventRecord(event.get(), stream));
      };
      if (!in.on_device) {
        record_if_timed(s.upload_start, up);
        for (int i = 0; i < strips_; ++i) {
          for (int p = 0; p < info_->planes; ++p)
            CUDAGRAY_CHECK(cudaMemcpy2DAsync(
                device_in + p * s.in_plane_bytes + strip_start(i) * rows.pitch, rows.pitch,
                source[p] + strip_start(i) * source_pitch[p], source_pitch[p], rows.bytes,
                strip_copied_rows(i), cudaMemcpyHostToDevice, up));
          if (i == strips_ - 1) record_if_timed(s.upload_end, up);
          CUDAGRAY_CHECK(cudaEventRecord(s.strip_uploaded[i].get(), up));
        }
      }
      // ...then each strip's kernel (and download of a host result), as soon
      // as its upload is in.
      for (int i = 0; i < strips_; ++i) {
        const bool first = i == 0, last = i == strips_ - 1;
        cudaStream_t work = work_streams_[next_stream_++ % kStreams].get();
        Conversion strip_conversion = conversion_;
        if (strips_ > 1) {
          strip_conversion.in_height = strip_conversion.out_height = strip_height(i);
          strip_conversion.crop.height = strip_conversion.dest.height = strip_height(i);
        }
        InputFrame strip{};
        for (int p = 0; p < info_->planes; ++p) {
          strip.plane[p] = in.on_device
                               ? in.plane[p] + strip_start(i) * in.stride[p]
                               : device_in + p * s.in_plane_bytes + strip_start(i) * rows.pitch;
          strip.stride[p] = in.on_device ? in.stride[p] : rows.stride;
        }
        if (!in.on_device) CUDAGRAY_CHECK(cudaStreamWaitEvent(work, s.strip_uploaded[i].get(), 0));
        if (wait_for_producer) CUDAGRAY_CHECK(cudaStreamWaitEvent(work, s.input_written.get(), 0));
        if (consumer) CUDAGRAY_CHECK(cudaStreamWaitEvent(work, s.output_free.get(), 0));
        if (first) record_if_timed(s.kernel_start, work);
        uint8_t *const rows = written.data + strip_start(i) * written.stride;
        GrayFrame strip_out = written;
        strip_out.data = rows;
        CUDAGRAY_CHECK(convert_cuda(strip_conversion, strip, strip_out, w, work));
        if (last) record_if_timed(s.kernel_end, work);
        if (!out.on_device) {
          if (first) record_if_timed(s.download_start, work);
          CUDAGRAY_CHECK(cudaMemcpy2DAsync(download_to.data + strip_start(i) * download_to.stride,
                                           download_to.stride, rows, written.stride, out_row_bytes_,
                                           strip_out_rows(i), cudaMemcpyDeviceToHost, work));
          if (last) record_if_timed(s.download_end, work);
        }
        CUDAGRAY_CHECK(cudaEventRecord(s.strip_done[i].get(), work));
        if (consumer) CUDAGRAY_CHECK(cudaStreamWaitEvent(consumer, s.strip_done[i].get(), 0));
      }
      std::lock_guard<std::mutex> hold(lock_);
      ++count_;
      return true;
    } catch (const CudaError &e) {
      *error = e.what();
      return false;
    }
  }

  // The slot stays counted (so submit leaves it alone) until its result is
  // out; submit may fill other slots meanwhile.
  bool finish_oldest(std::string *error) override {
    const InCudaContext in_context(context_);
    Slot *oldest;
    {
      std::lock_guard<std::mutex> hold(lock_);
      if (count_ == 0) {
        *error = "no frame in flight";
        return false;
      }
      oldest = &slots_[first_];
    }
    const bool ok = wait_and_read(*oldest, error);
    std::lock_guard<std::mutex> hold(lock_);
    first_ = (first_ + 1) % slots_.size();
    --count_;
    return ok;
  }

  void discard_all() override {
    const InCudaContext in_context(context_);
    cudaStreamSynchronize(upload_stream_.get());
    for (auto &stream : work_streams_) cudaStreamSynchronize(stream.get());
    cudaGetLastError();
    std::lock_guard<std::mutex> hold(lock_);
    first_ = count_ = 0;
  }

  int in_flight() const override {
    std::lock_guard<std::mutex> hold(lock_);
    return static_cast<int>(count_);
  }
  int device_id() const override { return device_; }
  TimingStats stats() const override {
    std::lock_guard<std::mutex> hold(lock_);
    return stats_.get();
  }

 private:
  // Waits for slot s's work, copies a staged result out, adds its times.
  bool wait_and_read(Slot &s, std::string *error) {
    try {
      float kernel_us = 0, upload_us = 0, download_us = 0;
      {
        const CudaQueueing queueing;
        for (int i = 0; i < strips_; ++i) CUDAGRAY_CHECK(poll_event(s.strip_done[i].get()));
        if (s.timed) {
          kernel_us = elapsed_us(s.kernel_start, s.kernel_end);
          if (!s.on_device) upload_us = elapsed_us(s.upload_start, s.upload_end);
          if (!s.out.on_device) download_us = elapsed_us(s.download_start, s.download_end);
        }
      }
      if (s.out_staged) {
        const auto *result = static_cast<const uint8_t *>(s.staging_out.get());
        copy_rows(result, out_pitch_, s.out.data, s.out.stride, out_row_bytes_,
                  conversion_.out_height);
      }
      std::lock_guard<std::mutex> hold(lock_);
      stats_.count(s.in_staged, s.out_staged, s.on_device, s.out.on_device);
      if (s.timed)
        stats_.add_times(kernel_us, upload_us, download_us, s.on_device, s.out.on_device);
      return true;
    } catch (const CudaError &e) {
      *error = e.what();
      return false;
    }
  }

  // One of the slot's result buffers (staging or device), as a gray frame.
  GrayFrame slot_gray(void *data) const {
    return GrayFrame{static_cast<uint8_t *>(data), out_pitch_};
  }

  bool planes_pinned(const InputFrame &in) const {
    for (int p = 0; p < info_->planes; ++p)
      if (!is_pinned(in.plane[p])) return false;
    return true;
  }

  // How a frame's input planes are copied to the device: count rows of
  // bytes each, pitch apart there, read by the kernels with stride. A tiled
  // plane is its rows of tiles, whole and contiguous in the frame too, read
  // with the frame's own tile stride.
  struct InputRows {
    size_t bytes, pitch, stride;
    int count;
    bool tiled;
    size_t source_pitch(const InputFrame &in, int plane) const {
      return tiled ? bytes : in.stride[plane];
    }
  };
  InputRows input_rows(const InputFrame &in) const {
    if (!info_->tiled()) return {row_bytes_, in_pitch_, in_pitch_, conversion_.in_height, false};
    const size_t tiles = static_cast<size_t>(x_tiles_of(in.stride[0])) * info_->tile_bytes;
    return {tiles, tiles, in.stride[0], static_cast<int>(y_tiles_of(in.stride[0])), true};
  }

  // Room for input planes of bytes each in slot s's device (and staging)
  // buffers: a tiled frame whose tile stride names more tiles than the last
  // gets it, once.
  void make_room(Slot &s, size_t bytes) {
    if (bytes <= s.in_plane_bytes) return;
    const CudaResourceChange change;
    s.in_plane_bytes = bytes;
    fit_input(s);
  }

  // Slot s made to fit the configuration: device buffers for what is in
  // host memory, events for every strip (staging grows when a frame needs
  // it: allocate_staging).
  void fit_slot(Slot &s) {
    s.in_plane_bytes = plane_bytes_;
    fit_input(s);
    const size_t out_bytes = out_pitch_ * conversion_.out_height;
    if (!conversion_.outputs_on_device && s.device_out_bytes < out_bytes) {
      s.device_out.reset();
      s.device_out = make_device_memory(out_bytes);
      s.device_out_bytes = out_bytes;
    }
    if (!s.upload_start.get()) {
      for (EventOwner *e : {&s.upload_start, &s.upload_end, &s.kernel_start, &s.kernel_end,
                            &s.download_start, &s.download_end})
        *e = make_event(cudaEventDefault);
      for (EventOwner *e : {&s.input_written, &s.output_free})
        *e = make_event(cudaEventDisableTiming);
    }
    for (int i = 0; i < strips_; ++i) {
      if (s.strip_done[i].get()) continue;
      s.strip_uploaded[i] = make_event(cudaEventDisableTiming);
      s.strip_done[i] = make_event(cudaEventDisableTiming);
    }
  }

  // Room in slot s's device input for every plane at s.in_plane_bytes.
  void fit_input(Slot &s) {
    const size_t in_bytes = s.in_plane_bytes * info_->planes;
    if (!conversion_.inputs_on_device && s.device_in_bytes < in_bytes) {
      s.device_in.reset();
      s.device_in = make_device_memory(in_bytes);
      s.device_in_bytes = in_bytes;
    }
  }

  // Pinned staging for pageable input or output, made when a frame first
  // needs it: whether upstream and downstream hand over pinned memory (the
  // element's pools) shows only in their frames.
  void allocate_staging(Slot &s) {
    const size_t in_bytes = s.in_plane_bytes * info_->planes;
    const size_t out_bytes = out_pitch_ * conversion_.out_height;
    const bool staging_in = s.in_staged && s.staging_in_bytes < in_bytes;
    const bool staging_out = s.out_staged && s.staging_out_bytes < out_bytes;
    if (!(staging_in || staging_out)) return;
    const CudaResourceChange change;
    if (staging_in) {
      s.staging_in.reset();
      s.staging_in = make_pinned_memory(in_bytes);
      s.staging_in_bytes = in_bytes;
    }
    if (staging_out) {
      s.staging_out.reset();
      s.staging_out = make_pinned_memory(out_bytes);
      s.staging_out_bytes = out_bytes;
    }
  }

  // Copies pageable input into slot s's pinned staging buffer, from where
  // the upload reads each plane (source, pitch).
  void stage_input(Slot &s, const InputFrame &in, const InputRows &rows, const uint8_t *source[3],
                   size_t pitch[3]) {
    auto *staging = static_cast<uint8_t *>(s.staging_in.get());
    for (int p = 0; p < info_->planes; ++p) {
      source[p] = staging + p * s.in_plane_bytes;
      pitch[p] = rows.pitch;
    }
    // Split over threads: one core's memcpy is well below what DMA takes.
    for (int p = 0; p < info_->planes; ++p)
      copy_rows(in.plane[p], rows.source_pitch(in, p), staging + p * s.in_plane_bytes, rows.pitch,
                rows.bytes, rows.count);
  }

  const CudaContextSwitch context_;  // first made, last gone
  int device_ = -1;
  StreamOwner upload_stream_;
  StreamOwner work_streams_[kStreams];
  unsigned next_stream_ = 0;
  uint64_t submitted_ = 0;  // frames, for picking the timed ones
  Conversion conversion_;
  const LayoutInfo *info_ = nullptr;
  int strips_ = 1;
  // bytes of a row: of each input plane read, of the result
  size_t row_bytes_ = 0, out_row_bytes_ = 0;
  size_t in_pitch_ = 0, out_pitch_ = 0, plane_bytes_ = 0;
  std::vector<Slot> slots_;
  // Guards first_, count_ and stats_: finish_oldest runs beside submit.
  mutable std::mutex lock_;
  size_t first_ = 0, count_ = 0;
  StatsAccumulator stats_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::string *error, CudaContextSwitch context) {
  try {
    return std::make_unique<CudaBackend>(std::move(context));
  } catch (const CudaError &e) {
    *error = e.what();
    return nullptr;
  }
}

}  // namespace cudagray
