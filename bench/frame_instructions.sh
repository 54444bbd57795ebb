#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The element's own work per frame, in CPU instructions (valgrind's callgrind),
# which do not vary from run to run as times do: tiny frames (4x4) through
#   cudagray backend=cpu           (queue, QoS, mapping, output task, convert)
#   cudagray passthrough (GRAY8)   (queue and output task alone)
#   videoconvert                   (the peer, in the same run)
# each run with N and 6N frames, so that start-up cancels out:
# instructions per frame = (I(6N) - I(N)) / 5N. No GPU needed.
#
#   bench/frame_instructions.sh [PLUGIN_DIR...]   (default build/plugin; several
#                                                  plugin builds compare side by side)
# Needs valgrind and gst-launch-1.0.
set -uo pipefail
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
frames=2000
[ $# -gt 0 ] || set -- build/plugin
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# instructions PLUGIN_DIR N ELEMENTS...: callgrind's total for N frames
instructions() {
  local plugins=$1 n=$2
  shift 2
  GST_PLUGIN_PATH_1_0=$plugins GST_REGISTRY_1_0="$scratch/registry-$(echo "$plugins" | md5sum | cut -c1-8).bin" \
    valgrind --tool=callgrind --callgrind-out-file="$scratch/out" gst-launch-1.0 -q \
    fakesrc num-buffers="$n" sizetype=fixed sizemax=64 filltype=nothing ! "$@" ! fakesink sync=false 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

# row NAME PLUGIN_DIR ELEMENTS...: instructions per frame
row() {
  local name=$1 plugins=$2
  shift 2
  local small large
  small=$(instructions "$plugins" $frames "$@")
  large=$(instructions "$plugins" $((6 * frames)) "$@")
  if [ -z "$small" ] || [ -z "$large" ]; then
    printf '%-58s failed\n' "$name"
    return
  fi
  printf '%-58s %8d instructions a frame\n' "$name" $(((large - small) / (5 * frames)))
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(gst-launch-1.0 --version | sed -n 2p)"
rgbx=video/x-raw,format=RGBx,width=4,height=4,framerate=0/1
gray=video/x-raw,format=GRAY8,width=4,height=4,framerate=0/1
for plugins in "$@"; do
  plugins=$(cd "$plugins" && pwd)
  row "cudagray backend=cpu, RGBx to GRAY8 ($plugins)" "$plugins" \
    "$rgbx" ! cudagray backend=cpu ! video/x-raw,format=GRAY8
  row "cudagray passthrough, GRAY8 ($plugins)" "$plugins" "$gray" ! cudagray backend=cpu
done
row "videoconvert, RGBx to GRAY8" "$1" "$rgbx" ! videoconvert ! video/x-raw,format=GRAY8
