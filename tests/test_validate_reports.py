#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""validate_reports.py's comparison: what makes a GstValidate line fail."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "validate_reports.py")


def report(issue, on, teardown=False, level="critical", rate=1.0):
    return {"type": "report", "issue-id": issue, "level": level, "detected-on": on,
            "summary": "s", "details": "d", "teardown": teardown, "rate": rate}


class Compare(unittest.TestCase):
    def compare(self, tested, control):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, reports in (("tested", tested), ("control", control)):
                paths.append(os.path.join(tmp, name))
                with open(paths[-1], "w") as out:
                    out.writelines(json.dumps(r) + "\n" for r in reports)
            run = subprocess.run([sys.executable, REPORTS, "compare", *paths],
                                 capture_output=True, text=True)
        return run.returncode, run.stdout

    def test_an_issue_the_control_also_raises_passes(self):
        # the elements under test (named test*) are one place
        status, out = self.compare([report("event::eos-has-wrong-seqnum", "test:src")],
                                   [report("event::eos-has-wrong-seqnum", "testcaps:src")])
        self.assertEqual((status, out), (0, "# control also: critical event::eos-has-wrong-seqnum on test:src\n"))
        status, _ = self.compare([report("event::eos-has-wrong-seqnum", "test:src")],
                                 [report("event::eos-has-wrong-seqnum", "sink:sink")])
        self.assertEqual(status, 1)

    def test_an_issue_only_cudagray_raises_fails(self):
        status, out = self.compare([report("runtime::not-negotiated", "pipeline0")], [])
        self.assertEqual(status, 1)
        self.assertIn("runtime::not-negotiated on pipeline0", out)

    def test_not_negotiated_in_teardown_is_set_apart(self):
        status, out = self.compare([report("runtime::not-negotiated", "pipeline0", teardown=True)], [])
        self.assertEqual(status, 0, out)
        self.assertEqual(out, "# set apart, in teardown: critical runtime::not-negotiated on pipeline0 (d)\n")

    def test_other_issues_in_teardown_count(self):
        status, _ = self.compare([report("buffer::not-expected-one", "test:src", teardown=True)], [])
        self.assertEqual(status, 1)

    def test_ending_early_faster_than_real_time_is_set_apart(self):
        ended_early = report("scenario::action-ended-early", "fast_forward", level="warning", rate=32.0)
        status, out = self.compare([ended_early], [])
        self.assertEqual(status, 0, out)
        self.assertEqual(out, "# set apart, at rate 32: warning scenario::action-ended-early on fast_forward (d)\n")

    def test_ending_early_at_real_time_counts(self):
        for rate in (1.0, -1.0):
            status, out = self.compare([report("scenario::action-ended-early", "pause_resume", rate=rate)], [])
            self.assertEqual(status, 1, out)
            self.assertIn("scenario::action-ended-early on pause_resume", out)

    def test_other_issues_faster_than_real_time_count(self):
        status, _ = self.compare([report("buffer::not-expected-one", "test:src", rate=32.0)], [])
        self.assertEqual(status, 1)

    def test_qtdemux_eos_with_its_own_seqnum_is_set_apart(self):
        wrong_seqnum = report("event::eos-has-wrong-seqnum", "demux:video_0", level="issue")
        status, out = self.compare([wrong_seqnum], [])
        self.assertEqual(status, 0, out)
        self.assertEqual(out, "# set apart, qtdemux's own EOS: issue event::eos-has-wrong-seqnum on demux:video_0 (d)\n")

    def test_a_wrong_eos_seqnum_first_seen_past_the_demuxer_counts(self):
        for place in ("test:src", "test:sink", "dec:src", "sink:sink"):
            status, out = self.compare([report("event::eos-has-wrong-seqnum", place, level="issue")], [])
            self.assertEqual(status, 1, place)
            self.assertIn(f"event::eos-has-wrong-seqnum on {place}", out)

    def test_other_issues_on_the_demuxer_count(self):
        status, _ = self.compare([report("event::segment-has-wrong-seqnum", "demux:video_0")], [])
        self.assertEqual(status, 1)

    def test_upstream_missing_discont_is_set_apart(self):
        missing = report("buffer::missing-discont", "parse:src", level="warning")
        status, out = self.compare([missing], [])
        self.assertEqual(status, 0, out)
        self.assertEqual(out, "# set apart, upstream's own flag: warning buffer::missing-discont on parse:src (d)\n")

    def test_a_missing_discont_from_the_tested_elements_on_counts(self):
        for place in ("test:src", "testcaps:src", "sink:sink"):
            status, out = self.compare([report("buffer::missing-discont", place, level="warning")], [])
            self.assertEqual(status, 1, place)
            self.assertIn(f"buffer::missing-discont on {place}", out)

    def test_other_issues_upstream_count(self):
        status, _ = self.compare([report("buffer::not-expected-one", "parse:src")], [])
        self.assertEqual(status, 1)

    def test_ignored_levels_do_not_count(self):
        status, out = self.compare([report("runtime::not-negotiated", "pipeline0", level="expected")], [])
        self.assertEqual((status, out), (0, ""))


class Run(unittest.TestCase):
    """run marks what GstValidate sent after the stop action began, and the
    rate of the last seek: a fake gst-validate-1.0 speaking the launcher's
    protocol, its messages as GstValidate 1.22 and 1.26 send them."""

    def test_reports_after_stop_are_teardown(self):
        fake = r'''
import json, os, socket, struct
host, port = os.environ["GST_VALIDATE_SERVER"][len("tcp://"):].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
def send(m):
    data = json.dumps(m).encode()
    s.sendall(struct.pack(">I", len(data)) + data)
send({"uuid": os.environ["GST_VALIDATE_UUID"], "started": True})
r = {"type": "report", "issue-id": "runtime::not-negotiated", "level": "critical",
     "detected-on": "pipeline0", "summary": "s", "details": "d"}
send(r)
send({"type": "action", "action-type": "seek", "playback-time": 4000000000,
      "args": "seek, name=(string)Fast-forward-seek, playback-time=(guint64)4000000000, "
              "rate=(double)32, start=(double)0, flags=(string)accurate+flush;"})
send(r)
send({"type": "action", "action-type": "seek", "args": "seek, start=(double)2;"})
send(r)
send({"type": "action", "action-type": "stop", "playback-time": 7700000000,
      "args": "stop, playback-time=(guint64)7700000000;"})
send(r)
s.close()
'''
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "issues")
            status = subprocess.run([sys.executable, REPORTS, "run", out, sys.executable, "-c", fake]).returncode
            self.assertEqual(status, 0)
            with open(out) as f:
                marks = [(r["teardown"], r["rate"]) for r in map(json.loads, f)]
            self.assertEqual(marks, [(False, 1.0), (False, 32.0), (False, 1.0), (True, 1.0)])


if __name__ == "__main__":
    unittest.main()
