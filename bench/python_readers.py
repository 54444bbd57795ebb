#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a Python program pays for gray frames: NVDEC -> 640x360 GRAY8 tensors.

    python3 bench/python_readers.py [--readers 1,4] [--frames N] [--csv PATH] ...

bench/python-readers runs it with a build's plugin and module (and a
GStreamer bundle on a machine without GStreamer). One H.264 file is made
with x264enc, then each way of reading it runs in a process of its own, with
1 and 4 readers at once (threads), each reader decoding the file with
nvh264dec:

  cudagray-cuda      cudagray.open(..., memory="cuda"), torch.from_dlpack
  cudagray-system    cudagray.open(..., memory="system"), np.asarray, the upload
  pygobject-cudagray PyGObject: ... ! cudagray ! GRAY8 640x360 ! appsink,
                     pull-sample, map, NumPy, the upload
  pygobject-videoconvertscale
                     the same with videoconvertscale instead of cudagray
  opencv             cv2.VideoCapture(... ! videoconvertscale ! BGR 640x360 !
                     appsink, cv2.CAP_GSTREAMER), cvtColor to gray, the upload

where the upload is torch.from_numpy(array).cuda(). Each reader reads
--warmup frames, then every reader together --frames more: the figures are
from that window alone (start-up, warm-up and closing count in none): frames
a second of all readers together, the CPU time of the whole process
(time.process_time: every thread, GStreamer's included) per frame, and the
CPU time of the reading threads alone (time.thread_time: what the Python
code calling the reader spends, the decoding pipeline's threads left out)
per frame. The
reference is gst-launch-1.0 running the cudagray-cuda pipeline into
fakesink, N processes at once; its rate is taken from files of two lengths,
(long - short) frames / (long - short) seconds, so that its start-up counts
in neither (median of three runs each). nvh264dec alone into fakesink is
shown too: it bounds every row.

Targets (issue 37): cudagray-cuda at >= 0.95x the gst-launch rate; its CPU
time a frame <= 1/3 of pygobject-cudagray's (the same pipeline read through
PyGObject, so that the ratio is the module's own). A row whose module
(torch, gi, cv2) or element is missing says "skipped: why" and the run goes
on. Without a GPU, --decoder avdec_h264 --backend cpu --until numpy runs
what can run (the rows then end with NumPy arrays).
"""
import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings

PATHS = {
    "cudagray-cuda": 'cudagray.open(memory="cuda"), torch.from_dlpack (no copy)',
    "cudagray-system": 'cudagray.open(memory="system"), np.asarray, the upload',
    "pygobject-cudagray": "PyGObject: ... ! cudagray ! GRAY8 ! appsink, pull-sample, map, NumPy, the upload",
    "pygobject-videoconvertscale":
        "PyGObject: ... ! videoconvertscale ! GRAY8 ! appsink, pull-sample, map, NumPy, the upload",
    "opencv":
        "cv2.VideoCapture(... ! videoconvertscale ! BGR ! appsink, CAP_GSTREAMER), cvtColor, the upload",
}
# the row whose CPU time the target compares with: the plugin's own pipeline,
# read through PyGObject, so that the ratio is the module's alone
PYGOBJECT_PEER = "pygobject-cudagray"


class Unavailable(Exception):
    """A row that cannot run here: its module, element or device is missing."""


def gray_caps(args, cuda=False):
    features = "(memory:CUDAMemory)" if cuda else ""
    return f"video/x-raw{features},format=GRAY8,width={args.out_width},height={args.out_height}"


def decoded(args, path):
    return f"filesrc location={path} ! qtdemux ! h264parse ! {args.decoder}"


def cudagray_element(args):
    return "cudagray" + (f" backend={args.backend}" if args.backend else "")


# ---- the rows, each in a process of its own (--child) -------------------------


# Each row's opener runs once, in the child's main thread: it imports and
# checks what the row needs (raising Unavailable) and returns frames(path),
# one reader's generator of what the program gets.


def delivery(args):
    """What the program gets from a gray array: a CUDA tensor (torch), or with
    --until numpy the array (copied when it views memory that goes back right
    after). Returns deliver(array, owned)."""
    if args.until == "numpy":
        return lambda array, owned: array if owned else array.copy()
    try:
        import torch
    except ImportError as error:
        raise Unavailable(f"{sys.executable} has no torch ({error})")
    if not torch.cuda.is_available():
        raise Unavailable("torch sees no CUDA device")
    return lambda array, owned: torch.from_numpy(array).cuda()


def cudagray_opener(args, memory):
    try:
        import cudagray
    except ImportError as error:
        raise Unavailable(f"the cudagray module is not importable ({error}; PYTHONPATH=BUILD/python)")
    import numpy as np

    deliver = delivery(args)
    if memory == "cuda":
        if args.until == "numpy":
            raise Unavailable("frames in CUDA memory become torch tensors: not with --until numpy")
        if args.backend == "cpu":
            raise Unavailable("backend=cpu writes system memory")
        import torch

        consume = torch.from_dlpack
    else:
        def consume(frame):
            return deliver(np.asarray(frame), owned=True)
    properties = {"backend": args.backend} if args.backend else {}

    def frames(path):
        with cudagray.open(decoded(args, path), width=args.out_width, height=args.out_height,
                           memory=memory, **properties) as reader:
            for frame in reader:
                yield consume(frame)
    return frames


def pygobject_opener(args, convert):
    try:
        import gi

        gi.require_version("Gst", "1.0")
        from gi.repository import GLib, Gst
    except (ImportError, ValueError) as error:
        raise Unavailable(f"PyGObject's Gst is not importable in {sys.executable} ({error})")
    import numpy as np

    deliver = delivery(args)
    Gst.init(None)

    def frames(path):
        try:
            pipeline = Gst.parse_launch(f"{decoded(args, path)} ! {convert} ! {gray_caps(args)} ! appsink "
                                        "name=sink sync=false max-buffers=4 enable-last-sample=false")
        except GLib.Error as error:
            raise Unavailable(f"the pipeline does not parse: {error.message}")
        sink = pipeline.get_by_name("sink")
        pipeline.set_state(Gst.State.PLAYING)
        try:
            while True:
                sample = sink.emit("pull-sample")
                if sample is None:
                    message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
                    if message:
                        raise RuntimeError(f"GStreamer: {message.parse_error()[0].message}")
                    return
                buffer = sample.get_buffer()
                mapped, info = buffer.map(Gst.MapFlags.READ)
                if not mapped:
                    raise RuntimeError("the buffer does not map")
                try:
                    rows = np.frombuffer(info.data, np.uint8).reshape(args.out_height, -1)
                    yield deliver(rows[:, :args.out_width], owned=False)
                finally:
                    buffer.unmap(info)
        finally:
            pipeline.set_state(Gst.State.NULL)
    return frames


def opencv_opener(args):
    try:
        import cv2
    except ImportError as error:
        raise Unavailable(f"OpenCV (cv2) is not importable in {sys.executable} ({error})")
    gstreamer = [line.strip() for line in cv2.getBuildInformation().splitlines()
                 if line.strip().startswith("GStreamer:")]
    if not gstreamer or "YES" not in gstreamer[0]:
        raise Unavailable(f"OpenCV {cv2.__version__} is built without GStreamer "
                          f"({gstreamer[0] if gstreamer else 'no GStreamer line in its build information'})")
    deliver = delivery(args)

    def frames(path):
        description = (f"{decoded(args, path)} ! videoconvertscale ! video/x-raw,format=BGR,"
                       f"width={args.out_width},height={args.out_height} ! appsink sync=false "
                       "max-buffers=4 enable-last-sample=false")
        capture = cv2.VideoCapture(description, cv2.CAP_GSTREAMER)
        if not capture.isOpened():
            raise Unavailable(f"cv2.VideoCapture(..., CAP_GSTREAMER) does not open {description}")
        try:
            while True:
                read, bgr = capture.read()
                if not read:
                    return
                yield deliver(cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY), owned=True)
        finally:
            capture.release()
    return frames


def opener(args):
    return {
        "cudagray-cuda": lambda: cudagray_opener(args, "cuda"),
        "cudagray-system": lambda: cudagray_opener(args, "system"),
        "pygobject-cudagray": lambda: pygobject_opener(args, cudagray_element(args)),
        "pygobject-videoconvertscale": lambda: pygobject_opener(args, "videoconvertscale"),
        "opencv": lambda: opencv_opener(args),
    }[args.child]()


def child(args):
    """One row: args.readers readers in threads; prints its figures as JSON.
    The window is from every reader's end of warm-up to every reader's last
    frame; readers close only after it is measured."""
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    started, done = threading.Barrier(args.readers + 1), threading.Barrier(args.readers + 1)
    measured = threading.Event()
    failures, reading_cpu = [], []
    try:
        open_frames = opener(args)
    except Unavailable as error:
        print(json.dumps({"path": args.child, "readers": args.readers, "status": f"skipped: {error}"}))
        return

    def reader():
        frames = None
        try:
            frames = open_frames(args.file)
            for _ in range(args.warmup):
                next(frames)
            started.wait()
            held = None  # as a program holds its frame: each until the next
            cpu = time.thread_time()
            for _ in range(args.frames):
                held = next(frames)
            reading_cpu.append(time.thread_time() - cpu)
            done.wait()
            del held
            measured.wait()
        except threading.BrokenBarrierError:
            pass  # another reader failed
        except Exception as error:  # noqa: BLE001 (the row's status)
            ended = isinstance(error, StopIteration)
            failures.append(RuntimeError("the file ended first") if ended else error)
            started.abort()
            done.abort()
        finally:
            if frames is not None:
                frames.close()

    threads = [threading.Thread(target=reader) for _ in range(args.readers)]
    for thread in threads:
        thread.start()
    result = {"path": args.child, "readers": args.readers}
    try:
        started.wait()
        wall, cpu = time.perf_counter(), time.process_time()
        done.wait()
        if args.until == "torch":
            import torch

            torch.cuda.synchronize()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        frames = args.frames * args.readers
        result.update(frames=frames, seconds=wall, fps=frames / wall, cpu_us=cpu / frames * 1e6,
                      reader_cpu_us=sum(reading_cpu) / frames * 1e6)
    except threading.BrokenBarrierError:
        pass
    finally:
        measured.set()
    for thread in threads:
        thread.join()
    if failures:
        error = failures[0]
        unavailable = isinstance(error, Unavailable)
        result = {"path": args.child, "readers": args.readers,
                  "status": f"skipped: {error}" if unavailable else f"failed: {error!r}"}
    print(json.dumps(result), flush=True)


# ---- the run: files, gst-launch references, one process per row ------------------


def gst_launch(description):
    return subprocess.Popen(["gst-launch-1.0", "-q"] + description.split(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def launch_together(descriptions):
    """Runs the pipelines at once; the seconds until the last ends."""
    start = time.perf_counter()
    processes = [gst_launch(d) for d in descriptions]
    for process, description in zip(processes, descriptions):
        _, errors = process.communicate(timeout=600)
        if process.returncode:
            raise RuntimeError(f"gst-launch-1.0 {description}: exit {process.returncode}: "
                               f"{errors.strip()[-500:]}")
    return time.perf_counter() - start


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def launch_row(name, label, sink, files, readers):
    """gst-launch-1.0 of the decoded files into sink, `readers` processes at
    once: frames a second and CPU time a frame from the two lengths."""
    (short, short_path), (long, _) = files
    try:
        launch_together([f"{decoded(ARGS, short_path)} ! {sink}"] * readers)  # first runs' costs
        seconds, cpu = {}, {}
        for frames, path in files:
            before = children_cpu()
            seconds[frames] = statistics.median(
                launch_together([f"{decoded(ARGS, path)} ! {sink}"] * readers) for _ in range(3))
            cpu[frames] = children_cpu() - before
        frames = (long - short) * readers
        wall = seconds[long] - seconds[short]
        row = {"frames": frames, "seconds": wall, "fps": frames / wall,
               "cpu_us": (cpu[long] - cpu[short]) / (3 * frames) * 1e6}
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        row = {"status": f"failed: {error}"}
    return {"path": name, "label": label, "readers": readers, **row}


def python_row(name, readers, path):
    command = [sys.executable, os.path.abspath(__file__), "--child", name, "--readers", str(readers),
               "--file", path, "--frames", str(ARGS.frames), "--warmup", str(ARGS.warmup),
               "--decoder", ARGS.decoder, "--until", ARGS.until, "--out-size", ARGS.out_size]
    if ARGS.backend:
        command += ["--backend", ARGS.backend]
    row = {"path": name, "label": PATHS[name], "readers": readers}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=ARGS.row_timeout)
        lines = done.stdout.strip().splitlines()
        if done.returncode or not lines:
            tail = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
            return {**row, "status": f"failed: exit {done.returncode}: {tail[-300:]}"}
        return {**row, **json.loads(lines[-1])}
    except subprocess.TimeoutExpired:
        return {**row, "status": f"failed: no result within {ARGS.row_timeout} s"}


def encode(path, frames):
    subprocess.run(["gst-launch-1.0", "-q"] + (
        f"videotestsrc num-buffers={frames} pattern=ball ! video/x-raw,format=I420,width={ARGS.width},"
        f"height={ARGS.height},framerate=30/1 ! x264enc speed-preset=ultrafast ! h264parse ! mp4mux ! "
        f"filesink location={path}").split(), check=True, timeout=600)


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def report(rows, reference):
    by_readers = {}
    for row in rows:
        by_readers.setdefault(row["readers"], {})[row["path"]] = row
    upload = "torch.from_numpy(array).cuda()" if ARGS.until == "torch" else "none (--until numpy)"
    print(f"\n== {ARGS.decoder} {ARGS.width}x{ARGS.height} H.264 -> {ARGS.out_size} GRAY8; "
          f"{ARGS.frames} frames a reader after {ARGS.warmup} of warm-up; the upload: {upload} ==")
    columns = "{:<30} {:>7} {:>9} {:>12} {:>12} {:>14} {:>15} {:>14}"
    print(columns.format("path", "readers", "fps", "x gst-launch", "CPU us/frame", "CPU x PyGObject",
                         "reader us/frame", "reader x PyG."))
    for readers, named in sorted(by_readers.items()):
        base = named.get(reference, {}).get("fps")
        peer = named.get(PYGOBJECT_PEER, {})
        for name, row in named.items():
            if "status" in row:
                print(f"{name:<30} {readers:>7} {row['status']}")
                continue
            reader_cpu = row.get("reader_cpu_us")  # none in gst-launch's rows
            print(columns.format(name, readers, f"{row['fps']:.1f}", ratio(row["fps"], base),
                                 f"{row['cpu_us']:.1f}", ratio(row["cpu_us"], peer.get("cpu_us")),
                                 "-" if reader_cpu is None else f"{reader_cpu:.1f}",
                                 ratio(reader_cpu, peer.get("reader_cpu_us"))))
    print("\nRows:")
    for name, label in dict((row["path"], row["label"]) for row in rows).items():
        print(f"  {name:<28} {label}")

    print("\nTargets (issue 37):")
    passed = True
    for readers, named in sorted(by_readers.items()):
        cuda, launch, peer = (named.get(k, {}) for k in ("cudagray-cuda", reference, PYGOBJECT_PEER))
        checks = [("cudagray-cuda fps / gst-launch fps", cuda.get("fps"), launch.get("fps"), ">=", 0.95),
                  ("cudagray-cuda CPU / PyGObject CPU", cuda.get("cpu_us"), peer.get("cpu_us"), "<=", 1 / 3)]
        for what, value, of, sense, target in checks:
            if not value or not of:
                print(f"  n/a  {readers} reader(s): {what}: a row is missing (see above)")
                continue
            met = value / of >= target if sense == ">=" else value / of <= target
            passed = passed and met
            print(f"  {'met ' if met else 'MISS'} {readers} reader(s): {what} = {value / of:.3f} "
                  f"(target {sense} {target:.3g})")
    return passed


def write_csv(path, rows):
    fields = ["path", "readers", "frames", "seconds", "fps", "cpu_us", "reader_cpu_us", "status", "label"]
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fields, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "status": row.get("status", "ok")})


def main():
    with tempfile.TemporaryDirectory() as directory:
        long = ARGS.warmup + ARGS.frames + 60  # what the decoder reads ahead of the last frame
        files = [(ARGS.short, os.path.join(directory, "short.mp4")),
                 (long, os.path.join(directory, "long.mp4"))]
        for frames, path in files:
            encode(path, frames)
        cuda_out = ARGS.backend != "cpu"
        reference = "gst-launch:cudagray"
        sink = "fakesink sync=false"
        rows = []
        for readers in ARGS.readers:
            rows.append(launch_row("gst-launch:decoder", f"gst-launch-1.0 ... ! {ARGS.decoder} ! {sink}",
                                   sink, files, readers))
            into = f"{cudagray_element(ARGS)} ! {gray_caps(ARGS, cuda_out)} ! {sink}"
            rows.append(launch_row(reference, f"gst-launch-1.0 ... ! {ARGS.decoder} ! {into} (the reference)",
                                   into, files, readers))
            for name in ARGS.paths:
                print(f"[{readers} reader(s)] {name} ...", file=sys.stderr, flush=True)
                rows.append(python_row(name, readers, files[1][1]))
        passed = report(rows, reference)
        if ARGS.csv:
            write_csv(ARGS.csv, rows)
            print(f"\nCSV: {ARGS.csv}")
    return 0 if passed else 1


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readers", default="1,4", help="readers at once, e.g. 1,4")
    parser.add_argument("--frames", type=int, default=2000, help="frames a reader, measured")
    parser.add_argument("--warmup", type=int, default=100, help="frames a reader, before")
    parser.add_argument("--short", type=int, default=300, help="frames of gst-launch's short file")
    parser.add_argument("--size", default="1920x1080", help="the H.264 file's frame size")
    parser.add_argument("--out-size", default="640x360", help="the gray frames' size")
    parser.add_argument("--decoder", default="nvh264dec")
    parser.add_argument("--backend", default="", help="cudagray's backend property (default: its own)")
    parser.add_argument("--until", choices=["torch", "numpy"], default="torch",
                        help="what the rows end with: CUDA tensors, or NumPy arrays (no GPU)")
    parser.add_argument("--paths", default=",".join(PATHS), help="rows, of: " + ", ".join(PATHS))
    parser.add_argument("--row-timeout", type=int, default=300, help="seconds a row may take")
    parser.add_argument("--csv", help="also write the rows here")
    parser.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.width, args.height = (int(n) for n in args.size.split("x"))
    args.out_width, args.out_height = (int(n) for n in args.out_size.split("x"))
    if not args.child:
        args.readers = [int(n) for n in args.readers.split(",")]
        args.paths = args.paths.split(",")
        unknown = set(args.paths) - set(PATHS)
        if unknown:
            parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
        if args.short >= args.warmup + args.frames:
            parser.error("--short must be below --warmup + --frames")
    else:
        args.readers = int(args.readers)
    return args


if __name__ == "__main__":
    ARGS = parse()
    if ARGS.child:
        child(ARGS)
    else:
        sys.exit(main())
