#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/gpu-suite.sh, the GPU machine's whole-suite runner, on binaries
# that run anywhere: cut into shards (-j) it counts what it counts whole,
# a binary that leaves no report is a failure, and a bad -j is refused.
# Prints TAP for meson test.
#
#   test_gpu_suite.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 source=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
same() {  # same NAME GOT WANTED
  n=$((n + 1))
  if [[ $2 == "$3" ]]; then
    echo "ok $n - $1"
  else
    echo "not ok $n - $1"
    echo "# got '$2', want '$3'"
  fi
}

whole=$("$source/tests/gpu-suite.sh" "$build" "$tmp/whole" frame_queue format_table 2>&1 | tail -n 1)
sharded=$("$source/tests/gpu-suite.sh" -j 3 "$build" "$tmp/sharded" frame_queue format_table 2>&1 |
  tail -n 1)
same "three shards count what the whole binaries count" "$sharded" "$whole"
[[ $whole =~ ^[1-9][0-9]*\ passed,\ 0\ failed ]] && ok=yes || ok=no
same "the whole binaries pass ($whole)" "$ok" yes
reports=("$tmp/sharded"/frame_queue.shard*.xml)
same "three reports a binary" "${#reports[@]}" 3

missing=$("$source/tests/gpu-suite.sh" -j 2 "$build" "$tmp/missing" no_such_binary 2>&1 | tail -n 1)
same "a shard that leaves no report is a failure" "$missing" "0 passed, 2 failed, 0 skipped"

"$source/tests/gpu-suite.sh" -j 0 "$build" "$tmp/refused" frame_queue >"$tmp/refused.out" 2>&1
same "-j 0 is refused" "$?" 2
same "-j 0 names the usage" "$(head -n 1 "$tmp/refused.out")" \
  "usage: tests/gpu-suite.sh [-j JOBS] BUILD_DIR LOG_DIR [TEST_NAME...]"
echo "1..$n"
