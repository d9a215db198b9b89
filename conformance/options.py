"""The run's options: declared once (``FLAGS``), parsed once (``Options``).

``paysuite conform``'s argparse flags and the pytest plugin's ``--conformance-*`` options are
both generated from ``FLAGS``, and both go through ``Options.parse``, so a value means the same
under either and a bad one is the same one-line ``SetupError`` (exit status 2).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.catalog import UnknownCheckError, parse_only
from conformance.suite.history import DEFAULT_HISTORY_BUDGET_S
from paysuite_core.durations import parse_duration
from paysuite_core.results.rule import PROFILES
from paysuite_core.throttle import DEFAULT_MAX_WAIT_S
from paysuite_core.tls import TLS_FLAGS, TLS_GROUP

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
#: The request limits' command-line names (``--connect-timeout``, ...).
LIMIT_OPTIONS = ("connect_timeout", "read_timeout", "total_timeout", "max_response_bytes")


class SetupError(RuntimeError):
    """The run cannot start; the message is one line and says why."""


@dataclass(frozen=True)
class Flag:
    """One option of a run, declared once for ``paysuite conform`` and for plain pytest.

    Under pytest the flag's ``dest`` is prefixed ``conformance_`` (the namespace is shared with
    every other plugin); ``pytest_name`` replaces a name pytest owns (its own ``--strict``).
    """

    name: str
    help: str
    metavar: str | None = None
    switch: bool = False
    choices: tuple[str, ...] | None = None
    pytest_name: str | None = None
    cli_only: bool = False
    group: str = ""

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")

    def add_to(self, add: Callable[..., object], *, pytest: bool) -> None:
        """Declare the flag through ``add`` (argparse's ``add_argument`` or pytest's
        ``addoption``): one table, so the two spellings cannot drift apart."""
        names = [self.pytest_name or self.name] if pytest else [self.name]
        if not pytest and self.pytest_name:
            names.append(self.pytest_name)  # the pytest spelling works for paysuite conform too
        if not pytest and self.name == "--verbose":
            names.insert(0, "-v")
        kwargs: dict[str, Any] = {"help": self.help, "default": False if self.switch else None}
        if self.switch:
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = self.metavar
        if self.choices:
            kwargs["choices"] = self.choices
        add(*names, dest=f"conformance_{self.dest}" if pytest else self.dest, **kwargs)


LIMITS_GROUP = "request limits (a hostile target cannot hang the run)"
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
    Flag("--connect-timeout", "seconds to connect (10)", "S", group=LIMITS_GROUP),
    Flag("--read-timeout", "seconds between two bytes (30)", "S", group=LIMITS_GROUP),
    Flag("--total-timeout", "seconds for a whole answer (60)", "S", group=LIMITS_GROUP),
    Flag(
        "--max-response-bytes",
        "an answer's body past this is abandoned (1 MiB)",
        "N",
        group=LIMITS_GROUP,
    ),
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
    # The TLS flags every paysuite command takes, worded once in paysuite_core.tls.
    *(
        Flag(name, text, metavar, switch=metavar is None, group=TLS_GROUP)
        for name, metavar, text in TLS_FLAGS
    ),
    # pytest has its own -v; ``--list`` prints the catalog instead of running.
    Flag(
        "--verbose",
        "print a progress line per check and the whole scorecard (default: the problems, the "
        "counts, the reports and the verdict)",
        switch=True,
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
    limits: Limits = field(default_factory=lambda: parse_limits({}))
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
    def parse(
        cls,
        *,
        target: str | None = None,
        config: str | None = None,
        profile: str | None = None,
        strict: bool = False,
        report_dir: str | None = None,
        only: str | None = None,
        seed: int | str | None = None,
        min_coverage: str | float | None = None,
        reveal_secrets: bool = False,
        check_timeout: str | float | None = None,
        max_duration: str | float | None = None,
        limits: Mapping[str, str | None] | None = None,
        max_throttle_wait: str | float | None = None,
        concurrency: str | int | None = None,
        history_budget: str | float | None = None,
        verbose: bool = False,
        ca_bundle: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        insecure: bool = False,
    ) -> Options:
        """``Options`` from command-line values (strings, ``None`` for the defaults)."""
        try:
            selected = parse_only(only)
            seed_value = DEFAULT_SEED if seed is None else int(seed)
        except UnknownCheckError as exc:
            raise SetupError(str(exc)) from None
        except ValueError:
            raise SetupError(f"--seed: expected an integer, got {seed!r}") from None
        return cls(
            target=target,
            config=config,
            profile=profile or "seed",
            strict=bool(strict),
            report_dir=report_dir or "reports",
            only=selected,
            seed=seed_value,
            min_coverage=parse_share(min_coverage),
            reveal_secrets=bool(reveal_secrets),
            check_timeout_s=parse_seconds(
                check_timeout, "--check-timeout", DEFAULT_CHECK_TIMEOUT_S
            ),
            max_duration_s=parse_seconds(max_duration, "--max-duration", DEFAULT_MAX_DURATION_S),
            limits=parse_limits(dict(limits or {})),
            max_throttle_wait_s=parse_wait(max_throttle_wait),
            concurrency=parse_concurrency(concurrency),
            history_budget_s=parse_budget(history_budget),
            verbose=bool(verbose),
            ca_bundle=ca_bundle or None,
            client_cert=client_cert or None,
            client_key=client_key or None,
            insecure=bool(insecure),
        )

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


def parse_seconds(text: str | float | None, flag: str, default: float) -> float:
    """``--check-timeout 90``, ``90s``, ``1m30s``: seconds, the way Locust users write them."""
    if text is None:
        return default
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise SetupError(f"{flag}: {exc}") from None
    if value <= 0:
        raise SetupError(f"{flag}: {text!r} is not a positive duration")
    return value


def parse_budget(text: str | float | None) -> float:
    """``--history-budget``: a duration like ``--check-timeout``, or ``0``: the history phase
    does not run (its MODEL checks are not applicable, with that reason)."""
    if text is not None and str(text).strip() in ("0", "0s"):
        return 0.0
    return parse_seconds(text, "--history-budget", DEFAULT_HISTORY_BUDGET_S)


def parse_wait(text: str | float | None) -> float:
    """``--max-throttle-wait``: a duration like ``--check-timeout``, or ``0``: never wait (a
    target's 429 then makes the check an error at once)."""
    if text is not None and str(text).strip() in ("0", "0s"):
        return 0.0
    return parse_seconds(text, "--max-throttle-wait", DEFAULT_MAX_THROTTLE_WAIT_S)


def parse_limits(values: Mapping[str, str | None]) -> Limits:
    """``Limits`` from the command line's values (``None``: the default)."""
    # httpx: not loaded to register ``paysuite conform``
    from paysuite_core.bounded_http import CONFORM_LIMITS, Limits

    base = CONFORM_LIMITS
    connect, read, total = (
        parse_seconds(values.get(name), f"--{name.replace('_', '-')}", default)
        for name, default in (
            ("connect_timeout", base.connect_s),
            ("read_timeout", base.read_s),
            ("total_timeout", base.total_s),
        )
    )
    raw = values.get("max_response_bytes")
    size = base.max_body_bytes
    if raw is not None:
        text = str(raw).strip()
        if not text.isdigit() or int(text) < 1024:
            raise SetupError(f"--max-response-bytes: expected a byte count >= 1024, got {text!r}")
        size = int(text)
    return Limits(connect_s=connect, read_s=read, total_s=total, max_body_bytes=size)
