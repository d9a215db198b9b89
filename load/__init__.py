"""Load testing with Locust: named load shapes, SLO gates and a "nothing lost" reconciliation.

What it offers:

- **One entry point**: ``load.runner.run(plan) -> LoadResult`` runs a load plan to its verdict
  (exit status 0 met / 1 a threshold breached / 2 no verdict / 3 the reconciliation failed, and
  load.json as ``summary``); it starts the bundled stub when the plan has no target.
  ``paysuite load``, ``paysuite demo`` and the checkout's benchmarks all call it.
- **One way to make a plan**: ``load.plan.build_plan(shape=..., config=..., ...) -> LoadPlan``
  (``plan_from_args`` for ``paysuite load``'s arguments, ``plan_from_locust_options`` for a
  plain Locust run): the target configuration, the shape with its overrides, the SLO rules and
  the client limits, each read and checked once. ``write_plan``/``read_plan`` are its one
  serialised form, for the Locust master and its workers.
- **The locustfile**: ``load/locustfile.py``, for ``locust -f`` (web UI, headless, distributed),
  giving the same verdict as ``paysuite load``.
- ``load.cli``: the ``paysuite load`` subcommand.

Inside: ``shape_catalog`` (the named shapes, pure data), ``shapes`` (their Locust
``LoadTestShape`` classes), ``users`` (the virtual user), ``auth`` (its token flow, from
``paysuite_core.tokens``), ``bounded``/``connection``/``probe`` (requests bounded by
``paysuite_core.bounded_http``), ``ledger`` and ``reconcile`` (nothing lost), ``slo`` and
``finalize`` (verdicts, load.json), ``timeline`` (the run sampled every second: load.html's
charts, ``--abort-on-fail``), ``report`` (load.html), ``loopback`` (the loopback-only rule).

The names above are also importable from ``load`` itself (``from load import build_plan, run``),
lazily: importing ``load`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'load' has no attribute {name!r}")
