"""Cashin and cashout: the creation response, validation naming the field, idempotency."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import UTC, datetime

import httpx
import pytest
from stubkit import Api, new_number

UTC_MICROS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.mark.parametrize(("path", "kind"), [("cashin", "CASHIN"), ("cashout", "CASHOUT")])
def test_creation_response(api: Api, path: str, kind: str) -> None:
    before = datetime.now(UTC)
    response = api.create(path, amount=1234, headers={"X-Webhook-Mode": "development"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"amount", "created_at", "kind", "ref", "status"}
    assert body["amount"] == 1234 and body["kind"] == kind and body["status"] == "pending"
    assert str(uuid.UUID(body["ref"])) == body["ref"]
    assert UTC_MICROS.match(body["created_at"]), body["created_at"]
    created = datetime.fromisoformat(body["created_at"])
    assert before <= created <= datetime.now(UTC)


def test_refs_are_unique(api: Api) -> None:
    refs = {api.create().json()["ref"] for _ in range(20)}
    assert len(refs) == 20


def test_fractional_amount_and_fee(api: Api) -> None:
    body = api.create(amount=150.5).json()
    assert body["amount"] == 150.5
    found = api.find(body["ref"]).json()
    assert found["fee"] == round(150.5 * 0.023, 2)


BAD_BODIES = [
    ({"number": "0781234567"}, "amount"),
    ({"amount": "100", "number": "0781234567"}, "amount"),
    ({"amount": True, "number": "0781234567"}, "amount"),
    ({"amount": None, "number": "0781234567"}, "amount"),
    ({"amount": 99, "number": "0781234567"}, "amount"),
    ({"amount": 99.99, "number": "0781234567"}, "amount"),
    ({"amount": 10_000_001, "number": "0781234567"}, "amount"),
    ({"amount": 10**400, "number": "0781234567"}, "amount"),
    ({"amount": [100], "number": "0781234567"}, "amount"),
    ({"amount": 100}, "number"),
    ({"amount": 100, "number": 781234567}, "number"),
    ({"amount": 100, "number": "0771234567"}, "number"),
    ({"amount": 100, "number": "078123456"}, "number"),
    ({"amount": 100, "number": "0781234567\n"}, "number"),
    ({"amount": 100, "number": "078١٢٣٤٥٦٧"}, "number"),
    ({"amount": 100, "number": ""}, "number"),
]


@pytest.mark.parametrize(("payload", "field"), BAD_BODIES)
def test_validation_names_the_field(api: Api, payload: dict, field: str) -> None:
    response = api.http.post("/transactions/cashin", json=payload, headers=api.headers())
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    assert body["message"].startswith(f"{field}:"), body["message"]


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_non_finite_amounts(api: Api, literal: bytes) -> None:
    content = b'{"amount": ' + literal + b', "number": "0781234567"}'
    response = api.http.post(
        "/transactions/cashin",
        content=content,
        headers=api.headers(**{"Content-Type": "application/json"}),
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("amount:")


@pytest.mark.parametrize("number", ["0781234567", "+250781234567", "250721234567", "0791234567"])
def test_accepted_numbers(api: Api, number: str) -> None:
    assert api.create(number=number).status_code == 200


def test_bounds_are_inclusive_and_unknown_fields_ignored(api: Api) -> None:
    assert api.create(amount=100).status_code == 200
    assert api.create(amount=10_000_000).status_code == 200
    response = api.http.post(
        "/transactions/cashin",
        json={"amount": 100, "number": new_number(), "currency": "RWF", "x": {"y": 1}},
        headers=api.headers(),
    )
    assert response.status_code == 200


def test_webhook_mode_bound(api: Api) -> None:
    response = api.create(headers={"X-Webhook-Mode": "x" * 65})
    assert response.status_code == 400
    assert response.json()["message"].startswith("X-Webhook-Mode:")
    assert api.create(headers={"X-Webhook-Mode": "production"}).status_code == 200


def _count(api: Api, number: str) -> tuple[int, int]:
    """(transactions created, created events) for a customer number."""
    body = api.events(client=number, **{"event-kind": "transaction:created"}, limit=100).json()
    refs = {event["data"]["ref"] for event in body["transactions"]}
    return len(refs), body["total"]


def test_reused_key_is_rejected_whatever_the_body(api: Api) -> None:
    key = uuid.uuid4().hex
    number = new_number()
    first = api.create("cashin", key=key, number=number)
    assert first.status_code == 200
    for kind, amount in (("cashin", 100), ("cashout", 100), ("cashin", 5000)):
        again = api.create(kind, key=key, number=number, amount=amount)
        assert again.status_code == 409, again.text
        assert again.json()["code"] == "idempotency_key_reused"
    assert _count(api, number) == (1, 1)


def test_key_in_query_parameter(api: Api) -> None:
    key = uuid.uuid4().hex
    number = new_number()
    first = api.create(number=number, params={"Idempotency-Key": key})
    assert first.status_code == 200
    again = api.create("cashout", number=number, params={"Idempotency-Key": key})
    assert again.status_code == 409
    # the header form of the same key is the same key
    assert api.create(number=number, key=key).status_code == 409
    assert _count(api, number) == (1, 1)


def test_header_wins_over_query(api: Api) -> None:
    header_key, query_key = uuid.uuid4().hex, uuid.uuid4().hex
    assert api.create(key=header_key, params={"Idempotency-Key": query_key}).status_code == 200
    assert api.create(key=query_key).status_code == 200  # the query key was not recorded
    assert api.create(key=header_key).status_code == 409


def test_long_query_key_is_rejected_even_beside_a_valid_header(api: Api) -> None:
    response = api.create(key=uuid.uuid4().hex, params={"Idempotency-Key": "q" * 33})
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_idempotency_key"


def test_omitted_key_never_collides(api: Api) -> None:
    number = new_number()
    for _ in range(3):
        assert api.create(number=number).status_code == 200
    assert _count(api, number) == (3, 3)


@pytest.mark.parametrize(
    ("key", "status"), [("k" * 32, 200), ("k" * 33, 400), ("é" * 32, 200), ("", 400)]
)
def test_key_length(api: Api, key: str, status: int) -> None:
    unique = key if key == "" else key[:-6] + uuid.uuid4().hex[:6]
    response = api.create(params={"Idempotency-Key": unique})
    assert response.status_code == status, response.text
    if status == 400:
        assert response.json()["code"] == "invalid_idempotency_key"
    if len(key) == 33:
        header = api.create(key=uuid.uuid4().hex + "x")
        assert header.status_code == 400


def test_keys_are_scoped_per_merchant(api: Api) -> None:
    key = uuid.uuid4().hex
    assert api.create(key=key).status_code == 200
    other = api.app("read-write", "DEMO02")
    assert api.create(key=key, app=other).status_code == 200
    assert api.create(key=key, app=other).status_code == 409


def test_invalid_request_does_not_burn_the_key(api: Api) -> None:
    key = uuid.uuid4().hex
    assert api.create(key=key, amount=1).status_code == 400
    assert api.create(key=key).status_code == 200


async def _race(api: Api, path: str, n: int, key: str, number: str) -> list[int]:
    """``n`` simultaneous creations with one key; ``path`` "mixed" alternates cashin/cashout."""
    headers = api.headers(**{"Idempotency-Key": key})
    limits = httpx.Limits(max_connections=n)
    paths = [path] * n
    if path == "mixed":
        paths = ["/transactions/cashin", "/transactions/cashout"] * (n // 2)
    async with httpx.AsyncClient(base_url=api.base_url, timeout=30, limits=limits) as client:
        responses = await asyncio.gather(
            *(
                client.post(p, json={"amount": 100, "number": number}, headers=headers)
                for p in paths
            )
        )
    return [r.status_code for r in responses]


@pytest.mark.parametrize("path", ["/transactions/cashin", "mixed"])
def test_hundred_way_race_creates_one_transaction(api: Api, path: str) -> None:
    number = new_number()
    statuses = asyncio.run(_race(api, path, 100, uuid.uuid4().hex, number))
    assert statuses.count(200) == 1, statuses
    assert statuses.count(409) == 99
    assert _count(api, number) == (1, 1)
