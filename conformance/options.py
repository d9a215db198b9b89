"""The run's options: declared once (``FLAGS``), parsed once (``Options``).

``paysuite conform``'s argparse flags and the pytest plugin's ``--conformance-*`` options are
both generated from ``FLAGS``, and both go through ``Options.parse``, so a value means the same
under either and a bad one is the same one-line ``SetupError`` (exit status 2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.catalog import parse_only
from conformance.suite.history import DEFAULT_HISTORY_BUDGET_S
from paysuite_core.cli_flags import (
    LIMIT_OPTIONS,
    TLS,
    Flag,
    limit_flags,
    parse_limits,
    parse_seconds,
)
from paysuite_core.cli_flags import SetupError as SetupError
from paysuite_core.results.rule import PROFILES
from paysuite_core.throttle import DEFAULT_MAX_WAIT_S

if TYPE_CHECKING:
    import argparse

    import pytest

    from paysuite_core.bounded_http import Limits

DEFAULT_SEED = 20261121
#: Below this share of the profile's checks run, the gate fails: a run that skips most of the
#: catalog (no customer driver, one application) must not read as a pass.
DEFAULT_MIN_COVERAGE = 0.5
#: A check (the property run included) that has not judged its rule by then stops as an error;
#: the slowest honest one waits a token lifetime or a customer's answer (max_wait_s).
DEFAULT_CHECK_TIMEOUT_S = 300.0
#: After this the run stops: the checks not yet run are errors and every report is written.
DEFAULT_MAX_DURATION_S = 1800.0
#: ``--max-throttle-wait``: the run's total waiting for a target that answers 429 (rate limits).
DEFAULT_MAX_THROTTLE_WAIT_S = DEFAULT_MAX_WAIT_S
#: ``--concurrency``: how many independent checks run at once (1: one after another). Eight
#: keeps a far target's round trips overlapped without crowding a small target.
DEFAULT_CONCURRENCY = 8

MAX_CONCURRENCY = 64


FLAGS = (
    Flag("--target", "base URL of the implementation (…/api)", "URL"),
    Flag("--config", "target configuration (YAML: applications, customer driver, ...)", "FILE"),
    Flag(
        "--profile",
        "seed: what the document says (default); reference: also paysuite's choices",
        choices=PROFILES,
    ),
    Flag(
        "--strict",
        "a failed SHOULD check also fails the run",
        switch=True,
        pytest_name="--conformance-strict",
    ),
    Flag("--report-dir", "where junit.xml, conformance.json, report.html go (reports/)", "DIR"),
    Flag("--only", "check IDs or groups to run, e.g. IDEM,AUTH-003", "ID,..."),
    Flag(
        "--min-coverage",
        "the gate fails when fewer of the profile's checks ran (default 50%%; 0 disables)",
        "SHARE",
    ),
    Flag(
        "--check-timeout",
        "a check still unjudged after this is an error (default 300s; 90, 90s, 1m30s)",
        "DURATION",
    ),
    Flag(
        "--max-duration",
        "stop the run after this; the rest are errors, reports written (default 30m)",
        "DURATION",
    ),
    Flag(
        "--max-throttle-wait",
        "the run's total wait for a target that answers 429 (Retry-After honoured); past it a "
        "throttled check is an error (default 120s; 0: never wait)",
        "DURATION",
    ),
    *limit_flags("request limits (a hostile target cannot hang the run)"),
    Flag(
        "--reveal-secrets",
        "print real tokens in the reports' curl commands (default: $PAYSUITE_TOKEN_<APP>)",
        switch=True,
    ),
    Flag("--seed", f"seed of the property tests and the history phase ({DEFAULT_SEED})", "N"),
    Flag(
        "--history-budget",
        f"seconds the history phase (MODEL checks) may take (default "
        f"{DEFAULT_HISTORY_BUDGET_S:g}; 0: it does not run)",
        "SECONDS",
    ),
    Flag(
        "--concurrency",
        f"independent checks run this many at a time, and the property phase's workers "
        f"(default {DEFAULT_CONCURRENCY}; 1: one after another)",
        "N",
    ),
    *TLS,
    # pytest has its own -v; ``--list`` prints the catalog instead of running.
    Flag(
        "--verbose",
        "print a progress line per check and the whole scorecard (default: the problems, the "
        "counts, the reports and the verdict)",
        switch=True,
        short="-v",
        cli_only=True,
    ),
    Flag("--list", "print the check catalog and exit", switch=True, cli_only=True),
)


@dataclass
class Options:
    """Everything a run is told, parsed and checked: what ``conformance.runner.run`` takes."""

    target: str | None = None
    config: str | None = None
    profile: str = "seed"
    strict: bool = False
    report_dir: str = "reports"
    only: frozenset[str] | None = None
    seed: int = DEFAULT_SEED
    min_coverage: float = DEFAULT_MIN_COVERAGE
    reveal_secrets: bool = False
    check_timeout_s: float = DEFAULT_CHECK_TIMEOUT_S
    max_duration_s: float = DEFAULT_MAX_DURATION_S
    limits: Limits = field(default_factory=lambda: conform_limits({}))
    max_throttle_wait_s: float = DEFAULT_MAX_THROTTLE_WAIT_S
    #: how many independent checks run at once (``conformance.checks.concurrent_plan``)
    concurrency: int = DEFAULT_CONCURRENCY
    #: ``--history-budget``: the seconds the history phase may take (0: it does not run)
    history_budget_s: float = DEFAULT_HISTORY_BUDGET_S
    #: the progress lines and the whole scorecard at the terminal (``-v``); without it a run
    #: prints its problems, its counts, where the reports are and the verdict
    verbose: bool = False
    #: The TLS flags as given (None: not given); ``conformance.preflight.prepare`` resolves
    #: them once with the configuration's ``tls:`` and the environment (``TLSSettings``).
    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    insecure: bool = False

    @classmethod
    def parse(cls, *, limits: Mapping[str, str | None] | None = None, **given: Any) -> Options:
        """``Options`` from command-line values named as ``FLAGS`` name them (strings; ``None``
        for the defaults); ``limits``: the request limits' values (``LIMIT_OPTIONS``)."""
        fields: dict[str, Any] = {}
        for name, value in given.items():
            if name in _PARSERS:
                field_name, parse = _PARSERS[name]
                fields[field_name] = parse(value)
            elif name in _DURATIONS:
                field_name, default, off = _DURATIONS[name]
                flag = f"--{name.replace('_', '-')}"
                fields[field_name] = parse_seconds(value, flag, default, zero_is_off=off)
            elif name not in cls.__dataclass_fields__:
                raise TypeError(f"Options.parse: no option {name!r}")
            elif value not in (None, False, ""):
                fields[name] = value
        return cls(**fields, limits=conform_limits(dict(limits or {})))

    @classmethod
    def from_values(cls, value: Callable[[str], Any]) -> Options:
        """From the ``FLAGS`` as ``value(dest)`` gives them (``None`` when not given)."""
        given = {flag.dest: value(flag.dest) for flag in FLAGS if flag.dest != "list"}
        limits = {name: given.pop(name) for name in LIMIT_OPTIONS}
        return cls.parse(**given, limits=limits)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        """From ``paysuite conform``'s parsed arguments."""
        return cls.from_values(lambda dest: getattr(args, dest, None))

    @classmethod
    def from_pytest(cls, config: pytest.Config) -> Options:
        """From the plugin's pytest options; pytest's own ``-v`` stands for ``--verbose``."""

        def value(dest: str) -> Any:
            if dest == "verbose":
                return int(config.getoption("verbose", 0) or 0) > 0
            return config.getoption(f"conformance_{dest}", None)

        return cls.from_values(value)


def conform_limits(values: Mapping[str, str | None]) -> Limits:
    """conform's request limits (``CONFORM_LIMITS``) with the command line's values."""
    from paysuite_core.bounded_http import CONFORM_LIMITS  # httpx: not loaded to register conform

    return parse_limits(values, CONFORM_LIMITS)


def parse_share(text: str | float | None) -> float:
    """``--min-coverage``: ``0.8``, ``80%`` or ``80`` all mean 80 %; ``None`` is the default."""
    if text is None:
        return DEFAULT_MIN_COVERAGE
    raw = str(text).strip()
    try:
        value = float(raw.removesuffix("%"))
    except ValueError:
        raise SetupError(
            f"--min-coverage: expected a share such as 0.8 or 80%, got {raw!r}"
        ) from None
    if raw.endswith("%") or value > 1:
        value /= 100
    if not 0 <= value <= 1:
        raise SetupError(f"--min-coverage: {raw!r} is not between 0 and 100%")
    return value


def parse_concurrency(text: str | int | None) -> int:
    """``--concurrency``: a whole number of checks at once, 1 (one after another) to 64."""
    if text is None:
        return DEFAULT_CONCURRENCY
    raw = str(text).strip()
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_CONCURRENCY:
        raise SetupError(
            f"--concurrency: expected a whole number from 1 to {MAX_CONCURRENCY}, got {raw!r}"
        )
    return int(raw)


def _seed(text: str | int | None) -> int:
    try:
        return DEFAULT_SEED if text is None else int(text)
    except ValueError:
        raise SetupError(f"--seed: expected an integer, got {text!r}") from None


#: The values parsed on their way in: the field of ``Options`` each sets, and its parser
#: (``None``: the default; a bad value: ``SetupError``).
_PARSERS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "only": ("only", parse_only),  # an unknown ID: UnknownCheckError, a SetupError
    "seed": ("seed", _seed),
    "min_coverage": ("min_coverage", parse_share),
    "concurrency": ("concurrency", parse_concurrency),
}
#: The durations (``90``, ``90s``, ``1m30s``): the field each sets, its default, and whether
#: ``0`` turns it off (the history phase does not run; a 429 is never waited for, the check is
#: an error at once).
_DURATIONS = {
    "check_timeout": ("check_timeout_s", DEFAULT_CHECK_TIMEOUT_S, False),
    "max_duration": ("max_duration_s", DEFAULT_MAX_DURATION_S, False),
    "max_throttle_wait": ("max_throttle_wait_s", DEFAULT_MAX_THROTTLE_WAIT_S, True),
    "history_budget": ("history_budget_s", DEFAULT_HISTORY_BUDGET_S, True),
}
