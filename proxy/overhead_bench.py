"""``paysuite proxy-bench``: how much latency ``paysuite proxy`` adds to a find, on this machine.

One run, side by side: the bundled stub, and ``paysuite proxy`` in its own process in front of it
(judging every exchange, as a QA would run it, with the stub's credentials as ``--config``). One
client sends sequential finds of one transaction over one keep-alive connection, directly to the
stub and through the proxy, in interleaved rounds (``--rounds``; a burst of noise from elsewhere
on the shared machine hits both sides alike). The figure is the difference of the two medians
over all requests, with each round's difference beside it for the spread:

    proxy adds p50 1.82 ms (target <= 2 ms)  pass

A third side says where the time goes: the same forwarding server (``proxy.server``) in its own
process with nobody judging (``python -m proxy.overhead_bench --forward-only TARGET``), so the
figure splits into forwarding and judging.

Sequential requests on one connection measure the latency a client feels, which is what the
proxy adds; throughput under load is ``paysuite bench``'s question, about the stub. The client is
``http.client`` on purpose: the cheapest request loop of the standard library, the same on both
sides, so the difference is the proxy's. A benchmark, not a test: it prints the numbers and writes
``proxy-bench.json``; exit 0 unless it could not run (2). Everything is loopback.

Why a subcommand of its own and not ``paysuite bench``: ``load`` may import ``paysuite_core``
only (docs/architecture.md), and a proxy run is not a load run.
"""

from __future__ import annotations

import argparse
import http.client
import json
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

TARGET_P50_MS = 2.0
LISTENING_PREFIX = "paysuite proxy listening on "
WARMUP = 50


def say(message: str) -> None:
    print(f"paysuite proxy-bench: {message}", flush=True)


# --- measuring ---------------------------------------------------------------------------------
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


@dataclass(frozen=True)
class Overhead:
    """The two sides' request times, pooled over the rounds, and each round's own difference."""

    direct_ms: list[float]
    proxied_ms: list[float]
    round_differences_ms: list[float]
    forwarding_ms: list[float]  # through the forwarding server alone, nobody judging

    @property
    def direct_p50(self) -> float:
        return statistics.median(self.direct_ms)

    @property
    def proxied_p50(self) -> float:
        return statistics.median(self.proxied_ms)

    @property
    def added_p50(self) -> float:
        return self.proxied_p50 - self.direct_p50

    @property
    def forwarding_p50(self) -> float:
        return statistics.median(self.forwarding_ms)

    @property
    def passed(self) -> bool:
        return self.added_p50 <= TARGET_P50_MS

    def verdict_line(self) -> str:
        mark = "pass" if self.passed else "FAIL"
        return f"proxy adds p50 {self.added_p50:.2f} ms (target <= {TARGET_P50_MS:g} ms)  {mark}"

    def split_line(self) -> str:
        forwarding = self.forwarding_p50 - self.direct_p50
        return (
            f"of which forwarding {forwarding:.2f} ms, judging and recording "
            f"{self.proxied_p50 - self.forwarding_p50:.2f} ms (p50 differences)"
        )

    def table(self) -> str:
        rows = [
            ("direct to the stub", self.direct_ms),
            ("forwarding only", self.forwarding_ms),
            ("paysuite proxy", self.proxied_ms),
        ]
        lines = [f"{'find':<20} {'requests':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}"]
        for name, values in rows:
            p90, p99 = _percentile(values, 0.90), _percentile(values, 0.99)
            median = statistics.median(values)
            lines.append(f"{name:<20} {len(values):>8} {median:>8.2f} {p90:>8.2f} {p99:>8.2f}")
        spread = ", ".join(f"{d:.2f}" for d in self.round_differences_ms)
        lines.append(f"added p50 per round (ms): {spread}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        def side(values: list[float]) -> dict[str, Any]:
            return {
                "requests": len(values),
                "p50_ms": round(statistics.median(values), 3),
                "p90_ms": round(_percentile(values, 0.90), 3),
                "p99_ms": round(_percentile(values, 0.99), 3),
            }

        return {
            "direct": side(self.direct_ms),
            "forwarding_only": side(self.forwarding_ms),
            "proxied": side(self.proxied_ms),
            "added_p50_ms": round(self.added_p50, 3),
            "forwarding_added_p50_ms": round(self.forwarding_p50 - self.direct_p50, 3),
            "round_added_p50_ms": [round(d, 3) for d in self.round_differences_ms],
            "target_added_p50_ms": TARGET_P50_MS,
            "passed": self.passed,
        }


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


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
        say(f"round {index + 1}/{rounds}: {requests} finds direct, forwarded, proxied")
        near = direct.run(requests)
        forwarding_all += forwarding.run(requests)
        far = proxied.run(requests)
        direct_all += near
        proxied_all += far
        differences.append(statistics.median(far) - statistics.median(near))
    return Overhead(direct_all, proxied_all, differences, forwarding_all)


# --- the proxy process -------------------------------------------------------------------------
def proxy_command(target: str, config: Path, workdir: Path) -> list[str]:
    return [
        sys.executable, "-m", "paysuite", "proxy", "--target", target,
        "--listen", "127.0.0.1:0", "--config", str(config),
        "--report-dir", str(workdir / "proxy-reports"),
    ]  # fmt: skip


def forward_only_command(target: str) -> list[str]:
    return [sys.executable, "-m", "proxy.overhead_bench", "--forward-only", target]


def start_proxy(command: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A proxy process on a free port; its output goes to a file (a pipe nobody reads could fill
    up with live lines and stall it)."""
    with open(log, "wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        for line in log.read_text("utf-8", errors="replace").splitlines():
            if line.startswith(LISTENING_PREFIX):
                return process, line[len(LISTENING_PREFIX) :].split(" ")[0]
        time.sleep(0.05)
    stop_proxy(process)
    raise RuntimeError(f"the proxy did not start: {log.read_text('utf-8', errors='replace')}")


def stop_proxy(process: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    """Ctrl-C, as a user stops it (it then writes its reports); killed if it hangs."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def serve_forward_only(target: str) -> None:
    """The forwarding server alone, every exchange dropped: the bench's middle side. Announces
    itself like ``paysuite proxy``; stops on SIGINT or SIGTERM."""
    import asyncio

    from aiohttp import web

    from proxy.server import ForwardingProxy, ProxySettings

    async def serve() -> None:
        runner = web.AppRunner(
            ForwardingProxy(ProxySettings(target=target), lambda _exchange: None).app(),
            access_log=None,
            handle_signals=False,
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        print(f"{LISTENING_PREFIX}http://{host}:{port} -> {target}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        await runner.cleanup()

    asyncio.run(serve())


# --- the command -------------------------------------------------------------------------------
def run_overhead_bench(rounds: int, requests: int, report_dir: Path) -> int:
    from paysuite_core.launcher import StubStartError, start_stub, stop_stub

    if rounds <= 0 or requests <= 0:
        print("paysuite proxy-bench: --rounds and --requests must be positive", file=sys.stderr)
        return 2
    import httpx

    from paysuite_core import tokens

    with tempfile.TemporaryDirectory(prefix="paysuite-proxy-bench-") as tmp:
        workdir = Path(tmp)
        try:
            stub = start_stub(workdir / "stub")
        except StubStartError as exc:
            print(f"paysuite proxy-bench: the stub did not start: {exc}", file=sys.stderr)
            return 2
        loops: list[FindLoop] = []
        proxies: list[subprocess.Popen[bytes]] = []
        try:
            config = stub.config()
            app = next(a for a in config.applications if a.privilege == "read-write")
            with httpx.Client(timeout=10) as client:
                send = tokens.httpx_send(client, config.base_url)
                token = tokens.TokenFlow(send, app).access()
                created = client.post(
                    f"{config.base_url}/transactions/cashin",
                    json={"amount": 100, "number": "0781234567"},
                    headers={"Authorization": f"Bearer {token}"},
                )
                ref = created.json()["ref"]
            urls = [stub.root_url]
            for command, log in (
                (forward_only_command(stub.root_url), workdir / "forward-only.log"),
                (
                    proxy_command(stub.root_url, stub.credentials_path, workdir),
                    workdir / "proxy.log",
                ),
            ):
                process, url = start_proxy(command, log)
                proxies.append(process)
                urls.append(url)
            say(f"stub at {urls[0]}, forwarding only at {urls[1]}, paysuite proxy at {urls[2]}")
            path = f"{urlsplit(config.base_url).path}/transactions/find/{ref}"
            loops = [FindLoop(url + path, token) for url in urls]
            overhead = measure(loops[0], loops[1], loops[2], rounds, requests)
        except (RuntimeError, OSError, httpx.HTTPError, KeyError, ValueError) as exc:
            print(f"paysuite proxy-bench: could not measure: {exc}", file=sys.stderr)
            return 2
        finally:
            for loop in loops:
                loop.close()
            for process in proxies:
                stop_proxy(process)
            stop_stub(stub)
    print(overhead.table())
    print(overhead.split_line())
    print(overhead.verdict_line(), flush=True)
    report_dir.mkdir(parents=True, exist_ok=True)
    written = report_dir / "proxy-bench.json"
    data = {"rounds": rounds, "requests_per_round": requests, **overhead.to_dict()}
    written.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    say(f"wrote {written}")
    return 0


def _command(args: argparse.Namespace) -> int:
    return run_overhead_bench(args.rounds, args.requests, Path(args.report_dir))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument(
        "--requests", type=int, default=300, help="finds per side per round (default 300)"
    )
    parser.add_argument("--report-dir", default="reports/bench", help="where proxy-bench.json goes")


def register(subparsers: Any) -> None:
    """``paysuite proxy-bench`` (registration imports nothing heavy)."""
    bench = subparsers.add_parser(
        "proxy-bench",
        help="measure the latency paysuite proxy adds to a find (p50, side by side)",
        description="Start the bundled stub and paysuite proxy in front of it, send sequential "
        "finds directly and through the proxy in interleaved rounds, and print the p50 the proxy "
        "adds (target <= 2 ms), split into forwarding and judging. Writes proxy-bench.json; "
        "exit 0 unless it could not run (2).",
    )
    add_arguments(bench)
    bench.set_defaults(func=_command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxy.overhead_bench")
    add_arguments(parser)
    parser.add_argument("--forward-only", metavar="TARGET", help="serve the bench's middle side")
    args = parser.parse_args(argv)
    if args.forward_only:
        serve_forward_only(args.forward_only)
        return 0
    return _command(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
