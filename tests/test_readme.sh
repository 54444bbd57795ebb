#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every command in the README and in docs/*.md runs here, so none of them
# rots, and no relative link of the Markdown files leads nowhere. Each ```sh
# block is one TAP test: its lines run as one bash script (set -e) in a
# scratch directory that looks like the repository root (dev, pipelines/,
# examples/, docs/, tests/, bench/ and build/ linked in), one block after the
# other, so a file one block writes is there for the next; each Markdown file
# starts in a fresh directory, as a reader may start with any of them. As
# for a user who has built the plugin and followed the README:
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
#   - `./dev test` and `meson test` are not run again from inside the tests:
#     CI runs them (.ci/run, through ./dev newcomer), which is checked; `./dev package` and the apt
#     install of what it makes are not run either (a package build runs the
#     tests once more); the test tools that run a suite (a test binary, the
#     valgrind, fuzzing and GPU scripts, the benchmark) are checked to exist,
#     not run: they take long, and the GPU ones need a GPU;
#   - lines that need a GPU are not in sh blocks but in text blocks;
#   - a block fails when cudagray warns that matrix and weights do not apply
#     (YUV input): the examples that set them must use them.
# Then every relative link of the Markdown files (README.md, CONTRIBUTING.md,
# docs/, tests/) is checked by check_links.py: one TAP test a file; the
# README's length (at most 200 lines); and that CI runs the README's Quick
# start as written.
#
#   test_readme.sh SOURCE_DIR BUILD_DIR LAUNCH_CHECK PYTHON
# CUDAGRAY_README_KEEP=DIR keeps each block's script and output there.
set -uo pipefail
source=$1 build=$2 launch_check=$3 python=$4
tmp=$(mktemp -d)
trap 'if [[ -n ${CUDAGRAY_README_KEEP:-} ]]; then mkdir -p "$CUDAGRAY_README_KEEP"; cp -r "$tmp"/blocks "$CUDAGRAY_README_KEEP"; fi; rm -rf "$tmp"' EXIT
bin=$tmp/bin
mkdir -p "$bin" "$tmp/home" "$tmp/blocks"
ln -s "$launch_check" "$bin/gst-launch-1.0"
ln -s "$python" "$bin/python3"

# The commands a block may name that are not run here (see above).
tool='(build/tests/test_[a-z_]+|tests/valgrind\.sh|tests/fuzz/run|tests/gpu-[a-z-]+\.sh|bench/run)'
not_run() {
  sed -E -e 's|^\./dev test( .*)?$|echo "(./dev test: run by CI, .ci/run)"|' \
    -e 's|^meson test( .*)?$|echo "(meson test: run by CI, .ci/run)"|' \
    -e 's|^\./dev package( .*)?$|echo "(./dev package: builds and tests the package; not run here)"|' \
    -e 's|^(sudo )?apt install \./build-package/.*$|echo "(apt install of the package: not run here)"|' \
    -e "s#^([A-Z_0-9]+=[^ ]* )*$tool( .*)?\$#test -e \\2; echo \"(\\2: exists; a test tool, not run here)\"#"
}

n=0
for path in "$source"/README.md "$source"/docs/*.md; do
  doc=${path#"$source"/}
  work=$tmp/scratch/${doc//\//_}
  mkdir -p "$work"
  for f in dev pipelines examples docs tests bench README.md; do ln -s "$source/$f" "$work/$f"; done
  ln -s "$build" "$work/build"
  # Blocks: the lines inside ```sh ... ```, one file per block, named after
  # the Markdown file and the line the block starts on.
  rm -rf "$tmp/split" && mkdir "$tmp/split"
  awk -v dir="$tmp/split" '
    /^```sh[[:space:]]*$/ { inblock = 1; n++; file = sprintf("%s/block%02d", dir, n); print NR > (file ".line"); next }
    /^```/ && inblock { inblock = 0; next }
    inblock { print > file }
  ' "$source/$doc"
  for block in "$tmp"/split/block[0-9][0-9]; do
    [[ -f $block ]] || continue
    n=$((n + 1))
    line=$(cat "$block.line")
    name=${doc//\//_}-$line
    first=$(grep -v '^[[:space:]]*\(#\|$\)' "$block" | head -1 | cut -c1-70)
    {
      echo 'set -e'
      echo 'trap '\''status=$?; jobs -p | xargs -r kill 2>/dev/null; wait; exit $status'\'' EXIT'
      not_run <"$block"
    } >"$tmp/blocks/$name.sh"
    if (cd "$work" && env -u GST_PLUGIN_PATH_1_0 -u GST_REGISTRY_1_0 -u CUDAGRAY_DEV_BUILD_DIR \
          PATH="$bin:/usr/bin:$PATH" HOME="$tmp/home" DESTDIR="$tmp/destdir" \
          GST_PLUGIN_PATH="$work/build/plugin" CUDAGRAY_CHECK_FRAMES=30 \
          timeout 300 bash "$tmp/blocks/$name.sh") >"$tmp/blocks/$name.log" 2>&1 \
        && ! grep -q "matrix and weights do not apply" "$tmp/blocks/$name.log"; then
      echo "ok $n - $doc:$line: $first"
      grep -E '^check: (parsed, not run|.* is not available here|no display)' "$tmp/blocks/$name.log" \
        | sort -u | sed 's/^/# /'
    else
      echo "not ok $n - $doc:$line: $first"
      sed 's/^/# /' "$tmp/blocks/$name.log"
    fi
  done
done

for path in "$source"/*.md "$source"/docs/*.md "$source"/tests/*.md; do
  doc=${path#"$source"/}
  n=$((n + 1))
  if broken=$(cd "$source" && "$python" "$source/tests/check_links.py" "$doc"); then
    echo "ok $n - $doc: every relative link leads to a file and heading that exist"
  else
    echo "not ok $n - $doc: every relative link leads to a file and heading that exist"
    sed 's/^/# /' <<<"$broken"
  fi
done

# The README stays short (CONTRIBUTING.md): the rest goes to docs/.
n=$((n + 1))
lines=$(wc -l <"$source/README.md")
if [[ $lines -le 200 ]]; then
  echo "ok $n - README.md has at most 200 lines ($lines)"
else
  echo "not ok $n - README.md has at most 200 lines ($lines)"
  echo "# move details to docs/ (docs/install.md: what ./dev installs, times, install variants)"
fi

# CI runs the README's Quick start as written: its two commands are the
# ones ./dev newcomer runs in a fresh clone, which .ci/run runs for Debian
# 12 and 13.
n=$((n + 1))
name="the README's Quick start (./dev demo, ./dev test) is what .ci/run runs in fresh Debian 12 and 13 roots"
quick_start=$(awk '/^## Quick start/ { on = 1 } on && /^```sh/ { inblock = 1; next }
  inblock && /^```/ { exit } inblock { sub(/[[:space:]]*#.*/, ""); print }' "$source/README.md")
if [[ $quick_start == $'./dev demo\n./dev test' ]] \
    && grep -q 'sh -c "cd $clone && ./dev demo"' "$source/dev" \
    && grep -q 'sh -c "cd $clone && ./dev test \\"\\$@\\""' "$source/dev" \
    && grep -q '^\./dev newcomer bookworm "\${options\[@\]}"' "$source/.ci/run" \
    && grep -q '^\./dev newcomer trixie "\${options\[@\]}"' "$source/.ci/run"; then
  echo "ok $n - $name"
else
  echo "not ok $n - $name"
  printf '# the Quick start block: %s\n' "$quick_start"
fi
echo "1..$n"
