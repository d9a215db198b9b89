"""The reconciliation keeps its time budget whatever the target does, and a target that stops
answering (connections refused, or accepted and never answered) is "gone" at once.

Found by a new-user trial: the bundled stub frozen (SIGSTOP) during a 6 s run with
``--total-timeout 2 --reconcile-timeout 5`` made the reconciliation take 36 s, every checking
greenlet queueing for an authorize that ran to the total timeout; with ``--total-timeout 10``
the runner killed Locust and the run ended with no verdict.

The reconciliation runs under gevent (in the Locust master); it is called here directly, in a
process where gevent is imported but nothing is monkey-patched (locust is never imported here).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hostile import hostile_server, write_config
from loadkit import hostile_ledger

from load.ledger import CreateRecord
from load.reconcile import reconcile
from paysuite_core.bounded_http import LOAD_LIMITS
from paysuite_core.launcher import running_stub
from paysuite_core.target_config import load_target_config
from paysuite_core.tokens import AUTHORIZE_PATH

#: What the reconciliation may take past its budget: killing its greenlets, closing connections.
MARGIN_S = 1.0
#: A total timeout shorter than the read timeout: a silent target ends in ``TotalTimeout``, not in
#: the socket's own time-out (an ``OSError``, which was already taken for "gone").
SILENT = replace(LOAD_LIMITS, connect_s=1.0, read_s=10.0, total_s=1.0)


def _reconcile(behaviour: str, tmp_path: Path, records: list[CreateRecord], **kwargs: object):
    lines: list[str] = []
    with hostile_server(behaviour) as server:
        config = load_target_config(write_config(server, tmp_path / "target.yaml"))
        started = time.monotonic()
        result = reconcile(records, config, progress=lines.append, **kwargs)  # type: ignore[arg-type]
        elapsed = time.monotonic() - started
    assert result["checked"] + result["unchecked"] == result["unique_refs"] == len(records)
    assert result["checked"] == (
        result["found"] + result["missing"] + result["missing_created_event"]
        + result["mismatched"] + result["errors"]
    )  # fmt: skip
    return result, elapsed, list(server.requests)


def test_a_target_that_never_answers_authorize_is_gone_after_one_total_timeout(
    tmp_path: Path,
) -> None:
    """Every greenlet waited for the one authorize; its time-out is theirs too, not one each."""
    records = hostile_ledger(12, storm=2)
    result, elapsed, requests = _reconcile(
        "hang", tmp_path, records, concurrency=4, time_budget_s=30, limits=SILENT
    )
    assert elapsed < SILENT.total_s + MARGIN_S, (elapsed, result)
    assert result["target_gone"] is True, result
    assert len(requests) == 1 and f" /api{AUTHORIZE_PATH} " in requests[0], requests
    # the four that asked first got the time-out (those that asked again before every waiter was
    # told too), the rest were not tried
    errors, unchecked = result["errors"], result["unchecked"]
    assert errors >= 4 and result["error_kinds"] == {"TotalTimeout": errors}, result
    timed_out = "no complete response within the total timeout (--total-timeout)"
    assert f"{errors} could not be checked ({errors} {timed_out})" in result["reasons"], result
    assert unchecked == 12 - errors and unchecked > 0 and not result["passed"]
    gone = f"{unchecked} could not be checked (the target stopped answering: no answer in time)"
    assert gone in result["reasons"], result["reasons"]
    # the storm keys are not counted on a target that is gone: said, not waited for
    assert "the target stopped answering" in result["storm_check_error"], result


def test_finds_that_time_out_before_any_check_succeeded_mean_the_target_is_gone(
    tmp_path: Path,
) -> None:
    """Authorize answers, every find hangs: the time-outs count like refused connections."""
    records = hostile_ledger(12)
    result, elapsed, _ = _reconcile(
        "api-then-hang", tmp_path, records, concurrency=4, time_budget_s=30, limits=SILENT
    )
    assert elapsed < SILENT.total_s + MARGIN_S, (elapsed, result)
    assert result["target_gone"] is True and result["authorizes"] == 1, result
    assert result["errors"] == 4 and result["unchecked"] == 8, result
    assert any("the target stopped answering" in reason for reason in result["reasons"])


def test_the_budget_ends_the_checks_in_flight(tmp_path: Path) -> None:
    """A budget shorter than one request: the checks under way are stopped at the budget and
    their records counted unchecked, neither lost from the counts nor counted twice; the storm
    count that follows the checks is not started past the budget either."""
    slow = replace(LOAD_LIMITS, connect_s=1.0, read_s=10.0, total_s=5.0)
    budget = 1.0
    result, elapsed, _ = _reconcile(
        "auth-then-hang", tmp_path, hostile_ledger(6, storm=2), concurrency=3, time_budget_s=budget,
        limits=slow,
    )  # fmt: skip
    assert elapsed < budget + MARGIN_S, (elapsed, result)
    assert result["checked"] == 0 and result["unchecked"] == 6, result
    assert result["target_gone"] is False, result
    assert result["reasons"][0] == "6 could not be checked (the --reconcile-timeout budget ran out)"
    assert "budget ran out" in result["storm_check_error"], result


@pytest.mark.slow
def test_a_run_whose_target_freezes_ends_within_its_budgets(tmp_path: Path) -> None:
    """The new-user trial itself: the bundled stub frozen 4 s into a 6 s run."""
    with running_stub(tmp_path / "stub") as stub:
        command = [
            sys.executable, "-m", "paysuite", "load", "--config", str(stub.credentials_path),
            "--report-dir", str(tmp_path / "report"), "--quiet", "--duration", "6",
            "--total-timeout", "2", "--reconcile-timeout", "5",
        ]  # fmt: skip
        started = time.monotonic()
        load = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            time.sleep(4)
            os.kill(stub.process.pid, signal.SIGSTOP)
            output, _ = load.communicate(timeout=60)
        finally:
            os.kill(stub.process.pid, signal.SIGCONT)
            if load.poll() is None:
                load.kill()
                load.wait(10)
        elapsed = time.monotonic() - started
    summary = json.loads((tmp_path / "report" / "load.json").read_text())
    recon = summary["reconciliation"]
    assert load.returncode == 3, output[-3000:]
    assert recon["elapsed_s"] < 5 + MARGIN_S, recon
    assert recon["checked"] + recon["unchecked"] == recon["unique_refs"] > 0, recon
    assert not recon["passed"], recon
    assert elapsed < 30, (elapsed, output[-3000:])
