#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""GstValidate's issues as data, for tests/validate.sh.

  validate_reports.py run REPORTS COMMAND...
      runs COMMAND (gst-validate-1.0 ...) with GST_VALIDATE_SERVER pointing
      at a TCP socket of its own on 127.0.0.1 and writes every issue that
      GstValidate sent there to REPORTS, one JSON object a line; exits with
      COMMAND's status (128 + N when signal N ended it), or 3 when
      GstValidate never connected (then nothing it found could be seen).
      An issue found after the scenario's `stop` action began, while the
      pipeline goes to NULL, is marked "teardown": true; each issue carries
      the "rate" of the scenario's last seek (1 before any).
  validate_reports.py compare TESTED CONTROL
      prints the issues of TESTED that CONTROL has not, compared by issue id
      and where they were detected with the elements under test (named
      test*) taken as one, and exits 1 if there are any; prints CONTROL's
      issues as "#" lines. A NOT NEGOTIATED error in teardown is set apart
      (printed as a "#" line, compared in neither): qtdemux posted it after
      `stop` for the control and for cudagray alike, on 1.22.0 and 1.26.2
      (5 times in 4 runs of every scenario on a loaded GPU machine), never
      before `stop`. So is an action that ended early (EOS came before its
      playback time) at a rate above 1: fast_forward stops at 0.3 s before
      the end while playing at 32x, a window of 9.4 ms against the 10 ms
      at which the scenario reads the position, so whether it sees it is
      the machine's scheduling (videoconvert, the control, ended early in 2
      of 6 runs on a loaded machine and cudagray in 1 of 3 suite runs);
      at rate 1 the window is 300 ms and ending early there still counts.
      And an EOS whose seqnum is not its segment's when first seen on the
      demuxer's pad (demux:*): qtdemux 1.26.2 gives the EOS it pushes at the
      end of the file or of pause_resume's `eos` action a seqnum of its own,
      and whether it pushes it before the scenario's `stop` depends on how
      far upstream runs ahead of the sink: with a `queue` before videoconvert
      in 26 of 26 runs of pause_resume (the EOS made in qtdemux's streaming
      thread before the `eos` action), with videoconvert alone in none of
      52, with cudagray, whose output task lets the streaming thread pull
      again while a frame waits for the sink, in 1 of 30 on one core. An
      EOS whose seqnum first goes wrong at cudagray is first seen on its
      pads, and counts; that cudagray keeps the seqnums of what it forwards
      is the contract test's to check.
      And a missing DISCONT on a pad upstream of the elements under test
      (src, demux, parse, dec): the flag is set by that element before it
      pushes, and GstValidate's pad monitor expects it again from the
      moment the pad is deactivated, also for a push that passed the pad's
      flushing check before, whose buffer probe runs after. Holding one
      push of rawvideoparse's there while the pipeline goes to NULL raises
      it with videoconvert as with cudagray; change_state_intensive hits it
      by chance (2 of some 15 CI lane runs, at max-inflight 4 and 16, whose
      free slots let rawvideoparse's thread run while the state goes down,
      where behind videoconvert it waits in the sink's preroll).

The socket is gst-validate-launcher's channel, the same in GStreamer 1.22
and 1.26: each message a 32-bit big-endian length and a JSON object; an
issue is {"type": "report", "issue-id", "level", "detected-on", "summary",
"details"}.
"""
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading


def serve(listener, messages):
    connection, _ = listener.accept()
    data = b""
    with connection:
        while chunk := connection.recv(65536):
            data += chunk
            while len(data) >= 4:
                (length,) = struct.unpack(">I", data[:4])
                if len(data) < 4 + length:
                    break
                messages.append(json.loads(data[4 : 4 + length]))
                data = data[4 + length :]


def run(reports, command):
    listener = socket.create_server(("127.0.0.1", 0))
    messages = []
    reader = threading.Thread(target=serve, args=(listener, messages), daemon=True)
    reader.start()
    env = dict(os.environ, GST_VALIDATE_SERVER=f"tcp://127.0.0.1:{listener.getsockname()[1]}",
               GST_VALIDATE_UUID="cudagray")
    status = subprocess.run(command, env=env).returncode
    if status < 0:
        print(f"{command[0]} was ended by signal {-status}", file=sys.stderr)
        status = 128 - status
    # the connection closes when the process ends; what is in flight is read
    reader.join(timeout=30)
    with open(reports, "w") as out:
        teardown = False
        rate = 1.0
        for message in messages:
            if message.get("type") == "action":
                if message.get("action-type") == "stop":
                    teardown = True
                elif message.get("action-type") == "seek":
                    rate = seek_rate(message.get("args", ""))
            elif message.get("type") == "report":
                print(json.dumps(dict(message, teardown=teardown, rate=rate)), file=out)
    if not any(message.get("started") for message in messages):
        print(f"GstValidate never connected to {env['GST_VALIDATE_SERVER']}: its issues are unknown",
              file=sys.stderr)
        return 3
    return status


def seek_rate(args):
    """The rate of a seek action from its arguments as GstValidate sends
    them ("seek, ..., rate=(double)32, ..."); a seek without one plays at 1."""
    found = re.search(r"\brate=(?:\(\w+\))?([-+0-9.eE]+)", args)
    return float(found.group(1)) if found else 1.0


# what feeds the elements under test in tests/validate.sh
UPSTREAM = ("src", "demux", "parse", "dec")


def set_apart(report):
    """Why an issue is neither compared nor counted, or None."""
    if report["teardown"] and report["issue-id"] == "runtime::not-negotiated":
        return "in teardown"
    if report["issue-id"] == "scenario::action-ended-early" and abs(report["rate"]) > 1:
        return f"at rate {report['rate']:g}"
    if report["issue-id"] == "event::eos-has-wrong-seqnum" and report["detected-on"].startswith("demux:"):
        return "qtdemux's own EOS"
    element = report["detected-on"].partition(":")[0]
    if report["issue-id"] == "buffer::missing-discont" and element in UPSTREAM:
        return "upstream's own flag"
    return None


def where(detected_on):
    """Where an issue was found, the same for the tested elements and the
    control's: "test:src" for cudagray's src pad and for videoconvert's."""
    element, colon, pad = detected_on.partition(":")
    return ("test" if element.startswith("test") else element) + colon + pad


def issues(path):
    found = {}
    with open(path) as reports:
        for line in reports:
            report = json.loads(line)
            if report["level"] in ("ignore", "expected"):
                continue
            reason = set_apart(report)
            if reason:
                details = " ".join(report["details"].split())
                print(f"# set apart, {reason}: {report['level']} {report['issue-id']} on "
                      f"{report['detected-on']} ({details})")
                continue
            found.setdefault((report["issue-id"], where(report["detected-on"])), report)
    return found


def compare(tested, control):
    extra = issues(tested)
    theirs = issues(control)
    for (issue, place), report in sorted(theirs.items()):
        print(f"# control also: {report['level']} {issue} on {place}")
    new = sorted(key for key in extra if key not in theirs)
    for issue, place in new:
        report = extra[issue, place]
        print(f"{report['level']} {issue} on {report['detected-on']} ({report['summary']}): "
              f"{report['details']}")
    return 1 if new else 0


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
