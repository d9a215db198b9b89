"""Each fault switch breaks the rule it names, and each variant changes only what it names.

The conformance and load self-tests rely on these switches; a quick check per switch here means a
suite failing to notice a fault is the suite's problem, not a dead switch.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Callable
from datetime import datetime

import httpx
import jwt
import pytest
from stubkit import AGENTS_REFRESH_PATH, InProcessStub, new_number, refresh_url
from webhookkit import (
    FAST_RETRY,
    webhook_bad_signature,
    webhook_duplicate_new_id,
    webhook_live_signature_only,
    webhook_no_retry,
    webhook_out_of_order,
)

from stub_server.fault_catalog import FAULTS, VARIANTS

REQUIRED_FAULTS = {
    "idempotency-ignored", "idempotency-racy", "long-keys-accepted", "query-key-ignored",
    "tokens-never-expire", "refresh-as-access", "signature-not-verified", "wrong-kind",
    "refs-reused", "status-stuck-pending", "cancel-reads-success", "processed-event-missing",
    "filter-ignored", "cross-merchant-visible", "privileges-ignored", "server-error-on-malformed",
    "timestamp-format", "drop-acknowledged", "webhook-bad-signature", "webhook-no-retry",
    "webhook-duplicate-new-id", "webhook-out-of-order",
}  # fmt: skip
REQUIRED_VARIANTS = {
    "created-201", "successful-status", "short-refresh-only", "expires-string", "go-error-body",
    "no-rotation", "revoke-on-refresh", "events-oldest-first",
}  # fmt: skip
APPS = (("DEMO01", "read-write"), ("DEMO02", "read-write"), ("DEMO01", "read"))


def test_registries() -> None:
    assert REQUIRED_FAULTS <= FAULTS.keys()
    assert REQUIRED_VARIANTS <= VARIANTS.keys()
    assert all(fault.description for fault in FAULTS.values())
    assert all(variant.description for variant in VARIANTS.values())


def _created_count(s: InProcessStub, number: str) -> int:
    body = s.api.events(client=number, **{"event-kind": "transaction:created"}).json()
    return int(body["total"])


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _get_events(s: InProcessStub, token: str) -> httpx.Response:
    return s.api.http.get("/events/transactions", headers={"Authorization": f"Bearer {token}"})


def idempotency_ignored(s: InProcessStub) -> None:
    number = new_number()
    assert s.api.create(key="same", number=number).status_code == 200
    assert s.api.create(key="same", number=number).status_code == 200
    assert _created_count(s, number) == 2


def idempotency_racy(s: InProcessStub) -> None:
    number = new_number()
    assert s.api.create(key="seq", number=number).status_code == 200
    assert s.api.create(key="seq", number=number).status_code == 409
    headers = s.api.headers(**{"Idempotency-Key": "race"})
    race_number = new_number()

    async def race() -> list[int]:
        async with httpx.AsyncClient(base_url=s.base_url) as client:
            responses = await asyncio.gather(
                *(
                    client.post(
                        "/transactions/cashin",
                        json={"amount": 100, "number": race_number},
                        headers=headers,
                    )
                    for _ in range(20)
                )
            )
        return [r.status_code for r in responses]

    statuses = asyncio.run(race())
    assert statuses.count(200) > 1
    assert _created_count(s, race_number) > 1


def long_keys_accepted(s: InProcessStub) -> None:
    assert s.api.create(key="k" * 40).status_code == 200


def query_key_ignored(s: InProcessStub) -> None:
    number = new_number()
    for _ in range(2):
        assert s.api.create(number=number, params={"Idempotency-Key": "q"}).status_code == 200
    assert _created_count(s, number) == 2
    assert s.api.create(key="h").status_code == 200
    assert s.api.create(key="h").status_code == 409  # the header still works


def tokens_never_expire(s: InProcessStub) -> None:
    claims = jwt.decode(s.api.token(), options={"verify_signature": False})
    stale = {**claims, "iat": int(time.time()) - 7200, "exp": int(time.time()) - 3600}
    token = jwt.encode(stale, s.stub.tokens.key, algorithm="HS256")
    assert _get_events(s, token).status_code == 200


def early_expiry(s: InProcessStub) -> None:
    claims = jwt.decode(s.api.token(), options={"verify_signature": False})
    now = int(time.time())
    aged = jwt.encode({**claims, "iat": now - 10, "exp": now + 900}, s.stub.tokens.key, "HS256")
    refused = _get_events(s, aged)
    assert refused.status_code == 401, refused.text
    assert refused.json()["code"] == "token_expired"
    fresh = jwt.encode({**claims, "iat": now, "exp": now + 900}, s.stub.tokens.key, "HS256")
    assert _get_events(s, fresh).status_code == 200


def refresh_as_access(s: InProcessStub) -> None:
    assert _get_events(s, s.api.pair()["refresh"]).status_code == 200


def signature_not_verified(s: InProcessStub) -> None:
    header, payload, signature = s.api.token().split(".")
    assert _get_events(s, f"{header}.{payload}.{signature[::-1]}").status_code == 200
    none_header = _b64({"alg": "none", "typ": "JWT"})
    assert _get_events(s, f"{none_header}.{payload}.").status_code == 200


def wrong_kind(s: InProcessStub) -> None:
    created = s.api.create("cashout").json()
    assert created["kind"] == "CASHIN"
    assert s.api.find(created["ref"]).json()["kind"] == "CASHIN"


def refs_reused(s: InProcessStub) -> None:
    first = s.api.create().json()["ref"]
    second = s.api.create().json()["ref"]
    assert first == second


def status_stuck_pending(s: InProcessStub) -> None:
    ref = s.api.create().json()["ref"]
    response = s.api.sandbox(ref, "confirm")
    assert response.status_code == 200
    assert s.api.find(ref).json()["status"] == "pending"
    assert s.api.events(ref=ref).json()["total"] == 1


def cancel_reads_success(s: InProcessStub) -> None:
    ref = s.api.create().json()["ref"]
    assert s.api.sandbox(ref, "cancel").status_code == 200
    assert s.api.find(ref).json()["status"] == "success"


def processed_event_missing(s: InProcessStub) -> None:
    ref = s.api.create().json()["ref"]
    assert s.api.sandbox(ref, "confirm").status_code == 200
    assert s.api.find(ref).json()["status"] == "success"
    events = s.api.events(ref=ref).json()["transactions"]
    assert [e["event_kind"] for e in events] == ["transaction:created"]


def idempotency_rejected_but_executed(s: InProcessStub) -> None:
    number = new_number()
    first = s.api.create(number=number, key="k-reused")
    second = s.api.create(number=number, key="k-reused")
    assert first.status_code == 200 and second.status_code == 409
    assert s.api.events(client=number).json()["total"] == 2


def key_reuse_other_kind_executes(s: InProcessStub) -> None:
    number = new_number()
    first = s.api.create("cashin", number=number, key="k-other-kind")
    same_kind = s.api.create("cashin", number=number, key="k-other-kind")
    other_kind = s.api.create("cashout", number=number, key="k-other-kind")
    assert first.status_code == 200
    assert same_kind.status_code == 409 and other_kind.status_code == 409
    kinds = sorted(e["data"]["kind"] for e in s.api.events(client=number).json()["transactions"])
    assert kinds == ["CASHIN", "CASHOUT"]  # the cashout executed despite its 409


def processed_changes_again(s: InProcessStub) -> None:
    ref = s.api.create().json()["ref"]
    assert s.api.sandbox(ref, "confirm").status_code == 200
    assert s.api.sandbox(ref, "cancel").status_code == 200  # the rule: 409, not pending
    assert s.api.find(ref).json()["status"] == "failed"
    kinds = [e["event_kind"] for e in s.api.events(ref=ref).json()["transactions"]]
    assert kinds.count("transaction:processed") == 1


def find_status_disagrees(s: InProcessStub) -> None:
    ref = s.api.create().json()["ref"]
    assert s.api.sandbox(ref, "confirm").status_code == 200
    assert s.api.find(ref).json()["status"] == "failed"
    events = s.api.events(ref=ref).json()["transactions"]
    processed = [e for e in events if e["event_kind"] == "transaction:processed"]
    assert [e["data"]["status"] for e in processed] == ["success"]


def filter_ignored(s: InProcessStub) -> None:
    number = new_number()
    s.api.create(number=number)
    body = s.api.events(client=number, status="success").json()
    assert body["total"] == 1 and body["transactions"][0]["data"]["status"] == "pending"


def cross_merchant_visible(s: InProcessStub) -> None:
    other = s.api.app("read-write", "DEMO02")
    number = new_number()
    ref = s.api.create(app=other, number=number).json()["ref"]
    assert s.api.find(ref).status_code == 200
    assert s.api.events(client=number).json()["total"] == 1


def privileges_ignored(s: InProcessStub) -> None:
    reader = s.api.app("read")
    assert s.api.create("cashin", app=reader).status_code == 200
    assert s.api.create("cashout", app=reader).status_code == 200


def server_error_on_malformed(s: InProcessStub) -> None:
    response = s.api.http.post(
        "/transactions/cashin",
        content=b"{oops",
        headers=s.api.headers(**{"Content-Type": "application/json"}),
    )
    assert response.status_code == 500
    assert response.json()["code"] == "internal_error"


def timestamp_format(s: InProcessStub) -> None:
    plain = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
    created = s.api.create().json()
    assert plain.match(created["created_at"])
    assert plain.match(s.api.find(created["ref"]).json()["timestamp"])
    event = s.api.events(ref=created["ref"]).json()["transactions"][0]
    assert plain.match(event["created_at"]) and plain.match(event["data"]["created_at"])


def drop_acknowledged(s: InProcessStub) -> None:
    number = new_number()
    created = s.api.create(number=number)
    assert created.status_code == 200
    assert s.api.find(created.json()["ref"]).status_code == 404
    assert _created_count(s, number) == 0


FAULT_CHECKS: dict[str, tuple[Callable[[InProcessStub], None], dict]] = {
    "idempotency-ignored": (idempotency_ignored, {}),
    "idempotency-racy": (idempotency_racy, {}),
    "long-keys-accepted": (long_keys_accepted, {}),
    "query-key-ignored": (query_key_ignored, {}),
    "tokens-never-expire": (tokens_never_expire, {}),
    "refresh-as-access": (refresh_as_access, {}),
    "signature-not-verified": (signature_not_verified, {}),
    "wrong-kind": (wrong_kind, {}),
    "refs-reused": (refs_reused, {}),
    "status-stuck-pending": (status_stuck_pending, {}),
    "cancel-reads-success": (cancel_reads_success, {}),
    "processed-event-missing": (processed_event_missing, {}),
    "processed-changes-again": (processed_changes_again, {}),
    "idempotency-rejected-but-executed": (idempotency_rejected_but_executed, {}),
    "key-reuse-other-kind-executes": (key_reuse_other_kind_executes, {}),
    "find-status-disagrees": (find_status_disagrees, {}),
    "filter-ignored": (filter_ignored, {}),
    "cross-merchant-visible": (cross_merchant_visible, {}),
    "privileges-ignored": (privileges_ignored, {}),
    "server-error-on-malformed": (server_error_on_malformed, {}),
    "timestamp-format": (timestamp_format, {}),
    "drop-acknowledged": (drop_acknowledged, {"drop_rate": 1.0}),
    "early-expiry": (early_expiry, {}),
    "webhook-bad-signature": (webhook_bad_signature, {}),
    "webhook-no-retry": (webhook_no_retry, {"webhook_retry": FAST_RETRY}),
    "webhook-duplicate-new-id": (webhook_duplicate_new_id, {}),
    "webhook-out-of-order": (webhook_out_of_order, {}),
    "webhook-live-signature-only": (webhook_live_signature_only, {}),
}


def test_every_fault_has_a_check() -> None:
    assert set(FAULT_CHECKS) == set(FAULTS)


@pytest.mark.parametrize("fault", sorted(FAULT_CHECKS))
def test_fault_breaks_its_rule(inproc, fault: str) -> None:
    check, extra = FAULT_CHECKS[fault]
    check(inproc(apps=APPS, faults=[fault], **extra))


@pytest.mark.parametrize(
    "fault",
    [
        "idempotency-ignored", "wrong-kind", "drop-acknowledged", "early-expiry",
        "webhook-bad-signature", "webhook-no-retry", "webhook-duplicate-new-id",
        "webhook-out-of-order", "webhook-live-signature-only",
    ],
)  # fmt: skip
def test_faults_are_off_by_default(inproc, fault: str) -> None:
    """The same check fails against a stub without the switch."""
    check, extra = FAULT_CHECKS[fault]
    with pytest.raises(AssertionError):
        check(inproc(apps=APPS, **extra))


def test_drop_rate_drops_a_fraction(inproc) -> None:
    s = inproc(faults=["drop-acknowledged"], drop_rate=0.3)
    refs = [s.api.create().json()["ref"] for _ in range(60)]
    lost = sum(s.api.find(ref).status_code == 404 for ref in refs)
    assert 3 <= lost <= 40


# -- variants -----------------------------------------------------------------------------


def test_variant_created_201(inproc) -> None:
    s = inproc(variants=["created-201"])
    assert s.api.create().status_code == 201
    assert s.api.create("cashout").status_code == 201


def test_variant_successful_status(inproc) -> None:
    s = inproc(variants=["successful-status"])
    ref = s.api.create().json()["ref"]
    assert s.api.sandbox(ref, "confirm").json()["status"] == "successful"
    assert s.api.find(ref).json()["status"] == "successful"
    for status in ("success", "successful"):
        body = s.api.events(ref=ref, status=status).json()
        assert body["total"] == 1
        assert body["transactions"][0]["data"]["status"] == "successful"


def test_variant_short_refresh_only(inproc) -> None:
    s = inproc(variants=["short-refresh-only"])
    refresh = s.api.pair()["refresh"]
    assert s.api.http.get(refresh_url(refresh, AGENTS_REFRESH_PATH)).status_code == 404
    assert s.api.http.get(refresh_url(refresh)).status_code == 200


def test_variant_expires_string(inproc) -> None:
    s = inproc(variants=["expires-string"])
    expires = s.api.pair()["expires"]
    assert isinstance(expires, str)
    assert datetime.fromisoformat(expires).timestamp() > time.time() + 800


def test_variant_go_error_body(inproc) -> None:
    s = inproc(variants=["go-error-body"])
    response = s.api.create(amount=1)
    assert response.status_code == 400
    assert set(response.json()) == {"status", "message"}
    assert set(s.api.http.get("/nope").json()) == {"status", "message"}


def test_variant_no_rotation(inproc) -> None:
    s = inproc(variants=["no-rotation"])
    refresh = s.api.pair()["refresh"]
    for _ in range(3):
        assert s.api.http.get(refresh_url(refresh)).status_code == 200


def test_variant_revoke_on_refresh(inproc) -> None:
    """The old access token answers 401 once its pair's refresh token is used; the new pair's
    works, and so does another pair of the same application (only the refreshed one is revoked)."""
    s = inproc(variants=["revoke-on-refresh"])
    old, other = s.api.pair(fresh=True), s.api.pair(fresh=True)
    assert _get_events(s, old["access"]).status_code == 200
    refreshed = s.api.http.get(refresh_url(old["refresh"]))
    assert refreshed.status_code == 200
    revoked = _get_events(s, old["access"])
    assert revoked.status_code == 401 and revoked.json()["code"] == "invalid_token"
    assert "revoked" in revoked.json()["message"]
    assert _get_events(s, refreshed.json()["access"]).status_code == 200
    assert _get_events(s, other["access"]).status_code == 200
    # rotation still holds: the spent refresh token is refused, and refreshing the new pair
    # revokes the new access token in turn
    assert s.api.http.get(refresh_url(old["refresh"])).status_code == 401
    assert s.api.http.get(refresh_url(refreshed.json()["refresh"])).status_code == 200
    assert _get_events(s, refreshed.json()["access"]).status_code == 401


def test_variant_revoke_on_refresh_without_rotation(inproc) -> None:
    """With no-rotation too, the refresh token stays reusable and its access token revoked."""
    s = inproc(variants=["revoke-on-refresh", "no-rotation"])
    pair = s.api.pair(fresh=True)
    for _ in range(2):
        assert s.api.http.get(refresh_url(pair["refresh"])).status_code == 200
    assert _get_events(s, pair["access"]).status_code == 401


def test_default_stub_keeps_a_refreshed_pairs_access_token(inproc) -> None:
    """Without the variant the old access token lives until it expires, as before."""
    s = inproc()
    pair = s.api.pair(fresh=True)
    assert s.api.http.get(refresh_url(pair["refresh"])).status_code == 200
    assert _get_events(s, pair["access"]).status_code == 200
    assert "pair" not in jwt.decode(pair["access"], options={"verify_signature": False})


def test_variant_events_oldest_first(inproc) -> None:
    s = inproc(variants=["events-oldest-first"])
    number = new_number()
    refs = [s.api.create(number=number).json()["ref"] for _ in range(3)]
    events = s.api.events(client=number).json()["transactions"]
    assert [e["data"]["ref"] for e in events] == refs


def test_docs_list_every_switch_and_setting() -> None:
    from pathlib import Path

    from stub_server.settings import KNOWN_KEYS

    text = (Path(__file__).parents[2] / "docs" / "stub.md").read_text(encoding="utf-8")
    for name in [*FAULTS, *VARIANTS, *KNOWN_KEYS]:
        assert f"`{name}`" in text, name
