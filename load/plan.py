"""A load run's plan: everything a run needs, parsed and validated once, handed down whole.

``paysuite load``, ``paysuite demo``, ``paysuite bench`` and a plain ``locust -f
load/locustfile.py`` all build their ``LoadPlan`` through ``build_plan`` (from the command's
arguments, from keyword arguments, or from Locust's parsed options), so the rules are the same
whoever starts the run: the target configuration is read and checked once, the SLO file is read
once, the shape's overrides are applied once.

Between processes the plan travels as one serialised form: ``write_plan`` writes it and
``read_plan`` reads it, once per process. ``paysuite load`` hands it to the Locust master as a
file (``--paysuite-plan-file``, not on the command line: it holds the applications' secrets);
the master puts it in its custom option ``paysuite_plan``, which Locust sends to every worker with
its spawn order, so a worker (here or on another machine) needs paysuite installed and nothing
else. Nothing here imports Locust or gevent.
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from load.limits import ClientLimits
from load.shape_catalog import (
    SHAPE_NAMES,
    Pacing,
    Shape,
    Thresholds,
    get_shape,
    parse_mix,
    parse_pacing,
)
from load.slo import SLOError, SLORules, load_slo_file, resolve_slo
from load.timespan import parse_duration
from paysuite_core.target_config import (
    TargetConfig,
    TargetConfigError,
    load_target_config,
    parse_target_config,
)

PLAN_SCHEMA = "paysuite-load-plan/1"
DEFAULT_SHAPE = "smoke"
DEFAULT_REPORT_DIR = "reports"
LIFECYCLE_MODES = ("auto", "driver")
#: customer drivers that can answer for a customer: the lifecycle shape drives them by default
_DRIVABLE = ("sandbox", "magic-numbers")


class UsageError(Exception):
    """Exit status 2: the message is the one-line reason."""


def new_run_id() -> str:
    """The shared seed of a run's idempotency-storm keys."""
    return uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class ShapeOverrides:
    """What the options change in the named shape (kept apart, so another shape picked in
    Locust's web UI gets the same changes)."""

    users: int | None = None
    spawn_rate: float | None = None
    duration_s: float | None = None
    max_requests: int | None = None
    mix: dict[str, float] | None = None
    pacing: Pacing | None = None
    #: ramp only: the step length
    step_s: float | None = None

    def apply(self, shape: Shape) -> Shape:
        return shape.with_overrides(
            step_s=self.step_s,
            users=self.users,
            spawn_rate=self.spawn_rate,
            duration_s=self.duration_s,
            max_requests=self.max_requests,
            mix=self.mix,
            pacing=self.pacing,
        )


@dataclass(frozen=True)
class LoadPlan:
    """One load run, parsed. ``config`` is ``None`` only before the bundled stub is started
    (``load.runner.run`` starts it and fills it in)."""

    shape_name: str
    config: TargetConfig | None
    report_dir: Path
    overrides: ShapeOverrides = ShapeOverrides()
    slo: SLORules = SLORules()
    limits: ClientLimits = ClientLimits()
    workers: int = 0
    #: "auto" (the target resolves), "driver" (drive the customer) or "" (decided by the config)
    lifecycle_resolve: str = ""
    reconcile_timeout_s: float = 120.0
    reconcile_concurrency: int = 16
    run_id: str = field(default_factory=new_run_id)
    #: no Locust statistics table at all (``--quiet``)
    quiet: bool = False
    #: Locust's table once, at the end, not every few seconds (``paysuite demo``'s default)
    summary_only: bool = False
    #: stop the run as soon as a threshold can no longer be met (``load.slo.decided_early``)
    abort_on_fail: bool = False
    #: receive the target's webhooks during the run and reconcile them (``load.webhook_journal``)
    webhooks: bool = False

    @cached_property
    def shape(self) -> Shape:
        """The named shape with the overrides applied."""
        return self.overrides.apply(get_shape(self.shape_name))

    @property
    def target(self) -> TargetConfig:
        """The target configuration (a plan handed to Locust always has one)."""
        if self.config is None:
            raise RuntimeError("paysuite: this load plan has no target configuration yet")
        return self.config

    @property
    def lifecycle_mode(self) -> str:
        """``auto`` or ``driver``: as asked, else ``driver`` when the target's customer driver
        can answer for a customer."""
        if self.lifecycle_resolve:
            return self.lifecycle_resolve
        return "driver" if self.target.customer.driver in _DRIVABLE else "auto"

    @property
    def thresholds(self) -> Thresholds:
        """The SLO thresholds of this run: the shape's built-in ones under the file's rules."""
        return resolve_slo(self.shape, self.slo)

    def with_shape(self, name: str) -> LoadPlan:
        """The same run with another shape (Locust's ``--class-picker``), same overrides."""
        return self if name == self.shape_name else replace(self, shape_name=name)

    def for_target(self, config: TargetConfig, *, lifecycle_resolve: str = "") -> LoadPlan:
        """The plan against ``config`` (the bundled stub's, once started)."""
        return replace(
            self, config=config, lifecycle_resolve=self.lifecycle_resolve or lifecycle_resolve
        )


def _positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"--{name.replace('_', '-')} must be greater than 0")


def _duration(name: str, value: str | float | None) -> float | None:
    """A duration option in Locust's format (``20``, ``20s``, ``1m30s``), in seconds."""
    if value is None or value == "":
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"--{name.replace('_', '-')}: {exc}") from None


def _limit(name: str, value: float | None, default: float) -> float:
    """A client limit as given, or its default when not given; 0 or less is a usage error
    (not a silent default: ``--max-response-bytes 0`` does not mean 4 MiB)."""
    if value is None:
        return default
    if value <= 0:
        raise UsageError(f"--{name.replace('_', '-')}: must be more than 0, got {value:g}")
    return value


def build_plan(
    *,
    shape: str = DEFAULT_SHAPE,
    config: Path | str | TargetConfig | None = None,
    target: str | None = None,
    users: int | None = None,
    spawn_rate: float | None = None,
    duration: str | float | None = None,
    step_duration: str | float | None = None,
    max_requests: int | None = None,
    workers: int = 0,
    report_dir: Path | str = DEFAULT_REPORT_DIR,
    slo: Path | str | SLORules | None = None,
    mix: str = "",
    pacing: str = "",
    lifecycle_resolve: str = "",
    reconcile_timeout: str | float = 120.0,
    reconcile_concurrency: int = 16,
    limits: ClientLimits | None = None,
    run_id: str = "",
    quiet: bool = False,
    abort_on_fail: bool = False,
    webhooks: bool = False,
    summary_only: bool = False,
) -> LoadPlan:
    """The one way to make a ``LoadPlan``: validates every input, reads the target configuration
    file and the SLO file (once each). ``config=None`` means the bundled stub (``target`` then
    makes no sense). Durations are seconds or strings in Locust's format (``20s``, ``1m30s``).
    Raises ``UsageError`` with a one-line reason."""
    try:
        get_shape(shape)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    duration = _duration("duration", duration)
    step_s = _duration("step_duration", step_duration)
    reconcile_s = _duration("reconcile_timeout", reconcile_timeout)
    for name, value in (
        ("users", users),
        ("spawn_rate", spawn_rate),
        ("duration", duration),
        ("step_duration", step_s),
        ("reconcile_timeout", reconcile_s),
        ("max_requests", max_requests),
    ):
        _positive(name, value)
    if workers < 0:
        raise UsageError("--workers must be 0 or more")
    if target and config is None:
        raise UsageError("--target needs --config (the applications to authorize with)")
    if lifecycle_resolve not in ("", *LIFECYCLE_MODES):
        raise UsageError(f"lifecycle resolve: expected auto or driver, got {lifecycle_resolve!r}")
    try:
        overrides = ShapeOverrides(
            users=users,
            spawn_rate=spawn_rate,
            duration_s=duration,
            max_requests=max_requests,
            mix=parse_mix(mix) if mix else None,
            pacing=parse_pacing(pacing) if pacing else None,
            step_s=step_s,
        )
        overrides.apply(get_shape(shape)).check()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    limits = limits or ClientLimits()
    for name, limit in limits.to_dict().items():
        if limit <= 0:
            raise UsageError(f"{name}: must be greater than 0")
    rules = SLORules()
    if isinstance(slo, SLORules):
        rules = slo
    elif slo:
        try:
            rules = load_slo_file(slo)
        except SLOError as exc:
            raise UsageError(str(exc)) from None
    target_config: TargetConfig | None
    if config is None or isinstance(config, TargetConfig):
        target_config = config.with_base_url(target) if config and target else config
    else:
        try:
            # a file may hold ${VAR} references: they are resolved here, once
            target_config = load_target_config(Path(config), base_url=target or None)
        except TargetConfigError as exc:
            raise UsageError(str(exc)) from None
    if webhooks and (target_config is None or target_config.webhooks is None):
        raise UsageError(
            "--webhooks needs a --config with a webhooks section (listen, secret): the bundled "
            "stub has no webhook endpoint (docs/webhooks.md)"
        )
    return LoadPlan(
        shape_name=shape,
        config=target_config,
        report_dir=Path(report_dir),
        overrides=overrides,
        slo=rules,
        limits=limits,
        workers=workers,
        lifecycle_resolve=lifecycle_resolve,
        reconcile_timeout_s=reconcile_s if reconcile_s is not None else 120.0,
        reconcile_concurrency=reconcile_concurrency,
        run_id=run_id or new_run_id(),
        quiet=quiet,
        summary_only=summary_only,
        abort_on_fail=abort_on_fail,
        webhooks=webhooks,
    )


def plan_from_args(args: argparse.Namespace) -> LoadPlan:
    """The plan of ``paysuite load``'s arguments (``load.cli``)."""
    shape = args.shape
    default = ClientLimits()
    limits = ClientLimits(
        connect_timeout_s=_limit(
            "connect_timeout", _duration("connect_timeout", args.connect_timeout),
            default.connect_timeout_s,
        ),
        read_timeout_s=_limit(
            "read_timeout", _duration("read_timeout", args.read_timeout), default.read_timeout_s
        ),
        total_timeout_s=_limit(
            "total_timeout", _duration("total_timeout", args.total_timeout),
            default.total_timeout_s,
        ),
        max_response_bytes=int(
            _limit("max_response_bytes", args.max_response_bytes, default.max_response_bytes)
        ),
    )  # fmt: skip
    return build_plan(
        shape=shape or DEFAULT_SHAPE,
        config=Path(args.config) if args.config else None,
        target=args.target,
        users=args.users,
        spawn_rate=args.spawn_rate,
        duration=args.duration,
        step_duration=args.step_duration,
        max_requests=args.max_requests,
        workers=args.workers,
        report_dir=args.report_dir,
        slo=args.slo,
        mix=args.mix or "",
        pacing=args.pacing or "",
        lifecycle_resolve=args.lifecycle_resolve or "",
        reconcile_timeout=args.reconcile_timeout,
        limits=limits,
        quiet=args.quiet,
        abort_on_fail=args.abort_on_fail,
        webhooks=bool(getattr(args, "webhooks", False)),
    )


def option(options: argparse.Namespace | None, name: str) -> Any:
    """A Locust option's value; ``None`` when unset or empty (or without options at all)."""
    value = getattr(options, name, None) if options is not None else None
    return None if value in (None, "") else value


def _cast(value: Any, kind: type[int] | type[float]) -> Any:
    return None if value is None else kind(value)


def shape_option(options: argparse.Namespace | None) -> str:
    """``--paysuite-shape``, else ``smoke``."""
    return str(option(options, "paysuite_shape") or DEFAULT_SHAPE)


def report_dir_option(options: argparse.Namespace | None) -> Path:
    """``--paysuite-report-dir``, else beside Locust's ``--csv`` files, else ``reports/``."""
    explicit = option(options, "paysuite_report_dir")
    if explicit:
        return Path(explicit)
    csv_prefix = option(options, "csv_prefix")
    if csv_prefix:
        return Path(csv_prefix).parent
    return Path(DEFAULT_REPORT_DIR)


#: Locust's own options that a paysuite shape honours (``use_common_options``): -u, -r, -t
COMMON_OPTIONS = ("num_users", "spawn_rate", "run_time")


def plan_from_locust_options(
    options: argparse.Namespace | None,
    host: str | None,
    common: dict[str, Any] | None = None,
) -> LoadPlan:
    """The plan of a Locust master (or single process): the file ``paysuite load`` wrote
    (``--paysuite-plan-file``), else built from the ``--paysuite-*`` options.

    ``common``: Locust's ``-u``, ``-r``, ``-t`` (``num_users``, ``spawn_rate``, ``run_time``) as
    given (on the command line or in the web UI); a ``--paysuite-*`` option of the same meaning
    wins over them."""
    plan_file = option(options, "paysuite_plan_file")
    if plan_file:
        try:
            text = Path(plan_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{plan_file}: cannot read the load plan ({exc.strerror})") from None
        return read_plan(text)
    path = option(options, "paysuite_config") or os.environ.get("PAYSUITE_CONFIG")
    if not path:
        raise UsageError(
            "no target configuration: pass --paysuite-config FILE (or PAYSUITE_CONFIG)"
        )
    if option(options, "paysuite_profile"):
        # One word for the load shape everywhere: a profile is conformance's seed/reference.
        raise UsageError(
            "--paysuite-profile (PAYSUITE_PROFILE) was removed; use --paysuite-shape NAME "
            f"({', '.join(SHAPE_NAMES)})"
        )
    default = ClientLimits()

    def number(name: str, kind: type[int] | type[float], fallback: float) -> Any:
        value = option(options, f"paysuite_{name}")
        return kind(fallback) if value is None else kind(value)

    def seconds(name: str, fallback: float) -> float:
        value = _duration(f"paysuite_{name}", option(options, f"paysuite_{name}"))
        return fallback if value is None else value

    common = common or {}
    users = option(options, "paysuite_users")
    spawn_rate = option(options, "paysuite_spawn_rate")
    duration = option(options, "paysuite_duration")

    return build_plan(
        shape=shape_option(options),
        config=Path(path),
        target=host or None,
        users=_cast(users if users is not None else common.get("num_users"), int),
        spawn_rate=_cast(spawn_rate if spawn_rate is not None else common.get("spawn_rate"), float),
        duration=duration if duration is not None else common.get("run_time"),
        step_duration=option(options, "paysuite_step_duration"),
        max_requests=_cast(option(options, "paysuite_max_requests"), int),
        report_dir=report_dir_option(options),
        slo=option(options, "paysuite_slo"),
        mix=option(options, "paysuite_mix") or "",
        pacing=option(options, "paysuite_pacing") or "",
        lifecycle_resolve=option(options, "paysuite_lifecycle_resolve") or "",
        reconcile_timeout=option(options, "paysuite_reconcile_timeout") or 120.0,
        reconcile_concurrency=number("reconcile_concurrency", int, 16),
        limits=ClientLimits(
            connect_timeout_s=seconds("connect_timeout_s", default.connect_timeout_s),
            read_timeout_s=seconds("read_timeout_s", default.read_timeout_s),
            total_timeout_s=seconds("total_timeout_s", default.total_timeout_s),
            max_response_bytes=number("max_response_bytes", int, default.max_response_bytes),
        ),
        run_id=option(options, "paysuite_run_id") or "",
        abort_on_fail=bool(option(options, "paysuite_abort_on_fail")),
    )


# -- the one serialised form ----------------------------------------------------------------------
def write_plan(plan: LoadPlan) -> str:
    """The plan as one JSON document (the inverse of ``read_plan``)."""
    overrides = asdict(plan.overrides)
    return json.dumps(
        {
            "schema": PLAN_SCHEMA,
            "shape": plan.shape_name,
            "overrides": overrides,
            "target": plan.target.to_dict(),
            "report_dir": str(plan.report_dir.resolve()),
            "slo": plan.slo.to_dict(),
            "limits": plan.limits.to_dict(),
            "workers": plan.workers,
            "lifecycle_resolve": plan.lifecycle_resolve,
            "reconcile_timeout_s": plan.reconcile_timeout_s,
            "reconcile_concurrency": plan.reconcile_concurrency,
            "run_id": plan.run_id,
            "quiet": plan.quiet,
            "summary_only": plan.summary_only,
            "abort_on_fail": plan.abort_on_fail,
            "webhooks": plan.webhooks,
        }
    )


def read_plan(text: str) -> LoadPlan:
    """The plan ``write_plan`` wrote; ``UsageError`` when it is not one."""
    try:
        data = json.loads(text)
        if data.get("schema") != PLAN_SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}, expected {PLAN_SCHEMA!r}")
        raw = data["overrides"]
        pacing = raw.get("pacing")
        overrides = ShapeOverrides(
            users=raw.get("users"),
            spawn_rate=raw.get("spawn_rate"),
            duration_s=raw.get("duration_s"),
            max_requests=raw.get("max_requests"),
            mix=raw.get("mix"),
            pacing=Pacing(**pacing) if pacing else None,
            step_s=raw.get("step_s"),
        )
        get_shape(data["shape"])
        return LoadPlan(
            shape_name=data["shape"],
            config=parse_target_config(data["target"], env={}),
            report_dir=Path(data["report_dir"]),
            overrides=overrides,
            slo=SLORules.from_dict(data["slo"]),
            limits=ClientLimits.from_dict(data["limits"]),
            workers=int(data["workers"]),
            lifecycle_resolve=str(data["lifecycle_resolve"]),
            reconcile_timeout_s=float(data["reconcile_timeout_s"]),
            reconcile_concurrency=int(data["reconcile_concurrency"]),
            run_id=str(data["run_id"]),
            quiet=bool(data["quiet"]),
            summary_only=bool(data.get("summary_only", False)),
            abort_on_fail=bool(data.get("abort_on_fail", False)),
            webhooks=bool(data.get("webhooks", False)),
        )
    except (ValueError, KeyError, TypeError, AttributeError, TargetConfigError) as exc:
        raise UsageError(f"not a paysuite load plan: {exc}") from None
