// SPDX-License-Identifier: LGPL-2.1-or-later
// NPP's nppiRGBToGray as a peer of the cudagray kernel. The build machine
// need not have NPP: the library is opened at run time and the two calls
// are declared here, as nppdefs.h and nppi_color_conversion.h (CUDA 12/13)
// declare them.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "cuda_rows.h"
#include "cudagray/convert_cuda.h"

namespace bench {

namespace {

using NppStatus = int;  // an enum in nppdefs.h: 0 success, < 0 error, > 0 warning
struct NppiSize {
  int width, height;
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

// One of the two conversions, by its NPP name (without _Ctx).
struct Conversion {
  const char *key, *name;
  PixelLayout layout;  // the cudagray layout with the same bytes
  int channels;
  ToGray call = nullptr;
};

struct Npp {
  std::string error;  // why NPP is not available; empty when it is
  std::string library;
  Conversion conversions[2] = {
      {"npp:C3", "nppiRGBToGray_8u_C3C1R", PixelLayout::RGB, 3},
      {"npp:AC4", "nppiRGBToGray_8u_AC4C1R", PixelLayout::RGBA, 4},
  };
};

// libnppicc from the loader's own path or the usual toolkit directories,
// libnppc and cudart from the same directory first, so that a toolkit
// outside the loader's path works too. Everything RTLD_LOCAL: a shared
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
  void *handle = nullptr;
  for (const std::string &path : candidates) {
    const size_t slash = path.rfind('/'), so = path.find(".so");
    for (const char *needed : {"libcudart.so", "libnppc.so"})
      if (slash != std::string::npos && so != std::string::npos)
        dlopen((path.substr(0, slash + 1) + needed + path.substr(so + 3)).c_str(),
               RTLD_NOW | RTLD_LOCAL);
    if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      npp.library = path;
      break;
    }
    const char *why = dlerror();
    if (npp.error.empty()) npp.error = why ? why : path + ": cannot open";
  }
  if (!handle) {
    if (candidates.size() > 1)
      npp.error += " (and " + std::to_string(candidates.size() - 1) + " other names)";
    return npp;
  }
  npp.error.clear();
  for (Conversion &c : npp.conversions)
    c.call = reinterpret_cast<ToGray>(dlsym(handle, (std::string(c.name) + "_Ctx").c_str()));
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

// One NPP conversion on the context's stream; throws on an NPP error.
void convert_npp(const Conversion &c, const NppStreamContext &context, const uint8_t *in,
                 uint8_t *out, const FrameSize &size) {
  const NppStatus status =
      c.call(in, size.width * c.channels, out, size.width, {size.width, size.height}, context);
  if (status < 0)
    throw std::runtime_error(std::string(c.name) + "_Ctx returned NppStatus " +
                             std::to_string(status));
}

// NPP's and cudagray's output for the same frame: how far apart they are.
// NPP rounds its float formula its own way, so 1 apart is expected; more
// would mean the call is set up wrong.
std::string compare_with_cudagray(const Conversion &c, const NppStreamContext &context,
                                  const uint8_t *in, const FrameSize &size) {
  const size_t n = size.pixels();
  const DeviceRing out(2, n);  // NPP's, ours
  convert_npp(c, context, in, out.at(0), size);
  const cudagray::GrayFrame gray{out.at(1), static_cast<size_t>(size.width)};
  CHECK_CUDA(
      cudagray::convert_cuda(cudagray::same_size_conversion(c.layout, size.width, size.height),
                             frame_at(c.layout, size, in), gray,
                             cudagray::standard_weights(cudagray::Matrix::BT601), context.hStream));
  CHECK_CUDA(cudaStreamSynchronize(context.hStream));
  std::vector<uint8_t> a(n), b(n);
  CHECK_CUDA(cudaMemcpy(a.data(), out.at(0), n, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(b.data(), out.at(1), n, cudaMemcpyDeviceToHost));
  int worst = 0;
  size_t differ = 0;
  for (size_t i = 0; i < n; ++i) {
    const int d = std::abs(int(a[i]) - int(b[i]));
    worst = std::max(worst, d);
    differ += d != 0;
  }
  return std::string(worst > 1 ? "CHECK: " : "") + "vs cudagray max |diff| " +
         std::to_string(worst) + " on " + format_double(100.0 * differ / n, 2) + "% of pixels";
}

}  // namespace

void npp_rows(const FrameSize &size, const Options &options, std::vector<Row> *rows) {
  static const Npp npp = load_npp(options);
  const size_t n = size.pixels();
  for (const Conversion &c : npp.conversions) {
    Row row(size, "npp", c.key, std::string("NPP ") + c.name, layout_name(c.layout),
            double(c.channels + 1) * n);
    row.ceiling = "copy:" + std::to_string(c.channels) + "B";  // same traffic
    if (!npp.error.empty())
      row.skipped = "NPP: not available (" + npp.error + ")";
    else if (!c.call)
      row.skipped = "NPP: " + npp.library + " has no " + c.name + "_Ctx";
    record(rows, row, [&](Row &r) {
      const size_t count =
          rotation_count(size_t(c.channels + 1) * n, device_rotation_bytes(options));
      const DeviceRing in(count, c.channels * n, 6000), out(count, n);
      const cudagray::StreamOwner stream = cudagray::make_stream();
      const NppStreamContext context = stream_context(stream.get());
      const std::string check = compare_with_cudagray(c, context, in.at(0), size);
      time_operations(
          stream.get(), static_cast<long>(count),
          [&](long i, cudaStream_t) { convert_npp(c, context, in.at(i), out.at(i), size); },
          options, r);
      r.note = join({check, r.note, npp.library});
    });
  }
}

}  // namespace bench
