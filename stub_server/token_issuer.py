"""JWT access and refresh tokens (reference choice RC-11), signed HS256 with PyJWT.

Access and refresh tokens share the claims of the live service; ``sub`` tells them apart and
each verifier refuses the other kind. ``exp`` is rounded *up* to a whole second so a token lives
at least its TTL (PyJWT compares whole seconds), which keeps 1 s TTLs usable in tests.
"""

from __future__ import annotations

import base64
import json
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt

from stub_server.errors import ApiError

#: A JWT's decoded claims: JSON, so their values are whatever the token holds (checked on use).
Claims = dict[str, Any]

ISSUER = "paysuite-stub"
_CACHE_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class TokenPair:
    access: str
    refresh: str
    access_exp: int


class TokenService:
    """Issues and verifies the stub's token pairs (Authentication; RC-11)."""

    def __init__(
        self,
        key: str,
        access_ttl_s: float,
        refresh_ttl_s: float,
        *,
        check_exp: bool = True,
        check_signature: bool = True,
    ) -> None:
        self.key = key
        self.access_ttl_s = access_ttl_s
        self.refresh_ttl_s = refresh_ttl_s
        self._options: dict[str, Any] = {"verify_exp": check_exp, "require": ["exp", "sub"]}
        self._check_signature = check_signature
        self._verified: dict[str, Claims] = {}

    def rekey(self, key: str) -> None:
        """Sign and verify with ``key`` from now on (a rotation): tokens of the old key, even
        ones already verified and cached, are refused."""
        self.key = key
        self._verified.clear()

    def issue(self, client_id: str, merchant: str, privilege: str) -> TokenPair:
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
        access_exp = math.ceil(now + self.access_ttl_s)
        access = jwt.encode(
            {**base, "sub": "access", "exp": access_exp, "jti": uuid.uuid4().hex},
            self.key,
            algorithm="HS256",
        )
        refresh = jwt.encode(
            {
                **base,
                "sub": "refresh",
                "exp": math.ceil(now + self.refresh_ttl_s),
                "jti": uuid.uuid4().hex,
            },
            self.key,
            algorithm="HS256",
        )
        return TokenPair(access, refresh, access_exp)

    def verify(self, token: str, expected_sub: str | tuple[str, ...]) -> Claims:
        """Decode and check a token; raise ``ApiError`` 401 with the catalogue's code.

        A token whose signature was verified once is remembered (PyJWT's decode is the largest
        cost of a find); its ``exp`` is still checked on every use.
        """
        cached = self._verified.get(token)
        if cached is not None:
            if self._options["verify_exp"] and cached["exp"] <= time.time():
                raise ApiError(401, "token_expired", "the token has expired")
            return self._check_claims(cached, expected_sub)
        claims = self._decode(token)
        self._check_claims(claims, expected_sub)
        if self._check_signature:
            if len(self._verified) >= _CACHE_SIZE:
                self._verified.clear()
            self._verified[token] = claims
        return claims

    def _decode(self, token: str) -> Claims:
        try:
            if self._check_signature:
                claims = jwt.decode(
                    token,
                    self.key,
                    algorithms=["HS256"],
                    options=self._options,  # type: ignore[arg-type]
                )
            else:
                claims = _unverified_claims(token)
                if self._options["verify_exp"] and int(claims["exp"]) <= time.time():
                    raise jwt.ExpiredSignatureError("Signature has expired")
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


def _unverified_claims(token: str) -> Claims:
    """The payload of a JWT, ignoring its header and signature (fault signature-not-verified)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("not a JWT")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    claims = json.loads(base64.urlsafe_b64decode(payload))
    if not isinstance(claims, dict) or "exp" not in claims:
        raise ValueError("not a JWT payload")
    return claims
