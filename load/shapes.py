"""Locust ``LoadTestShape`` classes, one per shape of the catalogue (``load.shape_catalog``).

Every shape ends the run at its duration or its request budget, whichever comes first: no shape
can run away. The run's plan (``load.context.LoadProcess``) supplies the overrides, Locust's
``-u``, ``-r``, ``-t`` among them (``use_common_options``), and the SLO rules. The ramp judges
each step on its own requests (a difference of the cumulative statistics, so it works on a
master fed by workers), stops at the first step that breaks the SLO, and computes its knee from
the same numbers (``load.slo.ramp_knee``).
"""

from __future__ import annotations

from itertools import takewhile

from locust import LoadTestShape

from load.context import of
from load.plan import LoadPlan
from load.records import RampStep, ShapeSummary
from load.shape_catalog import OPERATIONS, SHAPE_NAMES, Shape
from load.slo import percentile_of, ramp_knee
from load.timeline import TIMELINE, Tally, cumulative, interval, summed

Tick = tuple[int, float]


class CatalogShape(LoadTestShape):
    """Common machinery: the catalogue entry, the hard stops, and why the run ended."""

    abstract = True
    shape_name = ""
    # -u, -r, -t and the web UI's fields apply (through the plan's overrides)
    use_common_options = True

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # untyped in Locust
        self.shape: Shape | None = None
        self.stop_reason = ""

    def _plan(self) -> LoadPlan:
        """The run's plan with this class's shape (the class picker may have chosen it)."""
        assert self.runner is not None
        return of(self.runner.environment).current_plan().with_shape(self.shape_name)

    def tick(self) -> Tick | None:
        shape = self.shape = self._plan().shape
        elapsed: float = self.get_run_time()  # type: ignore[no-untyped-call]
        assert self.runner is not None
        if TIMELINE.abort_reason:
            self.stop_reason = f"aborted by --abort-on-fail: {TIMELINE.abort_reason}"
        elif elapsed >= shape.duration_s:
            self.stop_reason = f"duration {shape.duration_s:g} s reached"
            self.finish(elapsed, shape)
        elif self.runner.stats.total.num_requests >= shape.max_requests:
            self.stop_reason = f"request budget {shape.max_requests} reached"
        else:
            tick = self.users_at(elapsed, shape)
            if tick is not None:
                return tick
        self._end()
        return None

    def _end(self) -> None:
        """Stop gracefully before Locust quits: on a master, ``stop`` waits until every worker
        has stopped its users, and each worker flushes its ledger before reporting that, so
        the ledger is complete before the verdict (a bare quit gives workers 0.5 s)."""
        from locust.runners import MasterRunner

        if isinstance(self.runner, MasterRunner):
            self.runner.stop()

    def users_at(self, elapsed: float, shape: Shape) -> Tick | None:
        return shape.users, shape.spawn_rate

    def finish(self, elapsed: float, shape: Shape) -> None:
        """The run reached its duration (the ramp closes its last step)."""

    def summary(self) -> ShapeSummary:
        """What the shape learned, for load.json (the ramp adds its steps and knee)."""
        return {"stop_reason": self.stop_reason}


class SpikeShape(CatalogShape):
    shape_name = "spike"

    def users_at(self, elapsed: float, shape: Shape) -> Tick | None:
        start, end = shape.spike_window
        if start * shape.duration_s <= elapsed < end * shape.duration_s:
            peak = max(shape.peak_users, shape.users)
            return peak, float(peak)  # the whole spike arrives within a second
        return shape.users, float(max(shape.spawn_rate, shape.peak_users))


class RampShape(CatalogShape):
    shape_name = "ramp"

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[RampStep] = []
        #: the first step that broke an SLO (it ends the run)
        self.slo_break: RampStep | None = None
        self._step_index = -1
        self._snapshot: Tally | None = None
        self._step_started = 0.0

    def _cumulative(self) -> Tally:
        assert self.runner is not None
        return summed(cumulative(self.runner.stats), OPERATIONS)

    def _close_step(self, elapsed: float, shape: Shape) -> bool:
        """Judge the step that just ended; True when it breached (the knee)."""
        now = self._cumulative()
        if self._snapshot is None:
            self._snapshot = now
            return False
        requests, failures, times = interval(now, self._snapshot)
        self._snapshot = now
        slo = self._plan().thresholds.get("*", {})
        p95 = percentile_of(times, 0.95)
        ratio = failures / requests if requests else 0.0
        duration = max(elapsed - self._step_started, 1e-6)
        judged = {"p95_ms": p95, "error_ratio": ratio}
        breached = [m for m, v in judged.items() if m in slo and v is not None and v > slo[m]]
        step: RampStep = {
            "step": self._step_index,
            "users": shape.users + shape.step_users * self._step_index,
            "start_s": round(self._step_started, 1),
            "duration_s": round(duration, 1),
            "requests": requests,
            "failures": failures,
            "rps": round(requests / duration, 2),
            "p95_ms": p95,
            "error_ratio": round(ratio, 6),
            "breached": breached,
        }
        self.steps.append(step)
        if breached and self.slo_break is None:
            self.slo_break = step
            return True
        return False

    def finish(self, elapsed: float, shape: Shape) -> None:
        # the last step, if it ran most of its length (else its numbers would mislead)
        if self._step_index >= 0 and elapsed - self._step_started >= shape.step_s * 0.5:
            self._close_step(elapsed, shape)

    def users_at(self, elapsed: float, shape: Shape) -> Tick | None:
        index = int(elapsed // shape.step_s)
        if index != self._step_index:
            if self._step_index >= 0 and self._close_step(elapsed, shape):
                self.stop_reason = f"SLO broken at step {self._step_index}"
                return None  # tick() ends the run
            if self._step_index < 0:
                self._snapshot = self._cumulative()
            self._step_index = index
            self._step_started = elapsed
        users = shape.users + shape.step_users * index
        return users, float(max(shape.spawn_rate, shape.step_users))

    def summary(self) -> ShapeSummary:
        good = list(takewhile(lambda step: not step["breached"], self.steps))
        found = ramp_knee(self.steps)
        return {
            "stop_reason": self.stop_reason,
            "steps": self.steps,
            "knee": found if found and found["kind"] == "knee" else None,
            "plateau": found if found and found["kind"] == "plateau" else None,
            "slo_break": self.slo_break,
            "max_sustainable": good[-1] if good else None,
            "step_s": self.shape.step_s if self.shape else None,
        }


def _plain(name: str) -> type[CatalogShape]:
    """The class of a shape with a constant user count (``idempotency-storm``:
    ``IdempotencyStormShape``)."""
    title = "".join(part.title() for part in name.split("-"))
    return type(f"{title}Shape", (CatalogShape,), {"shape_name": name, "__module__": __name__})


_SPECIAL: dict[str, type[CatalogShape]] = {"ramp": RampShape, "spike": SpikeShape}
SHAPE_CLASSES: dict[str, type[CatalogShape]] = {
    name: _SPECIAL.get(name) or _plain(name) for name in SHAPE_NAMES
}
