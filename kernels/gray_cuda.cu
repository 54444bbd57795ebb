// CUDA kernels and the CUDA backend.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "cuda_check.h"
#include "gray_cuda.h"
#include "layouts.h"
#include "parallel.h"
#include "timing.h"

namespace cudagray {

namespace {

// ---------------------------------------------------------------- kernels

constexpr int kThreadsPerBlock = 256;
// Pixels per thread in the wide kernels: one 16-byte store of GRAY8, fed by
// 16-byte loads (3 for RGB, 4 for 4-byte formats, 1 per plane for planar).
constexpr int kWideChunk = 16;

__device__ __forceinline__ uint4 load16(const uint8_t *p) {
  return __ldcs(reinterpret_cast<const uint4 *>(p));  // read once: stream past the cache
}

__device__ __forceinline__ void store16(uint8_t *p, const uint32_t (&w)[4]) {
  __stcs(reinterpret_cast<uint4 *>(p), make_uint4(w[0], w[1], w[2], w[3]));
}

template <int N>
__device__ __forceinline__ uint32_t byte_of(const uint32_t (&words)[N], int i) {
  return (words[i >> 2] >> ((i & 3) * 8)) & 0xFF;
}

// Thread t of the grid converts pixels [Chunk*c, Chunk*c + Chunk) of row r,
// the rows being cut into `chunks` chunks. Chunk is kWideChunk for frames
// whose rows start 16-byte aligned (wide loads, one 16-byte store) and 1
// otherwise; a row's ragged end is converted pixel by pixel.
template <int Chunk>
__device__ __forceinline__ bool chunk_of_thread(int height, int chunks, int *row, int *x) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(chunks) * height) return false;
  *row = static_cast<int>(t / chunks);
  *x = static_cast<int>(t - static_cast<long long>(*row) * chunks) * Chunk;
  return true;
}

template <int Chunk, int Bpp, int R, int G, int B>
__global__ void packed_kernel(const uint8_t *__restrict__ in, size_t in_pitch,
                              uint8_t *__restrict__ out, size_t out_pitch, int width,
                              int height, int chunks, Weights w) {
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  const uint8_t *src = in + row * in_pitch + static_cast<size_t>(x0) * Bpp;
  uint8_t *dst = out + row * out_pitch + x0;
  if (Chunk == kWideChunk && x0 + Chunk <= width) {
    uint32_t words[4 * Bpp];
#pragma unroll
    for (int i = 0; i < Bpp; ++i) {
      const uint4 v = load16(src + 16 * i);
      words[4 * i] = v.x, words[4 * i + 1] = v.y, words[4 * i + 2] = v.z, words[4 * i + 3] = v.w;
    }
    uint32_t gray[4] = {0, 0, 0, 0};
#pragma unroll
    for (int p = 0; p < kWideChunk; ++p)
      gray[p >> 2] |= uint32_t(luma(byte_of(words, p * Bpp + R), byte_of(words, p * Bpp + G),
                                    byte_of(words, p * Bpp + B), w))
                      << ((p & 3) * 8);
    store16(dst, gray);
  } else {
    const int n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x, src += Bpp) dst[x] = luma(src[R], src[G], src[B], w);
  }
}

template <int Chunk>
__global__ void planar_kernel(const uint8_t *__restrict__ r, size_t r_pitch,
                              const uint8_t *__restrict__ g, size_t g_pitch,
                              const uint8_t *__restrict__ b, size_t b_pitch,
                              uint8_t *__restrict__ out, size_t out_pitch, int width,
                              int height, int chunks, Weights w) {
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  r += row * r_pitch + x0;
  g += row * g_pitch + x0;
  b += row * b_pitch + x0;
  uint8_t *dst = out + row * out_pitch + x0;
  if (Chunk == kWideChunk && x0 + Chunk <= width) {
    const uint4 rv = load16(r), gv = load16(g), bv = load16(b);
    const uint32_t rw[4] = {rv.x, rv.y, rv.z, rv.w}, gw[4] = {gv.x, gv.y, gv.z, gv.w},
                   bw[4] = {bv.x, bv.y, bv.z, bv.w};
    uint32_t gray[4] = {0, 0, 0, 0};
#pragma unroll
    for (int p = 0; p < kWideChunk; ++p)
      gray[p >> 2] |= uint32_t(luma(byte_of(rw, p), byte_of(gw, p), byte_of(bw, p), w))
                      << ((p & 3) * 8);
    store16(dst, gray);
  } else {
    const int n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x) dst[x] = luma(r[x], g[x], b[x], w);
  }
}

// Luma: copied, or expanded from limited range.
template <int Chunk>
__global__ void luma_kernel(const uint8_t *__restrict__ in, size_t in_pitch,
                            uint8_t *__restrict__ out, size_t out_pitch, int width, int height,
                            int chunks, bool limited) {
  int row, x0;
  if (!chunk_of_thread<Chunk>(height, chunks, &row, &x0)) return;
  const uint8_t *src = in + row * in_pitch + x0;
  uint8_t *dst = out + row * out_pitch + x0;
  if (Chunk == kWideChunk && x0 + Chunk <= width) {
    const uint4 v = load16(src);
    uint32_t words[4] = {v.x, v.y, v.z, v.w};
    if (limited) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t w = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) w |= uint32_t(expand_limited((words[i] >> (8 * b)) & 0xFF)) << (8 * b);
        words[i] = w;
      }
    }
    store16(dst, words);
  } else {
    const int n = min(Chunk, width - x0);
    for (int x = 0; x < n; ++x) dst[x] = limited ? expand_limited(src[x]) : src[x];
  }
}

bool aligned16(const void *p, size_t pitch) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && pitch % 16 == 0;
}

// Picks the wide or the pixel-by-pixel instance of a kernel and sizes its grid.
template <class Launch>
void launch_chunked(bool wide, const InputFrame &in, Launch &&launch) {
  auto go = [&](auto chunk) {
    constexpr int Chunk = decltype(chunk)::value;
    const int chunks = (in.width + Chunk - 1) / Chunk;
    const long long threads = static_cast<long long>(chunks) * in.height;
    launch(chunk, chunks, dim3(static_cast<unsigned>((threads + kThreadsPerBlock - 1) / kThreadsPerBlock)));
  };
  if (wide) go(std::integral_constant<int, kWideChunk>{});
  else go(std::integral_constant<int, 1>{});
}

template <int Bpp, int R, int G, int B>
void launch(PackedLayout<Bpp, R, G, B>, const InputFrame &in, const GrayFrame &out,
            const Weights &w, cudaStream_t stream) {
  const bool wide = aligned16(in.plane[0], in.stride[0]) && aligned16(out.data, out.stride);
  launch_chunked(wide, in, [&](auto chunk, int chunks, dim3 grid) {
    packed_kernel<decltype(chunk)::value, Bpp, R, G, B><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[0], in.stride[0], out.data, out.stride, in.width, in.height, chunks, w);
  });
}

template <int R, int G, int B>
void launch(PlanarLayout<R, G, B>, const InputFrame &in, const GrayFrame &out,
            const Weights &w, cudaStream_t stream) {
  bool wide = aligned16(out.data, out.stride);
  for (int p = 0; p < 3; ++p) wide = wide && aligned16(in.plane[p], in.stride[p]);
  launch_chunked(wide, in, [&](auto chunk, int chunks, dim3 grid) {
    planar_kernel<decltype(chunk)::value><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[R], in.stride[R], in.plane[G], in.stride[G], in.plane[B], in.stride[B],
        out.data, out.stride, in.width, in.height, chunks, w);
  });
}

void launch(LumaLayout, const InputFrame &in, const GrayFrame &out, const Weights &,
            cudaStream_t stream) {
  const bool wide = aligned16(in.plane[0], in.stride[0]) && aligned16(out.data, out.stride);
  launch_chunked(wide, in, [&](auto chunk, int chunks, dim3 grid) {
    luma_kernel<decltype(chunk)::value><<<grid, kThreadsPerBlock, 0, stream>>>(
        in.plane[0], in.stride[0], out.data, out.stride, in.width, in.height, chunks,
        in.limited_range);
  });
}

// ---------------------------------------------------------------- backend

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

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

EventOwner make_event(unsigned flags) {
  cudaEvent_t e;
  CUDAGRAY_CHECK(cudaEventCreateWithFlags(&e, flags));
  return EventOwner(e);
}

float elapsed_us(const EventOwner &from, const EventOwner &to) {
  float ms = 0;
  CUDAGRAY_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return ms * 1000.0f;
}

// One frame's worth of device buffers and events; frames take slots in turn.
struct Slot {
  // none while inputs (device_in) or outputs (device_out) are on the device
  DeviceMemory device_in, device_out;
  PinnedMemory staging_in, staging_out;  // allocated on first use, for pageable host memory
  EventOwner upload_start, kernel_start, kernel_end, download_start;
  EventOwner input_written;  // the producer's writes to a device input, recorded on its stream
  EventOwner output_free;    // the work queued on a device output's consumer stream before ours
  EventOwner strip_uploaded[kMaxStrips], strip_done[kMaxStrips];
  GrayFrame out{};
  bool in_staged = false, out_staged = false, on_device = false;
};

// Frames go host → device (upload stream) → kernel → host (work streams),
// up to max_in_flight at once; pinned host memory is copied by DMA directly,
// pageable memory through the slot's pinned staging buffers. Frames on the
// device skip their upload, results on the device their download. Everything lives
// in the CUDA context current when it is made; the caller makes that context
// current around every call.
class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    CUDAGRAY_CHECK(cudaGetDevice(&device_));
    upload_stream_ = make_stream();
    for (auto &s : work_streams_) s = make_stream();
  }
  ~CudaBackend() override { discard_all(); }

  const char *name() const override { return "cuda"; }
  BackendNeeds needs() const override { return {kAutoInFlight, kMaxInFlight, true, true, true}; }

  bool configure(PixelLayout layout, int width, int height, int max_in_flight, bool inputs_on_device,
                 bool outputs_on_device, std::string *error) override {
    discard_all();
    slots_.clear();  // free before allocating, so that large frames fit
    try {
      info_ = &layout_info(layout);
      layout_ = layout;
      width_ = width;
      height_ = height;
      row_bytes_ = static_cast<size_t>(width) * info_->bytes_per_pixel;
      in_pitch_ = align_up(row_bytes_, kPitchAlignment);
      out_pitch_ = align_up(static_cast<size_t>(width), kPitchAlignment);
      plane_bytes_ = in_pitch_ * height;
      const size_t in_bytes = row_bytes_ * height * info_->planes;
      strips_ = max_in_flight > 1 ? 1
                                  : static_cast<int>(std::clamp<size_t>(
                                        (in_bytes + kStripBytes - 1) / kStripBytes, 1,
                                        std::min(kMaxStrips, height)));
      slots_.resize(std::max(1, max_in_flight));
      for (Slot &s : slots_) {
        if (!inputs_on_device) s.device_in = make_device_memory(plane_bytes_ * info_->planes);
        if (!outputs_on_device) s.device_out = make_device_memory(out_pitch_ * height);
        for (EventOwner *e : {&s.upload_start, &s.kernel_start, &s.kernel_end, &s.download_start})
          *e = make_event(cudaEventDefault);
        s.input_written = make_event(cudaEventDisableTiming);
        s.output_free = make_event(cudaEventDisableTiming);
        for (int i = 0; i < kMaxStrips; ++i) {  // the last strip's events end the upload and download
          s.strip_uploaded[i] = make_event(cudaEventDefault);
          s.strip_done[i] = make_event(cudaEventDefault);
        }
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
    if (in.layout != layout_ || in.width != width_ || in.height != height_) {
      *error = "frame does not match the configured format and size";
      return false;
    }
    size_t index;
    {
      std::lock_guard<std::mutex> hold(lock_);
      if (count_ == slots_.size()) {
        *error = "too many frames in flight";
        return false;
      }
      index = (first_ + count_) % slots_.size();
    }
    try {
      Slot &s = slots_[index];
      const uint8_t *source[3];
      size_t source_pitch[3];
      s.on_device = in.on_device;
      if (in.on_device) {  // already on the GPU: the kernel reads it where it is
        for (int p = 0; p < info_->planes; ++p) source[p] = in.plane[p], source_pitch[p] = in.stride[p];
        s.in_staged = false;
      } else {
        if (!s.device_in.get()) s.device_in = make_device_memory(plane_bytes_ * info_->planes);
        stage_input(s, in, source, source_pitch);
      }
      s.out = out;
      s.out_staged = !out.on_device && !is_pinned(out.data);
      if (s.out_staged && !s.staging_out.get()) s.staging_out = make_pinned_memory(out_pitch_ * height_);
      if (!out.on_device && !s.device_out.get()) s.device_out = make_device_memory(out_pitch_ * height_);
      const GrayFrame download_to =
          s.out_staged ? GrayFrame{static_cast<uint8_t *>(s.staging_out.get()), out_pitch_} : out;

      auto *device_in = static_cast<uint8_t *>(s.device_in.get());
      // where the kernel writes: the result itself when it stays on the device
      const GrayFrame written = out.on_device ? out : GrayFrame{static_cast<uint8_t *>(s.device_out.get()), out_pitch_};
      const auto consumer = out.on_device ? static_cast<cudaStream_t>(out.consumer_stream) : nullptr;
      if (consumer) CUDAGRAY_CHECK(cudaEventRecord(s.output_free.get(), consumer));
      const int strip_rows = (height_ + strips_ - 1) / strips_;
      auto strip_start = [&](int i) { return i * strip_rows; };
      auto strip_height = [&](int i) { return std::min(strip_rows, height_ - i * strip_rows); };
      // Every strip's upload first, back to back on the one upload stream (the
      // copy engine runs them in order anyway)...
      cudaStream_t up = upload_stream_.get();
      const bool wait_for_producer = in.on_device && in.producer_stream;
      if (wait_for_producer)
        CUDAGRAY_CHECK(cudaEventRecord(s.input_written.get(), static_cast<cudaStream_t>(in.producer_stream)));
      if (!in.on_device) {
        CUDAGRAY_CHECK(cudaEventRecord(s.upload_start.get(), up));
        for (int i = 0; i < strips_; ++i) {
          for (int p = 0; p < info_->planes; ++p)
            CUDAGRAY_CHECK(cudaMemcpy2DAsync(device_in + p * plane_bytes_ + strip_start(i) * in_pitch_, in_pitch_,
                                             source[p] + strip_start(i) * source_pitch[p], source_pitch[p],
                                             row_bytes_, strip_height(i), cudaMemcpyHostToDevice, up));
          CUDAGRAY_CHECK(cudaEventRecord(s.strip_uploaded[i].get(), up));
        }
      }
      // ...then each strip's kernel (and download of a host result), as soon
      // as its upload is in.
      for (int i = 0; i < strips_; ++i) {
        const bool first = i == 0, last = i == strips_ - 1;
        cudaStream_t work = work_streams_[next_stream_++ % kStreams].get();
        InputFrame strip{layout_, width_, strip_height(i), {}, {}, in.limited_range};
        for (int p = 0; p < info_->planes; ++p) {
          strip.plane[p] = in.on_device ? source[p] + strip_start(i) * source_pitch[p]
                                        : device_in + p * plane_bytes_ + strip_start(i) * in_pitch_;
          strip.stride[p] = in.on_device ? source_pitch[p] : in_pitch_;
        }
        if (!in.on_device) CUDAGRAY_CHECK(cudaStreamWaitEvent(work, s.strip_uploaded[i].get(), 0));
        if (wait_for_producer) CUDAGRAY_CHECK(cudaStreamWaitEvent(work, s.input_written.get(), 0));
        if (consumer) CUDAGRAY_CHECK(cudaStreamWaitEvent(work, s.output_free.get(), 0));
        if (first) CUDAGRAY_CHECK(cudaEventRecord(s.kernel_start.get(), work));
        uint8_t *const rows = written.data + strip_start(i) * written.stride;
        CUDAGRAY_CHECK(convert_cuda(strip, {rows, written.stride}, w, work));
        if (last) CUDAGRAY_CHECK(cudaEventRecord(s.kernel_end.get(), work));
        if (!out.on_device) {
          if (first) CUDAGRAY_CHECK(cudaEventRecord(s.download_start.get(), work));
          CUDAGRAY_CHECK(cudaMemcpy2DAsync(download_to.data + strip_start(i) * download_to.stride,
                                           download_to.stride, rows, written.stride, width_, strip_height(i),
                                           cudaMemcpyDeviceToHost, work));
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
      for (int i = 0; i < strips_; ++i) CUDAGRAY_CHECK(cudaEventSynchronize(s.strip_done[i].get()));
      if (s.out_staged) {
        const auto *result = static_cast<const uint8_t *>(s.staging_out.get());
        copy_rows(result, out_pitch_, s.out.data, s.out.stride, width_, height_);
      }
      const float kernel_us = elapsed_us(s.kernel_start, s.kernel_end);
      const float upload_us = s.on_device ? 0.0f : elapsed_us(s.upload_start, s.strip_uploaded[strips_ - 1]);
      const float download_us = s.out.on_device ? 0.0f : elapsed_us(s.download_start, s.strip_done[strips_ - 1]);
      std::lock_guard<std::mutex> hold(lock_);
      stats_.add(kernel_us, upload_us, download_us, s.in_staged, s.out_staged, s.on_device, s.out.on_device);
      return true;
    } catch (const CudaError &e) {
      *error = e.what();
      return false;
    }
  }

  // Where the upload reads each plane: the frame itself when it is pinned,
  // else the slot's pinned staging buffer, filled here.
  void stage_input(Slot &s, const InputFrame &in, const uint8_t *source[3], size_t pitch[3]) {
    bool pinned = true;
    for (int p = 0; p < info_->planes; ++p) pinned = pinned && is_pinned(in.plane[p]);
    s.in_staged = !pinned;
    if (pinned) {
      for (int p = 0; p < info_->planes; ++p) source[p] = in.plane[p], pitch[p] = in.stride[p];
      return;
    }
    if (!s.staging_in.get()) s.staging_in = make_pinned_memory(plane_bytes_ * info_->planes);
    auto *staging = static_cast<uint8_t *>(s.staging_in.get());
    for (int p = 0; p < info_->planes; ++p) {
      source[p] = staging + p * plane_bytes_;
      pitch[p] = in_pitch_;
    }
    // Split over threads: one core's memcpy is well below what DMA takes.
    for (int p = 0; p < info_->planes; ++p)
      copy_rows(in.plane[p], in.stride[p], staging + p * plane_bytes_, in_pitch_, row_bytes_, height_);
  }

  int device_ = -1;
  StreamOwner upload_stream_;
  StreamOwner work_streams_[kStreams];
  unsigned next_stream_ = 0;
  const LayoutInfo *info_ = nullptr;
  PixelLayout layout_ = PixelLayout::RGB;
  int width_ = 0, height_ = 0, strips_ = 1;
  size_t row_bytes_ = 0, in_pitch_ = 0, out_pitch_ = 0, plane_bytes_ = 0;
  std::vector<Slot> slots_;
  // Guards first_, count_ and stats_: finish_oldest runs beside submit.
  mutable std::mutex lock_;
  size_t first_ = 0, count_ = 0;
  StatsAccumulator stats_;
};

}  // namespace

cudaError_t convert_cuda(const InputFrame &device_in, const GrayFrame &device_out,
                         const Weights &w, cudaStream_t stream) {
  if (device_in.width <= 0 || device_in.height <= 0) return cudaErrorInvalidValue;
  dispatch_layout(device_in.layout, [&](auto layout) { launch(layout, device_in, device_out, w, stream); });
  return cudaGetLastError();
}

void *alloc_pinned(size_t bytes, std::string *error) {
  void *p = nullptr;
  try {
    CUDAGRAY_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
  } catch (const CudaError &e) {
    *error = e.what();
    return nullptr;
  }
}

void free_pinned(void *memory) { cudaFreeHost(memory); }

namespace {

// The armed fault: a function name and how many of its calls to let pass.
struct ArmedFault {
  std::mutex lock;
  std::atomic<bool> armed{false};
  std::string function;
  int calls_left = 0;

  void arm(const std::string &name, int nth) {
    std::lock_guard<std::mutex> hold(lock);
    function = name;
    calls_left = nth;
    armed = !name.empty() && nth > 0;
  }
};

ArmedFault &armed_fault() {
  static ArmedFault fault;
  return fault;
}

std::string function_of(const char *call) {
  const std::string text(call);
  return text.substr(0, text.find('('));
}

}  // namespace

void inject_cuda_fault(const std::string &spec) {
  const size_t colon = spec.find(':');
  armed_fault().arm(spec.substr(0, colon), colon == std::string::npos ? 1 : std::atoi(spec.c_str() + colon + 1));
}

bool cuda_fault_due(const char *call) {
  ArmedFault &fault = armed_fault();
  if (!fault.armed.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> hold(fault.lock);
  if (!fault.armed || function_of(call) != fault.function || --fault.calls_left > 0) return false;
  fault.armed = false;
  return true;
}

cudaError_t injected_cuda_error(const char *call) {
  const std::string function = function_of(call);
  return function == "cudaMalloc" || function == "cudaHostAlloc" ? cudaErrorMemoryAllocation
                                                                  : cudaErrorLaunchFailure;
}

bool is_pinned(const void *memory) {
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, memory) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

int cuda_device_count(std::string *reason) {
  int count = 0;
  try {
    CUDAGRAY_CHECK(cudaGetDeviceCount(&count));
  } catch (const CudaError &e) {
    *reason = e.what();
    return 0;
  }
  if (count == 0) *reason = "no CUDA device found";
  return count;
}

bool cuda_device_exists(int device_id, std::string *error) {
  const int count = cuda_device_count(error);
  if (count == 0) return false;
  if (device_id >= count) {
    *error = "CUDA device " + std::to_string(device_id) + " does not exist: " +
             std::to_string(count) + " device(s) found, numbered from 0";
    return false;
  }
  return true;
}

int open_cuda_device(int device_id, std::string *error) {
  if (!cuda_device_exists(device_id, error)) return -1;
  const int first = device_id < 0 ? 0 : device_id;
  const int last = device_id < 0 ? cuda_device_count(error) - 1 : device_id;
  for (int device = first; device <= last; ++device) {
    try {
      // creates the primary context now, so that a device that cannot be
      // used fails here rather than at the first frame
      CUDAGRAY_CHECK(cudaSetDevice(device));
      CUDAGRAY_CHECK(cudaFree(nullptr));
      return device;
    } catch (const CudaError &e) {
      *error = "CUDA device " + std::to_string(device) + ": " + e.what();
    }
  }
  return -1;
}

std::unique_ptr<Backend> make_cuda_backend(std::string *error) {
  try {
    return std::make_unique<CudaBackend>();
  } catch (const CudaError &e) {
    *error = e.what();
    return nullptr;
  }
}

}  // namespace cudagray
