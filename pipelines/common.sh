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

# Prints the command, quoting only where the shell needs it, then runs it.
print_and_run() {
  local a
  for a in "$@"; do
    if [[ $a =~ ^[][A-Za-z0-9_./,:=+@%!-]+$ ]]; then printf '%s ' "$a"; else printf '%q ' "$a"; fi
  done
  echo
  "$@"
}
