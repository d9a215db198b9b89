"""LIFE-008 (RC-18): a transaction nobody settles fails at the time-out the target declares.

Proven both ways on the stub: one whose time-out runs passes, one declaring a time-out it never
applies (its resolver switched off) fails, and a configuration that declares none, or one too
long to wait for, is not applicable with the reason. LIFE-007 (a MUST of the seed profile)
takes a transaction the declared time-out ended for no failure, and one settled before it for
one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conformkit import conform, fast_config

from paysuite_core.launcher import RunningStub


def test_a_declared_time_out_that_runs_passes_life_008(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub(extra_args=("--pending-timeout", "1"))
    config = fast_config(stub, tmp_path)
    outcome = conform(
        capsys, tmp_path / "r", config=config, profile="reference", only="LIFE-007,LIFE-008"
    )
    # LIFE-007 finds its transactions timed out: no failure, the processed event dates it at
    # the declared time-out.
    assert outcome.ids("passed") == {"LIFE-007", "LIFE-008"}, outcome.report["checks"]


def test_a_settling_before_the_declared_time_out_fails_life_007(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A target that fails what is left alone after 1 s while declaring 20 s: LIFE-007 (seed,
    MUST) reads the processed event's dates and fails it."""
    stub = make_stub(extra_args=("--pending-timeout", "1"))
    config = fast_config(stub, tmp_path, pending_timeout_s=20)
    outcome = conform(capsys, tmp_path / "r", config=config, only="LIFE-007")
    assert outcome.ids("failed") == {"LIFE-007"}, outcome.report["checks"]
    failed = outcome.check("LIFE-007")
    assert "before the 20 s pending time-out" in str(failed["message"]), failed


@pytest.mark.slow  # LIFE-008 waits out the time-out and its grace before failing: ~10 s
def test_a_declared_time_out_never_applied_fails_life_008(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stub's resolver is switched off (the status-stuck-pending fault), as in the mutants
    where it never runs: the transaction stays pending past the time-out it declares."""
    stub = make_stub(faults=("status-stuck-pending",), extra_args=("--pending-timeout", "1"))
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "r", config=config, profile="reference", only="LIFE-008")
    assert outcome.ids("failed") == {"LIFE-008"}, outcome.report["checks"]
    failed = outcome.check("LIFE-008")
    assert "reads 'pending'" in str(failed["message"]) and failed["evidence"], failed


@pytest.mark.parametrize(
    ("declared", "reason"),
    [
        (None, "declares no pending time-out"),
        pytest.param(600, "longer than max_wait_s", marks=pytest.mark.slow),
    ],
)
def test_life_008_is_not_applicable_without_a_time_out_it_may_wait_for(
    make_stub: Callable[..., RunningStub],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    declared: int | None,
    reason: str,
) -> None:
    stub = make_stub()
    config = fast_config(stub, tmp_path, pending_timeout_s=declared)
    outcome = conform(capsys, tmp_path / "r", config=config, profile="reference", only="LIFE-008")
    skipped = outcome.check("LIFE-008")
    assert skipped["not_applicable"], skipped
    assert reason in str(skipped["message"]), skipped
