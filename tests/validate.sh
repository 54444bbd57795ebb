#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# GStreamer's conformance tool watches cudagray: GstValidate's standard
# scenarios (seeks, pause and resume, fast forward, reverse playback,
# scrubbing, state changes) run over decoded H.264 files through cudagray and
# through videoconvert (videoconvertscale where the size changes) as the
# control, and a scenario passes when cudagray raises no GstValidate issue
# (critical, warning or issue) that the control does not raise too. Prints
# TAP for meson test: one line a backend and max-inflight, pipeline and
# scenario, with the frames cudagray's output task pushed; then one line a
# backend and max-inflight that fails when none of its runs pushed a frame
# from the output task (frames in flight leave from it).
#
#   validate.sh BUILD_DIR SOURCE_DIR PYTHON
#
# gst-validate is built once, offline, from gst-devtools' source for the
# running GStreamer's major.minor, validate part only, into
# BUILD_DIR/gst-validate/VERSION: the wrap SOURCE_DIR/subprojects/
# gst-devtools-MAJOR.MINOR.wrap names the tarball, which the repository
# carries in subprojects/packagecache/ (1.22.0 for 1.22.x, 1.26.2 for
# 1.26.x), and its sha256; a GStreamer without a wrap, or a tarball whose
# checksum differs, is a failure.
# CUDAGRAY_GST_VALIDATE_PREFIX=DIR takes an installed gst-validate instead
# (meson install's prefix, e.g. BUILD_DIR/gst-validate/1.22.0/install copied
# to a machine without GStreamer's build tools). The plugin comes from
# GST_PLUGIN_PATH_1_0, else BUILD_DIR/plugin. CUDAGRAY_VALIDATE_BACKENDS
# names the backends (default "cpu"; "cpu cuda" on a GPU machine),
# CUDAGRAY_VALIDATE_INFLIGHT the max-inflight values (default "4 16"),
# CUDAGRAY_VALIDATE_DECODER the H.264 decoders to pick from, in order
# (default "avdec_h264 openh264dec").
# CUDAGRAY_VALIDATE_KEEP=DIR keeps every run's log and issues there.
set -uo pipefail
build=$(realpath "$1") source=$(realpath "$2") python=$3
read -ra backends <<<"${CUDAGRAY_VALIDATE_BACKENDS:-cpu}"
# cudagray's columns: each backend at each max-inflight, frames in flight
# leaving from its output task
read -ra inflights <<<"${CUDAGRAY_VALIDATE_INFLIGHT:-4 16}"
columns=()
for backend in "${backends[@]}"; do
  for inflight in "${inflights[@]}"; do columns+=("$backend-$inflight"); done
done
reports=$source/tests/validate_reports.py
tmp=$(mktemp -d)
trap 'if [[ -n ${CUDAGRAY_VALIDATE_KEEP:-} ]]; then mkdir -p "$CUDAGRAY_VALIDATE_KEEP"; cp -r "$tmp"/runs "$CUDAGRAY_VALIDATE_KEEP"; fi; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/runs"
n=0

result() {  # result OK|FAIL NAME [LOG]: one TAP line; a failure shows the log
  n=$((n + 1))
  if [[ $1 == OK ]]; then
    echo "ok $n - $2"
  else
    echo "not ok $n - $2"
    [[ -n ${3:-} ]] && sed 's/^/# /' "$3"
  fi
}
give_up() {  # give_up NAME LOG: a step everything after needs failed
  result FAIL "$1" "$2"
  echo "1..$n"
  exit 1
}

# gst-validate: built from the tarball of this GStreamer's major.minor, once.
if [[ -n ${CUDAGRAY_GST_VALIDATE_PREFIX:-} ]]; then
  prefix=$(realpath "$CUDAGRAY_GST_VALIDATE_PREFIX")
  step="gst-validate installed in $prefix"
  [[ -x $prefix/bin/gst-validate-1.0 ]] || {
    echo "no bin/gst-validate-1.0 in CUDAGRAY_GST_VALIDATE_PREFIX=$prefix" >"$tmp/log"
    give_up "$step" "$tmp/log"
  }
else
  gst_version=$(pkg-config --modversion gstreamer-1.0 2>"$tmp/log") || give_up "the running GStreamer's version" "$tmp/log"
  major_minor=$(cut -d. -f1,2 <<<"$gst_version")
  wrap=$source/subprojects/gst-devtools-$major_minor.wrap
  step="gst-validate for GStreamer $gst_version built from gst-devtools $major_minor"
  if [[ ! -f $wrap ]]; then
    echo "No subprojects/gst-devtools-$major_minor.wrap (GStreamer here: $gst_version): add one" \
      "for gst-devtools $major_minor, as subprojects/gst-devtools-1.22.wrap is for 1.22, with its" \
      "tarball in subprojects/packagecache/ (or set CUDAGRAY_GST_VALIDATE_PREFIX to an installed" \
      "gst-validate)" >"$tmp/log"
    give_up "$step" "$tmp/log"
  fi
  wrap_value() { sed -n "s/^$1[[:space:]]*=[[:space:]]*//p" "$wrap" | tail -n 1; }
  tree=$(wrap_value directory)
  tarball=$source/subprojects/packagecache/$(wrap_value source_filename)
  step="$step (${tarball##*/})"
  if ! sha256sum "$tarball" 2>&1 | grep -q "^$(wrap_value source_hash) "; then
    { echo "$tarball: missing, or its sha256 is not the source_hash of ${wrap#"$source"/}:"
      sha256sum "$tarball" 2>&1; } >"$tmp/log"
    give_up "$step" "$tmp/log"
  fi
  cache=$build/gst-validate/${tree#gst-devtools-}
  prefix=$cache/install
  if [[ ! -f $cache/installed ]]; then
    rm -rf "$cache"
    mkdir -p "$cache"
    options=(-Dvalidate=enabled -Ddebug_viewer=disabled -Dcairo=disabled -Ddoc=disabled
      -Dtests=disabled -Dintrospection=disabled -Dnls=disabled)
    { tar -xJf "$tarball" -C "$cache" &&
      { ! grep -q "'dots_viewer'" "$cache/$tree/meson_options.txt" || options+=(-Ddots_viewer=disabled); } &&
      timeout 600 meson setup "$cache/build" "$cache/$tree" --prefix="$prefix" --libdir=lib "${options[@]}" &&
      timeout 900 ninja -C "$cache/build" install; } >"$tmp/log" 2>&1 || give_up "$step" "$tmp/log"
    touch "$cache/installed"
  fi
fi
libdir=$(find "$prefix" -name 'libgstvalidate-1.0.so.0' -printf '%h\n' | head -n 1)
export PATH=$prefix/bin:$PATH
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GST_VALIDATE_SCENARIOS_PATH=$prefix/share/gstreamer-1.0/validate/scenarios
export GST_VALIDATE_PLUGIN_PATH=$libdir/gstreamer-1.0/validate
export GST_PLUGIN_PATH_1_0=${GST_PLUGIN_PATH_1_0:-$build/plugin}
mkdir -p "$build/gst-validate"
export GST_REGISTRY_1_0=$build/gst-validate/registry.bin
unset GST_VALIDATE_CONFIG GST_VALIDATE_OVERRIDE GST_VALIDATE_SCENARIO GST_VALIDATE_FILE
# 1.26 makes criticals fatal by default (gst-validate aborts, status 238, before
# the scenario's end); 1.22 does not. Both run every scenario to its end:
export GST_VALIDATE=print_issues
# The standard scenarios run (the same files in 1.22 and 1.26).
scenarios=(seek_forward seek_backward seek_with_stop pause_resume fast_forward reverse_playback
  scrub_forward_seeking change_state_intensive)
if timeout 60 gst-validate-1.0 -l >"$tmp/list" 2>&1 && timeout 60 gst-inspect-1.0 cudagray >>"$tmp/list" 2>&1; then
  result OK "$step"
else
  give_up "$step: gst-validate-1.0 -l and gst-inspect-1.0 cudagray run" "$tmp/list"
fi

# The decoder: libav's where it is, else OpenH264's (GStreamer bundles
# without libav carry it); the files are constrained baseline, which both
# decode. openh264dec (1.22) may end a seeking scenario in not-negotiated
# when the scenario's stop deactivates its source pad while it decodes: the
# pad has lost its caps, the decoder negotiates again, setting them fails
# before they reach the next element, and the demuxer posts the error
# (seen in 1 of 25 runs of seek_backward with GST_DEBUG; whichever element
# follows the decoder only shifts the timing).
decoder=
read -ra candidates <<<"${CUDAGRAY_VALIDATE_DECODER:-avdec_h264 openh264dec}"
for candidate in "${candidates[@]}"; do
  if gst-inspect-1.0 "$candidate" >/dev/null 2>&1; then decoder=$candidate && break; fi
done
if [[ -n $decoder ]]; then
  result OK "an H.264 decoder: $decoder"
else
  echo "none of ${candidates[*]} is installed (avdec_h264: gstreamer1.0-libav)" >"$tmp/log"
  give_up "an H.264 decoder" "$tmp/log"
fi

# The files: 8 s of 640x360 H.264 at 30 fps (a key frame a second, for the
# seeks) in MP4 for the seeking scenarios, and 2 s of the same frames
# decoded, as raw I420, for change_state_intensive: gst-launch links a
# demuxer's pad once, so after the first stop to NULL its new pad stays
# unlinked and even the control ends in not-linked; and a decoder
# negotiating while the state changes may end in not-negotiated
# (openh264dec did in 1 to 2 runs of 8, the control's and cudagray's alike).
if timeout 120 gst-launch-1.0 -q videotestsrc num-buffers=240 pattern=ball \
    ! video/x-raw,width=640,height=360,framerate=30/1 \
    ! x264enc speed-preset=ultrafast key-int-max=30 \
    ! video/x-h264,stream-format=byte-stream,profile=constrained-baseline \
    ! h264parse ! mp4mux ! filesink location="$tmp/in.mp4" >"$tmp/log" 2>&1 &&
  timeout 120 gst-launch-1.0 -q filesrc location="$tmp/in.mp4" ! qtdemux ! h264parse ! "$decoder" \
    ! video/x-raw,format=I420 ! identity eos-after=61 ! filesink location="$tmp/in.i420" >>"$tmp/log" 2>&1; then
  result OK "test files made: 8 s of 640x360 H.264 in MP4, 2 s of it decoded"
else
  give_up "test files made: 8 s of 640x360 H.264 in MP4, 2 s of it decoded (videotestsrc, x264enc, mp4mux, gstreamer1.0-plugins-ugly and -good)" "$tmp/log"
fi

# decoded SCENARIO: what feeds the elements under test
decoded() {
  if [[ $1 == change_state_intensive ]]; then
    echo "filesrc location=$tmp/in.i420 name=src ! rawvideoparse format=i420 width=640 height=360 framerate=30/1 name=parse"
  else
    echo "filesrc location=$tmp/in.mp4 name=src ! qtdemux name=demux ! h264parse name=parse ! $decoder name=dec"
  fi
}
# The elements under test are named test*, so that an issue on their pads
# compares with the control's (validate_reports.py).
if gst-inspect-1.0 videoconvertscale >/dev/null 2>&1; then
  scaler="videoconvertscale name=test"
else
  scaler="videoscale name=testscale ! videoconvert name=test"
fi
# case: "NAME|cudagray's place with BACKEND|the control's place|sink".
# Sinks sync: every standard scenario acts at playback times (pause_resume
# pauses at 1 s and sends EOS at 7 s), and with a sink that does not sync
# the 8 s file decodes in a fraction of a second, so the actions race the
# file's own end (the control too raised event::eos-has-wrong-seqnum on the
# demuxer's pad that way, on 1.26).
cases=(
  "fakesink sync=true|cudagray name=test backend=BACKEND|videoconvert name=test ! capsfilter name=testcaps caps=video/x-raw,format=GRAY8|fakesink name=sink sync=true"
  "scaled to 320x180, fakesink sync=true|cudagray name=test backend=BACKEND ! capsfilter name=testcaps caps=video/x-raw,width=320,height=180|$scaler ! capsfilter name=testcaps caps=video/x-raw,format=GRAY8,width=320,height=180|fakesink name=sink sync=true"
)

# validate RUN SCENARIO PIPELINE: one gst-validate run; its issues in
# runs/RUN.issues, its output in runs/RUN.log, its status in runs/RUN.status
# (cudagray's runs log its frames out from the output task in runs/RUN.debug)
validate() {
  local status=0
  local debug=()
  [[ $1 == *-control ]] || debug=(env GST_DEBUG=cudagray:6 GST_DEBUG_FILE="$tmp/runs/$1.debug")
  # shellcheck disable=SC2086  # the pipeline is gst-launch words
  timeout -k 10 180 "${debug[@]}" "$python" "$reports" run "$tmp/runs/$1.issues" \
    gst-validate-1.0 --set-scenario="$2" $3 >"$tmp/runs/$1.log" 2>&1 || status=$?
  echo "$status" >"$tmp/runs/$1.status"
}
# finished RUN: whether gst-validate ran the scenario to its end: status 0,
# or 18 (its status when it found a critical issue, which is compared);
# anything else (it timed out, crashed, never reported, or could not run
# the pipeline) is said, and fails the line when it is cudagray's run
finished() {
  local status
  status=$(cat "$tmp/runs/$1.status")
  case $status in
    0 | 18) return 0 ;;
    124 | 137) echo "$1: gst-validate-1.0 still ran after 180 s" ;;
    3) echo "$1: GstValidate never reported its issues" ;;
    *) echo "$1: gst-validate-1.0 ended with status $status, not 0 or 18 (its status with a critical issue)" ;;
  esac
  return 1
}

for case in "${cases[@]}"; do
  IFS='|' read -r name tested control sink <<<"$case"
  for scenario in "${scenarios[@]}"; do
    slug=${name//[^a-z0-9]/_}-$scenario
    if ! grep -q "/$scenario\.scenario\]" "$tmp/list"; then
      echo "gst-validate-1.0 -l does not list $scenario" >"$tmp/log"
      for column in "${columns[@]}"; do result FAIL "$column: $scenario, $name" "$tmp/log"; done
      continue
    fi
    # the control and each column at once: they mostly wait for the clock
    validate "$slug-control" "$scenario" "$(decoded "$scenario") ! $control ! $sink" &
    for column in "${columns[@]}"; do
      validate "$slug-$column" "$scenario" \
        "$(decoded "$scenario") ! ${tested//BACKEND/${column%-*} max-inflight=${column##*-}} ! $sink" &
    done
    wait
    # A control that did not finish (it crashed or timed out) is still
    # compared with what it reported: fewer control issues only make the
    # comparison stricter.
    control_ended=$(finished "$slug-control") || true
    for column in "${columns[@]}"; do
      backend=${column%-*}
      tested_here=${tested//BACKEND/$backend max-inflight=${column##*-}}
      line="$backend max-inflight=${column##*-}: $scenario, $name: cudagray raises no issue videoconvert does not"
      if ! finished "$slug-$column" >"$tmp/log"; then
        for run in control "$column"; do
          echo "$slug-$run.log, its end:"
          tail -n 15 "$tmp/runs/$slug-$run.log"
        done >>"$tmp/log"
        result FAIL "$line" "$tmp/log"
      elif "$python" "$reports" compare "$tmp/runs/$slug-$column.issues" "$tmp/runs/$slug-control.issues" \
          >"$tmp/log" 2>&1; then
        result OK "$line"
        [[ -z $control_ended ]] || echo "# $control_ended"
        cat "$tmp/log"  # the control's own issues, as comments
      else
        { echo "cudagray's pipeline: $(decoded "$scenario") ! $tested_here ! $sink"
          [[ -z $control_ended ]] || echo "$control_ended"
          echo "issues the control does not raise:"; } | cat - "$tmp/log" >"$tmp/log2"
        result FAIL "$line" "$tmp/log2"
      fi
      echo "# frames out from the output task: $(grep -c 'frame out from the output task' \
        "$tmp/runs/$slug-$column.debug" 2>/dev/null)"
    done
  done
done
# Each column carried frames through cudagray's output task (reverse
# playback holds one frame, pushed on the streaming thread, so the column
# as a whole is what counts)
for column in "${columns[@]}"; do
  through_task=$(cat "$tmp"/runs/*-"$column".debug 2>/dev/null | grep -c 'frame out from the output task')
  line="${column%-*} max-inflight=${column##*-}: frames went through the output task ($through_task)"
  if ((through_task > 0)); then
    result OK "$line"
  else
    echo "no cudagray run of this column logged a frame out from its output task" >"$tmp/log"
    result FAIL "$line" "$tmp/log"
  fi
done
echo "1..$n"
