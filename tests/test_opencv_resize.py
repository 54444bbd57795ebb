#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""cudagray's scaling against OpenCV, written by nobody here (issue 31).

Each random RGB frame goes through cudagray twice: at its own size as
GRAY16_LE, and scaled. cv2.resize of that full-size GRAY16 with the method's
OpenCV counterpart must be within 2 of cudagray's GRAY16 and within 1 of its
GRAY8 (OpenCV rounds in floating point and, for bilinear, with 11-bit
weights; cudagray is exact). Nearest is compared where the output pixel's
centre, mapped to the source, is more than 1/256 pixel from the boundary
between two source pixels: on it cudagray takes the right (lower) one, as
PIL and torchvision's nearest-exact do, and OpenCV's 16-bit fixed-point
positions (off by up to width/65536 pixel) take either near it. Down and up, integer and non-integer ratios,
odd sizes, 1x1. Exits 77 (skipped) without cv2, gi or numpy.
Usage: test_opencv_resize.py [backend]   (cpu by default)
"""
import sys

try:
    import cv2
    import gi
    import numpy as np

    gi.require_version("Gst", "1.0")
    from gi.repository import Gst
except (ImportError, ValueError) as e:
    print(f"skipped: {e}")
    sys.exit(77)

METHODS = {"area": cv2.INTER_AREA, "bilinear": cv2.INTER_LINEAR,
           "nearest": cv2.INTER_NEAREST_EXACT}
SIZES = [((641, 481), (333, 187)), ((333, 187), (641, 481)), ((640, 480), (320, 240)),
         ((97, 61), (1, 1)), ((1, 1), (17, 9)), ((1920, 1080), (640, 360)),
         ((100, 100), (300, 300))]


def run(backend, frame, method, out_w, out_h, fmt):
    """cudagray's output for one RGB frame (height x width x 3 uint8)."""
    h, w = frame.shape[:2]
    p = Gst.parse_launch(
        f"appsrc name=src caps=video/x-raw,format=RGB,width={w},height={h},framerate=1/1,"
        f"pixel-aspect-ratio=1/1 ! cudagray backend={backend} method={method} add-borders=false ! "
        f"video/x-raw,format={fmt},width={out_w},height={out_h},pixel-aspect-ratio=1/1 ! "
        "appsink name=sink sync=false")
    p.set_state(Gst.State.PLAYING)
    src = p.get_by_name("src")
    padded = np.zeros((h, (w * 3 + 3) // 4 * 4), dtype=np.uint8)  # GStreamer's RGB stride
    padded[:, : w * 3] = frame.reshape(h, w * 3)
    src.emit("push-buffer", Gst.Buffer.new_wrapped(padded.tobytes()))
    src.emit("end-of-stream")
    sample = p.get_by_name("sink").emit("try-pull-sample", 10 * Gst.SECOND)
    if sample is None:
        msg = p.get_bus().pop_filtered(Gst.MessageType.ERROR)
        p.set_state(Gst.State.NULL)
        raise RuntimeError(f"no output: {msg.parse_error() if msg else 'timeout'}")
    buf = sample.get_buffer()
    depth = 2 if fmt == "GRAY16_LE" else 1
    stride = (out_w * depth + 3) // 4 * 4  # GStreamer's default GRAY row stride
    data = buf.extract_dup(0, buf.get_size())
    p.set_state(Gst.State.NULL)
    dtype = np.uint16 if depth == 2 else np.uint8
    rows = np.frombuffer(data, dtype=np.uint8)[: stride * out_h].reshape(out_h, stride)
    return rows[:, : out_w * depth].copy().view(dtype).reshape(out_h, out_w)


def near_boundary(n_in, n_out):
    """Output coordinates whose centre maps within 1/256 pixel of a source
    pixel boundary: (2x + 1) * in / (2 out) in exact integers."""
    r = [(2 * x + 1) * n_in % (2 * n_out) for x in range(n_out)]
    return [min(v, 2 * n_out - v) * 256 < 2 * n_out for v in r]


def main():
    Gst.init(None)
    backend = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    rng = np.random.default_rng()
    failures = 0
    for (in_w, in_h), (out_w, out_h) in SIZES:
        frame = rng.integers(0, 256, (in_h, in_w, 3), dtype=np.uint8)
        full16 = run(backend, frame, "area", in_w, in_h, "GRAY16_LE")
        for method, flag in METHODS.items():
            want = cv2.resize(full16, (out_w, out_h), interpolation=flag)
            got16 = run(backend, frame, method, out_w, out_h, "GRAY16_LE").astype(np.int64)
            got8 = run(backend, frame, method, out_w, out_h, "GRAY8").astype(np.int64)
            want8 = np.floor(want.astype(np.float64) / 257 + 0.5).astype(np.int64)
            keep = np.ones((out_h, out_w), dtype=bool)
            if method == "nearest":
                keep[:, near_boundary(in_w, out_w)] = False
                keep[near_boundary(in_h, out_h), :] = False
            d16 = int(np.abs(got16 - want.astype(np.int64))[keep].max(initial=0))
            d8 = int(np.abs(got8 - want8)[keep].max(initial=0))
            ok = d16 <= 2 and d8 <= 1
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'} {in_w}x{in_h} -> {out_w}x{out_h} {method}: "
                  f"max |GRAY16 - cv2| = {d16}, max |GRAY8 - cv2| = {d8} "
                  f"({int(keep.sum())} of {keep.size} pixels compared)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
