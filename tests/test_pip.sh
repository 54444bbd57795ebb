#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `pip install .` (pyproject.toml, meson-python) builds the plugin and the
# Python module and installs both into a virtual environment, where the
# module reads frames with no other set-up: GST_PLUGIN_PATH unset, a registry
# of its own, GStreamer's system plugin path alone. The venv is made from
# PYTHON with --system-site-packages (PyGObject's and meson-python's Debian
# packages); pip uses no network (--no-index --no-build-isolation). Prints
# TAP for meson test.
#
#   test_pip.sh SOURCE_DIR PYTHON
set -uo pipefail
source=$1 python=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$python" -c 'import mesonpy, venv, ensurepip' 2>"$tmp/why"; then
  echo "1..0 # SKIP $python lacks meson-python or venv (python3-mesonpy, python3-venv): $(tail -1 "$tmp/why")"
  exit 0
fi
echo 1..4
# a copy of the checkout without its build folders: pip builds in the source
mkdir "$tmp/source"
tar -C "$source" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$tmp/source" -xf -
n=0
check() {  # check NAME COMMAND...: one TAP line; a failure shows the log
  local name=$1
  shift
  n=$((n + 1))
  if "$@" >"$tmp/log" 2>&1; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name"
    tail -40 "$tmp/log" | sed 's/^/# /'
  fi
}
check "venv from $python" "$python" -m venv --system-site-packages "$tmp/venv"
# the CPU backend alone: what is checked is the install, and the CUDA
# kernels would add minutes of nvcc to every CI run
check "pip install ." "$tmp/venv/bin/pip" install --no-index --no-build-isolation \
  --config-settings=setup-args=-Dcuda=disabled "$tmp/source"
# native code (the module, the plugin) in platlib: a wheel tagged for this
# platform and Python, never py3-none-any (pip would take such a wheel for
# any machine)
check "a wheel for this platform, not pure Python" "$tmp/venv/bin/python" -c '
import glob, sys
[wheel] = glob.glob(sys.prefix + "/lib/python3*/site-packages/cudagray-*.dist-info/WHEEL")
fields = dict(line.split(": ", 1) for line in open(wheel).read().splitlines() if ": " in line)
print(fields)
assert fields["Root-Is-Purelib"] == "false", fields
assert not fields["Tag"].endswith("-any"), fields
'
# RGB (0x40, 0x80, 0xc0) with weights 1/4, 1/2, 1/4: gray 16 + 64 + 48 = 128
check "frames from the installed module, equal to the formula" \
  env -u GST_PLUGIN_PATH -u GST_PLUGIN_PATH_1_0 -u PYTHONPATH \
  GST_REGISTRY_1_0="$tmp/registry.bin" "$tmp/venv/bin/python" -c '
import sys, numpy as np, cudagray
assert cudagray.__file__.startswith(sys.prefix), cudagray.__file__
source = ("videotestsrc num-buffers=3 pattern=solid-color foreground-color=0xff4080c0"
          " ! video/x-raw,format=RGB,width=33,height=17")
with cudagray.open(source, backend="cpu", weights=(0.25, 0.5, 0.25)) as reader:
    frames = [np.asarray(frame) for frame in reader]
assert len(frames) == 3, len(frames)
for gray in frames:
    assert gray.shape == (17, 33) and (gray == 128).all(), (gray.shape, np.unique(gray))
print(cudagray.__file__, "3 frames of 128")
'
