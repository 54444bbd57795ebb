#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Gray frames from a pipeline with cudagray, read by OpenCV into numpy.

    python3 examples/opencv_gray.py [key=value ...]
    e.g. python3 examples/opencv_gray.py backend=cpu

key=value pairs are cudagray properties (matrix and weights aside: the check
below uses the default BT.601 weights). Opens two cv2.VideoCapture with
cv2.CAP_GSTREAMER on the same deterministic test pattern (every colour,
videotestsrc pattern=colors): one gives its BGR frames, the other the GRAY8
that cudagray makes of them. Every gray pixel is compared with the formula in
docs/formats.md, computed here with numpy; exits 0 when all match, 1 otherwise
(2: a bad argument; 3: this Python has no OpenCV, or an OpenCV built without
GStreamer, said in one line).

Needs OpenCV's Python module built with GStreamer (Debian/Ubuntu:
python3-opencv), which the system's /usr/bin/python3 sees, and the cudagray
plugin installed or on GST_PLUGIN_PATH.
"""
import re
import sys

try:
    import cv2
    import numpy as np
except ImportError as missing:
    print(f"{sys.argv[0]}: {sys.executable} cannot import OpenCV and numpy ({missing}): install "
          "python3-opencv and run it with /usr/bin/python3", file=sys.stderr)
    sys.exit(3)

WIDTH, HEIGHT, FRAMES = 320, 240, 10
# BT.601 in Q16, as the formula table of docs/formats.md gives them
W_R, W_G, W_B = 19595, 38470, 7471


def frames_of(pipeline):
    """Every frame the pipeline's appsink gives, as numpy arrays."""
    capture = cv2.VideoCapture(pipeline, cv2.CAP_GSTREAMER)
    if not capture.isOpened():
        return None
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    return frames


def main():
    settings = sys.argv[1:]
    for setting in settings:
        if "=" not in setting or setting.split("=", 1)[0] in ("matrix", "weights"):
            print(f"{sys.argv[0]}: {setting}: expected key=value, a cudagray property other "
                  "than matrix and weights", file=sys.stderr)
            return 2
    if not re.search(r"GStreamer:\s+YES", cv2.getBuildInformation()):
        print(f"{sys.argv[0]}: this OpenCV ({cv2.__version__}) was built without GStreamer",
              file=sys.stderr)
        return 3
    source = (f"videotestsrc num-buffers={FRAMES} pattern=colors ! "
              f"video/x-raw,format=BGR,width={WIDTH},height={HEIGHT},framerate=30/1")
    bgr = frames_of(f"{source} ! appsink")
    gray = frames_of(f"{source} ! cudagray {' '.join(settings)} ! "
                     "video/x-raw,format=GRAY8 ! appsink")
    if bgr is None or gray is None:
        print(f"{sys.argv[0]}: OpenCV could not open the pipeline (is cudagray installed or on "
              "GST_PLUGIN_PATH?)", file=sys.stderr)
        return 1
    if len(bgr) != FRAMES or len(gray) != FRAMES:
        print(f"{sys.argv[0]}: got {len(bgr)} colour and {len(gray)} gray frames, "
              f"expected {FRAMES} of each", file=sys.stderr)
        return 1
    wrong = 0
    for colour, g in zip(bgr, gray):
        b, gr, r = (colour[..., i].astype(np.int64) for i in range(3))
        expected = np.minimum(255, (W_R * r + W_G * gr + W_B * b + 32768) >> 16)
        got = g if g.ndim == 2 else g[..., 0]
        wrong += int(np.count_nonzero(got.astype(np.int64) != expected))
    pixels = FRAMES * WIDTH * HEIGHT
    if wrong:
        print(f"{wrong} of {pixels} gray pixels differ from the formula")
        return 1
    print(f"{FRAMES} frames of {WIDTH}x{HEIGHT} read by OpenCV; all {pixels} gray pixels match "
          "the formula")
    return 0


if __name__ == "__main__":
    sys.exit(main())
