#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The batch rows' torch peer (issue 51): N cudagray elements, then torch.

What a program without cudagraybatch does: N `cudagray` elements each make
a letterboxed 640x640 GRAY8 frame on the GPU, and torch stacks them into
one N x 1 x 640 x 640 tensor and normalises it to float16:

    ((torch.stack(frames).unsqueeze(1).float() / 255 - mean) / std).half()

This runs cudagray-bench --rows batch (its batch:N:METHOD:frames rows time
the N frame kernels), times the torch part on N separate random 640x640
uint8 CUDA tensors with CUDA events over a CUDA graph (device time, as the
bench times its rows), and prints, per row, cudagray's batch against the
sum of the two. Needs a GPU and torch.

    bench/batch_torch.py [--bench BIN] [--csv PATH] [--seconds S]
"""
import argparse
import csv
import os
import subprocess
import sys
import time

MEAN, STD = 0.45, 0.225  # bench/batch_rows.cpp's
SIDE = 640
L2_BYTES = 256 << 20  # rotate over more than any L2


def torch_stack_normalise(torch, n, seconds):
    """Device µs and process CPU µs of one stack-and-normalise of n frames."""
    frame_bytes = SIDE * SIDE
    sets = max(2, L2_BYTES // (n * frame_bytes))
    gen = torch.Generator(device="cuda").manual_seed(51)
    inputs = [[torch.randint(0, 256, (SIDE, SIDE), dtype=torch.uint8, device="cuda",
                             generator=gen) for _ in range(n)] for _ in range(sets)]

    def batch(frames):
        return ((torch.stack(frames).unsqueeze(1).float() / 255 - MEAN) / STD).half()

    check = batch(inputs[0])
    assert check.shape == (n, 1, SIDE, SIDE) and check.dtype == torch.float16
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for frames in inputs:  # warm-up, outside the graph (allocator, kernels)
            batch(frames)
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for frames in inputs:
                batch(frames)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        graph.replay()
        replays = 0
        clock = time.monotonic()
        start.record(stream)
        while time.monotonic() - clock < seconds:
            graph.replay()
            replays += 1
        end.record(stream)
        end.synchronize()
        device_us = start.elapsed_time(end) * 1000 / (replays * sets)
        # the CPU a program pays: plain calls, no graph
        cpu_from, count = time.process_time(), 0
        clock = time.monotonic()
        while time.monotonic() - clock < seconds / 2:
            batch(inputs[count % sets])
            count += 1
        stream.synchronize()
        cpu_us = (time.process_time() - cpu_from) / count * 1e6
    return device_us, cpu_us


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--bench", default=os.environ.get(
        "CUDAGRAY_BENCH_BIN", os.path.join(root, "build", "bench", "cudagray-bench")))
    parser.add_argument("--csv", default="bench-batch.csv")
    parser.add_argument("--seconds", type=float, default=0.5)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("batch_torch.py: torch is not installed here")
    if not torch.cuda.is_available():
        sys.exit("batch_torch.py: torch sees no GPU")
    subprocess.run([args.bench, "--rows", "batch", "--seconds", str(args.seconds),
                    "--csv", args.csv], check=True)
    with open(args.csv, newline="") as f:
        rows = {r["key"]: r for r in csv.DictReader(f)}
    columns = "%-4s %-9s %9s %10s %9s %8s %7s %14s"
    print("\n== batches against N cudagray frames stacked and normalised in torch (us a batch) ==")
    print(columns % ("N", "method", "batch", "N frames", "torch", "peer", "/ peer", "torch CPU"))
    failed = False
    for n in (4, 16):
        torch_us, torch_cpu_us = torch_stack_normalise(torch, n, args.seconds)
        for method in ("area", "bilinear"):
            key = "batch:%d:%s" % (n, method)
            batch, frames = rows.get(key), rows.get(key + ":frames")
            if not batch or not frames or batch["status"] != "ok" or frames["status"] != "ok":
                print("%s: not measured by the bench (%s)" % (key, (batch or {}).get("status")))
                failed = True
                continue
            batch_us, frames_us = float(batch["us_per_frame"]), float(frames["us_per_frame"])
            peer_us = frames_us + torch_us
            print(columns % (n, method, "%.1f" % batch_us, "%.1f" % frames_us, "%.1f" % torch_us,
                             "%.1f" % peer_us, "%.2f" % (batch_us / peer_us), "%.1f" % torch_cpu_us))
    print("/ peer: cudagray's batch time over N cudagray frame kernels plus torch's stack and "
          "normalisation (device time; below 1: cudagray is faster); torch CPU: the process's "
          "CPU time a batch for torch's calls alone (torch %s)" % torch.__version__)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
