// SPDX-License-Identifier: LGPL-2.1-or-later
// cudagray-bench: cudagray against its peers and ceilings, in one process
// and one run. bench/run is the command people use: it runs this, then plots.
#include <gst/gst.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "bench.h"
#ifdef CUDAGRAY_HAVE_CUDA
#include "cuda_rows.h"
#endif

namespace bench {
namespace {

const FrameSize kLatencySize = {"1080p", 1920, 1080};

// The value of the first "key : value" line of a /proc file with that key.
std::string proc_value(const char *file, const std::string &key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos ||
        line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1) != key)
      continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string cpu_description() {
  std::string model = proc_value("/proc/cpuinfo", "model name");
  if (model.empty()) model = "unknown CPU";
  std::string text = model + ", " +
                     std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
                     " hardware threads";
  const std::string mem = proc_value("/proc/meminfo", "MemTotal");  // "131072000 kB"
  if (!mem.empty())
    text += ", " + format_double(std::atof(mem.c_str()) / (1 << 20), 1) + " GiB memory";
  return text;
}

// The rows measured with CUDA directly at one size, or, without a usable
// GPU, one row per group saying why.
void direct_cuda_rows(const FrameSize &size, const Options &options, const CudaState &cuda,
                      std::vector<Row> *rows) {
#ifdef CUDAGRAY_HAVE_CUDA
  if (cuda.usable) {
    device_rows(size, options, rows);
    if (options.wants("raw")) raw_rows(size, options, rows);
    return;
  }
#endif
  const std::string why = "skipped: " + cuda.reason;
  const std::string kernels =
      "cudagray kernel alone (" + std::to_string(options.formats.size()) + " formats)";
  if (options.wants("copy"))
    record(rows, Row(size, "copy", "copy:*", "device copies and pinned transfers").skip(why));
  if (options.wants("kernel")) record(rows, Row(size, "kernel", "kernel:*", kernels).skip(why));
  if (options.wants("raw"))
    record(rows, Row(size, "raw", "raw:*", "raw CUDA loops (pinned, staging)").skip(why));
}

int run(int argc, char **argv) {
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cudagray-bench: %s\n\n%s", e.what(), kUsage);
    return 2;
  }
  CudaState cuda;
  std::string gpu;
#ifdef CUDAGRAY_HAVE_CUDA
  cuda.usable = cuda_open(options.device, &gpu, &cuda.reason);
#else
  cudagray::cuda_device_count(&cuda.reason);
  cuda.reason = "no usable CUDA device: " + cuda.reason;
#endif
  const Elements elements = inspect_elements();

  gchar *gst_version = gst_version_string();
  std::printf("cudagray-bench\nCPU:       %s\nGPU:       %s\nGStreamer: %s; cudagray %s",
              cpu_description().c_str(),
              cuda.usable ? gpu.c_str() : ("none: " + cuda.reason).c_str(), gst_version,
              elements.cudagray ? ("from " + elements.cudagray_file).c_str()
                                : "NOT FOUND (set GST_PLUGIN_PATH)");
  g_free(gst_version);
  if (elements.cudagray)
    std::printf(" (max-inflight: %s)", elements.max_inflight
                                           ? ("default " + elements.max_inflight_default).c_str()
                                           : "absent");
  std::printf("; videoconvert %s\n", elements.videoconvert ? "found" : "NOT FOUND");
  std::vector<std::string> sizes, formats;
  for (const FrameSize &s : options.sizes) sizes.push_back(s.name);
  for (const PixelLayout l : options.formats) formats.push_back(layout_name(l));
  std::printf(
      "Run:       sizes %s; rows %s; kernel formats %s; %.2f s per row; frames rotated over >= %zu "
      "MiB\n",
      join(sizes, ", ").c_str(), join(options.groups, ", ").c_str(), join(formats, ", ").c_str(),
      options.seconds, options.rotate_bytes >> 20);
  if (!cuda.usable) std::printf("CUDA rows skipped: %s\n", cuda.reason.c_str());
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const FrameSize &size : options.sizes) {
    direct_cuda_rows(size, options, cuda, &rows);
    if (options.wants("element")) element_rows(size, options, elements, cuda, &rows);
    stream_rows(size, options, elements, cuda, &rows);
    if (options.wants("cpu")) {
      cpu_rows(size, options, elements, &rows);
      cpu_kernel_rows(size, options, &rows);
    }
  }
  if (options.wants("latency")) {
#ifdef CUDAGRAY_HAVE_CUDA
    if (cuda.usable) raw_latency_row(kLatencySize, options, &rows);
#endif
    latency_rows(kLatencySize, options, elements, cuda, &rows);
  }
  // NPP last: a library loaded at run time that goes wrong cannot spoil the
  // rows before it.
  for (const FrameSize &size : options.wants("npp") ? options.sizes : std::vector<FrameSize>{}) {
#ifdef CUDAGRAY_HAVE_CUDA
    if (cuda.usable) {
      npp_rows(size, options, &rows);
      continue;
    }
#endif
    record(&rows, Row(size, "npp", "npp:*", "NPP nppiRGBToGray").skip("skipped: " + cuda.reason));
  }

  print_table(stdout, rows);
  try {
    write_csv(options.csv, rows);
    std::printf("\nCSV: %s\n", options.csv.c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cudagray-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  return bench::run(argc, argv);
}
