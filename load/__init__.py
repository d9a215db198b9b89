"""Load testing with Locust: named load shapes, SLO gates and a "nothing lost" reconciliation.

``load.runner.run(plan) -> LoadResult`` runs a plan from ``load.plan.build_plan`` to its verdict
(exit status 0 met, 1 a threshold breached, 2 no verdict, 3 the reconciliation failed);
``load/locustfile.py`` gives the same verdict under a plain ``locust -f``. docs/load.md has the
modules' map. The names below are importable from ``load`` itself, lazily: importing ``load``
stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from load.plan import LoadPlan as LoadPlan
    from load.plan import UsageError as UsageError
    from load.plan import build_plan as build_plan
    from load.plan import read_plan as read_plan
    from load.plan import write_plan as write_plan
    from load.runner import LoadResult as LoadResult
    from load.runner import run as run

_EXPORTS = {
    "LoadPlan": "load.plan",
    "UsageError": "load.plan",
    "build_plan": "load.plan",
    "read_plan": "load.plan",
    "write_plan": "load.plan",
    "LoadResult": "load.runner",
    "run": "load.runner",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'load' has no attribute {name!r}")
