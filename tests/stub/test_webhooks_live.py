"""The stub's deliveries pass a receiver written for the live service, unchanged.

``LiveServiceReceiver`` is written from docs/reference-choices.md's table of what merchants'
webhook receivers expect alone, the way the
merchants' public receivers are, its verification using nothing of paysuite: header
``X-Paypack-Signature``, the base64 HMAC-SHA256 of the raw body under the webhook secret, the
body one event record, ``successful`` in processed events (``--variant live``), a ``HEAD``
answered 200 without a signature, a 200 JSON answer. The walk-through of docs/webhooks.md with
it: every delivery verified, none retried; and a HEAD when the endpoint is registered.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from stubkit import InProcessStub
from webhookkit import FAST_RETRY, wait_log
from webhookstub import HookServer

RECORD_KEYS = {"event_id", "event_kind", "created_at", "data"}
DATA_KEYS = {"ref", "kind", "fee", "merchant", "client", "amount", "status", "created_at",
             "processed_at"}  # fmt: skip


class LiveServiceReceiver:
    """A merchant's receiver for the live service, from that table only (its HTTP plumbing
    the tests' one ``HookServer``, which knows nothing of signatures)."""

    def __init__(self) -> None:
        self.secret = ""  # set once the stub shows it, as a merchant pastes it from the dashboard
        self.verified: list[dict[str, Any]] = []
        self.unverified: list[bytes] = []
        self.lock = threading.Lock()
        self.hook = HookServer(self.reply, "/webhooks/paypack")
        self.url = self.hook.url

    @property
    def heads(self) -> int:
        return self.hook.heads

    def reply(self, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        given = headers.get("X-Paypack-Signature", "")
        mac = hmac.new(self.secret.encode(), raw, hashlib.sha256).digest()
        ok = hmac.compare_digest(base64.b64encode(mac).decode(), given)
        with self.lock:
            if ok:
                self.verified.append(json.loads(raw))
            else:
                self.unverified.append(raw)
        return 200 if ok else 401, json.dumps({"ok": ok}).encode()

    def wait(self, count: int, timeout_s: float = 15) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.verified) + len(self.unverified) >= count:
                    return list(self.verified)
            time.sleep(0.02)
        raise AssertionError(f"{len(self.verified)} verified, {len(self.unverified)} not")

    def close(self) -> None:
        self.hook.close()


@pytest.fixture
def merchant() -> Iterator[LiveServiceReceiver]:
    receiver = LiveServiceReceiver()
    yield receiver
    receiver.close()


def confirmed(stub: InProcessStub) -> str:
    created = stub.api.create("cashin", headers={"X-Webhook-Mode": "development"})
    assert created.status_code < 300, created.text
    ref = str(created.json()["ref"])
    assert stub.api.sandbox(ref, "confirm").status_code == 200
    return ref


def secret_of(stub: InProcessStub) -> str:
    endpoint = stub.call(stub.stub.store.webhook_endpoint, "development")
    return str(endpoint.secret)


@pytest.mark.parametrize("variants", [[], ["live"]], ids=["reference", "live"])
def test_a_live_service_receiver_verifies_every_delivery_and_none_is_retried(
    inproc: Callable[..., InProcessStub], merchant: LiveServiceReceiver, variants: list[str]
) -> None:
    stub = inproc(
        webhooks={"development": merchant.url}, webhook_retry=FAST_RETRY, variants=variants
    )
    merchant.secret = secret_of(stub)
    refs = [confirmed(stub) for _ in range(3)]
    records = merchant.wait(6)
    assert merchant.unverified == [] and len(records) == 6
    for record in records:
        assert set(record) == RECORD_KEYS and set(record["data"]) == DATA_KEYS
    processed = [r for r in records if r["event_kind"] == "transaction:processed"]
    assert {r["data"]["status"] for r in processed} == {"successful" if variants else "success"}
    log = wait_log(stub.root_url, lambda rows: len(rows) == 6 and all(
        r["status"] == "delivered" for r in rows))  # fmt: skip
    assert {r["attempts"] for r in log} == {1}, log  # none retried
    assert {r["ref"] for r in log} == set(refs)
    time.sleep(0.3)
    assert len(merchant.verified) == 6  # and nothing more arrived


def test_an_endpoint_is_sent_a_head_when_registered_and_a_silent_one_is_reported(
    inproc: Callable[..., InProcessStub],
    merchant: LiveServiceReceiver,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from stub_server import timefmt
    from stub_server.webhook_delivery.endpoints import add_endpoint

    stub = inproc(webhooks={"development": merchant.url}, webhook_retry=FAST_RETRY)
    deadline = time.monotonic() + 5
    while merchant.heads == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert merchant.heads == 1
    silent = "http://127.0.0.1:9/nobody"  # discard port: nothing answers
    with caplog.at_level("WARNING", logger="stub_server.webhook_delivery"):
        stub.call(add_endpoint, stub.stub.store, "production", silent, timefmt.now_us())
        deadline = time.monotonic() + 5
        while "does not answer a HEAD" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
    assert f"webhook endpoint production {silent} does not answer a HEAD" in caplog.text
