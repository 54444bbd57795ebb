#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Plots a cudagray-bench CSV: frames per second of every measured row, one
panel per frame size, log scale, coloured by kind of row; with streams rows
(--streams) also PNG-streams.png: aggregate fps and p99 latency against N.

    bench/plot.py bench-results.csv bench-results.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {
    "element": "tab:green",
    "scaled": "tab:cyan",
    "kernel": "tab:blue",
    "npp": "tab:purple",
    "copy": "tab:gray",
    "raw": "tab:orange",
    "cpu": "tab:red",
}
LATENCY_NAMES = {
    "raw:latency": "raw CUDA",
    "latency:pinned": "cudagray, pinned pool",
    "latency:pageable": "cudagray, pageable",
}


def plot_streams(rows, png_path):
    rows = [r for r in rows if r["group"] == "streams"]
    if not rows:
        return
    fig, (fps_ax, p99_ax) = plt.subplots(1, 2, figsize=(12, 4.5))
    lines = {}
    for r in rows:
        name = f"{r['size']} {r['key'].split(':')[1]}, {r['gpus']} GPU"
        lines.setdefault(name, []).append(r)
    for name, line in lines.items():
        n = [int(r["streams"]) for r in line]
        fps_ax.plot(n, [float(r["fps"]) for r in line], marker="o", label=name)
        p99_ax.plot(n, [float(r["latency_p99_us"]) / 1e3 for r in line], marker="o", label=name)
    for ax, title in ((fps_ax, "aggregate frames per second"),
                      (p99_ax, "p99 latency, push to sink (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("streams at once (N)")
        ax.set_title(title, fontsize=9, loc="left")
        ax.grid(which="both", alpha=0.3)
    fps_ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    csv_path, png_path = argv[1], argv[2]
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    plot_streams(rows, png_path.removesuffix(".png") + "-streams.png")
    rows = [r for r in rows if r["group"] != "streams"]

    panels = []  # per size, in order: its bars and its latency rows
    for size in dict.fromkeys(r["size"] for r in rows):
        panels.append((size, [r for r in rows if r["size"] == size and r["group"] != "latency"],
                       [r for r in rows if r["size"] == size and r["group"] == "latency"]))
    if not panels:
        fig, ax = plt.subplots(figsize=(8, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, f"nothing measured in {csv_path}", ha="center", va="center")
        fig.savefig(png_path, dpi=120)
        return

    heights = [max(len(bars), 1) * 0.32 + 1.0 for _, bars, _ in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (size, bars, latency) in zip(axes[:, 0], panels):
        fps = [float(r["fps"]) for r in bars]
        ax.barh(range(len(bars)), fps, color=[COLOURS.get(r["group"], "tab:olive") for r in bars])
        ax.set_yticks(range(len(bars)))
        ax.set_yticklabels([r["what"] + (f" {r['format']}" if r["format"] else "") for r in bars],
                           fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.grid(axis="x", which="both", alpha=0.3)
        for i, value in enumerate(fps):
            ax.text(value, i, f" {value:,.0f}", va="center", fontsize=7)
        if fps:
            ax.set_xlim(min(fps) / 2, max(fps) * 4)
        first = (bars + latency)[0]
        dims = f"{first['width']}x{first['height']}"
        title = (size if size == dims else f"{size} ({dims})") + ": frames per second, log scale"
        if latency:
            title += "\nsingle-frame latency (median): " + ", ".join(
                f"{LATENCY_NAMES.get(r['key'], r['what'])} {float(r['us_per_frame']):.0f} us"
                for r in latency)
        ax.set_title(title, fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("frames per second")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


if __name__ == "__main__":
    main(sys.argv)
