"""paysuite's webhook receiver: verifies, deduplicates and records every signed delivery.

A delivery is answered as the contract in ``paysuite_core.webhook_signature`` asks of any
receiver, so that a sender's retry logic is exercised as a real merchant would exercise it:

- 401 with ``{"code": "invalid_signature", "message": ...}`` when the signature is missing,
  wrong or stale (older than ``tolerance_s``): the message says which;
- 400 with ``{"code": "malformed_delivery", ...}`` when the body is not an event record or its
  event_id is not the ``Paysuite-Event-Id`` header's;
- 200 ``{"received": ID, "duplicate": false}`` for a verified delivery, and ``"duplicate":
  true`` for a verified repeat of an event_id already accepted (acknowledged, so the sender
  stops, and recorded once: deduplication by event_id);
- 503 ``{"code": "refused_on_purpose"}`` when a check asked the receiver to fail a delivery
  (``refuse``), to see the sender retry.

It runs in a thread of its own (``running``) so that synchronous callers (the conformance
checks, the ``listen`` command) drive it without an event loop; it binds loopback only.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from paysuite_core.webhook_ledger import Arrival, Ledger, journal_line, parse_event
from paysuite_core.webhook_signature import (
    ATTEMPT_HEADER,
    DEFAULT_TOLERANCE_S,
    EVENT_ID_HEADER,
    MODE_HEADER,
    SIGNATURE_HEADER,
    SignatureError,
    verify,
)

#: Hosts the receiver may bind: it serves the machine it runs on, nothing else.
LOOPBACK = ("127.0.0.1", "::1", "localhost")


#: How long a stop waits for deliveries still being answered (aiohttp's default is 60 s).
SHUTDOWN_S = 2.0


class ReceiverStartError(RuntimeError):
    """The receiver could not bind (port taken, not a loopback host)."""


@dataclass
class Refusal:
    """Answer 503 to the next ``times`` deliveries that ``matches`` (see ``refuse``)."""

    matches: Callable[[dict[str, Any]], bool]
    times: int = 1


@dataclass
class WebhookReceiver:
    """The receiving logic, independent of how it is served (``app()`` gives the aiohttp app)."""

    secret: str
    tolerance_s: float = DEFAULT_TOLERANCE_S
    ledger: Ledger = field(default_factory=Ledger)
    on_arrival: Callable[[Arrival], None] | None = None
    #: A file to append each arrival to as one JSON line (``Ledger.from_journal`` reads it):
    #: how another process (the load's Locust master) learns what arrived.
    journal: Path | None = None
    _refusals: list[Refusal] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refuse(self, matches: Callable[[dict[str, Any]], bool], times: int = 1) -> None:
        """Fail the next ``times`` verified deliveries whose event record ``matches``."""
        with self._lock:
            self._refusals.append(Refusal(matches, times))

    def _take_refusal(self, event: dict[str, Any]) -> bool:
        with self._lock:
            for refusal in self._refusals:
                if refusal.times > 0 and refusal.matches(event):
                    refusal.times -= 1
                    return True
        return False

    def receive(self, headers: Mapping[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """Judge one delivery, record it, and say what to answer (status, JSON body).

        ``headers``: case-insensitive, as HTTP's are (aiohttp's ``CIMultiDictProxy``)."""
        event = parse_event(body)
        header_id = headers.get(EVENT_ID_HEADER)
        base = {
            "event_id": header_id,
            "attempt": headers.get(ATTEMPT_HEADER),
            "mode": headers.get(MODE_HEADER),
            "event": event,
            "body": body,
        }
        try:
            verify(self.secret, headers.get(SIGNATURE_HEADER), body, tolerance_s=self.tolerance_s)
        except SignatureError as exc:
            return self._answer(base, 401, "rejected", "invalid_signature", str(exc))
        body_id = event.get("event_id") if event is not None else None
        if event is None or not isinstance(body_id, str):
            why = "the body is not an event record (a JSON object with a string event_id)"
            return self._answer(base, 400, "rejected", "malformed_delivery", why)
        if header_id != body_id:
            why = f"{EVENT_ID_HEADER} {header_id!r} is not the body's event_id {body_id!r}"
            return self._answer(base, 400, "rejected", "malformed_delivery", why)
        if self._take_refusal(event):
            why = "refused on purpose: the sender must retry"
            return self._answer(base, 503, "refused", "refused_on_purpose", why)
        duplicate = self.ledger.is_accepted(body_id)
        self._record(base, 200, "duplicate" if duplicate else "verified", "")
        return 200, {"received": body_id, "duplicate": duplicate}

    def _answer(
        self, base: dict[str, Any], status: int, verdict: str, code: str, message: str
    ) -> tuple[int, dict[str, Any]]:
        self._record(base, status, verdict, message, code)
        return status, {"code": code, "message": message}

    def _record(
        self, base: dict[str, Any], status: int, verdict: str, reason: str, code: str = ""
    ) -> None:
        arrival = self.ledger.record(
            status=status, verdict=verdict, reason=reason, code=code, **base
        )
        if self.journal is not None:
            with open(self.journal, "a", encoding="utf-8") as handle:
                handle.write(journal_line(arrival) + "\n")
        if self.on_arrival is not None:
            self.on_arrival(arrival)

    def app(self) -> web.Application:
        """Any path takes a POST: the endpoint URL a target is given may carry one."""

        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            status, answer = self.receive(request.headers, body)
            return web.json_response(answer, status=status)

        application = web.Application()
        application.router.add_post("/{tail:.*}", handle)
        return application


@dataclass
class RunningReceiver:
    """A receiver being served: where it listens and what it has seen."""

    receiver: WebhookReceiver
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def ledger(self) -> Ledger:
        return self.receiver.ledger


@contextmanager
def running(
    receiver: WebhookReceiver, host: str = "127.0.0.1", port: int = 0
) -> Iterator[RunningReceiver]:
    """Serve ``receiver`` on ``host:port`` (0: any free port) in a thread until the block ends."""
    if host not in LOOPBACK and not host.startswith("127."):
        raise ReceiverStartError(
            f"{host} is not a loopback address: the receiver binds loopback only"
        )
    loop = asyncio.new_event_loop()
    started = threading.Event()
    state: dict[str, Any] = {}

    async def start() -> web.AppRunner:
        runner = web.AppRunner(
            receiver.app(), access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_S
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        state["port"] = runner.addresses[0][1]  # the bound port, also when asked for 0
        return runner

    def serve() -> None:
        asyncio.set_event_loop(loop)
        try:
            state["runner"] = loop.run_until_complete(start())
        except OSError as exc:
            state["error"] = exc
            started.set()
            return
        started.set()
        loop.run_forever()
        loop.run_until_complete(state["runner"].cleanup())
        loop.close()  # here, in the loop's own thread, once it has stopped

    thread = threading.Thread(target=serve, name="paysuite-webhook-receiver", daemon=True)
    thread.start()
    started.wait(30)
    if "error" in state or "port" not in state:
        thread.join(5)
        if not loop.is_running():
            loop.close()
        raise ReceiverStartError(f"cannot listen on {host}:{port}: {state.get('error', 'timeout')}")
    try:
        yield RunningReceiver(receiver, host, int(state["port"]))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(SHUTDOWN_S + 5)
