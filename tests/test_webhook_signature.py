"""The webhook signature contract, checked against an HMAC computed here independently."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from paysuite_core.webhooks.signature import SignatureError, new_secret, sign, verify

BODY = b'{"event_id": "e1", "event_kind": "transaction:created"}'


def test_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    secret = new_secret()
    header = sign(secret, BODY, timestamp=1_700_000_000)
    expected = hmac.new(secret.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert verify(secret, header, BODY, now=1_700_000_010).timestamp == 1_700_000_000


@pytest.mark.parametrize(
    ("header", "body", "now", "reason"),
    [
        (None, BODY, 1_700_000_000, "no Paysuite-Signature"),
        ("v1=abc", BODY, 1_700_000_000, "no t="),
        ("t=1700000000", BODY, 1_700_000_000, "no v1="),
        ("t=soon,v1=abc", BODY, 1_700_000_000, "not an integer"),
        ("SIGNED", BODY + b" ", 1_700_000_000, "signature mismatch"),
        ("SIGNED", BODY, 1_700_000_301, "stale signature"),
    ],
)
def test_bad_signatures_say_what_is_wrong(
    header: str | None, body: bytes, now: int, reason: str
) -> None:
    secret = new_secret()
    if header == "SIGNED":
        header = sign(secret, BODY, timestamp=1_700_000_000)
    with pytest.raises(SignatureError, match=reason):
        verify(secret, header, body, now=now)


def test_a_rolled_secret_is_accepted_among_several_v1_values() -> None:
    old, new = new_secret(), new_secret()
    both = sign(old, BODY, timestamp=5) + "," + sign(new, BODY, timestamp=5).split(",")[1]
    assert verify(new, both, BODY, now=5).timestamp == 5
    with pytest.raises(SignatureError, match="mismatch"):
        verify(new_secret(), both, BODY, now=5)
