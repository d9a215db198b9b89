"""``paysuite conform`` against hostile targets ends within its budget, exit 1 or 2, with a
reason a person can read, never grows past a bounded memory, and writes its reports.

The targets are ``tests/hostile.py``'s (shared with the load suite): an endless or huge body, a
hang, a trickle, invalid JSON, a redirect loop; either from the first request (the pre-flight
refuses them) or only after authorize and the events list answered like the API (the checks
meet them: each request bounded, the first unanswered one ends the run as an error).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hostile import hostile_server, run_bounded, write_config

pytestmark = pytest.mark.slow

#: The whole paysuite conform process stays under this, whatever the target sends.
MAX_MB = 300
LIMITS = ["--total-timeout", "3", "--read-timeout", "1.5", "--max-response-bytes", "1000000"]


def _conform(tmp_path: Path, behaviour: str, budget_s: float, *extra: str):
    with hostile_server(behaviour) as server:
        config = write_config(server, tmp_path / "target.yaml")
        command = [
            sys.executable, "-m", "paysuite", "conform", "--config", str(config),
            "--report-dir", str(tmp_path / "report"), *LIMITS, *extra,
        ]  # fmt: skip
        return run_bounded(command, budget_s)


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("endless-chunked", "sent a body over the 1000000-byte limit"),
        ("huge-body", "declared a body of 52428800 bytes"),
        ("hang", "cannot reach the target"),
        ("trickle", "cannot reach the target"),
        ("invalid-json", "does not answer like this API"),
        ("redirect", "paysuite follows no redirect"),
        ("auth-then-invalid-json", "does not answer like this API"),
        ("auth-then-endless-chunked", "sent a body over the 1000000-byte limit"),
    ],
)
def test_the_pre_flight_refuses_a_hostile_target(
    tmp_path: Path, behaviour: str, reason: str
) -> None:
    run = _conform(tmp_path, behaviour, budget_s=30)
    assert run.returncode == 2, run.output[-2000:]
    assert reason in run.output and "Traceback" not in run.output, run.output[-2000:]
    assert run.peak_mb < MAX_MB, run.peak_mb


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("api-then-hang", "the target stopped answering"),
        ("api-then-trickle", "no complete answer"),
        ("api-then-endless-chunked", "sent a body over the 1000000-byte limit"),
        ("api-then-huge-body", "declared a body of 52428800 bytes"),
    ],
)
def test_checks_meet_a_hostile_target_within_bounds(
    tmp_path: Path, behaviour: str, reason: str
) -> None:
    """Past the pre-flight: no hang, no growth, a verdict (its fake tokens fail AUTH-001..003;
    the rest is not judged), the reason in the report, every report written."""
    run = _conform(tmp_path, behaviour, budget_s=90)
    assert run.returncode in (1, 2), run.output[-3000:]
    assert run.peak_mb < MAX_MB, run.peak_mb
    assert "VERDICT:" in run.output and "Traceback" not in run.output, run.output[-3000:]
    report = json.loads((tmp_path / "report" / "conformance.json").read_text(encoding="utf-8"))
    assert report["exit_code"] == run.returncode and report["verdict"] in ("fail", "error")
    messages = " ".join([*(c["message"] for c in report["checks"]), *report["run_errors"]])
    assert reason in messages, messages[:3000]
    assert (tmp_path / "report" / "report.html").exists()
    assert run.seconds < 60


def test_the_run_budget_stops_the_run_and_still_reports(tmp_path: Path) -> None:
    """--max-duration: a request in flight is cut at it, what did not run is an error, the run
    says why, every report is written."""
    extra = ("--max-duration", "4", "--total-timeout", "60", "--read-timeout", "5")
    run = _conform(tmp_path, "api-then-trickle", 60, *extra)
    assert run.returncode in (1, 2), run.output[-3000:]
    assert run.seconds < 30, run.seconds
    report = json.loads((tmp_path / "report" / "conformance.json").read_text(encoding="utf-8"))
    assert any("--max-duration" in error for error in report["run_errors"]), report["run_errors"]
    assert any("time budget" in c["message"] for c in report["checks"] if c["outcome"] == "error")
