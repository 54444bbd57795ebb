#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `pip wheel .` (pyproject.toml, meson-python) builds the plugin and the
# Python module into one wheel on Python's stable ABI (abi3: every CPython
# since 3.11), which installs into a virtual environment where the module
# reads frames with no other set-up: GST_PLUGIN_PATH unset, a registry of its
# own, GStreamer's system plugin path alone. The venv is made from PYTHON with
# --system-site-packages (PyGObject's and meson-python's Debian packages); pip
# uses no network (--no-index --no-build-isolation). The same wheel then
# installs in a venv of every other CPython 3.11+ found (python3.N on PATH
# that runs, pyenv's versions) and reads frames there; an older one refuses
# it. Prints TAP for meson test.
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
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
built_by=$(version_of "$python")
# other CPythons: one of each version, not the builder's
others=()
declare -A seen=(["$built_by"]=1)
candidates=()
for n in $(seq 6 20); do candidates+=("python3.$n"); done
if command -v pyenv >/dev/null; then
  for found in "$(pyenv root)"/versions/*/bin/python3; do candidates+=("$found"); done
fi
# every newer one, and the newest before 3.11 (which must refuse the wheel)
older='' older_version=0
for candidate in "${candidates[@]}"; do
  version=$(version_of "$candidate") || continue
  [[ -n $version && -z ${seen[$version]:-} ]] || continue
  seen[$version]=1
  minor=${version#3.}
  if ((minor >= 11)); then
    others+=("$(command -v "$candidate")")
  elif ((minor > older_version)); then
    older=$(command -v "$candidate") older_version=$minor
  fi
done
[[ -n $older ]] && others+=("$older")
# meson-python tags the wheel abi3 from the modules' .abi3.so suffix up to
# 0.15 (Debian 12's 0.12); from 0.16 only when pyproject.toml sets
# tool.meson-python.limited-api, a key 0.12 refuses: there (Debian 13's 0.17)
# the wheel is for this CPython alone, and for no other
abi=$("$python" -c 'import mesonpy
print("abi3" if tuple(map(int, mesonpy.__version__.split(".")[:2])) < (0, 16) else "cp")')
if [ "$abi" != abi3 ]; then
  echo "# meson-python $("$python" -c 'import mesonpy; print(mesonpy.__version__)') tags no abi3 wheel without tool.meson-python.limited-api, which meson-python 0.12 refuses: this wheel is for one CPython"
  others=()
fi
echo "1..$((5 + 2 * ${#others[@]}))"
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
# the CPU backend alone: what is checked is the wheel, and the CUDA kernels
# would add minutes of nvcc to every CI run
check "pip wheel ." "$tmp/venv/bin/pip" wheel --no-index --no-build-isolation --no-deps \
  --config-settings=setup-args=-Dcuda=disabled --wheel-dir "$tmp/wheels" "$tmp/source"
wheel=$(ls "$tmp"/wheels/cudagray-*.whl 2>/dev/null | head -1)
# native code (the module, the plugin) in platlib, on the stable ABI: a wheel
# for this platform and every CPython since the one that built it, never
# py3-none-any (pip would take such a wheel for any machine); abi3 where
# meson-python tags it so (above).
check "a $abi wheel for this platform: ${wheel##*/}" "$python" -c '
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
[name] = [n for n in wheel.namelist() if n.endswith(".dist-info/WHEEL")]
fields = dict(line.split(": ", 1) for line in wheel.read(name).decode().splitlines() if ": " in line)
print(fields, [n for n in wheel.namelist() if n.endswith(".so")])
assert fields["Root-Is-Purelib"] == "false", fields
interpreter, abi, platform = fields["Tag"].split("-")
cpython = "cp%d%d" % sys.version_info[:2]
assert (interpreter, abi) == (cpython, sys.argv[2] if sys.argv[2] == "abi3" else cpython), fields
assert platform.startswith("linux_"), fields
' "$wheel" "$abi"
check "pip install the wheel" "$tmp/venv/bin/pip" install --no-index --no-deps "$wheel"
# RGB (0x40, 0x80, 0xc0) with weights 1/4, 1/2, 1/4: gray 16 + 64 + 48 = 128;
# through the buffer protocol, which every CPython 3.11+ has (NumPy may not)
read_frames='
import sys, cudagray
assert cudagray.__file__.startswith(sys.prefix), cudagray.__file__
source = ("videotestsrc num-buffers=3 pattern=solid-color foreground-color=0xff4080c0"
          " ! video/x-raw,format=RGB,width=33,height=17")
with cudagray.open(source, backend="cpu", weights=(0.25, 0.5, 0.25)) as reader:
    frames = [memoryview(frame) for frame in reader]
assert len(frames) == 3, len(frames)
for gray in frames:
    assert gray.shape == (17, 33) and gray.tobytes() == bytes([128]) * 33 * 17, (gray.shape, set(gray.tobytes()))
print(sys.version.split()[0], cudagray.__file__, "3 frames of 128")
'
installed() {  # installed VENV: reads frames with the module installed there
  env -u GST_PLUGIN_PATH -u GST_PLUGIN_PATH_1_0 -u PYTHONPATH \
    GST_REGISTRY_1_0="$tmp/registry-${1##*/}.bin" "$1/bin/python" -c "$read_frames"
}
check "frames from the installed module, equal to the formula" installed "$tmp/venv"
install_and_read() { "$1/bin/pip" install --no-index --no-deps "$2" && installed "$1"; }
refuses() { ! "$1/bin/pip" install --no-index --no-deps "$2"; }
for other in "${others[@]}"; do
  version=$(version_of "$other")
  venv="$tmp/venv-$version"
  check "venv from $other (Python $version)" "$other" -m venv "$venv"
  if [[ $other == "$older" ]]; then
    check "Python $version refuses the wheel (the stable ABI of 3.11)" refuses "$venv" "$wheel"
  else
    check "the wheel built by Python $built_by reads frames in Python $version" \
      install_and_read "$venv" "$wheel"
  fi
done
