#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The cudagray Python module (python/, issue 32) against the element itself.

Reference frames come from the element through a plain appsink pipeline
(PyGObject, where gi imports); CUDA frames (PyTorch, CuPy) are compared with
the CPU path. tests/meson.build runs this with Debian's python3 and
PYTHONPATH at build/python; tests/gpu-python.sh runs it on the GPU machine.
"""
import ctypes
import gc
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import warnings

import numpy as np

import cudagray

try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import Gst, GstVideo

    Gst.init(None)
    NO_GI = None
except (ImportError, ValueError) as error:
    NO_GI = f"PyGObject's Gst is not importable ({error}): no appsink reference here"


def cuda_reason():
    """None when PyTorch sees a CUDA device, else why the CUDA tests skip."""
    try:
        import torch
    except ImportError as error:
        return f"PyTorch is not importable ({error})"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    return None


NO_CUDA = cuda_reason()

# a moving ball, so that every frame differs; odd sizes, so rows are padded
BALL = "videotestsrc num-buffers={n} pattern=ball ! video/x-raw,format=RGB,width={w},height={h}"


def ball(n=20, w=161, h=97):
    return BALL.format(n=n, w=w, h=h)


def reference(source, caps="video/x-raw,format=GRAY8", **properties):
    """The element's own frames through a plain appsink: [(pts, rows)]."""
    settings = " ".join(f"{k.replace('_', '-')}={v}" for k, v in properties.items())
    pipeline = Gst.parse_launch(f"{source} ! cudagray {settings} ! {caps} ! appsink name=sink sync=false")
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    frames = []
    while True:
        sample = sink.emit("try-pull-sample", 30 * Gst.SECOND)
        if sample is None:
            break
        buffer = sample.get_buffer()
        info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
        meta = GstVideo.buffer_get_video_meta(buffer)
        stride = meta.stride[0] if meta else info.stride[0]
        dtype = np.uint8 if info.finfo.format == GstVideo.VideoFormat.GRAY8 else np.dtype("<u2")
        data = np.frombuffer(buffer.extract_dup(0, buffer.get_size()), np.uint8)
        rows = np.lib.stride_tricks.as_strided(
            data[: stride * info.height], (info.height, info.width * np.dtype(dtype).itemsize), (stride, 1))
        frames.append((buffer.pts, rows.copy().view(dtype)))
    error = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    assert error is None, error.parse_error()
    assert frames, f"no frames from {source}"
    return frames


def rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class ArrayInterfaceOnly:
    """A frame seen by NumPy through __array_interface__ alone (no buffer protocol)."""

    def __init__(self, frame):
        self.__array_interface__ = frame.__array_interface__
        self.frame = frame


def data_address(array):
    return array.__array_interface__["data"][0]


# DLPack's structures (dlpack.h 1.x), read through ctypes: NumPy before 2.1
# (Debian 12's 1.24) takes no versioned capsule
class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


READ_ONLY, IS_COPIED = 1, 2
ctypes.pythonapi.PyCapsule_IsValid.restype = ctypes.c_int
ctypes.pythonapi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Tensor:
    """What a DLTensor says, read while its capsule lives: data, device_type,
    device_id, ndim, row_stride (in elements) and, in system memory, rows."""

    def __init__(self, tensor):
        self.data, self.device_type, self.device_id = tensor.data, tensor.device_type, tensor.device_id
        self.ndim, self.row_stride = tensor.ndim, tensor.strides[0]
        self.rows = host_rows(tensor) if tensor.device_type == 1 else None


def open_capsule(capsule):
    """(name, version or None, flags or None, Tensor) of an unused DLPack capsule."""
    for name, structure in ((b"dltensor_versioned", DLManagedTensorVersioned), (b"dltensor", DLManagedTensor)):
        if ctypes.pythonapi.PyCapsule_IsValid(capsule, name):
            managed = structure.from_address(ctypes.pythonapi.PyCapsule_GetPointer(capsule, name))
            if structure is DLManagedTensor:
                return name.decode(), None, None, Tensor(managed.dl_tensor)
            return name.decode(), (managed.major, managed.minor), managed.flags, Tensor(managed.dl_tensor)
    raise AssertionError(f"{capsule!r} is no unused DLPack capsule")


def host_rows(tensor):
    """The rows of a 2-D DLTensor in system memory, copied into a NumPy array."""
    dtype = np.dtype(np.uint8) if tensor.bits == 8 else np.dtype("<u2")
    shape = (tensor.shape[0], tensor.shape[1])
    strides = (tensor.strides[0] * dtype.itemsize, tensor.strides[1] * dtype.itemsize)
    size = (shape[0] - 1) * strides[0] + shape[1] * dtype.itemsize
    return np.ndarray(shape, dtype, buffer=ctypes.string_at(tensor.data, size), strides=strides).copy()


@unittest.skipIf(NO_GI, NO_GI)
class SystemFrames(unittest.TestCase):
    """Frames in system memory (the CPU backend) equal the element's own."""

    def check_equal(self, source, format, caps, **options):
        expected = reference(source, caps, backend="cpu")
        with cudagray.open(source, format=format, backend="cpu", **options) as reader:
            frames = list(reader)
        self.assertEqual(len(frames), len(expected))
        for frame, (pts, rows) in zip(frames, expected):
            self.assertEqual(frame.device, "cpu")
            self.assertEqual(frame.shape, rows.shape)
            self.assertEqual(frame.dtype, rows.dtype.name)
            self.assertEqual(frame.pts, pts)
            through_interface = np.asarray(ArrayInterfaceOnly(frame))
            for array in (np.asarray(frame), np.from_dlpack(frame), np.asarray(memoryview(frame)),
                          through_interface):
                np.testing.assert_array_equal(array, rows)
                self.assertEqual(array.strides, frame.strides)
                # no copy: every array sees the frame's own memory
                self.assertEqual(data_address(array), frame.__array_interface__["data"][0])
        return frames

    def test_gray8_equal_to_appsink(self):
        frames = self.check_equal(ball(), "GRAY8", "video/x-raw,format=GRAY8")
        self.assertGreater(frames[0].strides[0], frames[0].shape[1], "161-pixel rows are padded")
        self.assertEqual(frames[0].dtype, "uint8")

    def test_gray16_equal_to_appsink(self):
        frames = self.check_equal(ball(), "GRAY16", "video/x-raw,format=GRAY16_LE")
        self.assertEqual(frames[0].dtype, "uint16")

    def test_scaled_equal_to_appsink(self):
        try:
            with cudagray.open(ball(n=1), width=80, height=48, backend="cpu") as reader:
                list(reader)
        except cudagray.Error as error:
            if "not-negotiated" not in str(error):
                raise
            reason = str(error).splitlines()[-1]
            self.skipTest(f"cudagray cannot scale yet: it refused 161x97 to 80x48 ({reason})")
        self.check_equal(ball(), "GRAY8", "video/x-raw,format=GRAY8,width=80,height=48", width=80,
                         height=48)

    def test_frames_held_while_the_stream_goes_on(self):
        expected = reference(ball(n=120), backend="cpu")
        held, copies = [], []
        with cudagray.open(ball(n=120), backend="cpu") as reader:
            for index, frame in enumerate(reader):
                array = np.asarray(frame)
                if index < 50:
                    held.append(array)
                    copies.append(array.copy())
        self.assertEqual(index, 119)
        self.assertEqual(len({data_address(a) for a in held}), 50, "50 distinct buffers held")
        for array, copy, (_, rows) in zip(held, copies, expected):
            np.testing.assert_array_equal(array, copy)
            np.testing.assert_array_equal(array, rows)

    def test_arrays_outlive_the_reader(self):
        expected = reference(ball(), backend="cpu")
        reader = cudagray.open(ball(), backend="cpu")
        arrays = [(np.asarray(frame), np.from_dlpack(frame)) for frame in reader]
        reader.close()
        self.assertTrue(reader.closed)
        del reader
        gc.collect()
        # buffers of a stopped pipeline, its pool gone: overwrite what is free
        list(cudagray.open(ball(), backend="cpu"))
        for (through_buffer, through_dlpack), (_, rows) in zip(arrays, expected):
            np.testing.assert_array_equal(through_buffer, rows)
            np.testing.assert_array_equal(through_dlpack, rows)

    def test_end_of_stream_ends_the_iteration(self):
        with cudagray.open(ball(n=7), backend="cpu") as reader:
            self.assertEqual(len(list(reader)), 7)
            self.assertEqual(list(reader), [])
        # closed, wherever a reading thread is: the iteration ends
        self.assertTrue(reader.closed)
        self.assertEqual(list(reader), [])

    def test_dlpack_stream_of_a_system_frame(self):
        # the array API: on the CPU only None is a stream; 0 is no stream
        # anywhere; stream is keyword-only
        with cudagray.open(ball(n=1), backend="cpu") as reader:
            frame, = reader
        self.assertIsNotNone(frame.__dlpack__(stream=None))
        for stream in (-1, 0, 1, 2, 12345):
            with self.assertRaisesRegex(ValueError, f"stream={stream}: an array in system memory"):
                frame.__dlpack__(stream=stream)
        with self.assertRaises(TypeError):
            frame.__dlpack__(stream="default")
        with self.assertRaisesRegex(TypeError, "positional"):
            frame.__dlpack__(None)
        with self.assertRaisesRegex(ValueError, "a frame in system memory has no stream"):
            frame.record_stream(1)

    def test_dlpack_versions(self):
        # DLPack 1.x for a consumer that takes it (max_version), with the
        # read-only flag; the unversioned tensor for the others
        (_, rows), = reference(ball(n=1), backend="cpu")
        with cudagray.open(ball(n=1), backend="cpu") as reader:
            frame, = reader
        address = frame.__array_interface__["data"][0]
        cases = {None: ("dltensor", None, None), (0, 8): ("dltensor", None, None),
                 (1, 0): ("dltensor_versioned", (1, 0), READ_ONLY),
                 (1, 1): ("dltensor_versioned", (1, 1), READ_ONLY),
                 (1, 7): ("dltensor_versioned", (1, 1), READ_ONLY),
                 (2, 0): ("dltensor_versioned", (1, 1), READ_ONLY)}
        for max_version, (name, version, flags) in cases.items():
            capsule = frame.__dlpack__(max_version=max_version)
            got_name, got_version, got_flags, tensor = open_capsule(capsule)
            self.assertEqual((got_name, got_version, got_flags), (name, version, flags), max_version)
            self.assertEqual((tensor.data, tensor.device_type, tensor.ndim), (address, 1, 2))
            np.testing.assert_array_equal(tensor.rows, rows)
        for wrong in ("1.0", (1,), (1, "0"), (-1, 0)):
            with self.assertRaisesRegex(TypeError, "max_version must be a tuple"):
                frame.__dlpack__(max_version=wrong)
        # every capsule let go unused gave its reference to the frame back
        del capsule
        gc.collect()
        self.assertEqual(sys.getrefcount(frame), 2)

    def test_dlpack_copy_and_device(self):
        (_, rows), = reference(ball(n=1), backend="cpu")
        with cudagray.open(ball(n=1), backend="cpu") as reader:
            frame, = reader
        address = frame.__array_interface__["data"][0]
        for copy, device in ((False, None), (None, None), (None, (1, 0)), (False, (1, 0))):
            _, _, flags, tensor = open_capsule(frame.__dlpack__(max_version=(1, 0), copy=copy, dl_device=device))
            self.assertEqual((tensor.data, flags), (address, READ_ONLY), (copy, device))
        for max_version in ((1, 0), None):
            capsule = frame.__dlpack__(max_version=max_version, copy=True)
            _, _, flags, tensor = open_capsule(capsule)
            # a copy of its own, writable, rows without padding
            self.assertNotEqual(tensor.data, address)
            self.assertEqual(flags, None if max_version is None else IS_COPIED)
            self.assertEqual(tensor.row_stride, rows.shape[1])
            np.testing.assert_array_equal(tensor.rows, rows)
        with self.assertRaisesRegex(BufferError, r"dl_device: cudagray hands an array over on its own device"):
            frame.__dlpack__(dl_device=(2, 0))
        with self.assertRaisesRegex(ValueError, "stream=1: an array in system memory"):
            frame.__dlpack__(copy=True, stream=1)
        del capsule
        gc.collect()
        self.assertEqual(sys.getrefcount(frame), 2, "a copy holds no reference to the frame")

    def write_clip(self, path, n=6):
        """An AVI of n MJPEG frames of a moving ball, 161x97."""
        encode = Gst.parse_launch(f"videotestsrc num-buffers={n} pattern=ball"
                                  " ! video/x-raw,format=I420,width=161,height=97 ! jpegenc ! avimux"
                                  " ! filesink name=file")
        encode.get_by_name("file").set_property("location", path)
        encode.set_state(Gst.State.PLAYING)
        message = encode.get_bus().timed_pop_filtered(120 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
        encode.set_state(Gst.State.NULL)
        self.assertEqual(message.type, Gst.MessageType.EOS, message.parse_error() if message.type != Gst.MessageType.EOS else "")

    def test_open_a_file_path_or_uri(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "ball clip.avi")
            self.write_clip(path)
            expected = reference(f'filesrc location="{path}" ! decodebin', backend="cpu")
            uri = Gst.filename_to_uri(path)
            here = os.getcwd()
            for source in (path, uri, os.path.relpath(path), "ball clip.avi"):
                os.chdir(directory if source == "ball clip.avi" else here)
                try:
                    reader = cudagray.open(source, backend="cpu")
                finally:
                    os.chdir(here)
                with reader:
                    frames = [np.asarray(frame).copy() for frame in reader]
                    chosen = reader.pipeline_description
                    self.assertEqual(reader.description, f"uridecodebin uri={uri} ! cudagray backend=cpu"
                                     " ! video/x-raw, format=(string)GRAY8 ! appsink")
                self.assertEqual(len(frames), len(expected), source)
                for array, (_, rows) in zip(frames, expected):
                    np.testing.assert_array_equal(array, rows)
                # the decoding chosen, from the file on (no GPU here: jpegdec)
                self.assertTrue(chosen.startswith(f'filesrc location="{path}" ! '), chosen)
                self.assertIn(" ! avidemux ! ", chosen)
                self.assertIn(" ! jpegdec ! ", chosen)
                self.assertTrue(chosen.endswith(" ! cudagray backend=cpu ! video/x-raw, format=(string)GRAY8"
                                                " ! appsink"), chosen)
                self.assertEqual(reader.pipeline_description, reader.description, "closed: description")

    def test_open_names_what_is_missing(self):
        with self.assertRaisesRegex(cudagray.Error, "/no/such/clip.avi"):
            cudagray.open("/no/such/clip.avi", backend="cpu")
        with self.assertRaisesRegex(cudagray.Error, "v4l2src.*\n?.*/dev/video-none|/dev/video-none"):
            cudagray.open("/dev/video-none", backend="cpu")
        # a fragment of one element, no file of that name: a pipeline
        with cudagray.open("videotestsrc num-buffers=2", backend="cpu") as reader:
            self.assertEqual(len(list(reader)), 2)
            self.assertTrue(reader.description.startswith("videotestsrc num-buffers=2 ! cudagray"))

    def test_frame_from_sample(self):
        (_, rows), = reference(ball(n=1), backend="cpu")
        pipeline = Gst.parse_launch(f"{ball(n=1)} ! cudagray backend=cpu ! video/x-raw,format=GRAY8 ! appsink name=sink")
        pipeline.set_state(Gst.State.PLAYING)
        sample = pipeline.get_by_name("sink").emit("try-pull-sample", 30 * Gst.SECOND)
        frame = cudagray.frame_from_sample(sample)
        pipeline.set_state(Gst.State.NULL)
        del sample, pipeline
        gc.collect()
        np.testing.assert_array_equal(np.from_dlpack(frame), rows)
        with self.assertRaises(TypeError):
            cudagray.frame_from_sample(Gst.Caps.from_string("video/x-raw"))


class InChildProcess:
    """Runs code in a python3 of its own, so that a hang or a crash fails the
    test instead of ending the run."""

    def run_child(self, code, send_signal=None):
        """With send_signal, sends it once the child printed its first line.
        Gives (stdout, stderr)."""
        process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        first = ""
        if send_signal is not None:
            first = process.stdout.readline()
            process.send_signal(send_signal)
        try:
            output, errors = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            output, errors = process.communicate()
            self.fail(f"no exit within 120 s; output {first + output!r}, stderr {errors[-2000:]!r}")
        self.assertFalse("CRITICAL" in errors, errors[-2000:])
        self.assertEqual(process.returncode, 0, errors[-2000:])
        return first + output, errors


class Reader(InChildProcess, unittest.TestCase):
    """What needs no reference: errors, Ctrl-C, memory over 10^5 frames."""

    def test_a_pipeline_that_does_not_parse_names_the_element(self):
        with self.assertRaisesRegex(cudagray.Error, 'no element "nosuchelement"'):
            cudagray.open("videotestsrc ! nosuchelement")

    def test_errors_while_running_name_the_element(self):
        # names count up in a process: the element is known by its path
        with self.assertRaisesRegex(cudagray.Error,
                                    r"^/GstPipeline:pipeline\d+/GstFileSrc:filesrc\d+: .*\n(?s:.*)No such file"):
            with cudagray.open("filesrc location=/nonexistent/a.mp4 ! decodebin", backend="cpu") as reader:
                list(reader)
        with self.assertRaisesRegex(cudagray.Error, "GstCudaGray:cudagray: Invalid weights"):
            with cudagray.open(ball(), backend="cpu", weights="0.3,0.6") as reader:
                list(reader)

    def test_properties_are_checked(self):
        with self.assertRaisesRegex(TypeError, "no property max-frames"):
            cudagray.open(ball(), max_frames=3)
        with self.assertRaisesRegex(ValueError, 'backend cannot be "gpu"'):
            cudagray.open(ball(), backend="gpu")
        with self.assertRaisesRegex(ValueError, "format must be"):
            cudagray.open(ball(), format="RGB")
        with cudagray.open(ball(n=1), backend="cpu", max_inflight=1, weights=(0.25, 0.5, 0.25)) as reader:
            self.assertIn("max-inflight=1 weights=0.25,0.5,0.25", reader.description)
            self.assertEqual(len(list(reader)), 1)

    def test_memory_auto_is_system_with_the_cpu_backend(self):
        with cudagray.open(ball(n=1), backend="cpu", memory="auto") as reader:
            frame, = reader
        self.assertEqual(frame.device, "cpu")
        self.assertEqual(frame.__dlpack_device__(), (1, 0))
        with self.assertRaises(AttributeError):
            frame.__cuda_array_interface__
        with self.assertRaisesRegex(cudagray.Error, "backend=cpu"):
            cudagray.open(ball(n=1), backend="cpu", memory="cuda")

    def test_bus_warnings_reach_the_warnings_module_once_each(self):
        # matrix does not apply to YUV input: cudagray warns once, on any machine
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with cudagray.open(ball(n=5).replace("RGB", "I420"), backend="cpu", matrix="bt709") as reader:
                self.assertEqual(len(list(reader)), 5)
        ours = [str(w.message) for w in caught if issubclass(w.category, cudagray.Warning)]
        self.assertEqual(len(ours), 1, [str(w.message) for w in caught])
        self.assertRegex(ours[0], r"^/GstPipeline:pipeline\d+/GstCudaGray:cudagray: matrix and weights do not apply")
        self.assertTrue(issubclass(cudagray.Warning, RuntimeWarning))

    def test_memory_auto_is_system_when_the_backend_falls_back_to_the_cpu(self):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with cudagray.open(ball(n=3), memory="auto") as reader:
                opened = [str(w.message) for w in caught if issubclass(w.category, cudagray.Warning)]
                frames = list(reader)
        fallback = [text for text in opened if "Converting on the CPU instead" in text]
        if not fallback and frames and frames[0].device != "cpu":
            self.skipTest("cudagray converts with CUDA here (CudaFrames checks the fallback with a fault)")
        self.assertEqual(len(fallback), 1, opened)
        self.assertEqual([frame.device for frame in frames], ["cpu"] * 3)

    def test_keyboard_interrupt_stops_the_pipeline(self):
        child = textwrap.dedent("""
            import cudagray
            reader = cudagray.open("videotestsrc is-live=true ! video/x-raw,width=64,height=48,framerate=1/1",
                                   backend="cpu")
            try:
                for frame in reader:
                    print("reading", flush=True)
            except KeyboardInterrupt:
                print("interrupted, closed:", reader.closed, flush=True)
        """)
        process = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
        self.assertEqual(process.stdout.readline(), "reading\n")
        time.sleep(0.3)  # into the wait for the next frame, due 1 s after the first
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
        self.assertEqual(output, "interrupted, closed: True\n")
        self.assertEqual(process.returncode, 0)

    # a live source whose second frame is an hour away: next() waits for it
    LIVE_HOUR = "videotestsrc is-live=true ! video/x-raw,width=64,height=48,framerate=1/3600"

    def test_close_from_another_thread_ends_a_waiting_next(self):
        output, _ = self.run_child(f"""
            import threading, cudagray
            reader = cudagray.open("{self.LIVE_HOUR}", backend="cpu")
            first_frame = threading.Event()
            ended = []
            def read():
                try:
                    for frame in reader:
                        first_frame.set()  # the next frame waits an hour
                    ended.append("StopIteration")
                except BaseException as error:
                    ended.append(repr(error))
                    first_frame.set()
            worker = threading.Thread(target=read, daemon=True)
            worker.start()
            assert first_frame.wait(60), "no first frame in 60 s"
            closer = threading.Thread(target=reader.close, daemon=True)
            closer.start()
            closer.join(60)
            worker.join(60)
            print("close returned:", not closer.is_alive(), "next:", ended, "closed:", reader.closed)
        """)
        self.assertEqual(output, "close returned: True next: ['StopIteration'] closed: True\n")

    def test_close_from_a_signal_handler_ends_the_iteration(self):
        output, _ = self.run_child(f"""
            import signal, cudagray
            reader = cudagray.open("{self.LIVE_HOUR}", backend="cpu")
            signal.signal(signal.SIGTERM, lambda *_: reader.close())
            for frame in reader:
                print("reading", flush=True)
            print("ended, closed:", reader.closed)
        """, send_signal=signal.SIGTERM)
        self.assertEqual(output, "reading\nended, closed: True\n")

    def test_types_are_not_made_from_python(self):
        output, _ = self.run_child("""
            import cudagray
            for make in (cudagray.Frame, cudagray.Reader):
                try:
                    made = make()
                    print(make.__name__, "made:", made.pts if make is cudagray.Frame else made.description)
                except TypeError as error:
                    print(make.__name__, "TypeError")
        """)
        self.assertEqual(output, "Frame TypeError\nReader TypeError\n")

    def test_rss_flat_over_100000_frames(self):
        source = "videotestsrc num-buffers=100000 pattern=ball ! video/x-raw,format=RGB,width=64,height=48"
        with cudagray.open(source, backend="cpu") as reader:
            for index, frame in enumerate(reader):
                np.from_dlpack(frame)[0, 0] + np.asarray(frame)[-1, -1]
                if index == 10000:
                    rss_at_10000 = rss_bytes()
        self.assertEqual(index, 99999)
        growth = rss_bytes() - rss_at_10000
        self.assertLess(growth, 1 << 20, f"RSS grew by {growth} bytes over 9 * 10^4 frames")


@unittest.skipIf(NO_CUDA, NO_CUDA)
class CudaFrames(InChildProcess, unittest.TestCase):
    """Frames kept in CUDA memory, read by PyTorch and CuPy (GPU machine)."""

    UPLOADED = ("videotestsrc num-buffers={n} pattern=ball ! video/x-raw,format=RGBA,width=641,height=481"
                " ! cudaupload ! video/x-raw(memory:CUDAMemory)")

    def cpu_path(self, source, **options):
        with cudagray.open(source, backend="cpu", memory="system", **options) as reader:
            return [np.asarray(frame).copy() for frame in reader]

    def check_torch(self, source, reference_source, **options):
        import torch

        expected = self.cpu_path(reference_source, **options)
        with cudagray.open(source, memory="cuda", **options) as reader:
            tensors = []
            for frame in reader:
                self.assertEqual(frame.device, "cuda:0")
                tensor = torch.from_dlpack(frame)
                self.assertEqual(tensor.stride(), (frame.strides[0] // frame.strides[1], 1))
                self.assertEqual(tensor.data_ptr(), frame.__cuda_array_interface__["data"][0])
                tensors.append(tensor)
        self.assertEqual(len(tensors), len(expected))
        for tensor, rows in zip(tensors, expected):  # after the reader is closed
            np.testing.assert_array_equal(tensor.cpu().numpy(), rows)

    def test_torch_uploaded_frames_equal_the_cpu_path(self):
        self.check_torch(self.UPLOADED.format(n=30), ball(n=30, w=641, h=481).replace("RGB", "RGBA"))
        self.check_torch(self.UPLOADED.format(n=30), ball(n=30, w=641, h=481).replace("RGB", "RGBA"),
                         format="GRAY16")

    def test_torch_decoded_frames_equal_the_cpu_path(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "ball.mp4")
            encode = (f"videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=640,height=360"
                      f" ! x264enc ! h264parse ! mp4mux ! filesink location={path}")
            subprocess.run(["gst-launch-1.0", "-q"] + encode.split(), check=True, timeout=120)
            decoded = f"filesrc location={path} ! qtdemux ! h264parse ! nvh264dec"
            self.check_torch(decoded, decoded + " ! cudadownload")

    def test_cupy_frames_equal_the_cpu_path(self):
        try:
            import cupy
        except ImportError as error:
            self.skipTest(f"CuPy is not importable ({error})")
        expected = self.cpu_path(ball(n=10, w=641, h=481).replace("RGB", "RGBA"))
        with cudagray.open(self.UPLOADED.format(n=10), memory="cuda") as reader:
            for frame, rows in zip(reader, expected):
                np.testing.assert_array_equal(cupy.from_dlpack(frame).get(), rows)
                np.testing.assert_array_equal(cupy.asarray(frame).get(), rows)

    def test_a_consumer_on_another_stream_sees_complete_frames(self):
        import torch

        source = ("videotestsrc num-buffers=1000 pattern=ball ! video/x-raw,format=RGBA,width=1920,height=1080"
                  " ! cudaupload ! video/x-raw(memory:CUDAMemory)")
        expected = [int(rows.sum(dtype=np.int64)) for rows in
                    self.cpu_path(source.replace(" ! cudaupload ! video/x-raw(memory:CUDAMemory)", ""))]
        stream = torch.cuda.Stream()
        tensors, sums = [], []
        with cudagray.open(source, memory="cuda", max_inflight=16) as reader, torch.cuda.stream(stream):
            for frame in reader:
                # torch passes its current stream: it waits for cudagray's work
                tensors.append(torch.from_dlpack(frame))
                sums.append(tensors[-1].sum(dtype=torch.int64))
        stream.synchronize()  # before the tensors (and their buffers) go
        self.assertEqual([int(s) for s in sums], expected)

    # 640x360 frames that differ one from the next: a frame given back to
    # cudagray's pool too early is overwritten, and its sum changes
    STREAMED = UPLOADED.format(n=300).replace("641,height=481", "640,height=360")

    def streamed_sums(self):
        reference_source = self.STREAMED.replace(" ! cudaupload ! video/x-raw(memory:CUDAMemory)", "")
        return [int(rows.sum(dtype=np.int64)) for rows in self.cpu_path(reference_source)]

    def import_cupy(self):
        try:
            import cupy
        except ImportError as error:
            self.skipTest(f"CuPy is not importable ({error})")
        return cupy

    def test_dlpack_stream_values(self):
        import torch

        with cudagray.open(self.UPLOADED.format(n=1), memory="cuda") as reader:
            frame, = reader
        # the DLPack specification: 0 is ambiguous, refused
        with self.assertRaisesRegex(ValueError, "stream=0"):
            frame.__dlpack__(stream=0)
        with self.assertRaisesRegex(ValueError, "stream=-2"):
            frame.__dlpack__(stream=-2)
        for stream in (None, 1, 2, -1, torch.cuda.Stream().cuda_stream):
            self.assertIsNotNone(frame.__dlpack__(stream=stream), stream)
        # read-only, as the buffer protocol says of system frames
        self.assertIs(frame.__cuda_array_interface__["data"][1], True)
        with self.assertRaisesRegex(TypeError, "positional"):
            frame.__dlpack__(1)

    def test_dlpack_versions_and_copies_of_a_cuda_frame(self):
        import torch

        rows, = self.cpu_path(ball(n=1, w=641, h=481).replace("RGB", "RGBA"))
        with cudagray.open(self.UPLOADED.format(n=1), memory="cuda") as reader:
            frame, = reader
        address = frame.__cuda_array_interface__["data"][0]
        name, version, flags, tensor = open_capsule(frame.__dlpack__(stream=1, max_version=(1, 0)))
        self.assertEqual((name, version, flags), ("dltensor_versioned", (1, 0), READ_ONLY))
        self.assertEqual((tensor.data, tensor.device_type, tensor.device_id), (address, 2, 0))
        # PyTorch and CuPy take the versioned, read-only tensor (they pass
        # max_version where they know DLPack 1.x)
        np.testing.assert_array_equal(torch.from_dlpack(frame).cpu().numpy(), rows)
        # dl_device (1, 0): a copy in system memory, writable
        for max_version, copy in (((1, 0), None), ((1, 0), True), (None, None)):
            name, _, flags, tensor = open_capsule(frame.__dlpack__(max_version=max_version, dl_device=(1, 0),
                                                                   copy=copy))
            self.assertEqual((tensor.device_type, flags), (1, None if max_version is None else IS_COPIED))
            np.testing.assert_array_equal(tensor.rows, rows)
        with self.assertRaisesRegex(BufferError, "copy=False, and an array in CUDA memory"):
            frame.__dlpack__(dl_device=(1, 0), copy=False)
        with self.assertRaisesRegex(BufferError, "only to system memory"):
            frame.__dlpack__(copy=True)
        with self.assertRaisesRegex(ValueError, "stream=1: an array in system memory"):
            frame.__dlpack__(dl_device=(1, 0), stream=1)
        with self.assertRaisesRegex(ValueError, "stream=0"):
            frame.record_stream(0)
        with self.assertRaisesRegex(TypeError, "stream must be an int or a stream object"):
            frame.record_stream("default")

    def test_open_a_file_decodes_with_nvdec(self):
        import torch

        if subprocess.run(["gst-inspect-1.0", "--exists", "nvh264dec"]).returncode != 0:
            self.skipTest("GStreamer has no nvh264dec (nvcodec) here")
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "ball.mp4")
            encode = (f"videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=640,height=360"
                      f" ! x264enc ! h264parse ! mp4mux ! filesink location={path}")
            subprocess.run(["gst-launch-1.0", "-q"] + encode.split(), check=True, timeout=120)
            expected = self.cpu_path(f"filesrc location={path} ! qtdemux ! h264parse ! nvh264dec ! cudadownload")
            with cudagray.open(path, memory="cuda") as reader:
                tensors = [torch.from_dlpack(frame) for frame in reader]
                chosen = reader.pipeline_description
        # nvcodec's H.264 decoder (nvh264dec, or another name of another release)
        self.assertRegex(chosen, f"^filesrc location={re.escape(path)} ! .* ! nvh264[a-z]* ! cudagray ! ")
        self.assertEqual(len(tensors), len(expected))
        for tensor, rows in zip(tensors, expected):
            np.testing.assert_array_equal(tensor.cpu().numpy(), rows)

    def test_two_consumers_each_keep_the_frame_until_done(self):
        # torch on a stream kept busy, then CuPy on an idle one, both letting
        # go at once: the frame waits for both (it went back to the pool when
        # CuPy's stream was done, and torch read a later picture in 856 of
        # 900 frames). torch's sum, queued right behind the busy work, runs
        # as soon as the event recorded at its __dlpack__ is done.
        import torch

        cupy = self.import_cupy()
        expected = self.streamed_sums()
        busy, idle = torch.cuda.Stream(), cupy.cuda.Stream(non_blocking=True)
        weights = torch.rand(2048, 2048, device="cuda")
        torch_sums, cupy_sums = [], []
        with cudagray.open(self.STREAMED, memory="cuda", max_inflight=4) as reader:
            for frame in reader:
                with torch.cuda.stream(busy):
                    for _ in range(8):
                        torch.mm(weights, weights)
                    torch_sums.append(torch.from_dlpack(frame).sum(dtype=torch.int64))
                with idle:
                    cupy_sums.append(cupy.from_dlpack(frame).sum(dtype=cupy.int64))
                del frame  # and both arrays of it, already gone
        busy.synchronize()
        idle.synchronize()
        self.assertEqual([int(total) for total in cupy_sums], expected)
        wrong = sum(int(total) != want for total, want in zip(torch_sums, expected))
        self.assertEqual(wrong, 0, f"torch read the wrong picture in {wrong} of {len(expected)} frames")

    def test_a_consumer_stream_destroyed_before_the_frame_is_let_go(self):
        # `with cupy.cuda.Stream():` lets go of the stream at the end of the
        # block, while the array and the frame live on: the release must not
        # touch a destroyed stream (it crashed the interpreter); the frame
        # holds the stream's object, so the stream goes after the release
        self.import_cupy()
        expected = self.streamed_sums()[:90]
        output, _ = self.run_child(f"""
            import cupy, cudagray
            sums = []
            source = {self.STREAMED.replace("num-buffers=300", "num-buffers=90")!r}
            with cudagray.open(source, memory="cuda") as reader:
                for frame in reader:
                    with cupy.cuda.Stream():
                        gray = cupy.from_dlpack(frame)
                        total = gray.sum(dtype=cupy.int64)
                        sums.append(int(total))
                    del frame, gray  # after their stream is gone
            print(sums)
        """)
        self.assertEqual(output, f"{expected}\n")

    def test_per_thread_default_stream_of_the_exporting_thread(self):
        # stream=2 is the per-thread default stream of the thread that calls
        # __dlpack__: the frame waits for that thread's stream even when
        # another thread lets it go (it waited for the releasing thread's)
        import threading

        cupy = self.import_cupy()
        expected = self.streamed_sums()
        weights = cupy.random.rand(2048, 2048, dtype=cupy.float32)
        sums, handed_over = [], []

        def consume(frame):
            with cupy.cuda.Stream.ptds:  # CuPy passes stream=2
                for _ in range(8):
                    weights @ weights
                gray = cupy.from_dlpack(frame)
                sums.append(gray.sum(dtype=cupy.int64))
            handed_over.append((frame, gray))  # let go by the main thread

        with cudagray.open(self.STREAMED, memory="cuda", max_inflight=4) as reader:
            for frame in reader:
                worker = threading.Thread(target=consume, args=(frame,))
                worker.start()
                worker.join(60)
                self.assertFalse(worker.is_alive(), "the consumer thread did not finish in 60 s")
                del frame
                handed_over.clear()
        cupy.cuda.runtime.deviceSynchronize()
        wrong = sum(int(total) != want for total, want in zip(sums, expected))
        self.assertEqual((len(sums), wrong), (len(expected), 0), "frames read, wrong pictures")

    def test_cuda_array_interface_consumer_on_a_busy_stream(self):
        # no stream handshake: the frame waits at release for the legacy
        # default stream, so for every blocking stream (CuPy's by default)
        cupy = self.import_cupy()
        expected = self.streamed_sums()
        weights = cupy.random.rand(2048, 2048, dtype=cupy.float32)
        busy = cupy.cuda.Stream()
        sums = []
        with cudagray.open(self.STREAMED, memory="cuda", max_inflight=4) as reader:
            for frame in reader:
                interface = frame.__cuda_array_interface__
                self.assertIs(interface["data"][1], True, "read-only")
                with busy:
                    for _ in range(8):
                        weights @ weights
                    sums.append(cupy.asarray(frame).sum(dtype=cupy.int64))
                del frame
        busy.synchronize()
        wrong = sum(int(total) != want for total, want in zip(sums, expected))
        self.assertEqual(wrong, 0, f"CuPy read the wrong picture in {wrong} of {len(expected)} frames")

    def test_memory_auto_follows_the_fallback_to_the_cpu(self):
        # a fault-injection build (CI's): the CUDA backend fails to open, so
        # backend=auto converts on the CPU, and memory="auto" must then give
        # system-memory frames rather than a negotiation error
        import ctypes

        plugin = ctypes.CDLL(os.path.join(os.environ["GST_PLUGIN_PATH_1_0"], "libgstcudagray.so"))
        if not hasattr(plugin, "cudagray_inject_cuda_fault"):
            self.skipTest("the plugin was built without -Dfault-injection=enabled")
        expected = self.cpu_path(ball(n=5))
        plugin.cudagray_inject_cuda_fault(b"cudaGetDevice")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with cudagray.open(ball(n=5), memory="auto") as reader:
                    frames = list(reader)
        finally:
            plugin.cudagray_inject_cuda_fault(b"")
        self.assertTrue(any("Converting on the CPU instead" in str(w.message) for w in caught
                            if issubclass(w.category, cudagray.Warning)), [str(w.message) for w in caught])
        self.assertEqual([frame.device for frame in frames], ["cpu"] * 5)
        for frame, rows in zip(frames, expected):
            np.testing.assert_array_equal(np.asarray(frame), rows)

    def test_device_memory_flat_over_10000_frames(self):
        # The free memory read is the device's: nothing else may allocate on
        # it meanwhile (tests/gpu-python.sh is run alone on the GPU).
        import torch

        source = self.UPLOADED.format(n=10000).replace("641,height=481", "320,height=240")
        with cudagray.open(source, memory="cuda") as reader:
            for index, frame in enumerate(reader):
                torch.from_dlpack(frame).float().mean()
                if index == 1000:
                    torch.cuda.synchronize()
                    free_at_1000 = torch.cuda.mem_get_info()[0]
        torch.cuda.synchronize()
        lost = free_at_1000 - torch.cuda.mem_get_info()[0]
        self.assertLess(lost, 16 << 20, f"device memory fell by {lost} bytes over 9000 frames")


if __name__ == "__main__":
    unittest.main(verbosity=2)
