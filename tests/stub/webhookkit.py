"""A tiny webhook receiver for the stub's delivery tests: it records every POST as it arrived
(raw body and headers) and answers with the status its script says, so a test can make the stub
retry, time out or succeed. Verification and deduplication are not its job (that is paysuite's
receiver, tested on its own): the tests verify what it recorded with the shared contract,
``paysuite_core.webhook_signature``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from paysuite_core import webhook_signature


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
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver._lock:
                    index = len(receiver.arrivals)
                    receiver.arrivals.append(Arrival(dict(self.headers.items()), body))
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                status = receiver.answer(index)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

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
