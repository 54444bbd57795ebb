// NPP's nppiRGBToGray as a peer of the cudagray kernel. The build machine
// need not have NPP: the library is opened at run time and the two calls
// are declared here, as nppdefs.h and nppi_color_conversion.h (CUDA 12/13)
// declare them.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "cuda_rows.h"
#include "cuda_util.h"
#include "cudagray/convert_cuda.h"

namespace bench {

namespace {

using Npp8u = unsigned char;
using NppStatus = int;  // an enum in nppdefs.h: 0 success, < 0 error, > 0 warning
struct NppiSize {
  int width;
  int height;
};
struct NppStreamContext {
  cudaStream_t hStream;
  int nCudaDeviceId;
  int nMultiProcessorCount;
  int nMaxThreadsPerMultiProcessor;
  int nMaxThreadsPerBlock;
  size_t nSharedMemPerBlock;
  int nCudaDevAttrComputeCapabilityMajor;
  int nCudaDevAttrComputeCapabilityMinor;
  unsigned int nStreamFlags;
  int nReserved0;
};
static_assert(sizeof(NppStreamContext) == 48, "NppStreamContext as in nppdefs.h of CUDA 12/13");

using ToGrayCtx = NppStatus (*)(const Npp8u *, int, Npp8u *, int, NppiSize, NppStreamContext);
using ToGray = NppStatus (*)(const Npp8u *, int, Npp8u *, int, NppiSize);
using SetStream = NppStatus (*)(cudaStream_t);

// One of the two conversions, by its NPP name.
struct Conversion {
  const char *key;     // row key
  const char *name;    // NPP function, without _Ctx
  PixelLayout layout;  // the cudagray layout with the same bytes
  int channels;
  ToGrayCtx with_context = nullptr;
  ToGray without_context = nullptr;
};

struct Npp {
  std::string error;  // why NPP is not available; empty when it is
  std::string library;
  SetStream set_stream = nullptr;
  Conversion conversions[2] = {
      {"npp:C3", "nppiRGBToGray_8u_C3C1R", PixelLayout::RGB, 3},
      {"npp:AC4", "nppiRGBToGray_8u_AC4C1R", PixelLayout::RGBA, 4},
  };
};

// dlopen of libnppicc, trying the loader's own path and then the usual
// toolkit directories; libnppc (and cudart) from the same directory first, so
// that a toolkit outside the loader's path works too. Everything is loaded
// RTLD_LOCAL: a shared cudart must not take over the cuda* symbols that the
// plugin (with its static cudart) still resolves lazily.
void *open_nppicc(const std::string &explicit_path, std::string *library, std::string *error) {
  std::vector<std::string> candidates;
  if (!explicit_path.empty()) {
    candidates.push_back(explicit_path);
  } else {
    std::vector<std::string> dirs = {""};
    for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char *root = std::getenv(var)) dirs.push_back(std::string(root) + "/lib64");
    dirs.push_back("/usr/local/cuda/lib64");  // the toolkit's default prefix
    for (const std::string &dir : dirs)
      for (const char *suffix : {".13", ".12", ""})
        candidates.push_back((dir.empty() ? "" : dir + "/") + "libnppicc.so" + suffix);
  }
  std::string first_error;
  for (const std::string &path : candidates) {
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos) {
      const std::string dir = path.substr(0, slash + 1);
      const std::string suffix = path.substr(path.find(".so") + 3);
      dlopen((dir + "libcudart.so" + suffix).c_str(), RTLD_NOW | RTLD_LOCAL);
      dlopen((dir + "libnppc.so" + suffix).c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *library = path;
      return handle;
    }
    const char *why = dlerror();
    if (first_error.empty()) first_error = why ? why : path + ": cannot open";
  }
  *error = first_error + (candidates.size() > 1
                              ? " (and " + std::to_string(candidates.size() - 1) + " other names)"
                              : "");
  return nullptr;
}

Npp load_npp(const Options &options) {
  Npp npp;
  void *handle = open_nppicc(options.npp_lib, &npp.library, &npp.error);
  if (!handle) return npp;
  npp.set_stream = reinterpret_cast<SetStream>(dlsym(handle, "nppSetStream"));
  for (Conversion &c : npp.conversions) {
    c.with_context = reinterpret_cast<ToGrayCtx>(dlsym(handle, (std::string(c.name) + "_Ctx").c_str()));
    c.without_context = reinterpret_cast<ToGray>(dlsym(handle, c.name));
  }
  return npp;
}

NppStreamContext stream_context(cudaStream_t stream) {
  NppStreamContext context{};
  context.hStream = stream;
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  context.nCudaDeviceId = device;
  CHECK_CUDA(cudaDeviceGetAttribute(&context.nMultiProcessorCount, cudaDevAttrMultiProcessorCount, device));
  CHECK_CUDA(cudaDeviceGetAttribute(&context.nMaxThreadsPerMultiProcessor,
                                        cudaDevAttrMaxThreadsPerMultiProcessor, device));
  CHECK_CUDA(cudaDeviceGetAttribute(&context.nMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, device));
  int shared = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlock, device));
  context.nSharedMemPerBlock = static_cast<size_t>(shared);
  CHECK_CUDA(cudaDeviceGetAttribute(&context.nCudaDevAttrComputeCapabilityMajor,
                                        cudaDevAttrComputeCapabilityMajor, device));
  CHECK_CUDA(cudaDeviceGetAttribute(&context.nCudaDevAttrComputeCapabilityMinor,
                                        cudaDevAttrComputeCapabilityMinor, device));
  CHECK_CUDA(cudaStreamGetFlags(stream, &context.nStreamFlags));
  return context;
}

// One NPP conversion on the context's stream; throws on an NPP error.
void convert_npp(const Npp &npp, const Conversion &c, const NppStreamContext &context,
                 const uint8_t *in, uint8_t *out, const FrameSize &size) {
  const NppiSize roi{size.width, size.height};
  const int in_step = size.width * c.channels;
  NppStatus status;
  if (c.with_context) {
    status = c.with_context(in, in_step, out, size.width, roi, context);
  } else {
    status = c.without_context(in, in_step, out, size.width, roi);
  }
  if (status < 0)
    throw std::runtime_error(std::string(c.name) + (c.with_context ? "_Ctx" : "") +
                             " returned NppStatus " + std::to_string(status));
}

// NPP's and cudagray's output for the same frame: how far apart they are.
// NPP rounds its float formula its own way, so 1 apart is expected; more
// would mean the call is set up wrong.
std::string compare_with_cudagray(const Npp &npp, const Conversion &c, const NppStreamContext &context,
                                  const uint8_t *in, const FrameSize &size) {
  const size_t n = size.pixels();
  const DeviceMemory npp_out = make_device_memory(n);
  const DeviceMemory ours = make_device_memory(n);
  convert_npp(npp, c, context, in, static_cast<uint8_t *>(npp_out.get()), size);
  cudagray::InputFrame frame{c.layout, size.width, size.height, {in}, {size.width * size_t(c.channels)}};
  const cudagray::GrayFrame gray{static_cast<uint8_t *>(ours.get()), static_cast<size_t>(size.width)};
  CHECK_CUDA(cudagray::convert_cuda(frame, gray, cudagray::standard_weights(cudagray::Matrix::BT601),
                                        context.hStream));
  CHECK_CUDA(cudaStreamSynchronize(context.hStream));
  std::vector<uint8_t> a(n), b(n);
  CHECK_CUDA(cudaMemcpy(a.data(), npp_out.get(), n, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(b.data(), ours.get(), n, cudaMemcpyDeviceToHost));
  int worst = 0;
  size_t differ = 0;
  for (size_t i = 0; i < n; ++i) {
    const int d = std::abs(int(a[i]) - int(b[i]));
    worst = std::max(worst, d);
    differ += d != 0;
  }
  return std::string(worst > 1 ? "CHECK: " : "") + "vs cudagray max |diff| " + std::to_string(worst) +
         " on " + format_double(100.0 * differ / n, 2) + "% of pixels";
}

}  // namespace

void npp_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  static const Npp npp = load_npp(options);
  const size_t n = size.pixels();
  for (const Conversion &c : npp.conversions) {
    Row row(size, "npp", c.key, std::string("NPP ") + c.name, layout_name(c.layout), double(c.channels + 1) * n);
    row.ceiling = "copy:" + std::to_string(c.channels) + "B";
    if (!npp.error.empty()) {
      record(rows, row.skip("NPP: not available (" + npp.error + ")"));
      continue;
    }
    if (!c.with_context && !(c.without_context && npp.set_stream)) {
      record(rows, row.skip("NPP: " + npp.library + " has no " + c.name + "_Ctx"));
      continue;
    }
    record(rows, row, [&](Row &r) {
      const size_t count = rotation_count(size_t(c.channels + 1) * n, device_rotation_bytes(options));
      const DeviceRing in = random_device_ring(count, c.channels * n, 6000);
      const DeviceRing out(count, n, make_device_memory);
      const Stream stream = make_stream();
      if (!c.with_context && npp.set_stream(stream.get()) < 0)
        throw std::runtime_error("nppSetStream failed");
      const NppStreamContext context = stream_context(stream.get());
      const std::string check = compare_with_cudagray(npp, c, context, in.at(0), size);
      time_operations(stream.get(), static_cast<long>(count), [&](long i, cudaStream_t) {
        convert_npp(npp, c, context, in.at(i), out.at(i), size);
      }, options, r);
      r.note = join({check, c.with_context ? "" : "non-_Ctx call", r.note, npp.library});
    });
  }
}

}  // namespace bench
