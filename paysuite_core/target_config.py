"""The target configuration: everything paysuite knows about an implementation under test.

One YAML format (``schemas/target.schema.json``) serves three readers: the stub writes it as its
credentials file, the conformance suite and the load profiles read it. One parser means a file
that works for one works for all, and a mistake is reported the same way everywhere: a
``TargetConfigError`` naming the key. Values may be ``${VAR}`` or ``${VAR:-default}``, so secrets
can stay out of the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Required, TypedDict
from urllib.parse import urlsplit

import yaml

from paysuite_core.config_schema import schema, validate
from paysuite_core.tls import TLSSettings
from paysuite_core.usage import UsageError
from paysuite_core.webhooks.signature import DEFAULT_TOLERANCE_S
from paysuite_core.yamlfile import read_yaml

Privilege = Literal["read", "read-write", "cashin", "cashout"]
PRIVILEGES: tuple[Privilege, ...] = ("read", "read-write", "cashin", "cashout")

DriverName = Literal["sandbox", "magic-numbers", "command", "manual", "none"]

#: The Rwandan mobile pattern the live service's JavaScript SDK accepts
#: (docs/reference-choices.md), with ``[0-9]`` for the SDK's ``\d``: Python's ``\d`` also
#: matches non-ASCII digits such as "٣", which JSON Schema generators (and the live service)
#: treat as invalid.
RWANDA_MOBILE_PATTERN = r"^(\+?25)?(078|079|075|073|072)[0-9]{7}$"

_ENV_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")

#: The keys each driver reads: under another driver they are ignored, not checked
_DRIVER_KEYS = {
    "sandbox": ("confirm", "cancel"),
    "magic-numbers": ("confirm_number", "cancel_number"),
    "command": ("command",),
}


class TargetConfigError(UsageError, ValueError):
    """The configuration cannot be used; the message says which key and why."""


@dataclass(frozen=True)
class Application:
    """One merchant application: the credentials the suite authorizes with."""

    client_id: str
    client_secret: str
    privilege: Privilege = "read-write"
    merchant: str = "default"

    def can_cashin(self) -> bool:
        return self.privilege in ("read-write", "cashin")

    def can_cashout(self) -> bool:
        return self.privilege in ("read-write", "cashout")


@dataclass(frozen=True)
class HttpAction:
    """A ``METHOD URL-template`` pair, as the sandbox driver's confirm and cancel are written."""

    method: str
    url_template: str

    def url(self, ref: str) -> str:
        return self.url_template.replace("{ref}", ref)

    def render(self) -> str:
        return f"{self.method} {self.url_template}"


@dataclass(frozen=True)
class ShortLivedPair:
    """Where the target issues a token pair whose access token expires soon (``short_lived_pair``).

    A target's ordinary lifetime (15 minutes, typically) is too long for a run to wait out, so
    expiry (AUTH-008) would go unchecked; a target that offers a test route (or a test
    application's endpoint) issuing short-lived pairs declares it here. ``authorize`` takes the
    authorize request's body and answers a token pair, refreshable on the ordinary paths.
    """

    authorize: HttpAction
    access_token_ttl_s: float

    def to_dict(self) -> dict[str, object]:
        return {
            "authorize": self.authorize.render(),
            "access_token_ttl_s": self.access_token_ttl_s,
        }


@dataclass(frozen=True)
class CustomerDriver:
    """How a customer is made to confirm or cancel a pending transaction."""

    driver: DriverName = "none"
    confirm: HttpAction | None = None  # sandbox
    cancel: HttpAction | None = None  # sandbox
    confirm_number: str | None = None  # magic-numbers
    cancel_number: str | None = None  # magic-numbers
    command: str | None = None  # command: run with {ref} and {outcome} substituted
    timeout_s: float = 30.0

    @property
    def can_resolve(self) -> bool:
        """Whether the suite can drive a transaction out of ``pending`` at all."""
        return self.driver != "none"


@dataclass(frozen=True)
class AmountRange:
    min: float = 100
    max: float = 100_000


@dataclass(frozen=True)
class WebhookTarget:
    """Where the target's webhook deliveries reach paysuite's receiver (optional section).

    ``listen`` is where the receiver binds; ``url`` is that receiver as the target reaches it
    (they differ behind a tunnel or a container's port map); ``mode`` is the X-Webhook-Mode
    the checks send, naming the target's endpoint that points at ``url``.
    """

    listen_host: str
    listen_port: int
    url: str
    secret: str
    mode: str = "development"
    tolerance_s: float = DEFAULT_TOLERANCE_S
    #: The first wait before a failed delivery is retried, where the target declares one
    #: (a stub configured with its own ``webhook_retry``); None: RC-40's 1 s.
    retry_base_s: float | None = None

    @property
    def listen(self) -> str:
        host = f"[{self.listen_host}]" if ":" in self.listen_host else self.listen_host
        return f"{host}:{self.listen_port}"

    def to_dict(self) -> dict[str, object]:
        rest = {
            key: value
            for key, value in vars(self).items()
            if not key.startswith("listen_") and value is not None
        }
        return {"listen": self.listen, **rest}


@dataclass(frozen=True)
class TargetConfig:
    base_url: str
    applications: tuple[Application, ...]
    customer: CustomerDriver = field(default_factory=CustomerDriver)
    access_token_ttl_s: float = 900
    max_wait_s: float = 30
    numbers: tuple[str, ...] = ()
    number_pattern: str | None = None
    amount: AmountRange = field(default_factory=AmountRange)
    webhooks: WebhookTarget | None = None
    #: Whether the target declares that a refresh token works once (RC-10); None: not declared,
    #: so a rule that depends on it (the proxy's AUTH-012) is not judged.
    refresh_rotation: bool | None = None
    #: The target's fee rate, where it declares one: the reference profile judges the fee as
    #: RC-15 computes it, ``round(amount * fee_rate, 2)`` (0.023 when not declared).
    fee_rate: float | None = None
    #: How long the target leaves a transaction pending before it fails it on its own, where
    #: it declares one (RC-18); None: not declared, so no check waits for a time-out, and none
    #: treats a transaction left alone as one that may have timed out.
    pending_timeout_s: float | None = None
    #: How to reach the target over HTTPS (``tls:``: CA bundle, client certificate, insecure),
    #: its paths made absolute against the file's folder; the command line's flags override it
    #: and the environment fills what neither gives (``paysuite_core.tls.TLSSettings.resolve``).
    tls: TLSSettings | None = None
    #: Where a pair with a short-lived access token is issued, for AUTH-008 when the ordinary
    #: lifetime exceeds ``max_wait_s``; None: not declared.
    short_lived_pair: ShortLivedPair | None = None

    def expiry_ttl_s(self) -> float | None:
        """The access-token lifetime AUTH-008 can wait out within ``max_wait_s``: the ordinary
        one, else the declared short-lived pair's; None when neither is short enough."""
        if float(self.access_token_ttl_s) <= self.max_wait_s:
            return float(self.access_token_ttl_s)
        short = self.short_lived_pair
        if short is not None and float(short.access_token_ttl_s) <= self.max_wait_s:
            return float(short.access_token_ttl_s)
        return None

    @property
    def effective_number_pattern(self) -> str:
        """The regex valid customer numbers match: explicit, else the Rwandan default."""
        return self.number_pattern or RWANDA_MOBILE_PATTERN

    def applications_with(self, *privileges: Privilege) -> list[Application]:
        return [app for app in self.applications if app.privilege in privileges]

    def merchants(self) -> list[str]:
        """Merchant labels in the order they first appear."""
        return list(dict.fromkeys(app.merchant for app in self.applications))

    def with_base_url(self, base_url: str) -> TargetConfig:
        return replace(self, base_url=_check_url(base_url, "base_url"))

    def to_dict(self) -> dict[str, object]:
        """The YAML-ready form, as ``load_target_config`` reads it back."""
        customer = {
            key: value.render() if isinstance(value, HttpAction) else value
            for key, value in vars(self.customer).items()
            if value is not None
        }
        data = {
            **vars(self),
            "applications": [dict(vars(app)) for app in self.applications],
            "customer": customer,
            "numbers": list(self.numbers),
            "amount": dict(vars(self.amount)),
            "webhooks": self.webhooks.to_dict() if self.webhooks else None,
            "tls": _tls_dict(self.tls),
            "short_lived_pair": self.short_lived_pair.to_dict() if self.short_lived_pair else None,
        }
        return {key: value for key, value in data.items() if value not in (None, [], "")}


def _resolve(node: object, spec: Mapping[str, Any], env: Mapping[str, str], where: str) -> Any:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in every string, then give a value the type its
    key expects: text where a number is due (``${WAIT}``, a quoted ``"30"``) becomes one, and a
    number where text is due (``merchant: 42``) becomes text."""
    kinds = spec.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if isinstance(node, dict):
        properties = spec.get("properties", {})
        return {
            key: _resolve(value, properties.get(key, {}), env, f"{where}.{key}" if where else key)
            for key, value in node.items()
        }
    if isinstance(node, list):
        items = spec.get("items", {})
        return [_resolve(item, items, env, f"{where}[{i}]") for i, item in enumerate(node)]
    if isinstance(node, int | float) and not isinstance(node, bool) and "string" in kinds:
        return str(node)
    if not isinstance(node, str):
        return node

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group("name"), match.group("default")
        if name in env or default is not None:
            return env.get(name, default or "")
        raise TargetConfigError(f"{where}: environment variable {name} is not set")

    text = _ENV_REFERENCE.sub(substitute, node)
    if "number" in kinds:
        with suppress(ValueError):
            number = float(text)
            return int(number) if number.is_integer() else number
    return text


def _check_url(value: object, where: str) -> str:
    parts = urlsplit(value) if isinstance(value, str) else None
    if not parts or parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetConfigError(f"{where}: expected an http(s) URL, got {value!r}")
    return str(value).rstrip("/")


def _http_action(text: str, where: str) -> HttpAction:
    method, _, url = text.strip().partition(" ")
    if not url:
        method, url = "POST", text.strip()
    if method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        raise TargetConfigError(f"{where}: expected 'METHOD URL', got {text!r}")
    return HttpAction(method.upper(), _check_url(url.strip(), where))


def _customer(raw: dict[str, Any]) -> CustomerDriver:
    driver = raw.get("driver", "none")
    given = {key: raw[key] for key in _DRIVER_KEYS.get(driver, ())}
    if driver == "sandbox":
        given = {key: _http_action(text, f"customer.{key}") for key, text in given.items()}
    return CustomerDriver(driver=driver, timeout_s=raw.get("timeout_s", 30.0), **given)


class _ShortLivedPairSection(TypedDict):
    """The ``short_lived_pair`` section, checked against its schema first (as the others)."""

    authorize: str
    access_token_ttl_s: float


class _WebhooksSection(TypedDict, total=False):
    listen: str
    url: str
    secret: Required[str]
    mode: str
    tolerance_s: float
    retry_base_s: float


def _short_lived_pair(raw: _ShortLivedPairSection) -> ShortLivedPair:
    return ShortLivedPair(
        authorize=_http_action(raw["authorize"], "short_lived_pair.authorize"),
        access_token_ttl_s=raw["access_token_ttl_s"],
    )


def _listen_address(value: str, where: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) on loopback: the receiver binds nowhere else."""
    host, sep, port_text = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise TargetConfigError(f"{where}: expected HOST:PORT, got {value!r}")
    if host not in ("localhost", "::1") and not host.startswith("127."):
        raise TargetConfigError(f"{where}: {host} is not a loopback address (127.0.0.0/8, ::1)")
    return host, int(port_text)


def _webhooks(raw: _WebhooksSection) -> WebhookTarget:
    url = raw.get("url") or None
    if raw.get("listen"):
        host, port = _listen_address(raw["listen"], "webhooks.listen")
    elif url is None:
        raise TargetConfigError("webhooks.listen: required (HOST:PORT where the receiver binds)")
    elif (url_port := urlsplit(_check_url(url, "webhooks.url")).port) is None:
        raise TargetConfigError("webhooks.url: has no port; give webhooks.listen")
    else:
        host, port = _listen_address(f"{urlsplit(url).hostname}:{url_port}", "webhooks.url")
    hooks = WebhookTarget(
        listen_host=host,
        listen_port=port,
        url=url or "",  # as written when given: its path is the endpoint's
        secret=raw["secret"],
        mode=raw.get("mode", "development"),
        tolerance_s=raw.get("tolerance_s", DEFAULT_TOLERANCE_S),
        retry_base_s=raw.get("retry_base_s"),
    )
    return hooks if url else replace(hooks, url=f"http://{hooks.listen}/")


def _tls_dict(tls: TLSSettings | None) -> dict[str, object] | None:
    if tls is None:
        return None
    given = {key: value for key, value in tls.to_dict().items() if value not in (None, False)}
    return given or None


def _tls(raw: Mapping[str, Any], base_dir: Path | None) -> TLSSettings:
    """The ``tls:`` section, each path relative to the configuration file's folder."""

    def path(key: str) -> str | None:
        value = raw.get(key)
        if not value:
            return None
        full = Path(value).expanduser()
        if not full.is_absolute() and base_dir is not None:
            full = base_dir / full
        if not full.is_file():
            raise TargetConfigError(f"tls.{key}: no such file: {full}")
        return str(full)

    if raw.get("client_key") and not raw.get("client_cert"):
        raise TargetConfigError("tls.client_key: needs tls.client_cert (the certificate it signs)")
    return TLSSettings(
        ca_bundle=path("ca_bundle"),
        client_cert=path("client_cert"),
        client_key=path("client_key"),
        insecure=bool(raw.get("insecure", False)),
    )


def parse_target_config(
    data: Any,
    *,
    env: Mapping[str, str] | None = None,
    base_url: str | None = None,
    base_dir: Path | None = None,
) -> TargetConfig:
    """Validate a parsed YAML document; ``base_url`` (from ``--target``) overrides the file's;
    ``base_dir`` is where the ``tls:`` section's relative paths start (the file's folder)."""
    data = _resolve(data, schema("target"), os.environ if env is None else env, "")
    validate("target", data, TargetConfigError)
    given = {key: value for key, value in data.items() if value is not None}
    amount = AmountRange(**given.get("amount", {}))
    if amount.min > amount.max:
        raise TargetConfigError(f"amount: min {amount.min} is greater than max {amount.max}")
    return TargetConfig(
        **{
            **given,
            "base_url": _check_url(base_url or given.get("base_url"), "base_url"),
            "applications": tuple(Application(**app) for app in given["applications"]),
            "customer": _customer(given.get("customer", {})),
            "numbers": tuple(given.get("numbers", ())),
            "amount": amount,
            "webhooks": _webhooks(given["webhooks"]) if "webhooks" in given else None,
            "tls": _tls(given["tls"], base_dir) if "tls" in given else None,
            "short_lived_pair": _short_lived_pair(given["short_lived_pair"])
            if "short_lived_pair" in given
            else None,
        }
    )


def load_target_config(
    path: str | Path, *, env: Mapping[str, str] | None = None, base_url: str | None = None
) -> TargetConfig:
    """Read and validate a target configuration file."""
    path = Path(path)
    data = read_yaml(path, TargetConfigError)
    try:
        return parse_target_config(data, env=env, base_url=base_url, base_dir=path.resolve().parent)
    except TargetConfigError as exc:
        raise TargetConfigError(f"{path}: {exc}") from None


def write_target_config(config: TargetConfig, path: str | Path, *, header: str = "") -> Path:
    """Write ``config`` as YAML readable only by its owner: it holds client secrets."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(config.to_dict(), sort_keys=False)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    return path
