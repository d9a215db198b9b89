"""Where the stub's time goes: the stub run again under cProfile while one kind of load is
applied, its time broken down by area and by function."""

from __future__ import annotations

import pstats
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import access_token, create_ref, say, start_server, stop
from benchmarks.events import time_queries
from benchmarks.generators import Generator
from paysuite_core.target_config import TargetConfig, load_target_config

_ROOT = str(Path(__file__).resolve().parents[1]) + "/"

#: The first marker a profiled function's place contains names its area.
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


def _area(where: str) -> str:
    return next((area for marker, area in _AREAS if marker in where), "other")


def _apply_load(
    gen: Generator, config: TargetConfig, endpoint: str, queries: dict[str, str]
) -> float:
    """The requests per second the profiled stub answered under ``endpoint`` load."""
    base_url = config.base_url
    token = access_token(config)
    if endpoint == "cashin":
        return float(gen.cashin(f"{base_url}/transactions/cashin", token)["rps"])
    if endpoint == "events":
        began = time.perf_counter()
        timed = time_queries(f"{base_url}/events/transactions", token, queries, 5)
        requests = sum(int(row["requests"]) for row in timed.values())
        return requests / (time.perf_counter() - began)
    ref = create_ref(base_url, token)
    return float(gen.get(f"{base_url}/transactions/find/{ref}", token)["rps"])


def _breakdown(out: Path) -> dict[str, Any]:
    """Own time by area and by function, and the stub's per-request functions by cumulative
    time; scrypt (the applications' secrets, hashed at start-up and at authorize) is left out."""
    rows = []
    total = startup = 0.0
    entries = pstats.Stats(str(out)).stats.items()  # type: ignore[attr-defined]
    for (filename, line, func), (_cc, calls, tottime, cumtime, _callers) in entries:
        where = f"{_short(filename)}:{line}({func})"
        if "scrypt" in where:
            startup += tottime
            continue
        total += tottime
        rows.append((tottime, cumtime, calls, where))
    rows.sort(reverse=True)
    by_area: dict[str, float] = {}
    for tottime, _cum, _calls, where in rows:
        by_area[_area(where)] = by_area.get(_area(where), 0.0) + tottime
    stub_cumulative = sorted(
        # per-request code only: not start-up, imports or the background task
        ((c, n, w) for _t, c, n, w in rows
         if w.startswith("stub_server/") and n >= 100 and "resolve_due" not in w),
        reverse=True,
    )  # fmt: skip
    return {
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


def profile_stub(
    gen: Generator,
    report_dir: Path,
    endpoint: str,
    *,
    db: Path | None = None,
    queries: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the stub under cProfile while ``endpoint`` load is applied: cashin or find (the
    generator), or ``events`` (each of ``queries`` on the events list, on the store ``db``)."""
    out = report_dir / f"stub-{endpoint}.prof"
    credentials = gen.workdir / f"prof-{endpoint}.yaml"
    command = [
        sys.executable, "-m", "cProfile", "-o", str(out), "-m", "stub_server", "--port", "0",
        "--db", str(db or gen.workdir / f"prof-{endpoint}.db"),
        "--credentials", str(credentials),
    ]  # fmt: skip
    process, _root_url = start_server(command, gen.workdir / f"prof-{endpoint}.log")
    try:
        config = load_target_config(credentials)
        rps = _apply_load(gen, config, endpoint, queries or {"first page": ""})
    finally:
        stop(process)
    return {"profile_file": str(out), "rps_under_profiler": rps, **_breakdown(out)}


def print_profile(endpoint: str, prof: dict[str, Any]) -> None:
    say(
        "stub",
        f"where the stub's time goes under {endpoint} load (share of profiled own time; "
        f"{prof['rps_under_profiler']:.0f} req/s under the profiler):",
    )
    for area, share in list(prof["share_by_area"].items())[:10]:
        print(f"  {area:<32} {share * 100:5.1f}%")
    say("stub", "top functions by own time:")
    for row in prof["top_own_time"][:10]:
        print(f"  {row['own_s']:8.3f}s {row['calls']:>9} {row['function']}")
    if prof["stub_functions_by_cumulative_time"]:
        say("stub", "stub functions by cumulative time:")
        for row in prof["stub_functions_by_cumulative_time"][:8]:
            print(f"  {row['cum_s']:8.3f}s {row['calls']:>9} {row['function']}")
