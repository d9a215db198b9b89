"""The stub's settings: defaults, the YAML config file, and command-line overrides.

Everything is resolved once at start-up into a frozen ``StubSettings``; request handlers read
plain attributes and never re-read a file. A bad value fails start-up with a ``SettingsError``
naming the key, which the command line reports as a usage error (exit 2).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from paysuite_core.target_config import RWANDA_MOBILE_PATTERN
from paysuite_core.yamlfile import read_yaml
from stub_server.fault_catalog import (
    FAULTS,
    VARIANTS,
    UnknownSwitchError,
    check_names,
    expand_variants,
)
from stub_server.ratelimit import AuthorizeLimits, Bucket
from stub_server.webhook_delivery.endpoint_url import (
    EndpointUrlError,
    check_endpoint_url,
    check_mode,
)
from stub_server.webhook_delivery.retry_policy import RetryPolicy

Outcome = Literal["none", "success", "failed"]
OUTCOMES: tuple[Outcome, ...] = ("none", "success", "failed")
#: The request log's formats (``stub_server.access_log``).
AccessLogFormat = Literal["clf", "json"]
ACCESS_LOG_FORMATS: tuple[AccessLogFormat, ...] = ("clf", "json")

DEFAULT_DB = "paysuite-stub.db"
CREDENTIALS_NAME = "paysuite-credentials.yaml"


class SettingsError(ValueError):
    """A setting cannot be used; the message names the key."""


@dataclass(frozen=True)
class ResolveRule:
    """Auto-resolution for customer numbers matching a suffix or a regex."""

    outcome: Outcome
    delay_s: float
    number_suffix: str | None = None
    number_regex: re.Pattern[str] | None = None

    def matches(self, number: str) -> bool:
        if self.number_suffix is not None and not number.endswith(self.number_suffix):
            return False
        if self.number_regex is not None and not self.number_regex.search(number):
            return False
        return True


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
    #: RC-33: accept a bare token in ``Authorization`` (paypack-js sends no ``Bearer``), as the
    #: live service does; ``True`` demands ``Bearer <token>`` (``--strict-auth``). A plain
    #: setting so that a variant or a config file can choose either.
    strict_auth: bool = False
    #: A connection that has not sent a complete request head this long after it opened or
    #: after its previous response is closed: idle keep-alive and slowloris alike (aiohttp's
    #: keepalive_timeout, which runs from the connection's start).
    idle_timeout_s: float = 10.0
    #: A request body that has not fully arrived this long after its handler started: 408.
    body_timeout_s: float = 10.0
    listen_backlog: int = 128
    authorize_limits: AuthorizeLimits = field(default_factory=AuthorizeLimits)
    #: The request log: ``clf`` (Common Log Format) or ``json`` lines; None is off (the default).
    access_log: AccessLogFormat | None = None
    #: Where the request log goes (appended); None is stderr.
    access_log_file: str | None = None
    #: Webhook endpoints from the config file, (mode, URL) pairs (RC-40); the database keeps
    #: them from the first start on, their secrets in ``<db>.webhook-secrets``.
    webhooks: tuple[tuple[str, str], ...] = ()
    #: How failed webhook deliveries are retried (``stub_server.webhook_delivery.retry_policy``).
    webhook_retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: The signature headers every delivery carries: ``paysuite`` (Paysuite-Signature, with
    #: its timestamp) and ``live`` (X-Paypack-Signature, what merchants' receivers verify).
    webhook_signatures: tuple[str, ...] = ("paysuite", "live")

    @property
    def number_regex(self) -> re.Pattern[str]:
        return re.compile(self.number_pattern, re.ASCII)

    @property
    def tz(self) -> timezone:
        return parse_offset(self.utc_offset, "utc_offset")

    def fault(self, name: str) -> bool:
        return name in self.faults

    @cached_property
    def switches(self) -> frozenset[str]:
        """The variants as given plus every part of a composite (``live``, ``lenient``).

        Computed once per settings object (the dataclass is frozen, so it cannot go stale)."""
        return expand_variants(self.variants)

    def variant(self, name: str) -> bool:
        """Whether the variant or behaviour ``name`` is on, directly or through a composite."""
        return name in self.switches


def parse_offset(text: str, where: str) -> timezone:
    match = re.fullmatch(r"([+-])(\d{2}):(\d{2})", str(text))
    if not match:
        raise SettingsError(f"{where}: expected a numeric offset like +02:00, got {text!r}")
    sign = -1 if match.group(1) == "-" else 1
    hours, minutes = int(match.group(2)), int(match.group(3))
    if hours > 23 or minutes > 59:
        raise SettingsError(f"{where}: offset out of range: {text!r}")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _num(value: Any, where: str, *, minimum: float | None = 0, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise SettingsError(f"{where}: expected a finite number, got {value!r}")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        raise SettingsError(f"{where}: must be {'>' if strict else '>='} {minimum}, got {value!r}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SettingsError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _outcome(value: Any, where: str) -> Outcome:
    for outcome in OUTCOMES:
        if value == outcome:
            return outcome
    raise SettingsError(f"{where}: expected one of {', '.join(OUTCOMES)}, got {value!r}")


def _regex(value: Any, where: str) -> re.Pattern[str]:
    text = _str(value, where)
    try:
        return re.compile(text)
    except re.error as exc:
        raise SettingsError(f"{where}: not a valid regex ({exc})") from None


def _auto_resolve(raw: Any) -> AutoResolve:
    if raw is None:
        return AutoResolve()
    if not isinstance(raw, Mapping):
        raise SettingsError("auto_resolve: expected a mapping with default and rules")
    default = raw.get("default") or {}
    if not isinstance(default, Mapping):
        raise SettingsError("auto_resolve.default: expected a mapping with outcome and delay_s")
    rules = []
    raw_rules = raw.get("rules") or []
    if not isinstance(raw_rules, list):
        raise SettingsError("auto_resolve.rules: expected a list")
    for i, rule in enumerate(raw_rules):
        where = f"auto_resolve.rules[{i}]"
        if not isinstance(rule, Mapping):
            raise SettingsError(f"{where}: expected a mapping")
        suffix = rule.get("number_suffix")
        regex = rule.get("number_regex")
        if suffix is None and regex is None:
            raise SettingsError(f"{where}: needs number_suffix or number_regex")
        rules.append(
            ResolveRule(
                outcome=_outcome(rule.get("outcome"), f"{where}.outcome"),
                delay_s=_num(rule.get("delay_s", 0), f"{where}.delay_s"),
                number_suffix=None
                if suffix is None
                else _str(str(suffix), f"{where}.number_suffix"),
                number_regex=None if regex is None else _regex(regex, f"{where}.number_regex"),
            )
        )
    return AutoResolve(
        default_outcome=_outcome(default.get("outcome", "none"), "auto_resolve.default.outcome"),
        default_delay_s=_num(default.get("delay_s", 0), "auto_resolve.default.delay_s"),
        rules=tuple(rules),
    )


def _int(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SettingsError(f"{where}: expected an integer {low}..{high}, got {value!r}")
    return value


def _authorize_limits(raw: Any) -> AuthorizeLimits:
    """``{per_client: {burst, per_s}, per_peer: {burst, per_s}, hash_workers, hash_queue}``."""
    if not isinstance(raw, Mapping):
        raise SettingsError("authorize_limits: expected a mapping")
    unknown = sorted(set(raw) - {"per_client", "per_peer", "hash_workers", "hash_queue"})
    if unknown:
        raise SettingsError(f"authorize_limits: unknown key(s) {', '.join(map(str, unknown))}")
    base = AuthorizeLimits()
    buckets = {}
    for name in ("per_client", "per_peer"):
        default: Bucket = getattr(base, name)
        given = raw.get(name) or {}
        if not isinstance(given, Mapping) or set(given) - {"burst", "per_s"}:
            raise SettingsError(f"authorize_limits.{name}: expected {{burst, per_s}}")
        buckets[name] = Bucket(
            _int(given.get("burst", default.burst), f"authorize_limits.{name}.burst", 1, 10**6),
            _num(given.get("per_s", default.per_s), f"authorize_limits.{name}.per_s"),
        )
    return AuthorizeLimits(
        per_client=buckets["per_client"],
        per_peer=buckets["per_peer"],
        hash_workers=_int(raw.get("hash_workers", base.hash_workers), "hash_workers", 1, 64),
        hash_queue=_int(raw.get("hash_queue", base.hash_queue), "hash_queue", 0, 10_000),
    )


def _access_log(value: Any) -> AccessLogFormat | None:
    """``clf``, ``json``, or off (``none``, ``off``, ``false``, null)."""
    if value is None or value is False or value in ("none", "off"):
        return None
    for fmt in ACCESS_LOG_FORMATS:
        if value == fmt:
            return fmt
    raise SettingsError(f"access_log: expected one of clf, json, none; got {value!r}")


def _webhooks(raw: Any) -> tuple[tuple[str, str], ...]:
    """``{development: URL, production: URL}``: loopback URLs only (``endpoint_url``)."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise SettingsError("webhooks: expected a mapping of mode to URL, e.g. development: URL")
    endpoints = []
    for mode, url in raw.items():
        try:
            endpoints.append((check_mode(mode), check_endpoint_url(url)))
        except EndpointUrlError as exc:
            raise SettingsError(f"webhooks.{mode}: {exc}") from None
    return tuple(endpoints)


def _webhook_retry(raw: Any) -> RetryPolicy:
    """``{base_s, cap_s, max_attempts, timeout_s}``, each optional."""
    if not isinstance(raw, Mapping):
        raise SettingsError("webhook_retry: expected a mapping")
    known = {"base_s", "cap_s", "max_attempts", "timeout_s"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SettingsError(f"webhook_retry: unknown key(s) {', '.join(map(str, unknown))}")
    base = RetryPolicy()
    policy = RetryPolicy(
        base_s=_num(raw.get("base_s", base.base_s), "webhook_retry.base_s", strict=True),
        cap_s=_num(raw.get("cap_s", base.cap_s), "webhook_retry.cap_s", strict=True),
        max_attempts=_int(
            raw.get("max_attempts", base.max_attempts), "webhook_retry.max_attempts", 1, 1000
        ),
        timeout_s=_num(
            raw.get("timeout_s", base.timeout_s), "webhook_retry.timeout_s", strict=True
        ),
    )
    if policy.cap_s < policy.base_s:
        raise SettingsError("webhook_retry: cap_s must be >= base_s")
    return policy


def _webhook_signatures(raw: Any) -> tuple[str, ...]:
    """``[paysuite, live]`` (the default), or either alone."""
    names = raw if isinstance(raw, list) else [raw]
    known = ("paysuite", "live")
    if not names or any(name not in known for name in names):
        raise SettingsError(
            f"webhook_signatures: expected a list of paysuite and/or live, got {raw!r}"
        )
    return tuple(name for name in known if name in names)


def _names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{where}: expected a list of names")
    return list(value)


KNOWN_KEYS = frozenset(
    {
        "host", "port", "db", "credentials", "jwt_key", "access_ttl_s", "refresh_ttl_s",
        "amount", "number_pattern", "fee_rate", "utc_offset", "pending_timeout_s", "sandbox",
        "max_body_bytes", "auto_resolve", "faults", "drop_rate", "variants", "strict_auth",
        "idle_timeout_s", "body_timeout_s", "listen_backlog", "authorize_limits",
        "access_log", "access_log_file", "webhooks", "webhook_retry", "webhook_signatures",
    }
)  # fmt: skip


def settings_from_mapping(
    data: Mapping[str, Any], base: StubSettings | None = None
) -> StubSettings:
    """Apply a config mapping (the YAML file's content) over ``base``; validate every key."""
    s = base or StubSettings()
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise SettingsError(
            f"unknown setting(s) {', '.join(map(str, unknown))}; "
            f"known: {', '.join(sorted(KNOWN_KEYS))}"
        )
    changes: dict[str, Any] = {}
    if "host" in data:
        changes["host"] = _str(data["host"], "host")
    if "port" in data:
        port = data["port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise SettingsError(f"port: expected an integer 0..65535, got {port!r}")
        changes["port"] = port
    if "access_log" in data:
        changes["access_log"] = _access_log(data["access_log"])
    for key in ("db", "credentials", "jwt_key", "access_log_file"):
        if key in data and data[key] is not None:
            changes[key] = _str(str(data[key]), key)
    for key in (
        "access_ttl_s",
        "refresh_ttl_s",
        "pending_timeout_s",
        "idle_timeout_s",
        "body_timeout_s",
    ):
        if key in data:
            changes[key] = _num(data[key], key, strict=True)
    if "fee_rate" in data:
        changes["fee_rate"] = _num(data["fee_rate"], "fee_rate")
    if "drop_rate" in data:
        rate = _num(data["drop_rate"], "drop_rate")
        if rate > 1:
            raise SettingsError(f"drop_rate: must be between 0 and 1, got {rate!r}")
        changes["drop_rate"] = rate
    if "max_body_bytes" in data:
        size = data["max_body_bytes"]
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise SettingsError(f"max_body_bytes: expected a positive integer, got {size!r}")
        changes["max_body_bytes"] = size
    if "listen_backlog" in data:
        changes["listen_backlog"] = _int(data["listen_backlog"], "listen_backlog", 1, 65535)
    if "authorize_limits" in data:
        changes["authorize_limits"] = _authorize_limits(data["authorize_limits"])
    if "amount" in data:
        amount = data["amount"]
        if not isinstance(amount, Mapping):
            raise SettingsError("amount: expected a mapping with min and max")
        changes["amount_min"] = _num(amount.get("min", s.amount_min), "amount.min", minimum=None)
        changes["amount_max"] = _num(amount.get("max", s.amount_max), "amount.max", minimum=None)
    if "number_pattern" in data:
        changes["number_pattern"] = _regex(data["number_pattern"], "number_pattern").pattern
    if "utc_offset" in data:
        parse_offset(data["utc_offset"], "utc_offset")
        changes["utc_offset"] = data["utc_offset"]
    for key in ("sandbox", "strict_auth"):
        if key in data:
            if not isinstance(data[key], bool):
                raise SettingsError(f"{key}: expected true or false, got {data[key]!r}")
            changes[key] = data[key]
    if "auto_resolve" in data:
        changes["auto_resolve"] = _auto_resolve(data["auto_resolve"])
    if "webhooks" in data:
        changes["webhooks"] = _webhooks(data["webhooks"])
    if "webhook_retry" in data:
        changes["webhook_retry"] = _webhook_retry(data["webhook_retry"])
    if "webhook_signatures" in data:
        changes["webhook_signatures"] = _webhook_signatures(data["webhook_signatures"])
    try:
        if "faults" in data:
            changes["faults"] = check_names(_names(data["faults"], "faults"), FAULTS, "fault")
        if "variants" in data:
            changes["variants"] = check_names(
                _names(data["variants"], "variants"), VARIANTS, "variant"
            )
    except UnknownSwitchError as exc:
        raise SettingsError(str(exc)) from None
    result = replace(s, **changes)
    if result.amount_min > result.amount_max:
        raise SettingsError(
            f"amount: min {result.amount_min} is greater than max {result.amount_max}"
        )
    return result


def load_settings_file(path: str | Path, base: StubSettings | None = None) -> StubSettings:
    """Read a stub YAML config file."""
    path = Path(path)
    data = read_yaml(path, SettingsError, "the config")
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SettingsError(f"{path}: the config must be a YAML mapping")
    try:
        return settings_from_mapping(data, base)
    except SettingsError as exc:
        raise SettingsError(f"{path}: {exc}") from None
