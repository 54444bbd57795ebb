// SPDX-License-Identifier: LGPL-2.1-or-later
// Rows as they come (progress on stderr), and at the end the table and the
// CSV, with every ratio worked out from the rows' keys.
#include <algorithm>
#include <cmath>
#include <fstream>

#include "bench.h"

namespace bench {

namespace {

// Throughput (or, for latency rows, latency) relative to other rows:
// other.us / row.us, so above 1 means better than the reference.
struct Ratios {
  double ceiling = NAN, videoconvert = NAN, peer = NAN;
  std::string peer_key;  // the peer measured (the fastest of several)
};

// The all-CPU peer of a row with a frame rate (x vc-all): videoconvert on all
// cores, or for the scaled rows videoconvertscale on all cores to the same
// output size.
std::string cpu_peer_of(const Row &row) {
  return row.group == "scaled" ? "scaled:videoconvertscale" : "videoconvert:all";
}

// The measured row at row's size with key, or for "key|key|...", the
// fastest of them; null when none was measured.
const Row *reference(const Row &row, const std::string &keys, const std::vector<Row> &rows) {
  const Row *fastest = nullptr;
  for (size_t from = 0; from < keys.size();) {
    const size_t bar = std::min(keys.find('|', from), keys.size());
    const std::string key = keys.substr(from, bar - from);
    for (const Row &r : rows)
      if (r.size.name == row.size.name && r.key == key && r.skipped.empty() &&
          (!fastest || r.us < fastest->us))
        fastest = &r;
    from = bar + 1;
  }
  return fastest;
}

Ratios ratios_of(const Row &row, const std::vector<Row> &rows) {
  const auto versus = [&](const std::string &keys) -> double {
    const Row *r = reference(row, keys, rows);
    return r ? r->us / row.us : NAN;
  };
  if (!row.skipped.empty()) return {};
  // copies, latencies, many streams at once, flips and batches are not
  // videoconvert's kind of work
  const bool versus_videoconvert = row.group != "copy" && row.group != "latency" &&
                                   row.group != "streams" && row.group != "renegotiation" &&
                                   row.group != "cputime" && row.group != "batch" &&
                                   row.key != cpu_peer_of(row);
  const Row *peer = reference(row, row.peer, rows);
  return {versus(row.ceiling), versus_videoconvert ? versus(cpu_peer_of(row)) : NAN,
          peer ? peer->us / row.us : NAN, peer ? peer->key : ""};
}

bool is_latency(const Row &row) { return row.group == "latency"; }
bool is_flip(const Row &row) { return row.group == "renegotiation"; }
double fps_of(const Row &row) { return is_latency(row) || is_flip(row) ? NAN : 1e6 / row.us; }
double gbps_of(const Row &row) {
  return is_latency(row) || is_flip(row) ? NAN : row.bytes / row.us / 1e3;
}

std::string number(double value) {  // "-" for NaN, as format_double
  const double a = std::fabs(value);
  return format_double(value, a < 10 ? 2 : a < 1000 ? 1 : 0);
}

std::string ratio_text(double ratio, const std::string &of) {
  if (std::isnan(ratio)) return "-";
  return format_double(ratio, 2) + (of.empty() ? "" : " " + of);
}

std::string csv_field(const std::string &text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_number(double value, int decimals) {
  return std::isnan(value) ? "" : format_double(value, decimals);
}

// The streams rows again, with what N streams at once cost and how late
// their frames are.
void print_streams_table(std::FILE *out, const std::vector<Row> &rows) {
  const char *columns = "%-6s %-5s %-3s %-17s %9s %-13s %15s %9s %9s %8s %8s %7s %8s %8s\n";
  bool heading = false;
  for (const Row &r : rows) {
    if (r.group != "streams" || !r.skipped.empty()) continue;
    if (!heading) {
      std::fprintf(out, "\n== streams: N pipelines at once ==\n");
      std::fprintf(out, columns, "size", "N", "GPU", "upstream", "fps", "x ceiling",
                   "per stream fps", "p50 ms", "p99 ms", "GPU MiB", "pin MiB", "threads",
                   "start ms", "dropped");
    }
    heading = true;
    const Ratios ratios = ratios_of(r, rows);
    const Row::Load &l = r.load;
    const std::string upstream = r.key.substr(8, r.key.find(':', 8) - 8);
    std::fprintf(
        out, columns, r.size.name.c_str(), std::to_string(l.streams).c_str(),
        std::to_string(l.gpus).c_str(), upstream.c_str(), number(fps_of(r)).c_str(),
        ratio_text(std::isnan(ratios.ceiling) ? ratios.peer : ratios.ceiling, "").c_str(),
        (number(l.stream_fps_min) + "-" + number(l.stream_fps_max)).c_str(),
        number(l.latency_p50_us / 1e3).c_str(), number(l.latency_p99_us / 1e3).c_str(),
        number(l.gpu_mib).c_str(), number(l.pinned_mib).c_str(), number(l.threads).c_str(),
        number(l.start_ms).c_str(),
        (std::to_string(l.dropped) + (l.late ? " (" + std::to_string(l.late) + " late)" : ""))
            .c_str());
  }
  if (heading)
    std::fprintf(out,
                 "fps: all streams together; x ceiling: against the row's ceiling (1 GPU) or the "
                 "same streams per GPU on one GPU;\nGPU MiB, pin MiB (pinned host), threads, start "
                 "ms: what the process grew by, per stream; dropped: pushed, never arrived.\n");
}

// The rows of the process's CPU time a frame, against the same pipeline
// without the converter.
void print_cputime_table(std::FILE *out, const std::vector<Row> &rows) {
  const char *columns = "%-6s %-34s %10s %12s %10s\n";
  bool heading = false;
  for (const Row &r : rows) {
    if (r.group != "cputime" || !r.skipped.empty()) continue;
    if (!heading) {
      std::fprintf(out, "\n== the process's CPU time a frame, flat out ==\n");
      std::fprintf(out, columns, "size", "row", "us/frame", "CPU us/frame", "CPU added");
    }
    heading = true;
    const Row *none = reference(r, r.peer, rows);
    std::fprintf(out, columns, r.size.name.c_str(), r.key.c_str(), number(r.us).c_str(),
                 number(r.cpu_us).c_str(),
                 none && none != &r ? number(r.cpu_us - none->cpu_us).c_str() : "-");
  }
  if (heading)
    std::fprintf(out,
                 "CPU added: this row's CPU time a frame less that of the same upstream without a "
                 "converter (identity).\n");
}

// The batch rows again, as issue 51 states its goals: time over the time of
// the copy of the batch's traffic (goal <= 1.3), over NPP's, and the CPU
// time a batch.
void print_batch_table(std::FILE *out, const std::vector<Row> &rows) {
  const char *columns = "%-4s %-9s %9s %13s %9s %15s  %-30s %9s %6s\n";
  bool heading = false;
  for (const Row &r : rows) {
    if (r.group != "batch" || r.key.rfind("batch:", 0) != 0 || !r.skipped.empty() ||
        r.key.find(":frames") != std::string::npos)  // bench/batch_torch.py's half of a peer
      continue;
    if (!heading) {
      std::fprintf(out,
                   "\n== batches: N 1080p NV12 frames on the GPU -> N x 1 x 640 x 640 float16, "
                   "letterboxed ==\n");
      std::fprintf(out, columns, "N", "method", "us/batch", "CPU us/batch", "copy us",
                   "/ copy (<=1.3)", "NPP (faster of two)", "NPP us", "/ NPP");
    }
    heading = true;
    // key: batch:N:method
    const size_t method_at = r.key.find(':', 6);
    const Row *copy = reference(r, r.ceiling, rows), *npp = reference(r, r.peer, rows);
    std::fprintf(
        out, columns, r.key.substr(6, method_at - 6).c_str(), r.key.substr(method_at + 1).c_str(),
        number(r.us).c_str(), number(r.cpu_us).c_str(), copy ? number(copy->us).c_str() : "-",
        copy ? format_double(r.us / copy->us, 2).c_str() : "-", npp ? npp->key.c_str() : "-",
        npp ? number(npp->us).c_str() : "-", npp ? format_double(r.us / npp->us, 2).c_str() : "-");
  }
  if (heading)
    std::fprintf(
        out,
        "/ copy, / NPP: cudagray's time over theirs (below 1: cudagray is faster); copy: a "
        "device copy of the batch's\ntraffic (the source rows read once, the batch "
        "written); CPU: the process's, plain launches.\n");
}

}  // namespace

void record(std::vector<Row> *rows, Row row, const std::function<void(Row &)> &measure) {
  if (measure && row.skipped.empty()) {
    try {
      measure(row);
      if (!(row.us > 0)) row.skipped = "failed: nothing was measured";
    } catch (const Unavailable &e) {
      row.skipped = std::string("n/a: ") + e.what();
    } catch (const std::exception &e) {
      row.skipped = std::string("failed: ") + e.what();
    }
  }
  const std::string what = row.what + (row.format.empty() ? "" : " " + row.format);
  const std::string result =
      !row.skipped.empty() ? row.skipped
      : is_latency(row)    ? number(row.us) + " us latency"
      : is_flip(row)
          ? number(row.us) + " us a flip"
          : number(row.us) + " us/frame" +
                (std::isnan(row.cpu_us) ? "" : ", CPU " + number(row.cpu_us) + " us/frame");
  std::fprintf(stderr, "[%s] %s: %s\n", row.size.name.c_str(), what.c_str(), result.c_str());
  rows->push_back(std::move(row));
}

void print_table(std::FILE *out, const std::vector<Row> &rows) {
  size_t what_width = 4;  // skipped rows may overflow: their text follows anyway
  for (const Row &r : rows)
    if (r.skipped.empty()) what_width = std::max(what_width, r.what.size());
  const int w = static_cast<int>(what_width);
  const char *columns = "%-*s  %-6s %10s %10s %8s  %-22s %9s  %-20s\n";
  std::vector<const Row *> firsts;  // the first row of each size
  for (const Row &r : rows)
    if (std::none_of(firsts.begin(), firsts.end(),
                     [&](const Row *f) { return f->size.name == r.size.name; }))
      firsts.push_back(&r);

  for (const Row *first : firsts) {
    const FrameSize &size = first->size;
    const std::string dims = std::to_string(size.width) + "x" + std::to_string(size.height);
    std::fprintf(out, "\n== %s ==\n",
                 (size.name == dims ? dims : dims + " (" + size.name + ")").c_str());
    std::fprintf(out, columns, w, "what", "format", "us/frame", "fps", "GB/s", "x ceiling",
                 "x vc-all", "x peer");
    for (const Row &r : rows) {
      if (r.size.name != first->size.name) continue;
      if (!r.skipped.empty()) {
        std::fprintf(out, "%-*s  %-6s %s\n", w, r.what.c_str(), r.format.c_str(),
                     r.skipped.c_str());
        continue;
      }
      const Ratios ratios = ratios_of(r, rows);
      std::fprintf(out, columns, w, r.what.c_str(), r.format.c_str(), number(r.us).c_str(),
                   number(fps_of(r)).c_str(), number(gbps_of(r)).c_str(),
                   ratio_text(ratios.ceiling, r.ceiling).c_str(),
                   ratio_text(ratios.videoconvert, "").c_str(),
                   ratio_text(ratios.peer, ratios.peer_key).c_str());
    }
  }

  std::fputs(R"(
us/frame: mean time per frame in steady state (latency rows: median single-frame latency;
renegotiation rows: the wall time one caps flip adds, with frames in flight).
GB/s: input plus GRAY8 output bytes per second (copies: bytes read plus written;
transfers: bytes moved).
x ...: reference time / this time, so above 1 is faster than the reference.
  copy:NB           device-to-device copy of N/2 bytes: the traffic of a kernel row moving N bytes
  raw:pinned        raw CUDA loop, pinned host RGB -> device -> kernel -> pinned GRAY8, 3 streams
  raw:staging       the same, each frame first memcpy'd from pageable memory into pinned staging
  raw:device        the same from RGB frames already on the device: no upload (zero-copy's ceiling)
  raw:latency       raw CUDA, one frame at a time, synchronised
  videoconvert:1    videoconvert with one thread; x vc-all: against videoconvert on all cores
  npp:C3, npp:AC4   NPP nppiRGBToGray_8u_C3C1R / _AC4C1R
  npp:C3:BOX:METHOD:gray-first, :resize-first  NPP's two passes for the scaled kernel rows:
                    nppiRGBToGray then nppiResize_8u_C1R, or nppiResize_8u_C3R (C4R for AC4)
                    then nppiRGBToGray; SUPER for area, LINEAR for bilinear, NN for nearest;
                    a scaled kernel row's peer is the faster order
  npp:luma:BOX:METHOD  NPP nppiResize_8u_C1R of a luma plane (the peer of kernel:Luma:*)
  element:pinned:N  cudagray fed from its pinned pool, max-inflight N (peer of the CUDA-memory rows)
  scaled:*          GRAY8 at 640x360 in system memory: cudagray scaling in the same pass (method
                    area); *-videoscale: cudagray at the source's size, then videoscale n-threads=0;
                    x vc-all: against videoconvertscale n-threads=0 to 640x360
  raw:device:scaled raw CUDA, RGB on the device -> kernel scaling to 640x360 -> pinned GRAY8
  cpu-kernel:RGB    convert_cpu alone on RGB to GRAY8, all cores (ceiling of the other cpu-kernel
                    rows: RGB to GRAY16, RGB scaled to 640x360 by area and bilinear, YUV luma)
  batch:N:METHOD    convert_batch_cuda: N 1080p NV12 frames (luma pitched 2048, on the device) to
                    one Nx1x640x640 float16 batch, letterboxed; us/frame is us a batch; ceiling:
                    a device copy of the batch's traffic (the source rows its taps read, once,
                    plus the batch written); peer: the faster of npp:batch:N:METHOD:uniform
                    (nppiResizeBatch_8u_C1R) and :advanced (_Advanced), each then nppiScale_8u32f
                    and nppiConvert_32f16f over the uint8 batch
  batch:N:METHOD:frames  the kernel of N cudagray elements: convert_cuda of each source into its own
                    640x640 GRAY8 (bench/batch_torch.py adds torch's stack and normalisation)
)",
             out);

  print_streams_table(out, rows);
  print_cputime_table(out, rows);
  print_batch_table(out, rows);

  bool heading = false;
  for (const Row &r : rows) {
    // Routine notes (how kernels were timed, how many frames rotated) stay in
    // the CSV; the table lists those of the ceilings, the element, NPP and
    // anything unusual.
    const bool routine = (r.group == "kernel" || r.group == "cpu" || r.group == "raw") &&
                         r.note.find("warning") == std::string::npos &&
                         r.note.find("no CUDA graph") == std::string::npos;
    if (r.note.empty() || routine || !r.skipped.empty()) continue;
    if (!heading) std::fprintf(out, "\nNotes:\n");
    heading = true;
    std::fprintf(out, "  [%s] %s%s: %s\n", r.size.name.c_str(), r.what.c_str(),
                 r.format.empty() ? "" : (" " + r.format).c_str(), r.note.c_str());
  }
}

void write_csv(const std::string &path, const std::vector<Row> &rows) {
  std::ofstream csv(path);
  if (!csv) throw std::runtime_error("cannot write " + path);
  csv << "size,width,height,group,key,what,format,frames,us_per_frame,fps,gb_per_s,"
         "ceiling,x_ceiling,x_videoconvert_all,peer,x_peer,status,streams,gpus,stream_fps_min,"
         "stream_fps_max,latency_p50_us,latency_p99_us,gpu_mib_per_stream,pinned_mib_per_stream,"
         "threads_per_stream,process_threads,start_ms_per_stream,dropped,late,cpu_us_per_frame,"
         "note\n";
  for (const Row &r : rows) {
    const bool ok = r.skipped.empty();
    const Ratios ratios = ratios_of(r, rows);
    csv << csv_field(r.size.name) << ',' << r.size.width << ',' << r.size.height << ',' << r.group
        << ',' << r.key << ',' << csv_field(r.what) << ',' << r.format << ','
        << (ok ? std::to_string(r.frames) : "") << ',' << (ok ? csv_number(r.us, 3) : "") << ','
        << (ok ? csv_number(fps_of(r), 2) : "") << ',' << (ok ? csv_number(gbps_of(r), 3) : "")
        << ',' << r.ceiling << ',' << csv_number(ratios.ceiling, 4) << ','
        << csv_number(ratios.videoconvert, 4) << ','
        << (ratios.peer_key.empty() ? r.peer : ratios.peer_key) << ',' << csv_number(ratios.peer, 4)
        << ',' << csv_field(ok ? "ok" : r.skipped) << ',';
    const Row::Load &l = r.load;
    if (l.streams > 0 && ok)
      csv << l.streams << ',' << l.gpus << ',' << csv_number(l.stream_fps_min, 2) << ','
          << csv_number(l.stream_fps_max, 2) << ',' << csv_number(l.latency_p50_us, 1) << ','
          << csv_number(l.latency_p99_us, 1) << ',' << csv_number(l.gpu_mib, 2) << ','
          << csv_number(l.pinned_mib, 2) << ',' << csv_number(l.threads, 2) << ','
          << l.process_threads << ',' << csv_number(l.start_ms, 2) << ',' << l.dropped << ','
          << l.late << ',';
    else
      csv << std::string(13, ',');
    csv << (ok ? csv_number(r.cpu_us, 2) : "") << ',' << csv_field(r.note) << '\n';
  }
  if (!csv.flush()) throw std::runtime_error("cannot write " + path);
}

}  // namespace bench
