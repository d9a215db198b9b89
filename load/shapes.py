"""Locust load shapes, one per named profile.

Every shape ends the run at the profile's duration or its request budget, whichever comes first:
no profile can run away. The locustfile exposes the shape of the selected profile (or all of them
with Locust's ``--class-picker``, for the web UI); the shape names its profile, and the locustfile
makes the users follow it.

The ramp shape judges each step on the step's own requests (a difference of the cumulative
statistics at the step's boundaries, so it works on a master fed by workers) and stops at the
first step where the p95 latency or the error ratio breaks the SLO: that step is the knee.
"""

from __future__ import annotations

import math
from typing import Any

from locust import LoadTestShape

from load.context import resolve_profile
from load.profiles import OPERATIONS, Profile
from load.slo import percentile_of, resolve_slo, throughput_plateau


class ProfileShape(LoadTestShape):
    """Common machinery: the profile, the hard stops, and why the run ended."""

    abstract = True
    profile_name = ""

    def __init__(self) -> None:
        super().__init__()
        self.profile: Profile | None = None
        self.stop_reason = ""
        self.slo_overrides: dict[str, Any] | None = None

    def _profile(self) -> Profile:
        if self.profile is None:
            assert self.runner is not None
            options = self.runner.environment.parsed_options
            if options is not None:
                options.paysuite_profile = self.profile_name
            self.profile = resolve_profile(options)
        return self.profile

    def tick(self) -> tuple[int, float] | None:
        profile = self._profile()
        elapsed = self.get_run_time()
        assert self.runner is not None
        if elapsed >= profile.duration_s:
            self.stop_reason = f"duration {profile.duration_s:g} s reached"
        elif self.runner.stats.total.num_requests >= profile.max_requests:
            self.stop_reason = f"request budget {profile.max_requests} reached"
        else:
            tick = self.users_at(elapsed, profile)
            if tick is not None:
                return tick
        return self._end()

    def _end(self) -> None:
        """Stop gracefully before Locust quits: on a master, ``stop`` waits until every worker
        has stopped its users, and each worker flushes its ledger before reporting that, so
        the ledger is complete before the verdict (a bare quit gives workers 0.5 s)."""
        from locust.runners import MasterRunner

        if isinstance(self.runner, MasterRunner):
            self.runner.stop()
        return None

    def users_at(self, elapsed: float, profile: Profile) -> tuple[int, float] | None:
        return profile.users, profile.spawn_rate

    def summary(self) -> dict[str, Any]:
        """What the shape learned, for load.json (the ramp adds its steps and knee)."""
        return {"stop_reason": self.stop_reason}


class SmokeShape(ProfileShape):
    profile_name = "smoke"


class SteadyShape(ProfileShape):
    profile_name = "steady"


class SoakShape(ProfileShape):
    profile_name = "soak"


class IdempotencyStormShape(ProfileShape):
    profile_name = "idempotency-storm"


class LifecycleShape(ProfileShape):
    profile_name = "lifecycle"


class SpikeShape(ProfileShape):
    profile_name = "spike"

    def users_at(self, elapsed: float, profile: Profile) -> tuple[int, float] | None:
        start, end = profile.spike_window
        if start * profile.duration_s <= elapsed < end * profile.duration_s:
            peak = max(profile.peak_users, profile.users)
            return peak, float(peak)  # the whole spike arrives within a second
        return profile.users, float(max(profile.spawn_rate, profile.peak_users))


class RampShape(ProfileShape):
    profile_name = "ramp"

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[dict[str, Any]] = []
        self.knee: dict[str, Any] | None = None
        self._step_index = -1
        self._snapshot: tuple[int, int, dict[int, int]] | None = None
        self._step_started = 0.0

    def _cumulative(self) -> tuple[int, int, dict[int, int]]:
        assert self.runner is not None
        requests = failures = 0
        times: dict[int, int] = {}
        for (name, _method), entry in self.runner.stats.entries.items():
            if name not in OPERATIONS:
                continue
            requests += entry.num_requests
            failures += entry.num_failures
            for ms, count in entry.response_times.items():
                times[ms] = times.get(ms, 0) + count
        return requests, failures, times

    def _close_step(self, elapsed: float, profile: Profile) -> bool:
        """Judge the step that just ended; True when it breached (the knee)."""
        now = self._cumulative()
        if self._snapshot is None:
            self._snapshot = now
            return False
        requests = now[0] - self._snapshot[0]
        failures = now[1] - self._snapshot[1]
        times = {ms: c - self._snapshot[2].get(ms, 0) for ms, c in now[2].items()}
        times = {ms: c for ms, c in times.items() if c > 0}
        self._snapshot = now
        slo = resolve_slo(profile, self.slo_overrides).get("*", {})
        p95 = percentile_of(times, 0.95)
        ratio = failures / requests if requests else 0.0
        duration = max(elapsed - self._step_started, 1e-6)
        breached = []
        if "p95_ms" in slo and p95 is not None and p95 > slo["p95_ms"]:
            breached.append("p95_ms")
        if "error_ratio" in slo and ratio > slo["error_ratio"]:
            breached.append("error_ratio")
        step = {
            "step": self._step_index,
            "users": profile.users + profile.step_users * self._step_index,
            "requests": requests,
            "failures": failures,
            "rps": round(requests / duration, 2),
            "p95_ms": p95,
            "error_ratio": round(ratio, 6),
            "breached": breached,
        }
        self.steps.append(step)
        if breached and self.knee is None:
            self.knee = step
            return True
        return False

    def users_at(self, elapsed: float, profile: Profile) -> tuple[int, float] | None:
        index = int(elapsed // profile.step_s)
        if index != self._step_index:
            if self._step_index >= 0 and self._close_step(elapsed, profile):
                self.stop_reason = f"knee found at step {self.knee['step']}"  # type: ignore[index]
                return None  # tick() ends the run
            if self._step_index < 0:
                self._snapshot = self._cumulative()
            self._step_index = index
            self._step_started = elapsed
        users = profile.users + profile.step_users * index
        return users, float(max(profile.spawn_rate, profile.step_users))

    def summary(self) -> dict[str, Any]:
        last_good = None
        for step in self.steps:
            if step["breached"]:
                break
            last_good = step
        return {
            "stop_reason": self.stop_reason,
            "steps": self.steps,
            "knee": self.knee,
            "max_sustainable": last_good,
            "plateau": throughput_plateau(self.steps),
            "step_s": self.profile.step_s if self.profile else None,
        }


SHAPES: dict[str, type[ProfileShape]] = {
    cls.profile_name: cls
    for cls in (
        SmokeShape,
        SteadyShape,
        RampShape,
        SpikeShape,
        SoakShape,
        IdempotencyStormShape,
        LifecycleShape,
    )
}


def steps_needed(profile: Profile) -> int:
    """How many ramp steps fit in the duration (for the docs and the progress line)."""
    return max(1, math.ceil(profile.duration_s / max(profile.step_s, 1)))
