"""``python -m benchmarks [stub|proxy|conform] [options]``, from the repository's root: without a
subcommand stub and proxy run with their defaults (conform, minutes long, only when asked). Exit 0
unless a benchmark could not run (2)."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.conform_bench import run_conform_bench
from benchmarks.proxy_bench import run_proxy_bench
from benchmarks.stub_bench import EVENTS, run_stub_bench
from paysuite_core.durations import duration_argument


def _stub(args: argparse.Namespace) -> int:
    if min(args.seconds, args.connections, args.rounds) <= 0 or args.events < 0:
        print(
            "benchmarks stub: --seconds, --connections and --rounds must be positive",
            file=sys.stderr,
        )
        return 2
    if args.generator == "wrk" and shutil.which("wrk") is None:
        print("benchmarks stub: wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2
    return run_stub_bench(args)


def _proxy(args: argparse.Namespace) -> int:
    if args.rounds <= 0 or args.requests <= 0:
        print("benchmarks proxy: --rounds and --requests must be positive", file=sys.stderr)
        return 2
    return run_proxy_bench(args.rounds, args.requests, Path(args.report_dir))


def _conform(args: argparse.Namespace) -> int:
    if args.rounds <= 0 or args.concurrency <= 0 or args.latency <= 0:
        print(
            "benchmarks conform: --rounds, --concurrency and --latency must be positive",
            file=sys.stderr,
        )
        return 2
    return run_conform_bench(
        args.rounds, args.latency * 1000, args.concurrency, Path(args.report_dir)
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    commands = parser.add_subparsers(dest="command", metavar="{stub,proxy,conform}")
    stub = commands.add_parser(
        "stub", help="stub vs bare handler, events list at scale, paysuite vs minimal Locust user"
    )
    stub.add_argument("--seconds", type=duration_argument, default=5.0, help="per measurement")
    stub.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median kept)")
    stub.add_argument("--connections", type=int, default=16, help="also the Locust users")
    stub.add_argument("--events", type=int, default=EVENTS, help="stored events (0: skip)")
    stub.add_argument("--generator", choices=("auto", "wrk", "python"), default="auto")
    stub.add_argument("--profile-stub", action="store_true", help="even when targets are met")
    stub.set_defaults(func=_stub)
    proxy = commands.add_parser("proxy", help="the latency paysuite proxy adds to a find")
    proxy.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    proxy.add_argument("--requests", type=int, default=300, help="finds per side per round")
    proxy.set_defaults(func=_proxy)
    conform = commands.add_parser(
        "conform", help="paysuite conform against a stub 80 ms away / a near one, side by side"
    )
    conform.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    conform.add_argument(
        "--latency", type=duration_argument, default=0.08, help="the far stub's (80ms)"
    )
    conform.add_argument(
        "--concurrency", type=int, default=8, help="paysuite conform's --concurrency (8)"
    )
    conform.set_defaults(func=_conform)
    for sub in (stub, proxy, conform):
        sub.add_argument("--report-dir", default="reports/bench", help="where the JSON goes")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is not None:
        return int(args.func(args))
    return max(_stub(parser.parse_args(["stub"])), _proxy(parser.parse_args(["proxy"])))


if __name__ == "__main__":
    sys.exit(main())
