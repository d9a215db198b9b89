"""The proxy's listening side: bounded as the stub's (idle, slow-head and slow-body connections
closed; a body refused from its Content-Length before it is read, without ``100 Continue``), every
refusal the proxy's JSON error, a coded request body passed as sent, a cut answer never relayed."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from rawhttp import scripted_handler, send_raw

from paysuite_core.exchange import Exchange
from proxy.server import ForwardingProxy, ProxySettings


async def _echo(request: web.Request) -> web.Response:
    """A target that says what it received: its body's bytes and its Content-Encoding."""
    received = {
        "body": (await request.content.read()).hex(),  # as the proxy sent it, not inflated
        "coding": request.headers.get("Content-Encoding", ""),
    }
    return web.json_response(received, status=299)


@dataclass
class Served:
    port: int
    seen: list[Exchange] = field(default_factory=list)

    def first(self) -> Exchange:
        """The first exchange, once recorded (after its answer went out)."""
        deadline = time.monotonic() + 5
        while not self.seen and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.seen[0]


@contextmanager
def proxy(target: str | None = None, **settings: Any) -> Iterator[Served]:
    """A proxy (in front of the echo target unless ``target``) served from a thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runners: list[web.AppRunner] = []
    served = Served(0)

    async def start() -> int:
        echo = web.Application()
        echo.router.add_route("*", "/{tail:.*}", _echo)
        echo_runner = web.AppRunner(echo, auto_decompress=False)
        await echo_runner.setup()
        await web.TCPSite(echo_runner, "127.0.0.1", 0).start()
        runners.append(echo_runner)
        upstream = target or f"http://127.0.0.1:{echo_runner.addresses[0][1]}"
        forwarding = ForwardingProxy(ProxySettings(target=upstream, **settings), served.seen.append)
        runner = await forwarding.runner()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        return int(runner.addresses[0][1])

    async def stop() -> None:
        for runner in reversed(runners):
            await runner.cleanup()

    served.port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    try:
        yield served
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


BIG_HEADER = b"GET / HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 20_000 + b"\r\n\r\n"
BAD_CHUNK = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n"


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        (b"GARBAGE\r\n\r\n", 400, "bad_request"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400, "bad_request"),
        (BIG_HEADER, 431, "header_too_large"),
        (BAD_CHUNK, 400, "bad_request"),
    ],
    ids=["garbage line", "NUL", "20 KB header", "bad chunk"],
)
def test_what_aiohttp_cannot_parse_is_the_proxy_s_json_error(
    request_bytes: bytes, status: int, code: str
) -> None:
    with proxy() as served:
        answer = send_raw(served.port, request_bytes)
    assert answer.status == status, answer
    assert answer.headers["content-type"].startswith("application/json")
    body = answer.json()
    assert set(body) == {"status", "code", "message"}
    assert (body["status"], body["code"]) == (status, code)
    assert "aaaa" not in body["message"]  # the request is not echoed back


def test_a_coded_request_body_passes_as_sent(capfd: pytest.CaptureFixture[str]) -> None:
    """A Content-Encoding the body does not match is the target's to judge: forwarded, no 500."""
    request = (
        b"POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
        b"Content-Type: application/json\r\nContent-Length: 5\r\n\r\nhello"
    )
    with proxy() as served:
        answer = send_raw(served.port, request)
        assert answer.status == 299, answer
        assert answer.json() == {"body": b"hello".hex(), "coding": "gzip"}
        assert served.first().request_body == b"hello"
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("expect", [True, False], ids=["expect-100-continue", "plain"])
def test_a_declared_over_size_body_is_refused_at_once(expect: bool) -> None:
    request = (
        b"POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + (b"Expect: 100-continue\r\n" if expect else b"")
        + b"Content-Length: 100000000\r\n\r\n"
    )
    with proxy() as served:
        answer = send_raw(served.port, request, linger_s=4)
        assert answer.status == 413 and answer.interim == []
        assert answer.json()["code"] == "proxy_body_too_large"
        assert answer.first_byte_s < 2 and answer.closed
        exchange = served.first()
        assert exchange.status == 0 and "larger than" in exchange.error  # recorded, not forwarded
        assert len(served.seen) == 1


def test_a_body_that_will_be_taken_is_invited_and_forwarded() -> None:
    request = (
        b"POST /api/x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}"
    )
    with proxy() as served:
        answer = send_raw(served.port, request)
    assert answer.interim == [100] and answer.status == 299
    assert answer.json()["body"] == b"{}".hex()


def test_a_chunked_body_past_the_limit_is_refused() -> None:
    chunk = b"800\r\n" + b"x" * 0x800 + b"\r\n"
    request = b"POST /api/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk
    with proxy(max_body_bytes=1024) as served:
        answer = send_raw(served.port, request)
    assert answer.status == 413 and answer.json()["code"] == "proxy_body_too_large"


def test_a_body_that_never_comes_is_a_408_and_recorded() -> None:
    with proxy(body_timeout_s=0.5) as served:
        request = b"POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
        answer = send_raw(served.port, request, linger_s=4)
        assert answer.status == 408 and answer.json()["code"] == "request_timeout"
        assert answer.first_byte_s < 3 and answer.closed
        assert "did not arrive within 0.5 s" in served.first().error


def test_idle_and_slow_head_connections_are_closed() -> None:
    with proxy(idle_timeout_s=0.5) as served:
        idle = socket.create_connection(("127.0.0.1", served.port))
        slow = socket.create_connection(("127.0.0.1", served.port))
        slow.sendall(b"GET /api/x HTTP/1.1\r\nHost: x\r\n")  # and never the rest of the head
        started = time.monotonic()
        with idle, slow:
            assert _closed_within(idle, 5) and _closed_within(slow, 5)
        assert time.monotonic() - started < 5


def test_a_keep_alive_connection_is_closed_when_idle_after_its_answer() -> None:
    with proxy(idle_timeout_s=0.5) as served:
        with socket.create_connection(("127.0.0.1", served.port)) as sock:
            sock.sendall(b"GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.settimeout(5)
            assert sock.recv(65536).startswith(b"HTTP/1.1 299")
            assert _closed_within(sock, 5)


def test_a_cut_answer_from_the_target_is_a_502_not_relayed() -> None:
    def half_sent() -> Iterator[tuple[float, bytes]]:
        yield 0, b"HTTP/1.1 200 OK\r\nContent-Length: 27\r\n\r\n" + b'{"amount": 1'

    with scripted_handler(half_sent) as target, proxy(target=target.url) as served:
        answer = send_raw(served.port, b"GET /api/x HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer.status == 502, answer
        body = answer.json()
        assert body["code"] == "proxy_upstream_unreachable"
        assert served.first().status == 0 and served.first().error
    assert json.dumps(body)  # one JSON object, nothing of the cut body
