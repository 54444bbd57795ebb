#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A 256-bin histogram of every gray frame in CuPy, on the GPU, without a copy.

    python3 examples/cupy_gray.py [FRAMES] [key=value ...]

A moving test pattern is uploaded to the GPU (cudaupload), cudagray makes it
gray in CUDA memory, and cupy.from_dlpack hands that memory itself to
cupy.bincount. key=value pairs are cudagray properties (Python names work
too: max_inflight=8). Prints the mean gray level and the frames per second.
Exits 3 when this Python has no CuPy or the cudagray module, 77 without a GPU.
"""
import sys
import time

try:
    import cupy

    import cudagray
except ImportError as missing:
    print(f"{sys.argv[0]}: {sys.executable} cannot import CuPy and cudagray ({missing})", file=sys.stderr)
    sys.exit(3)

SOURCE = ("videotestsrc num-buffers={frames} pattern=ball ! video/x-raw,format=RGBA,width=1280,height=720"
          " ! cudaupload ! video/x-raw(memory:CUDAMemory)")


def main():
    words = sys.argv[1:]
    frames = int(words.pop(0)) if words and words[0].isdigit() else 300
    properties = dict(word.split("=", 1) for word in words)
    if cupy.cuda.runtime.getDeviceCount() == 0:
        print(f"{sys.argv[0]}: CuPy sees no CUDA device", file=sys.stderr)
        sys.exit(77)
    histogram = cupy.zeros(256, dtype=cupy.int64)
    with cudagray.open(SOURCE.format(frames=frames), memory="cuda", **properties) as reader:
        start = time.perf_counter()
        for frame in reader:
            # no copy: the array is cudagray's CUDA memory (rows pitched)
            gray = cupy.from_dlpack(frame)
            histogram += cupy.bincount(gray.ravel(), minlength=256)
        cupy.cuda.get_current_stream().synchronize()
        seconds = time.perf_counter() - start
    levels = cupy.arange(256)
    mean = float((histogram * levels).sum() / histogram.sum())
    print(f"{frames} frames: mean gray {mean:.2f}, {frames / seconds:.1f} frames/s")


if __name__ == "__main__":
    main()
