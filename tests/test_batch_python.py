#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""cudagray.open_batch() and cudagray.Batch (issue 51, item 4) against the
formula of docs/batch.md.

The reference of a slot is the same source read by cudagray.open() at the
batch's size (the sources have the batch's aspect ratio, so no bars), as
GRAY16 (GRAY8 for uint8 batches), normalised here in NumPy float32: one
division, one subtraction, one division, each rounded to binary32, then to
binary16 for float16. Letterboxed slots are checked on solid colours, whose
gray is known. tests/meson.build runs this with Debian's python3 and
PYTHONPATH at build/python.
"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import cudagray
from test_python import cuda_reason


def source(pattern, n, w, h, fmt="RGB"):
    return f"videotestsrc num-buffers={n} pattern={pattern} ! video/x-raw,format={fmt},width={w},height={h}"


def reference_frames(text, width, height, fmt):
    """[(pts, gray)] of cudagray.open() on the CPU at width x height."""
    with cudagray.open(text, width=width, height=height, format=fmt, backend="cpu") as reader:
        return [(frame.pts, np.array(frame)) for frame in reader]


def normalised(gray, mean, std, dtype):
    """docs/batch.md's v in binary32 (binary16: v rounded once more)."""
    full = np.float32(255 if gray.dtype == np.uint8 else 65535)
    v = (gray.astype(np.float32) / full - np.float32(mean)) / np.float32(std)
    return v.astype(dtype)


def read(sources, **options):
    with cudagray.open_batch(sources, backend="cpu", **options) as reader:
        return list(reader)


class Values(unittest.TestCase):
    """Every element of every batch against its reference."""

    def check(self, sources, dtype, mean, std, width, height, frames):
        fmt = "GRAY8" if dtype == "uint8" else "GRAY16"
        references = [reference_frames(text, width, height, fmt) for text in sources]
        batches = read(sources, width=width, height=height, dtype=dtype, mean=mean, std=std)
        self.assertEqual(len(batches), frames)
        for k, batch in enumerate(batches):
            self.assertEqual(batch.shape, (len(sources), 1, height, width))
            self.assertEqual(batch.dtype, dtype)
            array = np.asarray(batch)
            self.assertEqual(array.dtype, np.dtype(dtype))
            for n, slot in enumerate(batch.slots):
                pts, gray = references[n][k]
                self.assertEqual((slot.source, slot.present, slot.pts), (n, True, pts))
                expected = gray if dtype == "uint8" else normalised(gray, mean, std, np.dtype(dtype))
                # bit for bit: the same binary32 (binary16) operations
                self.assertTrue(np.array_equal(array[n, 0].view(f"u{array.itemsize}"),
                                               expected.view(f"u{array.itemsize}")),
                                f"batch {k} slot {n}: {array[n, 0]} against {expected}")
        self.assertGreater(len({np.asarray(b).tobytes() for b in batches}), 1, "the balls move")

    def test_two_sources_of_different_sizes_and_formats_float32(self):
        self.check([source("ball", 6, 64, 48), source("ball", 6, 96, 72, "I420")],
                   "float32", 0.485, 0.229, 32, 24, 6)

    def test_three_sources_float16(self):
        self.check([source("ball", 4, 64, 48, "NV12"), source("ball", 4, 48, 36, "BGRx"),
                    source("ball", 4, 32, 24, "GRAY8")], "float16", 0.5, 0.25, 16, 12, 4)

    def test_mean_and_std_from_a_model_info_file(self):
        # ranges=-1,1: mean 0.5, std 0.5 (docs/batch.md), whatever mean and std say
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.modelinfo")
            with open(path, "w") as f:
                f.write("[modelinfo]\nversion=1.0\n[images]\ndir=input\nranges=-1.0,1.0\n")
            sources = [source("ball", 3, 64, 48), source("ball", 3, 32, 24, "NV12")]
            references = [reference_frames(text, 16, 12, "GRAY16") for text in sources]
            batches = read(sources, width=16, height=12, dtype="float32", mean=0.1, std=3.0,
                           model_info=path)
        self.assertEqual(len(batches), 3)
        for k, batch in enumerate(batches):
            for n in range(2):
                expected = normalised(references[n][k][1], 0.5, 0.5, np.dtype("float32"))
                self.assertTrue(np.array_equal(np.asarray(batch)[n, 0].view("u4"), expected.view("u4")),
                                f"batch {k} slot {n}")
        with self.assertRaisesRegex(cudagray.Error, "Cannot read the model-info file /nonexistent/m"):
            read([source("white", 1, 8, 6)], model_info="/nonexistent/m")

    def test_three_sources_uint8(self):
        self.check([source("ball", 4, 64, 48, "YUY2"), source("ball", 4, 48, 36),
                    source("ball", 4, 160, 120, "I420")], "uint8", 0.0, 1.0, 16, 12, 4)


class Slots(unittest.TestCase):
    """Letterboxes, absent slots and the end of the stream."""

    def test_letterbox_transform_and_bars(self):
        width, height, mean, std = 16, 12, 0.25, 0.5
        # a wide and a tall white source: bars top and bottom, left and right
        sizes = [(32, 16), (24, 24)]
        batch, = read([source("white", 1, w, h) for w, h in sizes], width=width, height=height,
                      mean=mean, std=std)
        array = np.asarray(batch)
        white = np.float32((np.float32(1) - np.float32(mean)) / np.float32(std))
        bar = np.float32((np.float32(0) - np.float32(mean)) / np.float32(std))
        for n, (w, h) in enumerate(sizes):
            # the largest rectangle of the source's aspect ratio, centred
            if w * height >= h * width:
                dw, dh = width, width * h // w
            else:
                dw, dh = height * w // h, height
            self.assertEqual((dw * h, dh * w), (h * dw, w * dh), "sizes chosen to divide exactly")
            x0, y0 = (width - dw) // 2, (height - dh) // 2
            slot = batch.slots[n]
            self.assertEqual((slot.scale_x, slot.scale_y), (w / dw, h / dh))
            self.assertEqual((slot.offset_x, slot.offset_y), (-x0 * w / dw, -y0 * h / dh))
            # a slot's corners map to the source's
            self.assertEqual(slot.scale_x * (x0 + dw) + slot.offset_x, w)
            self.assertEqual(slot.scale_y * y0 + slot.offset_y, 0)
            expected = np.full((height, width), bar, np.float32)
            expected[y0:y0 + dh, x0:x0 + dw] = white
            self.assertTrue(np.array_equal(array[n, 0], expected), f"slot {n}: {array[n, 0]}")

    def test_a_source_that_ends_early_leaves_absent_slots_then_the_end(self):
        mean, std = 0.5, 2.0
        batches = read([source("white", 5, 32, 24), source("white", 2, 64, 48, "I420")],
                       width=8, height=6, mean=mean, std=std)
        self.assertEqual(len(batches), 5)
        black = np.float32((np.float32(0) - np.float32(mean)) / np.float32(std))
        period = 10**9 // 30
        for k, batch in enumerate(batches):
            self.assertAlmostEqual(batch.pts, k * period, delta=1)
            first, second = batch.slots
            self.assertEqual((first.source, first.present), (0, True))
            self.assertEqual(first.pts, batch.pts)
            self.assertEqual((first.scale_x, first.scale_y, first.offset_x, first.offset_y), (4, 4, 0, 0))
            array = np.asarray(batch)
            if k < 2:
                self.assertEqual((second.present, second.pts), (True, batch.pts))
                self.assertEqual((second.scale_x, second.scale_y), (8, 8))
                self.assertFalse(np.any(array[1] == black))
            else:
                self.assertEqual(tuple(second), (1, False, None, 0.0, 0.0, 0.0, 0.0))
                self.assertTrue(np.all(array[1] == black), array[1])

    def test_live_sources_on_the_clock(self):
        live = [source("white", 3, 32, 24) + ",framerate=30/1", source("black", 3, 16, 12, "I420")]
        live = [text.replace("videotestsrc ", "videotestsrc is-live=true ") for text in live]
        with cudagray.open_batch(live, width=8, height=6, dtype="uint8", backend="cpu", live=True,
                                 memory="auto") as reader:
            self.assertIn("! appsink sync=true videotestsrc is-live=true", reader.description)
            batches = list(reader)
        self.assertGreaterEqual(len(batches), 3)
        present = [[slot.present for slot in batch.slots] for batch in batches]
        self.assertEqual(sum(p[0] for p in present), 3, present)
        self.assertEqual(sum(p[1] for p in present), 3, present)
        for batch in batches:
            array = np.asarray(batch)
            self.assertTrue(np.all(array[0] == (255 if batch.slots[0].present else 0)))
            self.assertTrue(np.all(array[1] == 0))

    def test_batch_size_past_the_sources(self):
        batch, = read([source("white", 1, 32, 24)], width=8, height=6, dtype="uint8", batch_size=3)
        self.assertEqual(batch.shape, (3, 1, 6, 8))
        self.assertEqual([(s.source, s.present) for s in batch.slots], [(0, True), (None, False), (None, False)])
        array = np.asarray(batch)
        self.assertTrue(np.all(array[0] == 255) and np.all(array[1:] == 0))


class Protocols(unittest.TestCase):
    """What NumPy and PyTorch take without a copy, and what lives how long."""

    def setUp(self):
        self.reader = cudagray.open_batch([source("ball", 2, 64, 48), source("snow", 2, 32, 24, "I420")],
                                          width=16, height=12, dtype="float16", backend="cpu")
        self.batch = next(self.reader)

    def tearDown(self):
        self.reader.close()

    def test_numpy_takes_it_without_a_copy(self):
        interface = self.batch.__array_interface__
        self.assertEqual(interface["shape"], (2, 1, 12, 16))
        self.assertEqual(interface["typestr"], "<f2")
        self.assertEqual(interface["strides"], (384, 384, 32, 2))
        self.assertEqual(interface["data"][1], True)
        address = interface["data"][0]
        for array in (np.asarray(self.batch), np.from_dlpack(self.batch), np.asarray(memoryview(self.batch))):
            self.assertEqual(array.__array_interface__["data"][0], address)
            self.assertEqual(array.shape, (2, 1, 12, 16))
            self.assertEqual(array.dtype, np.float16)
            self.assertFalse(array.flags.writeable)
        self.assertEqual(memoryview(self.batch).format, "<e")
        self.assertTrue(memoryview(self.batch).readonly)
        self.assertEqual(self.batch.__dlpack_device__(), (1, 0))
        self.assertEqual(self.batch.device, "cpu")

    def test_dlpack_follows_the_array_api(self):
        with self.assertRaisesRegex(ValueError, "stream=1: an array in system memory"):
            self.batch.__dlpack__(stream=1)
        with self.assertRaises(TypeError):
            self.batch.__dlpack__(None)  # stream is keyword-only
        with self.assertRaisesRegex(BufferError, "dl_device"):
            self.batch.__dlpack__(dl_device=(2, 0))
        self.assertEqual(type(self.batch.__dlpack__(max_version=(1, 0))).__name__, "PyCapsule")
        copy = np.from_dlpack(_Copied(self.batch))
        self.assertNotEqual(copy.__array_interface__["data"][0], self.batch.__array_interface__["data"][0])
        self.assertTrue(np.array_equal(copy, np.asarray(self.batch)))

    def test_arrays_outlive_the_batch_and_the_reader(self):
        expected = np.array(self.batch)
        array = np.from_dlpack(self.batch)
        del self.batch
        self.reader.close()
        self.assertTrue(np.array_equal(array, expected))

    def test_torch_takes_it_without_a_copy(self):
        try:
            import torch
        except ImportError as error:
            self.skipTest(f"PyTorch is not importable ({error})")
        tensor = torch.from_dlpack(self.batch)
        self.assertEqual(tuple(tensor.shape), (2, 1, 12, 16))
        self.assertEqual(tensor.dtype, torch.float16)
        self.assertEqual(tensor.data_ptr(), self.batch.__array_interface__["data"][0])

    def test_pipeline_description_names_each_source_and_pad(self):
        self.assertRegex(self.reader.description,
                         r"^cudagraybatch name=cudagray width=16 height=12 dtype=float16 backend=cpu ! "
                         r"application/x-cudagray-batch ! appsink videotestsrc .* ! cudagray.sink_0 "
                         r"videotestsrc .* ! cudagray.sink_1$")
        self.assertRegex(self.reader.pipeline_description,
                         r" videotestsrc ! capsfilter ! cudagray.sink_0 videotestsrc ! capsfilter ! cudagray.sink_1$")


def int_sum(array):
    """The sum of a batch's elements as integers (their bits), exact on any device."""
    bits = {1: "int8", 2: "int16", 4: "int32"}[array.dtype.itemsize]
    return array.view(getattr(np, bits)).astype(np.int64).sum()


@unittest.skipIf(cuda_reason(), cuda_reason())
class CudaBatches(unittest.TestCase):
    """Batches in CUDA memory (backend="cuda", memory="cuda") for PyTorch."""

    SOURCES = [source("ball", 40, 320, 240), source("ball", 40, 160, 90, "NV12"),
               source("snow", 40, 64, 48, "I420"), source("ball", 40, 33, 17, "BGRx")]
    SETTINGS = dict(width=96, height=64, dtype="float16", mean=0.449, std=0.226)

    def system_batches(self):
        with cudagray.open_batch(self.SOURCES, backend="cpu", **self.SETTINGS) as reader:
            return [np.array(batch) for batch in reader]

    def test_cuda_batches_equal_the_cpus(self):
        import torch

        expected = self.system_batches()
        got = []
        with cudagray.open_batch(self.SOURCES, backend="cuda", memory="cuda", **self.SETTINGS) as reader:
            for batch in reader:
                self.assertEqual(batch.device, "cuda:0")
                self.assertEqual(batch.__dlpack_device__(), (2, 0))
                self.assertIn("on cuda", repr(batch))
                tensor = torch.from_dlpack(batch)
                self.assertEqual(tensor.data_ptr(), batch.__cuda_array_interface__["data"][0])
                self.assertEqual(tuple(tensor.shape), (4, 1, 64, 96))
                got.append(tensor.cpu().numpy())
        self.assertEqual(len(got), len(expected))
        for k, (cuda, cpu) in enumerate(zip(got, expected)):
            self.assertTrue(np.array_equal(cuda.view(np.int16), cpu.view(np.int16)), f"batch {k}")

    def test_reads_on_a_side_stream_after_the_batch_is_let_go(self):
        # the batch goes back to the element's pool only after the work
        # queued on the consumer's stream before it was let go
        import torch

        expected = [int_sum(batch) for batch in self.system_batches()]
        side = torch.cuda.Stream()
        weights = torch.rand(2048, 2048, device="cuda")
        sums = []
        with cudagray.open_batch(self.SOURCES, backend="cuda", memory="cuda", **self.SETTINGS) as reader:
            for batch in reader:
                with torch.cuda.stream(side):
                    tensor = torch.from_dlpack(batch)
                    for _ in range(6):
                        weights @ weights
                    sums.append(tensor.view(torch.int16).to(torch.int64).sum())
                del batch, tensor
        torch.cuda.synchronize()
        wrong = sum(int(total) != want for total, want in zip(sums, expected))
        self.assertEqual(len(sums), len(expected))
        self.assertEqual(wrong, 0, f"torch read another batch in {wrong} of {len(expected)}")

    def test_host_copy_and_record_stream(self):
        import torch

        expected = self.system_batches()[0]
        with cudagray.open_batch(self.SOURCES, backend="cuda", memory="cuda", **self.SETTINGS) as reader:
            batch = next(reader)
            copy = np.from_dlpack(_ToHost(batch))
            self.assertTrue(np.array_equal(copy.view(np.int16), expected.view(np.int16)))
            side = torch.cuda.Stream()
            batch.record_stream(side)
            with self.assertRaises(AttributeError):
                batch.__array_interface__
            with self.assertRaises(BufferError):
                memoryview(batch)


class _ToHost:
    """Asks a CUDA batch for a copy in system memory (dl_device (1, 0))."""

    def __init__(self, batch):
        self.batch = batch

    def __dlpack__(self, **kwargs):
        kwargs["dl_device"] = (1, 0)
        return self.batch.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)


class _Copied:
    """A consumer that asks for a copy (copy=True)."""

    def __init__(self, batch):
        self.batch = batch

    def __dlpack__(self, **kwargs):
        return self.batch.__dlpack__(copy=True)

    def __dlpack_device__(self):
        return self.batch.__dlpack_device__()


class Example(unittest.TestCase):
    def test_torch_batch_runs_or_skips_saying_why(self):
        example = os.path.join(os.environ.get("CUDAGRAY_SOURCE_DIR", os.path.dirname(__file__) + "/.."),
                               "examples", "torch_batch.py")
        run = subprocess.run([sys.executable, example, "--size", "64x48", "--batches", "3"],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        try:
            import torch  # noqa: F401
        except ImportError:
            self.assertRegex(run.stdout, r"skipped: .* cannot import PyTorch")
            return
        self.assertIn("batch 1: (4, 1, 48, 64) torch.float32 at 0 ns", run.stdout)
        self.assertRegex(run.stdout, r"source 3: strongest edge at slot \(\d+\.5, \d+\.5\), source")
        self.assertRegex(run.stdout, r"\n3 batches of 4 slots, 64x48, through the model on (cpu|cuda)\n$")


class Errors(unittest.TestCase):
    def test_arguments_are_checked(self):
        with self.assertRaisesRegex(TypeError, "non-empty list of sources"):
            cudagray.open_batch([])
        with self.assertRaisesRegex(TypeError, "non-empty list of sources"):
            cudagray.open_batch(source("white", 1, 8, 6))
        with self.assertRaisesRegex(ValueError, "memory must be cuda, system or auto, not gpu"):
            cudagray.open_batch([source("white", 1, 8, 6)], memory="gpu")
        with self.assertRaisesRegex(cudagray.Error, "batches cannot be in CUDA memory: backend=cpu "
                                                    "converts in system memory"):
            cudagray.open_batch([source("white", 1, 8, 6)], memory="cuda", backend="cpu")
        with self.assertRaisesRegex(TypeError, "cudagraybatch has no property max-frames"):
            cudagray.open_batch([source("white", 1, 8, 6)], max_frames=3)
        with self.assertRaisesRegex(ValueError, "cudagraybatch's dtype cannot be \"int8\""):
            cudagray.open_batch([source("white", 1, 8, 6)], dtype="int8")
        with self.assertRaisesRegex(ValueError, "cudagraybatch's batch-size cannot be \"65\""):
            cudagray.open_batch([source("white", 1, 8, 6)], batch_size=65)

    def test_the_elements_own_errors_are_exceptions(self):
        with self.assertRaisesRegex(cudagray.Error, "std 0 is not a finite number other than 0"):
            cudagray.open_batch([source("white", 1, 8, 6)], std=0)
        with self.assertRaisesRegex(cudagray.Error, "uint8 holds the gray itself"):
            cudagray.open_batch([source("white", 1, 8, 6)], dtype="uint8", mean=0.5)
        with self.assertRaisesRegex(cudagray.Error, 'no element "nosuchelement"'):
            cudagray.open_batch([source("white", 1, 8, 6), "videotestsrc ! nosuchelement"])
        with self.assertRaisesRegex(cudagray.Error, r"GstFileSrc:filesrc\d+: .*\n(?s:.*)No such file"):
            read([source("white", 1, 8, 6), "filesrc location=/nonexistent/a.mp4 ! decodebin"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
