"""The forwarding server: bytes unchanged both ways, hop-by-hop headers stopped (RFC 9110
7.6.1), bounded bodies, and a JSON 502 (recorded) when the target does not answer."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from paysuite_core.exchange import Exchange
from proxy.server import ForwardingProxy, ProxySettings, end_to_end

GZIPPED = gzip.compress(b'{"answer": "as the target sent it"}', mtime=0)


async def _echo(request: web.Request) -> web.Response:
    """A target that tells what it received, in a body the proxy must not touch."""
    received = {
        "method": request.method,
        "path_qs": request.raw_path,
        "headers": [[k.decode(), v.decode()] for k, v in request.raw_headers],
        "body": (await request.read()).hex(),
    }
    if request.path == "/gzip":
        response = web.Response(body=GZIPPED, content_type="application/json")
        response.headers["Content-Encoding"] = "gzip"
        return response
    response = web.Response(body=json.dumps(received).encode(), status=299, reason="Odd")
    response.headers["Content-Type"] = "application/json"
    response.headers.add("X-Dup", "a")
    response.headers.add("X-Dup", "b")
    response.headers["Keep-Alive"] = "timeout=5"
    return response


async def _with_proxy(
    test: Callable[[int, list[Exchange]], Awaitable[Any]], *, target: str | None = None, **kw: Any
) -> Any:
    echo = web.Application()
    echo.router.add_route("*", "/{tail:.*}", _echo)
    echo_runner = web.AppRunner(echo)
    await echo_runner.setup()
    echo_site = web.TCPSite(echo_runner, "127.0.0.1", 0)
    await echo_site.start()
    echo_port = echo_runner.addresses[0][1]
    seen: list[Exchange] = []
    settings = ProxySettings(target=target or f"http://127.0.0.1:{echo_port}", **kw)
    runner = await ForwardingProxy(settings, seen.append).runner()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        return await test(runner.addresses[0][1], seen)
    finally:
        await runner.cleanup()
        await echo_runner.cleanup()


async def _raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


def _split(answer: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines)]
    return status, headers, body


def test_request_passes_unchanged_except_hop_by_hop_headers() -> None:
    body = b'{"amount": 100,  "number":"0781234567"}'  # odd spacing: bytes, not JSON, are kept
    request = (
        b"POST /api/transactions/cashin?Idempotency-Key=k%201&x=1 HTTP/1.1\r\n"
        b"Host: proxy\r\nX-Custom: one\r\nX-Custom: two\r\nConnection: close, X-Hop\r\n"
        b"X-Hop: secret-of-this-hop\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n"
        b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
        + b"\r\n\r\n" + body
    )  # fmt: skip

    async def test(port: int, seen: list[Exchange]) -> None:
        status, headers, answer = _split(await _raw(port, request))
        assert status.startswith("HTTP/1.1 299")
        received = json.loads(answer)
        assert received["method"] == "POST"
        assert received["path_qs"] == "/api/transactions/cashin?Idempotency-Key=k%201&x=1"
        assert bytes.fromhex(received["body"]) == body
        names = [name.lower() for name, _ in received["headers"]]
        assert [v for k, v in received["headers"] if k.lower() == "x-custom"] == ["one", "two"]
        for hop in ("x-hop", "keep-alive", "te"):
            assert hop not in names, received["headers"]
        assert "user-agent" not in names and "accept-encoding" not in names  # nothing added
        # the answer: status and reason, repeated headers, the target's bytes
        assert [v for k, v in headers if k.lower() == "x-dup"] == ["a", "b"]
        assert not any(k.lower() == "keep-alive" for k, _ in headers)
        (exchange,) = seen
        assert exchange.status == 299 and exchange.request_body == body
        assert exchange.response_body == answer

    asyncio.run(_with_proxy(test))


def test_compressed_answers_pass_as_sent() -> None:
    async def test(port: int, seen: list[Exchange]) -> None:
        request = (
            b"GET /gzip HTTP/1.1\r\nHost: p\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n"
        )
        _, headers, body = _split(await _raw(port, request))
        assert ("Content-Encoding", "gzip") in headers
        assert body == GZIPPED

    asyncio.run(_with_proxy(test))


def test_a_silent_target_gives_a_json_502_and_is_recorded() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening

    async def test(port: int, seen: list[Exchange]) -> None:
        request = b"GET /api/transactions/find/x HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n"
        status, headers, body = _split(await _raw(port, request))
        assert status.startswith("HTTP/1.1 502")
        assert json.loads(body)["code"] == "proxy_upstream_unreachable"
        (exchange,) = seen
        assert exchange.status == 0 and "did not answer" in exchange.error

    asyncio.run(_with_proxy(test, target=dead))


def test_a_body_over_the_limit_is_refused_with_413_and_not_forwarded() -> None:
    async def test(port: int, seen: list[Exchange]) -> None:
        body = b"x" * 2048
        request = (b"POST /big HTTP/1.1\r\nHost: p\r\nConnection: close\r\nContent-Length: 2048"
                   b"\r\n\r\n" + body)  # fmt: skip
        status, _, answer = _split(await _raw(port, request))
        assert status.startswith("HTTP/1.1 413")
        assert json.loads(answer)["code"] == "proxy_body_too_large"
        assert seen[0].status == 0 and "larger than" in seen[0].error  # the target saw nothing

    asyncio.run(_with_proxy(test, max_body_bytes=1024))


def test_connection_named_headers_are_hop_by_hop() -> None:
    headers = (("Connection", "X-A, keep-alive"), ("X-A", "1"), ("X-B", "2"), ("TE", "x"))
    assert end_to_end(headers) == [("X-B", "2")]


def test_the_proxy_adds_no_header_the_target_did_not_send() -> None:
    """aiohttp's server would add Content-Type, Date and Server: the client must not see them."""

    async def bare_target(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello")
        await writer.drain()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(bare_target, "127.0.0.1", 0)
        target = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

        async def test(port: int, seen: list[Exchange]) -> None:
            request = b"GET /x HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n"
            status, headers, body = _split(await _raw(port, request))
            names = {name.lower() for name, _ in headers}
            assert body == b"hello" and ("X-A", "1") in headers
            assert not names & {"content-type", "date", "server"}, headers

        try:
            await _with_proxy(test, target=target)
        finally:
            server.close()

    asyncio.run(main())


def test_an_answer_over_the_limit_gives_a_502_and_is_recorded() -> None:
    async def test(port: int, seen: list[Exchange]) -> None:
        request = b"GET /big-answer HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n"
        status, _, body = _split(await _raw(port, request))
        assert status.startswith("HTTP/1.1 502")
        assert json.loads(body)["code"] == "proxy_answer_too_large"
        assert seen[0].status == 0 and "larger than" in seen[0].error

    asyncio.run(_with_proxy(test, max_answer_bytes=64))  # the echo's answer is longer
