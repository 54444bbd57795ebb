// CUDA kernels and the CUDA backend.
#include <algorithm>
#include <cstring>

#include "cuda_check.h"
#include "gray_cuda.h"
#include "layouts.h"

namespace cudagray {

namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kMaxGridY = 65535;
constexpr size_t kPitchAlignment = 256;

// One thread per pixel; rows are spread over grid y (striding past 65535).
template <int Bpp, int R, int G, int B>
__global__ void packed_kernel(const uint8_t *__restrict__ in, size_t in_pitch,
                              uint8_t *__restrict__ out, size_t out_pitch, int width,
                              int height, Weights w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (int y = blockIdx.y; y < height; y += gridDim.y) {
    const uint8_t *px = in + y * in_pitch + x * Bpp;
    out[y * out_pitch + x] = luma(px[R], px[G], px[B], w);
  }
}

__global__ void planar_kernel(const uint8_t *__restrict__ r, size_t r_pitch,
                              const uint8_t *__restrict__ g, size_t g_pitch,
                              const uint8_t *__restrict__ b, size_t b_pitch,
                              uint8_t *__restrict__ out, size_t out_pitch, int width,
                              int height, Weights w) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (int y = blockIdx.y; y < height; y += gridDim.y)
    out[y * out_pitch + x] = luma(r[y * r_pitch + x], g[y * g_pitch + x], b[y * b_pitch + x], w);
}

dim3 grid_for(int width, int height) {
  return dim3((width + kThreadsPerBlock - 1) / kThreadsPerBlock, std::min(height, kMaxGridY));
}

template <int Bpp, int R, int G, int B>
void launch(PackedLayout<Bpp, R, G, B>, const InputFrame &in, const GrayFrame &out,
            const Weights &w, cudaStream_t stream) {
  packed_kernel<Bpp, R, G, B><<<grid_for(in.width, in.height), kThreadsPerBlock, 0, stream>>>(
      in.plane[0], in.stride[0], out.data, out.stride, in.width, in.height, w);
}

template <int R, int G, int B>
void launch(PlanarLayout<R, G, B>, const InputFrame &in, const GrayFrame &out,
            const Weights &w, cudaStream_t stream) {
  planar_kernel<<<grid_for(in.width, in.height), kThreadsPerBlock, 0, stream>>>(
      in.plane[R], in.stride[R], in.plane[G], in.stride[G], in.plane[B], in.stride[B],
      out.data, out.stride, in.width, in.height, w);
}

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Per-frame round trip through pinned staging: host rows → pinned → device,
// kernel, device → pinned → host rows, one synchronisation per frame.
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    CUDAGRAY_CHECK(cudaSetDevice(device_));
    stream_ = make_stream();
  }

  const char *name() const override { return "cuda"; }

  bool configure(PixelLayout layout, int width, int height, std::string *error) override {
    try {
      CUDAGRAY_CHECK(cudaSetDevice(device_));
      const LayoutInfo &info = layout_info(layout);
      layout_ = layout;
      width_ = width;
      height_ = height;
      in_pitch_ = align_up(static_cast<size_t>(width) * info.bytes_per_pixel, kPitchAlignment);
      out_pitch_ = align_up(static_cast<size_t>(width), kPitchAlignment);
      in_bytes_ = in_pitch_ * height * info.planes;
      out_bytes_ = out_pitch_ * height;
      device_in_ = DeviceMemory();  // free before allocating, to fit large frames
      device_out_ = DeviceMemory();
      pinned_in_ = PinnedMemory();
      pinned_out_ = PinnedMemory();
      device_in_ = make_device_memory(in_bytes_);
      device_out_ = make_device_memory(out_bytes_);
      pinned_in_ = make_pinned_memory(in_bytes_);
      pinned_out_ = make_pinned_memory(out_bytes_);
      return true;
    } catch (const CudaError &e) {
      width_ = height_ = 0;
      *error = e.what();
      return false;
    }
  }

  bool convert(const InputFrame &in, const GrayFrame &out, const Weights &w,
               std::string *error) override {
    if (in.layout != layout_ || in.width != width_ || in.height != height_) {
      *error = "frame does not match the configured format and size";
      return false;
    }
    try {
      CUDAGRAY_CHECK(cudaSetDevice(device_));
      const LayoutInfo &info = layout_info(layout_);
      const size_t row_bytes = static_cast<size_t>(width_) * info.bytes_per_pixel;
      auto *staged = static_cast<uint8_t *>(pinned_in_.get());
      auto *device = static_cast<uint8_t *>(device_in_.get());
      InputFrame device_frame{layout_, width_, height_, {}, {}};
      for (int p = 0; p < info.planes; ++p) {
        uint8_t *plane = staged + p * in_pitch_ * height_;
        for (int y = 0; y < height_; ++y)
          std::memcpy(plane + y * in_pitch_, in.plane[p] + y * in.stride[p], row_bytes);
        device_frame.plane[p] = device + p * in_pitch_ * height_;
        device_frame.stride[p] = in_pitch_;
      }
      CUDAGRAY_CHECK(cudaMemcpyAsync(device, staged, in_bytes_, cudaMemcpyHostToDevice, stream_.get()));
      const GrayFrame device_out{static_cast<uint8_t *>(device_out_.get()), out_pitch_};
      CUDAGRAY_CHECK(convert_cuda(device_frame, device_out, w, stream_.get()));
      CUDAGRAY_CHECK(cudaMemcpyAsync(pinned_out_.get(), device_out.data, out_bytes_,
                                     cudaMemcpyDeviceToHost, stream_.get()));
      CUDAGRAY_CHECK(cudaStreamSynchronize(stream_.get()));
      const auto *result = static_cast<const uint8_t *>(pinned_out_.get());
      for (int y = 0; y < height_; ++y)
        std::memcpy(out.data + y * out.stride, result + y * out_pitch_, width_);
      return true;
    } catch (const CudaError &e) {
      *error = e.what();
      return false;
    }
  }

 private:
  int device_;
  StreamOwner stream_;
  PixelLayout layout_ = PixelLayout::RGB;
  int width_ = 0, height_ = 0;
  size_t in_pitch_ = 0, out_pitch_ = 0, in_bytes_ = 0, out_bytes_ = 0;
  DeviceMemory device_in_, device_out_;
  PinnedMemory pinned_in_, pinned_out_;
};

// Makes device current and creates its primary context, so that a device
// that cannot be used fails here rather than at the first frame.
void open_device(int device) {
  CUDAGRAY_CHECK(cudaSetDevice(device));
  CUDAGRAY_CHECK(cudaFree(nullptr));
}

}  // namespace

cudaError_t convert_cuda(const InputFrame &device_in, const GrayFrame &device_out,
                         const Weights &w, cudaStream_t stream) {
  if (device_in.width <= 0 || device_in.height <= 0) return cudaErrorInvalidValue;
  dispatch_layout(device_in.layout, [&](auto layout) { launch(layout, device_in, device_out, w, stream); });
  return cudaGetLastError();
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

std::unique_ptr<Backend> make_cuda_backend(int device_id, std::string *error) {
  const int count = cuda_device_count(error);
  if (count == 0) return nullptr;
  if (device_id >= count) {
    *error = "CUDA device " + std::to_string(device_id) + " does not exist: " +
             std::to_string(count) + " device(s) found, numbered from 0";
    return nullptr;
  }
  const int first = device_id < 0 ? 0 : device_id;
  const int last = device_id < 0 ? count - 1 : device_id;
  for (int device = first; device <= last; ++device) {
    try {
      open_device(device);
      return std::make_unique<CudaBackend>(device);
    } catch (const CudaError &e) {
      *error = "CUDA device " + std::to_string(device) + ": " + e.what();
    }
  }
  return nullptr;
}

}  // namespace cudagray
