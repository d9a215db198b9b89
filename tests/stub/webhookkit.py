"""A tiny webhook receiver for the stub's delivery tests: it records every POST as it arrived
(raw body and headers) and answers with the status its script says, so a test can make the stub
retry, time out or succeed. Verification and deduplication are not its job (that is paysuite's
receiver, tested on its own): the tests verify what it recorded with the shared contract,
``paysuite_core.webhooks.signature``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from paysuite_core.webhooks import signature as webhook_signature


@dataclass(frozen=True)
class Arrival:
    """One POST as the receiver saw it."""

    headers: dict[str, str]
    body: bytes

    @property
    def record(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value

    @property
    def event_id(self) -> str:
        return self.headers[webhook_signature.EVENT_ID_HEADER]

    @property
    def attempt(self) -> int:
        return int(self.headers[webhook_signature.ATTEMPT_HEADER])

    def verify(self, secret: str) -> webhook_signature.SignedDelivery:
        return webhook_signature.verify(
            secret, self.headers.get(webhook_signature.SIGNATURE_HEADER), self.body
        )


class Receiver:
    """``http://127.0.0.1:PORT/hook``; ``answer(n)`` gives the status of the n-th POST (0-based),
    ``delay_s`` holds each answer back (a slow receiver)."""

    def __init__(self, answer: Callable[[int], int] = lambda n: 200, delay_s: float = 0) -> None:
        self.answer = answer
        self.delay_s = delay_s
        self.arrivals: list[Arrival] = []
        self.heads = 0  # HEADs received (the stub pings a new endpoint so)
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:  # as merchants' receivers: 200, no check
                with receiver._lock:
                    receiver.heads += 1
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver._lock:
                    index = len(receiver.arrivals)
                    receiver.arrivals.append(Arrival(dict(self.headers.items()), body))
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                status = receiver.answer(index)
                body = b"" if status in (204, 304) else b"ok"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout_s: float = 15) -> list[Arrival]:
        """The arrivals once there are at least ``count`` (bounded wait)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.arrivals) >= count:
                    return list(self.arrivals)
            time.sleep(0.02)
        raise AssertionError(f"{len(self.arrivals)} deliveries arrived, expected {count}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def deliveries(root_url: str, **params: str) -> list[dict[str, Any]]:
    """The stub's delivery log (``GET /_sandbox/webhooks/deliveries``)."""
    answer = httpx.get(f"{root_url}/_sandbox/webhooks/deliveries", params=params, timeout=10)
    assert answer.status_code == 200, answer.text
    rows: list[dict[str, Any]] = answer.json()["deliveries"]
    return rows


def wait_log(
    root_url: str,
    until: Callable[[list[dict[str, Any]]], bool],
    timeout_s: float = 15,
    **params: str,
) -> list[dict[str, Any]]:
    """The delivery log once ``until`` holds for it (bounded wait)."""
    deadline = time.monotonic() + timeout_s
    rows = deliveries(root_url, **params)
    while not until(rows):
        if time.monotonic() > deadline:
            raise AssertionError(f"the delivery log never got there: {rows}")
        time.sleep(0.05)
        rows = deliveries(root_url, **params)
    return rows


#: Retries fast enough for a test: 50 ms doubling to 200 ms.
FAST_RETRY = {"base_s": 0.05, "cap_s": 0.2, "max_attempts": 12, "timeout_s": 2}


# -- the fault switches' checks (``test_stub_faults.FAULT_CHECKS``): each asserts the rule the
# -- fault breaks, so it passes on the plain stub's opposite and fails without the switch ------

CREATED, PROCESSED = "transaction:created", "transaction:processed"


@contextmanager
def endpoint_on(stub: Any, answer: Callable[[int], int] = lambda n: 200) -> Iterator[Receiver]:
    """A receiver added as the ``development`` endpoint of a running in-process stub (the way
    ``paysuite stub webhooks add`` adds one), closed afterwards."""
    from stub_server import timefmt
    from stub_server.webhook_delivery.endpoints import add_endpoint

    receiver = Receiver(answer)
    try:
        stub.call(add_endpoint, stub.stub.store, "development", receiver.url, timefmt.now_us())
        yield receiver
    finally:
        receiver.close()


def endpoint_secret(stub: Any, mode: str = "development") -> str:
    endpoint = stub.call(stub.stub.store.webhook_endpoint, mode)
    assert endpoint is not None
    return str(endpoint.secret)


def webhook_bad_signature(stub: Any) -> None:
    with endpoint_on(stub) as receiver:
        stub.api.create("cashin")
        (arrival,) = receiver.wait_for(1)
        try:
            arrival.verify(endpoint_secret(stub))
        except webhook_signature.SignatureError as exc:
            assert "signature mismatch" in str(exc)
        else:
            raise AssertionError("the delivery's signature holds")


def webhook_no_retry(stub: Any) -> None:
    with endpoint_on(stub, answer=lambda n: 500 if n == 0 else 200) as receiver:
        stub.api.create("cashin")
        (row,) = wait_log(stub.root_url, lambda rows: rows[0]["status"] != "pending")
        assert row["status"] == "abandoned" and row["attempts"] == 1, row
        assert len(receiver.arrivals) == 1


def webhook_duplicate_new_id(stub: Any) -> None:
    with endpoint_on(stub) as receiver:
        ref = stub.api.create("cashin").json()["ref"]
        first, second = receiver.wait_for(2, timeout_s=5)
        for arrival in (first, second):
            arrival.verify(endpoint_secret(stub))  # validly signed: only the id is new
        assert first.event_id != second.event_id
        assert first.record["data"] == second.record["data"]
        listed = {r["event_id"] for r in stub.api.events(ref=ref).json()["transactions"]}
        assert first.event_id in listed and second.event_id not in listed


def webhook_out_of_order(stub: Any) -> None:
    with endpoint_on(stub) as receiver:
        ref = stub.api.create("cashin").json()["ref"]
        assert stub.api.sandbox(ref, "confirm").status_code == 200
        first, second = receiver.wait_for(2)
        assert [first.record["event_kind"], second.record["event_kind"]] == [PROCESSED, CREATED]


def webhook_live_signature_only(stub: Any) -> None:
    """The delivery carries a valid X-Paypack-Signature and no timestamped Paysuite-Signature."""
    with endpoint_on(stub) as receiver:
        stub.api.create("cashin")
        (arrival,) = receiver.wait_for(1)
        secret = endpoint_secret(stub)
        assert arrival.headers.get(webhook_signature.LIVE_SIGNATURE_HEADER) == (
            webhook_signature.sign_live(secret, arrival.body)
        )
        assert webhook_signature.SIGNATURE_HEADER not in arrival.headers, arrival.headers
