"""JSON errors for HTTP that aiohttp itself cannot parse, logged as one line.

Why this module exists: a request aiohttp's parser rejects (a NUL byte in a header, a garbage
request line, a line over 8190 bytes, a bad chunk size, ``Content-Length: abc``) never reaches
the application or its middleware. aiohttp answers it from ``RequestHandler.handle_error`` with a
plain-text 400 and logs a traceback through ``RequestHandler.log_exception``; aiohttp has no
setting for either (aio-libs/aiohttp#3287 is still open).

The fix stays on public names: ``web.RequestHandler`` and ``web.Server`` are exported by
``aiohttp.web``, and ``handle_error``/``log_exception``/``Server.__call__`` are their public
methods. After ``runner.setup()``, ``install`` turns the runner's ``web.Server`` (the protocol
factory that ``TCPSite`` hands to ``loop.create_server``) into a subclass whose connections are
``JsonErrorRequestHandler``. Both subclasses add no state (``__slots__ = ()``), so re-classing an
instance is plain Python; if a future aiohttp ever made the layouts incompatible, Python refuses
the assignment with ``TypeError`` and the stub keeps aiohttp's default behaviour (logged once)
instead of failing. ``tests/stub/test_stub_protocol.py`` pins the behaviour with raw sockets.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from aiohttp import web

from stub_server.errors import error_response

log = logging.getLogger("stub_server")

_CODES = {400: "bad_request", 413: "payload_too_large", 500: "internal_error"}


def _first_line(message: str | None, exc: BaseException | None) -> str:
    """aiohttp's parser message without the echoed bytes: ``Invalid header value char``."""
    text = (message or (str(exc) if exc is not None else "")).strip()
    line = text.splitlines()[0] if text else ""
    return line.split(": ", 1)[0].rstrip(":").strip()[:200] or "malformed HTTP request"


def _one_line(exc: BaseException) -> str:
    """An exception as one short line: ``400, message: Can not decode content-encoding: gzip``."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


class JsonErrorRequestHandler(web.RequestHandler):
    """aiohttp's connection protocol, answering its own errors as the catalogue's JSON body."""

    __slots__ = ()
    go_body: ClassVar[bool] = False

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:
            # Part of a response is already out: aiohttp raises ConnectionError and drops it.
            return super().handle_error(request, status, exc, message)
        if status >= 500:
            # Not the client's doing: an exception escaped the error middleware. A bug, so it
            # keeps its traceback; the client still gets the catalogue's JSON body.
            log.error("unhandled error from %s", request.remote, exc_info=exc)
            reason = "internal error"
        else:
            reason = f"malformed HTTP request: {_first_line(message, exc)}"
            log.warning("rejected unparseable HTTP from %s: %s %s", request.remote, status, reason)
        code = _CODES.get(status, "internal_error" if status >= 500 else "bad_request")
        response = error_response(status, code, reason, go_body=self.go_body)
        response.force_close()
        return response

    def log_exception(self, *args: Any, **kw: Any) -> None:
        """aiohttp's protocol-level errors (a body that cannot be decoded, read again while the
        connection lingers): one line, not a traceback, since they are the client's doing."""
        exc = kw.get("exc_info")
        text = args[0] % args[1:] if args else "aiohttp error"
        if isinstance(exc, BaseException):
            log.warning("aiohttp: %s: %s", text, _one_line(exc))
        else:
            log.warning("aiohttp: %s", text)


class GoBodyRequestHandler(JsonErrorRequestHandler):
    """The same, with the ``go-error-body`` variant's ``{"status", "message"}`` body."""

    __slots__ = ()
    go_body: ClassVar[bool] = True


class JsonErrorServer(web.Server):
    """A ``web.Server`` whose connections use ``handler_class``."""

    handler_class: ClassVar[type[JsonErrorRequestHandler]] = JsonErrorRequestHandler

    def __call__(self) -> web.RequestHandler:
        handler = super().__call__()
        handler.__class__ = self.handler_class
        return handler


class GoBodyServer(JsonErrorServer):
    handler_class: ClassVar[type[JsonErrorRequestHandler]] = GoBodyRequestHandler


def install(runner: web.BaseRunner, *, go_body: bool = False) -> bool:
    """Make the connections of a set-up ``runner`` answer unparseable HTTP with JSON.

    Returns False (and logs why) when this aiohttp does not allow it; the stub then serves with
    aiohttp's plain-text 400s, which is the only thing lost.
    """
    server = runner.server
    if server is None:
        raise RuntimeError("call install() after runner.setup()")
    try:
        probe = web.RequestHandler.__new__(web.RequestHandler)
        probe.__class__ = JsonErrorRequestHandler  # the same assignment __call__ makes
        server.__class__ = GoBodyServer if go_body else JsonErrorServer
    except TypeError as exc:
        log.warning("JSON errors for unparseable HTTP are unavailable with this aiohttp: %s", exc)
        return False
    return True
