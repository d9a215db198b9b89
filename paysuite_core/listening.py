"""The listening side paysuite's servers share (the webhook receiver and the proxy take all of it;
the stub, which has its own error catalogue and body rules, takes ``expect_continue``): bounded in
time and size, every refusal in the server's own JSON error shape.

A server faces whatever connects to it, so nothing a client does may hold it open or grow it:

- time: a connection without a complete request head ``idle_timeout_s`` after it opened (or after
  its last answer) is closed, idle keep-alive and slowloris heads alike (aiohttp's
  ``keepalive_timeout``); a body not whole ``body_timeout_s`` after its head is answered 408 and
  the connection closed (after ``linger_s`` of reading what still comes and dropping it).
- size: a ``Content-Length`` over the limit is answered 413 from the head, before a byte of the
  body is read, and an ``Expect: 100-continue`` then gets no ``100 Continue`` (the client is not
  invited to send what will be refused); a body without a length (chunked) is read up to the limit
  and refused past it.
- shape: aiohttp's own answers (404, 405, a body it cannot decode) and an unexpected exception come
  back as the server's JSON error (``middleware``); a request aiohttp cannot parse at all never
  reaches it and is answered by ``json_errors``.

``read_whole`` is also how a relay reads the answer it passes on (the proxy's upstream, the
receiver's ``--forward-to`` handler): whole, or an exception, never what happened to be buffered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import HttpVersion11, web
from aiohttp.typedefs import Middleware

#: A server's JSON error: (status, machine-readable code, message) to its answer.
ErrorAnswer = Callable[[int, str, str], web.StreamResponse]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: No complete request head this long after the connection opened or answered: closed.
IDLE_TIMEOUT_S = 10.0
#: A body not whole this long after its head: 408, closed.
BODY_TIMEOUT_S = 10.0
#: After an answer, how long the rest of a body still coming (one refused, or not needed) is
#: read and dropped before the connection closes; aiohttp's default is 10 s. Closing at once
#: would reset a connection whose client is still sending, and it might lose the answer.
LINGER_S = 2.0
#: How much of a body is taken from the stream at a time.
READ_CHUNK = 1 << 16

#: Codes of aiohttp's own answers (``web.HTTPException``) as the JSON error names them.
CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "payload_too_large",
    415: "unsupported_media_type",
    417: "expectation_failed",
    431: "header_too_large",
}


class BodyTooLarge(Exception):
    """A body passed its limit while it was read: abandoned, the rest unread."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the body exceeds {limit} bytes")
        self.limit = limit


async def read_whole(stream: aiohttp.StreamReader, limit: int) -> bytes:
    """Everything ``stream`` carries up to its end; ``BodyTooLarge`` past ``limit`` bytes (after
    decoding, as aiohttp inflates chunk by chunk). A stream cut before its end raises aiohttp's
    payload error (``ClientPayloadError`` on a client's answer, ``RequestPayloadError`` or
    ``ConnectionError`` on a request): whole or failed. The caller bounds the time."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await stream.read(READ_CHUNK)
        if not chunk:
            break  # read() returns b"" only at the end; a cut raises instead
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def expect_continue(request: web.Request, max_body_bytes: int) -> None:
    """An ``expect_handler``: ``100 Continue`` for a body that will be taken, none for one whose
    ``Content-Length`` is over ``max_body_bytes`` (the handler answers 413 without waiting for
    it), and an unknown expectation ignored, which RFC 9110 section 10.1.1 allows, instead of
    aiohttp's plain-text 417."""
    expect = request.headers.get("Expect", "")
    if request.version != HttpVersion11 or expect.lower() != "100-continue":
        return
    declared = request.content_length
    if declared is None or declared <= max_body_bytes:
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the interim answer is not part of the response


@dataclass(eq=False)
class Refused(Exception):
    """A request the server refuses: answered with the server's JSON error; ``close``: the
    connection is not kept (its body may still be coming)."""

    status: int
    code: str
    message: str
    close: bool = False

    def __post_init__(self) -> None:
        super().__init__(self.message)


@dataclass(frozen=True)
class Listening:
    """One server's bounds and its JSON error shape."""

    answer: ErrorAnswer
    max_body_bytes: int
    body_timeout_s: float = BODY_TIMEOUT_S
    idle_timeout_s: float = IDLE_TIMEOUT_S
    linger_s: float = LINGER_S
    #: the code of a 413 (each server has said its own since before this module)
    too_large_code: str = "payload_too_large"
    log: logging.Logger = field(default=logging.getLogger("paysuite.listening"))

    def runner_options(self) -> dict[str, Any]:
        """What the ``web.AppRunner`` takes: the idle and slow-head time-out, the linger."""
        return {"keepalive_timeout": self.idle_timeout_s, "lingering_time": self.linger_s}

    async def expect_continue(self, request: web.Request) -> None:
        """The routes' ``expect_handler`` (``expect_continue`` with this server's limit)."""
        await expect_continue(request, self.max_body_bytes)

    async def read_body(self, request: web.BaseRequest) -> bytes:
        """The whole body, or ``Refused``: 413 from the head or past the limit, 408 when it is not
        whole in time, 400 when it cannot be decoded or ends early."""
        declared, limit = request.content_length, self.max_body_bytes
        if declared is not None and declared > limit:
            why = f"the request body ({declared} bytes) is larger than the {limit}-byte limit"
            raise Refused(413, self.too_large_code, why, close=True)
        try:
            async with asyncio.timeout(self.body_timeout_s):
                return await read_whole(request.content, self.max_body_bytes)
        except TimeoutError:
            why = f"the request body did not arrive within {self.body_timeout_s:g} s"
            raise Refused(408, "request_timeout", why, close=True) from None
        except BodyTooLarge:
            why = f"the request body is larger than the {self.max_body_bytes}-byte limit"
            raise Refused(413, self.too_large_code, why, close=True) from None
        except web.RequestPayloadError as exc:  # a coding that does not decode, a bad chunk
            reason = " ".join(str(exc).split()).removeprefix("400, message: ")
            why = f"the request body cannot be decoded: {reason}"
            raise Refused(400, "undecodable_body", why, close=True) from None
        except ConnectionError:  # the client went away mid-body; nobody reads this answer
            raise Refused(400, "bad_request", "the request body ended early", close=True) from None

    def refusal(self, refused: Refused) -> web.StreamResponse:
        response = self.answer(refused.status, refused.code, refused.message)
        if refused.close:
            response.force_close()
        return response

    def middleware(self) -> Middleware:
        """Every answer the handlers did not make in the server's JSON shape: ``Refused``,
        aiohttp's own HTTP errors (its 404 and 405 keep their ``Allow`` header), and an
        unexpected exception (logged with its traceback: a bug; the client gets a JSON 500)."""

        @web.middleware
        async def json_answers(request: web.Request, handler: Handler) -> web.StreamResponse:
            try:
                return await handler(request)
            except Refused as refused:
                return self.refusal(refused)
            except web.HTTPException as exc:
                if exc.status < 400:
                    raise
                other = "bad_request" if exc.status < 500 else "internal_error"
                code = CODES.get(exc.status, other)
                answer = self.answer(exc.status, code, exc.reason)
                if "Allow" in exc.headers:
                    answer.headers["Allow"] = exc.headers["Allow"]
                return answer
            except (asyncio.CancelledError, ConnectionError):
                raise  # the client went away: nobody reads an answer
            except Exception:
                self.log.exception("unhandled error on %s %s", request.method, request.path)
                return self.answer(500, "internal_error", "internal error")

        return json_answers
