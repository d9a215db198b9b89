"""Client secrets are stored only as a salted scrypt hash (the document: shown once, at creation).

The stored form is self-describing, ``scrypt$n$r$p$salt_hex$hash_hex``, so the cost can change
without invalidating existing applications.
"""

from __future__ import annotations

import hashlib
import hmac
import os

_N, _R, _P, _DKLEN = 2**14, 8, 1, 32


def hash_secret(secret: str, *, n: int = _N) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=n, r=_R, p=_P, dklen=_DKLEN)
    return f"scrypt${n}${_R}${_P}${salt.hex()}${digest.hex()}"


def verify_secret(secret: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt_hex, digest_hex = stored.split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(
            secret.encode(),
            salt=bytes.fromhex(salt_hex),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(digest_hex) // 2,
        )
    except (ValueError, UnicodeEncodeError):
        return False
    return hmac.compare_digest(digest.hex(), digest_hex)
