#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""summarize.py: what ./dev test (and so CI) prints after meson test."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SUMMARIZE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "summarize.py")

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="validate">
    <testcase name="gst-validate built"/>
    <testcase name="cpu: pause_resume"><failure/></testcase>
  </testsuite>
  <testsuite name="element">
    <testcase name="Element.Passes"/>
    <testcase name="Cuda.Converts"><skipped message="test.cpp:12&#10;no usable CUDA device"/></testcase>
  </testsuite>
</testsuites>
"""


def test_log(name, result, stdout):
    return {"name": name, "result": result, "stdout": stdout, "returncode": 1, "command": [name]}


class Summarize(unittest.TestCase):
    def summarize(self, tests, features="built: plugin"):
        with tempfile.TemporaryDirectory() as tmp:
            junit, testlog = os.path.join(tmp, "testlog.junit.xml"), os.path.join(tmp, "testlog.json")
            with open(junit, "w") as out:
                out.write(JUNIT)
            with open(testlog, "w") as out:
                out.writelines(json.dumps(test) + "\n" for test in tests)
            run = subprocess.run([sys.executable, SUMMARIZE, junit, testlog, features],
                                 capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.stdout.splitlines()

    def test_counts_cases_and_skip_reasons(self):
        lines = self.summarize([test_log("element", "OK", "")])
        self.assertEqual(lines, [
            "1 of 4 test cases skipped; why, and how many:",
            "     1 no usable CUDA device",
            '(meson\'s "Skipped" above counts test programs whose every case skipped)',
            "Built: plugin",
            "2 passed, 1 failed",
        ])

    def test_a_failed_tap_case_is_shown_with_its_comment_lines(self):
        # meson test --print-errorlogs shows a TAP program's command alone:
        # the summary is where CI's output says why a case failed
        stdout = ("ok 1 - gst-validate built\n"
                  "# the control's own issues\n"
                  "not ok 2 - cpu: pause_resume\n"
                  "# issues the control does not raise:\n"
                  "# warning event::x on test:src\n"
                  "ok 3 - cpu: seek_forward\n"
                  "# control also: warning y\n"
                  "1..3\n")
        lines = self.summarize([test_log("validate", "FAIL", stdout),
                                test_log("readme", "OK", "not ok 1 - # TODO\n# no\n")])
        self.assertEqual(lines[3:6], [
            "validate: not ok 2 - cpu: pause_resume",
            "validate: # issues the control does not raise:",
            "validate: # warning event::x on test:src",
        ])
        self.assertEqual(lines[6:], ["Built: plugin", "2 passed, 1 failed"])

    def test_a_long_failure_is_cut_at_40_lines(self):
        stdout = "not ok 1 - long\n" + "".join(f"# line {n}\n" for n in range(100)) + "not ok 2 - short\n# one\n"
        lines = [line for line in self.summarize([test_log("validate", "TIMEOUT", stdout)])
                 if line.startswith("validate: ")]
        self.assertEqual(len(lines), 1 + 40 + 1 + 2)
        self.assertEqual(lines[40:], ["validate: # line 39", "validate: # ... (the rest in meson-logs/testlog.txt)",
                                      "validate: not ok 2 - short", "validate: # one"])

    def test_what_was_left_out_fails(self):
        lines = self.summarize([], features="built: plugin\nleft out: CUDA backend (no nvcc)")
        self.assertEqual(lines[-3:], ["Built: plugin", "FAILED, left out: CUDA backend (no nvcc)", "2 passed, 2 failed"])


if __name__ == "__main__":
    unittest.main()
