"""``paysuite bench``: how fast is the stub, and how much of the load generator's rate is Locust's?

One run, on this machine, side by side:

1. **Stub vs bare handler.** The stub's throughput and latency on cashin (a fresh idempotency key
   per request), find and list events, against a bare aiohttp handler returning a small JSON body
   (``load.bare_server``: its own process, the same event-loop set-up), in interleaved rounds
   (``--rounds``; the median is kept). Both sides of each ratio
   are driven by the same generator: wrk when installed (a Lua script adds the Authorization
   header and a fresh Idempotency-Key per cashin), else ``load.bench_client`` (aiohttp).
   Targets: cashin >= 40% and find >= 60% of the bare handler's throughput.
2. **Locust vs wrk.** The rate a paysuite Locust run (the real locustfile, find-heavy mix, no wait)
   reaches against the stub's find, against wrk's on the same endpoint (when wrk is installed).
3. **Where the time goes** (when a target is missed, or with ``--profile-stub``): the stub is run
   again under cProfile while cashin load is applied, and the top functions are printed.

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

TARGETS = {"cashin": 0.40, "find": 0.60}
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
        self.name = "wrk" if use_wrk else "python (aiohttp client)"

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
    mix with no wait."""
    from load.plan import build_plan
    from load.runner import run

    plan = build_plan(
        shape="smoke",
        config=credentials,
        report_dir=report_dir,
        users=users,
        spawn_rate=float(users),
        duration=seconds + 1,
        mix="cashin=1,find=99",
        pacing="constant:0",
        quiet=True,
    )
    report_dir.mkdir(parents=True, exist_ok=True)
    summary = run(plan, locust_log=report_dir / "locust.log").summary
    if summary is None:
        raise RuntimeError(f"the Locust run produced no verdict; see {report_dir / 'locust.log'}")
    find = summary["operations"].get("find", {})
    return {
        "rps": summary["total"]["rps"],
        "find_rps": find.get("rps"),
        "p50_ms": find.get("p50_ms"),
        "p99_ms": find.get("p99_ms"),
        "requests": summary["total"]["requests"],
        "failures": summary["total"]["failures"],
    }


# -- profiling --
def profile_stub(gen: Generator, workdir: Path, report_dir: Path, endpoint: str) -> dict[str, Any]:
    """Run the stub under cProfile while ``endpoint`` (cashin or find) load is applied."""
    out = report_dir / f"stub-{endpoint}.prof"
    db = workdir / f"prof-{endpoint}.db"
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
            if w.startswith("stub_server/") and "resolve_due" not in w
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


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


_AREAS = (
    ("sqlite3", "SQLite statements"),
    ("stub_server/store", "stub: store (Python side)"),
    ("stub_server/tokens", "stub: token checks"),
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
    say("stub functions by cumulative time:")
    for row in prof["stub_functions_by_cumulative_time"][:8]:
        print(f"  {row['cum_s']:8.3f}s {row['calls']:>9} {row['function']}")


# -- the command --
def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median throughput, with every round's rate alongside."""
    ordered = sorted(runs, key=lambda r: r["rps"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["rounds_rps"] = [r["rps"] for r in runs]
    return chosen


def _ratio(a: dict[str, Any], b: dict[str, Any]) -> float:
    return round(a["rps"] / b["rps"], 3) if b.get("rps") else 0.0


def format_table(results: dict[str, Any]) -> str:
    lines = [
        f"paysuite bench: generator {results['generator']}, {results['connections']} connections, "
        f"{results['seconds']:g} s per measurement",
        f"  {'measurement':<28} {'req/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'non-2xx':>8} "
        f"{'ratio':>8} {'target':>8}",
    ]
    for name, row in results["measurements"].items():
        ratio = row.get("ratio")
        target = row.get("target")
        ok = "" if target is None else ("  met" if (ratio or 0) >= target else "  SHORT")
        lines.append(
            f"  {name:<28} {row['rps']:>10.1f} {_fmt(row.get('p50_ms')):>9} "
            f"{_fmt(row.get('p99_ms')):>9} {row.get('non_2xx', 0):>8} "
            f"{_fmt(ratio, pct=True):>8} {_fmt(target, pct=True):>8}{ok}"
        )
    return "\n".join(lines)


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value * 100:.1f}%" if pct else f"{value:.2f}"


def run_bench(args: argparse.Namespace) -> int:
    from paysuite_core.launcher import StubStartError, start_stub, stop_stub

    if args.seconds <= 0 or args.connections <= 0 or args.rounds <= 0:
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
            find_url = f"{config.base_url}/transactions/find/{ref}"
            events_url = f"{config.base_url}/events/transactions"
            cashin_url = f"{config.base_url}/transactions/cashin"
            say("measuring the stub: list events (a nearly empty store)")
            measurements["stub list events"] = gen.get(events_url, token)
            rounds: dict[str, list[dict[str, Any]]] = {}
            for index in range(args.rounds):
                # interleaved rounds: a burst of noise from elsewhere hits every side alike
                say(f"round {index + 1}/{args.rounds}: bare handler, find, cashin")
                rounds.setdefault("bare handler (GET)", []).append(gen.get(f"{bare_url}/"))
                rounds.setdefault("stub find", []).append(gen.get(find_url, token))
                rounds.setdefault("stub cashin", []).append(gen.cashin(cashin_url, token))
            for name, runs in rounds.items():
                measurements[name] = median_run(runs)
            stored = sum(r["requests"] for r in rounds["stub cashin"])
            say(f"measuring the stub: list events again (about {stored} transactions stored)")
            measurements["stub list events (filled)"] = gen.get(events_url, token)
            measurements["stub list events (filled)"]["transactions_stored"] = stored
            bare_row = measurements["bare handler (GET)"]
            for name, key in (
                ("stub find", "find"),
                ("stub list events", None),
                ("stub list events (filled)", None),
                ("stub cashin", "cashin"),
            ):
                measurements[name]["ratio"] = _ratio(measurements[name], bare_row)
                measurements[name]["target"] = TARGETS.get(key) if key else None
            say(f"a paysuite Locust run on find ({args.connections} users, no wait)")
            locust = locust_rate(
                stub.credentials_path, args.seconds, args.connections, report_dir / "locust"
            )
            measurements["locust run (find mix)"] = locust
            if gen.is_wrk:
                wrk_find = measurements["stub find"]
                locust["ratio"] = _ratio(locust, wrk_find)
                locust["vs"] = "wrk on stub find"
        finally:
            stop(bare)
            stop_stub(stub)
        order = (
            "bare handler (GET)",
            "stub find",
            "stub cashin",
            "stub list events",
            "stub list events (filled)",
            "locust run (find mix)",
        )
        measurements = {name: measurements[name] for name in order if name in measurements}
        short = [
            name
            for name, row in measurements.items()
            if row.get("target") is not None and row["ratio"] < row["target"]
        ]
        results: dict[str, Any] = {
            "generator": gen.name,
            "connections": args.connections,
            "seconds": args.seconds,
            "measurements": measurements,
            "targets_missed": short,
        }
        print(format_table(results), flush=True)
        if short or args.profile_stub:
            results["stub_profile"] = {}
            for endpoint in ("cashin", "find"):
                say(f"profiling the stub under {endpoint} load (cProfile)")
                try:
                    prof = profile_stub(gen, workdir, report_dir, endpoint)
                except Exception as exc:  # noqa: BLE001 - the numbers above stand on their own
                    say(f"could not profile the stub: {exc}")
                    continue
                results["stub_profile"][endpoint] = prof
                print_profile(endpoint, prof)
    (report_dir / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    say(f"results in {(report_dir / 'bench.json').resolve()}")
    time.sleep(0)
    return 0
