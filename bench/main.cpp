// cudagray-bench: cudagray against its peers and ceilings, in one process
// and one run. bench/run is the command people use: it runs this, then plots.
#include <gst/gst.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench.h"
#include "gst_rows.h"
#ifdef CUDAGRAY_HAVE_CUDA
#include "cuda_rows.h"
#endif

namespace bench {
namespace {

const char kUsage[] =
    "usage: cudagray-bench [options]\n"
    "  --sizes LIST     frame sizes: 640x480 (vga), 1080p, 4k, 8k, or WxH (default: all four)\n"
    "  --rows LIST      what to measure: kernel copy raw element latency cpu npp (default: all)\n"
    "  --formats LIST   kernel rows: format names, 'packed' or 'all' (default: all)\n"
    "  --seconds S      measured time per row, after warm-up (default 0.5)\n"
    "  --quick          --seconds 0.2 and kernel formats RGB,RGBx,RGBP unless given\n"
    "  --rotate-mb M    frames rotated per row add up to at least M MiB (default 256)\n"
    "  --inflight LIST  also time the element rows at these max-inflight values\n"
    "  --device N       CUDA device (default 0)\n"
    "  --csv PATH       CSV output (default bench-results.csv)\n"
    "  --npp-lib PATH   libnppicc to load instead of searching for it\n"
    "Without a usable GPU only the CPU rows run; the others say why they were skipped.\n";

const char *kGroups[] = {"kernel", "copy", "raw", "element", "latency", "cpu", "npp"};
const FrameSize kLatencySize = {"1080p", 1920, 1080};

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::string lower(std::string text) {
  for (char &c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

FrameSize parse_size(const std::string &text) {
  const std::string t = lower(text);
  if (t == "vga" || t == "480p" || t == "640x480") return {"640x480", 640, 480};
  if (t == "1080p" || t == "fhd" || t == "1920x1080") return kLatencySize;
  if (t == "4k" || t == "uhd" || t == "2160p" || t == "3840x2160") return {"4K", 3840, 2160};
  if (t == "8k" || t == "4320p" || t == "7680x4320") return {"8K", 7680, 4320};
  int w = 0, h = 0;
  char x = 0, extra = 0;
  if (std::sscanf(t.c_str(), "%d%c%d%c", &w, &x, &h, &extra) == 3 && x == 'x' && w > 0 && h > 0 &&
      w <= 16384 && h <= 16384)
    return {std::to_string(w) + "x" + std::to_string(h), w, h};
  throw std::invalid_argument("unknown size '" + text + "'");
}

std::vector<PixelLayout> parse_formats(const std::string &text) {
  std::vector<PixelLayout> formats;
  for (const std::string &name : split(text)) {
    bool found = false;
    for (PixelLayout layout : cudagray::kAllLayouts) {
      const bool packed = cudagray::layout_info(layout).planes == 1;
      if (name == "all" || (name == "packed" && packed) || lower(name) == lower(layout_name(layout))) {
        if (std::find(formats.begin(), formats.end(), layout) == formats.end()) formats.push_back(layout);
        found = true;
      }
    }
    if (!found) throw std::invalid_argument("unknown format '" + name + "'");
  }
  return formats;
}

std::vector<std::string> parse_groups(const std::string &text) {
  std::vector<std::string> groups;
  for (const std::string &name : split(text)) {
    bool found = false;
    for (const char *g : kGroups)
      if (name == "all" || name == g) {
        groups.push_back(g);
        found = true;
      }
    if (!found) throw std::invalid_argument("unknown row group '" + name + "'");
  }
  return groups;
}

double number_arg(const std::string &option, const std::string &text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw std::invalid_argument(option + ": '" + text + "' is not a number");
  return value;
}

// Throws std::invalid_argument on a bad option; exits on --help.
Options parse_options(int argc, char **argv) {
  Options o;
  o.sizes = {parse_size("vga"), parse_size("1080p"), parse_size("4k"), parse_size("8k")};
  o.groups = parse_groups("all");
  bool quick = false, formats_given = false, seconds_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (eq != std::string::npos) return value;
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--sizes") {
      o.sizes.clear();
      for (const std::string &s : split(next())) o.sizes.push_back(parse_size(s));
    } else if (arg == "--rows") {
      o.groups = parse_groups(next());
    } else if (arg == "--formats") {
      o.formats = parse_formats(next());
      formats_given = true;
    } else if (arg == "--seconds") {
      o.seconds = number_arg(arg, next());
      seconds_given = true;
      if (!(o.seconds > 0)) throw std::invalid_argument("--seconds must be positive");
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--inflight") {
      for (const std::string &n : split(next())) {
        const double v = number_arg(arg, n);
        if (!(v >= 1 && v <= 16)) throw std::invalid_argument("--inflight values must be 1..16");
        o.inflight.push_back(static_cast<int>(v));
      }
    } else if (arg == "--rotate-mb") {
      const double mib = number_arg(arg, next());
      if (!(mib > 0)) throw std::invalid_argument("--rotate-mb must be positive");
      o.rotate_bytes = static_cast<size_t>(mib * (1 << 20));
    } else if (arg == "--device") {
      o.device = static_cast<int>(number_arg(arg, next()));
    } else if (arg == "--csv") {
      o.csv = next();
    } else if (arg == "--npp-lib") {
      o.npp_lib = next();
    } else {
      throw std::invalid_argument(std::string("unknown option '") + argv[i] + "'");
    }
  }
  if (!formats_given) o.formats = parse_formats(quick ? "RGB,RGBx,RGBP" : "all");
  if (quick && !seconds_given) o.seconds = 0.2;
  if (o.sizes.empty() || o.groups.empty() || o.formats.empty())
    throw std::invalid_argument("nothing to measure");
  return o;
}

// The first "key : value" line of a /proc file whose key is one of keys.
std::string proc_value(const char *file, std::initializer_list<const char *> keys) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    for (const char *k : keys)
      if (key == k) {
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
      }
  }
  return "";
}

std::string cpu_description() {
  std::string model = proc_value("/proc/cpuinfo", {"model name", "Model", "cpu model"});
  if (model.empty()) model = "unknown CPU";
  std::string text = model + ", " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
                     " hardware threads";
  const std::string mem = proc_value("/proc/meminfo", {"MemTotal"});  // "131072000 kB"
  if (!mem.empty()) text += ", " + format_double(std::atof(mem.c_str()) / (1 << 20), 1) + " GiB memory";
  return text;
}

std::string names(const std::vector<FrameSize> &sizes) {
  std::string text;
  for (const FrameSize &s : sizes) text += (text.empty() ? "" : ", ") + s.name;
  return text;
}

std::string names(const std::vector<PixelLayout> &formats) {
  std::string text;
  for (PixelLayout f : formats) text += (text.empty() ? "" : ",") + std::string(layout_name(f));
  return text;
}

// Without a GPU: one row per CUDA group and size, saying why.
void skip_cuda_rows(const FrameSize &size, const Options &options, const std::string &reason,
                    std::vector<Row> *rows) {
  const std::string why = "skipped: " + reason;
  if (options.wants("copy"))
    record(rows, skipped_row(size, "copy", "copy:*", "device copies and pinned transfers", why), nullptr);
  if (options.wants("kernel"))
    record(rows,
           skipped_row(size, "kernel", "kernel:*",
                       "cudagray kernel alone (" + std::to_string(options.formats.size()) + " formats)", why),
           nullptr);
  if (options.wants("raw"))
    record(rows, skipped_row(size, "raw", "raw:*", "raw CUDA loops (pinned, staging)", why), nullptr);
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
  std::string why;
  cudagray::cuda_device_count(&why);
  cuda.reason = "no usable CUDA device: " + why;
#endif
  const Elements elements = inspect_elements();

  std::printf("cudagray-bench\n");
  std::printf("CPU:       %s\n", cpu_description().c_str());
  std::printf("GPU:       %s\n", cuda.usable ? gpu.c_str() : ("none: " + cuda.reason).c_str());
  gchar *gst_version = gst_version_string();
  std::printf("GStreamer: %s; cudagray %s", gst_version,
              elements.cudagray ? ("from " + elements.cudagray_file).c_str() : "NOT FOUND (set GST_PLUGIN_PATH)");
  g_free(gst_version);
  if (elements.cudagray)
    std::printf(" (max-inflight: %s, stats: %s)",
                elements.max_inflight ? ("default " + elements.max_inflight_default).c_str() : "absent",
                elements.stats ? "yes" : "absent");
  std::printf("; videoconvert %s\n", elements.videoconvert ? "found" : "NOT FOUND");
  std::printf("Run:       sizes %s; rows", names(options.sizes).c_str());
  for (const std::string &g : options.groups) std::printf(" %s", g.c_str());
  std::printf("; kernel formats %s; %.2f s per row; frames rotated over >= %zu MiB\n",
              names(options.formats).c_str(), options.seconds, options.rotate_bytes >> 20);
  if (!cuda.usable) std::printf("CUDA rows skipped: %s\n", cuda.reason.c_str());
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const FrameSize &size : options.sizes) {
    if (cuda.usable) {
#ifdef CUDAGRAY_HAVE_CUDA
      device_rows(size, options, &rows);
      if (options.wants("raw")) raw_rows(size, options, &rows);
#endif
    } else {
      skip_cuda_rows(size, options, cuda.reason, &rows);
    }
    if (options.wants("element")) element_rows(size, options, elements, cuda, &rows);
    if (options.wants("cpu")) {
      cpu_rows(size, options, elements, &rows);
      cpu_kernel_rows(size, options, &rows);
    }
  }
  if (options.wants("latency")) {
    if (cuda.usable) {
#ifdef CUDAGRAY_HAVE_CUDA
      raw_latency_row(kLatencySize, options, &rows);
#endif
    }
    latency_rows(kLatencySize, options, elements, cuda, &rows);
  }
  // NPP last: a library loaded at run time that goes wrong cannot spoil the
  // rows before it.
  if (options.wants("npp")) {
    for (const FrameSize &size : options.sizes) {
      if (cuda.usable) {
#ifdef CUDAGRAY_HAVE_CUDA
        npp_rows(size, options, &rows);
#endif
      } else {
        record(&rows, skipped_row(size, "npp", "npp:*", "NPP nppiRGBToGray", "skipped: " + cuda.reason), nullptr);
      }
    }
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
