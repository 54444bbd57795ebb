#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A frame in CUDA memory goes back to cudagray only after its consumers' reads
(issue 49), whatever stream they queue them on: PyTorch side streams, CuPy
non-blocking streams, the per-thread default stream, several consumers at
once, the CUDA array interface, record_stream.

Each consumer takes the frame, then queues more work on its stream (a kernel
that spins for a few million cycles) and only then its read (the frame's
sum), and lets the frame go at once: the read runs long after the frame was
let go, while cudagray converts the next frames. A frame given back to
cudagray's pool at its release is overwritten by a later picture before the
read, and its sum differs from that of the same frame read in system memory
(cudagray's CPU path). The spin only makes an early release show on every
run; what passes does not depend on it. Needs PyTorch and CuPy on a GPU
(tests/gpu-python.sh); elsewhere every test skips, saying why.
"""
import subprocess
import sys
import textwrap
import threading
import unittest

import numpy as np

import cudagray


def cuda_reason():
    """None when PyTorch and CuPy see a CUDA device, else why these tests skip."""
    try:
        import cupy
        import torch
    except ImportError as error:
        return f"PyTorch and CuPy are not both importable ({error})"
    if not torch.cuda.is_available():
        return f"PyTorch sees no CUDA device (CuPy {cupy.__version__})"
    return None


NO_CUDA = cuda_reason()

UPLOADED = ("videotestsrc num-buffers={n} pattern=ball ! video/x-raw,format=RGBA,width={w},height={h}"
            " ! cudaupload ! video/x-raw(memory:CUDAMemory)")

# one thread, clock64() a few million cycles on (about 2 ms on an H100): the
# stream it runs on stays busy while the host goes on
SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
"""


@unittest.skipIf(NO_CUDA, NO_CUDA)
class ConsumerStreams(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        import cupy

        cls.kernel = cupy.RawKernel(SPIN, "spin")
        cls.expected = {}

    def spin(self, stream, cycles=4_000_000):
        """Queues the spin on a CuPy stream (ExternalStream for PyTorch's)."""
        import cupy

        with stream:
            self.kernel((1,), (1,), (cupy.int64(cycles),))

    def system_sums(self, n, w, h):
        """The frames' sums read in system memory (the CPU path), once per size."""
        key = (n, w, h)
        if key not in self.expected:
            source = UPLOADED.format(n=n, w=w, h=h).replace(" ! cudaupload ! video/x-raw(memory:CUDAMemory)", "")
            with cudagray.open(source, backend="cpu", memory="system") as reader:
                self.expected[key] = [int(np.asarray(frame).sum(dtype=np.int64)) for frame in reader]
        return self.expected[key]

    def check(self, sums, n=300, w=640, h=360, who="the consumer"):
        expected = self.system_sums(n, w, h)
        got = [int(total) for total in sums]
        self.assertEqual(len(got), len(expected), f"{who}: frames read")
        wrong = sum(total != want for total, want in zip(got, expected))
        self.assertEqual(wrong, 0, f"{who} read another picture in {wrong} of {len(expected)} frames")

    def consume(self, consumers, n=300, w=640, h=360, max_inflight=4, cycles=4_000_000):
        """Each consumer (library, stream) takes every frame on its stream, spins,
        then sums; the frame goes right after. Gives each consumer's sums."""
        import cupy
        import torch

        sums = [[] for _ in consumers]
        with cudagray.open(UPLOADED.format(n=n, w=w, h=h), memory="cuda", max_inflight=max_inflight) as reader:
            for frame in reader:
                for (library, stream), totals in zip(consumers, sums):
                    if library == "torch":
                        with torch.cuda.stream(stream):
                            gray = torch.from_dlpack(frame)
                            self.spin(cupy.cuda.ExternalStream(stream.cuda_stream), cycles)
                            totals.append(gray.sum(dtype=torch.int64))
                    else:
                        with stream:
                            gray = cupy.from_dlpack(frame)
                            self.spin(stream, cycles)
                            totals.append(gray.sum(dtype=cupy.int64))
                    del gray
                del frame
        for library, stream in consumers:
            stream.synchronize()
        return sums

    def torch_stream(self):
        import torch

        return ("torch", torch.cuda.Stream())

    def cupy_stream(self):
        import cupy

        return ("cupy", cupy.cuda.Stream(non_blocking=True))

    def test_torch_side_stream(self):
        sums, = self.consume([self.torch_stream()])
        self.check(sums, who="torch on a side stream")

    def test_cupy_non_blocking_stream(self):
        sums, = self.consume([self.cupy_stream()])
        self.check(sums, who="CuPy on a non-blocking stream")

    def test_two_consumers_on_busy_streams(self):
        for who, sums in zip(("torch", "CuPy"), self.consume([self.torch_stream(), self.cupy_stream()])):
            self.check(sums, who=who)

    def test_four_consumers_on_busy_streams(self):
        consumers = [self.torch_stream(), self.cupy_stream(), self.torch_stream(), self.cupy_stream()]
        for index, sums in enumerate(self.consume(consumers, cycles=1_000_000)):
            self.check(sums, who=f"consumer {index} ({consumers[index][0]})")

    def test_thousands_of_frames_with_the_producer_ahead(self):
        # 16 frames in flight: cudagray converts far ahead of the reads
        sums, = self.consume([self.torch_stream()], n=3000, w=320, h=240, max_inflight=16, cycles=500_000)
        self.check(sums, n=3000, w=320, h=240, who="torch over 3000 frames")

    def test_per_thread_default_stream(self):
        # CuPy passes stream=2 (the per-thread default stream of the thread
        # that takes the frame), and the main thread lets the frame go
        import cupy

        sums, handed_over = [], []

        def consume(frame):
            with cupy.cuda.Stream.ptds:
                gray = cupy.from_dlpack(frame)
                self.spin(cupy.cuda.Stream.ptds)
                sums.append(gray.sum(dtype=cupy.int64))
            handed_over.append((frame, gray))

        with cudagray.open(UPLOADED.format(n=300, w=640, h=360), memory="cuda", max_inflight=4) as reader:
            for frame in reader:
                worker = threading.Thread(target=consume, args=(frame,))
                worker.start()
                worker.join(60)
                self.assertFalse(worker.is_alive(), "the consumer thread did not finish in 60 s")
                del frame
                handed_over.clear()
        cupy.cuda.runtime.deviceSynchronize()
        self.check(sums, who="CuPy on its per-thread default stream")

    def test_cuda_array_interface_on_the_current_stream(self):
        # no stream handshake: the release waits for the current streams of
        # CuPy and PyTorch when the interface was read. cupy.asarray reads
        # it; PyTorch refuses its read-only flag (torch.from_dlpack is
        # PyTorch's way), so for PyTorch's current stream CuPy takes the
        # frame inside torch.cuda.stream, on its own default stream, and
        # the reads go to PyTorch's
        import cupy
        import torch

        for library in ("cupy", "torch"):
            _, stream = self.cupy_stream() if library == "cupy" else self.torch_stream()
            on_stream = stream if library == "cupy" else cupy.cuda.ExternalStream(stream.cuda_stream)
            sums = []
            with cudagray.open(UPLOADED.format(n=300, w=640, h=360), memory="cuda", max_inflight=4) as reader:
                for frame in reader:
                    with stream if library == "cupy" else torch.cuda.stream(stream):
                        gray = cupy.asarray(frame)
                    with on_stream:
                        self.spin(on_stream)
                        sums.append(gray.sum(dtype=cupy.int64))
                    del frame, gray
            stream.synchronize()
            self.check(sums, who=f"the CUDA array interface on {library}'s current stream")

    def test_record_stream_for_a_stream_no_one_named(self):
        # taken on the default stream, read on another: record_stream names it
        import cupy
        import torch

        for library in ("cupy", "torch", "int"):
            stream = torch.cuda.Stream() if library == "torch" else cupy.cuda.Stream(non_blocking=True)
            handle = stream.cuda_stream if library == "torch" else stream.ptr
            on_stream = cupy.cuda.ExternalStream(handle)
            sums = []
            with cudagray.open(UPLOADED.format(n=300, w=640, h=360), memory="cuda", max_inflight=4) as reader:
                for frame in reader:
                    gray = cupy.from_dlpack(frame)
                    frame.record_stream(handle if library == "int" else stream)
                    with on_stream:
                        self.spin(on_stream)
                        sums.append(gray.sum(dtype=cupy.int64))
                    del frame, gray
            stream.synchronize()
            self.check(sums, who=f"a read on a {library} stream named by record_stream")

    def run_child(self, code):
        process = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                                 timeout=300)
        self.assertEqual(process.returncode, 0, process.stderr[-2000:])
        return process.stdout

    def test_a_non_blocking_stream_destroyed_before_the_frame(self):
        # the stream object goes at the end of the with block; the frame
        # (holding it) and the array after: no crash, and the read is right
        output = self.run_child(f"""
            import cupy, cudagray
            kernel = cupy.RawKernel({SPIN!r}, "spin")
            sums = []
            with cudagray.open({UPLOADED.format(n=90, w=640, h=360)!r}, memory="cuda") as reader:
                for frame in reader:
                    with cupy.cuda.Stream(non_blocking=True):
                        gray = cupy.from_dlpack(frame)
                        kernel((1,), (1,), (cupy.int64(4_000_000),))
                        sums.append(gray.sum(dtype=cupy.int64))
                    del frame, gray  # after their stream object is gone
            cupy.cuda.runtime.deviceSynchronize()
            print([int(total) for total in sums])
        """)
        self.assertEqual(output, f"{self.system_sums(90, 640, 360)}\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
