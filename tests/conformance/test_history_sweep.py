"""The history phase over every target the project has (issue 30, item 6).

- every stub fault the phase can reach fails a MODEL check, and each it cannot reach is named
  here with the reason (``CAUGHT``, ``OUT_OF_REACH``: a fault with no line fails a test);
- the stub's variants pass it (seed profile: measured with test_variants.py given a budget), and
  under the reference profile MODEL-008 names exactly the variants that differ on a choice the
  model narrows (``NARROWED``);
- every defect of tests/foreign/model_defects.py fails a MODEL check, the history shown of at
  most 10 steps (MODEL-007's too); the independent server's
  choices, a rate-limited and a shared target pass (test_foreign_targets.py,
  test_throttled_target.py, test_shared_numbers.py, measured given a budget);
- a whole run against the bundled stub stays within 10 s plus the phase's budget.

The phase runs in-process (``run_history``) against servers each test starts. A fault's run ends
at its first sequential failure (the concurrent part runs first and may have failed MODEL-007
beside it), a defect's at the first failure of either part (the fixtures below): the verdict is
what is asserted, and a run to the end of the budget would only shrink a history the report
cuts anyway.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from conformkit import conform, fast_config

from conformance import catalog
from conformance.history import race_replay, replay
from conformance.history.run import run_history
from conformance.history.session import HistoryResult, Session, world_of
from conformance.model.records import CONCURRENT
from paysuite_core.driver.api import EVENTS
from paysuite_core.driver.target import Target
from paysuite_core.launcher import start_stub, stop_stub
from paysuite_core.target_config import load_target_config
from paysuite_core.tokens import TokenFlow, httpx_send
from stub_server.fault_catalog import FAULTS, VARIANTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "foreign"))
from foreignkit import start_foreign
from model_defects import MODEL_DEFECTS

#: The sweep runs the phase some sixty times (every fault, defect, variant and choice): on demand
#: (`PAYSUITE_SWEEP=1 pytest -m slow tests/conformance/test_history_sweep.py`), like the mutation
#: score, not in CI's fifteen minutes; CI runs test_history_phase.py and test_history_concurrent.py.
pytestmark = pytest.mark.skipif(
    os.environ.get("PAYSUITE_SWEEP") != "1", reason="the history sweep runs with PAYSUITE_SWEEP=1"
)

#: A fault's or defect's run ends at its first failure: this bounds one that is slow to show.
BUDGET_S = 45.0
#: A passing run's budget (the variants under the reference profile).
PASS_BUDGET_S = 15.0
SEED = 7
#: The stub's pending time-out in these runs: a transaction the customer never answers settles
#: within a history (the credentials file declares it, so the model knows).
PENDING_TIMEOUT = ("--pending-timeout", "3")
MAX_SHOWN = 10
#: The concurrent part is shrunk too (``concurrent.shrink``): what no order explains, with only
#: the calls it still fails without. It shows those, all those in flight with them and the
#: earlier ones naming their refs.
MAX_SHOWN_CONCURRENT = 10
#: Slack on wall times measured on a shared machine (the figures are printed).
SLACK_S = 15.0


@dataclass(frozen=True)
class Reach:
    """How the phase catches a fault: its first failure is one of ``checks``, under
    ``profile``, against a stub started with ``stub_config``; ``why`` says what it sees."""

    checks: frozenset[str]
    why: str
    profile: str = "seed"
    stub_config: Mapping[str, Any] = field(default_factory=dict)


def _reach(*checks: str, why: str, **kwargs: Any) -> Reach:
    return Reach(frozenset(checks), why, **kwargs)


#: fault -> the MODEL check(s) its first failure must be one of (measured; docs/conformance.md,
#: History phase, has the same table).
CAUGHT: dict[str, Reach] = {
    "idempotency-ignored": _reach("MODEL-001", why="a reused key accepted"),
    "idempotency-rejected-but-executed": _reach(
        "MODEL-001", why="a refused reuse listed as executed"
    ),
    "key-reuse-other-kind-executes": _reach(
        "MODEL-001", why="a reuse on the other kind refused, then listed as executed"
    ),
    "long-keys-accepted": _reach("MODEL-001", why="a 33-character key accepted"),
    "query-key-ignored": _reach("MODEL-001", why="a long or reused query key accepted"),
    "tokens-never-expire": _reach(
        "MODEL-005", why="a short-lived access token accepted after its lifetime"
    ),
    "early-expiry": _reach(
        "MODEL-005", why="an access token refused long before the expiry it was issued with"
    ),
    "wrong-kind": _reach("MODEL-003", why="a cashout answered CASHIN"),
    "refs-reused": _reach("MODEL-003", why="a creation answered an earlier creation's ref"),
    "status-stuck-pending": _reach("MODEL-003", why="pending long after the customer answered"),
    "drop-acknowledged": _reach(
        "MODEL-001",
        "MODEL-003",
        "MODEL-004",
        why="an acknowledged creation never found, its events never listed, or its key free again",
        stub_config={"drop_rate": 0.5},
    ),
    "idempotency-racy": _reach(
        "MODEL-007", why="one key in two requests at once executed twice (concurrent part)"
    ),
    "processed-changes-again": _reach(
        "MODEL-005", why="a processed transaction read another outcome later"
    ),
    "find-status-disagrees": _reach(
        "MODEL-005", why="find and the processed event read two outcomes"
    ),
    "processed-event-missing": _reach(
        "MODEL-004", why="a processed event due and not listed, the total short of it"
    ),
    "filter-ignored": _reach("MODEL-004", why="the status filter lists another status"),
    "cross-merchant-visible": _reach(
        "MODEL-002", why="another merchant's transaction found or listed"
    ),
    "privileges-ignored": _reach("MODEL-002", why="a read application's creation accepted"),
    "cancel-reads-success": _reach(
        "MODEL-008",
        why="a cancel read success: the document says 'typically failed', RC-17 chose it",
        profile="reference",
    ),
}

#: fault -> why the phase cannot reach it (another part of the suite does).
OUT_OF_REACH: dict[str, str] = {
    "refresh-as-access": "the phase sends each token where the target issued it; a refresh "
    "token as an access token is a scripted misuse (AUTH-010)",
    "signature-not-verified": "the phase sends only tokens the target issued, never a forged "
    "one (AUTH-007, AUTH-015)",
    "server-error-on-malformed": "the phase sends only well-formed requests; malformed bodies "
    "are the property phase's and ERR-001's",
    "timestamp-format": "the model judges values and their relations, not formats (FMT-003.., "
    "PROP-004 judge the timestamps)",
    "webhook-bad-signature": "webhook deliveries: the phase receives none (WEBHOOK checks)",
    "webhook-no-retry": "webhook deliveries: the phase receives none (WEBHOOK checks)",
    "webhook-duplicate-new-id": "webhook deliveries: the phase receives none (WEBHOOK checks)",
    "webhook-out-of-order": "webhook deliveries: the phase receives none (WEBHOOK checks)",
    "webhook-live-signature-only": "webhook deliveries: the phase receives none (WEBHOOK checks)",
}

#: Variants MODEL-008 (the reference profile) must name: each differs on a choice the model
#: narrows (RC-2 200 on creation, RC-6 keys per merchant, RC-17 success/failed). The other
#: variants' differences are outside what a history reads (formats, paths, error bodies, order).
NARROWED = {"created-201": "RC-2", "successful-status": "RC-17", "live": "RC-2, RC-17"}


@pytest.fixture
def first_failure_ends_the_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's budget ends once a sequential history failed: hypothesis's shrinking then
    replays nothing (every rule does nothing past the budget), and the run returns the
    failure. (The concurrent part, which runs first, may have failed on MODEL-007 already.)"""
    failed = Session.failed

    def then_stop(self: Session, violation: Any) -> None:
        failed(self, violation)
        self.deadline = min(self.deadline, time.monotonic())

    monkeypatch.setattr(Session, "failed", then_stop)


@pytest.fixture
def a_concurrent_failure_ends_it_too(
    monkeypatch: pytest.MonkeyPatch, first_failure_ends_the_phase: None
) -> None:
    """And once the concurrent part failed: no sequential history runs after it."""
    may_continue = Session.may_continue

    def unless_raced(self: Session) -> bool:
        part = self.result.concurrent
        return may_continue(self) and not (part is not None and part.failed)

    monkeypatch.setattr(Session, "may_continue", unless_raced)


@pytest.fixture
def a_reference_difference_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's budget ends once a history ended with a difference from the reference
    choices (MODEL-008): that is the verdict asked for."""
    finished = Session.finished

    def then_stop(self: Session, driver: Any) -> None:
        finished(self, driver)
        if self.result.reference is not None:
            self.deadline = min(self.deadline, time.monotonic())

    monkeypatch.setattr(Session, "finished", then_stop)


def _phase(
    config_path: Path, budget_s: float, profile: str = "seed", stub: bool = True
) -> tuple[HistoryResult, Target]:
    config = load_target_config(config_path)
    target = Target(config, config.base_url, started_stub=stub, seed=SEED, profile=profile)
    return run_history(target, budget_s, SEED), target


def _stub_phase(
    tmp_path: Path,
    budget_s: float,
    *,
    faults: tuple[str, ...] = (),
    variants: tuple[str, ...] = (),
    profile: str = "seed",
    stub_config: Mapping[str, Any] | None = None,
) -> tuple[HistoryResult, Target]:
    stub = start_stub(
        tmp_path / "stub",
        faults=faults,
        variants=variants,
        extra_args=PENDING_TIMEOUT,
        stub_config=stub_config or None,
        startup_timeout_s=60,
    )
    try:
        return _phase(fast_config(stub, tmp_path), budget_s, profile)
    finally:
        stop_stub(stub)


def _failures(result: HistoryResult, target: Target) -> dict[str, str]:
    """Each failed MODEL check and the account the report gives of it."""
    world = world_of(target)
    found = {family: replay.account(v, world) for family, v in result.failures.items()}
    part = result.concurrent
    if part is not None and part.failed:
        found[CONCURRENT] = race_replay.account(part)
    return found


def _shown(result: HistoryResult, target: Target) -> dict[str, int]:
    """Each failed MODEL check and how many steps the report shows of its history."""
    world = world_of(target)
    found = {f: len(replay.shown_steps(v, world)) for f, v in result.failures.items()}
    part = result.concurrent
    if part is not None and part.failed:
        found[CONCURRENT] = len(race_replay.shown_steps(part))
    return found


def _limit(family: str) -> int:
    return MAX_SHOWN if family != CONCURRENT else MAX_SHOWN_CONCURRENT


# --- the stub's faults ------------------------------------------------------------------------
def test_every_fault_has_a_line() -> None:
    """A fault added to the catalog must be placed: caught (by which check) or out of reach."""
    assert not set(CAUGHT) & set(OUT_OF_REACH)
    assert set(CAUGHT) | set(OUT_OF_REACH) == set(FAULTS), sorted(
        set(FAULTS) ^ (set(CAUGHT) | set(OUT_OF_REACH))
    )
    model = {c.id for c in catalog.CATALOG if c.group == "MODEL"}
    for name, reach in CAUGHT.items():
        assert reach.checks and reach.checks <= model, name
        assert reach.profile == "reference" or "MODEL-008" not in reach.checks, name


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(CAUGHT))
@pytest.mark.usefixtures("first_failure_ends_the_phase")
def test_the_phase_catches_the_fault(
    fault: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    reach = CAUGHT[fault]
    if reach.checks == {CONCURRENT}:
        request.getfixturevalue("a_concurrent_failure_ends_it_too")
    if reach.checks == {"MODEL-008"}:
        request.getfixturevalue("a_reference_difference_ends_it")
    result, target = _stub_phase(
        tmp_path, BUDGET_S, faults=(fault,), profile=reach.profile, stub_config=reach.stub_config
    )
    assert result.stopped is None, result.stopped
    if reach.checks == {"MODEL-008"}:
        assert result.reference is not None, f"{fault} passed the reference profile"
        steps, problem = result.reference
        assert problem.reference, problem
        return
    shown = _shown(result, target)
    caught = set(shown) & reach.checks
    assert caught, (fault, _failures(result, target) or f"passed: {result.steps} requests")
    for family in caught:
        assert 1 <= shown[family] <= _limit(family), _failures(result, target)[family]


# --- the stub's variants under the reference profile -------------------------------------------
def test_every_narrowed_variant_is_a_variant() -> None:
    assert set(NARROWED) <= set(VARIANTS)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(NARROWED))
@pytest.mark.usefixtures("a_reference_difference_ends_it")
def test_the_reference_profile_names_a_narrowed_variant(variant: str, tmp_path: Path) -> None:
    result, target = _stub_phase(tmp_path, BUDGET_S, variants=(variant,), profile="reference")
    assert not result.failures, _failures(result, target)
    assert result.reference is not None, f"MODEL-008 did not notice {variant} ({NARROWED[variant]})"


@pytest.mark.slow
def test_the_reference_profile_passes_the_variants_it_does_not_narrow(tmp_path: Path) -> None:
    """Every simple variant outside ``NARROWED`` at once: no MODEL check fails, MODEL-008
    included (their differences are in what a history does not read)."""
    others = tuple(name for name, v in VARIANTS.items() if not v.parts and name not in NARROWED)
    result, target = _stub_phase(tmp_path, PASS_BUDGET_S, variants=others, profile="reference")
    assert not result.failures, _failures(result, target)
    assert result.reference is None, result.reference[1].line() if result.reference else ""
    assert result.passed >= 1 and result.stopped is None, result


# --- the foreign defects of issue 30 -----------------------------------------------------------
#: Server arguments a defect needs to be within the phase's reach: the expired token's grace
#: shows on a lifetime the phase waits out (it waits out one of 5 s or less).
DEFECT_ARGS: dict[str, tuple[str, ...]] = {"expired-token-grace": ("--access-ttl", "1")}


@pytest.mark.slow
@pytest.mark.parametrize("defect", sorted(MODEL_DEFECTS))
@pytest.mark.usefixtures("a_concurrent_failure_ends_it_too")
def test_the_phase_catches_each_model_defect(defect: str, tmp_path: Path) -> None:
    server = start_foreign(
        "independent", tmp_path, "--defect", defect, *DEFECT_ARGS.get(defect, ())
    )
    try:
        result, target = _phase(server.config_path, BUDGET_S, stub=False)
    finally:
        server.stop()
    assert result.stopped is None, result.stopped
    shown = _shown(result, target)
    print(f"{defect}: {shown} (MODEL check: steps shown)")
    assert shown, f"{defect} passed: {result.passed} histories, {result.steps} requests"
    for family, count in shown.items():
        assert 1 <= count <= _limit(family), _failures(result, target)[family]


# --- a rate-limited target --------------------------------------------------------------------
class OtherTraffic:
    """Every few seconds each configured application spends its whole burst reading the events
    list, so that the target's per-application limit answers the phase's next requests 429
    (steady traffic would either never reach the limit or, on a busy machine, starve the
    phase)."""

    BURST = 45  # the rate-limit choice's burst is 40
    EVERY_S = 3.0

    def __init__(self, config_path: Path) -> None:
        self.config = load_target_config(config_path)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        with httpx.Client(timeout=10) as http:
            send = httpx_send(http, self.config.base_url)
            flows = [TokenFlow(send, app) for app in self.config.applications]
            while not self.stop.is_set():
                for flow in flows:
                    for _ in range(self.BURST):
                        http.get(self.config.base_url + EVENTS, headers=flow.headers())
                self.stop.wait(self.EVERY_S)

    def __enter__(self) -> OtherTraffic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


@pytest.mark.slow
def test_a_rate_limited_target_passes(tmp_path: Path) -> None:
    """The independent server's ``rate-limit`` choice (429 with Retry-After past a burst of 40
    per application), its tokens outliving the waits (test_throttled_target.py's 10 s), other
    traffic spending the same limits: the phase's requests wait the throttle out and no MODEL
    check fails. Alone, not in test_throttled_target.py's whole run: the phase's waits would
    spend the run-wide throttle budget the property phase needs there."""
    server = start_foreign("independent", tmp_path, "--access-ttl", "10", "--choice", "rate-limit")
    try:
        with OtherTraffic(server.config_path):
            result, target = _phase(server.config_path, 25.0, stub=False)
    finally:
        server.stop()
    stats = target.throttle.stats()
    print(f"rate-limited: {stats.text()}; {result.passed} histories passed")
    assert not _failures(result, target), _failures(result, target)
    assert result.stopped is None and result.passed >= 1, result
    part = result.concurrent
    assert part is not None and part.stopped is None and part.verdict is not None, part
    assert stats.throttled > 0 and stats.gave_up == 0, stats


# --- the whole run's time -------------------------------------------------------------------
@pytest.mark.slow
def test_a_whole_run_against_the_bundled_stub_stays_within_10_s_plus_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``paysuite conform`` with its default budget: the phase keeps to its budget (its own
    figure, in MODEL-001's note), and the run to 10 s more. Both are wall times on a shared
    machine, so the assertion leaves generous slack; the figures are printed."""
    from conformance.suite.history import DEFAULT_HISTORY_BUDGET_S

    outcome = conform(capsys, tmp_path / "r", history_budget=None)
    report = outcome.report
    assert outcome.status == 0, [c["id"] for c in report["checks"] if c["outcome"] != "passed"]
    note = str(outcome.check("MODEL-001").get("note") or "")
    match = re.search(r"requests, ([0-9.]+) s\)", note)
    assert match, note
    phase_s, run_s = float(match.group(1)), float(report["duration_s"])
    print(
        f"whole run {run_s:.1f} s, of it the history phase {phase_s:.1f} s "
        f"(budget {DEFAULT_HISTORY_BUDGET_S:g} s)"
    )
    assert phase_s <= DEFAULT_HISTORY_BUDGET_S + SLACK_S
    assert run_s <= 10 + DEFAULT_HISTORY_BUDGET_S + SLACK_S
