#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Whole pipelines for the formats real producers hand over, timed in one run
# so that rows compare as ratios (docs/performance-log.md, "Formats"):
#   - 10-bit HEVC through NVDEC read in place against the 8-bit zero-copy
#     row, and against decoding to system memory and videoconvert;
#   - YUY2 (webcams) against I420 in system memory, both backends;
#   - Bayer straight in against bayer2rgb in front of cudagray, and
#     bayer2rgb ! videoconvert on every core;
#   - the CPU backend on the new layouts.
# Each row runs its pipeline to the end (fakesink sync=false) and reports the
# wall time per frame, best of 3 runs, start-up included (short runs: compare
# rows, not absolute figures). Rows whose elements are missing (no NVDEC, no
# x265enc) say so.
#
#   bench/format_pipelines.sh [FRAMES] [CSV] [GROUPS]
#
# FRAMES defaults to 300, CSV to bench-formats.csv; GROUPS picks rows by
# group, comma-separated: hevc, yuy2, cpu, bayer (default: all four).
#
# Needs cudagray on GST_PLUGIN_PATH (or installed); writes its clips to a
# scratch directory that it removes.
set -uo pipefail
frames=${1:-300}
csv=${2:-bench-formats.csv}
groups=",${3:-hevc,yuy2,cpu,bayer},"
wanted() { [[ $groups == *",$1,"* ]]; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "key,what,ms_per_frame,versus,ratio" >"$csv"

have() { gst-inspect-1.0 "$1" >/dev/null 2>&1; }

declare -A ms
# row KEY WHAT VERSUS PIPELINE...: best of 3 wall times of the pipeline, per frame
row() {
  local key=$1 what=$2 versus=$3
  shift 3
  local best="" t start
  for _ in 1 2 3; do
    start=$(date +%s%N)
    if ! timeout 120 gst-launch-1.0 -q "$@" >"$scratch/log" 2>&1; then
      printf '%-28s %s: failed: %s\n' "$key" "$what" "$(tail -1 "$scratch/log")"
      echo "$key,$what,,," >>"$csv"
      return
    fi
    t=$((($(date +%s%N) - start) / 1000))
    [ -z "$best" ] || [ "$t" -lt "$best" ] && best=$t
  done
  ms[$key]=$(awk -v t="$best" -v n="$frames" 'BEGIN { printf "%.3f", t / n / 1000 }')
  local ratio=""
  [ -n "$versus" ] && [ -n "${ms[$versus]:-}" ] &&
    ratio=$(awk -v a="${ms[$key]}" -v b="${ms[$versus]}" 'BEGIN { printf "%.2f", a / b }')
  printf '%-28s %8s ms/frame  %s%s\n' "$key" "${ms[$key]}" "$what" "${ratio:+  (x$ratio of $versus)}"
  echo "$key,$what,${ms[$key]},$versus,$ratio" >>"$csv"
}
skip() { printf '%-28s skipped: %s\n' "$1" "$2"; echo "$1,skipped: $2,,," >>"$csv"; }

size="width=1920,height=1080,framerate=30/1"
sink="fakesink sync=false"

# --- 10-bit HEVC through NVDEC
if ! wanted hevc; then
  :
elif have nvh265dec && have x265enc; then
  for depth in 8 10; do
    raw=$([ $depth = 8 ] && echo I420 || echo I420_10LE)
    gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=ball ! \
      "video/x-raw,format=$raw,$size" ! x265enc speed-preset=ultrafast key-int-max=30 ! \
      h265parse ! matroskamux ! filesink location="$scratch/hevc$depth.mkv"
  done
  decode() { echo "filesrc location=$scratch/hevc$1.mkv ! matroskademux ! h265parse ! nvh265dec"; }
  row hevc8:decode "8-bit HEVC, nvh265dec alone" "" $(decode 8) ! $sink
  row hevc10:decode "10-bit HEVC, nvh265dec alone" "" $(decode 10) ! $sink
  row hevc8:zero-copy "8-bit HEVC, nvh265dec ! cudagray (NV12 in place)" hevc8:decode \
    $(decode 8) ! cudagray ! $sink
  row hevc10:zero-copy "10-bit HEVC, nvh265dec ! cudagray (P010 in place)" hevc8:zero-copy \
    $(decode 10) ! cudagray ! $sink
  row hevc10:zero-copy:gray16 "10-bit HEVC, nvh265dec ! cudagray, GRAY16_LE" hevc10:zero-copy \
    $(decode 10) ! cudagray ! video/x-raw,format=GRAY16_LE ! $sink
  row hevc10:videoconvert "10-bit HEVC, nvh265dec ! cudadownload ! videoconvert ! cudagray" \
    hevc10:zero-copy $(decode 10) ! cudadownload ! videoconvert ! video/x-raw,format=I420 ! \
    cudagray ! $sink
else
  skip hevc "nvh265dec or x265enc not available"
fi

# --- YUY2 (webcams) against I420, system memory: random frames made once
# into a file (in the page cache after the first run), read and parsed
frozen() {
  local file=$scratch/$1.raw nick
  nick=$(echo "$1" | tr 'A-Z_' 'a-z-')
  [ -f "$file" ] || gst-launch-1.0 -q videotestsrc num-buffers="$frames" pattern=snow ! \
    "video/x-raw,format=$1,$size" ! filesink location="$file"
  echo "filesrc location=$file ! rawvideoparse format=$nick width=1920 height=1080 framerate=30/1"
}
wanted yuy2 && for backend in cuda cpu; do
  row "I420:$backend" "I420 1080p, system memory, backend=$backend" "" \
    $(frozen I420) ! cudagray backend=$backend ! $sink
  row "YUY2:$backend" "YUY2 1080p, system memory, backend=$backend" "I420:$backend" \
    $(frozen YUY2) ! cudagray backend=$backend ! $sink
done
wanted yuy2 && row "source" "the source alone (file, rawvideoparse)" "" $(frozen I420) ! $sink

# --- the CPU backend on the new layouts, against videoconvert to GRAY8
wanted cpu && for format in UYVY v210 P010_10LE I420_10LE Y444_16LE GBR_12LE BGR10A2_LE GRAY16_BE; do
  row "$format:videoconvert" "$format 1080p, videoconvert (all cores) to GRAY8" "" \
    $(frozen $format) ! videoconvert n-threads=0 ! video/x-raw,format=GRAY8 ! $sink
  row "$format:cpu" "$format 1080p, cudagray backend=cpu" "$format:videoconvert" \
    $(frozen $format) ! cudagray backend=cpu ! $sink
  row "$format:cuda" "$format 1080p, cudagray backend=cuda" "$format:videoconvert" \
    $(frozen $format) ! cudagray backend=cuda ! $sink
done

# --- Bayer: the mosaic made by rgb2bayer from one frozen ARGB frame, in
# every row (the "bayer:source" row is that cost alone)
if ! wanted bayer; then
  :
elif have bayer2rgb && have rgb2bayer; then
  mosaic() { echo "$(frozen ARGB) ! rgb2bayer ! video/x-bayer,format=rggb"; }
  row bayer:source "rgb2bayer alone" "" $(mosaic) ! $sink
  row bayer:cudagray "cudagray on the mosaic" "" $(mosaic) ! cudagray ! $sink
  row bayer:bayer2rgb+cudagray "bayer2rgb ! cudagray" bayer:cudagray \
    $(mosaic) ! bayer2rgb ! video/x-raw,format=RGBx ! cudagray ! $sink
  row bayer:bayer2rgb+videoconvert "bayer2rgb ! videoconvert (all cores)" bayer:cudagray \
    $(mosaic) ! bayer2rgb ! videoconvert n-threads=0 ! video/x-raw,format=GRAY8 ! $sink
else
  skip bayer "bayer2rgb or rgb2bayer not available"
fi
echo "CSV: $csv"
