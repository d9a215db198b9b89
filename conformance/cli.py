"""``paysuite conform``: its flags (generated from ``conformance.options.FLAGS``), parsed once
into ``Options`` for ``conformance.runner``.

Registration imports nothing heavy; ``--list`` needs only the catalog; pytest, httpx and
schemathesis load when checks run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from conformance.options import FLAGS
from paysuite_core.cli_flags import add_command


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    add_command(
        subparsers,
        "conform",
        run,
        FLAGS,
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


def run(args: argparse.Namespace) -> int:
    if args.list:
        from conformance.catalog import render_list

        try:
            print(render_list(), flush=True)
        except BrokenPipeError:  # `paysuite conform --list | head`: the reader left
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    from conformance.options import Options
    from conformance.runner import run as run_conformance

    return run_conformance(Options.from_args(args))  # a bad value: UsageError, exit status 2
