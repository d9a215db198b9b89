"""HTTP that aiohttp's parser rejects, over raw sockets: the catalogue's JSON 400, one log line.

These requests never reach the application (stub_server/protocol.py says why and how), so they
are sent byte for byte: no HTTP client would produce them.
"""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

from paysuite_core.launcher import RunningStub
from paysuite_core.tokens import AUTHORIZE_PATH

#: The request line of an authorize, raw.
AUTHORIZE_LINE = f"POST /api{AUTHORIZE_PATH} HTTP/1.1\r\n".encode()

MALFORMED = {
    "NUL in a header": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
    "invalid request line": b"GARBAGE\r\n\r\n",
    "invalid method": b"G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "invalid version": b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n",
    "target without slash": b"GET healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "request line over 8190 bytes": b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "header over 8190 bytes": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: "
    + b"a" * 9000
    + b"\r\n\r\n",
    "more than 128 headers": (
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-%d: a\r\n" % i for i in range(200))
        + b"\r\n"
    ),
    "TLS on the HTTP port": b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40,
    "bad Content-Length": (
        AUTHORIZE_LINE + b"Host: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{}"
    ),
    "Content-Length with chunked": (
        AUTHORIZE_LINE + b"Host: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ),
    "bad chunk size": (
        AUTHORIZE_LINE + b"Host: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n"
    ),
}


def exchange(root_url: str, data: bytes, timeout_s: float = 5) -> tuple[int, dict, dict]:
    """Send raw bytes, read one response: (status, headers, JSON body)."""
    url = urlsplit(root_url)
    with socket.create_connection((url.hostname, url.port), timeout=timeout_s) as sock:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed before a response: {received!r}"
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        while head.startswith(b"HTTP/1.1 100 "):  # an interim answer, then the real one
            while b"\r\n\r\n" not in body:
                body += sock.recv(65536)
            head, _, body = body.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
        length = int(headers["content-length"])
        while len(body) < length:
            chunk = sock.recv(65536)
            assert chunk, "connection closed mid-body"
            body += chunk
    return status, headers, json.loads(body[:length])


@pytest.mark.parametrize("name", list(MALFORMED))
def test_unparseable_http_gets_the_json_400(stub: RunningStub, name: str) -> None:
    before = stub.stderr_text()
    status, headers, body = exchange(stub.root_url, MALFORMED[name])
    assert status == 400
    assert headers["content-type"].startswith("application/json")
    assert body["status"] == 400 and body["code"] == "bad_request"
    assert body["message"].startswith("malformed HTTP request: ")
    assert "\n" not in body["message"] and len(body["message"]) < 300
    logged = stub.stderr_text()[len(before) :]
    assert "Traceback" not in logged
    assert logged.count("rejected unparseable HTTP") == 1, logged


def test_undecodable_content_encoding_is_400_without_traceback(stub: RunningStub) -> None:
    """gzip declared, plain bytes sent: aiohttp's decoder fails while the body is read."""
    body = b'{"client_id": "x", "client_secret": "y"}'
    before = stub.stderr_text()
    for encoding in (b"gzip", b"deflate", b"br"):
        request = (
            AUTHORIZE_LINE + b"Host: x\r\n"
            b"Content-Type: application/json\r\nContent-Encoding: " + encoding + b"\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        ) + body
        status, _, answer = exchange(stub.root_url, request)
        assert status == 400 and answer["code"] == "malformed_json", answer
        assert encoding.decode() in answer["message"]
    assert "Traceback" not in stub.stderr_text()[len(before) :]


def test_expectations(stub: RunningStub) -> None:
    """100-continue gets its interim answer; an unknown expectation is ignored (RFC 9110 10.1.1
    allows it) instead of aiohttp's plain-text 417."""
    for expect in (b"100-continue", b"42-nonsense"):
        request = (
            AUTHORIZE_LINE + b"Host: x\r\n"
            b"Content-Type: application/json\r\nExpect: " + expect + b"\r\n"
            b"Content-Length: 2\r\n\r\n{}"
        )
        status, _, body = exchange(stub.root_url, request)
        assert status == 400 and body["message"].startswith("client_id:"), body


def test_parse_errors_under_the_go_error_body_variant(inproc) -> None:
    server = inproc(variants=["go-error-body"])
    status, _, body = exchange(server.root_url, MALFORMED["NUL in a header"])
    assert status == 400 and set(body) == {"status", "message"}


def test_odd_but_valid_authorization_headers(stub: RunningStub, api) -> None:
    """Byte-exact headers httpx refuses to send: empty Bearer, trailing spaces, non-UTF-8."""
    token = api.token().encode()
    cases = [
        (b"Bearer ", 401, "missing_token"),
        (b"Bearer \t ", 401, "missing_token"),
        (b"Bearer a.b", 401, "invalid_token"),
        (b"Bearer \xe9\xff", 401, "invalid_token"),
        (b"Bearer " + token + b"   ", 200, None),
        (b"bearer " + token, 200, None),
    ]
    for header, status, code in cases:
        request = (
            b"GET /api/events/transactions?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: "
            + header
            + b"\r\nConnection: close\r\n\r\n"
        )
        got, _, body = exchange(stub.root_url, request)
        assert got == status, (header, body)
        if code is not None:
            assert body["code"] == code
