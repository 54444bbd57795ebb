# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the pipeline scripts: find the plugin, then print and run a
# gst-launch-1.0 command line.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Without GST_PLUGIN_PATH, use the repository's build when there is one.
if [[ -z ${GST_PLUGIN_PATH:-}${GST_PLUGIN_PATH_1_0:-} && -f $repo/build/plugin/libgstcudagray.so ]]; then
  export GST_PLUGIN_PATH=$repo/build/plugin
fi
if ! gst-inspect-1.0 cudagray >/dev/null 2>&1; then
  echo "error: element cudagray not found; build it (build/plugin) or set GST_PLUGIN_PATH" >&2
  exit 1
fi

# Exits, before anything is written, when an output is the input file under
# any name (another path to it, a symbolic or hard link): the pipeline would
# empty the file before reading it.
#   refuse_output_over_input INPUT OUTPUT...
refuse_output_over_input() {
  local in=$1 out
  shift
  [[ $in != - && -e $in ]] || return 0
  for out in "$@"; do
    if [[ $(realpath -m -- "$out") == "$(realpath -- "$in")" || $out -ef $in ]]; then
      echo "error: output $out is the same file as input $in; write to another file" >&2
      exit 2
    fi
  done
}

# Sets to_rgb to what goes between videoconvert and cudagray for these
# cudagray settings: matrix and weights weigh R, G and B, while cudagray
# takes the luma plane of YUV as it is, so with either of them decoded video
# is made RGB first; else nothing (YUV's luma plane is the fastest input).
#   set_to_rgb "${opts[@]}"; ... ! videoconvert "${to_rgb[@]}" ! cudagray ...
set_to_rgb() {
  local o
  to_rgb=()
  for o in "$@"; do
    if [[ $o == matrix=* || $o == weights=* ]]; then to_rgb=(! video/x-raw,format=RGBx); fi
  done
}

# Prints the command, quoting only where the shell needs it, then runs it.
print_and_run() {
  local a
  for a in "$@"; do
    if [[ $a =~ ^[][A-Za-z0-9_./,:=+@%!-]+$ ]]; then printf '%s ' "$a"; else printf '%q ' "$a"; fi
  done
  echo
  "$@"
}
