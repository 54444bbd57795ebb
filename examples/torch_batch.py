#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""One batch of four sources a tick into a torch model, without a copy.

    python3 examples/torch_batch.py [SOURCE ...] [--size 320x320] [--batches N]

cudagray.open_batch() links the sources (files, URIs, devices or
gst-launch-1.0 fragments; four test patterns of different sizes and
formats when none are given) to one cudagraybatch, which makes each tick
one letterboxed, normalised (N, 1, H, W) float32 batch; torch.from_dlpack
takes its memory itself and a small model (one convolution) finds the
strongest edge of each slot, mapped back to its source's pixels through the
slot's letterbox transform. Where PyTorch sees a GPU the batches are made
there and stay in CUDA memory (memory="cuda"), so the model reads them
where they are; otherwise everything runs on the CPU. Exits 0 saying so
where PyTorch is missing, 3 without the cudagray module.

Needs the cudagray module (python/; PYTHONPATH=build/python from a build) and
the plugin installed or on GST_PLUGIN_PATH.
"""
import argparse
import sys

try:
    import cudagray
except ImportError as missing:
    print(f"{sys.argv[0]}: {sys.executable} cannot import cudagray ({missing})", file=sys.stderr)
    sys.exit(3)
try:
    import torch
except ImportError as missing:
    print(f"{sys.argv[0]}: skipped: {sys.executable} cannot import PyTorch ({missing})")
    sys.exit(0)

DEFAULT_SOURCES = [
    "videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=NV12,width=1280,height=720",
    "videotestsrc num-buffers=30 pattern=smpte ! video/x-raw,format=RGB,width=640,height=480",
    "videotestsrc num-buffers=30 pattern=snow ! video/x-raw,format=I420,width=480,height=640",
    "videotestsrc num-buffers=20 pattern=circular ! video/x-raw,format=GRAY8,width=320,height=240",
]


class Edges(torch.nn.Module):
    """Gradient magnitude of each slot: one conv2d with two 3x3 Sobel kernels."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3, padding=1, bias=False)
        gx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
        with torch.no_grad():
            self.conv.weight.copy_(torch.stack([gx, gx.t()]).unsqueeze(1))

    def forward(self, batch):
        return self.conv(batch).pow(2).sum(dim=1).sqrt()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sources", nargs="*", help="what cudagray.open() takes, one a slot")
    parser.add_argument("--size", default="320x320", help="WIDTHxHEIGHT of every slot")
    parser.add_argument("--batches", type=int, default=0, help="stop after this many (0: all)")
    args = parser.parse_args()
    width, height = (int(n) for n in args.size.split("x"))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Edges().to(device)
    count = 0
    with cudagray.open_batch(args.sources or DEFAULT_SOURCES, width=width, height=height,
                             dtype="float32", mean=0.5, std=0.25, add_borders=True,
                             memory="cuda" if device == "cuda" else "system") as reader, \
            torch.no_grad():
        for batch in reader:
            # no copy: the tensor is the batch's own memory (read-only), on
            # the device the model is on
            tensor = torch.from_dlpack(batch)
            edges = model(tensor)
            strongest = edges.flatten(1).argmax(dim=1).tolist()
            count += 1
            if count == 1 or count == args.batches:
                print(f"batch {count}: {tuple(tensor.shape)} {tensor.dtype} at {batch.pts} ns")
                for slot, index in zip(batch.slots, strongest):
                    if not slot.present:
                        print(f"  source {slot.source}: absent")
                        continue
                    # the slot's pixel centre, back in the source frame's pixels
                    x, y = index % width + 0.5, index // width + 0.5
                    print(f"  source {slot.source}: strongest edge at slot ({x}, {y}), source "
                          f"({slot.scale_x * x + slot.offset_x:.1f}, {slot.scale_y * y + slot.offset_y:.1f})")
            if count == args.batches:
                break
    if count == 0:
        print(f"{sys.argv[0]}: no batch read", file=sys.stderr)
        sys.exit(1)
    print(f"{count} batches of {len(batch.slots)} slots, {width}x{height}, through the model on {device}")


if __name__ == "__main__":
    main()
