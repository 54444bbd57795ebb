#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every GoogleTest binary of a build, for a GPU machine (where the CUDA cases
# run instead of skipping): one line per binary, each skip with its reason,
# and a last line "N passed, N failed, N skipped".
#
#   tests/gpu-suite.sh BUILD_DIR LOG_DIR [TEST_NAME...]
#
# TEST_NAME picks binaries (default: every tests/test_* program that speaks
# gtest, the examples aside, which need Python's gi; meson's tests/*.p object
# folders are not programs). On a machine without GStreamer,
# source a GStreamer bundle's env.sh first. Each binary gets 590 s. Configure
# BUILD_DIR as CI does (-Dfault-injection=enabled), or the fault cases skip.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:?usage: tests/gpu-suite.sh BUILD_DIR LOG_DIR [TEST_NAME...]}" && pwd)
LOGS=${2:?usage: tests/gpu-suite.sh BUILD_DIR LOG_DIR [TEST_NAME...]}
shift 2
mkdir -p "$LOGS"
LOGS=$(cd "$LOGS" && pwd)
export GST_PLUGIN_PATH_1_0="$BUILD/plugin" GST_REGISTRY_1_0="${TMPDIR:-/tmp}/cudagray-suite-registry.bin"
export CUDAGRAY_SOURCE_DIR="$PWD"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for t in "$BUILD"/tests/test_*; do
    n=${t##*/test_}
    [ -f "$t" ] && [ -x "$t" ] && [ "$n" != examples ] && [ "$n" != fuzz_corpus ] && names+=("$n")
  done
fi
# Stopped itself (a timeout around the suite), it stops the binary running:
# one left behind would share the GPU with whatever runs next.
child=
trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 143' TERM INT
run() {  # LOG COMMAND...: runs it as the one child, returns its status
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  child=$!
  wait "$child"
  local status=$?
  child=
  return $status
}
for n in "${names[@]}"; do
  start=$(date +%s)
  run "$LOGS/$n.log" timeout 590 "$BUILD/tests/test_$n" --gtest_output="xml:$LOGS/$n.xml"
  echo "test_$n: exit $? in $(($(date +%s) - start)) s"
done
# 1.24+ decoders allocate stream-ordered when asked: the parallel decode
# again that way (the element must read after the decoder's stream there too)
for n in "${names[@]}"; do
  [ "$n" = cuda_memory ] || continue
  start=$(date +%s)
  run "$LOGS/cuda_memory_stream_ordered.log" env GST_CUDA_ENABLE_STREAM_ORDERED_ALLOC=1 \
    timeout 590 "$BUILD/tests/test_cuda_memory" --gtest_filter='*ParallelDecoders*' \
    --gtest_output="xml:$LOGS/cuda_memory_stream_ordered.xml"
  echo "test_cuda_memory (stream-ordered allocation): exit $? in $(($(date +%s) - start)) s"
  names+=(cuda_memory_stream_ordered)
done
python3 - "$LOGS" "${names[@]}" <<'PY'
import sys, os, xml.etree.ElementTree as ET
logs, names = sys.argv[1], sys.argv[2:]
passed = failed = skipped = 0
for n in names:
    path = os.path.join(logs, n + ".xml")
    if not os.path.exists(path):
        print(f"test_{n}: no report (crashed or timed out)"); failed += 1; continue
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        if case.find("failure") is not None:
            failed += 1; print(f"FAILED {name}")
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
            s = case.find("skipped")
            # gtest's message is "file:line\nreason": the reason
            reason = ((s.get("message") if s is not None else "") or "").split("\n", 1)[-1]
            print(f"SKIPPED {name}: {reason}".strip())
        else:
            passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
