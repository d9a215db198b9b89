"""A body whose Content-Length is over the stub's limit is answered at once, before a byte of it
is read, and ``Expect: 100-continue`` does not invite it (no ``100 Continue``)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from rawhttp import send_raw
from stubkit import Api

from paysuite_core.launcher import RunningStub
from paysuite_core.tokens import AUTHORIZE_PATH

HUGE = 100_000_000


def _port(stub: RunningStub) -> int:
    return int(urlsplit(stub.root_url).port or 0)


def _head(path: str, length: int, *, expect: bool, token: str = "") -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    if expect:
        lines.append("Expect: 100-continue")
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("expect", [True, False], ids=["expect-100-continue", "plain"])
def test_an_over_size_authorize_is_413_at_once(stub: RunningStub, expect: bool) -> None:
    answer = send_raw(_port(stub), _head(f"/api{AUTHORIZE_PATH}", HUGE, expect=expect), linger_s=3)
    assert answer.status == 413 and answer.interim == []
    assert answer.json()["code"] == "payload_too_large"
    assert answer.first_byte_s < 2  # not after the body time-out
    # the unread body is not drained for the body time-out: the connection ends with the answer
    assert answer.headers.get("connection", "").lower() == "close" and answer.closed


def test_an_over_size_cashin_is_413_or_401_without_100_continue(
    stub: RunningStub, api: Api
) -> None:
    with_token = send_raw(
        _port(stub),
        _head("/api/transactions/cashin", HUGE, expect=True, token=api.token()),
    )
    assert with_token.status == 413 and with_token.interim == []
    without = send_raw(_port(stub), _head("/api/transactions/cashin", HUGE, expect=True))
    assert without.status == 401 and without.interim == []  # the order of answers is kept


def test_a_body_within_the_limit_is_still_invited(stub: RunningStub) -> None:
    body = b"{}"
    answer = send_raw(_port(stub), _head(f"/api{AUTHORIZE_PATH}", len(body), expect=True) + body)
    assert answer.interim == [100] and answer.status == 400  # {} is no credentials
