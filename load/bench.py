"""``paysuite bench``: how fast is the stub, and how much of a load test's rate is paysuite's own?

One run, on this machine, side by side, every figure against its target with a pass/fail mark:

1. **Stub vs bare handler.** The stub's throughput on cashin (a fresh idempotency key per
   request) and find, against a bare aiohttp handler returning a small JSON body
   (``load.bare_server``: its own process, the same event loop and JSON library), in interleaved
   rounds (``--rounds``; the median is kept). Each side of a ratio gets the same request: the
   bare handler is sent the find GET for the find ratio, and the cashin POST (headers, body and
   a fresh key) for the cashin ratio. Both sides of each ratio are driven by the same
   generator: wrk when installed (a Lua script adds the Authorization header and a fresh
   Idempotency-Key per cashin), else ``load.bench_client`` (raw asyncio, one process).
   Targets: cashin >= 0.50 and find >= 0.70 of the bare handler.
2. **The events list at scale.** 1,000,000 events are written straight into a second stub's
   store (``seed_events``: one ``executemany``, indexes and running totals rebuilt by the
   store's own migration), then each query is timed one at a time: the first page unfiltered,
   with each filter the list supports, and at offset 10,000. Target: p50 <= 5 ms each.
3. **paysuite's user vs a minimal Locust user.** The rate a paysuite Locust run (the real
   locustfile through ``load.runner.run``, find-heavy mix, no wait) reaches against the stub,
   against a minimal ``FastHttpUser`` that only GETs find, same users and duration, interleaved
   rounds. Target: >= 0.90 (paysuite's bookkeeping must not be what limits a load test).
4. **Where the time goes** (when a stub target is missed, or with ``--profile-stub``): the stub
   is run again under cProfile while cashin or find load is applied; the time is broken down by
   area and by function.

A benchmark, not a test: it prints numbers and writes ``bench.json``; exit 0 unless it could not
run (2). Everything is loopback.
"""

from __future__ import annotations

import argparse
import json
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import httpx

from paysuite_core import tokens
from paysuite_core.target_config import TargetConfig
from paysuite_core.tokens import TokenFlow

TARGETS = {"cashin": 0.50, "find": 0.70, "locust": 0.90}
#: The two baselines: each side of a ratio gets the same request bytes (the bare handler answers
#: any path and ignores the body and headers it does not need).
BARE_GET = "bare handler (GET find)"
BARE_POST = "bare handler (POST cashin)"
#: The events list: p50 of each query, milliseconds, with ``EVENTS`` stored events.
EVENTS_P50_MS = 5.0
EVENTS = 1_000_000
NUMBER = "0781234567"

_WRK_GET = """
wrk.method = "GET"
wrk.headers["Accept"] = "application/json"
{auth}
"""

_WRK_CASHIN = """
wrk.method = "POST"
wrk.body = '{{"amount": 100, "number": "{number}"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
local counter = 0
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function request()
  counter = counter + 1
  -- a fresh key per request: run prefix, thread, counter (26 characters, at most 32 allowed)
  wrk.headers["Idempotency-Key"] = string.format("{run}%02d%016x", tid or 0, counter)
  return wrk.format(nil, nil, wrk.headers, wrk.body)
end
"""


def say(message: str) -> None:
    print(f"paysuite bench: {message}", flush=True)


# -- generators --
def _ms(value: str, unit: str) -> float:
    factor = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]
    return float(value) * factor


def parse_wrk(output: str) -> dict[str, Any]:
    """Requests/sec, request count, non-2xx count and the 50%/99% latencies of wrk's output."""
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    total = re.search(r"(\d+) requests in", output)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors:.*", output)
    latency = {
        pct: _ms(value, unit)
        for pct, value, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$", output, re.M)
    }
    if rps is None:
        raise RuntimeError(f"unexpected wrk output: {output[-400:]}")
    return {
        "rps": float(rps.group(1)),
        "requests": int(total.group(1)) if total else 0,
        "non_2xx": int(bad.group(1)) if bad else 0,
        "p50_ms": latency.get("50"),
        "p99_ms": latency.get("99"),
        "socket_errors": errors.group(0) if errors else "",
    }


def wrk_run(
    url: str, script: str, seconds: float, connections: int, workdir: Path
) -> dict[str, Any]:
    path = workdir / f"wrk-{uuid.uuid4().hex[:6]}.lua"
    path.write_text(script)
    threads = max(1, min(2, connections))
    command = [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, int(seconds))}s",
        "--latency", "-s", str(path), url,
    ]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    return parse_wrk(out.stdout)


def python_run(
    url: str,
    seconds: float,
    connections: int,
    *,
    method: str = "GET",
    body: str | None = None,
    headers: dict[str, str] | None = None,
    fresh_key: bool = False,
) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "load.bench_client", url,
        "--seconds", str(seconds), "--connections", str(connections), "--method", method,
    ]  # fmt: skip
    if body is not None:
        command += ["--body", body]
    for key, value in (headers or {}).items():
        command += ["--header", f"{key}: {value}"]
    if fresh_key:
        command.append("--fresh-key")
    out = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        raise RuntimeError(f"bench client failed: {out.stderr[-400:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class Generator:
    """wrk when installed, else the Python client: one generator for both sides of a ratio."""

    def __init__(
        self, seconds: float, connections: int, workdir: Path, choice: str = "auto"
    ) -> None:
        self.seconds = seconds
        self.connections = connections
        self.workdir = workdir
        use_wrk = choice == "wrk" or (choice == "auto" and shutil.which("wrk") is not None)
        self.name = "wrk" if use_wrk else "python (load.bench_client, raw asyncio)"

    @property
    def is_wrk(self) -> bool:
        return self.name == "wrk"

    def get(self, url: str, token: str | None = None) -> dict[str, Any]:
        if self.is_wrk:
            auth = f'wrk.headers["Authorization"] = "Bearer {token}"' if token else ""
            return wrk_run(
                url, _WRK_GET.format(auth=auth), self.seconds, self.connections, self.workdir
            )
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return python_run(url, self.seconds, self.connections, headers=headers)

    def cashin(self, url: str, token: str) -> dict[str, Any]:
        if self.is_wrk:
            script = _WRK_CASHIN.format(number=NUMBER, token=token, run=uuid.uuid4().hex[:8])
            return wrk_run(url, script, self.seconds, self.connections, self.workdir)
        return python_run(
            url,
            self.seconds,
            self.connections,
            method="POST",
            body=json.dumps({"amount": 100, "number": NUMBER}),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
            fresh_key=True,
        )


# -- servers --
def start_bare(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "load.bare_server", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("bare handler listening on "):
        process.kill()
        raise RuntimeError("the bare aiohttp handler did not start")
    return process, line.rsplit(" ", 1)[1]


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _post_json(url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def authorize(config: TargetConfig) -> str:
    """An access token of the read-write application (the bench's requests create and find)."""
    app = next(a for a in config.applications if a.privilege == "read-write")
    with httpx.Client(timeout=10) as client:
        return TokenFlow(tokens.httpx_send(client, config.base_url), app).access()


def create_ref(base_url: str, token: str) -> str:
    created = _post_json(
        f"{base_url}/transactions/cashin",
        {"amount": 100, "number": NUMBER},
        {"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex},
    )
    return str(created["ref"])


# -- Locust --
def locust_rate(credentials: Path, seconds: float, users: int, report_dir: Path) -> dict[str, Any]:
    """A paysuite Locust run (the real locustfile, through ``load.runner.run``) on a find-heavy
    mix with no wait; ``rps`` is its steady rate (``steady_rate``)."""
    from load.plan import build_plan
    from load.runner import run

    plan = build_plan(
        shape="smoke",
        config=credentials,
        report_dir=report_dir,
        users=users,
        spawn_rate=float(users),
        duration=seconds + LOCUST_SKIP_S,
        mix="cashin=1,find=99",
        pacing="constant:0",
        # the smoke shape's budget (20,000 requests) ended this run early while the minimal
        # run went on to its end: both now run for the same time
        max_requests=LOCUST_MAX_REQUESTS,
        quiet=True,
    )
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


# -- profiling --
def profile_stub(
    gen: Generator,
    workdir: Path,
    report_dir: Path,
    endpoint: str,
    *,
    db: Path | None = None,
    queries: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the stub under cProfile while ``endpoint`` load is applied: cashin or find (the
    generator), or ``events`` (each of ``queries`` on the events list, on the store ``db``)."""
    out = report_dir / f"stub-{endpoint}.prof"
    db = db or workdir / f"prof-{endpoint}.db"
    credentials = workdir / f"prof-{endpoint}-credentials.yaml"
    command = [
        sys.executable, "-m", "cProfile", "-o", str(out), "-m", "stub_server",
        "--port", "0", "--db", str(db), "--credentials", str(credentials),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    root = None
    for _ in range(5):
        line = process.stdout.readline()
        if line.startswith("paysuite stub listening on "):
            root = line.strip().rsplit(" ", 1)[1]
            break
    if root is None:
        stop(process)
        raise RuntimeError("the profiled stub did not start")
    process.stdout.readline()  # the credentials line
    from paysuite_core.target_config import load_target_config

    config = load_target_config(credentials)
    token = authorize(config)
    if endpoint == "cashin":
        measured = gen.cashin(f"{config.base_url}/transactions/cashin", token)
    elif endpoint == "events":
        url = f"{config.base_url}/events/transactions"
        began = time.perf_counter()
        timed = time_queries(url, token, queries or {"first page": ""}, 5)
        requests = sum(row["requests"] for row in timed.values())
        measured = {"rps": requests / (time.perf_counter() - began)}
    else:
        ref = create_ref(config.base_url, token)
        measured = gen.get(f"{config.base_url}/transactions/find/{ref}", token)
    stop(process)
    stats = pstats.Stats(str(out))
    rows = []
    total = 0.0
    startup = 0.0
    entries = stats.stats.items()  # type: ignore[attr-defined]
    for (filename, line, func), (_cc, calls, tottime, cumtime, _callers) in entries:
        where = f"{_short(filename)}:{line}({func})"
        if "scrypt" in where:
            # hashing the applications' secrets at start-up and one authorize: not the hot path
            startup += tottime
            continue
        total += tottime
        rows.append((tottime, cumtime, calls, where))
    rows.sort(reverse=True)
    by_area: dict[str, float] = {}
    for tottime, _cum, _calls, where in rows:
        area = _area(where)
        by_area[area] = by_area.get(area, 0.0) + tottime
    stub_cumulative = sorted(
        (
            (c, n, w)
            for t, c, n, w in rows
            # per-request code only: not start-up, imports or the background task
            if w.startswith("stub_server/") and n >= 100 and "resolve_due" not in w
        ),
        reverse=True,
    )
    return {
        "profile_file": str(out),
        "rps_under_profiler": measured["rps"],
        "profiled_own_time_s": round(total, 3),
        "excluded_scrypt_s": round(startup, 3),
        "stub_functions_by_cumulative_time": [
            {"cum_s": round(c, 3), "calls": n, "function": w} for c, n, w in stub_cumulative[:12]
        ],
        "top_own_time": [
            {"own_s": round(t, 3), "cum_s": round(c, 3), "calls": n, "function": w}
            for t, c, n, w in rows[:20]
        ],
        "share_by_area": {
            area: round(seconds / total, 3)
            for area, seconds in sorted(by_area.items(), key=lambda kv: -kv[1])
        },
    }


_ROOT = str(Path(__file__).resolve().parents[1]) + "/"


def _short(filename: str) -> str:
    """A profile's file name as ``stub_server/...``, ``aiohttp/...``, ``asyncio/...``: relative to
    this checkout (wherever it is), to site-packages, or to the standard library."""
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1]
    if filename.startswith(_ROOT):
        return filename[len(_ROOT) :]
    if "lib/python3" in filename:
        return filename.split("lib/python3", 1)[1].split("/", 1)[-1]
    return filename


_AREAS = (
    ("sqlite3", "SQLite statements"),
    ("stub_server/store", "stub: store (Python side)"),
    ("stub_server/token_issuer", "stub: token checks"),
    ("stub_server/timefmt", "stub: time formatting"),
    ("stub_server/", "stub: handlers and validation"),
    ("jwt/", "PyJWT"),
    ("hmac", "PyJWT (HMAC)"),
    ("_hashlib", "hashing (HMAC)"),
    ("aiohttp/", "aiohttp"),
    ("multidict", "aiohttp"),
    ("yarl", "aiohttp"),
    ("'_socket.socket'", "socket send/recv"),
    ("epoll", "waiting for I/O (epoll)"),
    ("asyncio/", "asyncio event loop"),
    ("json/", "json"),
    ("base64", "PyJWT (base64)"),
    ("uuid", "uuid"),
    ("datetime", "time formatting"),
    ("strftime", "time formatting"),
    ("re/", "regex"),
    ("'re.Pattern'", "regex"),
)


def _area(where: str) -> str:
    for marker, area in _AREAS:
        if marker in where:
            return area
    return "other"


def print_profile(endpoint: str, prof: dict[str, Any]) -> None:
    say(
        f"where the stub's time goes under {endpoint} load (share of profiled own time; "
        f"{prof['rps_under_profiler']:.0f} req/s under the profiler):"
    )
    for area, share in list(prof["share_by_area"].items())[:10]:
        print(f"  {area:<32} {share * 100:5.1f}%")
    say("top functions by own time:")
    for row in prof["top_own_time"][:10]:
        print(f"  {row['own_s']:8.3f}s {row['calls']:>9} {row['function']}")
    if prof["stub_functions_by_cumulative_time"]:
        say("stub functions by cumulative time:")
        for row in prof["stub_functions_by_cumulative_time"][:8]:
            print(f"  {row['cum_s']:8.3f}s {row['calls']:>9} {row['function']}")


# -- the events list at scale --
def seed_events(
    db: Path, count: int, merchants: tuple[str, ...] = ("DEMO01",) * 9 + ("DEMO02",)
) -> dict[str, Any]:
    """Write ``count`` events straight into the stub store at ``db`` (a stub has created it and
    stopped), over the last 30 days: created events (pending) and, for nine in ten, a processed
    one (success or failed), kinds and clients mixed. One ``executemany`` in one SQL
    transaction, with the events table's indexes and triggers dropped first: the stub's next
    start rebuilds them, and the running totals, with its own schema and migration. Returns a
    ref, a client and a time of the first merchant, for the filtered queries."""
    import os
    import random
    import sqlite3

    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    for name, kind in conn.execute(
        "SELECT name, type FROM sqlite_master WHERE tbl_name = 'events'"
        " AND type IN ('index', 'trigger') AND sql IS NOT NULL"
    ).fetchall():
        conn.execute(f"DROP {kind.upper()} {name}")
    rng = random.Random(7)
    now = time.time_ns() // 1000
    span = 30 * 86_400 * 1_000_000
    step = span // max(count, 1)
    hexes = os.urandom(16 * count).hex()
    sample: dict[str, Any] = {}

    def rows() -> Any:
        t = now - span
        i = 0
        while i < count:
            h = hexes[i * 32 : i * 32 + 32]
            ref = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
            merchant = merchants[i % len(merchants)]
            kind = "CASHIN" if rng.random() < 0.6 else "CASHOUT"
            client = f"078{rng.randrange(10**7):07d}"
            amount = rng.randrange(100, 100_000)
            fee = round(amount * 0.023, 2)
            if merchant == merchants[0] and i >= count // 2 and not sample:
                sample.update(ref=ref, client=client, created_us=t)
            yield (f"{i:032x}", "transaction:created", t, merchant, ref, kind, client, amount,
                   fee, "pending", t, None)  # fmt: skip
            i += 1
            if i < count and rng.random() < 0.9:
                status = "success" if rng.random() < 0.85 else "failed"
                done = t + step // 2
                yield (f"{i:032x}", "transaction:processed", done, merchant, ref, kind, client,
                       amount, fee, status, t, done)  # fmt: skip
                i += 1
            t += step

    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO events (event_id, event_kind, created_us, merchant, ref, kind, client,"
        " amount, fee, status, tx_created_us, processed_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        rows(),
    )
    conn.execute("COMMIT")
    conn.close()
    return sample


def events_queries(sample: dict[str, Any]) -> dict[str, str]:
    """name -> query string: the first page unfiltered, with each filter, and at offset 10,000."""
    from datetime import UTC, datetime, timedelta

    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
        microseconds=int(sample["created_us"]) - 7 * 86_400 * 1_000_000
    )
    week_ago = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "first page": "",
        "status=success": "?status=success",
        "status=failed": "?status=failed",
        "kind=CASHOUT": "?kind=CASHOUT",
        "event-kind=processed": "?event-kind=transaction:processed",
        "client": f"?client={sample['client']}",
        "ref": f"?ref={sample['ref']}",
        "from (a week back)": f"?from={week_ago}",
        "to (a week back)": f"?to={week_ago}",
        "offset=10000": "?offset=10000",
    }


def time_queries(
    url: str, token: str, queries: dict[str, str], repeats: int, rounds: int = 1
) -> dict[str, dict[str, Any]]:
    """p50/p90 (ms) of each query, one request at a time on one keep-alive connection, the
    queries interleaved (``rounds`` passes of ``repeats`` requests each)."""
    import statistics

    times: dict[str, list[float]] = {name: [] for name in queries}
    totals: dict[str, int] = {}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    with httpx.Client(timeout=60, headers=headers) as client:
        for name, query in queries.items():  # warm-up: the page cache, prepared statements
            response = client.get(url + query)
            response.raise_for_status()
            totals[name] = int(response.json()["total"])
        for _ in range(rounds):
            for name, query in queries.items():
                for _ in range(repeats):
                    started = time.perf_counter()
                    client.get(url + query).raise_for_status()
                    times[name].append((time.perf_counter() - started) * 1000)
    result = {}
    for name, values in times.items():
        values.sort()
        result[name] = {
            "p50_ms": round(statistics.median(values), 3),
            "p90_ms": round(values[int(0.9 * (len(values) - 1))], 3),
            "total": totals[name],
            "requests": len(values),
        }
    return result


# -- a minimal Locust user, the yardstick of paysuite's own --
#: Seconds at the start of a Locust run left out of its rate: spawning, and the paysuite users'
#: authorize (a scrypt check each on the stub, queued), which the minimal user does not do.
LOCUST_SKIP_S = 3.0
#: The paysuite run's request budget: high enough that only the duration ends it, as it does
#: the minimal run.
LOCUST_MAX_REQUESTS = 1_000_000_000


def steady_rate(history: Path, skip_s: float = LOCUST_SKIP_S) -> float | None:
    """Requests/s of a Locust run after its first ``skip_s`` seconds, from the aggregated rows
    of its ``*_stats_history.csv`` (one a second): the rate once every user is running.

    The least-squares slope of the request count over time, through every row after the start,
    not the first and last rows alone: Locust's timestamps are whole seconds and its writer is
    late when the process is busy, so two rows a few seconds apart can be off by a quarter."""
    import csv

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
    slope = sum((t - mean_t) * (n - mean_n) for t, n in steady) / spread
    return round(slope, 1)


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


def minimal_locust_rate(
    root_url: str, path: str, token: str, seconds: float, users: int, workdir: Path
) -> dict[str, Any]:
    """The rate a minimal ``FastHttpUser`` gets from GET ``path`` (headless Locust, one
    process, the same users, spawn rate and duration as the paysuite run)."""
    import csv
    import os

    locustfile = workdir / "minimal_locustfile.py"
    locustfile.write_text(_MINIMAL_LOCUSTFILE)
    prefix = workdir / f"minimal-{uuid.uuid4().hex[:6]}"
    command = [
        sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "--only-summary",
        "-u", str(users), "-r", str(users), "-t", f"{round(seconds + LOCUST_SKIP_S)}s",
        "--host", root_url, "--csv", str(prefix), "--csv-full-history",
        "--loglevel", "WARNING", "--stop-timeout", "2",
    ]  # fmt: skip
    env = dict(os.environ, BENCH_FIND_PATH=path, BENCH_TOKEN=token)
    out = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 90, env=env, check=False
    )
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


# -- the command --
def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median throughput, with every round's rate alongside."""
    ordered = sorted(runs, key=lambda r: r["rps"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds_rps"] = [r["rps"] for r in runs]
    return chosen


def _ratio(a: dict[str, Any], b: dict[str, Any]) -> float:
    return round(a["rps"] / b["rps"], 3) if b.get("rps") else 0.0


def round_ratios(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[float]:
    """The ratio of each interleaved round (a/b), for the spread beside the median's."""
    return [round(x["rps"] / y["rps"], 3) for x, y in zip(a, b, strict=True) if y.get("rps")]


def format_table(results: dict[str, Any]) -> str:
    lines = [
        f"paysuite bench: generator {results['generator']}, {results['connections']} connections, "
        f"{results['seconds']:g} s per measurement, median of {results['rounds']} rounds",
        f"  {'measurement':<30} {'req/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'non-2xx':>8} "
        f"{'ratio':>7} {'target':>7}",
    ]
    for name, row in results["measurements"].items():
        ratio = row.get("ratio")
        target = row.get("target")
        mark = "" if target is None else ("  ✓" if (ratio or 0) >= target else "  ✗")
        lines.append(
            f"  {name:<30} {row['rps']:>10.1f} {_fmt(row.get('p50_ms')):>9} "
            f"{_fmt(row.get('p99_ms')):>9} {row.get('non_2xx', row.get('failures', 0)):>8} "
            f"{_fmt(ratio):>7} {_fmt(target):>7}{mark}"
        )
    events = results.get("events_list")
    if events:
        lines.append(
            f"paysuite bench: the events list with {events['stored']:,} events stored "
            f"(seeded in {events['seed_s']:.1f} s), one request at a time"
        )
        lines.append(f"  {'query':<30} {'p50 ms':>9} {'p90 ms':>9} {'total':>10}")
        for name, row in events["queries"].items():
            mark = "✓" if row["p50_ms"] <= EVENTS_P50_MS else "✗"
            lines.append(
                f"  {name:<30} {row['p50_ms']:>9.2f} {row['p90_ms']:>9.2f} {row['total']:>10}"
                f"  {mark}"
            )
    return "\n".join(lines)


def verdicts(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every target with its measured value and whether it is met."""
    rows = []
    m = results["measurements"]
    for label, name, key in (
        ("stub cashin / bare handler", "stub cashin", "cashin"),
        ("stub find / bare handler", "stub find", "find"),
        ("paysuite user / minimal Locust user", "paysuite Locust user (find)", "locust"),
    ):
        if name in m and m[name].get("ratio") is not None:
            value = m[name]["ratio"]
            rows.append(
                {"target": label, "value": value, "limit": f">= {TARGETS[key]:.2f}",
                 "met": value >= TARGETS[key], "spread": m[name].get("round_ratios")}
            )  # fmt: skip
    events = results.get("events_list")
    if events:
        worst_name, worst = max(events["queries"].items(), key=lambda kv: kv[1]["p50_ms"])
        rows.append(
            {
                "target": f"events list p50, {events['stored']:,} events (worst: {worst_name})",
                "value": worst["p50_ms"],
                "limit": f"<= {EVENTS_P50_MS:g} ms each",
                "met": all(q["p50_ms"] <= EVENTS_P50_MS for q in events["queries"].values()),
                "spread": None,
            }
        )
    return rows


def format_verdicts(rows: list[dict[str, Any]]) -> str:
    lines = ["paysuite bench: targets"]
    for row in rows:
        mark = "✓ pass" if row["met"] else "✗ FAIL"
        spread = ""
        if row["spread"]:
            spread = f"  (rounds {', '.join(f'{v:.2f}' for v in row['spread'])})"
        lines.append(
            f"  {mark}  {row['target']:<58} {row['value']:>7.2f}  target {row['limit']}{spread}"
        )
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def run_bench(args: argparse.Namespace) -> int:
    from paysuite_core.launcher import StubStartError, start_stub, stop_stub

    events_count = int(getattr(args, "events", EVENTS))
    if args.seconds <= 0 or args.connections <= 0 or args.rounds <= 0 or events_count < 0:
        print(
            "paysuite bench: --seconds, --connections and --rounds must be positive",
            file=sys.stderr,
        )
        return 2
    if args.generator == "wrk" and shutil.which("wrk") is None:
        print("paysuite bench: wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="paysuite-bench-") as tmp:
        workdir = Path(tmp)
        gen = Generator(args.seconds, args.connections, workdir, args.generator)
        say(f"generator: {gen.name}")
        try:
            stub = start_stub(workdir / "stub")
        except StubStartError as exc:
            print(f"paysuite bench: the stub did not start: {exc}", file=sys.stderr)
            return 2
        bare, bare_url = start_bare(workdir)
        measurements: dict[str, dict[str, Any]] = {}
        try:
            config = stub.config()
            token = authorize(config)
            ref = create_ref(config.base_url, token)
            say(f"bare aiohttp handler at {bare_url}, stub at {stub.root_url}")
            find_path = f"/api/transactions/find/{ref}"
            find_url = f"{config.base_url}/transactions/find/{ref}"
            cashin_url = f"{config.base_url}/transactions/cashin"
            rounds: dict[str, list[dict[str, Any]]] = {}
            for index in range(args.rounds):
                # interleaved rounds: a burst of noise from elsewhere hits every side alike
                say(f"round {index + 1}/{args.rounds}: bare GET, stub find, bare POST, stub cashin")
                rounds.setdefault(BARE_GET, []).append(gen.get(f"{bare_url}/"))
                rounds.setdefault("stub find", []).append(gen.get(find_url, token))
                # the cashin request itself (headers, body, a fresh key) to the bare handler
                rounds.setdefault(BARE_POST, []).append(
                    gen.cashin(f"{bare_url}/transactions/cashin", token)
                )
                rounds.setdefault("stub cashin", []).append(gen.cashin(cashin_url, token))
            for name, runs in rounds.items():
                measurements[name] = median_run(runs)
            for name, key, bare_name in (
                ("stub find", "find", BARE_GET),
                ("stub cashin", "cashin", BARE_POST),
            ):
                measurements[name]["ratio"] = _ratio(measurements[name], measurements[bare_name])
                measurements[name]["target"] = TARGETS[key]
                measurements[name]["vs"] = bare_name
                measurements[name]["round_ratios"] = round_ratios(rounds[name], rounds[bare_name])
            users = args.connections
            paysuite_runs: list[dict[str, Any]] = []
            minimal_runs: list[dict[str, Any]] = []
            for index in range(args.rounds):
                say(
                    f"Locust round {index + 1}/{args.rounds}: a paysuite run (cashin=1,find=99) "
                    f"and a minimal FastHttpUser on find, {users} users, no wait"
                )
                # each side goes first in every other round: neither always runs on a stub
                # (and a machine) that the other has just warmed up or loaded
                order = ("paysuite", "minimal") if index % 2 == 0 else ("minimal", "paysuite")
                for side in order:
                    if side == "paysuite":
                        paysuite_runs.append(
                            locust_rate(
                                stub.credentials_path, args.seconds, users,
                                report_dir / "locust" / f"round-{index + 1}",
                            )
                        )  # fmt: skip
                    else:
                        minimal_runs.append(
                            minimal_locust_rate(
                                stub.root_url, find_path, token, args.seconds, users, workdir
                            )
                        )
            measurements["minimal Locust user (find)"] = median_run(minimal_runs)
            paysuite = median_run(paysuite_runs)
            paysuite["ratio"] = _ratio(paysuite, measurements["minimal Locust user (find)"])
            paysuite["target"] = TARGETS["locust"]
            paysuite["round_ratios"] = round_ratios(paysuite_runs, minimal_runs)
            paysuite["vs"] = "minimal Locust FastHttpUser on the same find endpoint"
            measurements["paysuite Locust user (find)"] = paysuite
        finally:
            stop(bare)
            stop_stub(stub)
        results.update(
            generator=gen.name,
            connections=args.connections,
            seconds=args.seconds,
            rounds=args.rounds,
            measurements=measurements,
        )
        events_db = workdir / "events" / "stub.db"
        if events_count:
            results["events_list"] = measure_events(workdir / "events", events_count, args.rounds)
        results["targets"] = verdicts(results)
        print(format_table(results), flush=True)
        print(format_verdicts(results["targets"]), flush=True)
        missed = [row["target"] for row in results["targets"] if not row["met"]]
        results["targets_missed"] = missed
        results["stub_profile"] = {}
        for endpoint in ("cashin", "find"):
            ratio = measurements[f"stub {endpoint}"]["ratio"]
            if ratio >= TARGETS[endpoint] and not args.profile_stub:
                continue
            say(f"profiling the stub under {endpoint} load (cProfile)")
            try:
                prof = profile_stub(gen, workdir, report_dir, endpoint)
            except Exception as exc:  # noqa: BLE001 - the numbers above stand on their own
                say(f"could not profile the stub: {exc}")
                continue
            results["stub_profile"][endpoint] = prof
            print_profile(endpoint, prof)
        events = results.get("events_list")
        slow = [
            n for n, q in (events or {}).get("queries", {}).items() if q["p50_ms"] > EVENTS_P50_MS
        ]
        if slow or (events and args.profile_stub):
            say(f"profiling the stub on the events list (cProfile): {', '.join(slow) or 'all'}")
            try:
                timed_queries = events["queries"] if events else {}
                prof = profile_stub(
                    gen, workdir, report_dir, "events", db=events_db,
                    queries={n: timed_queries[n]["query"] for n in (slow or timed_queries)},
                )  # fmt: skip
                results["stub_profile"]["events"] = prof
                print_profile("events list", prof)
            except Exception as exc:  # noqa: BLE001
                say(f"could not profile the stub: {exc}")
    (report_dir / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    say(f"results in {(report_dir / 'bench.json').resolve()}")
    return 0


def measure_events(workdir: Path, count: int, rounds: int) -> dict[str, Any]:
    """Seed ``count`` events into a fresh stub's store, start it on them, time each query."""
    from paysuite_core.launcher import start_stub, stop_stub

    workdir.mkdir(parents=True, exist_ok=True)
    stop_stub(start_stub(workdir))  # the store, its schema and its applications
    say(f"seeding {count:,} events straight into the store")
    started = time.perf_counter()
    sample = seed_events(workdir / "stub.db", count)
    # the stub's start rebuilds the indexes and the running totals (its migration)
    stub = start_stub(workdir, startup_timeout_s=300)
    seed_s = time.perf_counter() - started
    try:
        config = stub.config()
        token = authorize(config)
        queries = events_queries(sample)
        say(f"timing the events list: {len(queries)} queries, one request at a time")
        timed = time_queries(f"{config.base_url}/events/transactions", token, queries, 10, rounds)
    finally:
        stop_stub(stub)
    for name, row in timed.items():
        row["query"] = queries[name]
    return {"stored": count, "seed_s": round(seed_s, 2), "queries": timed}
