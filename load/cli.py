"""``paysuite load``: its flags (a ``paysuite_core.cli_flags`` table), and the command that turns
them into a plan and runs it (nothing heavy imported at registration)."""

from __future__ import annotations

import argparse
from typing import Any

from load.shape_catalog import SHAPE_NAMES  # pure data: cheap to import at registration
from paysuite_core.cli_flags import TLS, Flag, add_command

FLAGS = (
    Flag("--target", "base URL of the target (overrides the config's base_url)"),
    Flag("--config", "target configuration YAML (applications, numbers, ...)"),
    Flag("--shape", "load shape (default smoke; docs/load.md)", choices=SHAPE_NAMES),
    Flag("--users", "override the shape's user count", type=int),
    Flag("--spawn-rate", "override the shape's spawn rate", type=float),
    Flag("--duration", "override the shape's duration: 20, 20s, 1m30s, 1h (Locust's format)"),
    Flag(
        "--step-duration",
        "ramp: length of each step (default: 10 s for 120 s, scaled, at least 5 s)",
    ),
    Flag("--max-requests", "override the request budget (hard stop)", type=int),
    Flag("--workers", "local Locust workers (0: one process)", type=int, default=0),
    Flag("--report-dir", "where reports go (default reports/)", default="reports"),
    Flag("--slo", "SLO override YAML (docs/load.md)"),
    Flag("--mix", "operation weights, e.g. cashin=3,cashout=2,find=3,events=1"),
    Flag("--pacing", "override the wait: between:LO:HI, constant:S or throughput:TOTAL_RPS"),
    Flag(
        "--lifecycle-resolve",
        "lifecycle: let the target resolve (auto) or drive the customer (driver)",
        choices=("auto", "driver"),
    ),
    Flag(
        "--abort-on-fail",
        "stop the run as soon as a threshold can no longer be met (docs/load.md); exit 1",
        switch=True,
    ),
    Flag("--reconcile-timeout", "reconciliation time budget (default 120s)", default="120"),
    Flag("--connect-timeout", "time to connect to the target (default 5s)"),
    Flag("--read-timeout", "time any one socket read may wait (default 15s)"),
    Flag("--total-timeout", "time one whole request may take (default 30s)"),
    Flag(
        "--max-response-bytes",
        "largest response body read (default 4 MiB); a larger one is an error",
        type=int,
    ),
    Flag(
        "--quiet",
        "no Locust statistics table (neither every few seconds nor at the end)",
        switch=True,
    ),
    Flag(
        "--webhooks",
        "receive the target's webhooks during the run; the reconciliation then also checks "
        "that every acknowledged create's events were delivered (needs the config's webhooks)",
        switch=True,
    ),
    *TLS,
)


def _load(args: argparse.Namespace) -> int:
    """``paysuite load``: the arguments' plan, run by ``load.runner.run`` (a ``UsageError``:
    one line, exit status 2); the verdict was the last line printed."""
    from load.plan import plan_from_args
    from load.runner import run

    return run(plan_from_args(args)).exit_code


def register(subparsers: Any) -> None:
    add_command(
        subparsers,
        "load",
        _load,
        FLAGS,
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
