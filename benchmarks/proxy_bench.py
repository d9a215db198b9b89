"""``python -m benchmarks proxy``: how much latency ``paysuite proxy`` adds to a find.

Three sides in interleaved rounds (noise from elsewhere on the shared machine hits them alike):
the stub directly, the forwarding server alone (``servers.py forward``), and ``paysuite proxy``
judging every exchange as a QA would run it. The figure is the difference of the proxied and
direct medians, split into forwarding and judging (docs/proxy.md).

Why sequential requests on one keep-alive connection: that is the latency a client feels, which
is what the proxy adds. Why ``http.client``: the cheapest request loop of the standard library,
the same on every side, so the difference is the proxy's.
"""

from __future__ import annotations

import http.client
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from benchmarks.common import (
    HERE,
    access_token,
    create_ref,
    percentile,
    say,
    start_server,
    stop,
    write_report,
)
from paysuite_core.launcher import start_stub, stop_stub

TARGET_P50_MS = 2.0
WARMUP = 50


class FindLoop:
    """Sequential GETs of one URL on one keep-alive connection; each request's time in ms."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.path = parts.path
        self.connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
        self.headers = {"Accept": "application/json", "Authorization": f"Bearer {token}"}

    def run(self, count: int) -> list[float]:
        timings = []
        for _ in range(count):
            began = time.perf_counter()
            self.connection.request("GET", self.path, headers=self.headers)
            response = self.connection.getresponse()
            response.read()
            timings.append((time.perf_counter() - began) * 1000)
            if response.status != 200:
                raise RuntimeError(f"GET {self.path} answered {response.status}, not 200")
        return timings

    def close(self) -> None:
        self.connection.close()


def _side(values: list[float]) -> dict[str, Any]:
    return {
        "requests": len(values),
        "p50_ms": round(statistics.median(values), 3),
        "p90_ms": round(percentile(values, 0.90), 3),
        "p99_ms": round(percentile(values, 0.99), 3),
    }


@dataclass(frozen=True)
class Overhead:
    """The sides' request times, pooled over the rounds, and each round's own difference."""

    direct_ms: list[float]
    proxied_ms: list[float]
    round_differences_ms: list[float]
    forwarding_ms: list[float]

    @property
    def added_p50(self) -> float:
        return statistics.median(self.proxied_ms) - statistics.median(self.direct_ms)

    @property
    def forwarding_added_p50(self) -> float:
        return statistics.median(self.forwarding_ms) - statistics.median(self.direct_ms)

    @property
    def passed(self) -> bool:
        return self.added_p50 <= TARGET_P50_MS

    def verdict_line(self) -> str:
        mark = "pass" if self.passed else "FAIL"
        return f"proxy adds p50 {self.added_p50:.2f} ms (target <= {TARGET_P50_MS:g} ms)  {mark}"

    def split_line(self) -> str:
        judging = self.added_p50 - self.forwarding_added_p50
        return (
            f"of which forwarding {self.forwarding_added_p50:.2f} ms, judging and recording "
            f"{judging:.2f} ms (p50 differences)"
        )

    def table(self) -> str:
        lines = [f"{'find':<20} {'requests':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}"]
        for name, values in (
            ("direct to the stub", self.direct_ms),
            ("forwarding only", self.forwarding_ms),
            ("paysuite proxy", self.proxied_ms),
        ):
            row = _side(values)
            lines.append(
                f"{name:<20} {row['requests']:>8} {row['p50_ms']:>8.2f} {row['p90_ms']:>8.2f} "
                f"{row['p99_ms']:>8.2f}"
            )
        spread = ", ".join(f"{d:.2f}" for d in self.round_differences_ms)
        return "\n".join([*lines, f"added p50 per round (ms): {spread}"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "direct": _side(self.direct_ms),
            "forwarding_only": _side(self.forwarding_ms),
            "proxied": _side(self.proxied_ms),
            "added_p50_ms": round(self.added_p50, 3),
            "forwarding_added_p50_ms": round(self.forwarding_added_p50, 3),
            "round_added_p50_ms": [round(d, 3) for d in self.round_differences_ms],
            "target_added_p50_ms": TARGET_P50_MS,
            "passed": self.passed,
        }


def measure(
    direct: FindLoop, forwarding: FindLoop, proxied: FindLoop, rounds: int, requests: int
) -> Overhead:
    """Interleaved rounds of ``requests`` finds each side, after a warm-up of each."""
    for loop in (direct, forwarding, proxied):
        loop.run(WARMUP)
    direct_all: list[float] = []
    forwarding_all: list[float] = []
    proxied_all: list[float] = []
    differences = []
    for index in range(rounds):
        say("proxy", f"round {index + 1}/{rounds}: {requests} finds direct, forwarded, proxied")
        near = direct.run(requests)
        forwarding_all += forwarding.run(requests)
        far = proxied.run(requests)
        direct_all += near
        proxied_all += far
        differences.append(statistics.median(far) - statistics.median(near))
    return Overhead(direct_all, proxied_all, differences, forwarding_all)


def _measure_on(workdir: Path, rounds: int, requests: int) -> Overhead:
    stub = start_stub(workdir / "stub")
    proxies: list[tuple[subprocess.Popen[bytes], str]] = []
    loops: list[FindLoop] = []
    try:
        config = stub.config()
        token = access_token(config)
        ref = create_ref(config.base_url, token)
        path = f"{urlsplit(config.base_url).path}/transactions/find/{ref}"
        judging = [
            sys.executable, "-m", "paysuite", "proxy", "--target", stub.root_url,
            "--listen", "127.0.0.1:0", "--config", str(stub.credentials_path),
            "--report-dir", str(workdir / "proxy-reports"),
        ]  # fmt: skip
        forward = [sys.executable, str(HERE / "servers.py"), "forward", stub.root_url]
        for command, log in ((forward, "forward-only.log"), (judging, "proxy.log")):
            proxies.append(start_server(command, workdir / log))
        urls = [stub.root_url, *(url for _process, url in proxies)]
        say(
            "proxy", f"stub at {urls[0]}, forwarding only at {urls[1]}, paysuite proxy at {urls[2]}"
        )
        loops = [FindLoop(url + path, token) for url in urls]
        return measure(loops[0], loops[1], loops[2], rounds, requests)
    finally:
        for loop in loops:
            loop.close()
        for process, _url in proxies:
            stop(process, signal.SIGINT, timeout_s=60)  # the proxy writes its reports first
        stop_stub(stub)


def run_proxy_bench(rounds: int, requests: int, report_dir: Path) -> int:
    with tempfile.TemporaryDirectory(prefix="paysuite-proxy-bench-") as tmp:
        try:
            overhead = _measure_on(Path(tmp), rounds, requests)
        except (RuntimeError, OSError, httpx.HTTPError, KeyError, ValueError) as exc:
            print(f"benchmarks proxy: could not measure: {exc}", file=sys.stderr)
            return 2
    print(overhead.table())
    print(overhead.split_line())
    print(overhead.verdict_line(), flush=True)
    data = {"rounds": rounds, "requests_per_round": requests, **overhead.to_dict()}
    say("proxy", f"wrote {write_report(report_dir, 'proxy-bench.json', data)}")
    return 0
