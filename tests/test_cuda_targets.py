#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A build compiles the CUDA code it announces, and no other (issue 38).

meson.build announces "CUDA code: TARGETS (why)", sm_XX being machine code
for one GPU generation and compute_XX PTX, or "CUDA backend: disabled (why)";
./dev prints that line. TAP, one line a check:
  - this build's plugin holds exactly the announced images in its fatbinary
    (the .nv_fatbin section, read below as cuobjdump --list-elf --list-ptx
    would list it), or has no fatbinary when the CUDA backend is off;
  - a build folder set up as ./dev demo sets a new one up
    (-Dcuda-architectures=native), on this machine as it is (with no GPU: the
    CPU backend alone) and on machines
    whose nvidia-smi reports no GPU, one of compute capability 8.6, or two of
    7.5 and one newer than nvcc knows, announces the CPU backend alone, or
    machine code for those GPUs alone (PTX of nvcc's newest architecture for
    the newer one); and nvcc, asked with -dryrun what each CUDA compile command
    of that build puts into its fatbinary, names exactly the announced images.
Usage: test_cuda_targets.py BUILD_DIR SOURCE_DIR MESON [NVCC]
"""
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile

build_dir, source_dir, meson = sys.argv[1:4]
nvcc = sys.argv[4] if len(sys.argv) > 4 else ""
checks = 0


def report(ok, name, detail=""):
    global checks
    checks += 1
    print(f"{'ok' if ok else 'not ok'} {checks} - {name}")
    for line in detail.splitlines() if not ok else []:
        print(f"# {line}")


def announced(build):
    """The CUDA code build's meson announced: a set of targets, empty when
    its CUDA backend is off; None when it said neither."""
    with open(os.path.join(build, "meson-logs", "meson-log.txt")) as log:
        lines = [line.rstrip("\n") for line in log if line.startswith("Message: CUDA ")]
    for line in reversed(lines):
        if line.startswith("Message: CUDA code: "):
            return set(line[len("Message: CUDA code: "):].split(" (", 1)[0].split())
        if line.startswith("Message: CUDA backend: disabled"):
            return set()
    return None


def elf_section(path, name):
    """The bytes of an ELF64 little-endian file's section NAME, or None."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x7fELF\x02\x01", f"{path}: not a 64-bit little-endian ELF file"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):  # name, offset, size
        base = shoff + i * shentsize
        return struct.unpack_from("<I", data, base)[0], *struct.unpack_from("<QQ", data, base + 0x18)

    _, strings, _ = header(shstrndx)
    for i in range(shnum):
        name_at, offset, size = header(i)
        if data[strings + name_at:data.index(b"\0", strings + name_at)] == name.encode():
            return data[offset:offset + size]
    return None


def fatbin_images(section):
    """The images of a .nv_fatbin section, as sm_XX (machine code) and
    compute_XX (PTX). Its layout, as nvcc 12 and 13 write it: fatbinaries one
    after the other (zeros may pad between), each a header (u32 magic
    0xBA55ED50, u16 version, u16 header size, u64 size of what follows) and
    then images, each a header (u16 kind: 1 PTX, 2 ELF; u16; u32 header size;
    u64 size of the image; ...; at byte 28 the u32 architecture, 86 for
    sm_86) and the image."""
    images, at = set(), 0
    while at < len(section):
        if section[at] == 0:
            at += 1
            continue
        magic, _, header_size, size = struct.unpack_from("<IHHQ", section, at)
        if magic != 0xBA55ED50:
            raise ValueError(f"no fatbinary header at byte {at} of .nv_fatbin (magic {magic:#x})")
        image, end = at + header_size, at + header_size + size
        while image < end:
            kind, _, image_header_size, image_size = struct.unpack_from("<HHIQ", section, image)
            arch, = struct.unpack_from("<I", section, image + 28)
            if kind not in (1, 2):
                raise ValueError(f"image of unknown kind {kind} at byte {image} of .nv_fatbin")
            images.add(f"{'compute' if kind == 1 else 'sm'}_{arch}")
            image += image_header_size + image_size
        at = end
    return images


def dryruns(build):
    """(source, nvcc -dryrun's completed process) for each CUDA compile
    command of build."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = [c for c in json.load(f) if c["file"].endswith(".cu")]
    env = dict(os.environ, PATH=os.path.dirname(nvcc) + os.pathsep + os.environ["PATH"])
    for command in commands:
        yield os.path.basename(command["file"]), subprocess.run(
            shlex.split(command["command"]) + ["-dryrun"], cwd=command["directory"], env=env,
            capture_output=True, text=True)


def dryrun_images(build):
    """{source: images} for each CUDA compile command of build: what nvcc
    -dryrun says fatbinary would be given (--image3=kind=elf|ptx,sm=N)."""
    found = {}
    for source, run in dryruns(build):
        images = {("sm_" if kind == "elf" else "compute_") + arch
                  for kind, arch in re.findall(r"--image3=kind=(elf|ptx),sm=(\d+)", run.stdout + run.stderr)}
        found[source] = images if run.returncode == 0 else \
            f"nvcc -dryrun failed ({run.returncode}): {run.stderr[-2000:]}"
    return found


def front_end_runs(build):
    """{source: how many times nvcc -dryrun runs cicc, its front end} for
    each CUDA compile command of build."""
    return {source: len(re.findall(r'^#\$ "?(?:\S*/)?cicc"? ', run.stdout + run.stderr, re.M))
            for source, run in dryruns(build)}


def fake_nvidia_smi(directory, capabilities):
    """An nvidia-smi in directory that reports GPUs of these compute
    capabilities, or, given none, fails as without a driver."""
    os.makedirs(directory)
    path = os.path.join(directory, "nvidia-smi")
    with open(path, "w") as f:
        if capabilities:
            f.write("#!/bin/sh\nprintf '%s\\n'" + "".join(f" {c}" for c in capabilities) + "\n")
        else:
            f.write("#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the "
                    "NVIDIA driver.\"\nexit 9\n")
    os.chmod(path, 0o755)
    return directory


def demo_setup(name, scratch, nvidia_smi_dir, expect):
    """Sets a build folder up as ./dev demo sets a new one up, with nvidia_smi_dir
    first on PATH (None: this machine as it is); checks that it announces
    expect (None: whatever this machine's nvidia-smi implies, checked by the
    dry run alone) and that its CUDA compile commands make exactly that."""
    build = os.path.join(scratch, name.replace(" ", "-"))
    path = os.environ["PATH"]
    if nvcc:
        path = os.path.dirname(nvcc) + os.pathsep + path
    if nvidia_smi_dir:
        path = nvidia_smi_dir + os.pathsep + path
    setup = subprocess.run([meson, "setup", build, source_dir, "-Dcuda-architectures=native", "-Dtests=disabled"],
                           env=dict(os.environ, PATH=path), capture_output=True, text=True)
    if setup.returncode != 0:
        report(False, f"{name}: the demo's meson setup", setup.stdout[-3000:] + setup.stderr[-3000:])
        return
    said = announced(build)
    if expect is not None and said != expect:
        report(False, f"{name}: announces {' '.join(sorted(expect)) or 'the CPU backend alone'}",
               f"it announced: {said}")
        return
    made = dryrun_images(build)
    wrong = {source: images for source, images in made.items() if images != said}
    if said:
        what = f"announces {' '.join(sorted(said))}, and nvcc compiles {', '.join(sorted(made))} for exactly that"
    else:
        what = "announces the CPU backend alone, and compiles no CUDA source"
    report(said is not None and not wrong and (not said or "convert_cuda.cu" in made), f"{name}: {what}",
           f"announced {said}; the CUDA compile commands make {made}")


# This build's plugin against its announcement.
plugin = os.path.join(build_dir, "plugin", "libgstcudagray.so")
said = announced(build_dir)
section = elf_section(plugin, ".nv_fatbin")
holds = fatbin_images(section) if section is not None else set()
report(said is not None and holds == said,
       f"this build's plugin holds the CUDA code it announced: {' '.join(sorted(said or [])) or 'none'}",
       f"announced {said}; the plugin's .nv_fatbin holds {holds if section is not None else 'no such section'}")

# One PTX for every machine code (meson.build): nvcc's front end, most of a
# build's time, runs once a CUDA source, not once an architecture.
if said and nvcc:
    runs = front_end_runs(build_dir)
    report(runs and all(n == 1 for n in runs.values()),
           f"nvcc runs its front end once for each CUDA source: {', '.join(sorted(runs))}",
           f"cicc runs per source: {runs}")
elif said:
    print(f"ok {checks + 1} - # SKIP nvcc's front-end runs: no nvcc given")
    checks += 1

with tempfile.TemporaryDirectory() as scratch:
    try:
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.split()
    except FileNotFoundError:
        gpus = []
    demo_setup(f"this machine ({'GPUs of compute capability ' + ', '.join(gpus) if gpus else 'no GPU'})",
               scratch, None, None if gpus else set())
    demo_setup("no GPU (nvidia-smi fails, as without a driver)", scratch, fake_nvidia_smi(os.path.join(scratch, "no-gpu"), []), set())
    if not nvcc:
        print(f"ok {checks + 1} - # SKIP GPUs of compute capability 8.6: no nvcc")
        print(f"ok {checks + 2} - # SKIP GPUs of compute capability 7.5 and 99.0: no nvcc")
        checks += 2
    else:
        newest_ptx = max((int(c[len("compute_"):]) for c in subprocess.run(
            [nvcc, "--list-gpu-arch"], capture_output=True, text=True, check=True).stdout.split()
            if c[len("compute_"):].isdigit()))
        demo_setup("a GPU of compute capability 8.6", scratch,
                   fake_nvidia_smi(os.path.join(scratch, "gpu-86"), ["8.6"]), {"sm_86"})
        demo_setup("GPUs of compute capability 7.5, 7.5 and 99.0", scratch,
                   fake_nvidia_smi(os.path.join(scratch, "gpus-75-990"), ["7.5", "7.5", "99.0"]),
                   {"sm_75", f"compute_{newest_ptx}"})
print(f"1..{checks}")
