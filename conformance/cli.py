"""``paysuite conform``: its arguments, parsed once into ``Options`` for ``conformance.runner``.

``paysuite conform --target URL --config FILE`` runs what ``pytest --pyargs conformance.suite
--target URL --config FILE`` runs, with pytest's own terminal output replaced by the suite's
progress lines and scorecard. Registration imports nothing heavy; ``--list`` needs only the
catalog; pytest, httpx and schemathesis load when checks run.
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
    parser.add_argument(
        "--max-throttle-wait",
        metavar="DURATION",
        help="the run's total wait for a target that answers 429 (Retry-After honoured); past "
        "it a throttled check is an error (default 120s; 0: never wait)",
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
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print a progress line per check and the whole scorecard (default: the problems, "
        "the counts, the reports and the verdict)",
    )
    parser.add_argument("--list", action="store_true", help="print the check catalog and exit")
    parser.add_argument("--seed", type=int, metavar="N", help="seed of the property tests")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        from conformance.catalog import render_list

        try:
            print(render_list(), flush=True)
        except BrokenPipeError:  # `paysuite conform --list | head`: the reader left
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    from conformance.options import Options, SetupError
    from conformance.runner import run as run_conformance

    try:
        options = Options.from_args(args)
    except SetupError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    return run_conformance(options)
