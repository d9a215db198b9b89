"""The stub's answers to HTTP that aiohttp itself cannot parse (``paysuite_core.json_errors`` says
why that needs a handler of its own): the catalogue's JSON body, and one log line for it.
``tests/stub/test_stub_protocol.py`` pins the behaviour with raw sockets.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from aiohttp import web

from paysuite_core import json_errors
from stub_server.errors import error_response

log = logging.getLogger("stub_server")

_CODES = {400: "bad_request", 413: "payload_too_large", 500: "internal_error"}


class JsonErrorRequestHandler(json_errors.JsonErrorRequestHandler):
    """aiohttp's connection protocol, answering its own errors as the catalogue's JSON body."""

    __slots__ = ()
    go_body: ClassVar[bool] = False
    log: ClassVar[logging.Logger] = logging.getLogger("stub_server")

    def json_error(
        self, request: web.BaseRequest, status: int, exc: BaseException | None, message: str | None
    ) -> web.Response:
        if status >= 500:
            # Not the client's doing: an exception escaped the error middleware. A bug, so it
            # keeps its traceback; the client still gets the catalogue's JSON body.
            log.error("unhandled error from %s", request.remote, exc_info=exc)
            reason = "internal error"
        else:
            reason = f"malformed HTTP request: {json_errors.parser_reason(message, exc)}"
            log.warning("rejected unparseable HTTP from %s: %s %s", request.remote, status, reason)
        code = _CODES.get(status, "internal_error" if status >= 500 else "bad_request")
        return error_response(status, code, reason, go_body=self.go_body)


class GoBodyRequestHandler(JsonErrorRequestHandler):
    """The same, with the ``go-error-body`` variant's ``{"status", "message"}`` body."""

    __slots__ = ()
    go_body: ClassVar[bool] = True


def install(runner: web.BaseRunner, *, go_body: bool = False) -> None:
    """Make the connections of a set-up ``runner`` answer unparseable HTTP with JSON; logged
    when this aiohttp does not allow it: the stub keeps aiohttp's plain-text 400s."""
    handler = GoBodyRequestHandler if go_body else JsonErrorRequestHandler
    if not json_errors.install(runner, handler):
        log.warning("JSON errors for unparseable HTTP are unavailable with this aiohttp")
