#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What ./dev test prints after meson test: the cases, not the programs.

  summarize.py TESTLOG_JUNIT_XML TESTLOG_JSON FEATURES

Counts test cases from meson's JUnit report: a gtest program gives one per
TEST, a TAP script one per line (install, readme). Each skipped case counts
once, under its reason. Then each failed TAP case with the "#" lines that
follow it, from meson's JSON log (meson test --print-errorlogs shows a TAP
program's command alone), up to 40 lines a case. Then what was built, from
FEATURES (./dev's build_features, a line each): each "left out: " line
counts as a failure. The last line is "N passed, N failed".
"""
import collections
import json
import sys
import xml.etree.ElementTree as ET

SHOWN_LINES = 40  # of a failed TAP case's "#" lines


def count(junit):
    passed = failed = 0
    skipped = collections.Counter()  # reason: cases
    for case in ET.parse(junit).getroot().iter("testcase"):
        skip = case.find("skipped")
        if skip is not None:
            # gtest: "file:line\nreason"; TAP: the reason is the case's output
            reason = (skip.get("message") or "").split("\n", 1)[-1].strip()
            skipped[reason or (case.findtext("system-out") or "").strip() or "no reason given"] += 1
        elif case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
    return passed, failed, skipped


def failed_tap_cases(testlog):
    """Each failed test program's "not ok" lines and the "#" lines after them."""
    with open(testlog) as tests:
        failed = [test for test in map(json.loads, tests) if test["result"] in ("FAIL", "TIMEOUT", "ERROR")]
    for test in failed:
        shown = None  # "#" lines of the current failed case, None outside one
        for out in (test.get("stdout") or "").splitlines():
            if out.startswith("not ok"):
                shown = 0
            elif shown is not None and out.startswith("#"):
                shown += 1
            else:
                shown = None
                continue
            if shown <= SHOWN_LINES:
                yield f"{test['name']}: {out}"
            elif shown == SHOWN_LINES + 1:
                yield f"{test['name']}: # ... (the rest in meson-logs/testlog.txt)"


def main(junit, testlog, features):
    passed, failed, skipped = count(junit)
    if skipped:
        total = passed + failed + sum(skipped.values())
        print(f"{sum(skipped.values())} of {total} test cases skipped; why, and how many:")
        for reason, cases in skipped.most_common():
            print(f"{cases:6} {reason}")
        print('(meson\'s "Skipped" above counts test programs whose every case skipped)')
    for line in failed_tap_cases(testlog):
        print(line)
    for line in features.splitlines():
        if line.startswith("left out: "):
            failed += 1
            print(f"FAILED, {line}")
        else:
            print(line[0].upper() + line[1:])
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
