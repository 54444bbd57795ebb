// SPDX-License-Identifier: LGPL-2.1-or-later
// The command line: what to measure, at which sizes, for how long.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "bench.h"

namespace bench {

const char kUsage[] =
    "usage: cudagray-bench [options]\n"
    "  --sizes LIST     frame sizes: 640x480 (vga), 1080p, 4k, 8k, or WxH (default: all four)\n"
    "  --rows LIST      what to measure: kernel copy raw element scaled latency cpu npp\n"
    "                   cputime renegotiation batch (default: all); cputime: the process's\n"
    "                   CPU time a frame with and without cudagray, and with cudaconvertscale;\n"
    "                   renegotiation: the wall time of a caps flip with frames in flight;\n"
    "                   scaled: GRAY8 at 640x360 from cudagray, cudagray then\n"
    "                   videoscale, and videoconvertscale, with the same-size rows and ceiling;\n"
    "                   the scaled kernel rows and their NPP peers (also with kernel, npp);\n"
    "                   batch: 4 and 16 1080p NV12 frames on the GPU to one 640x640 float16\n"
    "                   batch, against its traffic's copy and NPP (1080p whatever --sizes)\n"
    "  --formats LIST   kernel rows: layout names (RGB, Luma10_Msb, Luma_v210, Bayer_RGGB, ...),\n"
    "                   'packed' or 'all' (8-bit RGB), 'every' (every layout) (default: all;\n"
    "                   scaled kernel rows: RGB,RGBx,Luma,Luma10_Msb,Bayer_RGGB)\n"
    "  --gray LIST      kernel rows: gray out, 8 and/or 16 bits (default: 8)\n"
    "  --seconds S      measured time per row, after warm-up (default 0.5)\n"
    "  --quick          --seconds 0.2 and kernel formats RGB,RGBx,RGBP unless given\n"
    "  --rotate-mb M    frames rotated per row add up to at least M MiB (default 256)\n"
    "  --inflight LIST  also time the element rows at these max-inflight values\n"
    "  --device N       CUDA device (default 0)\n"
    "  --streams LIST   also run N pipelines at once for each N (1080p: 1,2,4,8,16,32,64)\n"
    "  --devices LIST   GPUs the streams are spread over (default: --device); with several,\n"
    "                   each N also runs N streams per GPU on all of them\n"
    "  --paced FPS      streams push FPS frames a second each, as cameras do (default: flat out)\n"
    "  --csv PATH       CSV output (default bench-results.csv)\n"
    "  --npp-lib PATH   libnppicc to load instead of searching for it\n"
    "Without a usable GPU only the CPU rows run; the others say why they were skipped.\n";

namespace {

// The scaled kernel rows' layouts unless --formats names others: one of each
// family (3- and 4-byte RGB, 8- and 10-bit luma, Bayer).
constexpr const char *kScaledFormats = "RGB,RGBx,Luma,Luma10_Msb,Bayer_RGGB";

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
  if (t == "1080p" || t == "fhd" || t == "1920x1080") return {"1080p", 1920, 1080};
  if (t == "4k" || t == "uhd" || t == "2160p" || t == "3840x2160") return {"4K", 3840, 2160};
  if (t == "8k" || t == "4320p" || t == "7680x4320") return {"8K", 7680, 4320};
  int w = 0, h = 0;
  char x = 0, extra = 0;
  if (std::sscanf(t.c_str(), "%d%c%d%c", &w, &x, &h, &extra) == 3 && x == 'x' && w > 0 && h > 0 &&
      w <= 16384 && h <= 16384)
    return {std::to_string(w) + "x" + std::to_string(h), w, h};
  throw std::invalid_argument("unknown size '" + text + "'");
}

// Each of the comma-separated names picks the candidates it matches (at
// least one, each once).
template <class T, class Matches>
std::vector<T> pick(const std::string &text, const std::vector<T> &candidates, Matches matches,
                    const char *what) {
  std::vector<T> picked;
  for (const std::string &name : split(text)) {
    bool found = false;
    for (const T &c : candidates)
      if (matches(name, c)) {
        if (std::find(picked.begin(), picked.end(), c) == picked.end()) picked.push_back(c);
        found = true;
      }
    if (!found) throw std::invalid_argument(std::string("unknown ") + what + " '" + name + "'");
  }
  return picked;
}

std::vector<PixelLayout> parse_formats(const std::string &text) {
  std::vector<PixelLayout> every;
  for (int i = 0; i < cudagray::kLayoutCount; ++i) every.push_back(static_cast<PixelLayout>(i));
  const std::vector<PixelLayout> rgb8(std::begin(cudagray::kRgb8Layouts),
                                      std::end(cudagray::kRgb8Layouts));
  const auto in_rgb8 = [&](PixelLayout l) {
    return std::find(rgb8.begin(), rgb8.end(), l) != rgb8.end();
  };
  return pick(
      text, every,
      [&](const std::string &name, PixelLayout l) {
        return name == "every" || (name == "all" && in_rgb8(l)) ||
               (name == "packed" && in_rgb8(l) && cudagray::layout_info(l).planes == 1) ||
               lower(name) == lower(layout_name(l));
      },
      "format");
}

std::vector<std::string> parse_groups(const std::string &text) {
  return pick<std::string>(
      text,
      {"kernel", "copy", "raw", "element", "scaled", "latency", "cpu", "npp", "cputime",
       "renegotiation", "batch"},
      [](const std::string &name, const std::string &g) { return name == "all" || name == g; },
      "row group");
}

// A number in [min, max] for option.
double number(const std::string &option, const std::string &text, double min, double max) {
  char *end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0')
    throw std::invalid_argument(option + ": '" + text + "' is not a number");
  std::ostringstream range;
  range << min << ".." << max;
  if (!(value >= min && value <= max))
    throw std::invalid_argument(option + ": " + text + " is outside " + range.str());
  return value;
}

}  // namespace

Options parse_options(int argc, char **argv) {
  Options o;
  o.sizes = {parse_size("vga"), parse_size("1080p"), parse_size("4k"), parse_size("8k")};
  o.groups = parse_groups("all");
  bool quick = false, formats_given = false, seconds_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) value = arg.substr(eq + 1), arg = arg.substr(0, eq);
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
    } else if (arg == "--gray") {
      o.gray_depths.clear();
      for (const std::string &d : split(next()))
        o.gray_depths.push_back(static_cast<int>(number("--gray", d, 8, 16)));
      for (int d : o.gray_depths)
        if (d != 8 && d != 16) throw std::invalid_argument("--gray takes 8 and 16");
    } else if (arg == "--seconds") {
      o.seconds = number(arg, next(), 1e-3, 3600);
      seconds_given = true;
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--inflight") {
      for (const std::string &n : split(next()))
        o.inflight.push_back(static_cast<int>(number(arg, n, 1, 16)));
    } else if (arg == "--rotate-mb") {
      o.rotate_bytes = static_cast<size_t>(number(arg, next(), 1, 1 << 20) * (1 << 20));
    } else if (arg == "--device") {
      o.device = static_cast<int>(number(arg, next(), 0, 1023));
    } else if (arg == "--streams") {
      for (const std::string &n : split(next()))
        o.streams.push_back(static_cast<int>(number(arg, n, 1, 512)));
    } else if (arg == "--devices") {
      for (const std::string &n : split(next()))
        o.devices.push_back(static_cast<int>(number(arg, n, 0, 1023)));
    } else if (arg == "--paced") {
      o.paced_fps = number(arg, next(), 0.1, 1000);
    } else if (arg == "--csv") {
      o.csv = next();
    } else if (arg == "--npp-lib") {
      o.npp_lib = next();
    } else {
      throw std::invalid_argument(std::string("unknown option '") + argv[i] + "'");
    }
  }
  if (!formats_given) o.formats = parse_formats(quick ? "RGB,RGBx,RGBP" : "all");
  o.scaled_formats = formats_given ? o.formats : parse_formats(kScaledFormats);
  if (quick && !seconds_given) o.seconds = 0.2;
  if (o.devices.empty()) o.devices = {o.device};
  if (o.sizes.empty() || o.groups.empty() || o.formats.empty())
    throw std::invalid_argument("nothing to measure");
  return o;
}

}  // namespace bench
