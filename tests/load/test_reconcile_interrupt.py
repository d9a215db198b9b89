"""A Ctrl-C during the reconciliation still gives a verdict, and its reasons read as words.

Found by a new-user trial: the stub frozen, then Ctrl-C 1.5 s into "reconciling 11 acknowledged
creates": a KeyboardInterrupt traceback out of ``reconcile``'s wait loop and no load.json, the
verdict lost. The same trial read "11 could not be checked (11 TotalTimeout)": a class name.

As in test_reconcile_budget.py, ``reconcile`` is called directly under gevent with nothing
monkey-patched (locust is never imported here). A terminal's Ctrl-C reaches a gevent program as
a KeyboardInterrupt thrown into the main greenlet where it waits (gevent's hub does just that
with an interrupt raised elsewhere): the test throws it the same way.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import gevent
import pytest
from hostile import hostile_server, write_config
from loadkit import hostile_ledger

from load.ledger import CreateRecord
from load.reconcile import INTERRUPTED, failure_reasons, reconcile
from paysuite_core.bounded_http import LOAD_LIMITS
from paysuite_core.target_config import load_target_config

#: When the Ctrl-C comes, and what stopping the checks may take past it.
CTRL_C_AFTER_S = 0.5
MARGIN_S = 1.0
#: Every check would wait far longer than the test: only the Ctrl-C can end them in time.
PATIENT = replace(LOAD_LIMITS, connect_s=1.0, read_s=30.0, total_s=20.0)


def _reconcile_with_ctrl_c(
    behaviour: str, tmp_path: Path, records: list[CreateRecord]
) -> tuple[dict[str, Any], float, list[str]]:
    lines: list[str] = []
    with hostile_server(behaviour) as server:
        config = load_target_config(write_config(server, tmp_path / "target.yaml"))
        main = gevent.getcurrent()
        started = time.monotonic()

        def press_ctrl_c() -> None:
            # by the wall clock, not one timer: a gevent timer fired at once in CI (an event
            # loop clock left stale by an earlier test in the same process)
            while time.monotonic() < started + CTRL_C_AFTER_S:
                gevent.sleep(0.05)
            main.throw(KeyboardInterrupt)

        ctrl_c = gevent.spawn(press_ctrl_c)
        try:
            result = reconcile(
                records, config, concurrency=4, time_budget_s=60, limits=PATIENT,
                progress=lines.append,
            )  # fmt: skip
        except KeyboardInterrupt:
            pytest.fail("the Ctrl-C escaped reconcile(): no verdict, no reports")
        finally:
            elapsed = time.monotonic() - started
            ctrl_c.kill(timeout=1)
    return result, elapsed, lines


def test_ctrl_c_while_the_checks_wait_ends_them_and_still_gives_a_verdict(tmp_path: Path) -> None:
    """The target never answers: every check waits (for the one authorize) when Ctrl-C comes."""
    records = hostile_ledger(11, storm=2)
    result, elapsed, lines = _reconcile_with_ctrl_c("hang", tmp_path, records)
    assert CTRL_C_AFTER_S <= elapsed < CTRL_C_AFTER_S + MARGIN_S, (elapsed, result)
    assert result["interrupted"] is True, result
    assert result["checked"] == 0 and result["unchecked"] == len(records) == 11, result
    assert result["target_gone"] is False, result
    assert result["passed"] is False
    assert result["reasons"][0] == f"11 could not be checked ({INTERRUPTED})", result["reasons"]
    # the storm count is not started after a Ctrl-C: said, not tried
    assert result["storm_check_error"] == INTERRUPTED, result
    assert not any("counting the target's transactions" in line for line in lines), lines
    assert any(f"11 unchecked ({INTERRUPTED})" in line for line in lines), lines


def test_ctrl_c_after_some_checks_keeps_what_they_found(tmp_path: Path) -> None:
    """Authorize answers, the finds hang: nothing is counted twice nor lost from the counts."""
    records = hostile_ledger(6)
    result, elapsed, _ = _reconcile_with_ctrl_c("auth-then-hang", tmp_path, records)
    assert elapsed < CTRL_C_AFTER_S + MARGIN_S, (elapsed, result)
    assert result["interrupted"] is True and result["authorizes"] == 1, result
    assert result["checked"] + result["unchecked"] == 6 and result["unchecked"] > 0, result
    assert f"{result['unchecked']} could not be checked ({INTERRUPTED})" in result["reasons"]
    assert "storm_check_error" not in result, result  # no storm keys: nothing to count


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("TotalTimeout", "no complete response within the total timeout (--total-timeout)"),
        ("ReadTimeout", "a read timed out (--read-timeout)"),
        ("ConnectTimeout", "no connection in time (--connect-timeout)"),
        ("ConnectionRefusedError", "connection refused"),
        ("RuntimeError", "RuntimeError"),  # a kind without words stays as it is
    ],
)
def test_the_errors_that_stopped_checks_read_as_words(kind: str, words: str) -> None:
    result = {"checked": 11, "errors": 11, "error_kinds": {kind: 11}}
    assert failure_reasons(result) == [f"11 could not be checked (11 {words})"]


def test_several_error_kinds_keep_their_counts_and_order() -> None:
    kinds = {"TotalTimeout": 5, "ConnectionRefusedError": 3, "JSONDecodeError": 1}
    reasons = failure_reasons({"errors": 9, "error_kinds": kinds})
    assert reasons == [
        "9 could not be checked (5 no complete response within the total timeout "
        "(--total-timeout), 3 connection refused, 1 JSONDecodeError)"
    ]


def test_the_interrupted_reason_wins_over_the_budget_and_a_skipped_step_is_said() -> None:
    interrupted = {"unchecked": 4, "interrupted": True, "webhook_check_error": INTERRUPTED}
    assert failure_reasons(interrupted) == [
        f"4 could not be checked ({INTERRUPTED})",
        f"webhook deliveries were not checked ({INTERRUPTED})",
    ]
    assert failure_reasons({"unchecked": 4, "interrupted": False}) == [
        "4 could not be checked (the --reconcile-timeout budget ran out)"
    ]
