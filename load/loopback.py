"""Load goes to loopback addresses only, whoever starts it: ``paysuite load`` and the
locustfile's init hook both check, so a hand-started Locust cannot send load elsewhere either.
``PAYSUITE_ALLOW_REMOTE_TARGET=1`` lifts the rule for a system you are authorized to load.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from urllib.parse import urlsplit

from paysuite_core.target_config import TargetConfig

ALLOW_REMOTE_ENV = "PAYSUITE_ALLOW_REMOTE_TARGET"


class NotLoopbackError(ValueError):
    """A target or customer-driver URL is not on this machine; the message says which."""


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_loopback(config: TargetConfig, warn: Callable[[str], None] = print) -> None:
    """Refuse non-loopback targets (and customer-driver URLs) unless explicitly allowed."""
    actions = (config.customer.confirm, config.customer.cancel)
    for url in [config.base_url, *(a.url_template for a in actions if a is not None)]:
        if is_loopback(url):
            continue
        if os.environ.get(ALLOW_REMOTE_ENV) == "1":
            warn(f"warning: {url} is not loopback; allowed by {ALLOW_REMOTE_ENV}=1")
            continue
        raise NotLoopbackError(
            f"refusing to send load to {urlsplit(url).hostname}: only loopback targets "
            f"(127.0.0.0/8, ::1, localhost) unless {ALLOW_REMOTE_ENV}=1"
        )
