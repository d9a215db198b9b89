"""``paysuite conform``: a thin wrapper that runs the conformance checks through pytest.

``paysuite conform --target URL --config FILE`` is ``pytest --pyargs conformance.suite --target
URL --config FILE`` with pytest's own terminal output replaced by the suite's progress lines and
scorecard. Registration imports nothing heavy; pytest, httpx and schemathesis load when it runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

PROG = "paysuite conform"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "conform",
        help="run the conformance suite against an implementation (default: the bundled stub)",
        description=(
            "Check an implementation of the Payments Transactions Service against the interface "
            "document. Without --target and --config, start the bundled stub and check it. "
            "Exit status: 0 pass (no MUST check failed, --strict: no SHOULD either, and enough "
            "checks ran); 1 fail; 2 no verdict: a usage or configuration error, a target that "
            "is unreachable, not this API or refuses the credentials, or checks that could not "
            "be judged."
        ),
    )
    parser.add_argument("--target", metavar="URL", help="base URL of the implementation (…/api)")
    parser.add_argument("--config", metavar="FILE", help="target configuration (YAML)")
    parser.add_argument(
        "--profile",
        choices=("seed", "reference"),
        default="seed",
        help="seed: what the document says (default); reference: also paysuite's choices",
    )
    parser.add_argument(
        "--strict", action="store_true", help="a failed SHOULD check also fails the run"
    )
    parser.add_argument(
        "--report-dir", default="reports", metavar="DIR", help="report directory (reports/)"
    )
    parser.add_argument(
        "--only", metavar="ID,...", help="check IDs or groups to run, e.g. IDEM,AUTH-003"
    )
    parser.add_argument(
        "--min-coverage",
        metavar="SHARE",
        help="the gate fails when fewer of the profile's checks ran (default 50%%; 0 disables)",
    )
    parser.add_argument(
        "--check-timeout",
        metavar="DURATION",
        help="a check still unjudged after this is an error (default 300s; 90, 90s, 1m30s)",
    )
    parser.add_argument(
        "--max-duration",
        metavar="DURATION",
        help="stop the run after this; the rest are errors, reports written (default 30m)",
    )
    limits = parser.add_argument_group("request limits (a hostile target cannot hang the run)")
    limits.add_argument("--connect-timeout", metavar="S", help="seconds to connect (10)")
    limits.add_argument("--read-timeout", metavar="S", help="seconds between two bytes (30)")
    limits.add_argument("--total-timeout", metavar="S", help="seconds for a whole answer (60)")
    limits.add_argument(
        "--max-response-bytes", metavar="N", help="an answer's body past this is abandoned (1 MiB)"
    )
    parser.add_argument(
        "--reveal-secrets",
        action="store_true",
        help="print real tokens in the reports' curl commands (default: $PAYSUITE_TOKEN)",
    )
    parser.add_argument("--list", action="store_true", help="print the check catalog and exit")
    parser.add_argument("--seed", type=int, metavar="N", help="seed of the property tests")
    parser.set_defaults(func=run)


def pytest_args(args: argparse.Namespace) -> list[str]:
    from conformance.setup import LIMIT_OPTIONS

    """The pytest command line equivalent to ``args``."""
    argv = [
        "--pyargs",
        "conformance.suite",
        "-p",
        "no:terminal",
        "-p",
        "no:cacheprovider",
        "--profile",
        args.profile,
        "--report-dir",
        args.report_dir,
    ]
    if args.target:
        argv += ["--target", args.target]
    if args.config:
        argv += ["--config", args.config]
    if args.strict:
        argv.append("--conformance-strict")
    if args.only:
        argv += ["--only", args.only]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    if getattr(args, "min_coverage", None) is not None:
        argv += ["--min-coverage", str(args.min_coverage)]
    if getattr(args, "reveal_secrets", False):
        argv.append("--reveal-secrets")
    for name in ("check_timeout", "max_duration", *LIMIT_OPTIONS):
        if getattr(args, name, None) is not None:
            argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    return argv


def usage_error(args: argparse.Namespace) -> str | None:
    """Problems detectable before pytest starts, as one line (``None`` when all is well)."""
    from conformance.catalog import UnknownCheckError, parse_only
    from conformance.setup import (
        LIMIT_OPTIONS,
        Options,
        SetupError,
        check_target,
        parse_limits,
        parse_seconds,
        parse_share,
    )

    try:
        parse_only(args.only)
    except UnknownCheckError as exc:
        return str(exc)
    try:
        parse_share(getattr(args, "min_coverage", None))
        parse_seconds(getattr(args, "check_timeout", None), "--check-timeout", 1.0)
        parse_seconds(getattr(args, "max_duration", None), "--max-duration", 1.0)
        limits = parse_limits({name: getattr(args, name, None) for name in LIMIT_OPTIONS})
        check_target(Options(target=args.target, config=args.config, limits=limits))
    except SetupError as exc:
        return str(exc)
    return None


def run(args: argparse.Namespace) -> int:
    if args.list:
        from conformance.catalog import render_list

        try:
            print(render_list(), flush=True)
        except BrokenPipeError:  # `paysuite conform --list | head`: the reader left
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    problem = usage_error(args)
    if problem is not None:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2
    import tempfile
    from pathlib import Path

    import pytest

    import conformance

    # An empty ini of our own: the caller's pytest configuration (addopts, filterwarnings, ...)
    # must not change the verdict, and its terminal options would not parse without the
    # terminal plugin.
    with tempfile.TemporaryDirectory(prefix="paysuite-conform-ini-") as tmp:
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        rootdir = Path(conformance.__file__).resolve().parent
        argv = ["-c", str(ini), "--rootdir", str(rootdir), *pytest_args(args)]
        status = int(pytest.main(argv))
    if status in (0, 1, 2):
        return status
    print(f"{PROG}: pytest ended with status {status}", file=sys.stderr)
    return 2
