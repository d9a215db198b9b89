"""The webhook receiver and its ledger, against a tiny sender that signs with the contract."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from webhookstub import HookServer

from paysuite_core.webhooks.ledger import CREATED, PROCESSED
from paysuite_core.webhooks.receiver import (
    ReceiverStartError,
    RunningReceiver,
    WebhookReceiver,
    running,
)
from paysuite_core.webhooks.signature import new_secret, sign, sign_live

SECRET = new_secret()


def event(event_id: str, kind: str = CREATED, ref: str = "r1") -> dict[str, Any]:
    return {
        "event_id": event_id,
        "event_kind": kind,
        "created_at": "2026-11-24T10:00:00.000Z",
        "data": {"ref": ref, "kind": "CASHIN", "amount": 100, "status": "pending"},
    }


def send(
    receiver: RunningReceiver,
    record: dict[str, Any] | bytes,
    *,
    secret: str = SECRET,
    timestamp: int | None = None,
    event_id: str | None = None,
    attempt: int = 1,
) -> httpx.Response:
    body = record if isinstance(record, bytes) else json.dumps(record).encode()
    headers = {
        "Content-Type": "application/json",
        "Paysuite-Signature": sign(secret, body, timestamp),
        "Paysuite-Event-Id": event_id
        or (record.get("event_id", "") if isinstance(record, dict) else ""),
        "Paysuite-Delivery-Attempt": str(attempt),
        "Paysuite-Webhook-Mode": "development",
    }
    return httpx.post(receiver.url + "hooks", content=body, headers=headers, timeout=5)


@pytest.fixture
def live() -> Iterator[RunningReceiver]:
    lines: list[str] = []
    receiver = WebhookReceiver(SECRET, on_arrival=lambda a: lines.append(a.line()))
    with running(receiver) as served:
        served.lines = lines  # type: ignore[attr-defined]
        yield served


def test_a_signed_delivery_is_verified_and_a_repeat_is_acknowledged_once(
    live: RunningReceiver,
) -> None:
    first = send(live, event("e1"))
    assert first.status_code == 200 and first.json() == {"received": "e1", "duplicate": False}
    again = send(live, event("e1"), attempt=2)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert [a.event_id for a in live.ledger.accepted()] == ["e1"]
    assert [a.verdict for a in live.ledger.arrivals()] == ["verified", "duplicate"]
    assert live.lines[0].startswith("✔ verified") and "ref=r1" in live.lines[0]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kwargs", "status", "code", "reason"),
    [
        ({"secret": "whsec_other"}, 401, "invalid_signature", "signature mismatch"),
        ({"timestamp": int(time.time()) - 3600}, 401, "invalid_signature", "stale signature"),
        ({"event_id": "e-other"}, 400, "malformed_delivery", "is not the body's event_id"),
    ],
)
def test_a_bad_delivery_is_rejected_with_a_clear_reason(
    live: RunningReceiver, kwargs: dict[str, Any], status: int, code: str, reason: str
) -> None:
    reply = send(live, event("e2"), **kwargs)
    assert reply.status_code == status
    assert reply.json()["code"] == code and reason in reply.json()["message"]
    assert live.ledger.accepted() == []
    (arrival,) = live.ledger.arrivals()
    assert arrival.verdict == "rejected" and reason in arrival.reason
    assert arrival.body_event_id == "e2"  # still known to have arrived, for the arrival rules
    assert live.lines[0].startswith("× rejected") and reason in live.lines[0]  # type: ignore[attr-defined]


def test_header_names_are_case_insensitive(live: RunningReceiver) -> None:
    body = json.dumps(event("e7")).encode()
    headers = {"paysuite-signature": sign(SECRET, body), "PAYSUITE-EVENT-ID": "e7"}
    reply = httpx.post(live.url, content=body, headers=headers, timeout=5)
    assert reply.status_code == 200, reply.text


def test_unsigned_and_non_event_bodies_are_rejected(live: RunningReceiver) -> None:
    unsigned = httpx.post(live.url, content=b"{}", timeout=5)
    assert unsigned.status_code == 401 and "no Paysuite-Signature" in unsigned.json()["message"]
    garbage = send(live, b"not json", event_id="x")
    assert garbage.status_code == 400 and garbage.json()["code"] == "malformed_delivery"
    assert httpx.get(live.url, timeout=5).status_code == 405


def test_a_refusal_fails_one_delivery_then_the_retry_is_accepted(live: RunningReceiver) -> None:
    live.receiver.refuse(lambda record: record.get("event_id") == "e3")
    assert send(live, event("e3")).status_code == 503
    assert send(live, event("e3"), attempt=2).status_code == 200
    assert [(a.verdict, a.attempt) for a in live.ledger.arrivals()] == [
        ("refused", "1"),
        ("verified", "2"),
    ]


def test_the_ledger_compares_deliveries_with_the_events_list(live: RunningReceiver) -> None:
    send(live, event("c1", CREATED, "r1"))
    changed = event("p1", PROCESSED, "r1")
    send(live, {**changed, "data": {**changed["data"], "status": "success"}})
    send(live, event("c1-bis", CREATED, "r1"))  # the same event again under a new id
    send(live, event("c2", CREATED, "r2"), secret="whsec_wrong")
    listed = [event("c1"), changed, event("c2", CREATED, "r2"), event("c3", CREATED, "r3")]
    comparison = live.ledger.compare(listed)
    assert not comparison.ok and comparison.listed == 4
    assert [r["event_id"] for r in comparison.missing] == ["c3"]
    assert comparison.unverified == ("c2",)
    assert [(a["event_id"], b["data"]["status"]) for a, b in comparison.mismatched] == [
        ("p1", "success")
    ]
    assert [r["event_id"] for r in comparison.unlisted] == ["c1-bis"]
    assert live.ledger.ids_per_event("r1")[("r1", CREATED)] == {"c1", "c1-bis"}
    assert live.ledger.compare([event("c1")]).unlisted  # c1-bis is of the same transaction
    assert live.ledger.refs() == ["r1", "r2"]


def test_the_ledger_sees_processed_attempted_before_created(live: RunningReceiver) -> None:
    send(live, event("p9", PROCESSED, "r9"))
    assert not live.ledger.out_of_order("r9")  # not judged before both first attempts arrived
    send(live, event("c9", CREATED, "r9"))
    assert live.ledger.out_of_order("r9")
    send(live, event("c8", CREATED, "r8"))
    send(live, event("p8", PROCESSED, "r8"))
    assert not live.ledger.out_of_order("r8")
    assert live.ledger.wait_for(lambda ledger: len(ledger.accepted()) == 4, timeout_s=1)
    assert not live.ledger.wait_for(lambda ledger: len(ledger.accepted()) == 5, timeout_s=0.3)


def test_a_retried_created_arriving_after_processed_is_in_order(live: RunningReceiver) -> None:
    """The contract orders first attempts; a retry may land after the next event (RC-40)."""
    live.receiver.refuse(lambda record: record["event_id"] == "c7")
    assert send(live, event("c7", CREATED, "r7")).status_code == 503
    send(live, event("p7", PROCESSED, "r7"))
    send(live, event("c7", CREATED, "r7"), attempt=2)
    assert not live.ledger.out_of_order("r7")
    send(live, event("p6", PROCESSED, "r6"), attempt=4)  # both first attempts lost (receiver
    send(live, event("c6", CREATED, "r6"), attempt=5)  # down): nothing to judge
    assert not live.ledger.out_of_order("r6")


def test_the_receiver_binds_loopback_only() -> None:
    with pytest.raises(ReceiverStartError, match="not a loopback address"):
        with running(WebhookReceiver(SECRET), host="0.0.0.0"):
            pass


def test_a_taken_port_is_a_clear_start_error(live: RunningReceiver) -> None:
    with pytest.raises(ReceiverStartError, match=f"cannot listen on 127.0.0.1:{live.port}"):
        with running(WebhookReceiver(SECRET), port=live.port):
            pass


@pytest.mark.parametrize(
    "body", [b"[1, 2]", b"\xff\xfe not utf-8", b'{"event_id": 7}', b"null"], ids=repr
)
def test_a_signed_body_that_is_no_event_record_is_a_400_not_a_500(
    live: RunningReceiver, body: bytes
) -> None:
    reply = send(live, body, event_id="x")
    assert reply.status_code == 400 and reply.json()["code"] == "malformed_delivery"


def test_an_oversized_delivery_is_refused_without_a_500(live: RunningReceiver) -> None:
    reply = send(live, b'{"event_id": "big", "pad": "' + b"x" * (2 * 1024**2) + b'"}')
    assert reply.status_code == 413
    assert live.ledger.arrivals() == []


# -- either signature format, forwarding, hardening ---------------------------------


def live_send(
    receiver: RunningReceiver, record: dict[str, Any], secret: str = SECRET
) -> httpx.Response:
    """A delivery as the live service makes it: X-Paypack-Signature only, no event-id header."""
    body = json.dumps(record).encode()
    headers = {"Content-Type": "application/json", "X-Paypack-Signature": sign_live(secret, body)}
    return httpx.post(receiver.url + "hooks", content=body, headers=headers, timeout=5)


def test_either_format_verifies_and_the_arrival_says_which(live: RunningReceiver) -> None:
    assert live_send(live, event("l1")).status_code == 200
    assert send(live, event("p1")).status_code == 200
    body = json.dumps(event("b1")).encode()
    both = {
        "Paysuite-Signature": sign(SECRET, body),
        "X-Paypack-Signature": sign_live(SECRET, body),
    }
    assert httpx.post(live.url, content=body, headers=both, timeout=5).status_code == 200
    assert [a.signature for a in live.ledger.arrivals()] == ["live", "paysuite", "paysuite+live"]
    assert "sig live" in live.lines[0]  # type: ignore[attr-defined]
    forged = live_send(live, event("l2"), secret="whsec_other")
    assert forged.status_code == 401 and "X-Paypack-Signature" in forged.json()["message"]
    # with both, the timestamped one decides: a replay keeps a valid live signature for ever
    stale = {
        "Paysuite-Signature": sign(SECRET, body, int(time.time()) - 3600),
        "X-Paypack-Signature": sign_live(SECRET, body),
    }
    replayed = httpx.post(live.url, content=body, headers=stale, timeout=5)
    assert replayed.status_code == 401 and "stale signature" in replayed.json()["message"]


def test_a_rotated_secret_and_the_old_one_both_verify() -> None:
    old, new = new_secret(), new_secret()
    with running(WebhookReceiver(new)) as served:  # a receiver that switched already
        body = json.dumps(event("r0")).encode()
        overlap = {"Paysuite-Signature": sign([new, old], body),
                   "X-Paypack-Signature": sign_live(old, body)}  # fmt: skip
        assert httpx.post(served.url, content=body, headers=overlap, timeout=5).status_code == 200
        (arrival,) = served.ledger.arrivals()
        assert arrival.signature == "paysuite+live-mismatch"  # reported by the listener
    with running(WebhookReceiver([new, old])) as served:
        body = json.dumps(event("r1")).encode()
        two = {"Paysuite-Signature": sign([new, old], body)}
        assert httpx.post(served.url, content=body, headers=two, timeout=5).status_code == 200
        assert live_send(served, event("r2"), secret=old).status_code == 200
        assert live_send(served, event("r3"), secret=new).status_code == 200


def test_a_head_is_answered_without_a_signature(live: RunningReceiver) -> None:
    assert httpx.head(live.url + "webhooks/paypack", timeout=5).status_code == 200
    assert live.ledger.arrivals() == []


def test_over_long_and_over_size_deliveries_get_json_codes(live: RunningReceiver) -> None:
    long_sig = httpx.post(
        live.url, content=b"{}", headers={"X-Paypack-Signature": "A" * 5000}, timeout=5
    )
    assert long_sig.status_code == 431 and long_sig.json()["code"] == "signature_too_long"
    huge_header = httpx.post(
        live.url, content=b"{}", headers={"Paysuite-Signature": "v1=" + "a" * 40_000}, timeout=5
    )
    assert huge_header.status_code == 431 and huge_header.json()["code"] == "header_too_large"
    assert "aaaa" not in huge_header.text  # the header is not echoed back
    big = httpx.post(live.url, content=b"x" * (2 * 1024**2), timeout=10)
    assert big.status_code == 413 and big.json()["code"] == "delivery_too_large"


def test_a_slowloris_connection_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from paysuite_core.webhooks import receiver as webhook_receiver

    monkeypatch.setattr(webhook_receiver, "IDLE_TIMEOUT_S", 0.5)
    with running(WebhookReceiver(SECRET)) as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # and never the rest of the head
            started = time.monotonic()
            sock.settimeout(5)
            assert sock.recv(1024) == b""  # closed by the receiver, not by our timeout
            assert time.monotonic() - started < 4


def Handler(statuses: list[int], delay_s: float = 0.0) -> HookServer:
    """A developer's webhook handler: answers ``statuses`` in turn, with a JSON body."""

    def reply(headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        with hook.lock:
            status = statuses[min(len(hook.got), len(statuses)) - 1]
        return status, json.dumps({"handled": status < 300}).encode()

    hook = HookServer(reply, "/my/handler", delay_s)
    return hook


def test_forwarding_passes_bytes_and_headers_and_answers_with_the_handler_s_status() -> None:
    from paysuite_core.webhooks.receiver import Forwarder

    handler = Handler([500, 200])
    try:
        with running(WebhookReceiver(SECRET, forward=Forwarder(handler.url))) as served:
            record = event("f1")
            first = send(served, record)
            second = send(served, record, attempt=2)
            assert (first.status_code, second.status_code) == (500, 200)
            assert first.json() == {"handled": False}  # the handler's own body
            assert len(handler.got) == 2
            headers, body = handler.got[0]
            assert body == json.dumps(record).encode()  # byte for byte
            assert headers["Paysuite-Event-Id"] == "f1" and headers["Paysuite-Signature"]
            assert headers["Paysuite-Delivery-Attempt"] == "1"
            arrivals = served.ledger.arrivals()
            assert [(a.verdict, a.handler.status) for a in arrivals if a.handler] == [
                ("verified", 500), ("duplicate", 200)
            ]  # fmt: skip
            forged = send(served, event("f2"), secret="whsec_other")
            assert forged.status_code == 401 and len(handler.got) == 2  # not forwarded
    finally:
        handler.close()


def test_a_slow_or_absent_handler_is_timed_and_bounded() -> None:
    from paysuite_core.webhooks.receiver import Forwarder

    slow = Handler([200], delay_s=0.3)
    try:
        with running(WebhookReceiver(SECRET, forward=Forwarder(slow.url, timeout_s=2))) as served:
            assert send(served, event("s1")).status_code == 200
            (arrival,) = served.ledger.arrivals()
            assert arrival.handler is not None and arrival.handler.elapsed_ms >= 300
        with running(WebhookReceiver(SECRET, forward=Forwarder(slow.url, timeout_s=0.1))) as served:
            late = send(served, event("s2"))
            assert late.status_code == 504 and late.json()["code"] == "handler_unreachable"
    finally:
        slow.close()
    with running(WebhookReceiver(SECRET, forward=Forwarder("http://127.0.0.1:9/"))) as served:
        gone = send(served, event("s3"))
        assert gone.status_code == 502
        assert "Cannot connect" in served.ledger.arrivals()[0].handler.text()  # type: ignore[union-attr]


def test_events_filter_what_is_forwarded() -> None:
    from paysuite_core.webhooks.receiver import Forwarder

    handler = Handler([200])
    try:
        forward = Forwarder(handler.url, frozenset({PROCESSED}))
        with running(WebhookReceiver(SECRET, forward=forward)) as served:
            assert send(served, event("c1", CREATED)).status_code == 200
            assert send(served, event("p1", PROCESSED)).status_code == 200
            assert [json.loads(body)["event_id"] for _, body in handler.got] == ["p1"]
    finally:
        handler.close()
