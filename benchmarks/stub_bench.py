"""``python -m benchmarks stub``: how fast is the stub, and how much of a load test's rate is
paysuite's own? One run on this machine, every figure side by side against its target:

1. **Stub vs bare handler.** The stub's cashin (a fresh idempotency key per request) and find
   throughput against a bare aiohttp handler (``servers.py``: its own process, the same event
   loop and JSON library) sent the very same request, in interleaved rounds (the median is
   kept), both sides driven by the same generator (``generators.py``).
2. **The events list at scale** (``events.py``): p50 of each query with many stored events.
3. **paysuite's Locust user vs a minimal one** (``locust_bench.py``), alternating rounds.
4. **Where the time goes** (``profiling.py``) when a stub target is missed, or asked for.

A benchmark, not a test: it prints numbers and writes ``bench.json``; exit 0 unless it could
not run (2).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import HERE, access_token, create_ref, say, start_server, stop, write_report
from benchmarks.events import measure_events
from benchmarks.generators import Generator
from benchmarks.locust_bench import minimal_rate, paysuite_rate
from benchmarks.profiling import print_profile, profile_stub
from paysuite_core.launcher import RunningStub, start_stub, stop_stub

#: Regression floors on a 2-core machine, where the generator shares the CPU with the server:
#: the cashin floor is low because every creation commits to SQLite (the store's design).
TARGETS = {"cashin": 0.25, "find": 0.70, "locust": 0.90}
#: The two baselines: each side of a ratio gets the same request bytes (the bare handler answers
#: any path and ignores the body and headers it does not need).
BARE_GET = "bare handler (GET find)"
BARE_POST = "bare handler (POST cashin)"
PAYSUITE_USER = "paysuite Locust user (find)"
MINIMAL_USER = "minimal Locust user (find)"
#: The events list: p50 of each query, milliseconds.
EVENTS_P50_MS = 5.0
EVENTS = 1_000_000
Row = dict[str, Any]


def median_run(runs: list[Row]) -> Row:
    """The run with the median throughput, with every round's rate alongside."""
    chosen = dict(sorted(runs, key=lambda r: r["rps"])[(len(runs) - 1) // 2])
    chosen["rounds_rps"] = [r["rps"] for r in runs]
    return chosen


def compare(runs: list[Row], baseline_runs: list[Row], target: float, vs: str) -> Row:
    """The median run of one side, with its ratio to the other's median and each round's."""
    row, baseline = median_run(runs), median_run(baseline_runs)
    row["ratio"] = round(row["rps"] / baseline["rps"], 3) if baseline.get("rps") else 0.0
    row["round_ratios"] = [
        round(a["rps"] / b["rps"], 3) for a, b in zip(runs, baseline_runs, strict=True) if b["rps"]
    ]
    row.update(target=target, vs=vs)
    return row


def server_rounds(gen: Generator, stub: RunningStub, bare_url: str, rounds: int) -> dict[str, Row]:
    """Stub find and cashin against the bare handler, in interleaved rounds: a burst of noise
    from elsewhere on the machine hits every side alike."""
    token = access_token(stub.config())
    find_url = f"{stub.base_url}/transactions/find/{create_ref(stub.base_url, token)}"
    runs: dict[str, list[Row]] = {BARE_GET: [], "stub find": [], BARE_POST: [], "stub cashin": []}
    for index in range(rounds):
        say("stub", f"round {index + 1}/{rounds}: bare GET, stub find, bare POST, stub cashin")
        runs[BARE_GET].append(gen.get(f"{bare_url}/"))
        runs["stub find"].append(gen.get(find_url, token))
        runs[BARE_POST].append(gen.cashin(f"{bare_url}/transactions/cashin", token))
        runs["stub cashin"].append(gen.cashin(f"{stub.base_url}/transactions/cashin", token))
    return {
        BARE_GET: median_run(runs[BARE_GET]),
        "stub find": compare(runs["stub find"], runs[BARE_GET], TARGETS["find"], BARE_GET),
        BARE_POST: median_run(runs[BARE_POST]),
        "stub cashin": compare(runs["stub cashin"], runs[BARE_POST], TARGETS["cashin"], BARE_POST),
    }


def locust_rounds(stub: RunningStub, args: argparse.Namespace, workdir: Path) -> dict[str, Row]:
    """The paysuite user (cashin=1,find=99, no wait) and the minimal one on find, the same
    users; each side goes first in every other round, so neither always runs on a stub (and a
    machine) that the other has just warmed up or loaded."""
    token = access_token(stub.config())
    find_path = f"/api/transactions/find/{create_ref(stub.base_url, token)}"
    users = args.connections
    sides: dict[str, list[Row]] = {PAYSUITE_USER: [], MINIMAL_USER: []}
    for index in range(args.rounds):
        say(
            "stub",
            f"Locust round {index + 1}/{args.rounds}: a paysuite run (cashin=1,find=99) "
            f"and a minimal FastHttpUser on find, {users} users, no wait",
        )
        for side in (PAYSUITE_USER, MINIMAL_USER)[:: 1 if index % 2 == 0 else -1]:
            if side == PAYSUITE_USER:
                report = Path(args.report_dir) / "locust" / f"round-{index + 1}"
                run = paysuite_rate(stub.credentials_path, args.seconds, users, report)
            else:
                run = minimal_rate(stub.root_url, find_path, token, args.seconds, users, workdir)
            sides[side].append(run)
    vs = "minimal Locust FastHttpUser on the same find endpoint"
    return {
        MINIMAL_USER: median_run(sides[MINIMAL_USER]),
        PAYSUITE_USER: compare(sides[PAYSUITE_USER], sides[MINIMAL_USER], TARGETS["locust"], vs),
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(results: Row) -> str:
    lines = [
        f"benchmarks stub: generator {results['generator']}, {results['connections']} "
        f"connections, {results['seconds']:g} s per measurement, median of {results['rounds']} "
        "rounds",
        f"  {'measurement':<30} {'req/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'non-2xx':>8} "
        f"{'ratio':>7} {'target':>7}",
    ]
    for name, row in results["measurements"].items():
        ratio, target = row.get("ratio"), row.get("target")
        mark = "" if target is None else ("  ✓" if (ratio or 0) >= target else "  ✗")
        lines.append(
            f"  {name:<30} {row['rps']:>10.1f} {_fmt(row.get('p50_ms')):>9} "
            f"{_fmt(row.get('p99_ms')):>9} {row.get('non_2xx', row.get('failures', 0)):>8} "
            f"{_fmt(ratio):>7} {_fmt(target):>7}{mark}"
        )
    events = results.get("events_list")
    if events:
        lines.append(
            f"benchmarks stub: the events list with {events['stored']:,} events stored "
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


def verdicts(results: Row) -> list[Row]:
    """Every target with its measured value and whether it is met."""
    rows = []
    m = results["measurements"]
    for label, name, key in (
        ("stub cashin / bare handler", "stub cashin", "cashin"),
        ("stub find / bare handler", "stub find", "find"),
        ("paysuite user / minimal Locust user", PAYSUITE_USER, "locust"),
    ):
        if m.get(name, {}).get("ratio") is not None:
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


def format_verdicts(rows: list[Row]) -> str:
    lines = ["benchmarks stub: targets"]
    for row in rows:
        mark = "✓ pass" if row["met"] else "✗ FAIL"
        spread = ""
        if row["spread"]:
            spread = f"  (rounds {', '.join(f'{v:.2f}' for v in row['spread'])})"
        lines.append(
            f"  {mark}  {row['target']:<58} {row['value']:>7.2f}  target {row['limit']}{spread}"
        )
    return "\n".join(lines)


def profiles(gen: Generator, results: Row, args: argparse.Namespace, events_db: Path) -> Row:
    """cProfile of the stub for each stub target missed (every one with ``--profile-stub``)."""
    wanted: dict[str, Row] = {}
    for endpoint in ("cashin", "find"):
        if results["measurements"][f"stub {endpoint}"]["ratio"] < TARGETS[endpoint]:
            wanted[endpoint] = {}
    queries = results.get("events_list", {}).get("queries", {})
    slow = {n: q["query"] for n, q in queries.items() if q["p50_ms"] > EVENTS_P50_MS}
    if slow or (queries and args.profile_stub):
        wanted["events"] = {
            "db": events_db,
            "queries": slow or {n: q["query"] for n, q in queries.items()},
        }
    if args.profile_stub:
        wanted = {"cashin": {}, "find": {}, **wanted}
    found: Row = {}
    for endpoint, options in wanted.items():
        say("stub", f"profiling the stub under {endpoint} load (cProfile)")
        try:
            found[endpoint] = profile_stub(gen, Path(args.report_dir), endpoint, **options)
        except Exception as exc:  # the numbers above stand on their own
            say("stub", f"could not profile the stub: {exc}")
            continue
        print_profile("events list" if endpoint == "events" else endpoint, found[endpoint])
    return found


def measure_servers(gen: Generator, args: argparse.Namespace, workdir: Path) -> dict[str, Row]:
    """The stub against the bare handler, then the two Locust users, on one stub."""
    stub = start_stub(workdir / "stub")
    bare: subprocess.Popen[bytes] | None = None
    try:
        bare, bare_url = start_server(
            [sys.executable, str(HERE / "servers.py"), "bare"], workdir / "bare.log"
        )
        say("stub", f"bare aiohttp handler at {bare_url}, stub at {stub.root_url}")
        servers = server_rounds(gen, stub, bare_url, args.rounds)
        return {**servers, **locust_rounds(stub, args, workdir)}
    finally:
        if bare is not None:
            stop(bare)
        stop_stub(stub)


def run_stub_bench(args: argparse.Namespace) -> int:
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)  # the profiles are written there first
    with tempfile.TemporaryDirectory(prefix="paysuite-bench-") as tmp:
        workdir = Path(tmp)
        gen = Generator(args.seconds, args.connections, workdir, args.generator)
        say("stub", f"generator: {gen.name}")
        try:
            measurements = measure_servers(gen, args, workdir)
        except (RuntimeError, OSError, httpx.HTTPError) as exc:
            print(f"benchmarks stub: could not measure: {exc}", file=sys.stderr)
            return 2
        results: Row = {
            "generator": gen.name, "connections": args.connections, "seconds": args.seconds,
            "rounds": args.rounds, "measurements": measurements,
        }  # fmt: skip
        if args.events:
            results["events_list"] = measure_events(workdir / "events", args.events, args.rounds)
        results["targets"] = verdicts(results)
        results["targets_missed"] = [row["target"] for row in results["targets"] if not row["met"]]
        print(format_table(results), flush=True)
        print(format_verdicts(results["targets"]), flush=True)
        results["stub_profile"] = profiles(gen, results, args, workdir / "events" / "stub.db")
    say("stub", f"results in {write_report(report_dir, 'bench.json', results).resolve()}")
    return 0
