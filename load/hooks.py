"""Locust event listeners: custom arguments, per-process set-up, and the end-of-run verdict.

Imported by the locustfile; every listener is registered once at import. Options can be given as
command-line arguments or environment variables (``PAYSUITE_CONFIG``, ``PAYSUITE_SHAPE``, ...),
and appear in Locust's web UI.

The run's plan (``load.plan``) is made once per process: the master (or single process) builds it
at ``init`` from ``paysuite load``'s plan file or from these options, and puts its serialised form
in the option ``paysuite_plan``, which Locust sends to every worker with its spawn order; each
worker reads it at ``test_start``.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import sys
from typing import Any

from locust import events
from locust.argument_parser import LocustArgumentParser
from locust.env import Environment
from locust.runners import WorkerRunner

from load import context as run_context
from load import ledger, loopback
from load.plan import LoadPlan, UsageError, plan_from_locust_options, read_plan, write_plan
from load.shape_catalog import SHAPE_NAMES

log = logging.getLogger("paysuite")


@events.init_command_line_parser.add_listener
def add_arguments(parser: LocustArgumentParser) -> None:
    group = parser  # Locust's parser: its add_argument knows include_in_web_ui and env_var
    group.add_argument(
        "--paysuite-config",
        env_var="PAYSUITE_CONFIG",
        default="",
        help="target configuration YAML (the stub writes one as its credentials file)",
    )
    group.add_argument(
        "--paysuite-shape",
        env_var="PAYSUITE_SHAPE",
        default="",
        choices=list(SHAPE_NAMES),
        help="named load shape (default smoke)",
    )
    group.add_argument(
        "--paysuite-profile",
        env_var="PAYSUITE_PROFILE",
        default="",
        choices=list(SHAPE_NAMES),
        help="old name of --paysuite-shape",
    )
    group.add_argument(
        "--paysuite-users",
        env_var="PAYSUITE_USERS",
        type=int,
        default=None,
        help="override the shape's user count",
    )
    group.add_argument(
        "--paysuite-spawn-rate",
        env_var="PAYSUITE_SPAWN_RATE",
        type=float,
        default=None,
        help="override the shape's spawn rate",
    )
    group.add_argument(
        "--paysuite-duration",
        env_var="PAYSUITE_DURATION",
        type=float,
        default=None,
        help="override the shape's duration (seconds)",
    )
    group.add_argument(
        "--paysuite-max-requests",
        env_var="PAYSUITE_MAX_REQUESTS",
        type=int,
        default=None,
        help="override the shape's request budget (hard stop)",
    )
    group.add_argument(
        "--paysuite-mix",
        env_var="PAYSUITE_MIX",
        default="",
        help="operation weights, e.g. cashin=3,cashout=2,find=3,events=1,events?filter=1",
    )
    group.add_argument(
        "--paysuite-pacing",
        env_var="PAYSUITE_PACING",
        default="",
        help="override the wait: between:LO:HI, constant:S or throughput:TOTAL_RPS",
    )
    group.add_argument(
        "--paysuite-slo", env_var="PAYSUITE_SLO", default="", help="SLO override YAML"
    )
    group.add_argument(
        "--paysuite-report-dir",
        env_var="PAYSUITE_REPORT_DIR",
        default="",
        help="where load.json and load.html go (default: beside --csv, else reports/)",
    )
    group.add_argument(
        "--paysuite-lifecycle-resolve",
        env_var="PAYSUITE_LIFECYCLE_RESOLVE",
        default="",
        choices=["", "auto", "driver"],
        help="lifecycle: wait for the target to resolve (auto) or drive the customer",
    )
    group.add_argument(
        "--paysuite-reconcile-timeout",
        env_var="PAYSUITE_RECONCILE_TIMEOUT",
        type=float,
        default=120.0,
        help="time budget of the reconciliation (s)",
    )
    group.add_argument(
        "--paysuite-reconcile-concurrency",
        type=int,
        default=16,
        env_var="PAYSUITE_RECONCILE_CONCURRENCY",
        help="parallel checks during the reconciliation",
    )
    for name, kind, text in (
        ("connect-timeout-s", float, "seconds to connect to the target"),
        ("read-timeout-s", float, "seconds any one socket read may wait"),
        ("total-timeout-s", float, "seconds one whole request may take, body included"),
        ("max-response-bytes", int, "largest response body read; a larger one is an error"),
    ):
        group.add_argument(
            f"--paysuite-{name}",
            env_var=f"PAYSUITE_{name.upper().replace('-', '_')}",
            type=kind,
            default=None,
            help=text,
        )
    group.add_argument(
        "--paysuite-run-id",
        env_var="PAYSUITE_RUN_ID",
        default="",
        include_in_web_ui=False,
        help="shared seed of the idempotency-storm keys",
    )
    group.add_argument(
        "--paysuite-plan-file",
        default="",
        include_in_web_ui=False,
        help="(internal) the load plan `paysuite load` wrote; the other options then do not apply",
    )
    group.add_argument(
        "--paysuite-plan",
        default="",
        include_in_web_ui=False,
        help="(internal) the master's serialised load plan, sent to workers",
    )


#: the paysuite options the master's plan was built from (a change: the web UI edited them)
_BUILT_FROM: tuple[tuple[str, str], ...] = ()
#: the serialised plan this worker installed last
_READ: str = ""


def _snapshot(options: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            (key, repr(value))
            for key, value in vars(options).items()
            if key.startswith("paysuite_") and key != "paysuite_plan"
        )
    )


def _publish(options: argparse.Namespace, plan: LoadPlan) -> None:
    """Install the master's plan and put its one serialised form where workers receive it."""
    run_context.install_plan(plan)
    options.paysuite_plan = write_plan(plan)


def _say(line: str) -> None:
    print(f"paysuite: {line}", flush=True)


@events.init.add_listener
def on_init(environment: Environment, **_: Any) -> None:
    global _BUILT_FROM
    runner = environment.runner
    options = environment.parsed_options
    ledger.install(environment)
    if isinstance(runner, WorkerRunner) or options is None:
        return
    try:
        plan = plan_from_locust_options(options, environment.host)
        loopback.check_loopback(plan.target, warn=_say)
    except (UsageError, ValueError, OSError) as exc:
        print(f"paysuite: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    if not environment.host:
        environment.host = plan.target.base_url
    _BUILT_FROM = _snapshot(options)
    _publish(options, plan)
    if runner is not None:
        atexit.register(_render_html)


def _master_plan(environment: Environment) -> LoadPlan:
    """The plan for this test: as built at init, unless the web UI changed the options since
    (then built again from them), with the shape the class picker chose."""
    global _BUILT_FROM
    options = environment.parsed_options
    plan = run_context.current_plan()
    if options is not None and _snapshot(options) != _BUILT_FROM:
        try:
            plan = plan_from_locust_options(options, environment.host)
            loopback.check_loopback(plan.target, warn=_say)
            _BUILT_FROM = _snapshot(options)
        except (UsageError, ValueError, OSError) as exc:
            log.error("paysuite: options not applied, the previous plan stays: %s", exc)
    shape_name = getattr(environment.shape_class, "shape_name", "")
    return plan.with_shape(shape_name) if shape_name else plan


@events.test_start.add_listener
def on_test_start(environment: Environment, **_: Any) -> None:
    global _READ
    options = environment.parsed_options
    if isinstance(environment.runner, WorkerRunner):
        sent = str(getattr(options, "paysuite_plan", "") or "")
        if sent != _READ:  # read once per process (again only if the master sent another)
            run_context.install_plan(read_plan(sent))
            _READ = sent
    else:
        ledger.LEDGER.reset()
        plan = _master_plan(environment)
        if options is not None:
            _publish(options, plan)
        else:
            run_context.install_plan(plan)
    worker_index = int(getattr(environment.runner, "worker_index", 0) or 0)
    run_context.build_context(worker_index)


@events.quitting.add_listener
def on_quitting(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    if not run_context.has_context():
        log.warning("paysuite: no test ran; no verdict")
        return
    ledger.LEDGER.flush(environment)
    from load.finalize import finalize

    try:
        finalize(environment, environment.shape_class)
    except Exception as exc:  # noqa: BLE001 - a broken report must not look like a pass
        log.exception("paysuite: could not finalize the run")
        print(f"paysuite: could not finalize the run: {exc}", file=sys.stderr, flush=True)
        environment.process_exit_code = 2


def _render_html() -> None:
    """After Locust closed its CSV files (atexit): draw load.html from the complete history.
    The only place load.html is drawn (``paysuite load`` and a plain Locust run alike)."""
    from load.report import render_html

    try:
        render_html(run_context.current_plan().report_dir)
    except Exception:  # noqa: BLE001 - the summary is a convenience; load.json has the verdict
        log.exception("paysuite: could not render load.html")
