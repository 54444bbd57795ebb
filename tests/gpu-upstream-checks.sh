#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Two facts about GStreamer's own CUDA elements that docs/troubleshooting.md
# states, checked on a machine with an NVIDIA GPU
# (cudagray is not in any of these pipelines):
#   1. whether cudaconvert, cudascale and cudacompositor register, and the
#      NVRTC message GStreamer logs when they do not;
#   2. whether several `nvh264dec ! cudadownload ! cudaupload` pipelines at
#      once hand over the decoder's frames unchanged, linked directly and with
#      a queue between cudadownload and cudaupload.
#
#   tests/gpu-upstream-checks.sh WORK_DIR [PIPELINES]
#
# Source a GStreamer bundle's env.sh first on a machine without GStreamer.
# Each run's raw output is compared (md5) with one lone
# `nvh264dec ! cudadownload` of the same file. Prints one line per check.
set -uo pipefail
WORK=${1:?usage: tests/gpu-upstream-checks.sh WORK_DIR [PIPELINES]}
PARALLEL=${2:-4}
mkdir -p "$WORK"
export GST_REGISTRY_1_0="$WORK/registry.bin"

gst-launch-1.0 --version | head -n 1
for element in cudaconvert cudascale cudacompositor; do
  if gst-inspect-1.0 "$element" >/dev/null 2>&1; then
    echo "$element: registered"
  else
    echo "$element: NOT registered"
  fi
done
rm -f "$WORK/registry.bin"
GST_DEBUG=nvcodec:3,cuda*:3 gst-inspect-1.0 nvcodec 2>&1 |
  grep -iE 'nvrtc|compute_|compile' | sed 's/\x1b\[[0-9;]*m//g' | head -n 5

# 300 frames of 1280x720 H.264 with motion, so that a wrong or stale frame
# changes the output.
timeout 120 gst-launch-1.0 -q videotestsrc num-buffers=300 pattern=ball \
  ! video/x-raw,width=1280,height=720,format=I420,framerate=30/1 \
  ! x264enc speed-preset=ultrafast key-int-max=30 ! h264parse \
  ! matroskamux ! filesink location="$WORK/in.mkv" || { echo "could not encode the H.264 file"; exit 1; }

decode() {  # $1: output file, $2: elements after cudadownload
  timeout 120 gst-launch-1.0 -q filesrc location="$WORK/in.mkv" ! matroskademux ! h264parse \
    ! nvh264dec ! cudadownload $2 ! video/x-raw,format=NV12 ! filesink location="$1"
}
decode "$WORK/reference.nv12" "" || { echo "nvh264dec ! cudadownload failed"; exit 1; }
reference=$(md5sum <"$WORK/reference.nv12")

run_case() {  # $1: name, $2: pipelines at once, $3: elements after cudadownload
  local i wrong=0
  for ((i = 0; i < $2; i++)); do decode "$WORK/$1-$i.nv12" "$3" & done
  wait
  for ((i = 0; i < $2; i++)); do
    [ "$(md5sum <"$WORK/$1-$i.nv12")" = "$reference" ] || wrong=$((wrong + 1))
  done
  echo "$1: $wrong of $2 outputs differ from the lone decode"
}
for round in 1 2 3; do
  run_case "direct-alone-$round" 1 "! cudaupload ! cudadownload"
  run_case "direct-parallel-$round" "$PARALLEL" "! cudaupload ! cudadownload"
  run_case "queued-parallel-$round" "$PARALLEL" "! queue ! cudaupload ! cudadownload"
done
rm -f "$WORK"/*.nv12
