"""Service-level objectives: thresholds per load shape and per operation, and their verdicts.

A threshold set maps an operation (a Locust statistics name, ``*`` for every request operation
that ran, ``total`` for all requests, ``time-to-processed``: a derived measure ``*`` does not
cover) to ``p50_ms``, ``p95_ms``, ``p99_ms``, ``error_ratio`` (ceilings) and ``min_rps`` (a
floor). A YAML file overrides the shapes' built-in ones (docs/load.md)::

    defaults: {"*": {p95_ms: 400}}     # every shape; a file without these keys is one block
    shapes: {smoke: {cashin: {p95_ms: 250}, total: {min_rps: 5}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from load.records import Knee, RampStep, ShapeSummary, VerdictRecord
from load.shape_catalog import AUTH_OPERATIONS, BASE_SLO, DERIVED_MEASURES, Shape, Thresholds

_Value = TypeVar("_Value", int, float)
METRICS = ("p50_ms", "p95_ms", "p99_ms", "error_ratio", "min_rps")
_PERCENTILE_METRICS = {"p50_ms": "p50", "p95_ms": "p95", "p99_ms": "p99"}
FLOORS = ("min_rps", "requests", "steps_completed", "successes")
#: ``--abort-on-fail``: the metrics that can be decided before the run ends, and how many
#: requests of the operation must have been seen first (an error ratio of 0 is decided at the
#: first failure: it can never be met again)
EARLY_METRICS = ("error_ratio", "p50_ms", "p95_ms", "p99_ms")
EARLY_MIN_REQUESTS = 200


class SLOError(ValueError):
    pass


@dataclass(frozen=True)
class SLORules:
    defaults: Thresholds = field(default_factory=dict)
    by_shape: dict[str, Thresholds] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"defaults": self.defaults, "shapes": self.by_shape}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "SLO rules") -> SLORules:
        if "profiles" in data:
            raise SLOError(f"{where}: 'profiles' was renamed 'shapes' (a profile is conformance's)")
        if "defaults" not in data and "shapes" not in data:
            return cls(defaults=_check_block(data, where))
        shapes = data.get("shapes") or {}
        if not isinstance(shapes, Mapping):
            raise SLOError(f"{where}: shapes: expected a mapping of shape -> operations")
        return cls(
            defaults=_check_block(data.get("defaults"), f"{where}: defaults"),
            by_shape={
                str(name): _check_block(block, f"{where}: shapes.{name}")
                for name, block in shapes.items()
            },
        )


@dataclass(frozen=True)
class OperationStats:
    """What the run observed for one operation (latencies in milliseconds)."""

    requests: int
    failures: int
    rps: float
    p50: float | None
    p95: float | None
    p99: float | None

    @property
    def error_ratio(self) -> float:
        return self.failures / self.requests if self.requests else 0.0


#: an operation that made no request
NO_REQUESTS = OperationStats(0, 0, 0.0, None, None, None)


@dataclass(frozen=True)
class Verdict:
    operation: str
    metric: str
    threshold: float
    observed: float | None
    passed: bool
    note: str = ""

    def to_dict(self) -> VerdictRecord:
        return cast(VerdictRecord, asdict(self))

    @property
    def relation(self) -> str:
        return ">=" if self.metric in FLOORS else "<="

    def describe(self) -> str:
        shown = "n/a" if self.observed is None else f"{self.observed:g}"
        return f"{self.operation} {self.metric} {shown} (SLO {self.relation} {self.threshold:g})"


def _check_block(block: object, where: str) -> dict[str, dict[str, float]]:
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise SLOError(f"{where}: expected a mapping of operation -> metrics")
    result: dict[str, dict[str, float]] = {}
    for op, metrics in block.items():
        if not isinstance(metrics, Mapping):
            raise SLOError(f"{where}.{op}: expected a mapping of metric -> number")
        checked: dict[str, float] = {}
        for metric, value in metrics.items():
            if metric not in METRICS:
                raise SLOError(
                    f"{where}.{op}.{metric}: unknown metric; known: {', '.join(METRICS)}"
                )
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise SLOError(f"{where}.{op}.{metric}: expected a number >= 0, got {value!r}")
            checked[metric] = float(value)
        result[str(op)] = checked
    return result


def load_slo_file(path: str | Path) -> SLORules:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SLOError(f"{path}: cannot read the SLO file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise SLOError(f"{path}: not valid YAML ({exc})") from None
    if data is None:
        return SLORules()
    if not isinstance(data, Mapping):
        raise SLOError(f"{path}: expected a mapping")
    return SLORules.from_dict(data, str(path))


def resolve_slo(shape: Shape, rules: SLORules | None = None) -> Thresholds:
    """The thresholds of ``shape``: the base set, overlaid by the shape's own (its built-in
    thresholds, without ``rules``), then by the file's defaults, then by its block."""
    rules = rules or SLORules()
    merged: Thresholds = {}
    for block in (BASE_SLO, shape.slo, rules.defaults, rules.by_shape.get(shape.name) or {}):
        for op, metrics in block.items():
            merged.setdefault(op, {}).update(metrics)
    return merged


def _judge(operation: str, metric: str, threshold: float, stats: OperationStats) -> Verdict:
    if metric == "min_rps":
        return Verdict(operation, metric, threshold, round(stats.rps, 3), stats.rps >= threshold)
    if stats.requests == 0:  # a threshold nothing was measured against is not met
        return Verdict(operation, metric, threshold, None, False, "no request was made")
    if metric == "error_ratio":
        ratio = stats.error_ratio
        return Verdict(operation, metric, threshold, round(ratio, 6), ratio <= threshold)
    observed = getattr(stats, _PERCENTILE_METRICS[metric])
    if observed is None:
        return Verdict(operation, metric, threshold, None, True, "no samples")
    return Verdict(operation, metric, threshold, observed, observed <= threshold)


def evaluate(
    slo: Mapping[str, Mapping[str, float]],
    operations: Mapping[str, OperationStats],
    total: OperationStats,
) -> list[Verdict]:
    """Judge every threshold against what was observed.

    ``*`` applies to each request operation that made requests (not to derived measures such as
    ``time-to-processed``, which only their own thresholds judge); to authorize and refresh (few,
    and slow by design) only its ``error_ratio``: their failures count like any other. An
    operation whose every request failed gets a failed ``successes`` row besides. A named
    operation is judged even when it made no requests: each of its thresholds then fails.
    """
    verdicts: list[Verdict] = []
    wildcard = slo.get("*", {})
    for op in sorted(operations):
        stats = operations[op]
        if stats.requests == 0 or op in DERIVED_MEASURES:
            continue
        if stats.failures >= stats.requests:
            verdicts.append(Verdict(op, "successes", 1, 0, False, "no successful request"))
        for metric, threshold in wildcard.items():
            if op in slo and metric in slo[op]:
                continue  # the specific threshold wins
            if op in AUTH_OPERATIONS and metric != "error_ratio":
                continue
            verdicts.append(_judge(op, metric, threshold, stats))
    for op, metrics in slo.items():
        if op == "*":
            continue
        stats = total if op == "total" else operations.get(op, NO_REQUESTS)
        for metric, threshold in metrics.items():
            verdicts.append(_judge(op, metric, threshold, stats))
    return verdicts


def decided_early(
    slo: Mapping[str, Mapping[str, float]],
    operations: Mapping[str, OperationStats],
    total: OperationStats,
) -> list[Verdict]:
    """The thresholds that a run in progress can already be said to miss (``--abort-on-fail``).

    Only ceilings on request operations (and ``total``): ``error_ratio`` and the latency
    percentiles, judged on the requests so far once the operation has ``EARLY_MIN_REQUESTS`` of them
    (as k6's ``abortOnFail``: breached on a sample large enough to mean something); an
    ``error_ratio`` of 0 at the first failure, since it can never be met again. ``min_rps``,
    ``successes`` and derived measures (time-to-processed) wait for the end of the run."""
    decided = []
    for verdict in evaluate(slo, operations, total):
        if verdict.passed or verdict.metric not in EARLY_METRICS:
            continue
        if verdict.operation in DERIVED_MEASURES:
            continue
        stats = total if verdict.operation == "total" else operations.get(verdict.operation)
        if stats is None:
            continue
        exact = verdict.metric == "error_ratio" and verdict.threshold == 0 and stats.failures
        if exact or stats.requests >= EARLY_MIN_REQUESTS:
            decided.append(verdict)
    return decided


def percentile_of(times: Mapping[_Value, int], fraction: float) -> float | None:
    """The nearest-rank ``fraction`` percentile of a {value: count} histogram (Locust's own
    layout, in milliseconds)."""
    total = sum(times.values())
    if total <= 0:
        return None
    values = sorted(times)
    wanted = total * fraction
    seen = accumulate(times[ms] for ms in values)
    return float(next((ms for ms, n in zip(values, seen, strict=True) if n >= wanted), values[-1]))


def ramp_knee(steps: list[RampStep], gain: float = 0.05, rise: float = 0.2) -> Knee | None:
    """The ramp's knee: the step after which throughput stopped growing while latency or errors
    rose, from the per-step numbers load.json and load.html show.

    The knee is the first step that no later step beats by more than ``gain`` (5%) in req/s,
    provided a later step's p95 is more than ``rise`` (20%) above it or its error ratio higher.
    When throughput stopped growing but latency and errors did not rise, the result says so
    (``kind: "plateau"``): then the load generator, not the target, may be what saturated.
    ``None`` while throughput still grows at the last step."""
    for index, step in enumerate(steps[:-1]):
        later = steps[index + 1 :]
        best_later = max(s["rps"] for s in later)
        if best_later > step["rps"] * (1 + gain):
            continue
        p95 = step.get("p95_ms") or 0.0
        worst_p95 = max((s.get("p95_ms") or 0.0) for s in later)
        worst_errors = max(s["error_ratio"] for s in later)
        latency_rose = worst_p95 > p95 * (1 + rise)
        errors_rose = worst_errors > step["error_ratio"]
        why = [f"later steps reached at most {best_later:g} req/s"]
        if latency_rose:
            why.append(f"p95 rose from {p95:g} to {worst_p95:g} ms")
        if errors_rose:
            why.append(f"error ratio rose from {step['error_ratio']:g} to {worst_errors:g}")
        return {
            "step": step["step"],
            "users": step["users"],
            "rps": step["rps"],
            "p95_ms": step.get("p95_ms"),
            "error_ratio": step["error_ratio"],
            "kind": "knee" if latency_rose or errors_rose else "plateau",
            "why": "; ".join(why),
        }
    return None


def ramp_finding(ramp: ShapeSummary, *, terminal: bool) -> str:
    """What the ramp found, in the words the terminal and load.html both use: its knee, its
    plateau (the terminal adds how to tell what saturated) or no knee."""
    knee, plateau = ramp.get("knee"), ramp.get("plateau")
    if knee:
        return (
            f"knee at step {knee['step']} ({knee['users']} users, {knee['rps']:g} req/s): "
            f"throughput stopped growing after it while latency or errors rose ({knee['why']})"
        )
    if plateau:
        but, tell = (" but", " (add --workers to tell)") if terminal else (", but", "")
        return (
            f"throughput stopped growing at step {plateau['step']} ({plateau['users']} users, "
            f"{plateau['rps']:g} req/s; {plateau['why']}){but} latency and errors did not rise: "
            f"the load generator may be the limit{tell}"
        )
    return "no knee: throughput still grew at the last step"
