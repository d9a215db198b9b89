"""Authorize and refresh (Endpoints, 5 and 6) and the bearer-token check (Authentication).

Enforces:
- Endpoints, 5. Authorize an application: AUTH-001, AUTH-002, AUTH-003, AUTH-013 (``expires``
  is integer Unix seconds, RC-8); RC-38 (authorize is rate-limited and costs the same for known
  and unknown client_ids).
- Endpoints, 6. Refresh tokens: AUTH-009, AUTH-011 (both paths, RC-9) and refresh rotation
  (AUTH-012, RC-10: a used refresh token is refused; ``spend_refresh_token``). Under the
  ``revoke-on-refresh`` variant a used refresh token also revokes the access token issued with
  it (``revoked``): the document leaves open whether the old access token still works.
- Authentication, 1-4: every protected operation needs ``Authorization: Bearer <access
  token>`` (AUTH-004..AUTH-008, AUTH-010, PROP-007); a bare token is accepted unless
  ``strict_auth`` (RC-33, AUTH-006).
Order of checks on protected routes: 401 (this module), 403 (``rules.privileges``), then the
body's 415, 413, 400 (``rules.request_body``) and 409 (``rules.idempotency``).
"""

from __future__ import annotations

import hashlib
import math
import time

from aiohttp import web

from stub_server import timefmt
from stub_server.errors import ApiError, json_response
from stub_server.rules.fields import is_text, required_string
from stub_server.rules.request_body import read_json
from stub_server.rules.single_values import single
from stub_server.state import Handlers, StubApp
from stub_server.store import AppRecord
from stub_server.token_issuer import SHORT_LIVED_ACCESS_TTL_S, Claims

MAX_SECRET_LENGTH = 1024
MAX_CLIENT_ID_LENGTH = 128


def authenticate(stub: StubApp, request: web.Request) -> AppRecord:
    """The application whose access token authorizes ``request``, or the 401 (a 400 for two
    ``Authorization`` headers: which token is the client's is a guess, RC-41)."""
    header = single(request.headers, "Authorization", "header")
    if not header:
        raise ApiError(401, "missing_token", "the Authorization header is missing")
    token = token_from_header(header, accept_bare=stub.accept_bare_token)
    hooks = stub.hooks
    claims = stub.tokens.verify(token, hooks.access_subs)
    max_age_s = hooks.access_max_age_s
    if max_age_s is not None and time.time() - claims["iat"] > max_age_s:
        raise ApiError(401, "token_expired", "the token has expired")
    if stub.revoke_on_refresh and revoked(stub, claims):
        raise ApiError(
            401, "invalid_token", "the access token was revoked: its pair's refresh token was used"
        )
    record = stub.app_record(claims["id"])
    if record is None:
        raise ApiError(401, "invalid_token", "the token names an unknown application")
    return record


def revoked(stub: StubApp, claims: Claims) -> bool:
    """Whether the refresh token of this access token's pair was used (``revoke-on-refresh``).
    A token without the ``pair`` claim (issued before the variant was on) is not revoked."""
    pair = claims.get("pair")
    return isinstance(pair, str) and stub.store.spent(pair)


def token_from_header(header: str, *, accept_bare: bool) -> str:
    """The token of ``Bearer <token>``, or (RC-33, unless ``strict_auth``) of a bare
    ``<token>``: paypack-js sends ``Authorization: <token>`` and the live service accepts it.
    A JWT holds no space, so a value without one is a bare token; the scheme word alone
    (``Bearer``) is still a missing token."""
    scheme, space, token = header.partition(" ")
    if not space and accept_bare and scheme.lower() != "bearer":
        return scheme
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        expected = "'Bearer <token>'"
        if accept_bare:
            expected += " or a bare '<token>'"
        raise ApiError(401, "missing_token", f"the Authorization header must be {expected}")
    return token


def spend_refresh_token(stub: StubApp, claims: Claims) -> None:
    """Record a used refresh token. Refresh rotation (RC-10): it works once, the second use is
    a 401. ``revoke-on-refresh``: the record also revokes the access token of its pair, so it
    is kept at least as long as that access token lives (a refresh token may be configured to
    live shorter)."""
    jti = claims.get("jti")
    exp = claims.get("exp")
    if not isinstance(jti, str) or not isinstance(exp, int):
        raise ApiError(401, "invalid_token", "the token is invalid")
    iat = claims.get("iat")
    if stub.revoke_on_refresh and isinstance(iat, int):
        exp = max(exp, iat + math.ceil(stub.tokens.access_ttl_s) + 1)
    if not stub.store.use_refresh(jti, exp) and stub.rotate_refresh:
        raise ApiError(401, "invalid_token", "the refresh token was already used")


class AuthHandlers(Handlers):
    """``POST /auth/agents/authorize`` and ``GET /auth/{agents/,}refresh/{token}``."""

    async def authorize(self, request: web.Request) -> web.Response:
        return json_response(self.token_pair_body(await self._authenticated(request)))

    async def authorize_short_lived(self, request: web.Request) -> web.Response:
        """``POST /_sandbox/auth/short-lived`` (sandbox only): authorize's body and answer, the
        access token living ``SHORT_LIVED_ACCESS_TTL_S``; refreshed on the ordinary paths."""
        record = await self._authenticated(request)
        return json_response(self.token_pair_body(record, SHORT_LIVED_ACCESS_TTL_S))

    async def _authenticated(self, request: web.Request) -> AppRecord:
        """The application whose client_id and client_secret the authorize body holds."""
        stub = self.stub
        body = await read_json(
            request,
            stub.settings,
            any_media_type=stub.any_media_type,
            on_malformed=stub.hooks.malformed_json,
        )
        client_id = required_string(body, "client_id")
        secret = required_string(body, "client_secret")
        refused = ApiError(401, "invalid_credentials", "unknown client_id or wrong client_secret")
        if len(secret) > MAX_SECRET_LENGTH:  # refused unhashed, whoever the client_id names
            raise refused
        known = len(client_id) <= MAX_CLIENT_ID_LENGTH and is_text(client_id)
        record = stub.app_record(client_id) if known else None
        fingerprint = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()
        if record is None or stub.verified_secrets.get(client_id) != fingerprint:
            # RC-38: limited, queued, and the same work for known and unknown client_ids
            await stub.auth_guard.admit(client_id, request.remote)
            stored = record.secret_hash if record is not None else None
            if not await stub.auth_guard.check(secret, stored) or record is None:
                raise refused
            stub.verified_secrets[client_id] = fingerprint
        return record

    async def refresh(self, request: web.Request) -> web.Response:
        stub = self.stub
        claims = stub.tokens.verify(request.match_info["token"], "refresh")
        record = stub.app_record(claims["id"])
        if record is None:
            raise ApiError(401, "invalid_token", "the token names an unknown application")
        if stub.rotate_refresh or stub.revoke_on_refresh:
            spend_refresh_token(stub, claims)
        return json_response(self.token_pair_body(record))

    def token_pair_body(
        self, record: AppRecord, access_ttl_s: float | None = None
    ) -> dict[str, str | int]:
        """The token pair; ``expires`` is integer Unix seconds (RC-8) unless the
        ``expires-string`` variant asks for an ISO 8601 string."""
        stub = self.stub
        pair = stub.tokens.issue(record.client_id, record.merchant, record.privilege, access_ttl_s)
        expires: int | str = pair.access_exp
        if stub.expires_string:
            expires = timefmt.utc_text(pair.access_exp * 1_000_000) or ""
        return {"access": pair.access, "refresh": pair.refresh, "expires": expires}
