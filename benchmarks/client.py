"""A closed-loop HTTP load generator in Python, for the benchmarks when wrk is not installed.

``python client.py URL --seconds S --connections C [--method POST --body JSON
--header 'K: V' --fresh-key]`` keeps C requests in flight (one per keep-alive connection, no
pipelining) for S seconds and prints one JSON line: requests, non-2xx, requests/s, p50/p99 in ms.
Both sides of every ratio the benchmark prints are measured with the same generator.

Why raw ``asyncio`` protocols and not an HTTP client library: on a 2-core machine the generator
shares the CPU with the server it measures, and a generator that costs more per request than
the server makes every ratio drift towards 100%. Each request here is a prebuilt byte string
(with a fresh ``Idempotency-Key`` spliced in when asked) and a response is parsed only as far as
its status and ``Content-Length``, which is what wrk does too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from urllib.parse import urlsplit


def request_template(
    method: str, url: str, headers: dict[str, str], body: str | None, fresh_key: bool
) -> tuple[bytes, bytes, str, int]:
    """(head before the key, rest of the request, host, port); the key goes between the two."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 80
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    data = (body or "").encode()
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(data)}")
    head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
    if fresh_key:
        return head + b"Idempotency-Key: ", b"\r\n\r\n" + data, host, port
    return head + b"\r\n" + data, b"", host, port


class Connection(asyncio.Protocol):
    """One keep-alive connection sending the next request as soon as a response is complete."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.started = 0.0
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.send()

    def send(self) -> None:
        assert self.transport is not None
        self.started = time.perf_counter()
        self.transport.write(self.bench.next_request())

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buffer[:end]).lower()
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                length = 0
            else:
                stop = head.find(b"\r\n", at + 2)
                length = int(head[at + 17 : stop if stop > 0 else len(head)])
            if len(buffer) < end + 4 + length:
                return
            del buffer[: end + 4 + length]
            now = time.perf_counter()
            status = int(head[9:12])
            if status == 100:
                continue
            self.bench.done(now - self.started, 200 <= status < 300)
            if now < self.bench.deadline:
                self.send()
            else:
                assert self.transport is not None
                self.transport.close()
                return

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class Bench:
    """The request bytes, the fresh keys and what came back, shared by every connection."""

    def __init__(self, args: argparse.Namespace) -> None:
        headers = dict(h.split(": ", 1) for h in args.header)
        self.before, self.after, self.host, self.port = request_template(
            args.method, args.url, headers, args.body, args.fresh_key
        )
        self.fresh_key = args.fresh_key
        self.prefix = uuid.uuid4().hex[:10]
        self.counter = 0
        self.latencies: list[float] = []
        self.bad = 0
        self.deadline = 0.0

    def next_request(self) -> bytes:
        if not self.fresh_key:
            return self.before
        self.counter += 1
        return b"%s%s%016x%s" % (self.before, self.prefix.encode(), self.counter, self.after)

    def done(self, seconds: float, ok: bool) -> None:
        self.latencies.append(seconds)
        if not ok:
            self.bad += 1


async def run(args: argparse.Namespace) -> dict[str, float]:
    bench = Bench(args)
    loop = asyncio.get_running_loop()
    began = time.perf_counter()
    bench.deadline = began + args.seconds
    connections = []
    for _ in range(args.connections):
        _transport, conn = await loop.create_connection(
            lambda: Connection(bench), bench.host, bench.port
        )
        connections.append(conn)
    await asyncio.wait_for(
        asyncio.gather(*(c.closed for c in connections)), timeout=args.seconds + 30
    )
    elapsed = time.perf_counter() - began
    latencies = sorted(bench.latencies)

    def pct(f: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(f * len(latencies)))] * 1000, 3)

    return {
        "requests": len(latencies),
        "non_2xx": bench.bad,
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
