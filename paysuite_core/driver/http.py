"""The suite's HTTP client: httpx, with every exchange recorded as evidence, and bounded.

Checks call the target only through ``RecordingClient`` (``concurrent_requests`` for races), so
each failure can show the requests that prove it. Transport errors are recorded too and re-raised
as ``TargetUnreachable``, which the plugin reports as an error of the check, not a failure.

Nothing a hostile target does can make the suite hang or grow: every request is bounded by
``paysuite_core.bounded_http`` (conform's limits unless the run says otherwise), and a check may
carry a time budget after which its next request stops it. An answer over the size cap is an
error of the check, raised from the ``ResponseTooLarge`` that cut it (``oversized``).

A rate-limited target is honoured: a ``429`` is waited for as the run's throttle decides
(``paysuite_core.throttle``: ``Retry-After``, the ``--max-throttle-wait`` budget) and the request
sent again; the check sees the answer after it. One the throttle no longer retries is an error
of the check (``ThrottledOut``), never a failure. The one check about a rate limit, AUTH-018
(reference profile, RC-38), sends through a ``sibling(throttled=False)`` to see the 429s.
"""

from __future__ import annotations

import codecs
import concurrent.futures
import json as jsonlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from paysuite_core import guarded_json
from paysuite_core.bounded_http import (
    CONFORM_LIMITS,
    BoundedClient,
    Limits,
    ResponseTooLarge,
    TotalTimeout,
    no_answer,
)
from paysuite_core.results.evidence import Evidence, Recorded
from paysuite_core.results.masking import Masker
from paysuite_core.results.outcome import CouldNotCheck
from paysuite_core.throttle import THROTTLED, Decision, Throttle, retry_after_of
from paysuite_core.tls import TLSSettings

USER_AGENT = "paysuite-conformance"


class TargetUnreachable(RuntimeError):
    """The target did not answer at all (connection refused, timeout)."""


class CheckBudgetExceeded(CouldNotCheck):
    """The check used its time budget; its next request was not sent."""


class ThrottledOut(CouldNotCheck):
    """The target kept answering 429 past the run's --max-throttle-wait: not judged."""


def oversized(exc: BaseException) -> bool:
    """The check could not judge its rule because an answer passed the size cap."""
    return isinstance(exc, CouldNotCheck) and isinstance(exc.__cause__, ResponseTooLarge)


def _throttled_out(decision: Decision, reply: Reply) -> CouldNotCheck:
    """Why a throttled request is not sent again, as the check's error (never a failure)."""
    what = f"{reply.exchange.method} {reply.exchange.url}"
    if decision.why.startswith("the target throttled past"):
        return ThrottledOut(f"{decision.why}: {what} answered 429", [reply.exchange])
    return CheckBudgetExceeded(
        f"the check used its time budget (--check-timeout) while the target throttled: {what} "
        f"answered 429 and asked for {decision.wait_s:.1f} s more",
        [reply.exchange],
    )


class Reply:
    """A response as a check sees it: status, headers, parsed JSON, and its exchange."""

    def __init__(
        self, status: int, headers: httpx.Headers, content: bytes, exchange: Recorded
    ) -> None:
        self.status = status
        self.headers = headers
        self.text = content.decode(_charset(headers), errors="replace")
        self.exchange = exchange
        #: Set by ``Target.create``: the creation answered a ref an earlier one had answered.
        self.ref_reused = False
        try:
            self.body: Any = guarded_json.loads(content) if content else None
            self.is_json = bool(content)
        except guarded_json.JsonRefused:
            self.body = None
            self.is_json = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def rejected(self) -> bool:
        return 400 <= self.status < 500

    @property
    def content_type(self) -> str:
        return str(self.headers.get("content-type", ""))

    def json(self) -> Any:
        """The parsed body (the token module's view of an answer); ValueError when not JSON."""
        if not self.is_json:
            raise ValueError("the body is not JSON")
        return self.body

    def get(self, key: str, default: object = None) -> Any:
        return self.body.get(key, default) if isinstance(self.body, dict) else default

    def __repr__(self) -> str:
        return f"<Reply {self.exchange.summary()}>"


def _charset(headers: httpx.Headers) -> str:
    for part in headers.get("content-type", "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            try:
                return codecs.lookup(value.strip('"')).name
            except LookupError:
                break
    return "utf-8"


def _prepare(
    method: str,
    headers: dict[str, str | bytes | None] | None,
    json: object,
    content: str | bytes | None,
    token: str | None,
) -> tuple[dict[str, str | bytes], str | bytes | None]:
    # "Send Accept: application/json and Content-Type: application/json on every call."
    merged: dict[str, str | bytes] = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
    }
    body: str | bytes | None = content
    if json is not None:
        body = jsonlib.dumps(json)
    if token is not None:
        merged["Authorization"] = f"Bearer {token}"
    for name, value in (headers or {}).items():
        # ``None`` removes a default header, so a check can send a request without it.
        matching = [key for key in merged if key.lower() == name.lower()]
        for key in matching:
            del merged[key]
        if value is not None:
            merged[name] = value
    return merged, body


def _wire(headers: dict[str, str | bytes]) -> httpx.Headers:
    """The headers as httpx sends them; a bytes value goes as it is (a check's non-text one)."""
    return httpx.Headers(
        [
            (name.encode("ascii"), value if isinstance(value, bytes) else value.encode("ascii"))
            for name, value in headers.items()
        ]
    )


def _shown(headers: dict[str, str | bytes]) -> dict[str, str]:
    """The headers as the evidence shows them: bytes that are not text as Latin-1."""
    return {
        name: value.decode("latin-1") if isinstance(value, bytes) else value
        for name, value in headers.items()
    }


class RecordingClient:
    """Synchronous client bound to the target's base URL, recording into ``sink()``."""

    def __init__(
        self,
        base_url: str,
        sink: Callable[[], Evidence | None],
        limits: Limits | None = None,
        throttle: Throttle | None = None,
        tls: TLSSettings | None = None,
        transport: httpx.BaseTransport | None = None,
        masker: Masker | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._sink = sink
        #: The run's secrets: what the target issues is learnt there, and curls name it.
        self.masker = masker if masker is not None else Masker()
        #: httpx's transport for every thread's connections (a test's ``MockTransport``).
        self._transport = transport
        self.limits = limits or CONFORM_LIMITS
        #: The run's throttle: a 429 is waited for and sent again (None: a 429 is an answer).
        self.throttle = throttle
        #: What to trust and present over HTTPS (None: the environment's CAs or the defaults).
        self.tls = tls
        # Per thread: checks that run at once (``--concurrency``) each send on connections of
        # their own (a ``BoundedClient`` sends one request at a time) under their own budget.
        self._local = threading.local()
        self._clients: list[BoundedClient] = []
        self._clients_lock = threading.Lock()
        #: The budget of a thread that set none (a sibling's, fixed when it is made).
        self._shared_deadline: float | None = None
        #: Set when the run is interrupted: no request of this client or its siblings is sent.
        self.stopped = threading.Event()
        self._connections()  # the creating thread's, at once: a bad TLS setting shows here

    def _connections(self) -> BoundedClient:
        """This thread's connections to the target."""
        client: BoundedClient | None = getattr(self._local, "client", None)
        if client is None:
            client = BoundedClient(self.limits, tls=self.tls, transport=self._transport)
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    @property
    def check_deadline(self) -> float | None:
        """monotonic time after which this thread's running check sends nothing more (None: no
        budget)."""
        deadline: float | None = getattr(self._local, "deadline", self._shared_deadline)
        return deadline

    @check_deadline.setter
    def check_deadline(self, value: float | None) -> None:
        self._local.deadline = value

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json: object = None,
        content: str | bytes | None = None,
        headers: dict[str, str | bytes | None] | None = None,
        params: dict[str, Any] | None = None,
        note: str | None = None,
        chunked: bool = False,
    ) -> Reply:
        """One exchange, sent again after each ``429`` as the run's throttle allows.

        Header values may be bytes, to send what is not text; ``chunked`` sends the body
        without a Content-Length, in ``Transfer-Encoding: chunked``.

        A 429 is the target's rate limit, never an answer to the rule a check judges: the
        check sees the answer that came after it. The throttled attempts leave the evidence
        (the final exchange's note says how many there were); when the throttle gives up, the
        check could not judge its rule (``ThrottledOut``, or ``CheckBudgetExceeded`` when its
        ``--check-timeout`` comes first), with the last 429 as proof.
        """
        attempt = 0
        waited = 0.0
        merged, body = _prepare(method, headers, json, content, token)
        while True:
            if self.throttle is not None:
                pause = self.throttle.pause_s(self.check_deadline)
                if pause > 0:
                    time.sleep(pause)
                    waited += pause
            reply = self._send_once(method, path, merged, body, params, note, chunked)
            if self.throttle is None or reply.status != THROTTLED:
                if attempt:
                    retried = (
                        f"sent {attempt + 1} times: the target answered 429 {attempt} time(s) "
                        f"before this (waited {waited:.1f} s)"
                    )
                    note = reply.exchange.note
                    reply.exchange.note = f"{note}; {retried}" if note else retried
                return reply
            decision = self.throttle.throttled(
                retry_after_of(reply.headers), attempt, deadline=self.check_deadline
            )
            if not decision.retry:
                raise _throttled_out(decision, reply)
            evidence = self._sink()
            if evidence is not None:  # the next attempt stands for this one
                evidence.exchanges[:] = [e for e in evidence.exchanges if e is not reply.exchange]
            time.sleep(decision.wait_s)
            waited += decision.wait_s
            attempt += 1

    def _send_once(
        self,
        method: str,
        path: str,
        merged: dict[str, str | bytes],
        body: str | bytes | None,
        params: dict[str, Any] | None,
        note: str | None,
        chunked: bool,
    ) -> Reply:
        """One attempt: ``merged`` headers and ``body`` as ``_prepare`` made them."""
        if self.stopped.is_set():
            raise CouldNotCheck("not judged: the run was interrupted")
        if self.check_deadline is not None and time.monotonic() > self.check_deadline:
            raise CheckBudgetExceeded(
                "the check used its time budget (--check-timeout) before it could judge its rule"
            )
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        sent: str | bytes | Iterator[bytes] | None = body
        if chunked and body is not None:
            # An iterator has no length: httpx sends it chunked.
            sent = iter([body.encode() if isinstance(body, str) else body])
        client = self._connections()
        request = client.build_request(
            method, url, headers=_wire(merged), content=sent, params=params
        )
        shown = _shown(merged)
        if chunked:
            shown["Transfer-Encoding"] = "chunked"
        exchange = Recorded.build(method, str(request.url), shown, body, note, self.masker)
        evidence = self._sink()
        if evidence is not None:
            evidence.add(exchange)
        what = f"{method} {url}"
        started = time.monotonic()
        wait_s = self.limits.total_s
        budget_binds = False
        if self.check_deadline is not None and self.check_deadline - started < wait_s:
            wait_s, budget_binds = max(self.check_deadline - started, 0.1), True
        try:
            answer = client.send(request, wait_s)
        except TotalTimeout as exc:
            if budget_binds:
                exchange.error = f"cut at the check's time budget after {wait_s:.1f} s"
                raise CheckBudgetExceeded(
                    f"the check used its time budget waiting for {what}", [exchange]
                ) from None
            exchange.error = str(exc)
            raise TargetUnreachable(f"{what}: {exchange.error}") from None
        except ResponseTooLarge as exc:
            exchange.error = str(exc)
            raise CouldNotCheck(f"{what}: {exc}", [exchange]) from exc
        except (httpx.HTTPError, TimeoutError) as exc:
            exchange.error = no_answer(exc)
            raise TargetUnreachable(f"{what}: {exchange.error}") from None
        reply = Reply(answer.status, answer.headers, answer.body, exchange)
        elapsed_ms = (time.monotonic() - started) * 1000
        exchange.record_response(answer.status, dict(answer.headers), reply.text, elapsed_ms)
        return reply

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Reply:
        return self.request("POST", path, **kwargs)

    def sibling(self, *, throttled: bool = True) -> RecordingClient:
        """A client with connections of its own, sending to the same target into the same
        evidence, under the same limits and check deadline: one per thread of a race, and
        (``throttled=False``) AUTH-018's, which must see every 429 the run's throttle hides.

        The evidence and the deadline are the calling thread's, fixed now: a racer's thread
        has no running check of its own."""
        evidence = self._sink()
        client = RecordingClient(
            self.base_url,
            lambda: evidence,
            self.limits,
            self.throttle if throttled else None,
            self.tls,
            self._transport,
            self.masker,
        )
        client._shared_deadline = self.check_deadline
        client.stopped = self.stopped
        return client

    def close(self) -> None:
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()


def concurrent_requests(client: RecordingClient, calls: list[dict[str, Any]]) -> list[Reply | None]:
    """Send ``calls`` (each the keyword arguments of ``RecordingClient.request``) at once.

    Used by the idempotency race: each call has a thread and a ``client.sibling()``, and all
    wait for one another before sending, so every request is in flight before any answer is
    read. A request that got no answer (a server that refuses so many connections at once) or
    an oversized one is ``None``, its exchange recording why: the race is judged on the answers
    and on what the target recorded, not on how many connections it accepts. One the throttle
    gives up on makes the race unjudged (``ThrottledOut``).
    """
    start = threading.Barrier(len(calls))
    # Made here, in the check's thread: each racer records into the check's evidence.
    racers = [client.sibling() for _ in calls]

    def attempt(racer: RecordingClient, call: dict[str, Any]) -> Reply | None:
        try:
            start.wait()
            return racer.request(**call)
        except TargetUnreachable:
            return None
        except CouldNotCheck as exc:
            if oversized(exc):
                return None
            raise
        finally:
            racer.close()

    with concurrent.futures.ThreadPoolExecutor(len(calls), "paysuite-race") as pool:
        futures = [
            pool.submit(attempt, racer, call) for racer, call in zip(racers, calls, strict=True)
        ]
    return [future.result() for future in futures]
