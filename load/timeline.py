"""The run's timeline, sampled in the Locust master (or single process) while the test runs.

Every second (every 3 s on a master, as often as its workers report) it keeps what changed in
Locust's cumulative statistics: requests and failures per second, users, and the exact p50/p95/
p99 of that interval (a difference of the histograms, not a lagging window), overall and per
operation, for load.json and load.html. With ``--abort-on-fail`` each sample asks
``load.slo.decided_early`` whether a threshold can no longer be met. No Locust or gevent import
at module level: ``load.finalize`` reads it outside Locust.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from load.records import Abort, OperationPoint, Point, Sample, TimelineRecord
from load.shape_catalog import AUTH_OPERATIONS
from load.slo import OperationStats, decided_early, percentile_of

if TYPE_CHECKING:
    from gevent import Greenlet
    from locust.env import Environment
    from locust.stats import RequestStats, StatsEntry

    from load.plan import LoadPlan

LOCAL_INTERVAL_S = 1.0
MASTER_INTERVAL_S = 3.0  # Locust's workers report every 3 s

#: name -> (requests, failures, {rounded ms: count}), cumulative
Tally = tuple[int, int, dict[int, int]]
Counts = dict[str, Tally]


def cumulative(stats: RequestStats) -> Counts:
    """Locust's cumulative statistics per request name (methods merged)."""
    counts: Counts = {}
    for (name, _method), entry in stats.entries.items():
        requests, failures, times = counts.get(name, (0, 0, Counter()))
        merged = Counter(times) + Counter(entry.response_times)
        counts[name] = (requests + entry.num_requests, failures + entry.num_failures, merged)
    return counts


def interval(now: Tally, before: Tally | None) -> Tally:
    """What happened between two cumulative tallies."""
    if before is None:
        return now
    times = Counter(now[2]) - Counter(before[2])  # what grew: Counter keeps positive counts
    return max(now[0] - before[0], 0), max(now[1] - before[1], 0), times


def summed(counts: Counts, names: Iterable[str]) -> Tally:
    """The tallies of ``names`` together."""
    requests = failures = 0
    times: Counter[int] = Counter()
    for name in names:
        r, f, t = counts.get(name, (0, 0, {}))
        requests, failures = requests + r, failures + f
        times.update(t)
    return requests, failures, times


def _point(requests: int, failures: int, times: dict[int, int], span: float) -> Point:
    return {
        "rps": round(requests / span, 2),
        "fail_s": round(failures / span, 2),
        "p50": percentile_of(times, 0.50),
        "p95": percentile_of(times, 0.95),
        "p99": percentile_of(times, 0.99),
    }


def _entry_stats(entry: StatsEntry, duration: float) -> OperationStats:
    def pct(fraction: float) -> float | None:
        return float(entry.get_response_time_percentile(fraction)) if entry.num_requests else None

    return OperationStats(
        requests=entry.num_requests,
        failures=entry.num_failures,
        rps=round(entry.num_requests / duration, 3) if duration > 0 else 0.0,
        p50=pct(0.5),
        p95=pct(0.95),
        p99=pct(0.99),
    )


def collect_operations(
    stats: RequestStats,
) -> tuple[dict[str, OperationStats], OperationStats, float]:
    """Per request name (methods merged) and total, with the run's duration in seconds."""
    total = stats.total
    start = total.start_time or time.time()
    end = total.last_request_timestamp or start
    duration = max(end - start, 1e-6)
    by_name: dict[str, StatsEntry] = {}
    for (name, _method), entry in stats.entries.items():
        if name not in by_name:
            from locust.stats import StatsEntry  # the run-time import

            by_name[name] = StatsEntry(stats, name, "", use_response_times_cache=False)
        by_name[name].extend(entry)
    ops = {name: _entry_stats(entry, duration) for name, entry in by_name.items()}
    return ops, _entry_stats(total, duration), duration


class Timeline:
    """Samples of one test (see the module docstring)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.samples: list[Sample] = []
        self.peak_users = 0
        self.abort: Abort | None = None
        self.started_at = 0.0
        self._previous: Counts = {}
        self._last_t = 0.0
        self._greenlet: Greenlet | None = None
        self._environment: Environment | None = None
        self._plan: LoadPlan | None = None

    @property
    def abort_reason(self) -> str:
        return str(self.abort["reason"]) if self.abort else ""

    def start(self, environment: Environment, plan: LoadPlan) -> None:
        """Begin a test's timeline (``test_start`` on the master or single process)."""
        import gevent
        from locust.runners import MasterRunner

        self.stop()
        self._reset()
        self._environment = environment
        self._plan = plan
        self.started_at = time.time()
        self._previous = cumulative(environment.runner.stats) if environment.runner else {}
        interval = (
            MASTER_INTERVAL_S if isinstance(environment.runner, MasterRunner) else LOCAL_INTERVAL_S
        )

        def loop() -> None:
            while True:
                gevent.sleep(interval)
                self.sample()

        self._greenlet = gevent.spawn(loop)

    def sample(self) -> None:
        environment = self._environment
        if environment is None or environment.runner is None:
            return
        runner = environment.runner
        t = time.time() - self.started_at
        span = t - self._last_t
        if span <= 0.05:
            return
        now = cumulative(runner.stats)
        users = int(runner.user_count)
        self.peak_users = max(self.peak_users, users)
        since = {name: interval(now[name], self._previous.get(name)) for name in sorted(now)}
        ops: dict[str, OperationPoint] = {
            name: {"requests": requests, **_point(requests, failures, times, span)}
            for name, (requests, failures, times) in since.items()
            if requests or failures
        }
        all_requests, all_failures, _ = summed(since, since)
        # authorize and refresh left out: slow by design, a few per user, they would hide the
        # mix's latency
        _, _, all_times = summed(since, [name for name in since if name not in AUTH_OPERATIONS])
        self.samples.append(
            {
                "t": round(t, 2),
                "users": users,
                "requests": all_requests,
                **_point(all_requests, all_failures, all_times, span),
                "ops": ops,
            }
        )
        self._previous = now
        self._last_t = t
        self._check_thresholds()

    def _check_thresholds(self) -> None:
        plan = self._plan
        if self.abort or plan is None or not plan.abort_on_fail or plan.shape.step_s:
            return  # the ramp judges its own steps: its breaking point is its finding
        assert self._environment is not None and self._environment.runner is not None
        ops, total, _ = collect_operations(self._environment.runner.stats)
        decided = decided_early(plan.thresholds, ops, total)
        if decided:
            first = decided[0]
            self.abort = {
                "at_s": self.samples[-1]["t"] if self.samples else 0.0,
                "reason": first.describe(),
                "verdict": first.to_dict(),
            }
            print(
                f"paysuite: aborting the run (--abort-on-fail): {first.describe()} can no "
                "longer be met",
                flush=True,
            )

    def stop(self) -> None:
        """End the timeline with a last sample (``test_stop``; again at the verdict: no-op)."""
        if self._greenlet is None:
            return
        greenlet, self._greenlet = self._greenlet, None
        greenlet.kill(block=False)
        self.sample()

    def to_dict(self) -> TimelineRecord:
        """load.json's ``timeline``."""
        return {
            "interval_s": self.samples[1]["t"] - self.samples[0]["t"]
            if len(self.samples) > 1
            else None,
            "peak_users": self.peak_users,
            "samples": self.samples,
        }


TIMELINE = Timeline()
