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
    from load.plan import LoadPlan, UsageError, build_plan, read_plan, write_plan
    from load.runner import LoadResult, run

__all__ = ["LoadPlan", "LoadResult", "UsageError", "build_plan", "read_plan", "run", "write_plan"]


def __getattr__(name: str) -> object:
    if name in __all__:
        module = "load.runner" if name in ("LoadResult", "run") else "load.plan"
        return getattr(import_module(module), name)
    raise AttributeError(f"module 'load' has no attribute {name!r}")
