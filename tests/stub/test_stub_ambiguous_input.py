"""Ambiguous input is refused, and fractional amounts add up as decimals.

A header or query parameter the stub reads one value of, sent twice, is a 400
``ambiguous_parameter`` naming it (RC-41), as two Idempotency-Keys already are (RC-39): taking
the first copy would act on a guess. And the events list's ``amount`` (RC-27) is the decimal sum
of the amounts, not a sum of doubles that drifts in the last digits.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest
from store_checks import count_transactions
from stubkit import InProcessStub, new_number

from paysuite_core.tokens import AUTHORIZE_PATH
from stub_server.store.decimal_sum import DecimalSum, combine


def _refused(response: httpx.Response, name: str, where: str) -> None:
    """The answer is the catalogue's 400 for ``name`` sent twice as a ``where``."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "ambiguous_parameter", body
    assert body["message"] == f"{name}: sent 2 times as a {where}; send it once", body


def _two_tokens(server: InProcessStub) -> list[tuple[str, str]]:
    """Two Authorization headers, each of them valid on its own (two merchants' tokens)."""
    first, second = server.api.applications[:2]
    return [
        ("Authorization", f"Bearer {server.api.token(first)}"),
        ("Authorization", f"Bearer {server.api.token(second)}"),
    ]


# -- headers ------------------------------------------------------------------------------------
def test_two_webhook_modes_are_refused_and_nothing_is_created(inproc) -> None:
    server = inproc()
    headers = [
        *server.api.headers().items(),
        ("X-Webhook-Mode", "development"),
        ("X-Webhook-Mode", "production"),
    ]
    body = {"amount": 100, "number": new_number()}
    _refused(
        server.api.http.post("/transactions/cashin", json=body, headers=headers),
        "X-Webhook-Mode",
        "header",
    )
    assert server.call(count_transactions, server.stub.store) == 0
    # one mode is still taken
    one = server.api.create(headers={"X-Webhook-Mode": "production"})
    assert one.status_code == 200, one.text


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/transactions/cashin", {"amount": 100, "number": "0781234567"}),
        ("POST", "/transactions/cashout", {"amount": 100, "number": "0781234567"}),
        ("GET", "/transactions/find/00000000-0000-4000-8000-000000000000", None),
        ("GET", "/events/transactions", None),
        ("GET", "/transactions/list", None),
        ("GET", "/merchants/me", None),
    ],
)
def test_two_authorization_headers_are_refused(
    inproc, method: str, path: str, body: dict[str, Any] | None
) -> None:
    server = inproc()
    response = server.api.http.request(method, path, json=body, headers=_two_tokens(server))
    _refused(response, "Authorization", "header")
    assert server.call(count_transactions, server.stub.store) == 0


# -- query parameters ---------------------------------------------------------------------------
EVENT_PARAMETERS = [
    ("status", "success", "failed"),
    ("client", "0781234567", "0781234568"),
    ("ref", "00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000001"),
    ("kind", "CASHIN", "CASHOUT"),
    ("event-kind", "transaction:created", "transaction:processed"),
    ("from", "2026-01-01", "2026-02-01"),
    ("to", "2026-01-01", "2026-02-01"),
    ("limit", "1", "100"),
    ("offset", "0", "5"),
]


@pytest.mark.parametrize(("name", "first", "second"), EVENT_PARAMETERS)
def test_a_list_parameter_sent_twice_is_refused(inproc, name: str, first: str, second: str) -> None:
    server = inproc()
    headers = server.api.headers()
    for path in ("/events/transactions", "/transactions/list"):
        if name == "event-kind" and path == "/transactions/list":
            continue  # not a filter of the transactions list: not read there
        twice = server.api.http.get(path, headers=headers, params=[(name, first), (name, second)])
        _refused(twice, name, "query parameter")
        same = server.api.http.get(path, headers=headers, params=[(name, first), (name, first)])
        _refused(same, name, "query parameter")  # even the same value twice: send it once
        once = server.api.http.get(path, headers=headers, params=[(name, first)])
        assert once.status_code == 200, once.text


def test_a_repeated_parameter_the_stub_does_not_read_is_ignored(inproc) -> None:
    server = inproc()
    response = server.api.http.get(
        "/events/transactions",
        headers=server.api.headers(),
        params=[("utm", "a"), ("utm", "b"), ("status", "pending")],
    )
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "pending"


@pytest.mark.parametrize("name", ["status", "ref", "event_id", "limit", "offset"])
def test_the_delivery_log_refuses_a_parameter_sent_twice(inproc, name: str) -> None:
    server = inproc()
    values = {"status": "delivered", "limit": "1", "offset": "0"}
    value = values.get(name, "x")
    response = httpx.get(
        f"{server.root_url}/_sandbox/webhooks/deliveries",
        params=[(name, value), (name, value)],
        timeout=15,
    )
    _refused(response, name, "query parameter")


# -- one meaning to the last byte (RC-42) -------------------------------------------------------
def _duplicate_refused(response: httpx.Response, key: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "duplicate_key", body
    assert repr(key) in body["message"], body


@pytest.mark.parametrize("kind", ["cashin", "cashout"])
def test_a_body_naming_a_key_twice_is_refused_and_creates_nothing(inproc, kind: str) -> None:
    server = inproc()
    number = new_number()
    json_headers = server.api.headers(**{"Content-Type": "application/json"})
    raw = f'{{"amount":100,"amount":200,"number":"{number}"}}'
    response = server.api.http.post(f"/transactions/{kind}", content=raw, headers=json_headers)
    _duplicate_refused(response, "amount")
    assert server.call(count_transactions, server.stub.store) == 0
    nested = f'{{"amount":100,"number":"{number}","meta":{{"a":1,"a":2}}}}'
    response = server.api.http.post(f"/transactions/{kind}", content=nested, headers=json_headers)
    _duplicate_refused(response, "a")  # an unknown field is ignored, but not an ambiguous one
    once = f'{{"amount":100,"number":"{number}"}}'
    assert (
        server.api.http.post(
            f"/transactions/{kind}", content=once, headers=json_headers
        ).status_code
        == 200
    )


def test_authorize_with_the_secret_twice_is_refused_even_when_the_last_is_right(inproc) -> None:
    server = inproc()
    app = server.api.app()
    for first, last in (("wrong", app.client_secret), (app.client_secret, "wrong")):
        raw = (
            f'{{"client_id":"{app.client_id}","client_secret":"{first}","client_secret":"{last}"}}'
        )
        response = server.api.http.post(
            AUTHORIZE_PATH, content=raw, headers={"Content-Type": "application/json"}
        )
        _duplicate_refused(response, "client_secret")
        assert "access" not in response.json()


def test_a_query_key_that_is_not_utf8_is_refused_like_such_a_header_key(inproc) -> None:
    server = inproc()
    body = {"amount": 100, "number": new_number()}
    for raw_key in ("ab%FFcd", "ab%FEcd"):
        response = server.api.http.post(
            f"/transactions/cashin?Idempotency-Key={raw_key}",
            json=body,
            headers=server.api.headers(),
        )
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "invalid_idempotency_key", response.text
        assert "UTF-8" in response.json()["message"]
    assert server.call(count_transactions, server.stub.store) == 0
    header = server.api.http.post(
        "/transactions/cashin",
        json=body,
        headers={**server.api.headers(), "Idempotency-Key": b"ab\xffcd"},  # type: ignore[dict-item]
    )
    assert header.status_code == 400 and header.json()["code"] == "invalid_idempotency_key"
    # valid UTF-8 escapes are a key, and two different ones are two keys
    for raw_key in ("cl%C3%A9-1", "cl%C3%A9-2"):
        response = server.api.http.post(
            f"/transactions/cashin?Idempotency-Key={raw_key}",
            json=body,
            headers=server.api.headers(),
        )
        assert response.status_code == 200, response.text


# -- fractional amounts -------------------------------------------------------------------------
#: Amounts whose binary sum drifts: adding the doubles gives 400.21000000000015.
DRIFTING = [100.01, 100.1, 100.1, 100.0000000000001]


@pytest.mark.parametrize(
    ("amounts", "total"),
    [
        ([100.0000000000001] * 6, 600.0000000000006),
        (DRIFTING, 400.2100000000001),
        ([100.5, 100.5, 100], 301.0),  # reals and an integer: a number with a fraction
        ([100, 250], 350),  # integers only: an exact integer, no fraction
    ],
)
def test_the_events_amount_is_the_decimal_sum(inproc, amounts: list[Any], total: Any) -> None:
    server = inproc()
    number = new_number()
    for amount in amounts:
        assert server.api.create(amount=amount, number=number).status_code == 200
    for params in ({"client": number}, {}, {"kind": "CASHIN"}):
        body = server.api.events(**params).json()
        assert body["total"] == len(amounts)
        assert body["amount"] == total and type(body["amount"]) is type(total), (params, body)
    assert sum(DRIFTING) != 400.2100000000001  # what a sum of doubles would have answered


def test_decimal_sum_adds_the_written_decimals_exactly() -> None:
    aggregate = DecimalSum()
    assert aggregate.finalize() is None
    for value in [*DRIFTING, None]:
        aggregate.step(value)
    assert Decimal(aggregate.finalize() or "") == Decimal("400.2100000000001")
    assert combine(7, None) == 7
    assert combine("18446744073709551616", None) == 2**64  # past SQLite's integers, exact
    assert combine(1, "0.1") == 1.1
