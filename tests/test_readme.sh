#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every command in the README runs here, so none of them rots. Each ```sh
# block of README.md is one TAP test: its lines run as one bash script (set
# -e) in a scratch directory that looks like the repository root (dev,
# pipelines/, examples/ and build/ linked in), one block after the other, so
# a file one block writes is there for the next. As for a user who has built
# the plugin and followed the README:
#   - GST_PLUGIN_PATH is the build's plugin directory (the README says to
#     export it, or to install), and ./dev builds into build/ (linked to the
#     build under test, whatever CUDAGRAY_DEV_BUILD_DIR ./dev test ran with);
#   - python3 is Debian's /usr/bin/python3, which sees python3-gst-1.0;
#   - DESTDIR keeps `meson install` inside the scratch directory, and HOME is
#     a scratch one;
#   - gst-launch-1.0 is tests/launch_check.cpp, which runs the pipeline as
#     gst-launch-1.0 would but stops endless ones after 30 converted frames,
#     parses without running those that need a camera or a network host
#     other than this one, and stands in for what this machine lacks
#     (nvh264dec, a display); it says so on stderr, shown below as comments;
#   - a command ending in & runs in the background until its block ends;
#   - `./dev test` is not run again from inside itself: CI runs it (.ci/run),
#     which is checked; `./dev package` and the apt install of what it
#     makes are not run either (a package build runs the tests once more);
#   - a block fails when cudagray warns that matrix and weights do not apply
#     (YUV input): the README's examples that set them must use them.
#
#   test_readme.sh SOURCE_DIR BUILD_DIR LAUNCH_CHECK PYTHON
# CUDAGRAY_README_KEEP=DIR keeps each block's script and output there.
set -uo pipefail
source=$1 build=$2 launch_check=$3 python=$4
tmp=$(mktemp -d)
trap 'if [[ -n ${CUDAGRAY_README_KEEP:-} ]]; then mkdir -p "$CUDAGRAY_README_KEEP"; cp "$tmp"/block* "$CUDAGRAY_README_KEEP"; fi; rm -rf "$tmp"' EXIT
work=$tmp/work bin=$tmp/bin
mkdir -p "$work" "$bin" "$tmp/home"
for f in dev pipelines examples README.md; do ln -s "$source/$f" "$work/$f"; done
ln -s "$build" "$work/build"
ln -s "$launch_check" "$bin/gst-launch-1.0"
ln -s "$python" "$bin/python3"

# Blocks: "LINE<TAB>text" for each line inside ```sh ... ```, one file per block.
awk -v dir="$tmp" '
  /^```sh[[:space:]]*$/ { inblock = 1; n++; file = sprintf("%s/block%02d", dir, n); start[n] = NR; print NR > (file ".line"); next }
  /^```/ && inblock { inblock = 0; next }
  inblock { print > file }
' "$source/README.md"

n=0
for block in "$tmp"/block[0-9][0-9]; do
  n=$((n + 1))
  line=$(cat "$block.line")
  first=$(grep -v '^[[:space:]]*\(#\|$\)' "$block" | head -1 | cut -c1-70)
  {
    echo 'set -e'
    echo 'trap '\''status=$?; jobs -p | xargs -r kill 2>/dev/null; wait; exit $status'\'' EXIT'
    sed -E -e 's|^\./dev test( .*)?$|echo "(./dev test: run by CI, .ci/run)"|' \
      -e 's|^\./dev package( .*)?$|echo "(./dev package: builds and tests the package; not run here)"|' \
      -e 's|^sudo apt install \./build-package/.*$|echo "(apt install of the package: not run here)"|' \
      "$block"
  } >"$block.sh"
  if (cd "$work" && env -u GST_PLUGIN_PATH_1_0 -u GST_REGISTRY_1_0 -u CUDAGRAY_DEV_BUILD_DIR \
        PATH="$bin:/usr/bin:$PATH" HOME="$tmp/home" DESTDIR="$tmp/destdir" \
        GST_PLUGIN_PATH="$work/build/plugin" CUDAGRAY_CHECK_FRAMES=30 \
        timeout 300 bash "$block.sh") >"$block.log" 2>&1 \
      && ! grep -q "matrix and weights do not apply" "$block.log"; then
    echo "ok $n - README.md:$line: $first"
    grep -E '^check: (parsed, not run|.* is not available here|no display)' "$block.log" | sort -u | sed 's/^/# /'
  else
    echo "not ok $n - README.md:$line: $first"
    sed 's/^/# /' "$block.log"
  fi
done

n=$((n + 1))
if grep -q '^\./dev test "\${options\[@\]}"' "$source/.ci/run" \
    && grep -q '^\./dev test --debian13 "\${options\[@\]}"' "$source/.ci/run"; then
  echo "ok $n - .ci/run runs ./dev test here and in Debian 13"
else
  echo "not ok $n - .ci/run runs ./dev test here and in Debian 13"
fi
echo "1..$n"
