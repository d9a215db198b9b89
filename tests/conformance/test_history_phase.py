"""The history phase: passes the bundled stub within its budget, fails a fault on a MODEL
check with a short history a person can read, and replays it with fresh keys.

The phase is run directly (``run_history``) against stubs the tests start; the slow ones are
marked so.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from conformkit import fast_config

from conformance.history import replay
from conformance.history.driver import Step, Violation
from conformance.history.run import run_history, why_not
from conformance.history.session import world_of
from conformance.model.records import Answer, Authorize, Create, Find, Problem
from conformance.model.state import App, World
from paysuite_core.driver.target import Target
from paysuite_core.launcher import RunningStub
from paysuite_core.target_config import load_target_config

BUDGET_S = 25.0


def _target(stub: RunningStub, tmp_path: Path, profile: str = "seed") -> Target:
    config = load_target_config(fast_config(stub, tmp_path))
    return Target(config, config.base_url, started_stub=True, seed=7, profile=profile)


def test_a_failure_is_shown_as_the_slice_the_model_fails_alone() -> None:
    world = World((App("a", "read-write", "M1"), App("b", "read-write", "M1")))
    ref = str(uuid.uuid4())
    created = {"ref": ref, "kind": "CASHIN", "status": "pending", "amount": 100}
    steps = [
        Step(1, Authorize("a", "a#1", 900.0), Answer(200, {"access": "x"}), 0.0, 0.1),
        Step(2, Create("a", "a#1", "CASHIN", 100, "0781111111"), Answer(200, created), 0.2, 0.3),
        Step(3, Create("a", "a#1", "CASHIN", 100, "0782222222"), Answer(400), 0.4, 0.5),
        Step(4, Find("a", "a#1", ref), Answer(200, {**created, "client": "0781111111",
             "status": "failed"}), 0.6, 0.7),
    ]  # fmt: skip
    violation = Violation(steps, Problem("MODEL-005", "find reads 'failed'", "pending"))
    shown = replay.shown_steps(violation, world)
    assert [type(s.request).__name__ for s in shown] == ["Create", "Find"]
    text = replay.account(violation, world)
    assert "1. a: cashin 100 for 0781111111" in text and "the model allowed: pending" in text


def test_the_replay_expands_fresh_keys_inside_and_outside_quotes() -> None:
    command = "curl 'http://h/x?k=abc' -H 'K: abc' http://h/find/abc"
    assert replay.substitute(command, "abc", "${KEY1}") == (
        "curl 'http://h/x?k='\"${KEY1}\"'' -H 'K: '\"${KEY1}\"'' http://h/find/\"${KEY1}\""
    )


@pytest.mark.slow
def test_the_bundled_stub_passes_within_the_budget(
    make_stub: Callable[..., RunningStub], tmp_path: Path
) -> None:
    target = _target(make_stub(extra_args=("--pending-timeout", "3")), tmp_path)
    assert why_not(target) is None
    result = run_history(target, BUDGET_S, 7)
    lines = {family: replay.account(v, world_of(target)) for family, v in result.failures.items()}
    assert not result.failures, lines
    assert result.passed >= 1 and result.stopped is None
    assert result.duration_s <= BUDGET_S + 10


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "family"),
    [
        ("cross-merchant-visible", "MODEL-002"),
        ("wrong-kind", "MODEL-003"),
        ("idempotency-rejected-but-executed", "MODEL-001"),
    ],
)
def test_a_fault_fails_its_model_check_with_a_short_history(
    fault: str, family: str, make_stub: Callable[..., RunningStub], tmp_path: Path
) -> None:
    target = _target(make_stub(faults=(fault,), extra_args=("--pending-timeout", "3")), tmp_path)
    result = run_history(target, BUDGET_S, 7)
    assert family in result.failures, {f: v.problem.line() for f, v in result.failures.items()}
    shown = replay.shown_steps(result.failures[family], world_of(target))
    assert 1 <= len(shown) <= 10, replay.account(result.failures[family], world_of(target))
