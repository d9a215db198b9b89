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

from aiohttp import web


def parser_reason(message: str | None, exc: BaseException | None) -> str:
    """aiohttp's parser message without the bytes it echoes: ``Invalid header value char``."""
    text = (message or (str(exc) if exc is not None else "")).strip()
    line = text.splitlines()[0] if text else ""
    return line.split(": ", 1)[0].rstrip(":").strip()[:200] or "malformed HTTP request"


def is_too_long(reason: str, exc: BaseException | None) -> bool:
    return type(exc).__name__ == "LineTooLong" or reason.startswith("Got more than")


class JsonErrorRequestHandler(web.RequestHandler):
    """aiohttp's connection protocol, answering a request it cannot parse with
    ``{"code", "message"}`` (431 ``header_too_large`` for a header line over the limit);
    subclasses change the body through ``json_error``."""

    __slots__ = ()

    def json_error(
        self, request: web.BaseRequest, status: int, exc: BaseException | None, message: str | None
    ) -> web.Response | None:
        """The answer, or None to leave it to aiohttp (a server error is not the client's)."""
        if status >= 500:
            return None
        reason = parser_reason(message, exc)
        too_long = is_too_long(reason, exc)
        return web.json_response(
            {
                "code": "header_too_large" if too_long else "bad_request",
                "message": f"malformed HTTP request: {reason}",
            },
            status=431 if too_long else status,
        )

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
