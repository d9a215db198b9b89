"""Ctrl-C writes every report, with the interruption as a run error, even in the property phase
(schemathesis swallows the interrupt and would otherwise end early as if done)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_ctrl_c_in_the_property_phase_writes_the_reports(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "paysuite",
        "conform",
        "--only",
        "AUTH-001,PROP-001",
        "--report-dir",
        str(tmp_path),
        "-v",
        "--concurrency",
        "1",
    ]  # -v: a line per check, as each ends: one after another
    # Its own session, with SIGINT at its default (a background job of a shell ignores it).
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert process.stdout is not None
    deadline = time.monotonic() + 90
    for line in process.stdout:  # wait until the property phase has started
        if "AUTH-001" in line and "passed" in line:
            break
        assert time.monotonic() < deadline, "AUTH-001 never finished"
    time.sleep(2.0)
    os.kill(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 2, output[-2000:]
    report = json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "error" and "interrupted" in report["reason"], report["reason"]
    assert [c["id"] for c in report["checks"] if c["outcome"] == "passed"] == ["AUTH-001"]
    assert "VERDICT: ERROR" in output
    # the interrupted checks count as not run: the total does not shrink with the interruption
    coverage = report["coverage"]
    assert coverage["total"] == 2 and coverage["run"] == 1, coverage
    assert {"id": "PROP-001", "reason": "not run: the run ended before it"} in coverage["skipped"]


def test_ctrl_c_while_checks_run_at_once_writes_the_reports(tmp_path: Path) -> None:
    """With --concurrency the checks run ahead of their progress lines: Ctrl-C during the
    property run stops it and the checks not started, and the reports show what had finished."""
    command = [
        sys.executable, "-m", "paysuite", "conform", "--only", "AUTH-001,PROP-001",
        "--report-dir", str(tmp_path), "-v", "--concurrency", "4",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert process.stdout is not None
    for line in process.stdout:  # the run has started: both checks are running ahead
        if line.startswith("paysuite conform: 2 checks"):
            break
    time.sleep(3.0)  # AUTH-001 has ended; the property run has not (about 5 s)
    os.kill(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 2, output[-2000:]
    report = json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "error" and "interrupted" in report["reason"], report["reason"]
    assert [c["id"] for c in report["checks"] if c["outcome"] == "passed"] == ["AUTH-001"]
    assert {"id": "PROP-001", "reason": "not run: the run ended before it"} in report["coverage"][
        "skipped"
    ]
