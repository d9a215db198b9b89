"""paysuite's webhook receiver: verifies, deduplicates and records every signed delivery.

It answers as the contract in ``paysuite_core.webhooks.signature`` asks of any receiver (the table
"What the receiver answers" in docs/webhooks.md), so that a sender's retries are exercised as a
real merchant would exercise them. It runs in a thread of its own (``running``) so that
synchronous callers (the conformance checks, the ``listen`` command) drive it without an event
loop; it binds loopback only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiohttp import web

from paysuite_core import json_errors
from paysuite_core.http_clients import aiohttp_session
from paysuite_core.listening import BodyTooLarge, Listening, read_whole
from paysuite_core.tls import TLSSettings, explain
from paysuite_core.usage import UsageError
from paysuite_core.webhooks.ledger import (
    Arrival,
    Delivery,
    Event,
    HandlerAnswer,
    Ledger,
    Verdict,
    journal_line,
    parse_event,
)
from paysuite_core.webhooks.signature import (
    ATTEMPT_HEADER,
    DEFAULT_TOLERANCE_S,
    EVENT_ID_HEADER,
    LIVE_SIGNATURE_HEADER,
    MAX_SIGNATURE_CHARS,
    MODE_HEADER,
    SIGNATURE_HEADER,
    SignatureError,
    verify_any,
    verify_live,
)

#: Hosts the receiver may bind: it serves the machine it runs on, nothing else.
LOOPBACK = ("127.0.0.1", "::1", "localhost")

log = logging.getLogger("paysuite.webhooks")


#: How long a stop waits for deliveries still being answered (aiohttp's default is 60 s).
SHUTDOWN_S = 2.0
#: The largest delivery body taken (an event record is well under 2 KiB).
MAX_BODY_BYTES = 1024 * 1024
#: A body that has not arrived this long after its head is a slow client: 408, closed.
BODY_TIMEOUT_S = 10.0
#: A connection without a complete request head this long after it opened (or after its last
#: answer) is closed: idle keep-alive and slowloris alike (aiohttp's keepalive_timeout).
IDLE_TIMEOUT_S = 10.0
#: The longest header line aiohttp's parser takes; longer is a JSON 431 (``json_errors``).
MAX_FIELD_BYTES = 16 * 1024
#: How long the developer's handler may take to answer a forwarded delivery.
FORWARD_TIMEOUT_S = 10.0
#: Headers not forwarded: the hop's own (RFC 9110 section 7.6.1) and those the forwarding
#: connection sets itself.
HOP_HEADERS = frozenset(
    {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te",
     "trailer", "upgrade", "proxy-connection", "proxy-authorization", "expect"}
)  # fmt: skip
#: The handler's answer headers relayed with its body: what the body is and how it is coded
#: (the body passes as the handler sent it, not inflated).
RELAYED_HEADERS = ("Content-Type", "Content-Encoding")


class ReceiverStartError(UsageError, RuntimeError):
    """The receiver cannot listen where it was asked: a command stops there (exit status 2)."""


@dataclass
class Refusal:
    """How the next ``times`` verified deliveries that ``matches`` are answered instead of 200:
    ``status`` (a 5xx or 3xx is a failed attempt the sender must retry; another 2xx is an
    acknowledgement it must take), or with ``hold_s`` no answer at all for that long, so that
    the sender's time-out runs out first (then a late 200 to a sender still waiting)."""

    matches: Callable[[Event], bool]
    times: int = 1
    status: int = 503
    hold_s: float = 0.0


@dataclass
class Forwarder:
    """Where verified deliveries go on to (``--forward-to``), and which event kinds."""

    url: str
    events: frozenset[str] = frozenset()  # empty: every kind
    timeout_s: float = FORWARD_TIMEOUT_S
    #: what the connection to an https:// handler trusts and presents (``paysuite_core.tls``)
    tls: TLSSettings | None = None

    def wants(self, event: Event | None) -> bool:
        kind = (event or {}).get("event_kind")
        return not self.events or kind in self.events

    async def send(
        self, session: aiohttp.ClientSession, headers: Mapping[str, str], body: bytes
    ) -> tuple[HandlerAnswer, bytes, dict[str, str]]:
        """POST ``body`` unchanged with the delivery's headers; the handler's answer, its whole
        body and the headers that describe it (type, coding), or a 502/504 of the listener's own
        when there was no whole answer: a body cut short, endless (past ``MAX_BODY_BYTES``) or
        not whole within ``timeout_s`` is the handler failing, never relayed as a 200 in part
        (the sender would take a truncated acknowledgement for a complete one)."""
        sent = {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS}
        started = time.monotonic()
        answered = 0  # the handler's status, once its head has come
        try:
            async with asyncio.timeout(self.timeout_s):
                async with session.post(
                    self.url,
                    data=body,
                    headers=sent,
                    allow_redirects=False,
                    skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
                ) as response:
                    answered = response.status
                    content = await read_whole(response.content, MAX_BODY_BYTES)
                    elapsed = round((time.monotonic() - started) * 1000, 1)
                    described = {
                        name: response.headers[name]
                        for name in RELAYED_HEADERS
                        if name in response.headers
                    }
                    described.setdefault("Content-Type", "application/octet-stream")
                    return HandlerAnswer(response.status, elapsed), content, described
        except TimeoutError:
            status, code = 504, "handler_unreachable"
            why = f"no whole answer within {self.timeout_s:g} s"
        except BodyTooLarge:
            status, code = 502, "handler_answer_too_large"
            why = f"its {answered} went on past {MAX_BODY_BYTES} bytes"
        except aiohttp.ClientPayloadError as exc:
            status, code = 502, "handler_answer_incomplete"
            why = f"its {answered} was cut short: {_cause(exc)}"
        except (aiohttp.ClientError, OSError) as exc:
            status, code = 502, "handler_unreachable"
            why = explain(exc, self.url) or f"{type(exc).__name__}: {exc}"
        elapsed = round((time.monotonic() - started) * 1000, 1)
        body_out = json.dumps({"code": code, "message": why}).encode()
        return (
            HandlerAnswer(status, elapsed, why),
            body_out,
            {"Content-Type": "application/json"},
        )


def _cause(exc: BaseException) -> str:
    """aiohttp's payload error in a few words: ``Not enough data to satisfy content length
    header``, not the nested reprs."""
    inner: BaseException = exc
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__  # type: ignore[assignment]
    text = getattr(inner, "message", None) or str(inner) or type(inner).__name__
    return " ".join(str(text).split()).rstrip(".")[:200]


#: The ``signature`` of a delivery accepted on its ``Paysuite-Signature`` whose
#: ``X-Paypack-Signature`` does not verify: a receiver written for the live service refuses it.
LIVE_MISMATCH = "paysuite+live-mismatch"


def live_holds(secret: str | Sequence[str], headers: Mapping[str, str], body: bytes) -> bool:
    try:
        verify_live(secret, headers.get(LIVE_SIGNATURE_HEADER), body)
    except SignatureError:
        return False
    return True


def carried(headers: Mapping[str, str]) -> str:
    """The signature formats a delivery carries (``paysuite``, ``live``, ``paysuite+live``, or
    "" for none), whether they verify or not: which headers a sender sends is its choice of
    format, judged apart from whether they hold."""
    formats = [
        name
        for name, header in (("paysuite", SIGNATURE_HEADER), ("live", LIVE_SIGNATURE_HEADER))
        if headers.get(header)
    ]
    return "+".join(formats)


@dataclass
class Judgement:
    """What the receiver made of one delivery, before it is recorded (a forwarded delivery
    is recorded with the handler's answer)."""

    base: Delivery
    status: int
    verdict: Verdict
    code: str = ""
    message: str = ""
    answer: dict[str, str | bool] = field(default_factory=dict)
    #: How long the answer is held back (recorded at once, answered after): 0, none.
    hold_s: float = 0.0


async def _hold(request: web.Request, hold_s: float) -> None:
    """Wait ``hold_s``, or until the sender closed the connection (it timed out)."""
    deadline = time.monotonic() + hold_s
    while time.monotonic() < deadline:
        transport = request.transport
        if transport is None or transport.is_closing():
            return
        await asyncio.sleep(0.05)


@dataclass
class WebhookReceiver:
    """The receiving logic, independent of how it is served (``app()`` gives the aiohttp app).

    ``secret``: the endpoint's signing secret, or several (a rotation's old and new: a
    signature that verifies with any of them holds)."""

    secret: str | Sequence[str]
    tolerance_s: float = DEFAULT_TOLERANCE_S
    ledger: Ledger = field(default_factory=Ledger)
    on_arrival: Callable[[Arrival], None] | None = None
    #: A file to append each arrival to as one JSON line (``Ledger.from_journal`` reads it):
    #: how another process (the load's Locust master) learns what arrived.
    journal: Path | None = None
    forward: Forwarder | None = None
    #: When each ``HEAD`` came (``time.monotonic()``): a sender pings its endpoint URL when it
    #: is added or changed (docs/webhooks.md, *Registration*); not a delivery, so not in the
    #: ledger, but counted, so that a sender pinging an unchanged URL on a timer shows.
    pings: list[float] = field(default_factory=list)
    _refusals: list[Refusal] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refuse(
        self,
        matches: Callable[[Event], bool],
        times: int = 1,
        *,
        status: int = 503,
        hold_s: float = 0.0,
    ) -> None:
        """Answer the next ``times`` verified deliveries whose event record ``matches`` with
        ``status`` (503: fail them), or hold them unanswered ``hold_s``. Refusals given one
        after another for the same records are taken in turn: a script of answers."""
        with self._lock:
            self._refusals.append(Refusal(matches, times, status, hold_s))

    def _take_refusal(self, event: Event) -> Refusal | None:
        with self._lock:
            for refusal in self._refusals:
                if refusal.times > 0 and refusal.matches(event):
                    refusal.times -= 1
                    return refusal
        return None

    def judge(self, headers: Mapping[str, str], body: bytes) -> Judgement:
        """``headers``: case-insensitive, as HTTP's are (aiohttp's ``CIMultiDictProxy``)."""
        event = parse_event(body)
        header_id = headers.get(EVENT_ID_HEADER)
        body_id = event.get("event_id") if event is not None else None
        base: Delivery = {
            "event_id": header_id or (body_id if isinstance(body_id, str) else None),
            "attempt": headers.get(ATTEMPT_HEADER),
            "mode": headers.get(MODE_HEADER),
            "event": event,
            "body": body,
        }
        for name in (SIGNATURE_HEADER, LIVE_SIGNATURE_HEADER):
            if len(headers.get(name) or "") > MAX_SIGNATURE_CHARS:
                why = f"{name} is over {MAX_SIGNATURE_CHARS} characters"
                return self._refusal(base, 431, "rejected", "signature_too_long", why)
        base["signature"] = carried(headers)
        try:
            verify_any(self.secret, headers, body, tolerance_s=self.tolerance_s)
            if base["signature"] == "paysuite+live" and not live_holds(self.secret, headers, body):
                base["signature"] = LIVE_MISMATCH  # accepted on the timestamped one: reported
        except SignatureError as exc:
            return self._refusal(base, 401, "rejected", "invalid_signature", str(exc))
        if event is None or not isinstance(body_id, str):
            why = "the body is not an event record (a JSON object with a string event_id)"
            return self._refusal(base, 400, "rejected", "malformed_delivery", why)
        if header_id is not None and header_id != body_id:
            why = f"{EVENT_ID_HEADER} {header_id!r} is not the body's event_id {body_id!r}"
            return self._refusal(base, 400, "rejected", "malformed_delivery", why)
        refusal = self._take_refusal(event)
        if refusal is not None and refusal.hold_s > 0:
            why = f"held unanswered up to {refusal.hold_s:g} s: the sender must time out and retry"
            held = self._refusal(base, 200, "refused", "held_unanswered", why)
            held.hold_s = refusal.hold_s
            held.answer = {"received": body_id, "duplicate": False}  # late: if still wanted
            return held
        if refusal is not None and not 200 <= refusal.status < 300:
            why = f"refused on purpose with {refusal.status}: the sender must retry"
            return self._refusal(base, refusal.status, "refused", "refused_on_purpose", why)
        duplicate = self.ledger.is_accepted(body_id)
        return Judgement(
            base,
            refusal.status if refusal is not None else 200,  # another 2xx: acknowledged
            "duplicate" if duplicate else "verified",
            answer={"received": body_id, "duplicate": duplicate},
        )

    @staticmethod
    def _refusal(
        base: Delivery, status: int, verdict: Verdict, code: str, message: str
    ) -> Judgement:
        return Judgement(base, status, verdict, code, message, {"code": code, "message": message})

    def settle(self, judgement: Judgement) -> tuple[int, dict[str, str | bool]]:
        """Record a judgement; the status and JSON body to answer."""
        arrival = self.ledger.record(
            status=judgement.status,
            verdict=judgement.verdict,
            reason=judgement.message,
            code=judgement.code,
            **judgement.base,
        )
        if self.journal is not None:
            with open(self.journal, "a", encoding="utf-8") as handle:
                handle.write(journal_line(arrival) + "\n")
        if self.on_arrival is not None:
            self.on_arrival(arrival)
        return judgement.status, judgement.answer

    def listening(self) -> Listening:
        """The listening side's bounds (``paysuite_core.listening``), read when the receiver
        starts: the module's constants, so that a test can shorten them."""
        return Listening(
            answer=_error,
            max_body_bytes=MAX_BODY_BYTES,
            body_timeout_s=BODY_TIMEOUT_S,
            idle_timeout_s=IDLE_TIMEOUT_S,
            too_large_code="delivery_too_large",
            log=log,
        )

    def app(self) -> web.Application:
        """A POST is taken on every path: the URL a target is given may carry one. Every other
        answer (a body too large, too slow or undecodable, another method) is a JSON error."""
        listening = self.listening()

        async def handle(request: web.Request) -> web.Response:
            body = await listening.read_body(request)  # Refused: the middleware's JSON error
            judgement = self.judge(request.headers, body)
            forward = self.forward
            if (
                forward is None
                or judgement.status != 200
                or judgement.hold_s > 0
                or not forward.wants(judgement.base["event"])
            ):
                status, answer = self.settle(judgement)
                if judgement.hold_s > 0:
                    await _hold(request, judgement.hold_s)
                return web.json_response(answer, status=status)
            handler, content, described = await forward.send(
                request.app[SESSION], request.headers, body
            )
            judgement.base["handler"] = handler
            judgement.status = handler.status  # what the sender was answered
            self.settle(judgement)
            return web.Response(status=handler.status, body=content, headers=described)

        async def ping(request: web.Request) -> web.Response:
            self.pings.append(time.monotonic())
            return web.Response(status=200)  # the dashboard's HEAD: no signature asked

        async def session_ctx(app: web.Application) -> AsyncIterator[None]:
            tls = self.forward.tls if self.forward is not None else None
            async with aiohttp_session(tls, auto_decompress=False) as session:
                app[SESSION] = session
                yield

        application = web.Application(
            client_max_size=MAX_BODY_BYTES + 1, middlewares=[listening.middleware()]
        )
        application.cleanup_ctx.append(session_ctx)
        application.router.add_route("HEAD", "/{tail:.*}", ping)
        application.router.add_post("/{tail:.*}", handle, expect_handler=listening.expect_continue)
        return application


SESSION: web.AppKey[aiohttp.ClientSession] = web.AppKey("forward_session", aiohttp.ClientSession)


def _error(status: int, code: str, message: str) -> web.Response:
    """The receiver's JSON error shape, the one ``json_errors`` gives unparseable requests."""
    return web.json_response({"code": code, "message": message}, status=status)


@dataclass
class RunningReceiver:
    """A receiver being served: where it listens and what it has seen."""

    receiver: WebhookReceiver
    host: str
    port: int
    #: When it began to listen (``time.monotonic()``): the window its ``pings`` cover.
    started: float = field(default_factory=time.monotonic)

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
    bound: Future[int] = Future()  # the port, or why the receiver could not listen

    async def start() -> web.AppRunner:
        runner = web.AppRunner(
            receiver.app(),
            access_log=None,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_S,
            max_field_size=MAX_FIELD_BYTES,
            **receiver.listening().runner_options(),
        )
        await runner.setup()
        json_errors.install(runner)  # else aiohttp's plain-text 400s, nothing else lost
        site = web.TCPSite(runner, host, port)
        await site.start()
        return runner

    def serve() -> None:
        asyncio.set_event_loop(loop)
        try:
            runner = loop.run_until_complete(start())
        except OSError as exc:
            bound.set_exception(exc)
            return
        bound.set_result(runner.addresses[0][1])  # the bound port, also when asked for 0
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()  # here, in the loop's own thread, once it has stopped

    thread = threading.Thread(target=serve, name="paysuite-webhook-receiver", daemon=True)
    thread.start()
    try:
        bound_port = bound.result(30)
    except (OSError, TimeoutError) as exc:
        thread.join(5)
        if not loop.is_running():
            loop.close()
        raise ReceiverStartError(
            f"cannot listen on {host}:{port}: {str(exc) or 'timeout'}"
        ) from None
    try:
        yield RunningReceiver(receiver, host, bound_port)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(SHUTDOWN_S + 5)
