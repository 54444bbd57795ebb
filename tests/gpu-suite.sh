#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every GoogleTest binary of a build, for a GPU machine (where the CUDA cases
# run instead of skipping): one line per binary (or shard), each skip with
# its reason, and a last line "N passed, N failed, N skipped".
#
#   tests/gpu-suite.sh [-j JOBS] BUILD_DIR LOG_DIR [TEST_NAME...]
#
# TEST_NAME picks binaries (default: every tests/test_* program that speaks
# gtest, the examples aside, which need Python's gi; meson's tests/*.p object
# folders are not programs). On a machine without GStreamer,
# source a GStreamer bundle's env.sh first. Each binary (or shard) gets
# 590 s. Configure BUILD_DIR as CI does (-Dfault-injection=enabled), or the
# fault cases skip.
#
# -j JOBS cuts every binary into JOBS shards (GoogleTest's
# GTEST_TOTAL_SHARDS) and runs JOBS shards at once, so that the suite fits
# a machine's time limit (one binary after the other, it takes about half
# an hour on an H100 host). Binaries that read the whole device's free
# memory (reliability, faults) run afterwards, alone and whole.
# Stream-ordered allocation's decoder cases run as one more shard.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
usage="usage: tests/gpu-suite.sh [-j JOBS] BUILD_DIR LOG_DIR [TEST_NAME...]"
jobs=1
if [ "${1:-}" = -j ]; then
  jobs=${2:?$usage}
  [[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "$usage" >&2; exit 2; }
  shift 2
fi
BUILD=$(cd "${1:?$usage}" && pwd)
LOGS=${2:?$usage}
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
alone=()   # read the device's free memory: nothing else may allocate meanwhile
shared=()
for n in "${names[@]}"; do
  case $n in reliability | faults) alone+=("$n") ;; *) shared+=("$n") ;; esac
done

# One report: NAME is the report's name (its .log and .xml), then the
# environment and arguments of the binary's run. Stopped itself (a timeout
# around the suite), it stops the binary: one left behind would share the
# GPU with whatever runs next.
report() {
  local name=$1 binary=$2
  shift 2
  local start child
  start=$(date +%s)
  trap '[ -n "${child:-}" ] && kill "$child" 2>/dev/null; exit 143' TERM INT
  env "$@" timeout 590 "$BUILD/tests/test_$binary" --gtest_output="xml:$LOGS/$name.xml" \
    >"$LOGS/$name.log" 2>&1 &
  child=$!
  wait "$child"
  echo "test_$binary${name#"$binary"}: exit $? in $(($(date +%s) - start)) s"
}

# The shards, JOBS at a time: each runs in a subshell of its own, whose
# pid is kept so that a stop reaches it.
reports=()
running=()
trap 'kill "${running[@]}" 2>/dev/null; exit 143' TERM INT
start_report() {
  if [ ${#running[@]} -ge "$jobs" ]; then
    wait -n
    local alive=()
    for pid in "${running[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    running=("${alive[@]}")
  fi
  reports+=("$1")
  report "$@" &
  running+=($!)
}
for n in "${shared[@]}"; do
  if [ "$jobs" -eq 1 ]; then
    start_report "$n" "$n"
  else
    for ((i = 0; i < jobs; i++)); do
      start_report "$n.shard$i" "$n" GTEST_TOTAL_SHARDS="$jobs" GTEST_SHARD_INDEX="$i"
    done
  fi
  # 1.24+ decoders allocate stream-ordered when asked: the parallel decode
  # again that way (the element must read after the decoder's stream there too)
  if [ "$n" = cuda_memory ]; then
    start_report cuda_memory_stream_ordered cuda_memory GST_CUDA_ENABLE_STREAM_ORDERED_ALLOC=1 \
      GTEST_FILTER='*ParallelDecoders*'
  fi
done
wait
running=()
jobs=1  # one at a time from here
for n in "${alone[@]}"; do start_report "$n" "$n"; done
wait
python3 - "$LOGS" "${reports[@]}" <<'PY'
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
