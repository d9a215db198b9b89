"""Tokens for one virtual user: authorize once, refresh before expiry or after a 401.

A load test that re-authorizes on every hiccup measures its own authorize storm, not the service.
So a user authorizes once, refreshes shortly before the access token expires (or when a request
comes back 401), and falls back to authorize only when the refresh itself is refused, and then
no more often than ``MIN_AUTHORIZE_INTERVAL_S``. Authorize and refresh go through the user's own
Locust client, under the request names ``authorize`` and ``refresh``, so their counts appear in
the statistics and in load.json.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from load import bounded
from load.limits import ClientLimits
from paysuite.target_config import Application

#: The document's refresh path (heading) and the one its examples and the SDKs use.
REFRESH_PATHS = ("/auth/refresh/{token}", "/auth/agents/refresh/{token}")
MIN_AUTHORIZE_INTERVAL_S = 5.0
JSON_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}


class AuthError(RuntimeError):
    """The target refused to give this user a token."""


def parse_expires(value: Any, access: str, now: float, fallback_ttl_s: float) -> float:
    """Unix time at which the access token expires, from whatever shape ``expires`` has.

    The document says string, the live service sends integer Unix seconds (RC-8); a small number
    is read as a lifetime in seconds. Without a usable value the JWT's ``exp`` claim decides, and
    without that the configured ``access_token_ttl_s``.
    """
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
            except ValueError:
                value = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value) if value > 1e9 else now + float(value)
    try:
        import jwt

        claims = jwt.decode(access, options={"verify_signature": False})
        if isinstance(claims.get("exp"), (int, float)):
            return float(claims["exp"])
    except Exception:  # noqa: BLE001 - an opaque token is fine: fall back to the configured TTL
        pass
    return now + fallback_ttl_s


class TokenManager:
    """Holds one application's token pair for one user and keeps it fresh."""

    preferred_refresh = 0  # index into REFRESH_PATHS, shared: learn the target's path once

    def __init__(
        self,
        client: Any,
        app: Application,
        fallback_ttl_s: float,
        clock: Callable[[], float] = time.time,
        limits: ClientLimits | None = None,
    ) -> None:
        self.client = client
        self.limits = limits or ClientLimits()
        self.app = app
        self.fallback_ttl_s = fallback_ttl_s
        self.clock = clock
        self.access: str | None = None
        self.refresh_token: str | None = None
        self.expires_at = 0.0
        self.obtained_at = 0.0
        self.last_authorize = -1e18
        self.authorizes = 0
        self.refreshes = 0

    # -- public ------------------------------------------------------------------------------
    def headers(self) -> dict[str, str]:
        """Headers for an authenticated call, refreshing first when the token is about to expire."""
        if self.access is None:
            self.authorize()
        elif self.clock() >= self.expires_at - self.margin():
            self.renew()
        return {**JSON_HEADERS, "Authorization": f"Bearer {self.access}"}

    def margin(self) -> float:
        """Refresh this long before expiry: 10% of the lifetime, at most 60 s, at least 1 s."""
        lifetime = max(self.expires_at - self.obtained_at, 0.0)
        return max(1.0, min(60.0, lifetime * 0.1)) if lifetime > 2 else 0.0

    def renew(self) -> None:
        """After a 401 or near expiry: refresh, and authorize only if the refresh is refused."""
        if self.refresh_token and self._refresh():
            return
        self.authorize()

    def authorize(self) -> None:
        now = self.clock()
        since = now - self.last_authorize
        if since < MIN_AUTHORIZE_INTERVAL_S:
            if self.access is not None:
                return  # never a storm: keep the current token, the next 401 will tell
            time.sleep(MIN_AUTHORIZE_INTERVAL_S - since)  # gevent-patched under Locust
        self.last_authorize = self.clock()
        body = {"client_id": self.app.client_id, "client_secret": self.app.client_secret}
        with bounded.request(
            self.client,
            self.limits,
            "POST",
            "/auth/agents/authorize",
            name="authorize",
            json=body,
            headers=JSON_HEADERS,
        ) as reply:
            self.authorizes += 1
            pair = self._token_pair(reply)
            if pair is None:
                why = "no answer" if reply is None else reply.problem or f"status {reply.status}"
                raise AuthError(f"no access token: authorize failed ({why})")
        self._store(pair)

    # -- internals -----------------------------------------------------------------------------
    def _refresh(self) -> bool:
        for attempt in range(len(REFRESH_PATHS)):
            index = (TokenManager.preferred_refresh + attempt) % len(REFRESH_PATHS)
            path = REFRESH_PATHS[index].format(token=self.refresh_token)
            with bounded.request(
                self.client,
                self.limits,
                "GET",
                path,
                name="refresh",
                headers={"Accept": "application/json"},
            ) as reply:
                self.refreshes += 1
                if reply is not None and reply.status in (404, 405) and not reply.problem:
                    reply.failure(f"refresh path {REFRESH_PATHS[index]} not served")
                    continue
                pair = self._token_pair(reply)
                if pair is None:
                    self.refresh_token = None
                    return False
                TokenManager.preferred_refresh = index
            self._store(pair)
            return True
        return False

    def _token_pair(self, reply: bounded.Reply | None) -> dict[str, Any] | None:
        if reply is None or reply.problem is not None:
            return None  # already counted as a failure, with its reason
        if not 200 <= reply.status < 300:
            reply.failure(f"status {reply.status}")
            return None
        try:
            data = reply.json()
        except Exception:  # noqa: BLE001 - any undecodable body is the same failure
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("access"), str):
            reply.failure("token pair without an access token (body is not a JSON token pair)")
            return None
        reply.success()
        return data

    def _store(self, pair: dict[str, Any]) -> None:
        now = self.clock()
        self.access = pair["access"]
        refresh = pair.get("refresh")
        self.refresh_token = refresh if isinstance(refresh, str) and refresh else None
        self.obtained_at = now
        self.expires_at = parse_expires(pair.get("expires"), self.access, now, self.fallback_ttl_s)
