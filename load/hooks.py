"""Locust event listeners: paysuite's options, per-process set-up, and the end-of-run verdict.

Options are arguments or ``PAYSUITE_*`` variables; the web UI shows those that matter for the
chosen shape. The master (or single process) builds the run's plan at ``init`` and puts its
serialised form in the option ``paysuite_plan``, which Locust sends to every worker with its
spawn order; each worker reads it at ``test_start``.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

from locust import events
from locust.argument_parser import LocustArgumentParser
from locust.env import Environment
from locust.event import EventHook
from locust.runners import STATE_RUNNING, STATE_SPAWNING, MasterRunner, WorkerRunner

from load import ledger, loopback
from load.context import LoadProcess, of
from load.plan import (
    COMMON_OPTIONS,
    DEFAULT_SHAPE,
    LoadPlan,
    UsageError,
    plan_from_locust_options,
    read_plan,
    write_plan,
)
from load.records import LoadSummary
from load.shape_catalog import SHAPE_NAMES
from load.terminal import say
from load.timeline import TIMELINE

log = logging.getLogger("paysuite")
_Listener = TypeVar("_Listener", bound=Callable[..., None])


def _listener(hook: EventHook) -> Callable[[_Listener], _Listener]:
    """``hook.add_listener`` as a typed decorator (Locust's own is untyped)."""
    return cast(Callable[[_Listener], _Listener], hook.add_listener)


def selected_shape(argv: list[str]) -> str:
    """The shape named on the command line or in the environment, before Locust parses them
    (the locustfile exposes its classes; the web UI shows the options that matter for it)."""
    for index, arg in enumerate(argv):
        if arg == "--paysuite-shape" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--paysuite-shape="):
            return arg.split("=", 1)[1]
    return os.environ.get("PAYSUITE_SHAPE") or DEFAULT_SHAPE


def _shown_for(*shapes: str) -> bool:
    """Whether an option that only some shapes use belongs in the web UI of this run."""
    return "--class-picker" in sys.argv or selected_shape(sys.argv) in shapes


def _options() -> dict[str, tuple[str, dict[str, Any]]]:
    """``--paysuite-NAME`` -> its help and what differs from a text option read from
    ``PAYSUITE_NAME`` too (Locust's parser knows ``env_var`` and ``include_in_web_ui``)."""
    hidden: dict[str, Any] = {"include_in_web_ui": False}
    internal: dict[str, Any] = {**hidden, "env_var": None}
    shapes = list(SHAPE_NAMES)
    limit = {**hidden, "default": None}  # a safety net, not a load setting
    return {
        "config": ("target configuration YAML (the stub writes one as its credentials file)", {}),
        "shape": ("named load shape (default smoke)", {"choices": shapes}),
        # the web UI's own users, spawn rate and run time fields do what these three do
        "users": ("override the shape's user count (same as -u)", {**limit, "type": int}),
        "spawn-rate": ("override the shape's spawn rate (same as -r)", {**limit, "type": float}),
        "duration": ("override the shape's duration: 20, 20s, 1m30s, 1h (same as -t)", hidden),
        "step-duration": (
            "ramp: length of each step, e.g. 10s (at least 5 s)",
            {"include_in_web_ui": _shown_for("ramp")},
        ),
        "abort-on-fail": (
            "stop the run as soon as a threshold can no longer be met (exit status 1)",
            {"action": "store_true", "default": False},
        ),
        "max-requests": (
            "override the shape's request budget (hard stop)",
            {"type": int, "default": None},
        ),
        "mix": (
            "operation weights, e.g. cashin=3,cashout=2,find=3,events=1,events?filter=1",
            {"include_in_web_ui": _shown_for(*(n for n in shapes if n != "idempotency-storm"))},
        ),
        "pacing": ("override the wait: between:LO:HI, constant:S or throughput:TOTAL_RPS", {}),
        "slo": ("SLO override YAML", {}),
        "report-dir": (
            "where load.json and load.html go (default: beside --csv, else reports/)",
            {},
        ),
        "lifecycle-resolve": (
            "lifecycle: wait for the target to resolve (auto) or drive the customer",
            {"choices": ["", "auto", "driver"], "include_in_web_ui": _shown_for("lifecycle")},
        ),
        "reconcile-timeout": (
            "time budget of the reconciliation, e.g. 2m (default 120 s)",
            {"default": "120"},
        ),
        "reconcile-concurrency": (
            "parallel checks during the reconciliation",
            {"type": int, "default": 16},
        ),
        "connect-timeout-s": ("time to connect to the target (default 5s)", limit),
        "read-timeout-s": ("time any one socket read may wait (default 15s)", limit),
        "total-timeout-s": ("time one whole request may take, body included (default 30s)", limit),
        "max-response-bytes": (
            "largest response body read; a larger one is an error",
            {**limit, "type": int},
        ),
        "run-id": ("shared seed of the idempotency-storm keys", hidden),
        "plan-file": (
            "(internal) the load plan `paysuite load` wrote; the other options then do not apply",
            internal,
        ),
        "plan": ("(internal) the master's serialised load plan, sent to workers", internal),
    }


@_listener(events.init_command_line_parser)
def add_arguments(parser: LocustArgumentParser) -> None:
    for name, (text, extra) in _options().items():
        env_var = f"PAYSUITE_{name.upper().replace('-', '_')}"
        # ``env_var: None`` (the internal options): none, as configargparse reads it
        settings: dict[str, Any] = {"env_var": env_var, "default": "", "help": text, **extra}
        parser.add_argument(f"--paysuite-{name}", **settings)


def _common(process: LoadProcess, options: argparse.Namespace) -> dict[str, Any]:
    """Locust's -u, -r, -t that override the shape: as given at start (headless), or as the web
    UI's fields hold them now, unless still what paysuite filled in."""
    if getattr(options, "headless", False) or getattr(options, "autostart", False):
        return dict(process.common_given)
    values = {key: getattr(options, key, None) for key in COMMON_OPTIONS}
    return {k: v for k, v in values.items() if v is not None and v != process.prefilled.get(k)}


def _snapshot(process: LoadProcess, options: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """The options a plan is built from, to tell whether the web UI changed them since."""
    mine = {
        k: v for k, v in vars(options).items() if k.startswith("paysuite_") and k != "paysuite_plan"
    }
    common = {f"common:{key}": value for key, value in _common(process, options).items()}
    return tuple(sorted((key, repr(value)) for key, value in {**mine, **common}.items()))


def _publish(process: LoadProcess, options: argparse.Namespace | None, plan: LoadPlan) -> None:
    """Install the master's plan and put its one serialised form where workers receive it."""
    process.plan = plan
    if options is not None:
        options.paysuite_plan = write_plan(plan)


def _plan_from(environment: Environment, options: argparse.Namespace) -> LoadPlan:
    plan = plan_from_locust_options(options, environment.host, _common(of(environment), options))
    loopback.check_loopback(plan.target, warn=say)
    return plan


def _sigterm_as_ctrl_c() -> None:
    """A SIGTERM ends a run as a Ctrl-C does, with its verdict and reports. Locust 2.x installs
    its own SIGTERM handler only once a headless shape has finished, so until then SIGTERM
    killed the process with nothing written; its default (and the web UI's, which Locust
    replaces with its own) is left alone where something else already handles it."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.default_int_handler)


@_listener(events.init)
def on_init(environment: Environment, **_: Any) -> None:
    runner = environment.runner
    options = environment.parsed_options
    process = of(environment)
    ledger.install(environment)
    if isinstance(runner, WorkerRunner) or options is None:
        return
    _sigterm_as_ctrl_c()
    if not getattr(options, "paysuite_plan_file", ""):  # paysuite load's plan has them already
        process.common_given.update(
            {key: getattr(options, key) for key in COMMON_OPTIONS if getattr(options, key, None)}
        )
    try:
        plan = _plan_from(environment, options)
    except (UsageError, ValueError, OSError) as exc:
        print(f"paysuite: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    if not environment.host:
        environment.host = plan.target.base_url
    shape = plan.shape
    if not options.headless and not getattr(options, "autostart", False):
        # the web UI's users, spawn rate and run time fields start with the shape's own values
        own = (shape.users, shape.spawn_rate, int(shape.duration_s))
        for key, value in zip(COMMON_OPTIONS, own, strict=True):
            if getattr(options, key, None) is None:
                setattr(options, key, value)
                process.prefilled[key] = value
    process.built_from = _snapshot(process, options)
    _publish(process, options, plan)
    if not getattr(options, "paysuite_plan_file", ""):  # paysuite load said it already
        say(
            f"shape {shape.name}: {shape.outline()}, at most {shape.duration_s:g} s / "
            f"{shape.max_requests} requests"
        )


def _master_plan(environment: Environment) -> LoadPlan:
    """The plan for this test: as built at init, unless the web UI changed the options since
    (then built again from them), with the shape the class picker chose."""
    options = environment.parsed_options
    process = of(environment)
    plan = process.current_plan()
    if options is not None and _snapshot(process, options) != process.built_from:
        try:
            plan = _plan_from(environment, options)
            process.built_from = _snapshot(process, options)
        except (UsageError, ValueError, OSError) as exc:
            log.error("paysuite: options not applied, the previous plan stays: %s", exc)
    shape_name = getattr(environment.shape_class, "shape_name", "")
    return plan.with_shape(shape_name) if shape_name else plan


@_listener(events.test_start)
def on_test_start(environment: Environment, **_: Any) -> None:
    options = environment.parsed_options
    process = of(environment)
    if isinstance(environment.runner, WorkerRunner):
        sent = str(getattr(options, "paysuite_plan", "") or "")
        if sent != process.read:  # read once per process (again only if the master sent another)
            process.plan, process.read = read_plan(sent), sent
    else:
        ledger.LEDGER.reset()
        _publish(process, options, _master_plan(environment))
    run = process.start(int(getattr(environment.runner, "worker_index", 0) or 0))
    if not isinstance(environment.runner, WorkerRunner):
        TIMELINE.start(environment, run.plan)


@_listener(events.test_stop)
def on_test_stop(environment: Environment, **_: Any) -> None:
    runner = environment.runner
    if not isinstance(runner, WorkerRunner):
        TIMELINE.stop()  # the timeline ends with the load, not with the reconciliation
    if runner is not None and not isinstance(runner, MasterRunner):
        # before a worker reports itself stopped: its master's ledger is then complete
        ledger.LEDGER.flush(environment)


@_listener(events.quitting)
def on_quitting(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    if of(environment).run is None:
        log.warning("paysuite: no test ran; no verdict")
        return
    runner = environment.runner
    if runner is not None and runner.state in (STATE_SPAWNING, STATE_RUNNING):
        # Locust fires quitting before it stops its runner (a Ctrl-C of the web UI during a
        # test): stop the users (test_stop: the workers' last ledger batches) so that no
        # request is sent during the reconciliation
        runner.stop()
    ledger.LEDGER.flush(environment)
    from load.finalize import finalize

    try:
        summary = finalize(environment, environment.shape_class)
    except Exception as exc:  # a broken report must not look like a pass
        log.exception("paysuite: could not finalize the run")
        print(f"paysuite: could not finalize the run: {exc}", file=sys.stderr, flush=True)
        environment.process_exit_code = 2
        return
    atexit.register(_render_html, of(environment), summary)


def _render_html(process: LoadProcess, summary: LoadSummary) -> None:
    """After Locust closed its CSV files (atexit): draw load.html from the run's summary (and
    the complete history, when it has no timeline). The only place a run's load.html is drawn
    (``paysuite load`` and a plain Locust run alike)."""
    from load.report import render_html

    try:
        render_html(summary, process.current_plan().report_dir)
    except Exception:  # the summary is a convenience; load.json has the verdict
        log.exception("paysuite: could not render load.html")
