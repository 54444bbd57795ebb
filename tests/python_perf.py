#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Python module's own cost per frame, as a ratio of the same run.

    python3 tests/python_perf.py

Python's cost per frame on the CPU path (64x48): at most 20 us above
appsink's own (tests/appsink_pull.cpp: the same pipeline and appsink, every
sample pulled and mapped in C; its path in CUDAGRAY_APPSINK_PULL). The rates
of NVDEC frames as tensors against the other ways to read them are
bench/python_readers.py's (docs/performance.md): the decoder bounds them all.

Each rate is taken from two runs of different lengths, (N2 - N1) / (t2 - t1),
so that starting the pipeline counts in neither, after an untimed run that
takes what only a process's first run pays. Prints the figures and PASS/FAIL;
exits 1 when the target is missed.
"""
import os
import subprocess
import sys
import time

import numpy as np

import cudagray


def python_seconds(source, consume, **options):
    start = time.perf_counter()
    count = 0
    with cudagray.open(source, **options) as reader:
        for frame in reader:
            consume(frame)
            count += 1
    return time.perf_counter() - start, count


def rate(seconds_of, short, long):
    """Frames per second past the start: seconds_of(frames) -> seconds. An
    untimed first run pays what only a process's first run does, which
    would otherwise count in one of the timed runs alone."""
    seconds_of(short)
    return (long - short) / (seconds_of(long) - seconds_of(short))


def report(name, value, target, passed):
    print(f"{'PASS' if passed else 'FAIL'} {name}: {value} (target {target})", flush=True)
    return passed


def cpu_overhead():
    source = "videotestsrc num-buffers={n} pattern=ball ! video/x-raw,format=RGB,width=64,height=48"
    short, long = 5000, 25000

    def appsink(n):
        # the module's own appsink settings (python/reader.cpp)
        start = time.perf_counter()
        pulled = subprocess.run([os.environ["CUDAGRAY_APPSINK_PULL"], source.format(n=n) +
                                 " ! cudagray backend=cpu ! video/x-raw,format=GRAY8 ! appsink name=sink sync=false "
                                 "max-buffers=4 enable-last-sample=false"],
                                check=True, timeout=600, capture_output=True, text=True)
        assert int(pulled.stdout) == n, pulled.stdout
        return time.perf_counter() - start

    def module(n):
        seconds, count = python_seconds(source.format(n=n), np.asarray, backend="cpu")
        assert count == n, count
        return seconds

    appsink_us = 1e6 / rate(appsink, short, long)
    module_us = 1e6 / rate(module, short, long)
    print(f"64x48 on the CPU: appsink {appsink_us:.2f} us/frame, cudagray.open + numpy.asarray "
          f"{module_us:.2f} us/frame")
    return report("Python's cost per 64x48 frame above appsink's", f"{module_us - appsink_us:.2f} us", "<= 20 us",
                  module_us - appsink_us <= 20)


def main():
    sys.exit(0 if cpu_overhead() else 1)


if __name__ == "__main__":
    main()
