"""Tokens for one virtual user: the project's one token flow, carried by the user's Locust client.

A load test that re-authorizes on every hiccup measures its own authorize storm, not the service.
``paysuite_core.tokens.TokenFlow`` authorizes once, refreshes shortly before the access token
expires (or when a request comes back 401), and falls back to authorize only when the refresh
itself is refused, and then no more often than ``MIN_AUTHORIZE_INTERVAL_S``. Here it travels
through the user's own client (``load.bounded``), under the request names ``authorize`` and
``refresh``, so their counts appear in the statistics and in load.json.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from paysuite_core import tokens
from paysuite_core.target_config import Application
from paysuite_core.tokens import AuthError, TokenFlow

if TYPE_CHECKING:  # Locust and gevent: not imported where only the names are needed
    from load import bounded

__all__ = ["MIN_AUTHORIZE_INTERVAL_S", "AuthError", "locust_send", "token_flow"]

MIN_AUTHORIZE_INTERVAL_S = 5.0


def locust_send(client: bounded.Client) -> tokens.Send:
    """Token exchanges as the user's own bounded requests (counted, timed, capped)."""

    @contextmanager
    def send(request: tokens.Request) -> Iterator[bounded.Reply]:
        headers = {k: v for k, v in request.headers.items() if v is not None}
        with client.request(
            request.method, request.path, name=request.name, headers=headers, json=request.json
        ) as reply:
            yield reply

    return send


def token_flow(
    client: bounded.Client,
    app: Application,
    fallback_ttl_s: float,
    clock: Callable[[], float] = time.time,
) -> TokenFlow:
    """One user's token flow for ``app``: renewed by the target's ``expires``, rate-limited."""
    return TokenFlow(
        locust_send(client),
        app,
        fallback_ttl_s=fallback_ttl_s,
        min_authorize_interval_s=MIN_AUTHORIZE_INTERVAL_S,
        clock=clock,
    )
