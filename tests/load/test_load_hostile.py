"""``paysuite load`` against hostile targets ends within its budget, exit 1 or 2, with
a reason a person can read, and never grows past a bounded memory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hostile import hostile_server, run_bounded, write_config

pytestmark = pytest.mark.slow

#: The whole paysuite load process tree, Locust included, stays under this.
MAX_MB = 400
LIMITS = ["--total-timeout", "1.5", "--read-timeout", "1", "--max-response-bytes", "1000000"]


def _load(tmp_path: Path, behaviour: str, budget_s: float, limits: list[str] = LIMITS):
    with hostile_server(behaviour) as server:
        config = write_config(server, tmp_path / "target.yaml")
        command = [
            sys.executable, "-m", "paysuite", "load", "--config", str(config),
            "--report-dir", str(tmp_path / "report"), "--quiet", "--users", "4",
            "--duration", "3", "--reconcile-timeout", "5", *limits,
        ]  # fmt: skip
        return run_bounded(command, budget_s)


@pytest.mark.parametrize(
    ("behaviour", "reason", "status"),
    [
        ("endless-chunked", "response body larger than 1000000 bytes", 2),
        ("huge-body", "response body larger than 1000000 bytes", 2),
        ("hang", "a read waited 1 s (--read-timeout)", 2),
        ("trickle", "no complete answer within 1.5 s (--total-timeout)", 2),
        # the target answered authorize, wrongly: a finding (FAIL), not "nothing measured"
        ("invalid-json", "is not a token pair", 1),
        ("redirect", "paysuite does not follow redirects", 2),
    ],
)
def test_the_pre_check_refuses_a_hostile_target(
    tmp_path: Path, behaviour: str, reason: str, status: int
) -> None:
    run = _load(tmp_path, behaviour, budget_s=20)
    assert run.returncode == status, run.output[-2000:]
    assert reason in run.output, run.output[-2000:]
    assert run.peak_mb < MAX_MB


@pytest.mark.parametrize(
    ("behaviour", "reason", "status"),
    [
        # creates answered 2xx without a ref cannot be reconciled: exit 3, not 1
        ("auth-then-invalid-json", "2xx without", 3),
        ("auth-then-hang", "a read waited 1 s (--read-timeout)", 1),
        ("auth-then-trickle", "no complete response within 1.5 s (--total-timeout)", 1),
        ("auth-then-endless-chunked", "response body larger than 1000000 bytes", 1),
    ],
)
def test_a_run_whose_requests_fail_fails(
    tmp_path: Path, behaviour: str, reason: str, status: int
) -> None:
    """The users' requests are bounded too, and a run where they all fail cannot pass."""
    run = _load(tmp_path, behaviour, budget_s=60)
    assert run.returncode == status, run.output[-3000:]
    assert run.peak_mb < MAX_MB, run.peak_mb
    summary = json.loads((tmp_path / "report" / "load.json").read_text())
    assert summary["total"]["failures"] > 0
    failed = {(v["operation"], v["metric"]) for v in summary["slo"]["verdicts"] if not v["passed"]}
    assert ("total", "error_ratio") in failed
    assert any(metric == "successes" for _, metric in failed), failed
    failures_csv = (tmp_path / "report" / "locust_failures.csv").read_text()
    assert reason in failures_csv, failures_csv[-2000:]


def test_requests_still_hanging_when_the_run_ends_fail_it(tmp_path: Path) -> None:
    """Time-outs longer than the run: not one request completes, so none is counted; the
    operations that were started and never completed are failed rows, not missing ones."""
    slow_limits = ["--total-timeout", "60", "--read-timeout", "60"]
    run = _load(tmp_path, "auth-then-hang", budget_s=60, limits=slow_limits)
    assert run.returncode == 1, run.output[-3000:]
    summary = json.loads((tmp_path / "report" / "load.json").read_text())
    notes = [v["note"] for v in summary["slo"]["verdicts"] if not v["passed"]]
    assert any(note.startswith("no request completed") for note in notes), notes
