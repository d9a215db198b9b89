"""The target configuration: everything paysuite knows about an implementation under test.

One YAML format serves three readers: the stub writes it as its credentials file, the conformance
suite and the load profiles read it. Keeping the parser in one place means a file that works for
one works for all, and a mistake in it is reported the same way everywhere: as a
``TargetConfigError`` whose message names the offending key.

Any string value may name environment variables as ``${VAR}`` or ``${VAR:-default}``, so secrets
can stay out of the file (``client_secret: ${PAYPACK_SECRET}``). A value that is wholly one
reference is converted to the type its key expects (``max_wait_s: ${WAIT}``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml

from paysuite_core.webhook_signature import DEFAULT_TOLERANCE_S
from paysuite_core.yamlfile import read_yaml

Privilege = Literal["read", "read-write", "cashin", "cashout"]
PRIVILEGES: tuple[Privilege, ...] = ("read", "read-write", "cashin", "cashout")

DriverName = Literal["sandbox", "magic-numbers", "command", "manual", "none"]
DRIVERS: tuple[DriverName, ...] = ("sandbox", "magic-numbers", "command", "manual", "none")

#: The Rwandan mobile pattern the live service's JavaScript SDK accepts (FIELD-NOTES.md), with
#: ``[0-9]`` for the SDK's ``\d``: Python's ``\d`` also matches non-ASCII digits such as "٣",
#: which JSON Schema generators (and the live service) treat as invalid.
RWANDA_MOBILE_PATTERN = r"^(\+?25)?(078|079|075|073|072)[0-9]{7}$"

#: Hosts a webhook receiver may bind (with 127.0.0.0/8): paysuite listens on loopback only.
LOOPBACK_HOSTS = ("localhost", "::1")

_ENV_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")


class TargetConfigError(ValueError):
    """The configuration cannot be used; the message says which key and why."""


#: Every key the format defines, per section: anything else is a typo to report, not to ignore
#: (a misspelt ``amout:`` would otherwise silently test with the default bounds).
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "": frozenset(
        {"base_url", "applications", "customer", "access_token_ttl_s", "max_wait_s", "numbers",
         "number_pattern", "amount", "webhooks", "refresh_rotation", "fee_rate"}
    ),
    "applications[]": frozenset({"client_id", "client_secret", "privilege", "merchant"}),
    "customer": frozenset(
        {"driver", "confirm", "cancel", "confirm_number", "cancel_number", "command", "timeout_s"}
    ),
    "amount": frozenset({"min", "max"}),
    "webhooks": frozenset({"listen", "url", "secret", "mode", "tolerance_s"}),
}  # fmt: skip


def _reject_unknown_keys(data: dict[str, Any]) -> None:
    def check(mapping: Any, section: str, where: str) -> None:
        if not isinstance(mapping, dict):
            return
        for key in mapping:
            if key not in KNOWN_KEYS[section]:
                known = ", ".join(sorted(KNOWN_KEYS[section]))
                raise TargetConfigError(f"{where}{key}: unknown key (known: {known})")

    check(data, "", "")
    for index, app in enumerate(data.get("applications") or []):
        check(app, "applications[]", f"applications[{index}].")
    check(data.get("customer"), "customer", "customer.")
    check(data.get("amount"), "amount", "amount.")
    check(data.get("webhooks"), "webhooks", "webhooks.")


@dataclass(frozen=True)
class Application:
    """One merchant application: the credentials the suite authorizes with."""

    client_id: str
    client_secret: str
    privilege: Privilege
    merchant: str

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

    @property
    def listen(self) -> str:
        host = f"[{self.listen_host}]" if ":" in self.listen_host else self.listen_host
        return f"{host}:{self.listen_port}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "listen": self.listen,
            "url": self.url,
            "secret": self.secret,
            "mode": self.mode,
            "tolerance_s": self.tolerance_s,
        }


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
        from dataclasses import replace

        return replace(self, base_url=_check_url(base_url, "base_url"))

    def to_dict(self) -> dict[str, Any]:
        """The YAML-ready form, as ``load_target_config`` reads it back."""
        customer: dict[str, Any] = {"driver": self.customer.driver}
        if self.customer.confirm:
            customer["confirm"] = self.customer.confirm.render()
        if self.customer.cancel:
            customer["cancel"] = self.customer.cancel.render()
        for key in ("confirm_number", "cancel_number", "command"):
            value = getattr(self.customer, key)
            if value is not None:
                customer[key] = value
        customer["timeout_s"] = self.customer.timeout_s
        data: dict[str, Any] = {
            "base_url": self.base_url,
            "applications": [
                {
                    "client_id": app.client_id,
                    "client_secret": app.client_secret,
                    "privilege": app.privilege,
                    "merchant": app.merchant,
                }
                for app in self.applications
            ],
            "customer": customer,
            "access_token_ttl_s": self.access_token_ttl_s,
            "max_wait_s": self.max_wait_s,
        }
        if self.numbers:
            data["numbers"] = list(self.numbers)
        if self.number_pattern:
            data["number_pattern"] = self.number_pattern
        data["amount"] = {"min": self.amount.min, "max": self.amount.max}
        if self.webhooks is not None:
            data["webhooks"] = self.webhooks.to_dict()
        if self.refresh_rotation is not None:
            data["refresh_rotation"] = self.refresh_rotation
        if self.fee_rate is not None:
            data["fee_rate"] = self.fee_rate
        return data


def expand_env(value: str, env: Mapping[str, str], where: str) -> str:
    """Replace ``${VAR}`` / ``${VAR:-default}`` references; an unset one without default fails."""

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group("name"), match.group("default")
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise TargetConfigError(f"{where}: environment variable {name} is not set")

    return _ENV_REFERENCE.sub(substitute, value)


def _expand_tree(node: Any, env: Mapping[str, str], where: str) -> Any:
    if isinstance(node, str):
        return expand_env(node, env, where)
    if isinstance(node, list):
        return [_expand_tree(item, env, f"{where}[{i}]") for i, item in enumerate(node)]
    if isinstance(node, dict):
        return {
            key: _expand_tree(value, env, f"{where}.{key}" if where else str(key))
            for key, value in node.items()
        }
    return node


def _check_url(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise TargetConfigError(f"{where}: expected an http(s) URL, got {value!r}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetConfigError(f"{where}: expected an http(s) URL, got {value!r}")
    return value.rstrip("/")


def _number(value: Any, where: str, *, positive: bool = True) -> float:
    if isinstance(value, bool):
        raise TargetConfigError(f"{where}: expected a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TargetConfigError(f"{where}: expected a number, got {value!r}") from None
    if positive and number <= 0:
        raise TargetConfigError(f"{where}: must be greater than 0, got {value!r}")
    return int(number) if number.is_integer() else number


def _text(value: Any, where: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise TargetConfigError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _http_action(value: Any, where: str) -> HttpAction:
    text = _text(value, where)
    method, _, url = text.strip().partition(" ")
    if not url:
        method, url = "POST", text.strip()
    if method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        raise TargetConfigError(f"{where}: expected 'METHOD URL', got {text!r}")
    return HttpAction(method.upper(), _check_url(url.strip(), where))


def _application(raw: Any, where: str) -> Application:
    if not isinstance(raw, dict):
        raise TargetConfigError(f"{where}: expected a mapping with client_id, client_secret, ...")
    privilege = raw.get("privilege", "read-write")
    if privilege not in PRIVILEGES:
        raise TargetConfigError(
            f"{where}.privilege: {privilege!r} is not one of {', '.join(PRIVILEGES)}"
        )
    return Application(
        client_id=_text(raw.get("client_id"), f"{where}.client_id"),
        client_secret=_text(raw.get("client_secret"), f"{where}.client_secret"),
        privilege=privilege,
        merchant=_text(raw.get("merchant", "default"), f"{where}.merchant"),
    )


def _customer(raw: Any) -> CustomerDriver:
    if raw is None:
        return CustomerDriver()
    if not isinstance(raw, dict):
        raise TargetConfigError("customer: expected a mapping with a 'driver' key")
    driver = raw.get("driver", "none")
    if driver not in DRIVERS:
        raise TargetConfigError(f"customer.driver: {driver!r} is not one of {', '.join(DRIVERS)}")
    timeout_s = _number(raw.get("timeout_s", 30), "customer.timeout_s")
    if driver == "sandbox":
        for key in ("confirm", "cancel"):
            if not raw.get(key):
                raise TargetConfigError(f"customer.{key}: required by the sandbox driver")
        return CustomerDriver(
            driver=driver,
            confirm=_http_action(raw["confirm"], "customer.confirm"),
            cancel=_http_action(raw["cancel"], "customer.cancel"),
            timeout_s=timeout_s,
        )
    if driver == "magic-numbers":
        return CustomerDriver(
            driver=driver,
            confirm_number=_text(raw.get("confirm_number"), "customer.confirm_number"),
            cancel_number=_text(raw.get("cancel_number"), "customer.cancel_number"),
            timeout_s=timeout_s,
        )
    if driver == "command":
        return CustomerDriver(
            driver=driver,
            command=_text(raw.get("command"), "customer.command"),
            timeout_s=timeout_s,
        )
    return CustomerDriver(driver=driver, timeout_s=timeout_s)


def _listen_address(value: str, where: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) on loopback: the receiver binds nowhere else."""
    host, sep, port_text = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise TargetConfigError(f"{where}: expected HOST:PORT, got {value!r}")
    if host not in LOOPBACK_HOSTS and not host.startswith("127."):
        raise TargetConfigError(f"{where}: {host} is not a loopback address (127.0.0.0/8, ::1)")
    return host, int(port_text)


def _webhooks(raw: Any) -> WebhookTarget | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TargetConfigError("webhooks: expected a mapping with listen (or url) and secret")
    if not raw.get("listen") and not raw.get("url"):
        raise TargetConfigError("webhooks.listen: required (HOST:PORT where the receiver binds)")
    url = raw["url"] if raw.get("url") else None
    if url is not None:
        _check_url(url, "webhooks.url")  # kept as written: the path is the endpoint's
    if raw.get("listen"):
        host, port = _listen_address(_text(raw["listen"], "webhooks.listen"), "webhooks.listen")
    else:
        parts = urlsplit(str(url))
        if parts.port is None:
            raise TargetConfigError("webhooks.url: has no port; give webhooks.listen")
        host, port = _listen_address(f"{parts.hostname}:{parts.port}", "webhooks.url")
    if url is None:
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}/"
    secret = _text(raw.get("secret"), "webhooks.secret")
    return WebhookTarget(
        listen_host=host,
        listen_port=port,
        url=url,
        secret=secret,
        mode=_text(raw.get("mode", "development"), "webhooks.mode"),
        tolerance_s=_number(raw.get("tolerance_s", DEFAULT_TOLERANCE_S), "webhooks.tolerance_s"),
    )


def parse_target_config(
    data: Any, *, env: Mapping[str, str] | None = None, base_url: str | None = None
) -> TargetConfig:
    """Validate a parsed YAML document; ``base_url`` (from ``--target``) overrides the file's."""
    if not isinstance(data, dict):
        raise TargetConfigError("the configuration must be a YAML mapping")
    _reject_unknown_keys(data)
    data = _expand_tree(data, os.environ if env is None else env, "")
    raw_apps = data.get("applications")
    if not isinstance(raw_apps, list) or not raw_apps:
        raise TargetConfigError("applications: expected a list of at least one application")
    applications = tuple(_application(raw, f"applications[{i}]") for i, raw in enumerate(raw_apps))
    numbers_raw = data.get("numbers") or []
    if not isinstance(numbers_raw, list):
        raise TargetConfigError("numbers: expected a list of phone numbers")
    numbers = tuple(_text(n, f"numbers[{i}]") for i, n in enumerate(numbers_raw))
    pattern = data.get("number_pattern")
    if pattern is not None:
        pattern = _text(pattern, "number_pattern")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise TargetConfigError(f"number_pattern: not a valid regex ({exc})") from None
    amount_raw = data.get("amount") or {}
    if not isinstance(amount_raw, dict):
        raise TargetConfigError("amount: expected a mapping with min and max")
    amount = AmountRange(
        min=_number(amount_raw.get("min", 100), "amount.min"),
        max=_number(amount_raw.get("max", 100_000), "amount.max"),
    )
    if amount.min > amount.max:
        raise TargetConfigError(f"amount: min {amount.min} is greater than max {amount.max}")
    rotation = data.get("refresh_rotation")
    if rotation is not None and not isinstance(rotation, bool):
        raise TargetConfigError(f"refresh_rotation: expected true or false, got {rotation!r}")
    fee_rate = data.get("fee_rate")
    if fee_rate is not None:
        fee_rate = _number(fee_rate, "fee_rate", positive=False)
        if fee_rate < 0:
            raise TargetConfigError(f"fee_rate: must be 0 or more, got {fee_rate!r}")
    return TargetConfig(
        base_url=_check_url(base_url or data.get("base_url"), "base_url"),
        applications=applications,
        customer=_customer(data.get("customer")),
        access_token_ttl_s=_number(data.get("access_token_ttl_s", 900), "access_token_ttl_s"),
        max_wait_s=_number(data.get("max_wait_s", 30), "max_wait_s"),
        numbers=numbers,
        number_pattern=pattern,
        amount=amount,
        webhooks=_webhooks(data.get("webhooks")),
        refresh_rotation=rotation,
        fee_rate=fee_rate,
    )


def load_target_config(
    path: str | Path, *, env: Mapping[str, str] | None = None, base_url: str | None = None
) -> TargetConfig:
    """Read and validate a target configuration file."""
    path = Path(path)
    data = read_yaml(path, TargetConfigError)
    try:
        return parse_target_config(data, env=env, base_url=base_url)
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
