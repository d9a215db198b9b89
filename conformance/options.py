"""The run's options (``Options``), parsed once from ``paysuite conform``'s or pytest's flags.

``paysuite conform`` parses its arguments with ``Options.from_args``; plain pytest with the
plugin's options (``--target``, ``--config``, ...) with ``Options.from_pytest``. Both go through
``Options.parse``, so a value means the same under either, and a bad one is the same one-line
``SetupError`` (exit status 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.catalog import UnknownCheckError, parse_only
from paysuite_core.bounded_http import CONFORM_LIMITS, Limits
from paysuite_core.durations import parse_duration
from paysuite_core.throttle import DEFAULT_MAX_WAIT_S

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
#: The request limits' command-line names (``--connect-timeout``, ...).
LIMIT_OPTIONS = ("connect_timeout", "read_timeout", "total_timeout", "max_response_bytes")


class SetupError(RuntimeError):
    """The run cannot start; the message is one line and says why."""


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
    limits: Limits = CONFORM_LIMITS
    max_throttle_wait_s: float = DEFAULT_MAX_THROTTLE_WAIT_S
    #: the progress lines and the whole scorecard at the terminal (``-v``); without it a run
    #: prints its problems, its counts, where the reports are and the verdict
    verbose: bool = False

    @classmethod
    def parse(
        cls,
        *,
        target: str | None = None,
        config: str | None = None,
        profile: str = "seed",
        strict: bool = False,
        report_dir: str = "reports",
        only: str | None = None,
        seed: int | str | None = None,
        min_coverage: str | float | None = None,
        reveal_secrets: bool = False,
        check_timeout: str | float | None = None,
        max_duration: str | float | None = None,
        limits: Mapping[str, str | None] | None = None,
        max_throttle_wait: str | float | None = None,
        verbose: bool = False,
    ) -> Options:
        """``Options`` from command-line values (strings, ``None`` for the defaults)."""
        try:
            selected = parse_only(only)
        except UnknownCheckError as exc:
            raise SetupError(str(exc)) from None
        return cls(
            target=target,
            config=config,
            profile=profile,
            strict=bool(strict),
            report_dir=report_dir,
            only=selected,
            seed=DEFAULT_SEED if seed is None else int(seed),
            min_coverage=parse_share(min_coverage),
            reveal_secrets=bool(reveal_secrets),
            check_timeout_s=parse_seconds(
                check_timeout, "--check-timeout", DEFAULT_CHECK_TIMEOUT_S
            ),
            max_duration_s=parse_seconds(max_duration, "--max-duration", DEFAULT_MAX_DURATION_S),
            limits=parse_limits(dict(limits or {})),
            max_throttle_wait_s=parse_wait(max_throttle_wait),
            verbose=bool(verbose),
        )

    @classmethod
    def from_args(cls, args: Any) -> Options:
        """From ``paysuite conform``'s parsed arguments (an ``argparse.Namespace``)."""
        return cls.parse(
            target=args.target,
            config=args.config,
            profile=getattr(args, "profile", "seed"),
            strict=bool(getattr(args, "strict", False)),
            report_dir=getattr(args, "report_dir", "reports"),
            only=getattr(args, "only", None),
            seed=getattr(args, "seed", None),
            min_coverage=getattr(args, "min_coverage", None),
            reveal_secrets=bool(getattr(args, "reveal_secrets", False)),
            check_timeout=getattr(args, "check_timeout", None),
            max_duration=getattr(args, "max_duration", None),
            limits={name: getattr(args, name, None) for name in LIMIT_OPTIONS},
            max_throttle_wait=getattr(args, "max_throttle_wait", None),
            verbose=bool(getattr(args, "verbose", False)),
        )

    @classmethod
    def from_pytest(cls, config: Any) -> Options:
        """From the plugin's pytest options (a ``pytest.Config``)."""
        return cls.parse(
            target=config.getoption("conformance_target"),
            config=config.getoption("conformance_config"),
            profile=config.getoption("conformance_profile"),
            strict=bool(config.getoption("conformance_strict")),
            report_dir=config.getoption("conformance_report_dir"),
            only=config.getoption("conformance_only"),
            seed=config.getoption("conformance_seed", None),
            min_coverage=config.getoption("conformance_min_coverage", None),
            reveal_secrets=bool(config.getoption("conformance_reveal_secrets", False)),
            check_timeout=config.getoption("conformance_check_timeout", None),
            max_duration=config.getoption("conformance_max_duration", None),
            limits={name: config.getoption(f"conformance_{name}", None) for name in LIMIT_OPTIONS},
            max_throttle_wait=config.getoption("conformance_max_throttle_wait", None),
            verbose=int(config.getoption("verbose", 0) or 0) > 0,
        )


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


def parse_wait(text: str | float | None) -> float:
    """``--max-throttle-wait``: a duration like ``--check-timeout``, or ``0``: never wait (a
    target's 429 then makes the check an error at once)."""
    if text is not None and str(text).strip() in ("0", "0s"):
        return 0.0
    return parse_seconds(text, "--max-throttle-wait", DEFAULT_MAX_THROTTLE_WAIT_S)


def parse_limits(values: Mapping[str, str | None]) -> Limits:
    """``Limits`` from the command line's values (``None``: the default)."""
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
