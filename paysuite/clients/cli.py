"""``paysuite clients [--config FILE]``: the published SDKs against a target, as a matrix.

Without ``--config`` the bundled stub is started on a free loopback port in a temporary folder
and stopped afterwards. Exit status: 0 when every SDK that could run worked (a skipped SDK is
not a failure: it was not available here), 1 when any operation of any SDK broke, 2 for a usage
error (an unreadable configuration, no read-write application, no usable customer number).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

SDK_NAMES = ("paypack-py", "paypack-js")


class UsageError(ValueError):
    """The target cannot be driven as configured; the message says what to change."""


def register(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "clients",
        help="run the live service's published SDKs against a target and print what works",
        description="Run paypack-py and (when node and npm exist) paypack-js, unchanged, "
        "against a target (the bundled stub by default) and print an SDK x operation matrix.",
    )
    parser.add_argument("--config", metavar="FILE", help="target configuration (default: "
                        "start the bundled stub)")  # fmt: skip
    parser.add_argument(
        "--sdk", action="append", choices=SDK_NAMES, help="run only this SDK (repeatable)"
    )
    parser.add_argument(
        "--cache-dir", metavar="DIR", help="where SDKs are installed on first use "
        "(default $PAYSUITE_CACHE_DIR, else ~/.cache/paysuite)",
    )  # fmt: skip
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.set_defaults(func=run_clients)
    return parser


def make_job(config: Any) -> dict[str, Any]:
    """What every driver needs: the base URL, one read-write application, a customer number
    the target accepts, and an amount paypack-js does not refuse (it wants at least 100)."""
    apps = config.applications_with("read-write")
    if not apps:
        raise UsageError("the target configuration has no read-write application; the SDKs "
                         "need one that may cashin and cashout")  # fmt: skip
    pattern = re.compile(config.effective_number_pattern)
    number = next((n for n in config.numbers if pattern.fullmatch(n)), None)
    if number is None:
        number = f"078{random.randrange(10**7):07d}"
        if not pattern.fullmatch(number):
            raise UsageError("no customer number: add `numbers:` to the target configuration")
    amount = max(config.amount.min, 100)
    if amount > config.amount.max:
        raise UsageError(f"paypack-js refuses amounts below 100; the target allows at most "
                         f"{config.amount.max}")  # fmt: skip
    amount = int(amount) if float(amount).is_integer() else amount
    return {
        "base_url": config.base_url,
        "client_id": apps[0].client_id,
        "client_secret": apps[0].client_secret,
        "number": number,
        "amount": amount,
    }


def run_clients(args: argparse.Namespace) -> int:
    from paysuite.clients import matrix
    from paysuite.clients.cache import default_cache_dir
    from paysuite_core.target_config import TargetConfigError, load_target_config

    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    with ExitStack() as stack:
        try:
            if args.config:
                config = load_target_config(args.config)
            else:
                from paysuite_core.launcher import running_stub

                workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="paysuite-"))
                config = stack.enter_context(running_stub(Path(workdir))).config()
            job = make_job(config)
        except (TargetConfigError, UsageError) as exc:
            print(f"paysuite clients: {exc}", file=sys.stderr)
            return 2
        columns = [matrix.RUNNERS[name](job, cache_dir) for name in args.sdk or SDK_NAMES]
    print(matrix.render(columns, job["base_url"]))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [
                    {"sdk": c.sdk, "version": c.version, "skip": c.skip, "cells": c.cells}
                    for c in columns
                ],  # fmt: skip
                indent=2,
            ),
            encoding="utf-8",
        )
    return 1 if any(column.broken for column in columns) else 0
