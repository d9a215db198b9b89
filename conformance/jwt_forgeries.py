"""JWT handling for the token checks: shape, claims, and the forgeries a target must refuse.

Only the structure of a JWT is used here (base64url segments); the suite never knows the
target's signing key, so every forgery is one a real attacker could make.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from paysuite_core import guarded_json


def b64url_decode(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def parts(token: str) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """(header, claims, signature) of a JWT, or ``None`` when it is not JWT-shaped."""
    pieces = token.split(".")
    if len(pieces) != 3:
        return None
    try:
        header = guarded_json.loads(b64url_decode(pieces[0]), what="a JWT header")
        claims = guarded_json.loads(b64url_decode(pieces[1]), what="a JWT's claims")
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return None
    return header, claims, pieces[2]


def is_jwt(token: Any) -> bool:
    if not isinstance(token, str):
        return False
    decoded = parts(token)
    return decoded is not None and isinstance(decoded[0].get("alg"), str)


def _encode(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return (
        b64url_encode(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64url_encode(json.dumps(claims, separators=(",", ":")).encode())
    )


def forgeries(token: str) -> dict[str, str]:
    """Tampered variants of a valid access token, by name."""
    pieces = token.split(".")
    out: dict[str, str] = {}
    if len(pieces) == 3 and len(pieces[2]) > 12:
        signature = pieces[2]
        index = len(signature) // 2
        flipped = "A" if signature[index] != "A" else "B"
        out["signature altered"] = ".".join(
            [pieces[0], pieces[1], signature[:index] + flipped + signature[index + 1 :]]
        )
    decoded = parts(token)
    if decoded is not None:
        header, claims, signature = decoded
        changed = dict(claims)
        changed["exp"] = int(changed.get("exp", 0) or 0) + 86_400 * 365
        changed["perm"] = "read-write"
        body = _encode(header, changed)
        out["claims altered, signature kept"] = f"{body}.{signature}"
        out["alg none"] = _encode({"alg": "none", "typ": "JWT"}, changed) + "."
        signing_input = _encode({"alg": "HS256", "typ": "JWT"}, changed)
        wrong = hmac.new(b"not-the-target-key", signing_input.encode(), hashlib.sha256).digest()
        out["signed with another key"] = f"{signing_input}.{b64url_encode(wrong)}"
    out["signature stripped"] = ".".join(pieces[:2]) + "." if len(pieces) == 3 else token + "."
    return out
