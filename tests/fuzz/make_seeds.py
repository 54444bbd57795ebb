#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the seed corpus of tests/fuzz/corpus: one small input per case,
in the byte language fuzz_element.cpp reads (op = byte % 10; see its switch).
Run from anywhere; it rewrites the seed-* files and leaves crash-* ones."""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
FORMATS = ["RGB", "BGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGBA", "BGRA", "ARGB", "ABGR", "RGBP", "BGRP",
           "GBR", "I420", "YV12", "NV12", "NV21", "Y444", "Y42B", "GRAY8", "GRAY16_LE", "RGB16", "v210", "AYUV64",
           "YUY2", "UYVY", "YVYU", "AYUV", "VUYA", "P010_10LE", "P012_LE", "P016_LE", "I420_10LE",
           "I420_12LE", "I422_10LE", "I422_12LE", "Y444_10LE", "Y444_12LE", "Y444_16LE", "GBR_10LE",
           "GBR_12LE", "RGB10A2_LE", "BGR10A2_LE", "GBRA", "GRAY16_BE", "r210", "RGB8P", "RGBA64_BE",
           "RGB15", "IYU1", "v216", "Y410", "NV12_10LE40", "GRAY10_LE32", "Y212_BE", "UYVP"]


def caps(fmt, w, h, colorimetry=4):
    # dimension(): a byte below 200 is 1 + b % 96
    return [0, FORMATS.index(fmt), w - 1, h - 1, colorimetry]


def frame(seed=7):
    return [2, seed]


def seeds():
    for fmt in FORMATS:
        yield f"format-{fmt}", [4] + caps(fmt, 33, 17) + frame() + frame(99) + [6, 2]
    yield "limited-range-I420", [1] + caps("I420", 64, 48, 0) + frame() + [6, 2]
    yield "full-range-NV12", [1] + caps("NV12", 64, 48, 1) + frame()
    yield "short-buffer", [1] + caps("RGB", 64, 48) + [4, 0xFB, 3, 5] + frame()
    yield "long-buffer", [1] + caps("RGBx", 64, 48) + [4, 0x05, 7, 5]
    # meta: same size, format kept, 3 planes, offsets/strides from the bytes
    yield "meta-RGBP", [1] + caps("RGBP", 16, 4) + [5, 1, 3, 1, 1, 1, 3, 0, 0, 3, 0, 0, 3, 0, 0, 3, 0, 0]
    yield "meta-wild", [1] + caps("BGRA", 16, 4) + [5, 0, 0x10, 0, 0, 0, 1, 1, 1, 2, 0, 8, 0, 0xFF, 0xFF]
    yield "flush-midstream", [8] + caps("RGB", 64, 48) + frame() + frame() + [6, 0] + frame() + [6, 2]
    yield "gap-and-eos", [3] + caps("BGR", 20, 20) + frame() + [6, 1] + frame() + [6, 2] + frame()
    yield "flush-start-only", [3] + caps("BGR", 20, 20) + frame() + [6, 3] + frame()
    yield "weights", [1] + caps("RGB", 8, 8) + [7, 0, 14] + list(b"0.5,0.25,0.125") + frame()
    yield "bad-weights", [1] + caps("RGB", 8, 8) + [7, 0, 7] + list(b"nan,0,0") + frame()
    yield "matrix-and-inflight", [1] + caps("RGB", 8, 8) + [7, 1, 2, 7, 2, 16] + frame() + [9]
    yield "state-cycle", [2] + caps("RGBA", 32, 32) + frame() + [8, 1] + frame() + [8, 0] + frame()
    yield "caps-change", [4] + caps("RGB", 64, 48) + frame() + caps("GRAY8", 64, 48) + frame() \
        + caps("GBR", 7, 3) + frame() + caps("NV21", 10, 6) + frame()
    yield "refused-caps", [4] + caps("RGB", 8, 8) + frame() + caps("RGB8P", 8, 8) + frame()
    yield "bayer-short-buffers", [1] + caps("RGB", 33, 17, 4) + [4, 0xF0, 3, 4, 0x10, 5] + caps("RGB", 8, 8, 4) \
        + [4, 0x01, 1]
    yield "v210-short-buffer", [1] + caps("v210", 13, 5) + [4, 0xFB, 3, 5] + frame()
    yield "caps-change-depths", [4] + caps("P010_10LE", 64, 48) + frame() + caps("GRAY16_BE", 7, 3) + frame() \
        + caps("YUY2", 9, 5) + frame() + caps("BGR10A2_LE", 10, 6) + frame()
    yield "audio-caps", [1] + [0, 0, 7, 7, 3] + frame()
    yield "width-16384", [1, 0, FORMATS.index("RGBx"), 202, 3, 4] + frame()
    yield "width-16385", [1, 0, FORMATS.index("RGB"), 203, 3, 4] + frame()
    yield "width-0", [1, 0, FORMATS.index("RGB"), 200, 3, 4] + frame()


def main():
    os.makedirs(HERE, exist_ok=True)
    for name in os.listdir(HERE):
        if name.startswith("seed-"):
            os.remove(os.path.join(HERE, name))
    for name, data in seeds():
        with open(os.path.join(HERE, f"seed-{name}"), "wb") as f:
            f.write(bytes(b & 0xFF for b in data))


if __name__ == "__main__":
    main()
