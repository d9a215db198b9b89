"""Secret rotation with overlap: ``paysuite stub webhooks rotate --overlap 24h`` signs
with both the old and the new secret until the overlap ends, so a receiver can switch secrets at
any moment of it without refusing a delivery."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from stubkit import InProcessStub
from webhookkit import FAST_RETRY, Receiver

from paysuite_core.webhooks import signature as webhook_signature
from stub_server import timefmt
from stub_server.store import Store, WebhookEndpoint
from stub_server.webhook_delivery.endpoints import rotate_endpoint


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


def v1_entries(header: str) -> list[str]:
    return [part[3:] for part in header.split(",") if part.startswith("v1=")]


def test_during_the_overlap_both_secrets_sign_and_after_it_only_the_new(
    inproc: Callable[..., InProcessStub], receiver: Receiver
) -> None:
    stub = inproc(webhooks={"development": receiver.url}, webhook_retry=FAST_RETRY)
    old = stub.call(stub.stub.store.webhook_endpoint, "development").secret
    rotated = stub.call(rotate_endpoint, stub.stub.store, "development", 1.5, timefmt.now_us())
    new = rotated.secret
    assert new != old and rotated.previous == old
    stub.api.create("cashin")
    (during,) = receiver.wait_for(1)
    header = during.headers[webhook_signature.SIGNATURE_HEADER]
    assert len(v1_entries(header)) == 2  # a v1= per secret, as Stripe's list
    for secret in (old, new):  # a receiver holding either verifies
        webhook_signature.verify(secret, header, during.body)
    # the live format has room for one value: the old secret until the overlap ends
    assert during.headers[webhook_signature.LIVE_SIGNATURE_HEADER] == (
        webhook_signature.sign_live(old, during.body)
    )
    time.sleep(1.6)
    stub.api.create("cashin")
    after = receiver.wait_for(2)[1]
    header = after.headers[webhook_signature.SIGNATURE_HEADER]
    assert len(v1_entries(header)) == 1
    webhook_signature.verify(new, header, after.body)
    with pytest.raises(webhook_signature.SignatureError):
        webhook_signature.verify(old, header, after.body)
    assert after.headers[webhook_signature.LIVE_SIGNATURE_HEADER] == (
        webhook_signature.sign_live(new, after.body)
    )


def test_the_rotate_command(tmp_path: Path) -> None:
    db = tmp_path / "stub.db"
    store = Store(str(db))
    store.put_webhook_endpoint(
        WebhookEndpoint("development", "http://127.0.0.1:9/", "whsec_old"), timefmt.now_us()
    )
    store.close()
    command = [sys.executable, "-m", "paysuite", "stub", "webhooks", "rotate", "--db", str(db)]
    done = subprocess.run([*command, "--overlap", "24h"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (secret,) = [line[8:] for line in done.stdout.splitlines() if line.startswith("secret: ")]
    assert "the previous secret also signs until" in done.stdout
    again = Store(str(db))
    endpoint = again.webhook_endpoint("development")
    again.close()
    assert endpoint is not None and endpoint.secret == secret and endpoint.previous == "whsec_old"
    left_us = (endpoint.previous_until_us or 0) - timefmt.now_us()
    assert 23.9 * 3600e6 < left_us <= 24 * 3600e6
    bad = subprocess.run([*command, "--overlap", "soon"], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert bad.returncode == 2 and "expected a duration" in bad.stderr
    none = subprocess.run([*command, "--mode", "staging"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert none.returncode == 2 and "no webhook endpoint for mode 'staging'" in none.stderr
