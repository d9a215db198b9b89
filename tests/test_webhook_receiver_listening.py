"""The webhook receiver's listening side: a forwarded answer is relayed whole or reported as the
handler failing (never a truncated 200), every bad request gets the receiver's JSON error, and a
body is refused from its Content-Length before it is read (``paysuite_core.listening``)."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from rawhttp import scripted_handler, send_raw

from paysuite_core.webhooks import receiver as webhook_receiver
from paysuite_core.webhooks.receiver import Forwarder, RunningReceiver, WebhookReceiver, running
from paysuite_core.webhooks.signature import new_secret, sign

SECRET = new_secret()
#: The handler's body in the tests below: 27 bytes.
HANDLED = b'{"handled": true, "n": 123}'
assert len(HANDLED) == 27


def delivery(event_id: str) -> tuple[bytes, dict[str, str]]:
    record = {
        "event_id": event_id,
        "event_kind": "transaction:created",
        "created_at": "2026-11-24T10:00:00.000Z",
        "data": {"ref": "r1", "kind": "CASHIN", "amount": 100, "status": "pending"},
    }
    body = json.dumps(record).encode()
    headers = {
        "Content-Type": "application/json",
        "Paysuite-Signature": sign(SECRET, body),
        "Paysuite-Event-Id": event_id,
    }
    return body, headers


def deliver(served: RunningReceiver, event_id: str) -> tuple[httpx.Response, float]:
    body, headers = delivery(event_id)
    started = time.monotonic()
    answer = httpx.post(served.url + "hooks", content=body, headers=headers, timeout=30)
    return answer, time.monotonic() - started


def head(length: int | None = None, extra: str = "") -> bytes:
    framing = "Transfer-Encoding: chunked" if length is None else f"Content-Length: {length}"
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{framing}\r\n{extra}"
        "Connection: close\r\n\r\n"
    ).encode()


def in_two_parts() -> Iterator[tuple[float, bytes]]:
    yield 0, head(27) + HANDLED[:12]
    yield 0.3, HANDLED[12:]


def half_sent() -> Iterator[tuple[float, bytes]]:
    yield 0, head(27) + HANDLED[:12]  # then the connection closes


def endless_chunked() -> Iterator[tuple[float, bytes]]:
    yield 0, head()
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    while True:
        yield 0, chunk


def endless_until_close() -> Iterator[tuple[float, bytes]]:
    yield 0, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
    while True:
        yield 0, b"x" * 0x10000


def trickle() -> Iterator[tuple[float, bytes]]:
    yield 0, head(27)
    for byte in HANDLED:
        yield 0.2, bytes([byte])


def gzipped() -> Iterator[tuple[float, bytes]]:
    packed = gzip.compress(HANDLED, mtime=0)
    yield 0, head(len(packed), "Content-Encoding: gzip\r\n") + packed


def forwarding(url: str, timeout_s: float = 10) -> Any:
    return running(WebhookReceiver(SECRET, forward=Forwarder(url, timeout_s=timeout_s)))


def test_a_body_sent_in_two_parts_is_relayed_whole() -> None:
    with scripted_handler(in_two_parts) as handler, forwarding(handler.url) as served:
        answer, _ = deliver(served, "w1")
        assert answer.status_code == 200
        assert answer.content == HANDLED  # 27 of 27 bytes, not the 12 buffered first
        (arrival,) = served.ledger.arrivals()
        assert arrival.handler is not None and arrival.handler.status == 200


def test_a_coded_answer_is_relayed_as_the_handler_sent_it() -> None:
    with scripted_handler(gzipped) as handler, forwarding(handler.url) as served:
        body, headers = delivery("g1")
        with httpx.Client(timeout=10) as client:
            answer = client.post(served.url, content=body, headers=headers)
        assert answer.status_code == 200 and answer.headers["Content-Encoding"] == "gzip"
        assert answer.content == HANDLED  # httpx inflated it: the bytes passed as sent


@pytest.mark.parametrize(
    ("script", "code"),
    [
        (half_sent, "handler_answer_incomplete"),
        (endless_chunked, "handler_answer_too_large"),
        (endless_until_close, "handler_answer_too_large"),
    ],
    ids=["half-sent", "endless-chunked", "endless-until-close"],
)
def test_a_cut_or_endless_answer_is_the_handler_failing(script: Any, code: str) -> None:
    with scripted_handler(script) as handler, forwarding(handler.url) as served:
        answer, took = deliver(served, "x1")
        assert answer.status_code == 502, answer.content[:200]
        assert answer.headers["Content-Type"].startswith("application/json")
        refused = answer.json()
        assert refused["code"] == code and "its 200 " in refused["message"]
        assert took < 9  # bounded in size long before the 10 s time-out
        (arrival,) = served.ledger.arrivals()
        assert arrival.status == 502 and arrival.handler is not None
        assert arrival.handler.status == 502 and arrival.handler.error


def test_an_answer_not_whole_in_time_is_a_504() -> None:
    with scripted_handler(trickle) as handler, forwarding(handler.url, timeout_s=1) as served:
        answer, took = deliver(served, "t1")
        assert answer.status_code == 504
        assert "no whole answer within 1 s" in answer.json()["message"]
        assert took < 5


# -- JSON everywhere, bounded in time and size ----------------------------------------


@pytest.fixture
def served() -> Iterator[RunningReceiver]:
    with running(WebhookReceiver(SECRET)) as receiver:
        yield receiver


def test_a_body_that_does_not_decode_is_a_json_400(
    served: RunningReceiver, capfd: pytest.CaptureFixture[str]
) -> None:
    for coding in (b"gzip", b"deflate"):
        request = (
            b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Encoding: " + coding + b"\r\nContent-Length: 5\r\n\r\nhello"
        )
        answer = send_raw(served.port, request)
        assert answer.status == 400, answer
        assert answer.json()["code"] == "undecodable_body"
        assert coding.decode() in answer.json()["message"]
    time.sleep(0.2)
    assert "Traceback" not in capfd.readouterr().err


BAD_CHUNK = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n"


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        (b"GET /hooks HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method_not_allowed"),
        (b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405, "method_not_allowed"),
        (b"GARBAGE\r\n\r\n", 400, "bad_request"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400, "bad_request"),
        (
            b"POST / HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 20_000 + b"\r\n\r\n",
            431,
            "header_too_large",
        ),
        (BAD_CHUNK, 400, "bad_request"),
    ],
    ids=["GET", "PUT", "garbage", "NUL", "20 KB header", "bad chunk"],
)
def test_every_bad_request_gets_the_receiver_s_json_error(
    served: RunningReceiver, request_bytes: bytes, status: int, code: str
) -> None:
    answer = send_raw(served.port, request_bytes)
    assert answer.status == status, answer
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert set(body) == {"code", "message"} and body["code"] == code
    if status == 405:
        assert answer.headers["allow"]  # what the receiver takes, as aiohttp said


@pytest.mark.parametrize("expect", [True, False], ids=["expect-100-continue", "plain"])
def test_a_declared_over_size_body_is_refused_at_once(
    served: RunningReceiver, expect: bool
) -> None:
    """100 MB declared, not a byte sent: 413 at once, no 100 Continue, the connection closed."""
    request = (
        b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + (b"Expect: 100-continue\r\n" if expect else b"")
        + b"Content-Length: 100000000\r\n\r\n"
    )
    answer = send_raw(served.port, request, linger_s=3)
    assert answer.status == 413 and answer.interim == []
    assert answer.json()["code"] == "delivery_too_large"
    assert answer.first_byte_s < 2  # not after a body time-out
    assert answer.headers.get("connection") == "close" and answer.closed


def test_a_body_that_will_be_taken_is_invited(served: RunningReceiver) -> None:
    body, headers = delivery("e1")
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = (
        f"POST /hooks HTTP/1.1\r\nHost: x\r\n{lines}Expect: 100-continue\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    answer = send_raw(served.port, request)
    assert answer.interim == [100] and answer.status == 200


def test_a_chunked_body_past_the_limit_is_refused(served: RunningReceiver) -> None:
    chunk = b"100000\r\n" + b"x" * 0x100000 + b"\r\n"
    request = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 2
    answer = send_raw(served.port, request)
    assert answer.status == 413 and answer.json()["code"] == "delivery_too_large"


def test_a_body_that_never_comes_is_a_408(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook_receiver, "BODY_TIMEOUT_S", 0.5)
    with running(WebhookReceiver(SECRET)) as receiver:
        request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
        answer = send_raw(receiver.port, request, linger_s=3)
        assert answer.status == 408 and answer.json()["code"] == "request_timeout"
        assert answer.closed
        assert receiver.ledger.arrivals() == []
