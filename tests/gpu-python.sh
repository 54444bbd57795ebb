#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Python module on a GPU machine (issue 32): its tests with PyTorch and
# CuPy, the performance targets, and the examples, each step under a time
# limit; everything goes to LOG (default BUILD_DIR/gpu-python.log) and the
# last line is "N steps passed, N failed".
#
#   tests/gpu-python.sh BUILD_DIR [LOG]
#
# BUILD_DIR: a build of this checkout made on the build machine (the module,
# build/python/cudagray.abi3.so, is on Python's stable ABI and loads in the
# GPU machine's Python 3.12). On a machine without GStreamer, source the
# GStreamer 1.22 bundle's env.sh first. PYTHON picks the python3 that has
# torch and cupy (default: python3 on PATH). Run it with nothing else on the
# GPU: a test reads the device's free memory to see that none leaks.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:?usage: tests/gpu-python.sh BUILD_DIR [LOG]}" && pwd)
LOG=${2:-$BUILD/gpu-python.log}
PYTHON=${PYTHON:-python3}
export GST_PLUGIN_PATH_1_0="$BUILD/plugin" PYTHONPATH="$BUILD/python"
export GST_REGISTRY_1_0="${TMPDIR:-/tmp}/cudagray-python-registry.bin"
export CUDAGRAY_APPSINK_PULL="$BUILD/tests/appsink-pull"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
passed=0 failed=0
step() {  # LIMIT_S COMMAND...: runs it under timeout, counts its status
  local limit=$1 start status
  shift
  echo "== $* (limit ${limit} s)"
  start=$(date +%s)
  timeout "$limit" "$@"
  status=$?
  echo "== exit $status in $(($(date +%s) - start)) s"
  if [ $status -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
{
  step 60 "$PYTHON" -c 'import sys, cudagray, torch, cupy; print(sys.version); print(cudagray.__file__, torch.__version__, cupy.__version__, torch.cuda.get_device_name())'
  # --exists alone also wants the plugin's version to be at least
  # GStreamer's own (1.22), which cudagray's (0.1) is not
  step 60 gst-inspect-1.0 --exists --atleast-version=0.0.0 cudagray
  step 300 "$PYTHON" tests/test_python.py -v
  step 300 "$PYTHON" tests/test_consumer_streams.py -v
  step 300 "$PYTHON" tests/test_batch_python.py -v
  step 120 gst-launch-1.0 -q videotestsrc num-buffers=600 pattern=ball ! \
    video/x-raw,format=I420,width=1920,height=1080 ! x264enc speed-preset=ultrafast ! h264parse ! \
    mp4mux ! filesink location="$WORK/ball.mp4"
  step 120 "$PYTHON" examples/torch_gray.py "$WORK/ball.mp4"
  step 120 "$PYTHON" examples/torch_gray.py "$WORK/ball.mp4" --size source
  step 120 "$PYTHON" examples/cupy_gray.py 300
  step 120 "$PYTHON" examples/torch_batch.py "$WORK/ball.mp4" "$WORK/ball.mp4" "$WORK/ball.mp4" "$WORK/ball.mp4" --size 640x640
  # the timed step last: a run cut short loses it, not the checks
  step 400 "$PYTHON" tests/python_perf.py
  echo "$passed steps passed, $failed failed"
} 2>&1 | tee "$LOG"
