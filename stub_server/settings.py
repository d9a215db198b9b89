"""The stub's settings: defaults, the YAML config file, and command-line overrides.

Everything is resolved once at start-up into a frozen ``StubSettings``; request handlers read
plain attributes and never re-read a file. A bad value fails start-up with a ``SettingsError``
naming the key, which the command line reports as a usage error (exit 2).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from paysuite_core.config_schema import schema, validate
from paysuite_core.target_config import RWANDA_MOBILE_PATTERN
from paysuite_core.usage import UsageError
from paysuite_core.yamlfile import read_yaml
from stub_server.fault_catalog import (
    FAULTS,
    VARIANTS,
    UnknownSwitchError,
    check_names,
    expand_variants,
)
from stub_server.ratelimit import AuthorizeLimits
from stub_server.webhook_delivery.endpoint_url import (
    EndpointUrlError,
    check_endpoint_url,
    check_mode,
)
from stub_server.webhook_delivery.retry_policy import RetryPolicy

Outcome = Literal["none", "success", "failed"]
#: The request log's formats (``stub_server.access_log``).
AccessLogFormat = Literal["clf", "json"]

DEFAULT_DB = "paysuite-stub.db"
CREDENTIALS_NAME = "paysuite-credentials.yaml"


class SettingsError(UsageError, ValueError):
    """A setting cannot be used; the message names the key."""


@dataclass(frozen=True)
class ResolveRule:
    """Auto-resolution for customer numbers matching a suffix or a regex."""

    outcome: Outcome
    delay_s: float
    number_suffix: str | None = None
    number_regex: re.Pattern[str] | None = None

    def matches(self, number: str) -> bool:
        suffix, regex = self.number_suffix, self.number_regex
        return (suffix is None or number.endswith(suffix)) and (
            not regex or bool(regex.search(number))
        )


@dataclass(frozen=True)
class AutoResolve:
    """The simulated customer: a default outcome and delay, with per-number overrides."""

    default_outcome: Outcome = "none"
    default_delay_s: float = 0.0
    rules: tuple[ResolveRule, ...] = ()

    def for_number(self, number: str) -> tuple[Outcome, float]:
        for rule in self.rules:
            if rule.matches(number):
                return rule.outcome, rule.delay_s
        return self.default_outcome, self.default_delay_s


@dataclass(frozen=True)
class StubSettings:
    """Every setting; ``schemas/stub.schema.json`` (and docs/stub.md) says what each one does."""

    host: str = "127.0.0.1"
    port: int = 8080
    db: str = DEFAULT_DB
    credentials: str | None = None
    jwt_key: str | None = None
    access_ttl_s: float = 900
    refresh_ttl_s: float = 432_000
    amount_min: float = 100
    amount_max: float = 10_000_000
    number_pattern: str = RWANDA_MOBILE_PATTERN
    fee_rate: float = 0.023
    utc_offset: str = "+02:00"
    pending_timeout_s: float = 600
    sandbox: bool = True
    max_body_bytes: int = 65_536
    auto_resolve: AutoResolve = field(default_factory=AutoResolve)
    faults: frozenset[str] = frozenset()
    drop_rate: float = 0.05
    variants: frozenset[str] = frozenset()
    #: A plain setting, not only a variant, so that a config file can choose either (RC-33)
    strict_auth: bool = False
    idle_timeout_s: float = 10.0
    body_timeout_s: float = 10.0
    listen_backlog: int = 128
    authorize_limits: AuthorizeLimits = field(default_factory=AuthorizeLimits)
    access_log: AccessLogFormat | None = None
    access_log_file: str | None = None  # None: stderr
    #: (mode, URL) pairs; the database keeps them from the first start on
    webhooks: tuple[tuple[str, str], ...] = ()
    #: How failed webhook deliveries are retried (``stub_server.webhook_delivery.retry_policy``).
    webhook_retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: The first retry wait the settings file chose (``webhook_retry.base_s``), which the
    #: credentials file declares to the suite (WEBHOOK-012); None: the stub's own default,
    #: RC-40's 1 s, which a declaration would hide from the check.
    webhook_retry_base_s: float | None = None
    webhook_signatures: tuple[str, ...] = ("paysuite", "live")
    #: Seconds every answer is held back: a far target on loopback (``stub_server.latency``).
    latency_s: float = 0.0

    @property
    def number_regex(self) -> re.Pattern[str]:
        return re.compile(self.number_pattern, re.ASCII)

    @property
    def tz(self) -> timezone:
        zone = datetime.strptime(self.utc_offset, "%z").tzinfo
        assert isinstance(zone, timezone)  # %z always gives a fixed offset
        return zone

    @cached_property
    def switches(self) -> frozenset[str]:
        """The variants plus every part of a composite (``live``); frozen, so never stale."""
        return expand_variants(self.variants)

    def variant(self, name: str) -> bool:
        """Whether the variant or behaviour ``name`` is on, directly or through a composite."""
        return name in self.switches


def _rule(raw: dict[str, Any]) -> ResolveRule:
    suffix, regex = raw.get("number_suffix"), raw.get("number_regex")
    suffix = None if suffix is None else str(suffix)  # YAML reads an unquoted 1111 as a number
    return ResolveRule(raw["outcome"], raw.get("delay_s", 0), suffix, regex and re.compile(regex))


def _auto_resolve(raw: dict[str, Any] | None) -> AutoResolve:
    default = (raw or {}).get("default") or {}
    rules = tuple(_rule(rule) for rule in (raw or {}).get("rules") or ())
    return AutoResolve(default.get("outcome", "none"), default.get("delay_s", 0), rules)


def _authorize_limits(raw: dict[str, Any]) -> AuthorizeLimits:
    base = AuthorizeLimits()
    buckets = {
        name: replace(getattr(base, name), **(raw.get(name) or {}))
        for name in ("per_client", "per_peer")
    }
    return replace(base, **{**raw, **buckets})


def _webhooks(raw: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """``{development: URL, production: URL}``: loopback URLs only (``endpoint_url``)."""
    endpoints = []
    for mode, url in (raw or {}).items():
        try:
            endpoints.append((check_mode(mode), check_endpoint_url(url)))
        except EndpointUrlError as exc:
            raise SettingsError(f"webhooks.{mode}: {exc}") from None
    return tuple(endpoints)


def _webhook_retry(raw: dict[str, Any]) -> RetryPolicy:
    policy = replace(RetryPolicy(), **raw)
    if policy.cap_s < policy.base_s:
        raise SettingsError("webhook_retry: cap_s must be >= base_s")
    return policy


def _names(value: str | list[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or ())


def _switches(
    known: Mapping[str, object], kind: str
) -> Callable[[str | list[str] | None], frozenset[str]]:
    return lambda value: check_names(_names(value), known, kind)


#: How a key of the file becomes its setting, where it is not taken as it is.
_CONVERT: dict[str, Callable[[Any], Any]] = {
    "access_log": lambda value: None if value in (None, False, "none", "off") else value,
    "auto_resolve": _auto_resolve,
    "authorize_limits": _authorize_limits,
    "webhooks": _webhooks,
    "webhook_retry": _webhook_retry,
    "webhook_signatures": lambda value: tuple(
        name for name in ("paysuite", "live") if name in _names(value)
    ),
    "faults": _switches(FAULTS, "fault"),
    "variants": _switches(VARIANTS, "variant"),
}
#: Paths: a number is taken as a name, and null leaves the default.
_TEXT = ("db", "credentials", "jwt_key", "access_log_file")

KNOWN_KEYS = frozenset(schema("stub")["properties"])


def settings_from_mapping(
    data: Mapping[str, Any], base: StubSettings | None = None
) -> StubSettings:
    """Apply a config mapping (the YAML file's content) over ``base``; validate every key."""
    validate("stub", data, SettingsError)
    result = base or StubSettings()
    changes: dict[str, Any] = {}
    try:
        for key, value in data.items():
            if key == "amount":
                changes["amount_min"] = value.get("min", result.amount_min)
                changes["amount_max"] = value.get("max", result.amount_max)
            elif key not in _TEXT:
                changes[key] = _CONVERT.get(key, lambda same: same)(value)
            elif value is not None:
                changes[key] = str(value)
    except UnknownSwitchError as exc:
        raise SettingsError(str(exc)) from None
    retry = data.get("webhook_retry")
    if isinstance(retry, Mapping) and "base_s" in retry:
        changes["webhook_retry_base_s"] = float(retry["base_s"])
    result = replace(result, **changes)
    if result.amount_min > result.amount_max:
        raise SettingsError(
            f"amount: min {result.amount_min} is greater than max {result.amount_max}"
        )
    return result


def load_settings_file(path: str | Path, base: StubSettings | None = None) -> StubSettings:
    """Read a stub YAML config file."""
    path = Path(path)
    data = read_yaml(path, SettingsError, "the config")
    try:
        return settings_from_mapping({} if data is None else data, base)
    except SettingsError as exc:
        raise SettingsError(f"{path}: {exc}") from None
