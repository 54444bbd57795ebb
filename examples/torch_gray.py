#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Edges of an H.264 file's frames in PyTorch, on the GPU, without a copy.

    python3 examples/torch_gray.py in.mp4 [--size 640x360|source] [--frames N]

nvh264dec decodes on the GPU, cudagray makes each frame gray at the model's
input size (--size; "source" keeps the file's) in CUDA memory, and
torch.from_dlpack hands that memory itself to a small model, a Sobel edge
filter as one convolution. Prints the frames per second and the mean edge
strength. Exits 3 when this Python has no PyTorch or the cudagray module,
77 without a GPU (as build/examples/cudagray-gpu-histogram does).

Needs the cudagray module (python/; PYTHONPATH=build/python from a build) and
the plugin installed or on GST_PLUGIN_PATH, with nvcodec's nvh264dec.
"""
import argparse
import sys
import time

try:
    import torch
    import torch.nn.functional as F

    import cudagray
except ImportError as missing:
    print(f"{sys.argv[0]}: {sys.executable} cannot import PyTorch and cudagray ({missing})",
          file=sys.stderr)
    sys.exit(3)


class Sobel(torch.nn.Module):
    """Gradient magnitude of a gray frame: one conv2d with two 3x3 kernels."""

    def __init__(self):
        super().__init__()
        gx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
        self.register_buffer("kernels", torch.stack([gx, gx.t()]).unsqueeze(1))

    def forward(self, gray):
        # (height, width) uint8, rows pitched as cudagray wrote them
        x = gray.unsqueeze(0).unsqueeze(0).float().div_(255.0)
        gradients = F.conv2d(x, self.kernels, padding=1)
        return gradients.pow(2).sum(dim=1).sqrt()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", help="an MP4 file with H.264 video")
    parser.add_argument("--size", default="640x360", help="WIDTHxHEIGHT cudagray scales to, or source")
    parser.add_argument("--frames", type=int, default=0, help="stop after this many (0: all)")
    args = parser.parse_args()
    size = {}
    if args.size != "source":
        width, height = (int(n) for n in args.size.split("x"))
        size = {"width": width, "height": height}
    if not torch.cuda.is_available():
        print(f"{sys.argv[0]}: PyTorch sees no CUDA device", file=sys.stderr)
        sys.exit(77)

    model = Sobel().cuda()
    source = f"filesrc location={args.file} ! qtdemux ! h264parse ! nvh264dec"
    edge_sum = torch.zeros((), device="cuda")
    count = 0
    with cudagray.open(source, memory="cuda", **size) as reader, torch.no_grad():
        for frame in reader:
            if count == 0:  # the clock starts once the pipeline runs
                shape, start = frame.shape, time.perf_counter()
            # no copy: the tensor is cudagray's CUDA memory, and torch's
            # stream waits for cudagray's work on it
            edge_sum += model(torch.from_dlpack(frame)).mean()
            count += 1
            if count == args.frames:
                break
        torch.cuda.synchronize()
    if count < 2:
        print(f"{sys.argv[0]}: {count} frame(s) read from {args.file}", file=sys.stderr)
        sys.exit(1)
    seconds = time.perf_counter() - start
    print(f"{count} frames of {shape[1]}x{shape[0]} gray: {(count - 1) / seconds:.1f} frames/s, "
          f"mean edge strength {edge_sum.item() / count:.4f}")


if __name__ == "__main__":
    main()
