#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `meson install` puts the plugin where GStreamer looks for plugins, and it
# works from there: a DESTDIR install, then gst-inspect-1.0 and the embedding
# examples against the installed copy alone (GST_PLUGIN_PATH unset, the
# system plugin path pointed at the DESTDIR plugin directory and at
# GStreamer's own, a registry of its own). Prints TAP for meson test.
#
#   test_install.sh BUILD_DIR SOURCE_DIR PYTHON
# CUDAGRAY_EXAMPLES_DIR: where the example programs were built.
set -uo pipefail
build=$1 source=$2 python=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0

result() {  # result OK|FAIL NAME: one TAP line; a failure shows the log
  n=$((n + 1))
  if [[ $1 == OK ]]; then
    echo "ok $n - $2"
  else
    echo "not ok $n - $2"
    sed 's/^/# /' "$tmp/log"
  fi
}
check() {  # check NAME COMMAND...: passes when the command exits 0
  local name=$1
  shift
  if "$@" >"$tmp/log" 2>&1; then result OK "$name"; else result FAIL "$name"; fi
}
field() {  # field NAME: a "Plugin Details" field of the gst-inspect output
  sed -n "s/^  $1  *//p" "$tmp/inspect"
}
same() {  # same NAME GOT WANTED
  echo "got '$2', want '$3'" >"$tmp/log"
  [[ $2 == "$3" ]] && result OK "$1" || result FAIL "$1"
}

destdir=$tmp/root
check "meson install --destdir" meson install -C "$build" --destdir "$destdir" --no-rebuild

# Where the build says the plugin goes: -Dplugindir, or gstreamer-1.0's pluginsdir.
read -r installed plugindir origin version < <(meson introspect "$build" --installed --buildoptions --projectinfo |
  "$python" -c '
import json, sys
info = json.load(sys.stdin)
opts = {o["name"]: o["value"] for o in info["buildoptions"]}
so = [p for p in info["installed"].values() if p.endswith("/libgstcudagray.so")][0]
print(so, opts["plugindir"] or "-", opts["package-origin"].replace(" ", "\x01"), info["projectinfo"]["version"])')
origin=${origin//$'\x01'/ }
pluginsdir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
want_dir=$pluginsdir
[[ $plugindir != - ]] && want_dir=$plugindir
echo "installed to $installed; plugin directory option '$plugindir'; pkg-config pluginsdir $pluginsdir" >"$tmp/log"
[[ $(dirname "$installed") == "$want_dir" && -f $destdir$installed ]] &&
  result OK "installed into the plugin directory ($want_dir)" || result FAIL "installed into the plugin directory ($want_dir)"

# As if installed for real: GStreamer's own plugins and the new one, found
# through the system path only.
installed_env=(env -u GST_PLUGIN_PATH -u GST_PLUGIN_PATH_1_0
  GST_PLUGIN_SYSTEM_PATH_1_0="$destdir$(dirname "$installed"):$pluginsdir"
  GST_REGISTRY_1_0="$tmp/registry.bin")
if "${installed_env[@]}" gst-inspect-1.0 cudagray >"$tmp/inspect" 2>&1; then
  result OK "gst-inspect-1.0 cudagray finds the installed plugin without GST_PLUGIN_PATH"
else
  cp "$tmp/inspect" "$tmp/log"
  result FAIL "gst-inspect-1.0 cudagray finds the installed plugin without GST_PLUGIN_PATH"
fi
same "gst-inspect Filename: the installed file" "$(field Filename)" "$destdir$installed"
same "gst-inspect Version: the meson project version" "$(field Version)" "$version"
# the Debian package's version is the same (debian/changelog's newest entry)
same "debian/changelog's version: the meson project version" \
  "$(sed -n '1s/^cudagray (\([^)]*\)).*/\1/p' "$source/debian/changelog")" "$version"
same "gst-inspect License: LGPL" "$(field License)" "LGPL"
same "gst-inspect Source module: cudagray" "$(field 'Source module')" "cudagray"
same "gst-inspect Binary package: cudagray" "$(field 'Binary package')" "cudagray"
same "gst-inspect Origin URL: the package-origin option" "$(field 'Origin URL')" "$origin"

# -Dplugindir moves the plugin (configured only: nothing is built).
if meson setup "$tmp/other" "$source" -Dplugindir="$tmp/elsewhere" -Dcuda=disabled -Dtests=disabled >"$tmp/log" 2>&1; then
  other=$(meson introspect "$tmp/other" --installed |
    "$python" -c 'import json, sys; print(*[p for p in json.load(sys.stdin).values() if p.endswith("/libgstcudagray.so")])')
  echo "installs to '$other'" >>"$tmp/log"
  [[ $other == "$tmp/elsewhere/libgstcudagray.so" ]] && result OK "-Dplugindir=DIR installs into DIR" ||
    result FAIL "-Dplugindir=DIR installs into DIR"
else
  result FAIL "-Dplugindir=DIR installs into DIR"
fi

# The Python module goes where the interpreter it was built for imports
# it from (Debian's python3 does not search /usr/local/lib/python3/dist-packages).
module=$(meson introspect "$build" --installed |
  "$python" -c 'import json, sys; print(*[p for p in json.load(sys.stdin).values() if p.endswith("/cudagray.abi3.so")])')
if [[ -z $module ]]; then
  n=$((n + 1))
  echo "ok $n - the Python module installed where $python imports it # SKIP the module is not built"
else
  echo "installed to $module" >"$tmp/log"
  check "the Python module installed where $python imports it ($(dirname "$module"))" \
    "$python" -c 'import sys; assert sys.argv[1] in sys.path, sys.path' "$(dirname "$module")"
fi

# The embedding examples, against the installed plugin.
examples=${CUDAGRAY_EXAMPLES_DIR:-$build/examples}
check "C++ appsrc → cudagray → appsink (installed plugin)" \
  "${installed_env[@]}" "$examples/appsrc-roundtrip" backend=cpu
check "C++ gst_parse_launch example (installed plugin)" \
  "${installed_env[@]}" "$examples/cudagray-launch" \
  "videotestsrc num-buffers=10 ! cudagray backend=cpu ! fakesink"
if "$python" -c 'import gi; gi.require_version("GstApp", "1.0"); gi.require_version("GstVideo", "1.0"); import numpy' 2>/dev/null; then
  check "Python appsrc → cudagray → appsink (installed plugin)" \
    "${installed_env[@]}" "$python" "$source/examples/appsrc_roundtrip.py" backend=cpu
else
  n=$((n + 1))
  echo "ok $n - Python example # SKIP $python cannot import gi (GstApp, GstVideo) and numpy: install python3-gst-1.0, gir1.2-gst-plugins-base-1.0, python3-numpy"
fi
echo "1..$n"
