"""The suite's HTTP client: httpx, with every exchange recorded as evidence, and bounded.

Checks call the target only through ``RecordingClient`` (or its async twin for races), so each
failure can show the requests that prove it. Transport errors are recorded too and re-raised as
``TargetUnreachable``, which the plugin reports as an error of the check, not a failure.

Nothing a hostile target does can make the suite hang or grow: every request has a connect, a
read and a total deadline (``Limits``), the body is read in chunks and abandoned past
``max_body_bytes``, and a check may carry a time budget after which its next request stops it.

A rate-limited target is honoured: a ``429`` is waited for as the run's throttle decides
(``paysuite_core.throttle``: ``Retry-After``, the ``--max-throttle-wait`` budget) and the request
sent again; the check sees the answer after it. One the throttle no longer retries is an error
of the check (``ThrottledOut``), never a failure: no check is about rate limits.
"""

from __future__ import annotations

import concurrent.futures
import json as jsonlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from conformance.evidence import Evidence, Recorded
from conformance.outcome import CouldNotCheck
from paysuite_core.throttle import THROTTLED, Decision, Throttle, retry_after_of

DEFAULT_TIMEOUT_S = 30.0
USER_AGENT = "paysuite-conformance"


@dataclass(frozen=True)
class Limits:
    """How long and how much the suite waits for and reads of one answer."""

    connect_s: float = 10.0
    read_s: float = DEFAULT_TIMEOUT_S  # between two bytes
    total_s: float = 60.0  # the whole exchange, headers and body
    max_body_bytes: int = 1 << 20  # 1 MiB: no answer of this API comes near it

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.read_s, connect=self.connect_s)


class TargetUnreachable(RuntimeError):
    """The target did not answer at all (connection refused, timeout)."""


class ResponseTooLarge(CouldNotCheck):
    """The answer's body passed ``Limits.max_body_bytes``: it was abandoned unread."""


class CheckBudgetExceeded(CouldNotCheck):
    """The check used its time budget; its next request was not sent."""


class ThrottledOut(CouldNotCheck):
    """The target kept answering 429 past the run's --max-throttle-wait: not judged."""


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


def _joined(first: str | None, second: str) -> str:
    return f"{first}; {second}" if first else second


class BoundedBody:
    """An answer's body collected chunk by chunk, refused past ``max_bytes``: the one size rule
    of the synchronous client and of the concurrent race."""

    def __init__(self, headers: httpx.Headers, max_bytes: int, what: str) -> None:
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ResponseTooLarge(
                f"{what} declared a body of {int(declared)} bytes, over the "
                f"{max_bytes}-byte limit: not read"
            )
        self.data = bytearray()
        self.max_bytes = max_bytes
        self.what = what

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.max_bytes:
            raise ResponseTooLarge(
                f"{self.what} sent a body over the {self.max_bytes}-byte limit: read no further"
            )


def read_bounded(response: httpx.Response, limits: Limits, deadline: float, what: str) -> bytes:
    """The body of a streamed ``response``, read in chunks within ``limits`` and ``deadline``.

    An endless or huge body stops at the size limit, a trickle at the total deadline.
    """
    body = BoundedBody(response.headers, limits.max_body_bytes, what)
    for chunk in response.iter_bytes():
        body.add(chunk)
        if time.monotonic() > deadline:
            raise TargetUnreachable(f"{what}: no complete answer within {limits.total_s:g} s")
    return bytes(body.data)


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
            self.body: Any = jsonlib.loads(content) if content else None
            self.is_json = bool(content)
        except (ValueError, RecursionError):
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
        return self.headers.get("content-type", "")

    def json(self) -> Any:
        """The parsed body (the token module's view of an answer); ValueError when not JSON."""
        if not self.is_json:
            raise ValueError("the body is not JSON")
        return self.body

    def get(self, key: str, default: Any = None) -> Any:
        return self.body.get(key, default) if isinstance(self.body, dict) else default

    def __repr__(self) -> str:
        return f"<Reply {self.exchange.summary()}>"


def _charset(headers: httpx.Headers) -> str:
    import codecs

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
    json: Any,
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
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._sink = sink
        self.limits = limits or Limits()
        #: The run's throttle: a 429 is waited for and sent again (None: a 429 is an answer).
        self.throttle = throttle
        self._client = self._new_client()
        # One worker thread sends each request, so the total deadline holds even while the
        # target trickles its headers (httpx's own timeouts are per read).
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "paysuite-http")
        #: monotonic time after which the running check sends nothing more (None: no budget).
        self.check_deadline: float | None = None

    def _new_client(self) -> httpx.Client:
        return httpx.Client(timeout=self.limits.timeout(), follow_redirects=False)

    def url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return self.base_url + path

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json: Any = None,
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
        while True:
            if self.throttle is not None:
                pause = self.throttle.pause_s(self.check_deadline)
                if pause > 0:
                    time.sleep(pause)
                    waited += pause
            reply = self._send_once(
                method, path, token, json, content, headers, params, note, chunked
            )
            if self.throttle is None or reply.status != THROTTLED:
                if attempt:
                    reply.exchange.note = _joined(
                        reply.exchange.note,
                        f"sent {attempt + 1} times: the target answered 429 {attempt} time(s) "
                        f"before this (waited {waited:.1f} s)",
                    )
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
        token: str | None,
        json: Any,
        content: str | bytes | None,
        headers: dict[str, str | bytes | None] | None,
        params: dict[str, Any] | None,
        note: str | None,
        chunked: bool = False,
    ) -> Reply:
        if self.check_deadline is not None and time.monotonic() > self.check_deadline:
            raise CheckBudgetExceeded(
                "the check used its time budget (--check-timeout) before it could judge its rule"
            )
        url = self.url(path)
        merged, body = _prepare(method, headers, json, content, token)
        sent: str | bytes | Iterator[bytes] | None = body
        if chunked and body is not None:
            # An iterator has no length: httpx sends it chunked.
            sent = iter([body.encode() if isinstance(body, str) else body])
        request = self._client.build_request(
            method, url, headers=_wire(merged), content=sent, params=params
        )
        shown = _shown(merged)
        if chunked:
            shown["Transfer-Encoding"] = "chunked"
        exchange = Recorded.build(method, str(request.url), shown, body, note=note)
        evidence = self._sink()
        if evidence is not None:
            evidence.add(exchange)
        what = f"{method} {url}"
        started = time.monotonic()
        wait_s = self.limits.total_s
        budget_binds = False
        if self.check_deadline is not None and self.check_deadline - started < wait_s:
            wait_s, budget_binds = max(self.check_deadline - started, 0.1), True
        deadline = started + wait_s
        future = self._worker.submit(self._exchange, request, deadline, what)
        try:
            status, response_headers, data = future.result(timeout=wait_s + 1.0)
        except (concurrent.futures.TimeoutError, TargetUnreachable) as exc:
            if isinstance(exc, concurrent.futures.TimeoutError):
                # Closing the client breaks the worker's blocked read; fresh ones serve on.
                self._client.close()
                self._worker.shutdown(wait=False, cancel_futures=True)
                self._client = self._new_client()
                self._worker = concurrent.futures.ThreadPoolExecutor(1, "paysuite-http")
            if budget_binds:
                exchange.error = f"cut at the check's time budget after {wait_s:.1f} s"
                raise CheckBudgetExceeded(
                    f"the check used its time budget waiting for {what}", [exchange]
                ) from None
            exchange.error = f"no complete answer within {self.limits.total_s:g} s"
            raise TargetUnreachable(f"{what}: {exchange.error}") from None
        except ResponseTooLarge as exc:
            exchange.error = str(exc)
            exc.proof = [exchange]
            raise
        except httpx.HTTPError as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise TargetUnreachable(f"{what}: {exchange.error}") from None
        text = data.decode(_charset(response_headers), errors="replace")
        exchange.record_response(
            status, dict(response_headers), text, (time.monotonic() - started) * 1000
        )
        return Reply(status, response_headers, data, exchange)

    def _exchange(
        self, request: httpx.Request, deadline: float, what: str
    ) -> tuple[int, httpx.Headers, bytes]:
        response = self._client.send(request, stream=True)
        try:
            data = read_bounded(response, self.limits, deadline, what)
        finally:
            response.close()
        return response.status_code, response.headers, data

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Reply:
        return self.request("POST", path, **kwargs)

    def close(self) -> None:
        self._client.close()
        self._worker.shutdown(wait=False, cancel_futures=True)


async def async_requests(
    base_url: str,
    calls: list[dict[str, Any]],
    evidence: Evidence | None,
    limits: Limits | None = None,
    *,
    throttle: Throttle | None = None,
    deadline: float | None = None,
) -> list[Reply | None]:
    """Send ``calls`` (each the keyword arguments of ``RecordingClient.request``) concurrently.

    Used by the idempotency race: the requests are all in flight before any answer is read.
    Bounded like ``RecordingClient``: each answer within ``limits.total_s`` and its size limit.
    A request that got no answer (a server that refuses so many connections at once) is
    ``None``, its exchange recording why: the race is judged on the answers and on what the
    target recorded, not on how many connections it accepts. A ``429`` is sent again as
    ``throttle`` allows (each request sleeps with ``asyncio.sleep``; ``deadline``: the check's
    budget); when it gives up, the race could not be judged (``ThrottledOut``).
    """
    import asyncio

    bounds = limits or Limits()
    pool = httpx.Limits(max_connections=len(calls) + 1, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=bounds.timeout(), limits=pool) as client:
        prepared = []
        for call in calls:
            method = call["method"]
            url = call["path"]
            if not url.startswith(("http://", "https://")):
                url = base_url.rstrip("/") + url
            merged, body = _prepare(
                method, call.get("headers"), call.get("json"), None, call.get("token")
            )
            request = client.build_request(
                method, url, headers=_wire(merged), content=body, params=call.get("params")
            )
            exchange = Recorded.build(method, str(request.url), _shown(merged), body)
            if evidence is not None:
                evidence.add(exchange)
            prepared.append((request, exchange))

        async def read(request: httpx.Request, what: str) -> tuple[int, httpx.Headers, bytes]:
            async with client.stream(
                request.method, request.url, headers=request.headers, content=request.content
            ) as response:
                body = BoundedBody(response.headers, bounds.max_body_bytes, what)
                async for chunk in response.aiter_bytes():
                    body.add(chunk)
                return response.status_code, response.headers, bytes(body.data)

        async def send(request: httpx.Request, exchange: Recorded) -> Reply:
            started = time.monotonic()
            what = f"{request.method} {request.url}"
            try:
                status, headers, data = await asyncio.wait_for(
                    read(request, what), timeout=bounds.total_s
                )
            except TimeoutError:
                exchange.error = f"no complete answer within {bounds.total_s:g} s"
                raise TargetUnreachable(f"{what}: {exchange.error}") from None
            except httpx.HTTPError as exc:
                exchange.error = f"{type(exc).__name__}: {exc}"
                raise TargetUnreachable(f"{what}: {exchange.error}") from None
            exchange.record_response(
                status,
                dict(headers),
                data.decode(_charset(headers), errors="replace"),
                (time.monotonic() - started) * 1000,
            )
            return Reply(status, headers, data, exchange)

        async def honoured(request: httpx.Request, exchange: Recorded) -> Reply:
            """``send``, again after each 429 as the throttle allows (the race's own sleep)."""
            tries = 0
            while True:
                reply = await send(request, exchange)
                if throttle is None or reply.status != THROTTLED:
                    if tries:
                        reply.exchange.note = _joined(
                            reply.exchange.note, f"sent again after {tries} time(s) 429"
                        )
                    return reply
                decision = throttle.throttled(
                    retry_after_of(reply.headers), tries, deadline=deadline
                )
                if not decision.retry:
                    raise _throttled_out(decision, reply)
                await asyncio.sleep(decision.wait_s)
                tries += 1  # the same exchange records the answer to the next attempt

        async def attempt(request: httpx.Request, exchange: Recorded) -> Reply | None:
            try:
                return await honoured(request, exchange)
            except (TargetUnreachable, ResponseTooLarge):
                return None

        results = await asyncio.gather(
            *(attempt(r, e) for r, e in prepared), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [result for result in results if not isinstance(result, BaseException)]
