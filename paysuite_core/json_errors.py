"""JSON answers for HTTP that aiohttp itself cannot parse.

A request aiohttp's parser rejects (a NUL byte in a header, a garbage request line, a header line
over its limit, a bad chunk size) never reaches the application or its middleware: aiohttp answers
it from ``RequestHandler.handle_error`` with a plain-text 400 and has no setting to change that
(aio-libs/aiohttp#3287). So after ``runner.setup()``, ``install`` re-classes the runner's
``web.Server`` into one whose connections are a ``JsonErrorRequestHandler`` subclass. Neither
class adds state (``__slots__ = ()``), so re-classing is plain Python; an aiohttp whose layout
differs makes Python refuse the assignment with ``TypeError`` and ``install`` returns False: the
server keeps aiohttp's plain-text answers, nothing else is lost.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from aiohttp import web


def parser_reason(message: str | None, exc: BaseException | None) -> str:
    """aiohttp's parser message without the bytes it echoes: ``Invalid header value char``."""
    text = (message or (str(exc) if exc is not None else "")).strip()
    line = text.splitlines()[0] if text else ""
    return line.split(": ", 1)[0].rstrip(":").strip()[:200] or "malformed HTTP request"


def is_too_long(reason: str, exc: BaseException | None) -> bool:
    return type(exc).__name__ == "LineTooLong" or reason.startswith("Got more than")


def one_line(exc: BaseException) -> str:
    """An exception as one short line: ``400, message: Can not decode content-encoding: gzip``."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


class JsonErrorRequestHandler(web.RequestHandler):
    """aiohttp's connection protocol, answering a request it cannot parse with
    ``{"code", "message"}`` (431 ``header_too_large`` for a header line over the limit);
    subclasses change the body through ``error_body`` (or the whole answer through
    ``json_error``) and the logger through ``log``."""

    __slots__ = ()
    log: ClassVar[logging.Logger] = logging.getLogger("paysuite")

    @classmethod
    def error_body(cls, status: int, code: str, message: str) -> dict[str, str]:
        return {"code": code, "message": message}

    def json_error(
        self, request: web.BaseRequest, status: int, exc: BaseException | None, message: str | None
    ) -> web.Response | None:
        """The answer, or None to leave it to aiohttp. A 500 here is an exception that escaped
        the application: a bug, logged with its traceback; the client still gets JSON."""
        if status >= 500:
            self.log.error("unhandled error from %s", request.remote, exc_info=exc)
            code, text = "internal_error", "internal error"
        else:
            reason = parser_reason(message, exc)
            if is_too_long(reason, exc):
                status, code = 431, "header_too_large"
            else:
                code = "bad_request"
            text = f"malformed HTTP request: {reason}"
        return web.json_response(self.error_body(status, code, text), status=status)

    def log_exception(self, message: str = "aiohttp error", *args: object, **kw: object) -> None:
        """aiohttp's protocol-level errors: one line, not a traceback, since they are the
        client's doing. A body that cannot be decoded (``Content-Encoding: gzip`` on plain
        bytes) was answered 400 already; aiohttp reads it again while the connection lingers and
        calls that "Unhandled": expected, so debug level."""
        exc = kw.get("exc_info")
        text = message % args
        if isinstance(exc, web.RequestPayloadError):
            self.log.debug("aiohttp: the rest of an undecodable body: %s", one_line(exc))
        elif isinstance(exc, BaseException):
            self.log.warning("aiohttp: %s: %s", text, one_line(exc))
        else:
            self.log.warning("aiohttp: %s", text)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        # Part of an answer already out: aiohttp raises ConnectionError and drops the connection.
        answer = (
            None
            if request.writer.output_size > 0
            else self.json_error(request, status, exc, message)
        )
        if answer is None:
            return super().handle_error(request, status, exc, message)
        answer.force_close()
        return answer


_SERVERS: dict[type[JsonErrorRequestHandler], type[web.Server]] = {}


def _server_class(handler: type[JsonErrorRequestHandler]) -> type[web.Server]:
    """One ``web.Server`` subclass per handler class, made once."""
    if handler in _SERVERS:
        return _SERVERS[handler]

    def make_handler(self: web.Server) -> web.RequestHandler:
        connection = web.Server.__call__(self)
        connection.__class__ = handler
        return connection

    server = type(f"{handler.__name__}Server", (web.Server,), {"__call__": make_handler})
    return _SERVERS.setdefault(handler, server)


def install(
    runner: web.BaseRunner, handler: type[JsonErrorRequestHandler] = JsonErrorRequestHandler
) -> bool:
    """Make the connections of a set-up ``runner`` answer unparseable HTTP through ``handler``;
    False when this aiohttp does not allow it."""
    server = runner.server
    if server is None:
        raise RuntimeError("call install() after runner.setup()")
    try:
        probe = web.RequestHandler.__new__(web.RequestHandler)
        probe.__class__ = handler  # the assignment each connection gets
        server.__class__ = _server_class(handler)
    except TypeError:
        return False
    return True
