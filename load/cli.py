"""``paysuite load``: its arguments, and the command that turns them into a plan and runs it
(nothing heavy imported at registration)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from load.shape_catalog import SHAPE_NAMES  # pure data: cheap to import at registration
from paysuite_core.tls import add_arguments as add_tls_arguments


def _load(args: argparse.Namespace) -> int:
    """``paysuite load``: the arguments' plan, run by ``load.runner.run``."""
    from load.plan import UsageError, plan_from_args
    from load.runner import run

    try:
        result = run(plan_from_args(args))
    except UsageError as exc:
        print(f"paysuite load: {exc}", file=sys.stderr, flush=True)
        return 2
    return result.exit_code  # the verdict was the last line printed


class _RemovedProfile(argparse.Action):
    """``--profile``, the old name of ``--shape``, is gone: in paysuite a *profile* is only
    conformance's ``seed``/``reference``. It is still recognised, so that an old command line
    gets one line naming the new option (exit 2) instead of argparse's usage dump."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs="?", default=None, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        if isinstance(values, str) and values in SHAPE_NAMES:
            instead = f"--shape {values}"
        else:
            instead = f"--shape NAME ({', '.join(SHAPE_NAMES)})"
        parser.exit(2, f"{parser.prog}: --profile was removed; use {instead}\n")


def register(subparsers: Any) -> None:
    load = subparsers.add_parser(
        "load",
        help="run a Locust load shape with SLO gates and a no-loss reconciliation",
        description=(
            "Run a named load shape against a target (or, without --config, against the "
            "bundled stub). Durations take Locust's format: 20, 20s, 1m30s, 1h. Loopback targets "
            "only unless PAYSUITE_ALLOW_REMOTE_TARGET=1."
        ),
        epilog=(
            "exit status: 0 every threshold met and nothing lost; 1 a threshold breached (or "
            "the run aborted by --abort-on-fail); 2 usage or configuration error, unreachable "
            "target, or no verdict; 3 the reconciliation failed: a create lost, mismatched, "
            "duplicated or left unchecked (3 wins over 1 when both happen); 130 interrupted "
            "before the shape's end (Ctrl-C, SIGTERM), reports written, nothing failed in "
            "what ran."
        ),
    )
    load.add_argument("--target", help="base URL of the target (overrides the config's base_url)")
    load.add_argument("--config", help="target configuration YAML (applications, numbers, ...)")
    load.add_argument(
        "--shape", choices=SHAPE_NAMES, help="load shape (default smoke; docs/load.md)"
    )
    load.add_argument("--profile", action=_RemovedProfile, help=argparse.SUPPRESS)
    load.add_argument("--users", type=int, help="override the shape's user count")
    load.add_argument("--spawn-rate", type=float, help="override the shape's spawn rate")
    load.add_argument(
        "--duration", help="override the shape's duration: 20, 20s, 1m30s, 1h (Locust's format)"
    )
    load.add_argument(
        "--step-duration",
        help="ramp: length of each step (default: 10 s for 120 s, scaled, at least 5 s)",
    )
    load.add_argument("--max-requests", type=int, help="override the request budget (hard stop)")
    load.add_argument(
        "--workers", type=int, default=0, help="local Locust workers (0: one process)"
    )
    load.add_argument("--report-dir", default="reports", help="where reports go (default reports/)")
    load.add_argument("--slo", help="SLO override YAML (docs/load.md)")
    load.add_argument("--mix", help="operation weights, e.g. cashin=3,cashout=2,find=3,events=1")
    load.add_argument(
        "--pacing", help="override the wait: between:LO:HI, constant:S or throughput:TOTAL_RPS"
    )
    load.add_argument(
        "--lifecycle-resolve",
        choices=("auto", "driver"),
        help="lifecycle: let the target resolve (auto) or drive the customer (driver)",
    )
    load.add_argument(
        "--abort-on-fail",
        action="store_true",
        help="stop the run as soon as a threshold can no longer be met (docs/load.md); exit 1",
    )
    load.add_argument(
        "--reconcile-timeout", default="120", help="reconciliation time budget (default 120s)"
    )
    load.add_argument("--connect-timeout", help="time to connect to the target (default 5s)")
    load.add_argument("--read-timeout", help="time any one socket read may wait (default 15s)")
    load.add_argument("--total-timeout", help="time one whole request may take (default 30s)")
    load.add_argument(
        "--max-response-bytes",
        type=int,
        help="largest response body read (default 4 MiB); a larger one is an error",
    )
    load.add_argument(
        "--quiet",
        action="store_true",
        help="no Locust statistics table (neither every few seconds nor at the end)",
    )
    load.add_argument(
        "--webhooks",
        action="store_true",
        help="receive the target's webhooks during the run; the reconciliation then also checks "
        "that every acknowledged create's events were delivered (needs the config's webhooks)",
    )
    add_tls_arguments(load)
    load.set_defaults(func=_load)
