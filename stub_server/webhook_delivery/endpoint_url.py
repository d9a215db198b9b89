"""Which webhook URLs the stub may call: loopback only, unless the operator says otherwise.

paysuite never reaches another network address (developers' guide), and a webhook URL is an
address the stub would POST merchants' transactions to, so it is checked where it enters (the
config file, ``paysuite stub webhooks add``) and again before every attempt. Setting
``PAYSUITE_ALLOW_REMOTE_WEBHOOKS=1`` lifts the rule for an operator who means it.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from paysuite_core.usage import UsageError

ALLOW_REMOTE_ENV = "PAYSUITE_ALLOW_REMOTE_WEBHOOKS"
#: ``X-Webhook-Mode`` is at most this long (``rules.fields``); so is an endpoint's mode.
MAX_MODE_LENGTH = 64


class EndpointUrlError(UsageError, ValueError):
    """A webhook URL the stub will not call; the message says why (a command: exit status 2)."""


def remote_allowed(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get(ALLOW_REMOTE_ENV) == "1"


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 or ``localhost`` (the names a loopback receiver is reached by)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint_url(url: object, env: Mapping[str, str] | None = None) -> str:
    """``url`` when it is an http(s) URL with a host the stub may call."""
    if not isinstance(url, str) or not url:
        raise EndpointUrlError(f"expected an http:// or https:// URL, got {url!r}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointUrlError(f"expected an http:// or https:// URL with a host, got {url!r}")
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when asked
    except ValueError as exc:
        raise EndpointUrlError(f"{url!r}: {exc}") from None
    if not is_loopback_host(parts.hostname) and not remote_allowed(env):
        raise EndpointUrlError(
            f"{url!r} is not a loopback address (127.0.0.0/8, ::1, localhost); the stub calls "
            f"only loopback webhook receivers unless {ALLOW_REMOTE_ENV}=1"
        )
    return url


def check_mode(mode: object) -> str:
    """A webhook mode: the ``X-Webhook-Mode`` value whose deliveries go to an endpoint."""
    if not isinstance(mode, str) or not mode or len(mode) > MAX_MODE_LENGTH:
        raise EndpointUrlError(f"a mode is 1..{MAX_MODE_LENGTH} characters, got {mode!r}")
    return mode
