"""What one Locust process knows about the run: its plan (installed once per process: by the
init hook on the master, from the master's spawn order on a worker) and the ``RunContext``
rebuilt from it at every ``test_start`` (number and amount generators, application rotation).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field

from load.plan import LoadPlan
from load.shape_catalog import Shape
from paysuite_core.request_data import AmountSource, NumberSource
from paysuite_core.target_config import Application, TargetConfig


@dataclass
class RunContext:
    plan: LoadPlan
    worker_index: int = 0
    numbers: NumberSource = field(init=False)
    amounts: AmountSource = field(init=False)
    _counter: itertools.count[int] = field(default_factory=itertools.count, init=False)
    refs_by_merchant: dict[str, deque[str]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        seed = hash((self.run_id, self.worker_index)) & 0xFFFFFFFF
        self.numbers = NumberSource.for_target(self.config, seed=seed)
        self.amounts = AmountSource.for_target(self.config, seed=seed + 1)

    @property
    def config(self) -> TargetConfig:
        return self.plan.target

    @property
    def shape(self) -> Shape:
        return self.plan.shape

    @property
    def run_id(self) -> str:
        return self.plan.run_id

    @property
    def lifecycle_resolve(self) -> str:
        return self.plan.lifecycle_mode

    def next_application(self, *, creators_only: bool = False) -> Application:
        """Round-robin over the applications (offset per worker, so workers spread too)."""
        apps = list(self.config.applications)
        if creators_only:
            apps = [a for a in apps if a.can_cashin() or a.can_cashout()] or apps
        n = next(self._counter) + self.worker_index
        return apps[n % len(apps)]

    def merchant_refs(self, merchant: str) -> deque[str]:
        """Refs created in this process per merchant: what read-only users look up."""
        refs = self.refs_by_merchant.get(merchant)
        if refs is None:  # not setdefault: that would make a deque on every call (every find)
            refs = self.refs_by_merchant[merchant] = deque(maxlen=500)
        return refs


_PLAN: LoadPlan | None = None
_CURRENT: RunContext | None = None


def install_plan(plan: LoadPlan) -> LoadPlan:
    """This process's plan from now on."""
    global _PLAN
    _PLAN = plan
    return plan


def current_plan() -> LoadPlan:
    if _PLAN is None:
        raise RuntimeError("paysuite: no load plan in this process (the init hook did not run)")
    return _PLAN


def build_context(worker_index: int = 0) -> RunContext:
    """(Re)build this process's context from its plan (at ``test_start``)."""
    global _CURRENT
    _CURRENT = RunContext(plan=current_plan(), worker_index=max(worker_index, 0))
    return _CURRENT


def has_context() -> bool:
    return _CURRENT is not None


def current() -> RunContext:
    if _CURRENT is None:
        raise RuntimeError("paysuite: the run context is not built yet (test_start not fired)")
    return _CURRENT
