"""What one Locust process knows about the run (``LoadProcess``, kept on Locust's
``Environment``, the object its events, users and shapes are all handed): the plan (installed
by the init hook on the master, from the master's spawn order on a worker) and the
``RunContext`` rebuilt from it at every ``test_start`` (number and amount generators,
application rotation).
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from load.plan import LoadPlan
from paysuite_core.request_data import AmountSource, NumberSource
from paysuite_core.target_config import Application


@dataclass
class RunContext:
    plan: LoadPlan
    worker_index: int = 0
    numbers: NumberSource = field(init=False)
    amounts: AmountSource = field(init=False)
    _counter: itertools.count[int] = field(default_factory=itertools.count, init=False)
    #: refs created in this process per merchant: what read-only users look up
    refs_by_merchant: defaultdict[str, deque[str]] = field(
        default_factory=lambda: defaultdict(lambda: deque(maxlen=500)), init=False
    )

    def __post_init__(self) -> None:
        seed = hash((self.plan.run_id, self.worker_index)) & 0xFFFFFFFF
        self.numbers = NumberSource.for_target(self.plan.target, seed=seed)
        self.amounts = AmountSource.for_target(self.plan.target, seed=seed + 1)

    def next_application(self, *, creators_only: bool = False) -> Application:
        """Round-robin over the applications (offset per worker, so workers spread too)."""
        apps = list(self.plan.target.applications)
        if creators_only:
            apps = [a for a in apps if a.can_cashin() or a.can_cashout()] or apps
        n = next(self._counter) + self.worker_index
        return apps[n % len(apps)]


@dataclass
class LoadProcess:
    """paysuite's state in one Locust process, found with ``of(environment)``."""

    plan: LoadPlan | None = None
    run: RunContext | None = None
    #: the paysuite options the master's plan was built from (a change: the web UI edited them)
    built_from: tuple[tuple[str, str], ...] = ()
    #: the serialised plan this worker installed last
    read: str = ""
    #: Locust's -u, -r, -t as given on the command line (headless: read once, at init)
    common_given: dict[str, Any] = field(default_factory=dict)
    #: the values paysuite put in the web UI's users/spawn rate/run time fields (the shape's
    #: own): left as they are, they are not overrides (another shape picked there keeps its own)
    prefilled: dict[str, Any] = field(default_factory=dict)

    def current_plan(self) -> LoadPlan:
        if self.plan is None:
            raise RuntimeError("paysuite: no load plan in this process (the init hook did not run)")
        return self.plan

    def start(self, worker_index: int = 0) -> RunContext:
        """(Re)build the run context from the plan (at ``test_start``)."""
        self.run = RunContext(plan=self.current_plan(), worker_index=max(worker_index, 0))
        return self.run

    def current(self) -> RunContext:
        if self.run is None:
            raise RuntimeError("paysuite: the run context is not built yet (test_start not fired)")
        return self.run


def of(environment: Any) -> LoadProcess:
    """The ``LoadProcess`` of Locust's ``environment`` (made at the first call)."""
    process = getattr(environment, "paysuite", None)
    if process is None:
        process = environment.paysuite = LoadProcess()
    return process
