"""The webhook signature: the one contract between the stub that signs and every receiver that
verifies (``paysuite webhooks listen``, the conformance WEBHOOK checks, the load reconciliation).

The document leaves the signature "not shown", so this is a reference choice modelled on Stripe's:
``Paysuite-Signature: t=<unix seconds>,v1=<hex>``, HMAC-SHA256 under the endpoint's secret over
``b"<t>." + raw body``. The timestamp is signed so that a captured delivery cannot be replayed with
a fresh ``t``; several ``v1=`` entries let an endpoint roll its secret. The live service's
``X-Paypack-Signature`` (base64 HMAC of the body alone, as merchants' receivers verify) is
carried beside it for the receivers merchants already run (docs/webhooks.md, "Two signatures,
and why both").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

#: The header that carries the signature.
SIGNATURE_HEADER = "Paysuite-Signature"
#: The live service's header: base64 HMAC-SHA256 over the raw body, no timestamp
#: (docs/reference-choices.md).
LIVE_SIGNATURE_HEADER = "X-Paypack-Signature"
#: The event's id, repeated in a header so that a receiver can deduplicate before parsing.
EVENT_ID_HEADER = "Paysuite-Event-Id"
#: 1 for the first attempt at a delivery, 2 for the first retry, and so on.
ATTEMPT_HEADER = "Paysuite-Delivery-Attempt"
#: The environment (X-Webhook-Mode of the transaction) the delivery was made for.
MODE_HEADER = "Paysuite-Webhook-Mode"
#: How far a signature's time may be from the receiver's clock (Stripe's default).
DEFAULT_TOLERANCE_S = 300
#: Signing secrets start with this, so a secret pasted in the wrong place is recognisable.
SECRET_PREFIX = "whsec_"
#: A signature header longer than this is refused unread: a few v1= entries fit many times over.
MAX_SIGNATURE_CHARS = 2048

#: Which signature formats a delivery carried and verified: ``paysuite`` (timestamped),
#: ``live`` (``X-Paypack-Signature``), or both.
Format = Literal["paysuite", "live", "paysuite+live"]
Secrets = str | Sequence[str]


def _secrets(secret: Secrets) -> tuple[str, ...]:
    return (secret,) if isinstance(secret, str) else tuple(secret)


class SignatureError(ValueError):
    """A delivery whose signature does not hold; the message says which part failed."""


def _present(name: str, header: str | None) -> str:
    """The header's value, refused when absent or too long to be read."""
    if not header:
        raise SignatureError(f"no {name} header")
    if len(header) > MAX_SIGNATURE_CHARS:
        raise SignatureError(f"{name} is {len(header)} characters long")
    return header


@dataclass(frozen=True)
class SignedDelivery:
    """What a valid signature vouches for: the time it was made."""

    timestamp: int


def new_secret() -> str:
    """A fresh signing secret, shown once when an endpoint is added."""
    return SECRET_PREFIX + secrets.token_urlsafe(24)


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def sign(secret: Secrets, body: bytes, timestamp: int | None = None) -> str:
    """The ``Paysuite-Signature`` value for ``body`` signed now (or at ``timestamp``); one
    ``v1=`` entry per secret (two during a rotation's overlap, the newest first)."""
    moment = int(time.time()) if timestamp is None else timestamp
    entries = ",".join(f"v1={_digest(one, moment, body)}" for one in _secrets(secret))
    return f"t={moment},{entries}"


def sign_live(secret: str, body: bytes) -> str:
    """The ``X-Paypack-Signature`` value: base64 of HMAC-SHA256(secret, raw body)."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def verify_live(secret: Secrets, header: str | None, body: bytes) -> None:
    """Check an ``X-Paypack-Signature``; raise :class:`SignatureError` saying what is wrong."""
    given = _present(LIVE_SIGNATURE_HEADER, header).strip()
    if not any(hmac.compare_digest(sign_live(one, body), given) for one in _secrets(secret)):
        raise SignatureError(
            f"signature mismatch: {LIVE_SIGNATURE_HEADER} is not the base64 HMAC-SHA256 of the "
            "body with this secret"
        )


def verify_any(
    secret: Secrets,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> Format:
    """Verify a delivery's signature in the format it carries; return the formats carried.

    ``headers``: case-insensitive, as HTTP's are. When ``Paysuite-Signature`` is there it
    decides, stale or not: a replayed delivery keeps a valid ``X-Paypack-Signature`` for ever,
    so the live header cannot overrule an old timestamp; beside a valid timestamped signature
    the live one adds nothing (during a rotation's overlap it is made with the old secret).
    Without it, ``X-Paypack-Signature`` must hold."""
    ours, live = headers.get(SIGNATURE_HEADER), headers.get(LIVE_SIGNATURE_HEADER)
    if not ours and not live:
        raise SignatureError(f"no {SIGNATURE_HEADER} or {LIVE_SIGNATURE_HEADER} header")
    if ours:
        verify(secret, ours, body, tolerance_s=tolerance_s, now=now)
    else:
        verify_live(secret, live, body)
    return "paysuite+live" if ours and live else "paysuite" if ours else "live"


def verify(
    secret: Secrets,
    header: str | None,
    body: bytes,
    *,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> SignedDelivery:
    """Check a delivery's signature; raise :class:`SignatureError` saying what is wrong."""
    header = _present(SIGNATURE_HEADER, header)
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise SignatureError(f"{SIGNATURE_HEADER} t={value!r} is not an integer") from None
        elif key == "v1":
            candidates.append(value)
    if timestamp is None:
        raise SignatureError(f"{SIGNATURE_HEADER} has no t= timestamp: {header!r}")
    if not candidates:
        raise SignatureError(f"{SIGNATURE_HEADER} has no v1= signature: {header!r}")
    clock = time.time() if now is None else now
    if abs(clock - timestamp) > tolerance_s:
        raise SignatureError(
            f"stale signature: t={timestamp} is {abs(clock - timestamp):.0f} s from this "
            f"receiver's clock (tolerance {tolerance_s:g} s)"
        )
    expected = [_digest(one, timestamp, body) for one in _secrets(secret)]
    if not any(hmac.compare_digest(e, c) for e in expected for c in candidates):
        raise SignatureError(
            "signature mismatch: no v1= value is the HMAC-SHA256 of the body with this secret"
        )
    return SignedDelivery(timestamp)
