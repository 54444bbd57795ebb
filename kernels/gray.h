// cudagray kernels: RGB-family frames to GRAY8, on the CPU or a CUDA GPU.
//
// This interface has no GStreamer types: the element in plugin/ and the tests
// both use it.
//
// The formula (exact, shared by every backend):
//   weights in Q16 fixed point
//     wR = round(kR * 65536), wB = round(kB * 65536)
//     wG = 65536 - wR - wB   for the standard matrices (so white stays 255)
//     wG = round(kG * 65536) for custom weights
//   Y = min(255, (wR*R + wG*G + wB*B + 32768) >> 16)
// round() is round-half-away-from-zero; arithmetic is unsigned 32-bit.
//
// YUV input (Luma layout): gray is the luma plane. Full range: copied.
// Limited range: Y = clamp(round((Y' - 16) * 255 / 219), 0, 255), which is
// (2 * 255 * (Y' - 16) + 219) / 438 in integers for 16 < Y' < 235; computed
// with a multiply and shift that gives the same for every Y' (layouts.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cudagray {

// Where R, G and B live. Packed layouts store a whole pixel in bytes_per_pixel
// bytes and name each channel's byte offset; planar layouts store one channel
// per plane and name each channel's plane index.
enum class PixelLayout {
  RGB, BGR,                                     // 3 bytes per pixel
  RGBA, BGRA, RGBx, BGRx, xRGB, xBGR, ARGB, ABGR,  // 4 bytes, 4th ignored
  RGBP, BGRP, GBR,                              // 3 planes
  Luma,  // YUV: gray is the luma plane (plane 0, 1 byte per pixel)
};

struct LayoutInfo {
  const char *name;
  int planes;            // 1 for packed, 3 for planar
  int bytes_per_pixel;   // within one plane
  int r, g, b;           // byte offset (packed) or plane index (planar)
};

const LayoutInfo &layout_info(PixelLayout layout);
// Every RGB-family layout (Luma aside).
constexpr PixelLayout kAllLayouts[] = {
    PixelLayout::RGB,  PixelLayout::BGR,  PixelLayout::RGBA, PixelLayout::BGRA,
    PixelLayout::RGBx, PixelLayout::BGRx, PixelLayout::xRGB, PixelLayout::xBGR,
    PixelLayout::ARGB, PixelLayout::ABGR, PixelLayout::RGBP, PixelLayout::BGRP,
    PixelLayout::GBR};

enum class Matrix { BT601, BT709, BT2020, Custom };

// Luma coefficients as given (kR, kG, kB), before quantisation.
struct Coefficients {
  double r, g, b;
};

// Q16 weights actually used by the kernels.
struct Weights {
  uint32_t r, g, b;
};

Coefficients standard_coefficients(Matrix matrix);  // not for Matrix::Custom
Weights standard_weights(Matrix matrix);            // not for Matrix::Custom
// Custom coefficients must be finite and within [0, kMaxCustomCoefficient];
// the bound keeps 255 * (wR + wG + wB) + 32768 inside 32 bits.
constexpr double kMaxCustomCoefficient = 64.0;
Weights custom_weights(const Coefficients &k);

// Parses "R,G,B" (three decimal numbers, spaces allowed around them).
// On failure returns false and says why in *error.
bool parse_coefficients(const char *text, Coefficients *out, std::string *error);
// The inverse: "R,G,B" with each number in its shortest exact form.
std::string format_coefficients(const Coefficients &k);

// One input frame: plane pointers and row strides in bytes. Packed layouts use
// plane[0] only. Pointers are host or device pointers, as the call requires.
struct InputFrame {
  PixelLayout layout;
  int width, height;
  const uint8_t *plane[3];
  size_t stride[3];
  // Luma only: the luma plane holds limited-range values (16..235), which
  // are expanded to full range; full-range luma is copied as it is.
  bool limited_range = false;
  // The planes are device memory of the backend's CUDA context: no upload.
  bool on_device = false;
  // On the device only: a CUDA stream (cudaStream_t) whose queued work writes
  // the planes. The backend orders its reads after that work on the GPU,
  // without blocking the calling thread; nullptr when the planes are ready.
  void *producer_stream = nullptr;
};

// One GRAY8 frame: rows of stride bytes.
struct GrayFrame {
  uint8_t *data;
  size_t stride;
  // data is device memory of the backend's CUDA context: the result is
  // written there and never comes back to the host (a backend whose
  // BackendNeeds::writes_device_memory says it can).
  bool on_device = false;
  // On the device only: a CUDA stream (cudaStream_t) of whoever uses the
  // frame next. The backend's writes wait for the work already queued on it,
  // and work queued on it after submit waits for the writes, both on the GPU,
  // so that its user need not wait for finish_oldest. nullptr: none.
  void *consumer_stream = nullptr;
};

// Converts one frame on the calling thread plus up to threads-1 helpers
// (threads <= 0: one per hardware thread). This is the reference the tests
// trust.
void convert_cpu(const InputFrame &in, const GrayFrame &out, const Weights &w,
                 int threads = 0);

// Running figures of a backend, for the element's stats property. On CUDA,
// measured with events: device time is the kernel(s), upload and download the
// host-device copies (first start to last end of each frame's strips). On the
// CPU, device time is the conversion time.
struct TimingStats {
  uint64_t frames = 0;
  double device_us_mean = 0, device_us_min = 0, device_us_max = 0;
  double upload_us_mean = 0, download_us_mean = 0;
  // Frames whose input or output was not pinned and went through staging.
  uint64_t staged_inputs = 0, staged_outputs = 0;
  // Frames read straight from GPU memory (no upload).
  uint64_t device_inputs = 0;
  // Frames written straight into GPU memory (no download); the download mean
  // is over the other frames.
  uint64_t device_outputs = 0;
};

// What a backend needs from the element around it; the element asks, and
// never looks at which backend it holds.
struct BackendNeeds {
  // Frames worth keeping in flight for a non-live upstream when the user
  // leaves it to the element, and the most the backend can use (1: it
  // converts each frame as it is submitted).
  int auto_in_flight = 1;
  int max_in_flight = 1;
  // Host frames are copied fastest from and into pinned memory (see
  // alloc_pinned): the element offers pinned buffers upstream and downstream.
  bool pinned_host_memory = false;
  // It reads frames in GPU memory where they are (InputFrame::on_device).
  bool reads_device_memory = false;
  // It writes results into GPU memory (GrayFrame::on_device), no download.
  bool writes_device_memory = false;
};

// A place to convert frames. The element picks one at start and never asks
// how it works. Frames are finished in the order they were submitted.
// Threads: submit, configure and discard_all come from one thread;
// finish_oldest may run on a second thread at the same time as submit
// (never two finish_oldest at once); configure and discard_all run with
// nothing else in the backend.
class Backend {
 public:
  virtual ~Backend() = default;
  // For messages only: "cpu" or "cuda".
  virtual const char *name() const = 0;
  virtual BackendNeeds needs() const = 0;
  // Called when the frame geometry changes, with nothing in flight; sizes
  // buffers for up to max_in_flight frames at once (at least 1).
  // inputs_on_device: frames are expected in GPU memory (InputFrame::on_device),
  // so no upload buffers are reserved; a host frame still works, its upload
  // buffer then being allocated when it first needs one. outputs_on_device:
  // the same for results written into GPU memory (GrayFrame::on_device) and
  // the download buffers.
  virtual bool configure(PixelLayout layout, int width, int height, int max_in_flight,
                         bool inputs_on_device, bool outputs_on_device, std::string *error) = 0;
  // Starts converting a frame (in host memory, or on the GPU when
  // in.on_device) into a GRAY8 frame (in host memory, or on the GPU when
  // out.on_device); both must stay valid until the frame is finished. At
  // most max_in_flight unfinished.
  virtual bool submit(const InputFrame &in, const GrayFrame &out, const Weights &w,
                      std::string *error) = 0;
  // Waits for the oldest unfinished frame; its output then holds the result.
  virtual bool finish_oldest(std::string *error) = 0;
  // Forgets every unfinished frame, after the device has let go of them.
  virtual void discard_all() = 0;
  virtual int in_flight() const = 0;
  // The CUDA device the backend converts on, or -1 for the CPU.
  virtual int device_id() const = 0;
  virtual TimingStats stats() const = 0;
};

// Host memory that CUDA can copy from or into by DMA (cudaHostAlloc). Without
// CUDA, or without a driver, allocation returns nullptr and says why.
void *alloc_pinned(size_t bytes, std::string *error);
void free_pinned(void *memory);
// Whether CUDA can DMA straight from or into this host memory (pinned by
// cudaHostAlloc or cudaHostRegister, in this process).
bool is_pinned(const void *memory);

std::unique_ptr<Backend> make_cpu_backend();

// Whether device_id names a CUDA device there is (any device when < 0), without
// making a CUDA context; otherwise says why not (naming the CUDA error), also
// when the plugin was built without CUDA.
bool cuda_device_exists(int device_id, std::string *error);
// Opens device_id (< 0: the first usable device) and makes its primary
// context current on the calling thread; again on a thread where it is
// already open, only makes it current. Returns the device, or -1 and why.
int open_cuda_device(int device_id, std::string *error);
// The CUDA backend, working in the CUDA context current on the calling
// thread (a device's primary context from open_cuda_device, or a context
// the caller pushed): every later call, from any thread, must be made with
// that context current. nullptr and why when it cannot be made.
std::unique_ptr<Backend> make_cuda_backend(std::string *error);

// Test-only fault injection: the nth next call of the named CUDA function
// (as the backend writes it: "cudaMalloc", "cudaHostAlloc", "cudaMemcpy2DAsync",
// "convert_cuda" for the kernel launch, "cudaEventSynchronize", ...) fails
// with cudaErrorMemoryAllocation (allocations) or cudaErrorLaunchFailure
// (anything else), once. spec is "name" or "name:nth"; an empty spec
// disarms. The element arms it at each start from the environment variable
// CUDAGRAY_INJECT_FAULT, and disarms it when that is unset. Without CUDA it
// does nothing.
void inject_cuda_fault(const std::string &spec);

// Number of usable CUDA devices; 0 with a reason when there are none.
int cuda_device_count(std::string *reason);

}  // namespace cudagray
