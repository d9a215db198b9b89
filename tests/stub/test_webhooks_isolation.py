"""One bad endpoint cannot stall another, and the signing secrets are kept like keys.

Tried as an attacker would: a ``development`` endpoint that accepts connections and
never answers, with 2,000 deliveries pending to it, beside a ``production`` endpoint that
answers at once. Each endpoint has its own lane (concurrency, circuit breaker), so the
production deliveries arrive within a second. And a copy of the database holds no secret: they
are in ``<db>.webhook-secrets`` (0600), as the JWT key is in ``<db>.jwt-key``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import stat
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from stubkit import InProcessStub

from stub_server import timefmt
from stub_server.store import Store, WebhookEndpoint
from stub_server.store.webhook_secrets import secrets_path
from stub_server.webhook_delivery.dispatcher import (
    BREAKER_FAILURES,
    CircuitBreaker,
    DeliveryHooks,
    Dispatcher,
)
from stub_server.webhook_delivery.retry_policy import RetryPolicy

BACKLOG = 2000
PRODUCTION_DELIVERIES = 20


@pytest.fixture
def black_hole() -> Iterator[str]:
    """An endpoint that takes connections and never answers (nor accepts: the kernel's
    backlog completes the handshakes)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/never"
    sock.close()


class Timed:
    """A receiver that answers 200 at once and notes when each event_id arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        timed = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                timed.arrived.setdefault(self.headers["Paysuite-Event-Id"], time.monotonic())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def pile_up(stub: InProcessStub, count: int) -> None:
    """``count`` pending development deliveries, each of its own transaction, due now."""
    ref = stub.api.create("cashin", headers={"X-Webhook-Mode": "development"}).json()["ref"]

    def insert() -> None:
        store = stub.stub.store
        seq, event_id = store.conn.execute(
            "SELECT event_seq, event_id FROM webhook_outbox WHERE ref = ?", (ref,)
        ).fetchone()
        now = timefmt.now_us()
        store.conn.executemany(
            "INSERT INTO webhook_outbox (event_seq, event_id, ref, event_kind, mode, url, status,"
            " next_attempt_us, created_us) VALUES (?, ?, ?, 'transaction:created', 'development',"
            " ?, 'pending', ?, ?)",
            [(seq, f"{event_id}-{i}", f"backlog-{i}", store.webhook_urls["development"], now, now)
             for i in range(count)],
        )  # fmt: skip

    stub.call(insert)


def test_a_never_answering_endpoint_does_not_delay_another(
    inproc: Callable[..., InProcessStub], black_hole: str, tmp_path: Path
) -> None:
    production = Timed()
    try:
        stub = inproc(
            db=str(tmp_path / "stub.db"),
            webhooks={"development": black_hole, "production": production.url},
            webhook_retry={"base_s": 1, "cap_s": 300, "max_attempts": 12, "timeout_s": 10},
        )
        pile_up(stub, BACKLOG)
        time.sleep(0.5)  # the development lane is full of hung attempts by now
        latencies = []
        for _ in range(PRODUCTION_DELIVERIES):
            sent = time.monotonic()
            created = stub.api.create("cashin", headers={"X-Webhook-Mode": "production"})
            assert created.status_code < 300, created.text
            event_id = stub.api.events(ref=created.json()["ref"]).json()["transactions"][0][
                "event_id"
            ]
            deadline = sent + 5
            while event_id not in production.arrived and time.monotonic() < deadline:
                time.sleep(0.005)
            assert event_id in production.arrived, f"not delivered within 5 s: {event_id}"
            latencies.append(production.arrived[event_id] - sent)
        pending = stub.call(lambda: stub.stub.store.deliveries(status="pending", limit=1)[0])
        print(
            f"{PRODUCTION_DELIVERIES} production deliveries beside {pending} pending to a "
            f"never-answering endpoint: median {statistics.median(latencies) * 1000:.0f} ms, "
            f"max {max(latencies) * 1000:.0f} ms"
        )
        assert pending >= BACKLOG
        assert max(latencies) < 1.0, latencies
    finally:
        production.close()


def test_a_stop_that_comes_with_a_wake_up_still_stops_the_dispatcher(
    inproc: Callable[..., InProcessStub],
) -> None:
    """The stub's shutdown cancels the dispatcher; when a new delivery wakes it in the same
    instant, the cancellation must not be lost (Python 3.11's ``asyncio.wait_for`` lost it,
    and the shutdown then waited for ever)."""
    stub = inproc(background=False)
    store = stub.stub.store

    async def stop_during_wake_up() -> bool:
        dispatcher = Dispatcher(store, stub.stub.render, RetryPolicy(), DeliveryHooks())
        task = asyncio.create_task(dispatcher.run_forever())
        await asyncio.sleep(0.05)  # asleep, waiting for work
        assert store.on_enqueue is not None
        store.on_enqueue()  # a delivery was queued ...
        task.cancel()  # ... as the stub began to stop
        done, _ = await asyncio.wait({task}, timeout=2)
        if not done:
            task.cancel()
        return task in done

    assert stub.run(stop_during_wake_up()), "the dispatcher went on after it was cancelled"


def test_the_circuit_breaker_opens_doubles_and_closes() -> None:
    breaker = CircuitBreaker(base_s=1, cap_s=4)
    opened = [breaker.failed(now=0.0) for _ in range(BREAKER_FAILURES)]
    assert opened == [False] * (BREAKER_FAILURES - 1) + [True]
    assert breaker.is_open(0.5) and not breaker.is_open(1.0)
    assert breaker.failed(now=0.5) is False  # an attempt already under way adds nothing
    assert breaker.half_open(1.0)  # one trial delivery
    assert breaker.failed(now=1.0) and breaker.open_until == 3.0  # twice as long
    breaker.failed(now=3.0)
    assert breaker.open_until == 3.0 + 4  # capped
    breaker.succeeded()
    assert not breaker.is_open(3.5) and not breaker.half_open(3.5)


def db_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if p.is_file()
                    and not p.name.endswith(".webhook-secrets"))  # fmt: skip


def test_a_copy_of_the_database_holds_no_webhook_secret(tmp_path: Path) -> None:
    db = tmp_path / "stub.db"
    store = Store(str(db))
    secrets = []
    for mode in ("development", "production"):
        endpoint = WebhookEndpoint(mode, f"http://127.0.0.1:9/{mode}", f"whsec_{mode}_x" * 3)
        store.put_webhook_endpoint(endpoint, timefmt.now_us())
        secrets.append(endpoint.secret)
    assert [e.secret for e in store.webhook_endpoints()] == secrets  # the stub still signs
    store.close()
    copy = tmp_path / "copy" / "stub.db"
    copy.parent.mkdir()
    shutil.copy(db, copy)
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT DISTINCT secret FROM webhook_endpoints").fetchall() == [("",)]
    for secret in secrets:
        assert secret.encode() not in db_bytes(db)
    kept = secrets_path(str(db))
    assert kept is not None and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert all(secret in kept.read_text() for secret in secrets)
    print(f"database {db.stat().st_size} bytes, no secret in it; secrets in {kept.name} (0600)")
