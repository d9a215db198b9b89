"""paysuite's Locust user against a minimal one: the rate each reaches on find, same users and
duration, so that paysuite's bookkeeping is never what limits a load test."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from load.plan import build_plan
from load.runner import run

#: Seconds at the start of a Locust run left out of its rate: spawning, and the paysuite users'
#: authorize (a scrypt check each on the stub, queued), which the minimal user does not do.
SKIP_S = 3.0
#: The paysuite run's request budget: high enough that only the duration ends it, as it does
#: the minimal run (the smoke shape's own budget would end it early).
MAX_REQUESTS = 1_000_000_000

_MINIMAL_LOCUSTFILE = """
import os
from locust import constant, task
from locust.contrib.fasthttp import FastHttpUser


class Minimal(FastHttpUser):
    wait_time = constant(0)
    concurrency = 1
    max_retries = 0
    _path = os.environ["BENCH_FIND_PATH"]
    # the request the interface document prescribes ("Send Accept and Content-Type on every
    # call"), as the paysuite user sends it: the two sides differ in bookkeeping, not on the wire
    _headers = {
        "Authorization": "Bearer " + os.environ["BENCH_TOKEN"],
        "Accept": "application/json",
        "Content-Type": "application/json",
    }

    @task
    def find(self):
        self.client.get(self._path, headers=self._headers, name="find")
"""


def steady_rate(history: Path, skip_s: float = SKIP_S) -> float | None:
    """Requests/s of a Locust run after its first ``skip_s`` seconds, from the aggregated rows
    of its ``*_stats_history.csv`` (one a second): the rate once every user is running.

    The least-squares slope of the request count over time, through every row after the start,
    not the first and last rows alone: Locust's timestamps are whole seconds and its writer is
    late when the process is busy, so two rows a few seconds apart can be off by a quarter."""
    if not history.is_file():
        return None
    with history.open(newline="") as handle:
        rows = [
            (int(r["Timestamp"]), int(r["Total Request Count"]))
            for r in csv.DictReader(handle)
            if r["Name"] == "Aggregated"
        ]
    if len(rows) < 2:
        return None
    steady = [row for row in rows if row[0] >= rows[0][0] + skip_s] or rows
    if len(steady) < 2 or steady[-1][0] <= steady[0][0]:
        return None
    mean_t = sum(t for t, _ in steady) / len(steady)
    mean_n = sum(n for _, n in steady) / len(steady)
    spread = sum((t - mean_t) ** 2 for t, _ in steady)
    return round(sum((t - mean_t) * (n - mean_n) for t, n in steady) / spread, 1)


def paysuite_rate(
    credentials: Path, seconds: float, users: int, report_dir: Path
) -> dict[str, Any]:
    """A paysuite Locust run (the real locustfile, through ``load.runner.run``) on a find-heavy
    mix with no wait."""
    plan = build_plan(
        shape="smoke", config=credentials, report_dir=report_dir, users=users,
        spawn_rate=float(users), duration=seconds + SKIP_S, mix="cashin=1,find=99",
        pacing="constant:0", max_requests=MAX_REQUESTS, quiet=True,
    )  # fmt: skip
    report_dir.mkdir(parents=True, exist_ok=True)
    summary = run(plan, locust_log=report_dir / "locust.log").summary
    if summary is None:
        raise RuntimeError(f"the Locust run produced no verdict; see {report_dir / 'locust.log'}")
    find = summary["operations"].get("find", {})
    steady = steady_rate(report_dir / "locust_stats_history.csv")
    return {
        "rps": steady if steady is not None else summary["total"]["rps"],
        "whole_run_rps": summary["total"]["rps"],
        "find_rps": find.get("rps"),
        "p50_ms": find.get("p50_ms"),
        "p99_ms": find.get("p99_ms"),
        "requests": summary["total"]["requests"],
        "failures": summary["total"]["failures"],
    }


def minimal_rate(
    root_url: str, path: str, token: str, seconds: float, users: int, workdir: Path
) -> dict[str, Any]:
    """A minimal ``FastHttpUser`` that only GETs ``path`` (headless Locust, one process, the
    same users, spawn rate and duration as the paysuite run)."""
    locustfile = workdir / "minimal_locustfile.py"
    locustfile.write_text(_MINIMAL_LOCUSTFILE)
    prefix = workdir / f"minimal-{uuid.uuid4().hex[:6]}"
    command = [
        sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--only-summary",
        "-u", str(users), "-r", str(users), "-t", f"{round(seconds + SKIP_S)}s",
        "--host", root_url, "--csv", str(prefix), "--csv-full-history",
        "--loglevel", "WARNING", "--stop-timeout", "2",
    ]  # fmt: skip
    env = dict(os.environ, BENCH_FIND_PATH=path, BENCH_TOKEN=token)
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 90, env=env)
    stats = Path(f"{prefix}_stats.csv")
    if not stats.is_file():
        raise RuntimeError(f"the minimal Locust run wrote no statistics: {out.stderr[-400:]}")
    with stats.open(newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["Name"] == "Aggregated")
    steady = steady_rate(Path(f"{prefix}_stats_history.csv"))
    return {
        "rps": steady if steady is not None else float(row["Requests/s"]),
        "whole_run_rps": float(row["Requests/s"]),
        "requests": int(row["Request Count"]),
        "failures": int(row["Failure Count"]),
        "p50_ms": float(row["50%"]),
        "p99_ms": float(row["99%"]),
    }
