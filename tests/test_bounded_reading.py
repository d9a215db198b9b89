"""The one bounded reader and the one guarded JSON decoder, on their own: a compressed body is
counted as it inflates (a bomb stops one step past the cap, holding no more than it), a head is
counted line by line on the load side, and JSON from a target is refused in one line when it is
too big, not UTF-8, not JSON or too deep."""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import Iterator

import brotli  # type: ignore[import-untyped]
import httpx
import pytest
from hostile import hostile_server

from load.connection import BoundedHeaders, Connection
from paysuite_core import guarded_json
from paysuite_core.bounded_http import (
    ACCEPT_ENCODING,
    BoundedBody,
    BoundedClient,
    HeadersTooLarge,
    Inflater,
    Limits,
    ResponseTooLarge,
)

CAP = 1 << 20
LIMITS = Limits(connect_s=2, read_s=2, total_s=10, max_body_bytes=CAP)
MiB = 1 << 20


def _gzip_stream(mib: int, wbits: int = zlib.MAX_WBITS | 16) -> Iterator[bytes]:
    """``mib`` MiB of zeros, compressed, a flushed piece per MiB (about 1 KB each)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = bytes(MiB)
    for _ in range(mib):
        yield deflate.compress(zeros) + deflate.flush(zlib.Z_SYNC_FLUSH)
    yield deflate.flush()


def _client(headers: dict[str, str], chunks: Iterator[bytes] | list[bytes]) -> BoundedClient:
    def handler(request: httpx.Request) -> httpx.Response:
        handler.seen = request  # type: ignore[attr-defined]
        return httpx.Response(200, headers=headers, content=iter(chunks))

    client = BoundedClient(LIMITS, transport=httpx.MockTransport(handler))
    client.handler = handler  # type: ignore[attr-defined]
    return client


def test_a_gzip_bomb_stops_one_step_past_the_cap_holding_no_more_than_it() -> None:
    """A 1 GiB body of zeros in one compressed piece of about 1 MB: httpx's iter_bytes would
    inflate it whole; the reader holds at most the cap and a step."""
    bomb = b"".join(_gzip_stream(1024))
    assert len(bomb) < 2 * MiB
    tracemalloc.start()
    try:
        with _client({"Content-Encoding": "gzip"}, [bomb]) as client:
            with pytest.raises(ResponseTooLarge, match="over the 1048576-byte limit"):
                client.send(client.build_request("GET", "http://target/x"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(bomb) + 4 * CAP, peak


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", lambda data: zlib.compress(data, wbits=zlib.MAX_WBITS | 16)),
        ("deflate", lambda data: zlib.compress(data)),
        ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # raw, as sent
        ("br", brotli.compress),
        ("gzip, br", lambda data: brotli.compress(zlib.compress(data, wbits=31))),
        ("zstd-unknown", lambda data: data),  # a coding paysuite does not know: read as it came
        ("identity", lambda data: data),
    ],
)
def test_each_coding_is_undone_and_its_decoded_size_counted(coding: str, encode) -> None:  # type: ignore[no-untyped-def]
    body = b'{"ref": "abc", "status": "pending"}' * 100
    wire = encode(body)
    chunks = [wire[i : i + 7] for i in range(0, len(wire), 7)]
    with _client({"Content-Encoding": coding}, chunks) as client:
        answer = client.send(client.build_request("GET", "http://target/x"))
    assert answer.body == body
    too_much = encode(bytes(CAP + 1))
    inflater = Inflater(coding, CAP)
    if coding in ("zstd-unknown", "identity"):
        return
    with pytest.raises(ResponseTooLarge):
        inflater.feed(too_much)


def test_a_body_that_does_not_inflate_is_a_decoding_error() -> None:
    with _client({"Content-Encoding": "gzip"}, [b"not gzip at all"]) as client:
        with pytest.raises(httpx.DecodingError, match="does not inflate"):
            client.send(client.build_request("GET", "http://target/x"))


def test_the_client_asks_only_for_codings_it_bounds_and_raw_reads_the_wire() -> None:
    wire = zlib.compress(b"{}" * 10, wbits=31)
    with _client({"Content-Encoding": "gzip"}, [wire]) as client:
        client.send(client.build_request("GET", "http://target/x"))
        assert client.handler.seen.headers["accept-encoding"] == ACCEPT_ENCODING  # type: ignore[attr-defined]
        assert ACCEPT_ENCODING == "gzip, deflate, br"
    with _client({"Content-Encoding": "gzip"}, [wire]) as client:
        raw = client.send(client.build_request("GET", "http://target/x"), raw=True)
    assert raw.body == wire


def test_a_body_over_the_cap_by_its_declared_length_is_not_read() -> None:
    with pytest.raises(ResponseTooLarge, match="declared a body of"):
        BoundedBody({"content-length": str(CAP + 1)}, CAP)


def test_the_load_side_counts_the_head_line_by_line() -> None:
    headers = BoundedHeaders()
    for n in range(100):
        headers.add(f"X-{n}", "v")
    with pytest.raises(HeadersTooLarge, match="100 header lines or 64 KiB"):
        headers.add("X-100", "v")
    headers.clear()  # an interim answer ended: the final one is counted afresh
    headers.add("X-Big", "v" * 60_000)
    with pytest.raises(HeadersTooLarge):
        headers.add("X-Big-2", "v" * 6_000)


def test_the_load_client_refuses_endless_headers_at_once() -> None:
    with hostile_server("endless-headers") as server:
        connection = Connection(server.root_url, LIMITS)
        try:
            with pytest.raises(HeadersTooLarge):
                connection.exchange("GET", "/api/x", None, {})
        finally:
            connection.close()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
        (b"[" * 65 + b"]" * 65, "nested deeper than 64 levels"),
        (b'{"a": "\xff"}', "not UTF-8 (byte 0xff at offset 7)"),
        ('{"a": 1'.encode("utf-16"), "not UTF-8"),
        (b"{this is not json", "not JSON (Expecting property name"),
        (b" " * 101, "101 bytes, over the 100 read as JSON"),
    ],
)
def test_the_guarded_decoder_refuses_in_one_line(data: bytes, said: str) -> None:
    with pytest.raises(guarded_json.JsonRefused) as refused:
        guarded_json.loads(data, what="the answer", max_bytes=100 if len(data) == 101 else 1 << 20)
    assert str(refused.value).startswith("the answer: ") and said in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_guarded_decoder_reads_json_as_json() -> None:
    assert guarded_json.loads(b"[" * 64 + b"]" * 64) is not None
    assert guarded_json.loads('\ufeff{"a": ["[[[[", {"b": null}]}'.encode()) == {
        "a": ["[[[[", {"b": None}]
    }
    assert guarded_json.loads('{"é": 1}') == {"é": 1}
