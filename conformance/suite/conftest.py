"""Fixtures of the conformance checks: the shared ``Target``, with per-check evidence."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from conformance.evidence import Evidence
from conformance.outcome import CouldNotCheck
from conformance.plugin import MARKER, STATE
from conformance.target import Target


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The implementation under test; every exchange of this check is recorded as evidence."""
    state = request.config.stash[STATE]
    if state.target is None:
        pytest.skip("no target (the run was not set up)")
    if state.unreachable is not None:
        # One unanswered request already made this run an error; waiting out every remaining
        # check's timeouts would only hide that line under many more.
        raise CouldNotCheck(f"not attempted: the target stopped answering ({state.unreachable})")
    options = state.options
    now = time.monotonic()
    run_deadline = state.t0 + options.max_duration_s
    if now > run_deadline:
        if not any("--max-duration" in error for error in state.run_errors):
            state.run_errors.append(
                f"the run reached --max-duration ({options.max_duration_s:g} s): the checks "
                "not judged by then were not attempted"
            )
        raise CouldNotCheck("not attempted: the run reached its --max-duration")
    state.target.client.check_deadline = min(now + options.check_timeout_s, run_deadline)
    marker = request.node.get_closest_marker(MARKER)
    check_id = str(marker.args[0]) if marker else request.node.name
    evidence = Evidence()
    state.evidence[check_id] = evidence
    state.target.current = evidence
    state.target.notes = []
    yield state.target
    state.target.current = None
    state.target.client.check_deadline = None


@pytest.fixture
def configured(target: Target) -> Target:
    """The target, when applications are configured (else the check skips)."""
    if target.config is None:
        pytest.skip("no applications configured: pass --config with the target's applications")
    return target


@pytest.fixture
def run_cache(request: pytest.FixtureRequest) -> dict:
    """Per-run storage shared by checks (the property-test results, computed once)."""
    return request.config.stash[STATE].cache
