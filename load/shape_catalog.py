"""The catalogue of named load shapes: pure data, no Locust import.

The Locust shape classes (``load.shapes``), the user classes (``load.users``) and the SLO model
(``load.slo``) all read this one table, so that ``paysuite load --shape ramp`` and
``locust -f load/locustfile.py --paysuite-shape ramp`` run the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

#: Operations a virtual user can pick; the names are also the Locust statistics names.
OPERATIONS = ("cashin", "cashout", "find", "events", "events?filter")
#: Request names of the token traffic (never part of the mix).
AUTH_OPERATIONS = ("authorize", "refresh")

#: ``load.users.MerchantUser``'s task weights
DEFAULT_MIX: dict[str, float] = {
    "cashin": 3,
    "cashout": 2,
    "find": 3,
    "events": 1,
    "events?filter": 1,
}


@dataclass(frozen=True)
class Pacing:
    """How a user waits between tasks: ``between`` ``low``..``high`` seconds, ``constant``
    ``low`` (= ``high``) seconds, or ``throughput``: ``rps`` arrivals per second shared by all
    the shape's users (Locust's ``constant_throughput`` per user)."""

    kind: Literal["between", "constant", "throughput"]
    low: float = 0.0
    high: float = 0.0
    rps: float = 0.0


#: operation (or ``*``, ``total``, ``time-to-processed``) -> metric -> threshold
Thresholds: TypeAlias = dict[str, dict[str, float]]

#: Measures derived from several requests (not requests themselves): ``*`` does not apply to them.
DERIVED_MEASURES = ("time-to-processed",)
#: The ramp's steps never get shorter than this (a step judged on a second or two of requests is
#: noise), and a ramp has at least this many steps: a shorter ``--duration`` is a usage error.
MIN_RAMP_STEP_S = 5.0
MIN_RAMP_STEPS = 3

#: every shape's thresholds, under the shape's own (``load.slo.resolve_slo``)
BASE_SLO: Thresholds = {
    "*": {"p95_ms": 500, "p99_ms": 1000, "error_ratio": 0.01},
    #: every request of the run, authorize and refresh included: a run where more than this
    #: share failed never passes, whatever its per-operation thresholds say
    "total": {"error_ratio": 0.01},
}


@dataclass(frozen=True)
class Shape:
    """One named load shape: ``duration_s`` and ``max_requests`` are hard stops, whichever
    comes first ends the run."""

    name: str
    description: str
    users: int
    spawn_rate: float
    duration_s: float
    max_requests: int
    pacing: Pacing = Pacing("between", 0.05, 0.3)
    #: the Locust user classes (``load.users``) the shape runs
    user_classes: tuple[str, ...] = ("MerchantUser",)
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    slo: Thresholds = field(default_factory=dict)
    #: ramp: users added per step, and the step length (scaled with --duration, never below
    #: ``MIN_RAMP_STEP_S``)
    step_users: int = 0
    step_s: float = 0
    #: spike: the peak user count and the (start, end) fractions of the duration it lasts
    peak_users: int = 0
    spike_window: tuple[float, float] = (0.35, 0.65)
    #: idempotency-storm: keys shared per time slot, slot length
    storm_keys: int = 0
    storm_slot_s: float = 1.0

    @property
    def steps(self) -> int:
        """How many ramp steps fit in the duration (0 for the other shapes)."""
        return int(self.duration_s // self.step_s) if self.step_s else 0

    @property
    def peak_user_count(self) -> int:
        """The most users this shape asks for."""
        if self.step_s:
            return self.users + self.step_users * max(self.steps - 1, 0)
        return max(self.users, self.peak_users)

    def check(self) -> None:
        """``ValueError`` when the overrides leave the shape unable to say what it should (a ramp
        with steps too short or too few)."""
        if not self.step_s:
            return
        if self.step_s < MIN_RAMP_STEP_S:
            raise ValueError(
                f"ramp: steps of {self.step_s:g} s are too short to judge (at least "
                f"{MIN_RAMP_STEP_S:g} s)"
            )
        if self.steps < MIN_RAMP_STEPS:
            raise ValueError(
                f"ramp: a duration of {self.duration_s:g} s holds {self.steps} step(s) of "
                f"{self.step_s:g} s; the knee needs at least {MIN_RAMP_STEPS}: give --duration "
                f"{MIN_RAMP_STEPS * self.step_s:g}s or more"
            )

    def outline(self) -> str:
        """One line saying what the shape will do (printed when the run starts)."""
        if self.step_s:
            return (
                f"{self.steps} steps of {self.step_s:g} s, {self.users} to "
                f"{self.peak_user_count} users (+{self.step_users} per step)"
            )
        if self.peak_users:
            return f"{self.users} users, {self.peak_user_count} during the spike"
        return f"{self.users} users"


@dataclass(frozen=True)
class ShapeOverrides:
    """What the options change in the named shape (kept apart, so another shape picked in
    Locust's web UI gets the same changes)."""

    users: int | None = None
    spawn_rate: float | None = None
    duration_s: float | None = None
    max_requests: int | None = None
    mix: dict[str, float] | None = None
    pacing: Pacing | None = None
    #: ramp only: the step length
    step_s: float | None = None

    def apply(self, shape: Shape) -> Shape:
        """``shape`` with these overrides; the ramp step scales with the duration (down to
        ``MIN_RAMP_STEP_S``) unless ``step_s`` sets it."""
        changes: dict[str, Any] = {k: v for k, v in vars(self).items() if v is not None}
        changes.pop("step_s", None)  # the ramp's alone: below
        if self.users is not None and shape.peak_users:
            changes["peak_users"] = max(
                self.users, shape.peak_users * self.users // max(shape.users, 1)
            )
        if self.duration_s is not None and shape.step_s:
            changes["step_s"] = max(
                MIN_RAMP_STEP_S, shape.step_s * self.duration_s / shape.duration_s
            )
        if self.step_s is not None and shape.step_s:
            changes["step_s"] = self.step_s
        return replace(shape, **changes)


SHAPES: dict[str, Shape] = {
    p.name: p
    for p in (
        Shape(
            name="smoke",
            description="a few users for about 30 s: does everything work under light load",
            users=5,
            spawn_rate=5,
            duration_s=30,
            max_requests=20_000,
            pacing=Pacing("between", 0.1, 0.4),
            slo={
                "*": {"p95_ms": 500, "p99_ms": 1000, "error_ratio": 0.0},
                "total": {"min_rps": 2},
            },
        ),
        Shape(
            name="steady",
            description="a constant arrival rate (20 requests/s by default) for 60 s",
            users=10,
            spawn_rate=10,
            duration_s=60,
            max_requests=50_000,
            pacing=Pacing("throughput", rps=20.0),
            slo={
                "*": {"p95_ms": 300, "p99_ms": 800, "error_ratio": 0.001},
                "total": {"min_rps": 18},
            },
        ),
        Shape(
            name="ramp",
            description="adds users step by step until an SLO breaks; reports the knee",
            users=4,
            spawn_rate=10,
            duration_s=120,
            max_requests=200_000,
            pacing=Pacing("between", 0.02, 0.1),
            step_users=4,
            step_s=10,
            slo={"*": {"p95_ms": 250, "error_ratio": 0.01}},
        ),
        Shape(
            name="spike",
            description="a base load, a sudden tenfold spike, and the recovery",
            users=5,
            spawn_rate=5,
            duration_s=45,
            max_requests=100_000,
            pacing=Pacing("between", 0.1, 0.4),
            peak_users=50,
            slo={"*": {"p95_ms": 1500, "p99_ms": 3000, "error_ratio": 0.01}},
        ),
        Shape(
            name="soak",
            description="a moderate constant rate for 10 minutes (bounded): leaks and drift",
            users=10,
            spawn_rate=5,
            duration_s=600,
            max_requests=500_000,
            pacing=Pacing("throughput", rps=10.0),
            slo={
                "*": {"p95_ms": 300, "p99_ms": 800, "error_ratio": 0.001},
                "total": {"min_rps": 9},
            },
        ),
        Shape(
            name="idempotency-storm",
            description="many users retrying the same idempotency keys at once: 409s expected",
            users=20,
            spawn_rate=20,
            duration_s=20,
            max_requests=50_000,
            pacing=Pacing("between", 0.0, 0.05),
            mix={"cashin": 1},
            user_classes=("StormUser",),
            storm_keys=4,
            storm_slot_s=1.0,
            slo={"*": {"p95_ms": 1000, "p99_ms": 2000, "error_ratio": 0.0}},
        ),
        Shape(
            name="lifecycle",
            description="create, then poll find until processed; reports time to processed",
            users=5,
            spawn_rate=5,
            duration_s=40,
            max_requests=20_000,
            pacing=Pacing("between", 0.1, 0.3),
            mix={"cashin": 1, "cashout": 1},
            user_classes=("LifecycleUser",),
            slo={
                "*": {"p95_ms": 500, "p99_ms": 1000, "error_ratio": 0.0},
                "time-to-processed": {"p95_ms": 30_000},
            },
        ),
    )
}


SHAPE_NAMES: tuple[str, ...] = tuple(SHAPES)


def get_shape(name: str) -> Shape:
    """The named shape; a ``KeyError`` with the known names otherwise."""
    try:
        return SHAPES[name]
    except KeyError:
        raise KeyError(f"unknown shape {name!r}; known: {', '.join(SHAPES)}") from None


def parse_mix(text: str) -> dict[str, float]:
    """Parse ``cashin=3,cashout=1,find=2`` into weights; unknown operations are an error."""
    mix: dict[str, float] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, weight = part.partition("=")
        name = name.strip()
        if name not in OPERATIONS:
            raise ValueError(f"mix: unknown operation {name!r}; known: {', '.join(OPERATIONS)}")
        try:
            value = float(weight) if sep else 1.0
        except ValueError:
            raise ValueError(f"mix: weight of {name!r} is not a number: {weight!r}") from None
        if value < 0:
            raise ValueError(f"mix: weight of {name!r} is negative")
        mix[name] = value
    if not any(mix.values()):
        raise ValueError("mix: at least one operation needs a positive weight")
    return mix


def parse_pacing(text: str) -> Pacing:
    """Parse ``between:LO:HI``, ``constant:S`` or ``throughput:TOTAL_RPS``."""
    kind, *values = text.strip().split(":")
    arity = {"between": 2, "constant": 1, "throughput": 1}
    if kind not in arity or len(values) != arity[kind]:
        raise ValueError(
            f"pacing: expected between:LO:HI, constant:S or throughput:RPS, got {text!r}"
        )
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        raise ValueError(f"pacing: not a number in {text!r}") from None
    if any(n < 0 for n in numbers) or (kind == "throughput" and numbers[0] <= 0):
        raise ValueError(f"pacing: values must be positive in {text!r}")
    if kind == "between" and numbers[0] > numbers[1]:
        raise ValueError(f"pacing: LO is greater than HI in {text!r}")
    if kind == "throughput":
        return Pacing("throughput", rps=numbers[0])
    return Pacing("between", *numbers) if kind == "between" else Pacing("constant", *numbers * 2)
