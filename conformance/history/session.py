"""The history phase's run: histories one after another within a budget of their own.

hypothesis generates histories and shrinks a failing one; the session keeps, by rule family,
the shortest history that failed (hypothesis's own account is not needed: once the budget is
spent every rule does nothing, so a history replayed then cannot fail, and whatever hypothesis
says of that is ignored). A run that cannot go on (the target stopped answering, throttled past
the run's limit) stops every rule and says why.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from conformance.history.driver import Driver, Step, Violation
from conformance.model.records import Problem
from conformance.model.state import App, World

if TYPE_CHECKING:
    from conformance.history.concurrent import ConcurrentResult
    from paysuite_core.driver.http import RecordingClient
    from paysuite_core.driver.target import Target

#: Histories hypothesis may generate (the budget usually ends the run first on a slow target).
HISTORIES = 12
STEPS = 20
#: How long after its cause an event may still be missing from the list on a target that
#: records late (an outbox), and on the bundled stub, which records with the answer.
SETTLE_S = 2.0
BUNDLED_SETTLE_S = 0.3


@dataclass
class HistoryResult:
    """What the phase found: per MODEL check, the shortest history that failed it."""

    not_applicable: str | None = None
    failures: dict[str, Violation] = field(default_factory=dict)
    reference: tuple[list[Step], Problem] | None = None
    stopped: str | None = None
    histories: int = 0
    passed: int = 0
    steps: int = 0
    duration_s: float = 0.0
    budget_s: float = 0.0
    merchants: int = 0
    notes: list[str] = field(default_factory=list)
    #: the concurrent part (MODEL-007), None when the phase never reached it
    concurrent: ConcurrentResult | None = None


def world_of(target: Target) -> World:
    """The model's world for this target and profile."""
    config = target.config
    apps = tuple(App(a.client_id, a.privilege, a.merchant) for a in target.apps())
    return World(
        apps,
        narrowing="reference" if target.reference else "seed",
        settle_s=BUNDLED_SETTLE_S if target.started_stub else SETTLE_S,
        pending_timeout_s=config.pending_timeout_s if config is not None else None,
        refresh_rotation=config.refresh_rotation if config is not None else None,
        unique_numbers=target.numbers.unique,
    )


class Session:
    """The shared context of every history of one phase."""

    def __init__(self, target: Target, client: RecordingClient, budget_s: float) -> None:
        self.target = target
        self.client = client
        self.world = world_of(target)
        self.started = time.monotonic()
        self.deadline = self.started + budget_s
        self.result = HistoryResult(budget_s=budget_s)
        self.result.merchants = len({a.merchant for a in target.apps()})
        self._lock = threading.Lock()
        config = target.config
        short = config.short_lived_pair if config is not None else None
        ttl = float(short.access_token_ttl_s) if short is not None else None
        if ttl is None and config is not None and config.access_token_ttl_s <= 5:
            ttl = float(config.access_token_ttl_s)
        #: a lifetime short enough to wait out inside a history, or None
        self.short_ttl_s = ttl if ttl is not None and ttl <= 5 else None
        #: the expired-token rule runs once per phase: its wait is the longest of any rule
        self.expiry_tried = False

    # --- the budget -------------------------------------------------------------------------
    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def may_continue(self) -> bool:
        return self.result.stopped is None and self.remaining_s() > 0

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self.remaining_s())))

    def customer_wait_s(self) -> float:
        return max(0.0, min(self.target.driver_timeout(), self.remaining_s()))

    # --- histories --------------------------------------------------------------------------
    def new_driver(self) -> Driver | None:
        if not self.may_continue():
            return None
        self.result.histories += 1
        return Driver(self.target, self.client, self.world)

    def failed(self, violation: Violation) -> None:
        """Keep the shortest failing history of each family."""
        family = violation.problem.family
        with self._lock:
            best = self.result.failures.get(family)
            if best is None or len(violation.steps) < len(best.steps):
                self.result.failures[family] = violation

    def finished(self, driver: Driver) -> None:
        with self._lock:
            self.result.passed += 1
            if driver.reference_problem is not None:
                best = self.result.reference
                if best is None or len(driver.reference_problem[0]) < len(best[0]):
                    self.result.reference = driver.reference_problem

    def release(self, driver: Driver) -> None:
        with self._lock:
            self.result.steps += len(driver.steps)
            if driver.reference_problem is not None and self.result.reference is None:
                self.result.reference = driver.reference_problem

    def stop(self, exc: BaseException) -> None:
        with self._lock:
            if self.result.stopped is None:
                self.result.stopped = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
