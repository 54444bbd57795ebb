// SPDX-License-Identifier: LGPL-2.1-or-later
// NPP as a peer of the cudagray kernel: nppiRGBToGray for the same-size
// rows, and for the scaled rows the passes a CUDA programmer would chain
// with NPP: colour to gray then nppiResize, nppiResize then colour to gray,
// or nppiResize of a luma plane alone; for the batch rows nppiResizeBatch
// then a normalising pass. The build machine need not have NPP: the
// libraries are opened at run time and the calls are declared here, as
// nppdefs.h, nppi_color_conversion.h, nppi_geometry_transforms.h and
// nppi_data_exchange_and_initialization.h (CUDA 12/13) declare them.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cuda_rows.h"
#include "cudagray/convert_cuda.h"

namespace bench {

namespace {

using NppStatus = int;  // an enum in nppdefs.h: 0 success, < 0 error, > 0 warning
struct NppiSize {
  int width, height;
};
struct NppiRect {
  int x, y, width, height;
};
struct NppStreamContext {
  cudaStream_t hStream;
  int nCudaDeviceId, nMultiProcessorCount, nMaxThreadsPerMultiProcessor, nMaxThreadsPerBlock;
  size_t nSharedMemPerBlock;
  int nCudaDevAttrComputeCapabilityMajor, nCudaDevAttrComputeCapabilityMinor;
  unsigned int nStreamFlags;
  int nReserved0;
};
static_assert(sizeof(NppStreamContext) == 48, "NppStreamContext as in nppdefs.h of CUDA 12/13");
using ToGray = NppStatus (*)(const uint8_t *, int, uint8_t *, int, NppiSize, NppStreamContext);
using Resize = NppStatus (*)(const uint8_t *, int, NppiSize, NppiRect, uint8_t *, int, NppiSize,
                             NppiRect, int, NppStreamContext);

// NPP's interpolation (NppiInterpolationMode in nppdefs.h) for each cudagray
// method: SUPER is NPP's area method.
struct Interpolation {
  int mode;
  const char *name;
};
Interpolation interpolation_of(cudagray::ScaleMethod method) {
  switch (method) {
    case cudagray::ScaleMethod::Nearest: return {1, "NN"};
    case cudagray::ScaleMethod::Bilinear: return {2, "LINEAR"};
    case cudagray::ScaleMethod::Area: return {8, "SUPER"};
  }
  throw std::logic_error("unknown scale method");
}

// What NPP sees in a cudagray layout's bytes: packed 8-bit RGB of 3 or 4
// bytes a pixel (R, G, B first: the 4-byte layouts' order does not change
// the cost), or one 8-bit luma plane; None where NPP has no such call.
enum class Input { None, C3, AC4, Luma };

struct InputInfo {
  const char *key;      // in the rows' keys
  PixelLayout layout;   // the cudagray layout NPP's bytes are read as
  int channels;         // bytes a pixel
  const char *to_gray;  // libnppicc's call (no _Ctx), none for luma
  const char *resize;   // libnppig's call on the input itself
};
const InputInfo &info_of(Input input) {
  static const InputInfo c3{"C3", PixelLayout::RGB, 3, "nppiRGBToGray_8u_C3C1R",
                            "nppiResize_8u_C3R"},
      ac4{"AC4", PixelLayout::RGBx, 4, "nppiRGBToGray_8u_AC4C1R", "nppiResize_8u_C4R"},
      luma{"luma", PixelLayout::Luma, 1, nullptr, "nppiResize_8u_C1R"};
  switch (input) {
    case Input::C3: return c3;
    case Input::AC4: return ac4;
    case Input::Luma: return luma;
    case Input::None: break;
  }
  throw std::logic_error("no NPP input");
}
constexpr const char *kResizeGray = "nppiResize_8u_C1R";

Input input_of(PixelLayout layout) {
  if (layout == PixelLayout::Luma) return Input::Luma;
  const cudagray::LayoutInfo &info = cudagray::layout_info(layout);
  if (info.family != cudagray::LayoutFamily::Rgb || info.depth != 8 || info.planes != 1)
    return Input::None;
  return info.row_bytes(1) == 3 ? Input::C3 : Input::AC4;
}

// The two ways to chain NPP's calls for colour input; luma is resized alone.
enum class Order { GrayFirst, ResizeFirst, LumaOnly };
const char *order_key(Order order) {
  return order == Order::GrayFirst     ? ":gray-first"
         : order == Order::ResizeFirst ? ":resize-first"
                                       : "";
}

// The NPP libraries the rows call into.
enum class Library { Colour, Geometry, DataExchange };
constexpr int kLibraries = 3;
constexpr const char *kLibraryNames[kLibraries] = {"libnppicc", "libnppig", "libnppidei"};

// libnppicc (colour conversion), libnppig (geometry) and libnppidei (data
// exchange: whole images scaled and converted) opened at run time.
struct Npp {
  std::string error;  // why libnppicc is not available; empty when it is
  std::string library;
  void *handles[kLibraries] = {};
  std::string errors[kLibraries];  // why libnppig or libnppidei is not (some rows need them)

  // The _Ctx call of that name, or nullptr.
  template <class Call>
  Call call(const char *name, Library from) const {
    void *handle = handles[static_cast<int>(from)];
    return handle ? reinterpret_cast<Call>(dlsym(handle, (std::string(name) + "_Ctx").c_str()))
                  : nullptr;
  }
  // Why a row that needs these calls cannot run; "" when it can.
  std::string missing(const std::vector<std::pair<const char *, Library>> &calls) const {
    if (!error.empty()) return "NPP: not available (" + error + ")";
    for (const auto &[name, from] : calls) {
      const int l = static_cast<int>(from);
      if (!handles[l])
        return std::string("NPP: ") + kLibraryNames[l] + " not available (" + errors[l] + ")";
      if (!call<void *>(name, from))
        return std::string("NPP: ") + (from == Library::Colour ? library : kLibraryNames[l]) +
               " has no " + name + "_Ctx";
    }
    return "";
  }
};

// name in path's directory with path's version suffix: libnppig.so.13 for
// /usr/local/cuda/lib64/libnppicc.so.13.
std::string sibling(const std::string &path, const char *name) {
  const size_t slash = path.rfind('/'), so = path.find(".so");
  return path.substr(0, slash + 1) + name + (so == std::string::npos ? "" : path.substr(so + 3));
}

// libnppicc from the loader's own path or the usual toolkit directories;
// libnppc, cudart, libnppig and libnppidei from the same directory, so that
// a toolkit outside the loader's path works too. Everything RTLD_LOCAL: a shared
// cudart must not take over the cuda* symbols that the plugin (with its
// static cudart) still resolves lazily.
Npp load_npp(const Options &options) {
  Npp npp;
  std::vector<std::string> candidates = {options.npp_lib};
  if (options.npp_lib.empty()) {
    candidates.clear();
    std::vector<std::string> dirs = {"", "/usr/local/cuda/lib64/"};
    for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char *root = std::getenv(var)) dirs.push_back(std::string(root) + "/lib64/");
    for (const std::string &dir : dirs)
      for (const char *suffix : {".13", ".12", ""})
        candidates.push_back(dir + "libnppicc.so" + suffix);
  }
  for (const std::string &path : candidates) {
    if (path.find('/') != std::string::npos)
      for (const char *needed : {"libcudart.so", "libnppc.so"})
        dlopen(sibling(path, needed).c_str(), RTLD_NOW | RTLD_LOCAL);
    if ((npp.handles[static_cast<int>(Library::Colour)] =
             dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      npp.library = path;
      break;
    }
    const char *why = dlerror();
    if (npp.error.empty()) npp.error = why ? why : path + ": cannot open";
  }
  if (!npp.handles[static_cast<int>(Library::Colour)]) {
    if (candidates.size() > 1)
      npp.error += " (and " + std::to_string(candidates.size() - 1) + " other names)";
    return npp;
  }
  npp.error.clear();
  for (int l = static_cast<int>(Library::Colour) + 1; l < kLibraries; ++l) {
    const std::string path = sibling(npp.library, (std::string(kLibraryNames[l]) + ".so").c_str());
    if (!(npp.handles[l] = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      const char *why = dlerror();
      npp.errors[l] = why ? why : path + ": cannot open";
    }
  }
  return npp;
}

// What NPP asks of the stream and its device, as nppGetStreamContext fills it.
NppStreamContext stream_context(cudaStream_t stream) {
  NppStreamContext c{};
  c.hStream = stream;
  CHECK_CUDA(cudaGetDevice(&c.nCudaDeviceId));
  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDeviceProperties(&p, c.nCudaDeviceId));
  c.nMultiProcessorCount = p.multiProcessorCount;
  c.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
  c.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
  c.nSharedMemPerBlock = p.sharedMemPerBlock;
  c.nCudaDevAttrComputeCapabilityMajor = p.major;
  c.nCudaDevAttrComputeCapabilityMinor = p.minor;
  CHECK_CUDA(cudaStreamGetFlags(stream, &c.nStreamFlags));
  return c;
}

// Throws unless an NPP call succeeded.
void check_npp(NppStatus status, const char *name) {
  if (status < 0)
    throw std::runtime_error(std::string(name) + "_Ctx returned NppStatus " +
                             std::to_string(status));
}

// How far two device frames of bytes each are apart: "max |diff| M on P% of
// pixels" (max_diff gets M).
std::string difference(const uint8_t *a, const uint8_t *b, size_t bytes, int *max_diff) {
  std::vector<uint8_t> x(bytes), y(bytes);
  CHECK_CUDA(cudaMemcpy(x.data(), a, bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(y.data(), b, bytes, cudaMemcpyDeviceToHost));
  int worst = 0;
  size_t differ = 0;
  for (size_t i = 0; i < bytes; ++i) {
    const int d = std::abs(int(x[i]) - int(y[i]));
    worst = std::max(worst, d);
    differ += d != 0;
  }
  *max_diff = worst;
  return "max |diff| " + std::to_string(worst) + " on " + format_double(100.0 * differ / bytes, 2) +
         "% of pixels";
}

// One same-size conversion (the npp:C3 and npp:AC4 rows).
void convert_npp(ToGray call, const char *name, int channels, const NppStreamContext &context,
                 const uint8_t *in, uint8_t *out, const FrameSize &size) {
  check_npp(call(in, size.width * channels, out, size.width, {size.width, size.height}, context),
            name);
}

void same_size_rows(const Npp &npp, const FrameSize &size, const Options &options,
                    std::vector<Row> *rows) {
  const size_t n = size.pixels();
  for (const Input input : {Input::C3, Input::AC4}) {
    const InputInfo &info = info_of(input);
    const int channels = info.channels;
    Row row(size, "npp", std::string("npp:") + info.key, std::string("NPP ") + info.to_gray,
            layout_name(info.layout), double(channels + 1) * n);
    row.ceiling = copy_key(size_t(channels + 1) * n);  // same traffic
    row.skipped = npp.missing({{info.to_gray, Library::Colour}});
    const ToGray call = npp.call<ToGray>(info.to_gray, Library::Colour);
    record(rows, row, [&](Row &r) {
      const size_t count = rotation_count(size_t(channels + 1) * n, device_rotation_bytes(options));
      const DeviceRing in(count, channels * n, 6000), out(count, n), check_out(2, n);
      const cudagray::StreamOwner stream = cudagray::make_stream();
      const NppStreamContext context = stream_context(stream.get());
      // NPP's and cudagray's output for the same frame. NPP rounds its float
      // formula its own way, so 1 apart is expected; more would mean the
      // call is set up wrong.
      convert_npp(call, info.to_gray, channels, context, in.at(0), check_out.at(0), size);
      const cudagray::GrayFrame gray{check_out.at(1), static_cast<size_t>(size.width)};
      CHECK_CUDA(cudagray::convert_cuda(
          cudagray::same_size_conversion(info.layout, size.width, size.height),
          frame_at(info.layout, size, in.at(0)), gray,
          cudagray::standard_weights(cudagray::Matrix::BT601), context.hStream));
      CHECK_CUDA(cudaStreamSynchronize(context.hStream));
      int worst = 0;
      const std::string check = difference(check_out.at(0), check_out.at(1), n, &worst);
      time_operations(
          stream.get(), static_cast<long>(count),
          [&](long i, cudaStream_t) {
            convert_npp(call, info.to_gray, channels, context, in.at(i), out.at(i), size);
          },
          options, r);
      r.note = join(
          {std::string(worst > 1 ? "CHECK: " : "") + "vs cudagray " + check, r.note, npp.library});
    });
  }
}

// A frame whose gray changes slowly (ramps across, down and diagonally):
// NPP's resampling and cudagray's, which place and round their taps each
// their own way, then stay a few levels apart, and a call set up wrong (a
// wrong size, step or rectangle) shows as a large difference.
std::vector<uint8_t> smooth_frame(const FrameSize &size, int channels) {
  std::vector<uint8_t> frame(size.pixels() * channels);
  const int w = std::max(size.width - 1, 1), h = std::max(size.height - 1, 1);
  for (int y = 0; y < size.height; ++y)
    for (int x = 0; x < size.width; ++x) {
      uint8_t *p = &frame[(size_t(y) * size.width + x) * channels];
      const uint8_t across = uint8_t(255 * x / w), down = uint8_t(255 * y / h),
                    diagonal = uint8_t(255 * (x + y) / (w + h));
      if (channels == 1) {
        p[0] = diagonal;
        continue;
      }
      p[0] = across, p[1] = down, p[2] = diagonal;
      if (channels == 4) p[3] = 255;
    }
  return frame;
}

// One scaled job with NPP: the calls, in the order chosen, from a frame of
// the input at size to the output's destination rectangle; the rows above
// and below it (the letterbox) set to black as cudagray's are.
class ScaledJob {
 public:
  ScaledJob(const Npp &npp, Input input, Order order, const ScaledOutput &output,
            const FrameSize &size)
      : info_(info_of(input)), order_(order), size_(size), c_(output.conversion) {
    if (c_.dest.x != 0 || c_.dest.width != c_.out_width)
      throw std::logic_error("NPP rows: only bars above and below the picture");
    if (order_ != Order::LumaOnly) to_gray_ = npp.call<ToGray>(info_.to_gray, Library::Colour);
    resize_ = npp.call<Resize>(order_ == Order::ResizeFirst ? info_.resize : kResizeGray,
                               Library::Geometry);
  }

  // What the row calls it, and the calls it needs ({name, library}).
  std::string what(const std::string &box) const {
    const std::string resize =
        std::string(order_ == Order::ResizeFirst ? info_.resize : kResizeGray) + " " +
        interpolation_of(c_.method).name + " to " + box;
    const std::string bars = c_.dest.height < c_.out_height ? " (bars: cudaMemsetAsync)" : "";
    if (order_ == Order::LumaOnly) return "NPP " + resize + " of the luma plane" + bars;
    if (order_ == Order::GrayFirst)
      return std::string("NPP ") + info_.to_gray + ", then " + resize + bars;
    return "NPP " + resize + ", then " + info_.to_gray + bars;
  }
  std::vector<std::pair<const char *, Library>> calls() const {
    std::vector<std::pair<const char *, Library>> needed = {
        {order_ == Order::ResizeFirst ? info_.resize : kResizeGray, Library::Geometry}};
    if (order_ != Order::LumaOnly) needed.push_back({info_.to_gray, Library::Colour});
    return needed;
  }
  // Enqueues the job on the context's stream; throws on an NPP error.
  void run(const NppStreamContext &context, const uint8_t *in, uint8_t *scratch,
           uint8_t *out) const {
    const int w = size_.width, h = size_.height, step = w * info_.channels;
    const NppiSize whole{w, h}, picture{c_.dest.width, c_.dest.height};
    const NppiRect from{0, 0, w, h}, to{0, 0, c_.dest.width, c_.dest.height};
    uint8_t *dest = out + size_t(c_.dest.y) * c_.out_width;
    const int interpolation = interpolation_of(c_.method).mode;
    switch (order_) {
      case Order::GrayFirst:
        check_npp(to_gray_(in, step, scratch, w, whole, context), info_.to_gray);
        check_npp(resize_(scratch, w, whole, from, dest, c_.out_width, picture, to, interpolation,
                          context),
                  kResizeGray);
        break;
      case Order::ResizeFirst: {
        const int scratch_step = c_.dest.width * info_.channels;
        check_npp(resize_(in, step, whole, from, scratch, scratch_step, picture, to, interpolation,
                          context),
                  info_.resize);
        check_npp(to_gray_(scratch, scratch_step, dest, c_.out_width, picture, context),
                  info_.to_gray);
        break;
      }
      case Order::LumaOnly:
        check_npp(
            resize_(in, w, whole, from, dest, c_.out_width, picture, to, interpolation, context),
            kResizeGray);
        break;
    }
    const size_t above = size_t(c_.dest.y) * c_.out_width,
                 below_from = size_t(c_.dest.y + c_.dest.height) * c_.out_width,
                 end = size_t(c_.out_height) * c_.out_width;
    if (above) CHECK_CUDA(cudaMemsetAsync(out, 0, above, context.hStream));
    if (end > below_from)
      CHECK_CUDA(cudaMemsetAsync(out + below_from, 0, end - below_from, context.hStream));
  }

  // NPP's and cudagray's output of the smooth frame at in (both into
  // out_a and out_b, out frames): how far apart; *worst gets the largest
  // difference.
  std::string compare_with_cudagray(const NppStreamContext &context, const uint8_t *in,
                                    uint8_t *scratch, uint8_t *out_a, uint8_t *out_b,
                                    int *worst) const {
    run(context, in, scratch, out_a);
    const cudagray::GrayFrame gray{out_b, static_cast<size_t>(c_.out_width)};
    CHECK_CUDA(cudagray::convert_cuda(c_, frame_at(info_.layout, size_, in), gray,
                                      cudagray::standard_weights(cudagray::Matrix::BT601),
                                      context.hStream));
    CHECK_CUDA(cudaStreamSynchronize(context.hStream));
    return difference(out_a, out_b, size_t(c_.out_width) * c_.out_height, worst);
  }

  // NPP's SUPER refuses to enlarge in either direction.
  bool possible() const {
    return c_.method != cudagray::ScaleMethod::Area ||
           (c_.dest.width < size_.width && c_.dest.height < size_.height);
  }

 private:
  const InputInfo &info_;
  Order order_;
  FrameSize size_;
  cudagray::Conversion c_;
  ToGray to_gray_ = nullptr;
  Resize resize_ = nullptr;
};

// Differences from cudagray above this on the smooth frame mean a call set up
// wrong, not two resamplers placing their taps differently.
constexpr int kMostPlausibleDifference = 8;

void scaled_rows(const Npp &npp, const FrameSize &size, const Options &options,
                 std::vector<Row> *rows) {
  if (!npp.error.empty()) {
    record(rows, Row(size, "npp", "npp:scaled", "NPP nppiResize with nppiRGBToGray")
                     .skip("NPP: not available (" + npp.error + ")"));
    return;
  }
  const size_t n = size.pixels();
  for (const Input input : {Input::C3, Input::AC4, Input::Luma}) {
    const InputInfo &info = info_of(input);
    const std::vector<ScaledOutput> outputs = scaled_outputs(info.layout, size);
    if (outputs.empty()) continue;
    const std::vector<Order> orders =
        input == Input::Luma ? std::vector<Order>{Order::LumaOnly}
                             : std::vector<Order>{Order::GrayFirst, Order::ResizeFirst};
    const size_t in_bytes = n * info.channels;
    size_t out_bytes = 0;
    for (const ScaledOutput &o : outputs)
      out_bytes = std::max(out_bytes, size_t(o.conversion.out_width) * o.conversion.out_height);
    try {
      const size_t count = rotation_count(in_bytes + out_bytes, device_rotation_bytes(options));
      // frames set up once per input for all its rows: random ones to time,
      // the smooth one to compare with cudagray, and one scratch frame
      // reused by every call, as a program chaining the calls would
      const DeviceRing in(count, in_bytes, 7000), out(count, out_bytes), check_out(2, out_bytes),
          scratch(1, std::max(n, out_bytes * info.channels));
      const std::vector<uint8_t> smooth_host = smooth_frame(size, info.channels);
      const DeviceRing smooth(1, in_bytes);
      CHECK_CUDA(cudaMemcpy(smooth.at(0), smooth_host.data(), in_bytes, cudaMemcpyHostToDevice));
      const cudagray::StreamOwner stream = cudagray::make_stream();
      const NppStreamContext context = stream_context(stream.get());
      for (const ScaledOutput &output : outputs)
        for (const Order order : orders) {
          const ScaledJob job(npp, input, order, output, size);
          const size_t out_pixels =
              size_t(output.conversion.out_width) * output.conversion.out_height;
          Row row(size, "npp",
                  std::string("npp:") + info.key + ":" + output.name() + order_key(order),
                  job.what(output.box), layout_name(info.layout), double(in_bytes + out_pixels));
          row.ceiling = copy_key(in_bytes + out_pixels);  // as the cudagray kernel row's
          row.skipped = npp.missing(job.calls());
          record(rows, row, [&](Row &r) {
            if (!job.possible()) throw Unavailable("NPP's SUPER only shrinks, in both directions");
            int worst = 0;
            const std::string check = job.compare_with_cudagray(
                context, smooth.at(0), scratch.at(0), check_out.at(0), check_out.at(1), &worst);
            time_operations(
                stream.get(), static_cast<long>(count),
                [&](long i, cudaStream_t) { job.run(context, in.at(i), scratch.at(0), out.at(i)); },
                options, r);
            r.note = join({std::string(worst > kMostPlausibleDifference ? "CHECK: " : "") +
                               "vs cudagray on a smooth frame " + check,
                           r.note, npp.library});
          });
        }
    } catch (const std::exception &e) {  // allocation or setup
      record(rows, Row(size, "npp", std::string("npp:") + info.key + ":scaled",
                       std::string("NPP scaled from ") + layout_name(info.layout))
                       .skip(std::string("failed: ") + e.what()));
    }
  }
}

// ---- batches ------------------------------------------------------------------

// nppi_geometry_transforms.h's batch descriptions; the lists live in device
// memory.
struct NppiResizeBatchCXR {
  const void *pSrc;
  int nSrcStep;
  void *pDst;
  int nDstStep;
};
struct NppiImageDescriptor {
  void *pData;
  int nStep;
  NppiSize oSize;
};
struct NppiResizeBatchROI_Advanced {
  NppiRect oSrcRectROI, oDstRectROI;
};
using ResizeBatch = NppStatus (*)(NppiSize, NppiRect, NppiSize, NppiRect, int, NppiResizeBatchCXR *,
                                  unsigned, NppStreamContext);
using ResizeBatchAdvanced = NppStatus (*)(int, int, NppiImageDescriptor *, NppiImageDescriptor *,
                                          NppiResizeBatchROI_Advanced *, unsigned, int,
                                          NppStreamContext);
using Scale8u32f = NppStatus (*)(const uint8_t *, int, float *, int, NppiSize, float, float,
                                 NppStreamContext);
using Convert32f16f = NppStatus (*)(const float *, int, uint16_t *, int, NppiSize, int,
                                    NppStreamContext);
constexpr int kRoundNearestTiesToEven = 0;  // NPP_RND_NEAR in nppdefs.h
constexpr const char *kResizeBatch = "nppiResizeBatch_8u_C1R",
                     *kResizeBatchAdvanced = "nppiResizeBatch_8u_C1R_Advanced",
                     *kScale = "nppiScale_8u32f_C1R", *kToHalf = "nppiConvert_32f16f_C1R";

// The two batched resizes: one source and destination ROI for every image,
// or ROIs per image (what sources of different sizes would need).
enum class BatchResize { Uniform, Advanced };
const char *batch_resize_key(BatchResize resize) {
  return resize == BatchResize::Uniform ? "uniform" : "advanced";
}
std::string npp_batch_key(const BatchJob &job, BatchResize resize) {
  return "npp:" + job.key() + ":" + batch_resize_key(resize);
}

// The calls a batch with that resize needs, and what its row calls it.
std::vector<std::pair<const char *, Library>> batch_calls(BatchResize resize) {
  return {{resize == BatchResize::Uniform ? kResizeBatch : kResizeBatchAdvanced, Library::Geometry},
          {kScale, Library::DataExchange},
          {kToHalf, Library::DataExchange}};
}
std::string batch_what(const BatchJob &job, BatchResize resize) {
  return std::string("NPP ") +
         (resize == BatchResize::Uniform ? kResizeBatch : kResizeBatchAdvanced) + " " +
         interpolation_of(job.slot.method).name + ", " + kScale + ", " + kToHalf + ", " +
         std::to_string(job.sources) + " x 1080p NV12 (" + job.method + ")";
}

// binary16 to float, for comparing batches on the host.
float half_to_float(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  const float magnitude = exponent == 0    ? std::ldexp(float(mantissa), -24)
                          : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                           : std::ldexp(float(mantissa + 1024), exponent - 25);
  return h & 0x8000 ? -magnitude : magnitude;
}

// NPP's batch for a job, the way a CUDA programmer would chain NPP: the
// batched resize of every source's luma into its slot of an N x 640x640
// uint8 buffer, whose letterbox bars hold black (16, limited range) from the
// start as nothing writes there; then over the whole buffer nppiScale_8u32f,
// mapping a code q to ((q - 16) / 219 - mean) / std, the limited-range
// expansion and the normalisation in one affine map (codes outside 16..235
// are not clamped as cudagray clamps them), into float32, and
// nppiConvert_32f16f (to nearest even) into the batch. One uint8 and one
// float32 scratch buffer serve every batch, as in a program.
class NppBatch {
 public:
  // Batch i's slot s reads luma(i % rotation, s); the descriptor lists of
  // the `rotation` batches are uploaded now.
  NppBatch(const Npp &npp, const BatchJob &job, BatchResize resize,
           const std::function<cudagray::InputFrame(long, int)> &luma, long rotation)
      : job_(job),
        resize_(resize),
        slot_pixels_(size_t(job.format.width) * job.format.height),
        gray_(cudagray::make_device_memory(slot_pixels_ * job.sources)),
        scaled_(cudagray::make_device_memory(slot_pixels_ * job.sources * sizeof(float))),
        rotation_(rotation) {
    CHECK_CUDA(cudaMemset(gray_.get(), 16, slot_pixels_ * job.sources));
    if (resize_ == BatchResize::Uniform)
      uniform_ = npp.call<ResizeBatch>(kResizeBatch, Library::Geometry);
    else
      advanced_ = npp.call<ResizeBatchAdvanced>(kResizeBatchAdvanced, Library::Geometry);
    scale_ = npp.call<Scale8u32f>(kScale, Library::DataExchange);
    to_half_ = npp.call<Convert32f16f>(kToHalf, Library::DataExchange);
    upload_lists(luma);
    // the bars and lists, set on the legacy stream, before any batch on ours
    CHECK_CUDA(cudaDeviceSynchronize());
  }

  // Enqueues batch i into out (the job's float16 batch) on the context's
  // stream; throws on an NPP error.
  void run(const NppStreamContext &context, long i, void *out) const {
    const size_t first = static_cast<size_t>(i % rotation_) * job_.sources;
    const unsigned n = static_cast<unsigned>(job_.sources);
    const cudagray::Rect &dest = job_.slot.dest;
    const NppiRect from{0, 0, job_.slot.in_width, job_.slot.in_height},
        to{dest.x, dest.y, dest.width, dest.height};
    const int interpolation = interpolation_of(job_.slot.method).mode;
    if (resize_ == BatchResize::Uniform)
      check_npp(
          uniform_({from.width, from.height}, from, {job_.format.width, job_.format.height}, to,
                   interpolation, list<NppiResizeBatchCXR>(uniform_list_) + first, n, context),
          kResizeBatch);
    else
      check_npp(advanced_(dest.width, dest.height, list<NppiImageDescriptor>(sources_list_) + first,
                          list<NppiImageDescriptor>(slots_list_) + first,
                          list<NppiResizeBatchROI_Advanced>(rois_list_) + first, n, interpolation,
                          context),
                kResizeBatchAdvanced);
    // the whole batch as one image of N * 640 rows
    const NppiSize all{job_.format.width, job_.format.height * job_.sources};
    const float mean = job_.format.mean, std = job_.format.std;
    const int float_step = all.width * int(sizeof(float));
    check_npp(scale_(static_cast<const uint8_t *>(gray_.get()), all.width,
                     static_cast<float *>(scaled_.get()), float_step, all,
                     (-16.0f / 219 - mean) / std, (239.0f / 219 - mean) / std, context),
              kScale);
    check_npp(to_half_(static_cast<const float *>(scaled_.get()), float_step,
                       static_cast<uint16_t *>(out), all.width * 2, all, kRoundNearestTiesToEven,
                       context),
              kToHalf);
  }

 private:
  template <class T>
  static T *list(const cudagray::DeviceMemory &memory) {
    return static_cast<T *>(memory.get());
  }
  template <class T>
  static cudagray::DeviceMemory upload(const std::vector<T> &host) {
    cudagray::DeviceMemory memory = cudagray::make_device_memory(host.size() * sizeof(T));
    CHECK_CUDA(
        cudaMemcpy(memory.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return memory;
  }

  void upload_lists(const std::function<cudagray::InputFrame(long, int)> &luma) {
    const cudagray::Rect &dest = job_.slot.dest;
    const NppiSize in{job_.slot.in_width, job_.slot.in_height},
        slot{job_.format.width, job_.format.height};
    std::vector<NppiResizeBatchCXR> uniform;
    std::vector<NppiImageDescriptor> sources, slots;
    std::vector<NppiResizeBatchROI_Advanced> rois;
    for (long i = 0; i < rotation_; ++i)
      for (int s = 0; s < job_.sources; ++s) {
        const cudagray::InputFrame frame = luma(i, s);
        uint8_t *slot_gray = static_cast<uint8_t *>(gray_.get()) + s * slot_pixels_;
        uniform.push_back({frame.plane[0], int(frame.stride[0]), slot_gray, slot.width});
        sources.push_back({const_cast<uint8_t *>(frame.plane[0]), int(frame.stride[0]), in});
        slots.push_back({slot_gray, slot.width, slot});
        rois.push_back({{0, 0, in.width, in.height}, {dest.x, dest.y, dest.width, dest.height}});
      }
    if (resize_ == BatchResize::Uniform) {
      uniform_list_ = upload(uniform);
    } else {
      sources_list_ = upload(sources);
      slots_list_ = upload(slots);
      rois_list_ = upload(rois);
    }
  }

  BatchJob job_;
  BatchResize resize_;
  size_t slot_pixels_;
  cudagray::DeviceMemory gray_, scaled_;  // the uint8 batch and its float32 normalisation
  long rotation_;
  // in device memory, rotation * N entries each
  cudagray::DeviceMemory uniform_list_, sources_list_, slots_list_, rois_list_;
  ResizeBatch uniform_ = nullptr;
  ResizeBatchAdvanced advanced_ = nullptr;
  Scale8u32f scale_ = nullptr;
  Convert32f16f to_half_ = nullptr;
};

// A source whose luma changes slowly, in limited range (ramps across, down
// and diagonally, 16..235), rows BatchSources::kPitch apart: NPP's batch and
// cudagray's stay a few levels apart on it, and a call set up wrong shows.
cudagray::DeviceMemory smooth_luma() {
  std::vector<uint8_t> frame = smooth_frame(kBatchSource, 1);
  for (uint8_t &q : frame) q = static_cast<uint8_t>(16 + q * 219 / 255);
  cudagray::DeviceMemory luma =
      cudagray::make_device_memory(BatchSources::kPitch * kBatchSource.height);
  CHECK_CUDA(cudaMemcpy2D(luma.get(), BatchSources::kPitch, frame.data(), kBatchSource.width,
                          kBatchSource.width, kBatchSource.height, cudaMemcpyHostToDevice));
  return luma;
}

// NPP's float16 batch and cudagray's of job, each N copies of the smooth
// source (NPP's from its batch 0 with those sources): how far apart, in
// 8-bit levels (|a - b| * std * 255); *worst gets the largest.
std::string compare_batches(const BatchJob &job, const void *npp_out, const void *cudagray_out,
                            double *worst) {
  const size_t elements = cudagray::batch_bytes(job.format, job.sources) / 2;
  std::vector<uint16_t> a(elements), b(elements);
  CHECK_CUDA(cudaMemcpy(a.data(), npp_out, elements * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(b.data(), cudagray_out, elements * 2, cudaMemcpyDeviceToHost));
  double most = 0;
  size_t differ = 0;
  for (size_t k = 0; k < elements; ++k) {
    const double levels =
        std::fabs(double(half_to_float(a[k])) - half_to_float(b[k])) * job.format.std * 255;
    most = std::max(most, std::isnan(levels) ? INFINITY : levels);
    differ += levels > 0.5;
  }
  *worst = most;
  return "max |diff| " + format_double(most, 2) + " levels, over 0.5 on " +
         format_double(100.0 * differ / elements, 2) + "% of elements";
}

}  // namespace

std::string npp_peer(PixelLayout layout, int gray_depth, const ScaledOutput *scaled) {
  const Input input = input_of(layout);
  if (input == Input::None || gray_depth != 8 || (!scaled && input == Input::Luma)) return "";
  const std::string key = std::string("npp:") + info_of(input).key;
  if (!scaled) return key;
  const std::string base = key + ":" + scaled->name();
  if (input == Input::Luma) return base;
  return base + order_key(Order::GrayFirst) + "|" + base + order_key(Order::ResizeFirst);
}

// NPP, loaded once for every row.
const Npp &loaded_npp(const Options &options) {
  static const Npp npp = load_npp(options);
  return npp;
}

void npp_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  const Npp &npp = loaded_npp(options);
  if (options.wants("npp")) same_size_rows(npp, size, options, rows);
  if (options.wants("npp") || options.wants("scaled")) scaled_rows(npp, size, options, rows);
}

std::string npp_batch_peer(const BatchJob &job) {
  return npp_batch_key(job, BatchResize::Uniform) + "|" + npp_batch_key(job, BatchResize::Advanced);
}

void npp_batch_rows(const Options &options, std::vector<Row> *rows) {
  const Npp &npp = loaded_npp(options);
  try {
    const BatchSources sources(options);
    const cudagray::DeviceMemory smooth = smooth_luma();
    const auto smooth_source = [&](long, int) {
      cudagray::InputFrame frame{};
      frame.plane[0] = static_cast<const uint8_t *>(smooth.get());
      frame.stride[0] = BatchSources::kPitch;
      frame.on_device = true;
      return frame;
    };
    const cudagray::StreamOwner stream = cudagray::make_stream();
    const NppStreamContext context = stream_context(stream.get());
    const cudagray::Weights weights = cudagray::standard_weights(cudagray::Matrix::BT601);
    for (const BatchJob &job : batch_jobs()) {
      const size_t bytes = cudagray::batch_bytes(job.format, job.sources);
      const size_t outputs = rotation_count(bytes, device_rotation_bytes(options));
      const DeviceRing out(outputs, bytes), check_out(2, bytes);
      for (const BatchResize resize : {BatchResize::Uniform, BatchResize::Advanced}) {
        Row row(kBatchSource, "batch", npp_batch_key(job, resize), batch_what(job, resize), "NV12",
                double(job.traffic));
        row.ceiling = copy_key(job.traffic);  // as the cudagray row's
        row.skipped = npp.missing(batch_calls(resize));
        record(rows, row, [&](Row &r) {
          const NppBatch check(npp, job, resize, smooth_source, 1);
          check.run(context, 0, check_out.at(0));
          const std::vector<cudagray::BatchSlot> slots(job.sources,
                                                       {true, job.slot, smooth_source(0, 0)});
          CHECK_CUDA(cudagray::convert_batch_cuda(job.format, slots.data(), job.sources,
                                                  check_out.at(1), weights, context.hStream));
          CHECK_CUDA(cudaStreamSynchronize(context.hStream));
          double worst = 0;
          const std::string check_text =
              compare_batches(job, check_out.at(0), check_out.at(1), &worst);
          const long rotation = sources.batches(job.sources);
          const NppBatch batch(
              npp, job, resize, [&](long i, int s) { return sources.luma(i, job.sources, s); },
              rotation);
          time_operations(
              stream.get(), std::max(rotation, static_cast<long>(outputs)),
              [&](long i, cudaStream_t) { batch.run(context, i, out.at(i)); }, options, r);
          r.note = join({std::string(worst > kMostPlausibleDifference ? "CHECK: " : "") +
                             "vs cudagray on a smooth frame " + check_text,
                         r.note, npp.library});
        });
      }
    }
  } catch (const std::exception &e) {  // allocation or setup
    record(rows, Row(kBatchSource, "batch", "npp:batch:setup", "NPP batches")
                     .skip(std::string("failed: ") + e.what()));
  }
}

}  // namespace bench
