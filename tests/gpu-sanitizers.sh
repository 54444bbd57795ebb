#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The GPU half of issue 5's checks, for a machine with an NVIDIA GPU:
#   1. the reliability and stress tests at full scale, CUDA cases included;
#   2. compute-sanitizer memcheck (with leak check), racecheck, synccheck and
#      initcheck over every CUDA test: test_cuda (and its every-layout case
#      alone, as "formats", for a quick run over the formats), test_cuda_memory,
#      test_cuda_output (but its 10^4-frame and 8K cases), test_faults, the
#      CUDA cases of test_element, test_reliability and
#      test_stress (stress at 1/20: the sanitizers slow every CUDA call down
#      by 10-100x).
#
#   tests/gpu-sanitizers.sh BUILD_DIR LOG_DIR
#
# BUILD_DIR is a build configured with -Dcuda=enabled. Each run writes
# LOG_DIR/<tool>-<name>.log (the sanitizer's report and the test output) and
# one summary line; the last line is "N passed, N failed", a run passing when
# the test binary passes and the sanitizer reports 0 errors. On a machine
# without GStreamer, point CUDAGRAY_GST_ENV at a GStreamer bundle's env.sh
# (shared/gpu/bundle-gstreamer makes one); CUDAGRAY_SANITIZER overrides the
# compute-sanitizer to use. The CUDA cases skip themselves without a GPU, and
# this script then says so rather than passing. To split the work over
# shorter runs: CUDAGRAY_GPU_PLAIN=0 skips part 1, CUDAGRAY_SANITIZERS="memcheck"
# picks the tools of part 2 (default: memcheck racecheck synccheck initcheck;
# empty skips part 2), CUDAGRAY_SANITIZE_TESTS picks the tests (default: cuda
# cuda_memory cuda_output element reliability stress faults). test_faults compares free
# device memory before and after, so it must not share the GPU with another
# run.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: tests/gpu-sanitizers.sh BUILD_DIR LOG_DIR}
LOGS=${2:?usage: tests/gpu-sanitizers.sh BUILD_DIR LOG_DIR}
BUILD=$(cd "$BUILD" && pwd)
mkdir -p "$LOGS"
LOGS=$(cd "$LOGS" && pwd)
[ -n "${CUDAGRAY_GST_ENV:-}" ] && source "$CUDAGRAY_GST_ENV"
SANITIZER=${CUDAGRAY_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
export GST_PLUGIN_PATH_1_0="$BUILD/plugin" GST_REGISTRY_1_0="${TMPDIR:-/tmp}/cudagray-gpu-registry.bin"
export CUDAGRAY_SOURCE_DIR="$PWD" GST_DEBUG=${GST_DEBUG:-0}
T="$BUILD/tests"

nvidia-smi -L 2>&1 | tee "$LOGS/gpus.txt"
"$SANITIZER" --version 2>&1 | tail -n 1 | tee -a "$LOGS/gpus.txt"

passed=0 failed=0
# run TOOL NAME [ENV=VALUE...] -- COMMAND...    (TOOL "plain": no sanitizer)
run() {
  local tool=$1 name=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local log="$LOGS/$tool-$name.log" start status
  start=$(date +%s)
  if [ "$tool" = plain ]; then
    env "${envs[@]}" "$@" >"$log" 2>&1
  else
    local extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    env "${envs[@]}" "$SANITIZER" --tool "$tool" "${extra[@]}" --error-exitcode 97 \
      --target-processes all --print-limit 100 "$@" >"$log" 2>&1
  fi
  status=$?
  local summary tests skipped
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log" | tail -n 2 | tr '\n' ' ')
  tests=$(grep -E "^\[  (PASSED|FAILED) " "$log" | tr '\n' ' ')
  skipped=$(grep -oE "^\[  SKIPPED \] [0-9]+" "$log" | grep -oE "[0-9]+$" || echo 0)
  echo "$tool $name: exit $status, $(($(date +%s) - start)) s; ${summary:-no sanitizer summary}; $tests; $skipped skipped"
  grep -E "^figure:" "$log" | sed 's/^/    /'
  if [ $status -eq 0 ] && ! grep -q "no usable CUDA device" "$log"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

# 1. Full scale, no sanitizer: the figures for docs/reliability.md.
if [ "${CUDAGRAY_GPU_PLAIN:-1}" != 0 ]; then
  run plain reliability -- "$T/test_reliability"
  run plain stress -- "$T/test_stress"
  run plain faults -- "$T/test_faults"
fi

# 2. Sanitizers over the CUDA tests. GpuMemory takes the whole device on
# purpose and is left to the plain run.
ELEMENT_CUDA='*cuda*:CudaBackend.*:PinnedPool.*:InFlightAuto.*:TwoGpus.*'
sanitize() {  # TOOL NAME
  case $2 in
    cuda) run "$1" cuda -- "$T/test_cuda" ;;
    formats) run "$1" formats -- "$T/test_cuda" --gtest_filter='AllLayouts/CudaKernel.BitIdenticalToCpuIncludingPadding/*' ;;
    cuda_memory) run "$1" cuda_memory -- "$T/test_cuda_memory" ;;
    cuda_output) run "$1" cuda_output -- "$T/test_cuda_output" --gtest_filter='-*PoolIsReused*:*EightK*' ;;
    element) run "$1" element CUDAGRAY_TEST_SEED=1 -- "$T/test_element" --gtest_filter="$ELEMENT_CUDA" ;;
    reliability) run "$1" reliability -- "$T/test_reliability" --gtest_filter='*cuda' ;;
    stress) run "$1" stress CUDAGRAY_STRESS_SCALE=0.05 -- "$T/test_stress" --gtest_filter='*cuda' ;;
    faults) run "$1" faults -- "$T/test_faults" ;;
    *) echo "unknown test '$2' in CUDAGRAY_SANITIZE_TESTS" >&2; failed=$((failed + 1)) ;;
  esac
}
for tool in ${CUDAGRAY_SANITIZERS-memcheck racecheck synccheck initcheck}; do
  for name in ${CUDAGRAY_SANITIZE_TESTS-cuda cuda_memory cuda_output element reliability stress faults}; do
    sanitize "$tool" "$name"
  done
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
