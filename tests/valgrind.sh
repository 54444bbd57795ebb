#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# valgrind memcheck over the CPU-backend tests: element, formats (every
# format; not the Bayer cases, whose bayer2rgb reads outside its frame at
# small widths, a GStreamer bug valgrind would report), reliability, stress
# (at 1/10 of its counts), no_gpu and the fuzz corpus replay.
#
#   tests/valgrind.sh [BUILD_DIR] [LOG_DIR]     (defaults: build, BUILD_DIR/valgrind)
#
# Each binary runs under memcheck with --leak-check=full; definite, indirect
# and possible leaks and every memory error count (valgrind's exit status 1
# when any is found). Suppressions: GLib's own file (glib.supp, from
# libglib2.0-dev) and tests/valgrind.supp (one-time allocations of GStreamer
# and GLib, which Debian does not ship a suppression file for). Each run's
# log is LOG_DIR/<name>.log; the last line printed is "N passed, N failed".
# Needs valgrind (apt-get install valgrind); takes 10 to 20 minutes on 2 cores.
# CUDA cases skip themselves without a GPU; run this on a machine without
# one (or with CUDA_VISIBLE_DEVICES= ), since valgrind cannot follow the GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
LOGS=${2:-$BUILD/valgrind}
mkdir -p "$LOGS"
command -v valgrind >/dev/null || { echo "valgrind is not installed: apt-get install valgrind" >&2; exit 2; }
GLIB_SUPP=/usr/share/glib-2.0/valgrind/glib.supp
SUPPS=(--suppressions="$PWD/tests/valgrind.supp")
[ -f "$GLIB_SUPP" ] && SUPPS+=(--suppressions="$GLIB_SUPP")

export GST_PLUGIN_PATH_1_0="$PWD/$BUILD/plugin" GST_REGISTRY_1_0="$PWD/$BUILD/tests/registry.bin"
export GST_DEBUG=0 G_SLICE=always-malloc G_DEBUG=gc-friendly CUDAGRAY_STRESS_SCALE=0.1
export CUDAGRAY_SOURCE_DIR="$PWD" CUDA_VISIBLE_DEVICES=
# The registry is made outside valgrind, once.
"$BUILD/tests/test_element" --gtest_filter=Properties.Defaults >/dev/null 2>&1

VALGRIND=(valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible
          --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 --num-callers=40
          --gen-suppressions=all "${SUPPS[@]}")
# name, then the command
RUNS=(
  "element|$BUILD/tests/test_element"
  "formats|$BUILD/tests/test_formats --gtest_filter=-Phases/Bayer.*"
  "reliability|$BUILD/tests/test_reliability"
  "stress|$BUILD/tests/test_stress"
  "no_gpu|$BUILD/tests/test_no_gpu"
  "fuzz_corpus|$BUILD/tests/test_fuzz_corpus tests/fuzz/corpus"
)
passed=0 failed=0
for run in "${RUNS[@]}"; do
  name=${run%%|*}
  read -r -a cmd <<<"${run#*|}"
  start=$(date +%s)
  "${VALGRIND[@]}" --log-file="$LOGS/$name.log" "${cmd[@]}" >"$LOGS/$name.out" 2>&1
  status=$?
  summary=$(grep -E "ERROR SUMMARY" "$LOGS/$name.log" | tail -n 1 | sed 's/^==[0-9]*== //')
  leaks=$(grep -E "definitely lost|indirectly lost|possibly lost" "$LOGS/$name.log" | sed 's/^==[0-9]*== *//' | tr '\n' ';')
  tests=$(grep -E "^\[  (PASSED|FAILED) |inputs replayed" "$LOGS/$name.out" | tr '\n' ' ')
  echo "$name: exit $status, $(($(date +%s) - start)) s; $summary; ${leaks:-no leaks}; $tests"
  if [ $status -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
