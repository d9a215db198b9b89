"""Every request paysuite sends to a target, bounded: how long it waits, how much it reads.

A target is not trusted to end its answers: a silent one held a run for good, an endless chunked
body grew a process past 1.5 GB, a 50 MB body was read whole by every user. So each exchange has
a connect time-out, a read time-out (each socket operation), a total deadline (head and body: a
trickle cannot stretch it) and a size cap (a body past it is abandoned unread, its connection
closed). Redirects are not followed: a 3xx is the target's answer.

The limits, the one size rule, and the words of each way an exchange can fail live here, so the
suite, the load side, the proxy's replay and the clients matrix say the same thing of the same
failure. ``BoundedClient`` is the exchange itself on httpx; the Locust users keep their gevent
client (``load.connection``), bounded by the same ``Limits`` and ``read_capped``.

The cap is on what is read *as decoded*: a compressed body (``Content-Encoding: gzip``, deflate,
br) is inflated here, chunk by chunk as it arrives, each step told how much room is left
(``Inflater``), so a few megabytes of gzip that inflate to gigabytes stop one chunk past the cap.
httpx's own ``iter_bytes`` inflates a whole network chunk at once (a 64 KiB chunk of a gzip bomb
is 64 MiB; IDEM-005's 16 racers held a gigabyte each): ``BoundedClient`` reads ``iter_raw`` and
inflates itself. A head is bounded by the client libraries: httpx (h11) refuses one over
100 KiB, requests (http.client) more than 100 header lines or one over 64 KiB, aiohttp's client
more than 128 or a line over 8190 bytes; the load side's gevent client has none of its own and
counts them in ``load.connection`` (``HeadLimits``).
"""

from __future__ import annotations

import concurrent.futures
import functools
import re
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from paysuite_core.tls import TLSSettings

READ_CHUNK = 65536
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


@dataclass(frozen=True)
class Limits:
    connect_s: float
    read_s: float  # between two bytes
    total_s: float  # the whole exchange, headers and body
    max_body_bytes: int

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.read_s, connect=self.connect_s)


#: conform, its proxy replay and the clients matrix: one request at a time, and no answer of this
#: API comes near 1 MiB, so a slow honest target is waited for long.
CONFORM_LIMITS = Limits(connect_s=10.0, read_s=30.0, total_s=60.0, max_body_bytes=1 << 20)
#: the load side: a request stuck for half a minute already says what a load test needs to know.
LOAD_LIMITS = Limits(connect_s=5.0, read_s=15.0, total_s=30.0, max_body_bytes=4 << 20)


class ResponseTooLarge(Exception):
    """The body passed ``max_body_bytes``: nothing more was read."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        over = f"over the {limit}-byte limit (--max-response-bytes)"
        if declared is None:
            super().__init__(f"the target sent a body {over}: read no further")
        else:
            super().__init__(f"the target declared a body of {declared} bytes, {over}: not read")


#: An answer's head, where paysuite's own code reads it (``load.connection``): as many lines as
#: http.client (requests) takes, and 64 KiB in all (no answer of this API has a tenth of that;
#: h11, under httpx, takes 100 KiB).
MAX_HEADER_LINES = 100
MAX_HEADER_BYTES = 64 * 1024
#: httpx's (httpcore's h11 connection: ``max_incomplete_event_size``)
H11_MAX_HEAD = 100 * 1024


class HeadersTooLarge(httpx.RemoteProtocolError):
    """The target's head passed ``MAX_HEADER_LINES`` or ``MAX_HEADER_BYTES`` (or h11's cap): not
    read further. An httpx protocol error, as h11's own refusal was: every caller that takes a
    transport failure takes this one."""

    def __init__(self, limit: str = "") -> None:
        limit = limit or f"{MAX_HEADER_LINES} header lines or {MAX_HEADER_BYTES // 1024} KiB"
        super().__init__(f"the target sent a head of more than {limit}: read no further")


class ConnectTimeout(TimeoutError):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"no connection within {seconds:g} s (--connect-timeout)")


class ReadTimeout(TimeoutError):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"a read waited {seconds:g} s (--read-timeout)")


class TotalTimeout(Exception):
    """Not a ``TimeoutError``: a socket's own time-out is one, and callers tell them apart."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete answer within {seconds:g} s (--total-timeout)")


#: The error kinds (exception class names, kept as such in load.json's ``error_kinds``) in the
#: words a person reads in a verdict, with the option that bounds each.
ERROR_WORDS = {
    "TotalTimeout": "no complete response within the total timeout (--total-timeout)",
    "ReadTimeout": "a read timed out (--read-timeout)",
    "ConnectTimeout": "no connection in time (--connect-timeout)",
    "ConnectionRefusedError": "connection refused",
}

_OURS = (ConnectTimeout, ReadTimeout, TotalTimeout, ResponseTooLarge, HeadersTooLarge)


def in_words(exc: BaseException) -> str:
    """Why an exchange gave no usable answer, in one line.

    A client library's wrapper (requests' 340 characters of ``HTTPConnectionPool(...)``) is
    reduced to the operating system's reason inside it; an ``OSError`` keeps its class name,
    which is the reason (``ConnectionRefusedError``).
    """
    if isinstance(exc, _OURS):
        return str(exc)
    text = " ".join(str(exc).split())
    found = None if isinstance(exc, OSError) else _ERRNO.search(text)
    if found:
        return found.group(1).strip().lower()
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def no_answer(exc: BaseException) -> str:
    """``in_words``, saying "no answer" unless an answer began (too slow or too large)."""
    if isinstance(exc, (TotalTimeout, ResponseTooLarge, HeadersTooLarge)):
        return str(exc)
    return f"no answer: {in_words(exc)}"


def read_capped(read: Callable[[int], bytes], limit: int) -> bytes:
    """Read a body with ``read(n)`` until it ends; ``ResponseTooLarge`` one byte past ``limit``.

    The chunks are joined once at the end: a body that comes in one read (every small JSON
    answer) is returned as that read gave it, without a copy through a ``bytearray``: this is
    on every load request's path."""
    chunks: list[bytes] = []
    size = 0
    while chunk := read(min(READ_CHUNK, limit + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(limit)
    return b"".join(chunks)


#: A step of decoding: the next inflated bytes of ``data``, about ``room`` of them at most, and
#: whether more was left behind for want of room.
_Step = Callable[[bytes, int], tuple[bytes, bool]]


def _zlib_step(wbits: int) -> _Step:
    inflate = zlib.decompressobj(wbits)

    def step(data: bytes, room: int) -> tuple[bytes, bool]:
        out = inflate.decompress(data, room)
        return out, bool(inflate.unconsumed_tail)

    return step


def _deflate_step() -> _Step:
    """``deflate`` as servers send it: zlib-wrapped as the RFC says, or raw (as httpx and
    browsers accept): the wrapper is tried on the first bytes, raw deflate if they are not one."""
    chosen: list[_Step] = []

    def step(data: bytes, room: int) -> tuple[bytes, bool]:
        if chosen:
            return chosen[0](data, room)
        try:
            out = (first := _zlib_step(zlib.MAX_WBITS))(data, room)
        except zlib.error:
            first = _zlib_step(-zlib.MAX_WBITS)
            out = first(data, room)
        chosen.append(first)
        return out

    return step


def _brotli_step() -> _Step | None:
    """br through the ``brotli`` package when it can bound its output (1.2+:
    ``output_buffer_limit``), else None: such a body is read as it came, not inflated."""
    try:
        import brotli  # type: ignore[import-untyped]
    except ImportError:
        return None
    inflate = brotli.Decompressor()
    if not hasattr(inflate, "can_accept_more_data"):
        return None

    def step(data: bytes, room: int) -> tuple[bytes, bool]:
        out: bytes = inflate.process(data, output_buffer_limit=room)
        return out, not inflate.can_accept_more_data()

    return step


_STEPS: dict[str, Callable[[], _Step | None]] = {
    "gzip": lambda: _zlib_step(zlib.MAX_WBITS | 16),
    "x-gzip": lambda: _zlib_step(zlib.MAX_WBITS | 16),
    "deflate": _deflate_step,
    "br": _brotli_step,
}


def accepted_encodings() -> str:
    """The ``Accept-Encoding`` of a client that inflates through ``Inflater``: only what it
    can bound."""
    return ", ".join(name for name in ("gzip", "deflate", "br") if _STEPS[name]() is not None)


class Inflater:
    """A body's content codings undone as its raw chunks arrive, every step's output counted
    against ``max_bytes`` as it grows: ``ResponseTooLarge`` one step past it, whatever the
    ratio. Each step is asked for at most the room left (zlib's ``max_length``, brotli's
    ``output_buffer_limit``), so no step ever holds more than the cap. Codings applied one
    over another (``gzip, br``) are undone last first; one paysuite does not know is read as
    it came (as httpx does), still under the cap."""

    def __init__(self, content_encoding: str, max_bytes: int) -> None:
        names = [name.strip().lower() for name in content_encoding.split(",")]
        made = [_STEPS[name]() for name in reversed(names) if name in _STEPS]
        self.steps = [step for step in made if step is not None]
        self.sizes = [0] * len(self.steps)
        self.max_bytes = max_bytes

    def feed(self, raw: bytes) -> bytes:
        """The decoded bytes ``raw`` gives (``httpx.DecodingError`` when it does not inflate)."""
        data = raw
        for index, step in enumerate(self.steps):
            if not data:
                return b""
            room = self.max_bytes + 1 - self.sizes[index]
            try:
                data, cut = step(data, room)
            except Exception as exc:  # zlib.error, brotli.error: the body is not what it says
                raise httpx.DecodingError(f"the body does not inflate: {exc}") from None
            self.sizes[index] += len(data)
            if cut or len(data) >= room:
                raise ResponseTooLarge(self.max_bytes)
        return data


class BoundedBody:
    """A body collected chunk by chunk as a client library streams it, refused past
    ``max_bytes``; a declared length over it is refused before a byte is read.

    ``inflate``: the chunks are the wire's bytes, and the body's ``Content-Encoding`` is undone
    here as they come (``Inflater``), its decoded size counted; without it the chunks come
    decoded already by a library that bounds each step (urllib3 2.6 and later inflate at most
    the bytes asked for: requests' ``raw.stream(n, decode_content=True)``)."""

    def __init__(
        self, headers: Mapping[str, str], max_bytes: int, *, inflate: bool = False
    ) -> None:
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ResponseTooLarge(max_bytes, int(declared))
        self.data = bytearray()
        self.max_bytes = max_bytes
        coding = headers.get("content-encoding", "") if inflate else ""
        self.inflater = Inflater(coding, max_bytes) if coding else None

    def add(self, chunk: bytes) -> None:
        if self.inflater is not None:
            chunk = self.inflater.feed(chunk)
        self.data += chunk
        if len(self.data) > self.max_bytes:
            raise ResponseTooLarge(self.max_bytes)


#: What ``BoundedClient`` asks for when its caller names no coding: what ``Inflater`` bounds.
ACCEPT_ENCODING = accepted_encodings()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: httpx.Headers
    body: bytes


class BoundedClient:
    """A synchronous httpx client whose every exchange ends within ``limits``.

    httpx's own time-outs bound each socket operation, not the exchange: a target that
    trickles its headers a byte at a time would hold it for ever. So one worker thread sends
    each request while the caller waits at most the total deadline; past it the client is
    closed (which breaks the worker's blocked read) and a fresh one serves on.

    ``tls``: what to trust and present over HTTPS (``paysuite_core.tls``; default: verify
    against the default or the environment's CAs); ``trust_env``: httpx's, for environment
    proxies; ``transport`` is a test's
    ``httpx.MockTransport``. The client itself comes from ``paysuite_core.http_clients``.
    """

    def __init__(
        self,
        limits: Limits,
        *,
        tls: TLSSettings | None = None,
        trust_env: bool = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        from paysuite_core.http_clients import httpx_client

        self.limits = limits
        self.tls = tls
        self._new_client = functools.partial(
            httpx_client, tls, timeout=limits.timeout(), trust_env=trust_env, transport=transport
        )
        self._client = self._new_client()
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "paysuite-http")

    def build_request(self, method: str, url: str, **kwargs: object) -> httpx.Request:
        return self._client.build_request(method, url, **kwargs)  # type: ignore[arg-type]

    def send(
        self, request: httpx.Request, wait_s: float | None = None, *, raw: bool = False
    ) -> Answer:
        """The whole answer to ``request``, within ``wait_s`` (the total time-out by default),
        its body decoded (``raw``: as the wire carried it, still compressed if it was: what the
        proxy's replay records).

        Raises ``TotalTimeout``, ``ConnectTimeout``, ``ReadTimeout``, ``ResponseTooLarge``, or
        httpx's own error for any other transport failure (``DecodingError``: a body that does
        not inflate).
        """
        wait_s = self.limits.total_s if wait_s is None else wait_s
        offered = request.headers.get("accept-encoding")
        if not raw and offered in (None, self._client.headers.get("accept-encoding")):
            request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        future = self._worker.submit(self._exchange, request, time.monotonic() + wait_s, raw)
        try:
            return future.result(timeout=wait_s + 1.0)
        except concurrent.futures.TimeoutError:
            self.close()
            self._client = self._new_client()
            self._worker = concurrent.futures.ThreadPoolExecutor(1, "paysuite-http")
            raise TotalTimeout(self.limits.total_s) from None
        except httpx.ConnectTimeout:
            raise ConnectTimeout(self.limits.connect_s) from None
        except httpx.ReadTimeout:
            raise ReadTimeout(self.limits.read_s) from None
        except httpx.RemoteProtocolError as exc:
            if "Receive buffer too long" in str(exc):  # h11's cap on a head, in its words
                raise HeadersTooLarge(f"{H11_MAX_HEAD // 1024} KiB") from None
            raise

    def _exchange(self, request: httpx.Request, deadline: float, raw: bool) -> Answer:
        response = self._client.send(request, stream=True)
        try:
            if response.is_stream_consumed:
                # an in-process transport (httpx.MockTransport) answered with bytes already in
                # memory, and already decoded: nothing left to stream or to inflate
                body = BoundedBody(response.headers, self.limits.max_body_bytes, inflate=False)
                body.add(response.content)
                return Answer(response.status_code, response.headers, bytes(body.data))
            body = BoundedBody(response.headers, self.limits.max_body_bytes, inflate=not raw)
            for chunk in response.iter_raw(READ_CHUNK):
                body.add(chunk)
                if time.monotonic() > deadline:
                    raise TotalTimeout(self.limits.total_s)
            return Answer(response.status_code, response.headers, bytes(body.data))
        finally:
            response.close()

    def close(self) -> None:
        self._client.close()
        self._worker.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> BoundedClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
