"""Adding, rotating and pinging webhook endpoints (config file at start, ``paysuite stub
webhooks``).

Each endpoint gets its own signing secret, shown once. The stub needs the secret in clear to
sign, as a webhook sender does, so it keeps it like its JWT key: in ``<db>.webhook-secrets``
(0600), never in the database (``store.webhook_secrets``). A rotation keeps the old secret
signing for an overlap, so that a receiver can switch at any moment of it without refusing a
delivery."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import replace

import aiohttp

from paysuite_core.http_clients import aiohttp_session
from paysuite_core.webhooks.signature import new_secret
from stub_server.store import Store, WebhookEndpoint
from stub_server.webhook_delivery.endpoint_url import (
    EndpointUrlError,
    check_endpoint_url,
    check_mode,
)

PING_TIMEOUT_S = 5.0
#: How much of a failed answer's body goes into the log's ``last_error``.
ERROR_BODY_CHARS = 200


def rotate_endpoint(store: Store, mode: str, overlap_s: float, now_us: int) -> WebhookEndpoint:
    """Give ``mode``'s endpoint a new secret; the current one keeps signing (beside it) for
    ``overlap_s`` more seconds."""
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


async def send(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    timeout_s: float,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> str | None:
    """None when ``url`` answered 2xx, else why not, in words. The URL is checked again: the
    environment may have changed since the endpoint was added."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        check_endpoint_url(url)
        async with session.request(
            method, url, data=body, headers=headers, allow_redirects=False, timeout=timeout
        ) as response:
            if 200 <= response.status < 300:
                return None
            text = (await response.text(errors="replace"))[:ERROR_BODY_CHARS]
            return f"HTTP {response.status}: {text}".rstrip(": ")
    except EndpointUrlError as exc:
        return str(exc)
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except (aiohttp.ClientError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"


async def ping(url: str, session: aiohttp.ClientSession | None = None) -> str | None:
    """``HEAD url`` as the live dashboard pings a webhook URL when it is registered."""
    async with contextlib.AsyncExitStack() as stack:
        if session is None:
            session = aiohttp_session()
            await stack.enter_async_context(session)
        return await send(session, "HEAD", url, PING_TIMEOUT_S)


def add_endpoint(store: Store, mode: str, url: str, now_us: int) -> WebhookEndpoint:
    """Point ``mode`` at ``url`` with a fresh secret (replacing that mode's endpoint, if any)."""
    endpoint = WebhookEndpoint(check_mode(mode), check_endpoint_url(url), new_secret())
    store.put_webhook_endpoint(endpoint, now_us)
    return endpoint


def sync_configured(
    store: Store, configured: Iterable[tuple[str, str]], now_us: int
) -> list[WebhookEndpoint]:
    """Bring the config file's endpoints into the database; return those created now. A mode
    already there keeps its secret: a restart does not invalidate what a receiver was given."""
    created = []
    for mode, url in configured:
        current = store.webhook_endpoint(mode)
        if current is None:
            created.append(add_endpoint(store, mode, url, now_us))
        elif current.url != url:
            store.put_webhook_endpoint(replace(current, url=url), now_us)
    return created
