"""The webhook signature: the one contract between the stub that signs and every receiver that
verifies (``paysuite webhooks listen``, the conformance WEBHOOK checks, the load reconciliation).

The interface document names webhooks but leaves target, payload and signature "not shown", so
this is a reference choice (docs/reference-choices.md), modelled on Stripe's signed webhooks:

- the body is the event record, byte for byte as sent (the same object the events list returns);
- the header ``Paysuite-Signature: t=<unix seconds>,v1=<hex>`` carries the time of signing and
  HMAC-SHA256, keyed with the endpoint's signing secret, over ``b"<t>." + raw body``;
- a receiver rejects a signature whose ``t`` is more than ``tolerance_s`` away from its clock
  (a replayed delivery), and compares digests in constant time.

The timestamp is inside the signed bytes so that a captured delivery cannot be replayed later
with a fresh ``t``; several ``v1=`` entries are accepted so that an endpoint can roll its secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

#: The header that carries the signature.
SIGNATURE_HEADER = "Paysuite-Signature"
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


class SignatureError(ValueError):
    """A delivery whose signature does not hold; the message says which part failed."""


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


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``Paysuite-Signature`` value for ``body`` signed now (or at ``timestamp``)."""
    moment = int(time.time()) if timestamp is None else timestamp
    return f"t={moment},v1={_digest(secret, moment, body)}"


def verify(
    secret: str,
    header: str | None,
    body: bytes,
    *,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> SignedDelivery:
    """Check a delivery's signature; raise :class:`SignatureError` saying what is wrong."""
    if not header:
        raise SignatureError(f"no {SIGNATURE_HEADER} header")
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
    expected = _digest(secret, timestamp, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise SignatureError(
            "signature mismatch: no v1= value is the HMAC-SHA256 of the body with this secret"
        )
    return SignedDelivery(timestamp)
