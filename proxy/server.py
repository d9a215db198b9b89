"""The forwarding server: every request passes to the target unchanged, every answer comes back
unchanged, and each exchange is handed to whoever judges it.

"Unchanged" is what makes the verdict about the client's real traffic; only the hop-by-hop headers
stop here and the framing is recomputed (docs/proxy.md, "Forwarding"): a coded request body passes
coded, as the target's answers do. A body too large is a 413 (from its Content-Length, before it
is read), one that does not come in time a 408 and an upstream failure a 502, all JSON, and the
exchange is still recorded (``status`` 0 and ``error``) so the report shows it. The listening side
is bounded as every paysuite server's is (``paysuite_core.listening``): idle and slow connections
are closed, and whatever aiohttp itself answers (a request it cannot parse, a header over its
limit) is the proxy's JSON error too.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from paysuite_core import json_errors
from paysuite_core.exchange import Exchange, Headers
from paysuite_core.http_clients import aiohttp_session
from paysuite_core.listening import (
    BODY_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    BodyTooLarge,
    Listening,
    Refused,
    read_whole,
)
from paysuite_core.tls import TLSSettings, explain
from proxy.routes import forwarded_url

log = logging.getLogger("paysuite.proxy")

#: RFC 9110 section 7.6.1: meaningful for one connection only, never forwarded.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade"}
)
#: Recomputed by the framework for the body actually sent (same bytes, so the same length).
FRAMING = frozenset({"content-length"})
#: Headers aiohttp's client would add on its own: the proxy sends only what the client sent.
NO_AUTO_HEADERS = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
#: Headers aiohttp's server adds to an answer that lacks them: removed again when the target
#: did not send them (``on_response_prepare``), so the client sees the target's answer.
SERVER_DEFAULTS = ("Content-Type", "Date", "Server")
#: Where a forwarded answer's request keeps the header names the target sent.
TARGET_HEADERS = web.RequestKey("paysuite_proxy.target_headers", set[str])


@dataclass(frozen=True)
class ProxySettings:
    """Where to forward and the bounds of one exchange."""

    target: str  # scheme://host:port[/prefix]; the client's path is appended to it verbatim
    max_body_bytes: int = 1 << 20
    upstream_timeout_s: float = 30.0
    max_answer_bytes: int = 16 << 20  # no answer of this API comes near it
    #: a request body not whole this long after its head: 408 (the stub's own bound)
    body_timeout_s: float = BODY_TIMEOUT_S
    #: a connection without a complete request head this long: closed
    idle_timeout_s: float = IDLE_TIMEOUT_S
    #: what the upstream connection trusts and presents over HTTPS (``paysuite_core.tls``;
    #: default: the environment's or the default CAs, verified)
    tls: TLSSettings | None = None


class AnswerTooLarge(Exception):
    """The target's answer passed ``max_answer_bytes``: abandoned, the client gets a 502."""


def end_to_end(headers: Headers) -> list[tuple[str, str]]:
    """``headers`` without the hop-by-hop ones, the ones ``Connection`` names included."""
    named = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    dropped = HOP_BY_HOP | FRAMING | named
    return [(name, value) for name, value in headers if name.lower() not in dropped]


async def _as_the_target_sent(request: web.Request, response: web.StreamResponse) -> None:
    """Drop the defaults aiohttp added to a forwarded answer that the target did not send."""
    sent = request.get(TARGET_HEADERS)
    if sent is None:
        return  # the proxy's own answer (413, 502)
    for name in SERVER_DEFAULTS:
        if name.lower() not in sent:
            response.headers.popall(name, None)


def _error(status: int, code: str, message: str) -> web.Response:
    """The proxy's JSON error: ``{"status", "code", "message"}``."""
    body = json.dumps({"status": status, "code": code, "message": message}).encode()
    return web.Response(status=status, body=body, content_type="application/json")


class ProxyRequestHandler(json_errors.JsonErrorRequestHandler):
    """The proxy's connections: a request aiohttp cannot parse gets the proxy's JSON error."""

    __slots__ = ()
    log: ClassVar[logging.Logger] = log

    @classmethod
    def error_body(cls, status: int, code: str, message: str) -> dict[str, Any]:
        return {"status": status, "code": code, "message": message}


class ForwardingProxy:
    """An aiohttp application that forwards to ``settings.target`` and reports each exchange.

    ``on_exchange`` is called once per exchange, after the answer was sent to the client, so
    judging never delays the client.
    """

    def __init__(self, settings: ProxySettings, on_exchange: Callable[[Exchange], None]) -> None:
        self.settings = settings
        self.on_exchange = on_exchange
        self._target = settings.target.rstrip("/")
        self._session: aiohttp.ClientSession | None = None
        self._seq = 0
        self.listening = Listening(
            answer=_error,
            max_body_bytes=settings.max_body_bytes,
            body_timeout_s=settings.body_timeout_s,
            idle_timeout_s=settings.idle_timeout_s,
            too_large_code="proxy_body_too_large",
            log=log,
        )

    def app(self) -> web.Application:
        app = web.Application(
            client_max_size=self.settings.max_body_bytes,
            middlewares=[self.listening.middleware()],
        )
        app.router.add_route(
            "*", "/{tail:.*}", self.handle, expect_handler=self.listening.expect_continue
        )
        app.on_response_prepare.append(_as_the_target_sent)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def runner(self, **options: Any) -> web.AppRunner:
        """The proxy set up to serve (add a ``web.TCPSite``; ``cleanup()`` when done): request
        bodies not inflated (they pass as sent), the listening side's time-outs, and JSON for
        what aiohttp answers itself. ``options`` go to ``web.AppRunner``."""
        runner = web.AppRunner(
            self.app(), auto_decompress=False, **self.listening.runner_options(), **options
        )
        await runner.setup()
        if not json_errors.install(runner, ProxyRequestHandler):
            log.warning("JSON errors for unparseable HTTP are unavailable with this aiohttp")
        return runner

    async def _open(self, _app: web.Application) -> None:
        self._session = aiohttp_session(
            self.settings.tls,
            limit=100,
            ttl_dns_cache=300,
            auto_decompress=False,
            skip_auto_headers=NO_AUTO_HEADERS,
            timeout=aiohttp.ClientTimeout(total=self.settings.upstream_timeout_s),
        )

    async def _close(self, _app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self._seq += 1
        url = forwarded_url(self._target, request.raw_path)
        request_headers: Headers = tuple(
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in request.raw_headers
        )
        report = functools.partial(
            self._report,
            Exchange(request.method, url, request_headers, seq=self._seq, started=time.time()),
            time.perf_counter(),
        )
        try:
            body = await self.listening.read_body(request)
        except Refused as refused:  # too large, too slow, cut: recorded, then answered
            report(error=refused.message)
            return self.listening.refusal(refused)
        outgoing = CIMultiDict(
            (name, value) for name, value in end_to_end(request_headers) if name.lower() != "host"
        )
        assert self._session is not None
        try:
            async with self._session.request(
                request.method,
                url,
                headers=outgoing,
                data=body if body else None,
                allow_redirects=False,
            ) as upstream:
                answer = await self._read_bounded(upstream)
                status, reason = upstream.status, upstream.reason
                response_headers: Headers = tuple(
                    (name.decode("latin-1"), value.decode("latin-1"))
                    for name, value in upstream.raw_headers
                )
        except (AnswerTooLarge, aiohttp.ClientError, TimeoutError, OSError) as exc:
            code, message = "proxy_answer_too_large", str(exc)
            if not isinstance(exc, AnswerTooLarge):
                # a refused certificate is said as every command says it: host, cause, option
                code, message = (
                    "proxy_upstream_unreachable",
                    explain(exc, url)
                    or (f"the target did not answer: {type(exc).__name__}: {exc}".rstrip(": ")),
                )
            report(request_body=body, error=message)
            return _error(502, code, message)
        headers = CIMultiDict(end_to_end(response_headers))
        response = web.Response(status=status, reason=reason, body=answer, headers=headers)
        request[TARGET_HEADERS] = {name.lower() for name, _ in response_headers}
        await response.prepare(request)
        await response.write_eof()
        report(
            request_body=body,
            status=status,
            response_headers=response_headers,
            response_body=answer,
        )
        return response

    async def _read_bounded(self, upstream: aiohttp.ClientResponse) -> bytes:
        """The target's whole answer (a cut one raises aiohttp's payload error: a 502)."""
        limit = self.settings.max_answer_bytes
        too_large = f"the target's answer is larger than the proxy's limit of {limit} bytes"
        if upstream.content_length is not None and upstream.content_length > limit:
            raise AnswerTooLarge(too_large)
        try:
            return await read_whole(upstream.content, limit)
        except BodyTooLarge:
            raise AnswerTooLarge(too_large) from None

    def _report(self, sent: Exchange, clock: float, **answered: Any) -> None:
        """Hand on the exchange begun as ``sent`` (at ``perf_counter`` time ``clock``), with
        what came of it (``Exchange`` fields: the body read, the answer, or the ``error``)."""
        elapsed_ms = round((time.perf_counter() - clock) * 1000, 3)
        self.on_exchange(dataclasses.replace(sent, elapsed_ms=elapsed_ms, **answered))
