"""JWT access and refresh tokens (RC-11), signed HS256 with PyJWT. ``sub`` tells the two kinds
apart and each verifier refuses the other. ``exp`` is rounded *up* to a whole second so a token
lives at least its TTL (PyJWT compares whole seconds), which keeps 1 s TTLs usable in tests.
With ``link_pairs`` (variant ``revoke-on-refresh``) an access token also names its pair: claim
``pair``, the ``jti`` of the refresh token issued with it, so that spending that refresh token
can revoke it.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt

from stub_server.errors import ApiError

#: JSON from the wire: its values are whatever the token holds (checked on use).
Claims = dict[str, Any]

ISSUER = "paysuite-stub"
#: The access-token lifetime of a pair from ``POST /_sandbox/auth/short-lived`` (declared as the
#: credentials file's ``short_lived_pair``): AUTH-008 watches it expire while the run's own
#: tokens keep the configured lifetime, long enough for a busy machine.
SHORT_LIVED_ACCESS_TTL_S = 2
#: Where the sandbox issues those pairs (authorize's body and answer), beside ``/api``.
SHORT_LIVED_PATH = "/_sandbox/auth/short-lived"
_CACHE_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class TokenPair:
    access: str
    refresh: str
    access_exp: int


class TokenService:
    def __init__(
        self,
        key: str,
        access_ttl_s: float,
        refresh_ttl_s: float,
        *,
        link_pairs: bool = False,
    ) -> None:
        self.key = key
        self.link_pairs = link_pairs
        self.access_ttl_s = access_ttl_s
        self.refresh_ttl_s = refresh_ttl_s
        #: Off only under the faults tokens-never-expire and signature-not-verified.
        self.check_exp = True
        self.check_signature = True
        self._verified: dict[str, Claims] = {}

    def rekey(self, key: str) -> None:
        """Tokens of the old key, even ones already verified and cached, are refused."""
        self.key = key
        self._verified.clear()

    def issue(
        self, client_id: str, merchant: str, privilege: str, access_ttl_s: float | None = None
    ) -> TokenPair:
        """A pair; ``access_ttl_s``: the access token's lifetime when not the configured one
        (the sandbox's short-lived pairs, ``SHORT_LIVED_ACCESS_TTL_S``)."""
        now = time.time()
        iat = int(now)
        base = {
            "id": client_id,
            "merchant": merchant,
            "perm": privilege,
            "type": "agent",
            "iss": ISSUER,
            "iat": iat,
        }
        access_exp = math.ceil(now + (self.access_ttl_s if access_ttl_s is None else access_ttl_s))
        refresh_jti = uuid.uuid4().hex
        linked = {"pair": refresh_jti} if self.link_pairs else {}
        access = jwt.encode(
            {**base, **linked, "sub": "access", "exp": access_exp, "jti": uuid.uuid4().hex},
            self.key,
        )
        refresh_exp = math.ceil(now + self.refresh_ttl_s)
        refresh = jwt.encode(
            {**base, "sub": "refresh", "exp": refresh_exp, "jti": refresh_jti}, self.key
        )
        return TokenPair(access, refresh, access_exp)

    def verify(self, token: str, expected_sub: str | tuple[str, ...]) -> Claims:
        """A token verified once is remembered (PyJWT's decode is the largest cost of a find);
        its ``exp`` is still checked on every use."""
        cached = self._verified.get(token)
        if cached is not None:
            if self.check_exp and cached["exp"] <= time.time():
                raise ApiError(401, "token_expired", "the token has expired")
            return self._check_claims(cached, expected_sub)
        claims = self._decode(token)
        self._check_claims(claims, expected_sub)
        if self.check_signature:
            if len(self._verified) >= _CACHE_SIZE:
                self._verified.clear()
            self._verified[token] = claims
        return claims

    def _decode(self, token: str) -> Claims:
        """Without ``check_signature`` PyJWT reads the payload whatever the header's alg says
        (none too) and the signature is dropped unread; ``exp`` is still checked."""
        options = {
            "verify_signature": self.check_signature,
            "verify_exp": self.check_exp,
            "require": ["exp", "sub"],
        }
        if not self.check_signature:
            token = token.rpartition(".")[0] + "."
        try:
            claims = jwt.decode(token, self.key, algorithms=["HS256"], options=options)  # type: ignore[arg-type]
        except jwt.ExpiredSignatureError:
            raise ApiError(401, "token_expired", "the token has expired") from None
        except Exception:  # PyJWTError, and whatever a garbage token upsets
            raise ApiError(401, "invalid_token", "the token is invalid") from None
        if not isinstance(claims.get("exp"), (int, float)):
            raise ApiError(401, "invalid_token", "the token is invalid")
        return claims

    def _check_claims(self, claims: Claims, expected_sub: str | tuple[str, ...]) -> Claims:
        sub = claims.get("sub")
        allowed = (expected_sub,) if isinstance(expected_sub, str) else expected_sub
        if sub not in allowed:
            raise ApiError(401, "invalid_token", f"the token is not a valid {allowed[0]} token")
        for claim in ("id", "merchant", "perm"):
            if not isinstance(claims.get(claim), str):
                raise ApiError(401, "invalid_token", "the token is invalid")
        return claims
