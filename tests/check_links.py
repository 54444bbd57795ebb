#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Relative links of Markdown files that lead nowhere.

    check_links.py FILE.md ...

For every [text](target) and ![alt](target) outside code, where target is
not a URL: the file or folder it names (relative to the linking file) must
exist, and a #anchor must be a heading of the file it points into, as
GitHub makes anchors of headings. Prints one line per broken link
("FILE:LINE: target: why") and exits 1 when there is one, else 0.
"""
import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
URL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose_lines(path):
    """(line number, text) of each line outside fenced code, inline code removed."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            marker = re.match(r"^\s*(```|~~~)", line)
            if marker:
                fence = None if fence == marker.group(1) else fence or marker.group(1)
                continue
            if fence is None:
                yield number, re.sub(r"`[^`]*`", "", line)


def anchors(path):
    """The anchors GitHub gives the file's headings: lower case, punctuation
    dropped, spaces made hyphens, repeats numbered -1, -2, ..."""
    seen, found = {}, set()
    fence = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            marker = re.match(r"^\s*(```|~~~)", line)
            if marker:
                fence = None if fence == marker.group(1) else fence or marker.group(1)
                continue
            heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if fence or not heading:
                continue
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(path):
    for number, text in prose_lines(path):
        for target in LINK.findall(text):
            if URL.match(target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(linked):
                yield number, target, "no such file"
            elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
                yield number, target, f"no heading with anchor #{anchor} in {os.path.basename(linked)}"


def main(paths):
    broken = 0
    for path in paths:
        for number, target, why in broken_links(path):
            print(f"{path}:{number}: {target}: {why}")
            broken += 1
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
