// SPDX-License-Identifier: LGPL-2.1-or-later
// cudagray-bench: cudagray against its peers and ceilings, in one process
// and one run. bench/run is the command people use: it runs this, then plots.
#include <gst/gst.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "bench.h"
#ifdef CUDAGRAY_HAVE_CUDA
#include "cuda_rows.h"
#endif

namespace bench {
namespace {

const FrameSize kLatencySize = {"1080p", 1920, 1080};

std::string cpu_description() {
  char model[256] = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (std::sscanf(line.c_str(), "model name : %255[^\n]", model) == 1) break;
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  return std::string(model) + ", " +
         std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " hardware threads, " +
         format_double(memory / (1 << 30), 1) + " GiB memory";
}

// The rows measured with CUDA directly at one size, or, without a usable
// GPU, one row per group saying why.
void direct_cuda_rows(const FrameSize &size, const Options &options, const std::string &no_cuda,
                      std::vector<Row> *rows) {
#ifdef CUDAGRAY_HAVE_CUDA
  if (no_cuda.empty()) {
    device_rows(size, options, rows);
    if (options.wants("raw") || options.wants("scaled")) raw_rows(size, options, rows);
    return;
  }
#endif
  const std::string why = "skipped: " + no_cuda;
  const std::string kernels =
      "cudagray kernel alone (" +
      std::to_string((options.wants("kernel") ? options.formats : options.scaled_formats).size()) +
      " formats)";
  if (options.wants("copy"))
    record(rows, Row(size, "copy", "copy:*", "device copies and pinned transfers").skip(why));
  if (options.wants("kernel") || options.wants("scaled"))
    record(rows, Row(size, "kernel", "kernel:*", kernels).skip(why));
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
  std::string gpu, no_cuda;  // no_cuda: why the CUDA rows cannot run ("" when they can)
#ifdef CUDAGRAY_HAVE_CUDA
  try {
    gpu = cuda_open(options.device);
  } catch (const std::exception &e) {
    no_cuda = std::string("no usable CUDA device: ") + e.what();
  }
#else
  cudagray::cuda_device_count(&no_cuda);
  no_cuda = "no usable CUDA device: " + no_cuda;
#endif
  const Elements elements = inspect_elements();

  gchar *gst_version = gst_version_string();
  std::printf("cudagray-bench\nCPU:       %s\nGPU:       %s\nGStreamer: %s; cudagray %s",
              cpu_description().c_str(),
              no_cuda.empty() ? gpu.c_str() : ("none: " + no_cuda).c_str(), gst_version,
              elements.cudagray ? ("from " + elements.cudagray_file).c_str()
                                : "NOT FOUND (set GST_PLUGIN_PATH)");
  g_free(gst_version);
  if (elements.cudagray)
    std::printf(" (max-inflight: %s)", elements.max_inflight
                                           ? ("default " + elements.max_inflight_default).c_str()
                                           : "absent");
  std::printf("; videoconvert %s, videoscale %s, videoconvertscale %s\n",
              elements.videoconvert ? "found" : "NOT FOUND",
              elements.videoscale ? "found" : "NOT FOUND",
              elements.videoconvertscale ? "found" : "NOT FOUND");
  std::vector<std::string> sizes, formats;
  for (const FrameSize &s : options.sizes) sizes.push_back(s.name);
  for (const PixelLayout l : options.formats) formats.push_back(layout_name(l));
  std::printf(
      "Run:       sizes %s; rows %s; kernel formats %s; %.2f s per row; frames rotated over >= %zu "
      "MiB\n",
      join(sizes, ", ").c_str(), join(options.groups, ", ").c_str(), join(formats, ", ").c_str(),
      options.seconds, options.rotate_bytes >> 20);
  if (!no_cuda.empty()) std::printf("CUDA rows skipped: %s\n", no_cuda.c_str());
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const FrameSize &size : options.sizes) {
    direct_cuda_rows(size, options, no_cuda, &rows);
    if (options.wants("element")) element_rows(size, options, elements, no_cuda, &rows);
    if (options.wants("scaled")) scaled_rows(size, options, elements, no_cuda, &rows);
    stream_rows(size, options, elements, no_cuda, &rows);
    if (options.wants("cputime")) cputime_rows(size, options, elements, no_cuda, &rows);
    if (options.wants("renegotiation")) renegotiation_rows(size, elements, no_cuda, &rows);
    if (options.wants("cpu")) {
      cpu_rows(size, options, elements, &rows);
      cpu_kernel_rows(size, options, &rows);
    }
  }
  // the batch rows' sources are 1080p whatever --sizes says
  if (options.wants("batch")) {
#ifdef CUDAGRAY_HAVE_CUDA
    if (no_cuda.empty()) batch_rows(options, &rows);
#endif
    if (!no_cuda.empty())
      record(&rows,
             Row(kBatchSource, "batch", "batch:*", "cudagray batches, their copies and NPP peers")
                 .skip("skipped: " + no_cuda));
  }
  if (options.wants("latency")) {
#ifdef CUDAGRAY_HAVE_CUDA
    if (no_cuda.empty()) raw_latency_row(kLatencySize, options, &rows);
#endif
    latency_rows(kLatencySize, options, elements, no_cuda, &rows);
  }
  // NPP last: a library loaded at run time that goes wrong cannot spoil the
  // rows before it.
  const bool npp = options.wants("npp") || options.wants("scaled");
  for (const FrameSize &size : npp ? options.sizes : std::vector<FrameSize>{}) {
#ifdef CUDAGRAY_HAVE_CUDA
    if (no_cuda.empty()) {
      npp_rows(size, options, &rows);
      continue;
    }
#endif
    record(
        &rows,
        Row(size, "npp", "npp:*", "NPP nppiRGBToGray and nppiResize").skip("skipped: " + no_cuda));
  }
#ifdef CUDAGRAY_HAVE_CUDA
  if (options.wants("batch") && no_cuda.empty()) npp_batch_rows(options, &rows);
#endif

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
