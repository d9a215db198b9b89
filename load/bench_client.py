"""A closed-loop HTTP load generator in Python, for the benchmark when wrk is not installed.

``python -m load.bench_client URL --seconds S --connections C [--method POST --body JSON
--header 'K: V' --fresh-key]`` keeps C requests in flight for S seconds (aiohttp, one process)
and prints one JSON line: requests, non-2xx, requests/s, p50/p99 in ms. Both sides of every
ratio the benchmark prints are measured with the same generator.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid

import aiohttp


async def run(args: argparse.Namespace) -> dict[str, float]:
    headers = dict(h.split(": ", 1) for h in args.header)
    latencies: list[float] = []
    bad = 0
    deadline = time.perf_counter() + args.seconds
    connector = aiohttp.TCPConnector(limit=args.connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def loop() -> None:
            nonlocal bad
            while time.perf_counter() < deadline:
                sent = dict(headers)
                if args.fresh_key:
                    sent["Idempotency-Key"] = uuid.uuid4().hex
                started = time.perf_counter()
                async with session.request(
                    args.method, args.url, data=args.body, headers=sent
                ) as resp:
                    await resp.read()
                    if not 200 <= resp.status < 300:
                        bad += 1
                latencies.append((time.perf_counter() - started) * 1000)

        began = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(args.connections)))
        elapsed = time.perf_counter() - began
    latencies.sort()

    def pct(f: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(f * len(latencies)))], 3)

    return {
        "requests": len(latencies),
        "non_2xx": bad,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": pct(0.5) if latencies else 0.0,
        "p99_ms": pct(0.99) if latencies else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--method", default="GET")
    parser.add_argument("--body", default=None)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--fresh-key", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
