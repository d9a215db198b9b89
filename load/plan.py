"""A load run's plan: everything a run needs, parsed and validated once, handed down whole.

``paysuite load``, ``paysuite demo``, the benchmarks and a plain ``locust -f
load/locustfile.py`` all build their ``LoadPlan`` through ``build_plan`` (from the command's
arguments, from keyword arguments, or from Locust's parsed options), so the rules are the same
whoever starts the run: the target configuration is read and checked once, the SLO file is read
once, the shape's overrides are applied once.

Between processes the plan travels as one JSON document (``paysuite_core/schemas/
load-plan.schema.json``): ``paysuite load`` hands it to the Locust master as a file (it holds the
applications' secrets, so not on the command line); the master puts it in its custom option
``paysuite_plan``, which Locust sends to every worker with its spawn order, so a worker needs
paysuite installed and nothing else. Nothing here imports Locust or gevent.
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from load.shape_catalog import (
    Pacing,
    Shape,
    ShapeOverrides,
    Thresholds,
    get_shape,
    parse_mix,
    parse_pacing,
)
from load.slo import SLOError, SLORules, load_slo_file, resolve_slo
from paysuite_core import guarded_json
from paysuite_core.bounded_http import LOAD_LIMITS, Limits
from paysuite_core.cli_flags import UsageError as UsageError  # exit status 2, one line
from paysuite_core.config_schema import validate
from paysuite_core.durations import parse_duration
from paysuite_core.target_config import (
    TargetConfig,
    TargetConfigError,
    load_target_config,
    parse_target_config,
)
from paysuite_core.tls import TLSSettings

PLAN_SCHEMA = "paysuite-load-plan/1"
DEFAULT_SHAPE = "smoke"
DEFAULT_REPORT_DIR = "reports"
#: customer drivers that can answer for a customer: the lifecycle shape drives them by default
_DRIVABLE = ("sandbox", "magic-numbers")


def new_run_id() -> str:
    """The shared seed of a run's idempotency-storm keys."""
    return uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class LoadPlan:
    """One load run, parsed. ``config`` is ``None`` only before the bundled stub is started
    (``load.runner.run`` starts it and fills it in)."""

    shape_name: str
    config: TargetConfig | None
    report_dir: Path
    overrides: ShapeOverrides = ShapeOverrides()
    slo: SLORules = SLORules()
    limits: Limits = LOAD_LIMITS
    workers: int = 0
    #: "auto" (the target resolves), "driver" (drive the customer) or "" (decided by the config)
    lifecycle_resolve: str = ""
    reconcile_timeout_s: float = 120.0
    reconcile_concurrency: int = 16
    run_id: str = field(default_factory=new_run_id)
    #: no Locust statistics table at all (``--quiet``)
    quiet: bool = False
    #: Locust's table once, at the end: every run's now (``load.terminal``); kept so that
    #: callers that ask for it (``paysuite demo``) still build their plan
    summary_only: bool = False
    #: stop the run as soon as a threshold can no longer be met (``load.slo.decided_early``)
    abort_on_fail: bool = False
    #: receive the target's webhooks during the run and reconcile them (``load.webhook_journal``)
    webhooks: bool = False
    #: what every client of the run trusts and presents over HTTPS, resolved once here (flags,
    #: the configuration's ``tls:``, the environment) so that the pre-check, every worker's
    #: users and the reconciliation judge the target's certificate alike
    tls: TLSSettings = TLSSettings()

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
    def tls_text(self) -> str:
        """How the run judged the target's certificate, said in the run's first lines, its
        load.json and load.html (``INSECURE: ...`` in the verdict line too)."""
        if not self.tls.insecure and not self.target.base_url.startswith("https:"):
            return "plain HTTP (no TLS)"
        return self.tls.describe()

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


def _duration(name: str, value: str | float | None) -> float | None:
    """A duration option in Locust's format (``20``, ``20s``, ``1m30s``), in seconds."""
    if value is None or value == "":
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"--{name.replace('_', '-')}: {exc}") from None


#: Each client limit's option name, as ``paysuite load`` and Locust's options spell it.
_LIMIT_OPTIONS = {
    "connect_s": "connect_timeout_s",
    "read_s": "read_timeout_s",
    "total_s": "total_timeout_s",
    "max_body_bytes": "max_response_bytes",
}


def _client_limits(options: argparse.Namespace | None, option_name: Callable[[str], str]) -> Limits:
    """Each client limit as given (a time-out in Locust's duration format), else its default;
    0 or less is a usage error, not a silent default (``--max-response-bytes 0`` is not 4 MiB)."""
    given: dict[str, Any] = {}
    for field_name, default in asdict(LOAD_LIMITS).items():
        name = _LIMIT_OPTIONS[field_name]
        value = option(options, option_name(name))
        if name.endswith("_s"):
            value = _duration(option_name(name), value)
        if value is None:
            continue
        if value <= 0:
            flag = option_name(name).replace("_", "-")
            raise UsageError(f"--{flag}: must be more than 0, got {value:g}")
        given[field_name] = int(value) if isinstance(default, int) else value
    return Limits(**{**asdict(LOAD_LIMITS), **given})


def _overrides(shape: str, **given: Any) -> ShapeOverrides:
    """The overrides, checked against the shape they change (a ramp needs room for its steps)."""
    try:
        get_shape(shape)
        mix, pacing = given.pop("mix"), given.pop("pacing")
        overrides = ShapeOverrides(
            mix=parse_mix(mix) if mix else None,
            pacing=parse_pacing(pacing) if pacing else None,
            **given,
        )
        overrides.apply(get_shape(shape)).check()
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return overrides


def _slo_rules(slo: Path | str | SLORules | None) -> SLORules:
    if isinstance(slo, SLORules):
        return slo
    try:
        return load_slo_file(slo) if slo else SLORules()
    except SLOError as exc:
        raise UsageError(str(exc)) from None


def _target_config(
    config: Path | str | TargetConfig | None, target: str | None
) -> TargetConfig | None:
    if config is None and target:
        raise UsageError("--target needs --config (the applications to authorize with)")
    if config is None or isinstance(config, TargetConfig):
        return config.with_base_url(target) if config and target else config
    # a file may hold ${VAR} references: they are resolved here, once
    return load_target_config(Path(config), base_url=target or None)


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
    limits: Limits | None = None,
    run_id: str = "",
    quiet: bool = False,
    abort_on_fail: bool = False,
    webhooks: bool = False,
    summary_only: bool = False,
    tls: TLSSettings | argparse.Namespace | None = None,
) -> LoadPlan:
    """The one way to make a ``LoadPlan``: validates every input, reads the target configuration
    file and the SLO file (once each). ``config=None`` means the bundled stub (``target`` then
    makes no sense). Durations are seconds or strings in Locust's format (``20s``, ``1m30s``).
    ``tls``: resolved settings, or the parsed TLS flags (``paysuite_core.cli_flags.TLS``)
    to resolve against the configuration. Raises ``UsageError`` with a one-line reason."""
    duration_s = _duration("duration", duration)
    step_s = _duration("step_duration", step_duration)
    reconcile_s = _duration("reconcile_timeout", reconcile_timeout)
    for name, value in (
        ("users", users),
        ("spawn_rate", spawn_rate),
        ("duration", duration_s),
        ("step_duration", step_s),
        ("reconcile_timeout", reconcile_s),
        ("max_requests", max_requests),
    ):
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be greater than 0")
    if workers < 0:
        raise UsageError("--workers must be 0 or more")
    if lifecycle_resolve not in ("", "auto", "driver"):
        raise UsageError(f"lifecycle resolve: expected auto or driver, got {lifecycle_resolve!r}")
    overrides = _overrides(
        shape,
        users=users,
        spawn_rate=spawn_rate,
        duration_s=duration_s,
        max_requests=max_requests,
        mix=mix,
        pacing=pacing,
        step_s=step_s,
    )
    limits = limits or LOAD_LIMITS
    for name, limit in asdict(limits).items():
        if limit <= 0:
            raise UsageError(f"{name}: must be greater than 0")
    rules, target_config = _slo_rules(slo), _target_config(config, target)
    if webhooks and (target_config is None or target_config.webhooks is None):
        raise UsageError(
            "--webhooks needs a --config with a webhooks section (listen, secret): the bundled "
            "stub has no webhook endpoint (docs/webhooks.md)"
        )
    if not isinstance(tls, TLSSettings):  # the flags over the configuration's over the environment
        tls = TLSSettings.from_args(tls or argparse.Namespace(), target_config)
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
        tls=tls,
    )


#: ``paysuite load``'s arguments that ``build_plan`` takes under the same name, as they are.
_LOAD_ARGS = (
    "target users spawn_rate duration step_duration max_requests workers report_dir slo "
    "reconcile_timeout quiet abort_on_fail"
).split()


def plan_from_args(args: argparse.Namespace) -> LoadPlan:
    """The plan of ``paysuite load``'s arguments (``load.cli``)."""
    return build_plan(
        **{name: getattr(args, name) for name in _LOAD_ARGS},
        shape=args.shape or DEFAULT_SHAPE,
        config=args.config or None,
        mix=args.mix or "",
        pacing=args.pacing or "",
        lifecycle_resolve=args.lifecycle_resolve or "",
        limits=_client_limits(args, lambda name: name.removesuffix("_s")),
        webhooks=bool(getattr(args, "webhooks", False)),
        tls=args,
    )


def option(options: argparse.Namespace | None, name: str) -> Any:
    """A Locust option's value; ``None`` when unset or empty (or without options at all)."""
    value = getattr(options, name, None) if options is not None else None
    return None if value in (None, "") else value


#: Locust's own options that a paysuite shape honours (``use_common_options``): -u, -r, -t
COMMON_OPTIONS = ("num_users", "spawn_rate", "run_time")
#: The ``--paysuite-*`` options ``build_plan`` takes under the same name (unset: its default),
#: and those that are numbers.
_LOCUST_ARGS = (
    "shape duration step_duration report_dir slo mix pacing lifecycle_resolve reconcile_timeout "
    "run_id"
).split()
_NUMBERS: dict[str, type[int] | type[float]] = {
    "users": int,
    "spawn_rate": float,
    "max_requests": int,
    "reconcile_concurrency": int,
}


def plan_from_locust_options(
    options: argparse.Namespace | None,
    host: str | None,
    common: dict[str, Any] | None = None,
) -> LoadPlan:
    """The plan of a Locust master (or single process): the file ``paysuite load`` wrote
    (``--paysuite-plan-file``), else built from the ``--paysuite-*`` options, which win over
    Locust's own ``-u``, ``-r``, ``-t`` (``common``, from the command line or the web UI)."""
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
    given = {name: option(options, f"paysuite_{name}") for name in (*_LOCUST_ARGS, *_NUMBERS)}
    for name, common_name in zip(("users", "spawn_rate", "duration"), COMMON_OPTIONS, strict=True):
        if given[name] is None:
            given[name] = (common or {}).get(common_name)
    for name, kind in _NUMBERS.items():  # the web UI hands them over as text
        given[name] = None if given[name] is None else kind(given[name])
    csv_prefix = option(options, "csv_prefix")
    if given["report_dir"] is None and csv_prefix:  # beside Locust's CSV files
        given["report_dir"] = Path(csv_prefix).parent
    return build_plan(
        **{name: value for name, value in given.items() if value is not None},
        config=Path(path),
        target=host or None,
        limits=_client_limits(options, lambda name: f"paysuite_{name}"),
        abort_on_fail=bool(option(options, "paysuite_abort_on_fail")),
    )


# -- the one serialised form ----------------------------------------------------------------------
#: The fields that travel as they are.
_AS_IS = (
    "workers lifecycle_resolve reconcile_timeout_s reconcile_concurrency run_id quiet "
    "summary_only abort_on_fail webhooks"
).split()


def write_plan(plan: LoadPlan) -> str:
    """The plan as one JSON document (the inverse of ``read_plan``)."""
    return json.dumps(
        {
            "schema": PLAN_SCHEMA,
            "shape": plan.shape_name,
            "overrides": asdict(plan.overrides),
            "target": plan.target.to_dict(),
            "report_dir": str(plan.report_dir.resolve()),
            "slo": plan.slo.to_dict(),
            "limits": asdict(plan.limits),
            **{name: getattr(plan, name) for name in _AS_IS},
            "tls": plan.tls.to_dict(),
        }
    )


def read_plan(text: str) -> LoadPlan:
    """The plan ``write_plan`` wrote; ``UsageError`` when it is not one."""
    try:
        data = guarded_json.loads(text, what="the load plan")
        validate("load-plan", data, ValueError)
        get_shape(data["shape"])
        pacing = data["overrides"].get("pacing")
        return LoadPlan(
            shape_name=data["shape"],
            config=parse_target_config(data["target"], env={}),
            report_dir=Path(data["report_dir"]),
            overrides=ShapeOverrides(
                **{**data["overrides"], "pacing": pacing and Pacing(**pacing)}
            ),
            slo=SLORules.from_dict(data["slo"]),
            limits=Limits(**data["limits"]),
            **{name: data[name] for name in _AS_IS if name in data},
            tls=TLSSettings.from_dict(data.get("tls")),
        )
    except (ValueError, KeyError, TypeError, TargetConfigError) as exc:
        raise UsageError(f"not a paysuite load plan: {exc}") from None
