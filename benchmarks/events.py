"""The events list at scale: a stub's store seeded with many events, then each query the list
supports timed one request at a time."""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import access_token, say
from paysuite_core.launcher import start_stub, stop_stub
from stub_server.store import NewTransaction, Store
from stub_server.store.seeding import seed_transactions

#: One merchant in ten is the second one: the first one's queries then skip others' events.
MERCHANTS = ("DEMO01",) * 9 + ("DEMO02",)
_SPAN_US = 30 * 86_400 * 1_000_000
_WEEK_US = 7 * 86_400 * 1_000_000


def seeds(count: int, sample: dict[str, Any]) -> Iterator[tuple[NewTransaction, str | None]]:
    """Transactions over the last 30 days making ``count`` events in all: each one's created
    event and, for nine in ten, a processed one (success or failed), kinds and clients mixed.
    ``sample`` gets a ref, a client and a time of the first merchant, for the filtered queries."""
    rng = random.Random(7)
    step = _SPAN_US // max(count, 1)
    t = time.time_ns() // 1000 - _SPAN_US
    written = 0
    while written < count:
        merchant = MERCHANTS[written % len(MERCHANTS)]
        amount = rng.randrange(100, 100_000)
        new = NewTransaction(
            ref=str(uuid.uuid4()), merchant=merchant, app_id="bench", amount=amount,
            kind="CASHIN" if rng.random() < 0.6 else "CASHOUT",
            client=f"078{rng.randrange(10**7):07d}", fee=round(amount * 0.023, 2), created_us=t,
            webhook_mode=None, key=uuid.uuid4().hex, due_us=None, due_status=None,
        )  # fmt: skip
        if merchant == MERCHANTS[0] and written >= count // 2 and not sample:
            sample.update(ref=new.ref, client=new.client, created_us=t)
        processed = written + 1 < count and rng.random() < 0.9
        status = ("success" if rng.random() < 0.85 else "failed") if processed else None
        yield new, status
        written += 2 if processed else 1
        t += step


def seed_events(db: Path, count: int) -> dict[str, Any]:
    """Write ``count`` events into the store at ``db`` through its own insert path; returns the
    sample of ``seeds``."""
    sample: dict[str, Any] = {}
    store = Store(str(db))
    try:
        seed_transactions(store, seeds(count, sample))
    finally:
        store.close()
    return sample


def events_queries(sample: dict[str, Any]) -> dict[str, str]:
    """name -> query string: the first page unfiltered, with each filter, and at offset 10,000."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
        microseconds=int(sample["created_us"]) - _WEEK_US
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


def measure_events(workdir: Path, count: int, rounds: int) -> dict[str, Any]:
    """Seed ``count`` events into a fresh stub's store, start it on them, time each query."""
    workdir.mkdir(parents=True, exist_ok=True)
    stop_stub(start_stub(workdir))  # the store, its schema and its applications
    say("stub", f"seeding {count:,} events through the store's insert path")
    started = time.perf_counter()
    sample = seed_events(workdir / "stub.db", count)
    stub = start_stub(workdir, startup_timeout_s=300)
    seed_s = time.perf_counter() - started
    try:
        token = access_token(stub.config())
        queries = events_queries(sample)
        say("stub", f"timing the events list: {len(queries)} queries, one request at a time")
        url = f"{stub.base_url}/events/transactions"
        timed = time_queries(url, token, queries, 10, rounds)
    finally:
        stop_stub(stub)
    for name, row in timed.items():
        row["query"] = queries[name]
    return {"stored": count, "seed_s": round(seed_s, 2), "queries": timed}
