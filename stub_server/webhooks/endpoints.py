"""Adding webhook endpoints: from the config file at start, or ``paysuite stub webhooks add``.

Each endpoint gets its own signing secret, made here and shown once (the command prints it;
a config-file endpoint's is printed to stderr on the start that made it and written into the
credentials file). The database keeps the secret in clear: the stub needs it to sign, as a
webhook sender does, and the database is readable by its owner only (``store.make_private``).
"""

from __future__ import annotations

from collections.abc import Iterable

from paysuite_core.webhook_signature import new_secret
from stub_server.store import Store, WebhookEndpoint
from stub_server.webhooks.endpoint_url import check_endpoint_url, check_mode


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
            store.put_webhook_endpoint(WebhookEndpoint(mode, url, current.secret), now_us)
    return created
