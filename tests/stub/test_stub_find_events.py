"""Find and the events list: fields, formats, filters, paging, ordering, merchant isolation."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from stubkit import Api, new_number

OFFSET_MICROS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+02:00$")
UTC_MICROS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_find_returns_the_lookup_fields(api: Api) -> None:
    number = new_number()
    created = api.create("cashout", amount=2500, number=number).json()
    response = api.find(created["ref"])
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "amount",
        "client",
        "fee",
        "kind",
        "merchant",
        "ref",
        "status",
        "timestamp",
    }
    assert body["amount"] == 2500 and body["client"] == number and body["kind"] == "CASHOUT"
    assert body["merchant"] == "DEMO01" and body["ref"] == created["ref"]
    assert body["status"] == "pending" and body["fee"] == round(2500 * 0.023, 2)
    assert OFFSET_MICROS.match(body["timestamp"]), body["timestamp"]
    assert datetime.fromisoformat(body["timestamp"]) == datetime.fromisoformat(
        created["created_at"]
    )


#: A UUID nobody issued (fixed: pytest-xdist's workers must collect the same parameters).
UNISSUED_REF = "4f9a2c1e-6b7d-4e8f-9a0b-1c2d3e4f5a6b"


@pytest.mark.parametrize("ref", [UNISSUED_REF, "not-a-uuid", "x" * 500, "%20"])
def test_find_unknown(api: Api, ref: str) -> None:
    response = api.find(ref)
    assert response.status_code == 404
    assert response.json()["code"] == "transaction_not_found"


def test_merchant_isolation(api: Api) -> None:
    other = api.app("read-write", "DEMO02")
    number = new_number()
    ref = api.create(app=other, number=number).json()["ref"]
    for app in api.applications:
        response = api.find(ref, app)
        assert response.status_code == (200 if app.merchant == "DEMO02" else 404)
        events = api.events(app, client=number).json()
        assert events["total"] == (1 if app.merchant == "DEMO02" else 0)
    everything = api.events(api.app("read"), limit=100).json()
    assert all(e["data"]["merchant"] == "DEMO01" for e in everything["transactions"])


def test_event_records_and_envelope(api: Api) -> None:
    number = new_number()
    created = api.create(amount=300, number=number).json()
    body = api.events(client=number).json()
    assert set(body) == {
        "amount", "client", "event-kind", "kind", "limit", "offset", "ref", "status", "total",
        "transactions",
    }  # fmt: skip
    assert body["client"] == number
    assert body["event-kind"] == body["kind"] == body["ref"] == body["status"] == ""
    assert body["limit"] == 20 and body["offset"] == 0 and body["total"] == 1
    assert body["amount"] == 300
    (event,) = body["transactions"]
    assert set(event) == {"event_id", "event_kind", "created_at", "data"}
    assert str(uuid.UUID(event["event_id"])) == event["event_id"]
    assert event["event_kind"] == "transaction:created"
    assert UTC_MICROS.match(event["created_at"])
    assert event["data"] == {
        "ref": created["ref"],
        "kind": "CASHIN",
        "fee": 6.9,
        "merchant": "DEMO01",
        "client": number,
        "amount": 300,
        "status": "pending",
        "created_at": created["created_at"],
        "processed_at": None,
    }


@pytest.fixture(scope="module")
def population(api: Api) -> dict:
    """Six transactions of one customer: 3 cashin (1 confirmed, 1 cancelled), 3 cashout."""
    number = new_number()
    refs = []
    for kind, amount in (("cashin", 100), ("cashin", 200), ("cashin", 300)):
        refs.append(api.create(kind, amount=amount, number=number).json()["ref"])
    for amount in (400, 500, 600):
        refs.append(api.create("cashout", amount=amount, number=number).json()["ref"])
    assert api.sandbox(refs[0], "confirm").status_code == 200
    assert api.sandbox(refs[1], "cancel").status_code == 200
    return {"number": number, "refs": refs}


@pytest.mark.parametrize(
    ("filters", "total", "amount"),
    [
        ({}, 8, 2400),
        ({"kind": "CASHIN"}, 5, 900),
        ({"kind": "CASHOUT"}, 3, 1500),
        ({"status": "pending"}, 6, 2100),
        ({"status": "success"}, 1, 100),
        ({"status": "successful"}, 1, 100),
        ({"status": "failed"}, 1, 200),
        ({"event-kind": "transaction:processed"}, 2, 300),
        ({"event-kind": "transaction:created", "kind": "CASHOUT"}, 3, 1500),
    ],
)
def test_filters(api: Api, population: dict, filters: dict, total: int, amount: int) -> None:
    body = api.events(client=population["number"], **filters).json()
    assert body["total"] == total and body["amount"] == amount
    assert len(body["transactions"]) == total
    for name, value in filters.items():
        assert body[name] == value
    for event in body["transactions"]:
        data = event["data"]
        assert data["client"] == population["number"]
        if "kind" in filters:
            assert data["kind"] == filters["kind"]
        if "status" in filters:
            assert data["status"] == filters["status"].replace("successful", "success")
        if "event-kind" in filters:
            assert event["event_kind"] == filters["event-kind"]


def test_ref_filter_and_processed_event(api: Api, population: dict) -> None:
    ref = population["refs"][0]
    body = api.events(ref=ref).json()
    assert body["ref"] == ref and body["total"] == 2
    processed, created = body["transactions"]  # newest first
    assert processed["event_kind"] == "transaction:processed"
    assert created["event_kind"] == "transaction:created"
    assert processed["data"]["status"] == "success"
    assert processed["data"]["processed_at"] >= processed["data"]["created_at"]
    assert processed["created_at"] == processed["data"]["processed_at"]
    assert processed["data"]["created_at"] == created["data"]["created_at"]


def test_paging_and_newest_first(api: Api, population: dict) -> None:
    number = population["number"]
    whole = api.events(client=number, limit=100).json()["transactions"]
    stamps = [e["created_at"] for e in whole]
    assert stamps == sorted(stamps, reverse=True)
    pages = []
    for offset in range(0, 8, 3):
        body = api.events(client=number, limit=3, offset=offset).json()
        assert body["limit"] == 3 and body["offset"] == offset and body["total"] == 8
        pages.extend(body["transactions"])
    assert [e["event_id"] for e in pages] == [e["event_id"] for e in whole]
    beyond = api.events(client=number, offset=10**30).json()
    assert beyond["transactions"] == [] and beyond["total"] == 8


def test_date_range(api: Api, population: dict) -> None:
    number = population["number"]
    today = datetime.now(UTC).date()
    assert api.events(client=number, **{"from": today.isoformat()}).json()["total"] == 8
    assert api.events(client=number, to=today.isoformat()).json()["total"] == 8
    tomorrow = (today + timedelta(days=1)).isoformat()
    assert api.events(client=number, **{"from": tomorrow}).json()["total"] == 0
    yesterday = (today - timedelta(days=1)).isoformat()
    assert api.events(client=number, to=yesterday).json()["total"] == 0
    whole = api.events(client=number, limit=100).json()["transactions"]
    middle = whole[3]["created_at"]
    newer = api.events(client=number, **{"from": middle}).json()
    assert newer["total"] == 4
    assert api.events(client=number, to=middle).json()["total"] == 5


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("limit", "0"),
        ("limit", "101"),
        ("limit", "abc"),
        ("limit", "-1"),
        ("limit", "2.5"),
        ("offset", "-1"),
        ("offset", "x"),
        ("status", "done"),
        ("kind", "cashin"),
        ("event-kind", "transaction:deleted"),
        ("from", "yesterday"),
        ("to", "2026-13-45"),
    ],
)
def test_bad_query_parameters(api: Api, param: str, value: str) -> None:
    response = api.events(**{param: value})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert body["message"].startswith(f"{param}:")


def test_limit_bounds_accepted(api: Api) -> None:
    assert api.events(limit=1).json()["limit"] == 1
    assert len(api.events(limit=100).json()["transactions"]) <= 100


def test_default_and_maximum_page_sizes(inproc) -> None:
    """With 105 events: no limit gives the newest 20, limit=100 gives 100, the rest by offset."""
    server = inproc()
    api = server.api
    refs = [api.create(number=new_number()).json()["ref"] for _ in range(105)]
    default = api.events().json()
    assert default["limit"] == 20 and default["offset"] == 0 and default["total"] == 105
    assert [e["data"]["ref"] for e in default["transactions"]] == refs[::-1][:20]
    full = api.events(limit=100).json()
    assert len(full["transactions"]) == 100
    assert [e["data"]["ref"] for e in full["transactions"]] == refs[::-1][:100]
    tail = api.events(limit=100, offset=100).json()
    assert [e["data"]["ref"] for e in tail["transactions"]] == refs[::-1][100:]
    assert api.events(limit=101).status_code == 400


def test_find_timestamp_follows_the_configured_offset(inproc) -> None:
    server = inproc(utc_offset="-05:30")
    created = server.api.create().json()
    stamp = server.api.find(created["ref"]).json()["timestamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}-05:30", stamp), stamp
    assert datetime.fromisoformat(stamp) == datetime.fromisoformat(created["created_at"])
