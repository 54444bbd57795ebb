#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""numpy frames in, numpy frames out: appsrc → cudagray → appsink from Python.

    python3 examples/appsrc_roundtrip.py [key=value ...]
    e.g. python3 examples/appsrc_roundtrip.py backend=cpu matrix=bt709

key=value pairs are cudagray properties. Makes 30 RGB frames of 640x360 as
numpy arrays, converts them, compares every gray pixel with the formula in
docs/formats.md (computed here with numpy from the weights the element reports),
prints the element's stats and exits 0 when all pixels match, 1 otherwise
(2: a bad argument; 3: this Python cannot import gi or numpy, said in one line).

Needs PyGObject with GStreamer (Debian/Ubuntu: python3-gst-1.0,
gir1.2-gst-plugins-base-1.0, python3-numpy), which the system's
/usr/bin/python3 sees and a python3 of its own (a venv, conda, pyenv) does
not, and the cudagray plugin installed or on GST_PLUGIN_PATH.
"""
import sys

try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import Gst, GstApp, GstVideo
    import numpy as np
except (ImportError, ValueError) as missing:  # ValueError: gi without the GstApp/GstVideo typelibs
    print(f"{sys.argv[0]}: {sys.executable} cannot use GStreamer from Python ({missing}): install "
          "python3-gst-1.0, gir1.2-gst-plugins-base-1.0 and python3-numpy, and run it with /usr/bin/python3",
          file=sys.stderr)
    sys.exit(3)

WIDTH, HEIGHT, FRAMES, FPS = 640, 360, 30, 30


def make_frame(index):
    """Red grows left to right, green top to bottom, blue changes per frame."""
    x = np.arange(WIDTH)[None, :]
    y = np.arange(HEIGHT)[:, None]
    r = np.broadcast_to(x * 255 // (WIDTH - 1), (HEIGHT, WIDTH))
    g = np.broadcast_to(y * 255 // (HEIGHT - 1), (HEIGHT, WIDTH))
    b = (x + y + 8 * index) % 256
    return np.stack([r, g, b], axis=-1).astype(np.uint8)  # HxWx3, RGB


def q16_weights(gray):
    """The Q16 weights of docs/formats.md's formula for the coefficients in use."""
    k = [float(v) for v in gray.get_property("weights").split(",")]
    # round() in Python rounds halves to even; the formula rounds them away from zero
    w = [int(np.floor(abs(v) * 65536 + 0.5)) for v in k]
    if gray.get_property("matrix").value_nick != "custom":
        w[1] = 65536 - w[0] - w[2]  # the standard matrices keep white at 255
    return w


def expected_gray(rgb, w):
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return np.minimum(255, (w[0] * r + w[1] * g + w[2] * b + 32768) >> 16).astype(np.uint8)


def gray_array(sample):
    """The GRAY8 frame of a sample as an HxW numpy array (rows may be padded)."""
    info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
    buf = sample.get_buffer()
    ok, mapping = buf.map(Gst.MapFlags.READ)
    if not ok:
        raise RuntimeError("cannot map the output buffer")
    try:
        stride, offset = info.stride[0], info.offset[0]
        rows = np.frombuffer(mapping.data, np.uint8, count=stride * info.height, offset=offset)
        return rows.reshape(info.height, stride)[:, : info.width].copy()
    finally:
        buf.unmap(mapping)


def report_bus(bus):
    """Prints warnings and errors waiting on the bus; False after an error."""
    ok = True
    while True:
        msg = bus.pop_filtered(Gst.MessageType.ERROR | Gst.MessageType.WARNING)
        if msg is None:
            return ok
        if msg.type == Gst.MessageType.ERROR:
            err, debug = msg.parse_error()
            ok = False
        else:
            err, debug = msg.parse_warning()
        kind = "error" if msg.type == Gst.MessageType.ERROR else "warning"
        print(f"{kind} from {msg.src.get_name()}: {err.message}", file=sys.stderr)


def main(argv):
    Gst.init(None)
    pipeline = Gst.parse_launch(
        f"appsrc name=src format=time caps=video/x-raw,format=RGB,width={WIDTH},height={HEIGHT},framerate={FPS}/1"
        " ! cudagray name=gray ! appsink name=sink sync=false"
    )
    src, gray, sink = (pipeline.get_by_name(n) for n in ("src", "gray", "sink"))
    for arg in argv[1:]:
        key, sep, value = arg.partition("=")
        if not sep or gray.find_property(key) is None:
            print(f"usage: {argv[0]} [key=value ...] (cudagray properties); bad: {arg}", file=sys.stderr)
            return 2
        Gst.util_set_object_arg(gray, key, value)

    bus = pipeline.get_bus()
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        report_bus(bus)
        print("the pipeline does not start", file=sys.stderr)
        pipeline.set_state(Gst.State.NULL)
        return 1

    w = q16_weights(gray)
    print(f"weights in use (Q16): R {w[0]}, G {w[1]}, B {w[2]}")
    frames = [make_frame(i) for i in range(FRAMES)]
    for i, frame in enumerate(frames):
        buf = Gst.Buffer.new_wrapped(frame.tobytes())
        buf.pts = i * Gst.SECOND // FPS
        buf.duration = Gst.SECOND // FPS
        src.push_buffer(buf)
    src.end_of_stream()

    status, got, wrong = 0, 0, 0
    while True:
        sample = sink.try_pull_sample(10 * Gst.SECOND)
        if not report_bus(bus):
            status = 1
            break
        if sample is None:
            if not sink.is_eos():
                print("no frame for 10 s", file=sys.stderr)
                status = 1
            break
        gray_frame = gray_array(sample)
        diff = np.argwhere(gray_frame != expected_gray(frames[got], w))
        if len(diff):
            y, x = diff[0]
            print(f"frame {got} pixel ({x},{y}) RGB {tuple(frames[got][y, x])}: gray {gray_frame[y, x]},"
                  f" expected {expected_gray(frames[got], w)[y, x]}", file=sys.stderr)
        wrong += len(diff)
        got += 1

    print("stats:", gray.get_property("stats").to_string())
    pipeline.set_state(Gst.State.NULL)
    if status == 0 and got != FRAMES:
        print(f"got {got} frames of {FRAMES}", file=sys.stderr)
        status = 1
    if status == 0 and wrong:
        print(f"{wrong} pixels differ from the formula", file=sys.stderr)
        status = 1
    if status == 0:
        print(f"{got} frames of {WIDTH}x{HEIGHT} RGB converted; all {got * WIDTH * HEIGHT} gray pixels match the formula")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
