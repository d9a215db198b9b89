"""Locust event listeners: custom arguments, per-process set-up, and the end-of-run verdict.

Imported by the locustfile; every listener is registered once at import. Options can be given as
command-line arguments or environment variables (``PAYSUITE_CONFIG``, ``PAYSUITE_PROFILE``, ...),
and appear in Locust's web UI.
"""

from __future__ import annotations

import atexit
import json
import logging
import sys
import uuid
from typing import Any

from locust import events
from locust.runners import WorkerRunner

from load import context as run_context
from load import ledger, loopback
from load.profiles import PROFILES

log = logging.getLogger("paysuite")


@events.init_command_line_parser.add_listener
def add_arguments(parser: Any) -> None:
    group = parser  # Locust's parser: its add_argument knows include_in_web_ui
    group.add_argument(
        "--paysuite-config",
        env_var="PAYSUITE_CONFIG",
        default="",
        help="target configuration YAML (the stub writes one as its credentials file)",
    )
    group.add_argument(
        "--paysuite-profile",
        env_var="PAYSUITE_PROFILE",
        default="smoke",
        choices=list(PROFILES),
        help="named load profile",
    )
    group.add_argument(
        "--paysuite-users",
        env_var="PAYSUITE_USERS",
        type=int,
        default=None,
        help="override the profile's user count",
    )
    group.add_argument(
        "--paysuite-spawn-rate",
        env_var="PAYSUITE_SPAWN_RATE",
        type=float,
        default=None,
        help="override the profile's spawn rate",
    )
    group.add_argument(
        "--paysuite-duration",
        env_var="PAYSUITE_DURATION",
        type=float,
        default=None,
        help="override the profile's duration (seconds)",
    )
    group.add_argument(
        "--paysuite-max-requests",
        env_var="PAYSUITE_MAX_REQUESTS",
        type=int,
        default=None,
        help="override the profile's request budget (hard stop)",
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
        "--paysuite-config-json",
        default="",
        include_in_web_ui=False,
        help="(internal) the master's target configuration, sent to workers",
    )


@events.init.add_listener
def on_init(environment: Any, **_: Any) -> None:
    runner = environment.runner
    options = environment.parsed_options
    ledger.install(environment)
    if isinstance(runner, WorkerRunner) or options is None:
        return
    try:
        config = run_context.load_config_from_options(options, environment.host)
        loopback.check_loopback(config, warn=lambda line: print(f"paysuite: {line}", flush=True))
    except (ValueError, OSError) as exc:
        print(f"paysuite: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    if not environment.host:
        environment.host = config.base_url
    # workers get these with their spawn order: the same target and storm keys everywhere
    options.paysuite_config_json = json.dumps(config.to_dict())
    if not options.paysuite_run_id:
        options.paysuite_run_id = uuid.uuid4().hex[:8]
    if runner is not None:
        atexit.register(_render_html, options)


@events.test_start.add_listener
def on_test_start(environment: Any, **_: Any) -> None:
    if not isinstance(environment.runner, WorkerRunner):
        ledger.LEDGER.reset()
        shape = environment.shape_class
        if shape is not None and getattr(shape, "profile_name", ""):
            environment.parsed_options.paysuite_profile = shape.profile_name
    run_context.build_context(environment)
    shape = environment.shape_class
    if isinstance(environment.runner, WorkerRunner):
        return
    if shape is not None and hasattr(shape, "slo_overrides"):
        slo_path = run_context.option(environment.parsed_options, "paysuite_slo")
        if slo_path:
            from load.slo import load_slo_file

            shape.slo_overrides = load_slo_file(slo_path)


@events.quitting.add_listener
def on_quitting(environment: Any, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    if run_context._CURRENT is None:
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


def _render_html(options: Any) -> None:
    """After Locust closed its CSV files (atexit): draw load.html from the complete history."""
    from load.finalize import report_dir_for
    from load.report import render_html

    try:
        render_html(report_dir_for(options))
    except Exception:  # noqa: BLE001 - the summary is a convenience; load.json has the verdict
        log.exception("paysuite: could not render load.html")
