"""The composite variants ``live`` and ``lenient``: each behaviour they add, and that the default
stub does not have it; the registries that carry each switch's checks.

Each test runs against in-process stubs (``inproc``), one with the variant and one without, so
the assertion "the default does not do this" is made on the same request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from store_checks import count_transactions
from stubkit import AGENTS_REFRESH_PATH, InProcessStub, new_number, refresh_url

from paysuite_core.tokens import AUTHORIZE_PATH
from stub_server.fault_catalog import (
    BEHAVIOURS,
    FAULTS,
    VARIANTS,
    UnknownSwitchError,
    expand_variants,
)

Make = Callable[..., InProcessStub]
TWO_MERCHANTS = (("DEMO01", "read-write"), ("DEMO02", "read-write"))
NANO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$")
NANO_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}[+-]\d{2}:\d{2}$")
MICRO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
ENVELOPE = {"amount", "client", "event-kind", "kind", "limit", "offset", "ref", "status", "total"}


def _bare(s: InProcessStub) -> httpx.Response:
    return s.api.http.get("/events/transactions", headers={"Authorization": s.api.token()})


def _post_raw(s: InProcessStub, path: str, content: bytes, headers: dict[str, str]) -> Any:
    return s.api.http.post(path, content=content, headers={**s.api.headers(), **headers})


# -- registries ---------------------------------------------------------------------------


def test_fault_registry_carries_the_checks() -> None:
    assert FAULTS["idempotency-ignored"].trips == {
        *("IDEM-001", "IDEM-002", "IDEM-004", "IDEM-005"),
        *("IDEM-008", "IDEM-009", "IDEM-013"),  # a key in both channels; the query key's race
        "IDEM-016",  # a non-ASCII query key, reused: executed again
    }
    for name, fault in FAULTS.items():
        assert fault.description, name
        assert fault.load_only == (not fault.trips), name  # each fault trips a check or is load's
    assert {n for n, f in FAULTS.items() if f.load_only} == {"drop-acknowledged", "early-expiry"}


def test_variant_registry_and_expansion() -> None:
    for name, v in VARIANTS.items():
        if not v.parts:  # each told apart: by a reference verdict, or by a note (never both)
            assert v.description and (v.differs_on or v.noted_by), name
            assert not v.differs_on & v.noted_by, name
    assert VARIANTS["revoke-on-refresh"].noted_by == {"AUTH-009"}
    assert not VARIANTS["revoke-on-refresh"].differs_on
    for name in ("live", "lenient"):
        parts = VARIANTS[name].parts
        union = frozenset().union(*((VARIANTS | BEHAVIOURS)[p].differs_on for p in parts))
        assert VARIANTS[name].differs_on == union
    live = expand_variants(["live"])
    assert {"created-201", "successful-status", "short-refresh-only", "go-error-body"} <= live
    assert "expires-string" not in live and "no-rotation" not in live
    assert "events-oldest-first" in expand_variants(["lenient"])
    assert expand_variants(["no-rotation"]) == {"no-rotation"}
    assert not BEHAVIOURS.keys() & VARIANTS.keys()  # behaviours are not offered on their own
    with pytest.raises(UnknownSwitchError):
        expand_variants(["nope"])


def test_composites_turn_their_parts_on(inproc: Make) -> None:
    """``live`` behaves as its parts do, through the same switches."""
    s = inproc(variants=["live"])
    pair = s.api.pair()
    assert isinstance(pair["expires"], int)  # the default already, as the live service
    assert s.api.http.get(refresh_url(pair["refresh"], AGENTS_REFRESH_PATH)).status_code == 404
    assert s.api.http.get(refresh_url(pair["refresh"])).status_code == 200
    created = s.api.create()
    assert created.status_code == 201
    ref = created.json()["ref"]
    assert s.api.sandbox(ref, "confirm").json()["status"] == "successful"
    assert s.api.find(ref).json()["status"] == "successful"
    error = s.api.create(amount=1)
    assert error.status_code == 400 and set(error.json()) == {"status", "message"}
    assert set(s.api.http.get("/nope").json()) == {"status", "message"}


# -- bare tokens (live and lenient) -------------------------------------------------------


@pytest.mark.parametrize("variant", ["live", "lenient"])
def test_bare_token_accepted(inproc: Make, variant: str) -> None:
    s = inproc(variants=[variant])
    assert _bare(s).status_code == 200
    token = s.api.token()
    for header in ("Bearer", "Basic abc", f"Token {token}", "", "not-a-jwt"):
        response = s.api.http.get("/events/transactions", headers={"Authorization": header})
        assert response.status_code == 401, header
    # The variants keep it even where the stub's own default is turned off (--strict-auth).
    strict = inproc(variants=[variant], strict_auth=True)
    assert _bare(strict).status_code == 200
    refused = _bare(inproc(strict_auth=True))
    assert refused.status_code == 401 and refused.json()["code"] == "missing_token"


# -- live ---------------------------------------------------------------------------------


def test_live_nanosecond_timestamps(inproc: Make) -> None:
    s = inproc(variants=["live"])
    created = s.api.create().json()
    assert NANO_UTC.match(created["created_at"]), created
    ref = created["ref"]
    assert NANO_OFFSET.match(s.api.find(ref).json()["timestamp"])
    s.api.sandbox(ref, "confirm")
    events = s.api.events(ref=ref).json()["transactions"]
    assert len(events) == 2
    for event in events:
        for text in (event["created_at"], event["data"]["created_at"]):
            assert NANO_UTC.match(text), event
    processed = next(e for e in events if e["event_kind"] == "transaction:processed")
    assert NANO_UTC.match(processed["data"]["processed_at"])
    # one instant renders as one text wherever it appears, and reads back as a from/to bound
    assert {e["data"]["created_at"] for e in events} == {created["created_at"]}
    bounded = s.api.events(ref=ref, **{"from": created["created_at"], "to": created["created_at"]})
    assert bounded.json()["total"] == 1
    default = inproc().api.create().json()
    assert MICRO_UTC.match(default["created_at"])


def test_live_envelope_omits_empty_keys(inproc: Make) -> None:
    s = inproc(variants=["live"])
    empty = s.api.events().json()
    assert set(empty) == {"limit", "offset", "total", "transactions"}
    assert (empty["limit"], empty["offset"], empty["total"]) == (20, 0, 0)
    number = new_number()
    s.api.create(number=number)
    filtered = s.api.events(client=number, kind="CASHIN").json()
    assert set(filtered) == {"amount", "client", "kind", "limit", "offset", "total", "transactions"}
    assert filtered["client"] == number and filtered["amount"] == 100
    assert set(inproc().api.events().json()) == ENVELOPE | {"transactions"}


# -- lenient ------------------------------------------------------------------------------


def test_lenient_ignores_unknown_body_fields(inproc: Make) -> None:
    """The default ignores them too (RC-30): the lenient variant changes nothing here."""
    for s in (inproc(variants=["lenient"]), inproc()):
        body = {"amount": 100, "number": new_number(), "currency": "RWF", "extra": {"a": [1]}}
        response = s.api.http.post("/transactions/cashin", json=body, headers=s.api.headers())
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("query", [{"status": "bogus"}, {"kind": "x"}, {"event-kind": "y"}])
def test_lenient_unknown_filter_values_give_an_empty_list(
    inproc: Make, query: dict[str, str]
) -> None:
    s = inproc(variants=["lenient"])
    s.api.create()
    response = s.api.events(**query)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == 0 and body["transactions"] == [] and body["amount"] == 0
    name, value = next(iter(query.items()))
    assert body[name] == value
    default = inproc().api.events(**query)
    assert default.status_code == 400 and default.json()["code"] == "validation_error"


def test_lenient_unreadable_filter_value(inproc: Make) -> None:
    """Bytes that are not UTF-8 in a filter value: an empty list, not a 500."""
    s = inproc(variants=["lenient"])
    response = s.api.http.get(
        "/events/transactions?status=%ff&kind=%ed%a0%80", headers=s.api.headers()
    )
    assert response.status_code == 200, response.text
    assert response.json()["total"] == 0


def test_lenient_empty_key_counts_as_absent(inproc: Make) -> None:
    s = inproc(variants=["lenient"])
    number = new_number()
    for _ in range(2):
        assert s.api.create(number=number, key="").status_code == 200
    reply = s.api.http.post(
        "/transactions/cashin?Idempotency-Key=",
        json={"amount": 100, "number": number},
        headers=s.api.headers(),
    )
    assert reply.status_code == 200
    assert s.api.events(client=number).json()["total"] == 3
    # an empty header beside a query key: the query key scopes the creation
    url = "/transactions/cashin?Idempotency-Key=q-key"
    headers = s.api.headers(**{"Idempotency-Key": ""})
    body = {"amount": 100, "number": number}
    assert s.api.http.post(url, json=body, headers=headers).status_code == 200
    assert s.api.http.post(url, json=body, headers=headers).status_code == 409
    default = inproc().api.create(key="")
    assert default.status_code == 400 and default.json()["code"] == "invalid_idempotency_key"


@pytest.mark.parametrize("content_type", ["AAA", "text/plain", None])
def test_lenient_accepts_any_media_type(inproc: Make, content_type: str | None) -> None:
    s = inproc(variants=["lenient"])
    headers = {} if content_type is None else {"Content-Type": content_type}
    body = f'{{"amount": 100, "number": "{new_number()}"}}'.encode()
    response = _post_raw(s, "/transactions/cashin", body, headers)
    assert response.status_code == 200, response.text
    app = s.api.app()
    secret = f'{{"client_id": "{app.client_id}", "client_secret": "{app.client_secret}"}}'
    authorized = s.api.http.post(AUTHORIZE_PATH, content=secret.encode(), headers=headers)
    assert authorized.status_code == 200, authorized.text
    # the body is still parsed as JSON: anything else is still a 400
    garbage = _post_raw(s, "/transactions/cashin", b"amount=100&number=0781234567", headers)
    assert garbage.status_code == 400 and garbage.json()["code"] == "malformed_json"
    default = _post_raw(inproc(), "/transactions/cashin", body, headers)
    assert default.status_code == 415 and default.json()["code"] == "unsupported_media_type"


def test_lenient_default_page_size_and_order(inproc: Make) -> None:
    s = inproc(variants=["lenient"])
    default = inproc()
    number = new_number()
    refs = [s.api.create(number=number).json()["ref"] for _ in range(12)]
    for _ in range(12):
        default.api.create(number=number)
    page = s.api.events(client=number).json()
    assert page["limit"] == 10 and page["total"] == 12
    assert [e["data"]["ref"] for e in page["transactions"]] == refs[:10]  # oldest first
    assert len(s.api.events(client=number, limit=12).json()["transactions"]) == 12
    other = default.api.events(client=number).json()
    assert other["limit"] == 20 and len(other["transactions"]) == 12


def test_lenient_keys_are_global(inproc: Make) -> None:
    s = inproc(variants=["lenient"], apps=TWO_MERCHANTS)
    default = inproc(apps=TWO_MERCHANTS)
    for stub in (s, default):
        first = stub.api.app(merchant="DEMO01")
        assert stub.api.create(app=first, key="shared-key").status_code == 200
        assert stub.api.create(app=first, key="shared-key").status_code == 409
    reused = s.api.create(app=s.api.app(merchant="DEMO02"), key="shared-key")
    assert reused.status_code == 409 and reused.json()["code"] == "idempotency_key_reused"
    assert s.call(count_transactions, s.stub.store, "DEMO02") == 0
    other = default.api.create(app=default.api.app(merchant="DEMO02"), key="shared-key")
    assert other.status_code == 200


# -- still conformant ---------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["live", "lenient"])
def test_composites_keep_the_documents_rules(inproc: Make, variant: str) -> None:
    s = inproc(variants=[variant])
    ok = 201 if variant == "live" else 200
    number = new_number()
    assert s.api.create(number=number, key="k1").status_code == ok
    assert s.api.create("cashout", number=number, key="k1").status_code == 409
    created = s.api.events(client=number, **{"event-kind": "transaction:created"}).json()
    assert created["total"] == 1  # the reused key executed nothing
    assert s.api.create(key="k" * 33).status_code == 400
    assert s.api.create(key="k" * 32).status_code == ok
    for body in ({"number": new_number()}, {"amount": 100}):
        response = s.api.http.post("/transactions/cashin", json=body, headers=s.api.headers())
        assert response.status_code == 400
    for headers in ({}, {"Authorization": "Bearer x.y.z"}, {"Authorization": "x.y.z"}):
        assert s.api.http.get("/events/transactions", headers=headers).status_code == 401
