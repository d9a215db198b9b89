"""Adding webhook endpoints: from the config file at start, or ``paysuite stub webhooks add``.

Each endpoint gets its own signing secret, made here and shown once (the command prints it;
a config-file endpoint's is printed to stderr on the start that made it and written into the
credentials file). The stub needs the secret in clear to sign, as a webhook sender does, so it
keeps it like its JWT key: in ``<db>.webhook-secrets`` (0600), never in the database
(``store.webhook_secrets``).

``rotate_endpoint`` gives an endpoint a new secret while the old one keeps signing for an
overlap (``paysuite stub webhooks rotate --overlap 24h``), so that its receiver can switch at
any moment of the overlap without refusing a delivery. ``ping`` sends the ``HEAD`` the live
dashboard sends to a webhook URL when it is registered.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import replace

from paysuite_core.webhook_signature import new_secret
from stub_server.store import Store, WebhookEndpoint
from stub_server.webhook_delivery.endpoint_url import EndpointUrlError, check_endpoint_url, check_mode

#: How long ``ping`` waits for the HEAD's answer.
PING_TIMEOUT_S = 5.0
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """``24h``, ``30m``, ``90s``, ``1d`` or plain seconds; raises ``EndpointUrlError``."""
    match = _DURATION.match(text)
    if match is None:
        raise EndpointUrlError(f"expected a duration such as 24h, 30m or 90s, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def rotate_endpoint(store: Store, mode: str, overlap_s: float, now_us: int) -> WebhookEndpoint:
    """Give ``mode``'s endpoint a new secret; the current one keeps signing (beside it) for
    ``overlap_s`` more seconds. Raises ``EndpointUrlError`` when the mode has no endpoint."""
    current = store.webhook_endpoint(mode)
    if current is None:
        raise EndpointUrlError(f"no webhook endpoint for mode {mode!r}")
    rotated = replace(
        current,
        secret=new_secret(),
        previous=current.secret if overlap_s > 0 else None,
        previous_until_us=now_us + int(overlap_s * 1e6) if overlap_s > 0 else None,
    )
    store.put_webhook_endpoint(rotated, now_us)
    return rotated


def ping(url: str, timeout_s: float = PING_TIMEOUT_S) -> str | None:
    """``HEAD url`` as the live dashboard pings a webhook URL: None when it answered 2xx,
    else why not (a receiver not started yet, a route without HEAD)."""
    try:
        check_endpoint_url(url)
    except EndpointUrlError as exc:
        return str(exc)
    request = urllib.request.Request(url, method="HEAD")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout_s) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        status = int(exc.code)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"no answer: {reason}"
    return None if 200 <= status < 300 else f"HTTP {status}"


def add_endpoint(store: Store, mode: str, url: str, now_us: int) -> WebhookEndpoint:
    """Point ``mode`` at ``url`` with a fresh secret (replacing that mode's endpoint, if any).

    Raises ``EndpointUrlError`` for a mode or URL the stub will not use."""
    endpoint = WebhookEndpoint(check_mode(mode), check_endpoint_url(url), new_secret())
    store.put_webhook_endpoint(endpoint, now_us)
    return endpoint


def sync_configured(
    store: Store, configured: Iterable[tuple[str, str]], now_us: int
) -> list[WebhookEndpoint]:
    """Bring the config file's endpoints into the database; return those created now.

    A mode already in the database keeps its secret, so a restart (or a changed URL) does not
    invalidate what a receiver was given."""
    created = []
    for mode, url in configured:
        current = store.webhook_endpoint(mode)
        if current is None:
            endpoint = WebhookEndpoint(mode, url, new_secret())
            store.put_webhook_endpoint(endpoint, now_us)
            created.append(endpoint)
        elif current.url != url:
            store.put_webhook_endpoint(replace(current, url=url), now_us)
    return created
