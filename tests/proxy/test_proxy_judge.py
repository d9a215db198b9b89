"""The judge on hand-made exchanges: what it must flag, and the doubts it must not turn into
false alarms (a rejected first attempt, another merchant, a concurrent read, success vs
successful, clock grace, an opaque token, an undeclared rotation)."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import replace
from typing import Any

import jwt
import pytest

from paysuite_core.exchange import Exchange
from paysuite_core.tokens import AUTHORIZE_PATH, REFRESH_PATHS
from proxy.judge import UNCONFIRMED, Judge
from proxy.routes import route_of

BASE = "http://127.0.0.1:9/api"
_seq = itertools.count(1)
NOW = time.time()


def token(merchant: str = "M1", exp: float | None = None, sub: str = "access") -> str:
    claims: dict[str, Any] = {"merchant": merchant, "sub": sub}
    claims["exp"] = int(exp if exp is not None else NOW + 900)
    return jwt.encode(claims, "a-test-key-of-32-bytes-at-least!", algorithm="HS256")


def exchange(
    method: str,
    path: str,
    status: int,
    answer: Any = None,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    started: float | None = None,
    elapsed_ms: float = 5.0,
    content_type: str = "application/json",
) -> Exchange:
    raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
    seq = next(_seq)
    return Exchange(
        seq=seq,
        started=NOW + seq * 0.05 if started is None else started,  # one after the other
        elapsed_ms=elapsed_ms,
        method=method,
        url=BASE + path,
        request_headers=tuple((headers or {}).items()),
        request_body=b"" if body is None else json.dumps(body).encode(),
        status=status,
        response_headers=(("Content-Type", content_type),),
        response_body=raw,
    )


def bearer(value: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}", "Content-Type": "application/json", **more}


CREATED = {"amount": 100, "created_at": "2026-11-24T10:00:00.000000Z", "kind": "CASHIN",
           "status": "pending"}  # fmt: skip
BODY = {"amount": 100, "number": "0781234567"}
CONFLICT = {"status": 409, "code": "idempotency_key_reused", "message": "used"}


def creation(tok: str, key: str, status: int, ref: str | None = None) -> Exchange:
    answer = {**CREATED, "ref": ref} if ref else CONFLICT
    return exchange("POST", "/transactions/cashin", status, answer, body=BODY,
                    headers=bearer(tok, **{"Idempotency-Key": key}))  # fmt: skip


def ids(found: list[Any]) -> list[str]:
    """The check IDs of the stateful rules among ``found`` (the hand-made bodies here are not
    all complete resources; the spec rules have tests of their own below)."""
    return [v.check.id for v in found if not v.check.id.startswith("PROXY-")]


REF_A = "6f1c2a9e-0000-4000-8000-00000000000a"
REF_B = "6f1c2a9e-0000-4000-8000-00000000000b"


# --- routes ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        ("POST", "/api/transactions/cashin", "cashin"),
        ("POST", "/transactions/cashout", "cashout"),
        ("GET", "/v2/api/transactions/find/abc", "find"),
        ("GET", "/api/events/transactions", "events"),
        ("GET", "/api" + REFRESH_PATHS[1].replace("{token}", "tok"), "refresh"),
        ("GET", "/api" + REFRESH_PATHS[0].replace("{token}", "tok"), "refresh"),
        ("GET", "/api/transactions/cashin", None),  # not the document's method
        ("GET", "/api/merchants/me", None),
        ("POST", "/_sandbox/transactions/x/confirm", None),
    ],
)
def test_routes(method: str, path: str, operation: str | None) -> None:
    found = route_of(replace(exchange(method, "", 200, {}), url=f"http://127.0.0.1:9{path}"))
    assert (found.operation if found else None) == operation


# --- IDEM-001 -------------------------------------------------------------------------------
def test_a_rejected_first_attempt_did_not_use_the_key() -> None:
    judge = Judge(None)
    tok = token()
    assert ids(judge.observe(creation(tok, "k1", 409))) == []
    assert ids(judge.observe(creation(tok, "k1", 200, REF_A))) == []


def test_another_merchant_may_use_the_key() -> None:
    judge = Judge(None)
    assert ids(judge.observe(creation(token("M1"), "k1", 200, REF_A))) == []
    assert ids(judge.observe(creation(token("M2"), "k1", 200, REF_B))) == []


def test_a_reuse_executed_again_is_idem_001() -> None:
    judge = Judge(None)
    tok = token()
    judge.observe(creation(tok, "k1", 200, REF_A))
    (violation,) = [
        v for v in judge.observe(creation(tok, "k1", 200, REF_B)) if v.check.id == "IDEM-001"
    ]
    assert violation.check.id == "IDEM-001"
    assert "expected a rejection (4xx)" in violation.message
    assert f"refs {REF_A}, {REF_B}" in violation.message


def test_a_reuse_answered_with_the_same_transaction_is_not_a_rejection() -> None:
    """One transaction, but the document says the reuse "is rejected": IDEM-001, as the suite."""
    judge = Judge(None)
    tok = token()
    judge.observe(creation(tok, "k1", 200, REF_A))
    (violation,) = [
        v for v in judge.observe(creation(tok, "k1", 200, REF_A)) if v.check.id == "IDEM-001"
    ]
    assert "expected a rejection" in violation.message
    assert "transactions were created" not in violation.message


def _creation_at(path: str, tok: str, key: str, status: int, ref: str, started: float,
                 *, in_query: bool = False) -> Exchange:  # fmt: skip
    headers = bearer(tok) if in_query else bearer(tok, **{"Idempotency-Key": key})
    full = f"{path}?Idempotency-Key={key}" if in_query else path
    answer = {**CREATED, "ref": ref} if status == 200 else CONFLICT
    return exchange("POST", full, status, answer, body=BODY, headers=headers, started=started)


@pytest.mark.parametrize(
    ("second_path", "after_s", "in_query", "check_id"),
    [
        ("/transactions/cashout", 1.0, False, "IDEM-002"),  # across cashin and cashout
        ("/transactions/cashin", 0.001, False, "IDEM-005"),  # both in flight at once
        ("/transactions/cashin", 1.0, True, "IDEM-004"),  # the query parameter
        ("/transactions/cashin", 1.0, False, "IDEM-001"),
    ],
)
def test_each_kind_of_reuse_carries_the_suites_id(
    second_path: str, after_s: float, in_query: bool, check_id: str
) -> None:
    second_started = NOW + after_s
    judge = Judge(None)
    tok = token()
    first = _creation_at("/transactions/cashin", tok, "k9", 200, REF_A, NOW, in_query=in_query)
    assert ids(judge.observe(first)) == []
    second = _creation_at(second_path, tok, "k9", 200, REF_B, second_started, in_query=in_query)
    assert ids(judge.observe(second)) == [check_id]


def test_a_key_over_32_characters_accepted_is_idem_003() -> None:
    judge = Judge(None)
    found = judge.observe(creation(token(), "k" * 33, 200, REF_A))
    assert sorted(v.check.id for v in found) == ["IDEM-003", "PROXY-SCHEMA-REQ"]
    assert judge.observe(creation(token(), "q" * 33, 400)) != []  # the client's side only
    assert ids(judge.observe(creation(token(), "r" * 33, 400))) == []


def test_without_credentials_a_rejected_reuse_is_noted_as_unconfirmed() -> None:
    judge = Judge(None)
    tok = token()
    judge.observe(creation(tok, "k1", 200, REF_A))
    judge.observe(creation(tok, "k1", 409))
    assert judge.finish() == []
    state = next(s for s in judge.rule_states() if s.check.id == "IDEM-001")
    assert state.exercised == 2 and UNCONFIRMED in state.notes


# --- AUTH-008 -------------------------------------------------------------------------------
def _find_with(tok: str, status: int, started: float) -> Exchange:
    answer = {"status": 401, "message": "expired"} if status == 401 else {}
    return exchange("GET", f"/transactions/find/{REF_A}", status, answer, headers=bearer(tok),
                    started=started)  # fmt: skip


def test_expiry_is_judged_after_a_grace_and_only_on_acceptance() -> None:
    judge = Judge(None)
    expired = token(exp=NOW - 100)
    exp = int(NOW)
    assert ids(judge.observe(_find_with(token(exp=exp), 200, exp + 0.9))) == []  # within grace
    assert ids(judge.observe(_find_with(expired, 401, NOW))) == []  # refused: the rule held
    assert ids(judge.observe(_find_with(expired, 200, NOW))) == ["AUTH-008"]
    assert ids(judge.observe(_find_with(expired, 200, NOW + 1))) == []  # one report per token


def test_an_opaque_token_without_expires_is_not_judged() -> None:
    judge = Judge(None)
    pair = {"access": "opaque-1", "refresh": "opaque-2", "expires": None}
    judge.observe(exchange("POST", AUTHORIZE_PATH, 200, pair,
                           body={"client_id": "a", "client_secret": "b"}))  # fmt: skip
    assert ids(judge.observe(_find_with("opaque-1", 200, NOW + 10_000))) == []


def test_the_expires_of_the_pair_dates_an_opaque_token() -> None:
    judge = Judge(None)
    pair = {"access": "opaque-1", "refresh": "opaque-2", "expires": int(NOW) + 10}
    judge.observe(exchange("POST", AUTHORIZE_PATH, 200, pair,
                           body={"client_id": "a", "client_secret": "b"}))  # fmt: skip
    assert ids(judge.observe(_find_with("opaque-1", 200, NOW + 20))) == ["AUTH-008"]


# --- AUTH-012 -------------------------------------------------------------------------------
def _refresh(value: str, status: int) -> Exchange:
    pair = {"access": token(), "refresh": token(sub="refresh"), "expires": int(NOW) + 900}
    answer = pair if status == 200 else {"status": 401, "message": "spent"}
    return exchange("GET", REFRESH_PATHS[1].replace("{token}", value), status, answer)


def test_rotation_is_judged_only_when_declared() -> None:
    from paysuite_core.target_config import Application, TargetConfig

    app = Application("id", "secret", "read-write", "A")
    declared = TargetConfig(BASE, (app,), refresh_rotation=True)
    judge = Judge(declared, confirm=False)
    used = token(sub="refresh")
    assert ids(judge.observe(_refresh(used, 200))) == []
    assert ids(judge.observe(_refresh(used, 200))) == ["AUTH-012"]
    kept = Judge(declared, confirm=False)
    kept.observe(_refresh(used, 200))
    assert ids(kept.observe(_refresh(used, 401))) == []
    silent = Judge(None)
    silent.observe(_refresh(used, 200))
    assert ids(silent.observe(_refresh(used, 200))) == []
    state = next(s for s in silent.rule_states() if s.check.id == "AUTH-012")
    assert "does not declare" in state.not_judged


# --- LIFE-004, LIFE-002/003 -----------------------------------------------------------------
def _found(status: str, started: float, elapsed_ms: float = 5.0) -> Exchange:
    answer = {"amount": 100, "client": "0781234567", "fee": 2.3, "kind": "CASHIN",
              "merchant": "M1", "ref": REF_A, "status": status,
              "timestamp": "2026-11-24T12:00:00.000000+02:00"}  # fmt: skip
    return exchange("GET", f"/transactions/find/{REF_A}", 200, answer,
                    headers=bearer(token()), started=started, elapsed_ms=elapsed_ms)  # fmt: skip


def _events(status: str, event_id: str = "e1") -> Exchange:
    record = {"event_id": event_id, "event_kind": "transaction:processed",
              "created_at": "2026-11-24T10:00:01.000000Z",
              "data": {"ref": REF_A, "kind": "CASHIN", "fee": 2.3, "merchant": "M1",
                       "client": "0781234567", "amount": 100, "status": status,
                       "created_at": "2026-11-24T10:00:00.000000Z",
                       "processed_at": "2026-11-24T10:00:01.000000Z"}}  # fmt: skip
    envelope = {"limit": 20, "offset": 0, "total": 1, "transactions": [record]}
    return exchange("GET", "/events/transactions", 200, envelope, headers=bearer(token()))


def test_a_read_that_began_before_processing_was_seen_may_still_say_pending() -> None:
    judge = Judge(None)
    assert ids(judge.observe(_found("success", NOW, elapsed_ms=50))) == []
    assert ids(judge.observe(_found("pending", NOW + 0.01))) == []  # began before that answer
    assert ids(judge.observe(_found("pending", NOW + 1))) == ["LIFE-004"]


def test_success_and_successful_are_one_outcome() -> None:
    judge = Judge(None)
    judge.observe(_found("success", NOW))
    assert ids(judge.observe(_found("successful", NOW + 1))) == []
    assert ids(judge.observe(_events("successful"))) == []
    assert ids(judge.observe(_found("failed", NOW + 2))) == ["LIFE-004", "LIFE-002"]


def test_two_processed_events_for_one_transaction_are_life_004() -> None:
    judge = Judge(None)
    assert ids(judge.observe(_events("success", "e1"))) == []
    assert ids(judge.observe(_events("success", "e1"))) == []  # the same event listed again
    assert ids(judge.observe(_events("success", "e2"))) == ["LIFE-004"]


def test_find_against_a_cancelled_event_is_life_003() -> None:
    judge = Judge(None)
    judge.observe(_events("failed"))
    assert ids(judge.observe(_found("success", NOW))) == ["LIFE-003"]


# --- per exchange ---------------------------------------------------------------------------
def test_a_server_error_or_a_non_json_answer_breaks_the_spec() -> None:
    judge = Judge(None)
    error = exchange("GET", f"/transactions/find/{REF_A}", 500, {"oops": 1},
                     headers=bearer(token()))  # fmt: skip
    (violation,) = [v for v in judge.observe(error) if v.check.id == "PROXY-SCHEMA-RESP"]
    assert violation.check.id == "PROXY-SCHEMA-RESP" and "does not document" in violation.message
    html = exchange("GET", f"/transactions/find/{REF_A}", 404, b"<h1>no</h1>",
                    headers=bearer(token()), content_type="text/html")  # fmt: skip
    assert [v.check.id for v in judge.observe(html)] == ["PROXY-SCHEMA-RESP"]


def test_seed_view_takes_any_json_rejection() -> None:
    judge = Judge(None)
    rejection = exchange("POST", "/transactions/cashin", 422, {"detail": "anything"}, body=BODY,
                         headers=bearer(token()))  # fmt: skip
    assert judge.observe(rejection) == []


def test_a_fractional_amount_is_a_valid_request_by_the_document() -> None:
    """The stub's integer amounts and phone pattern are its choices, not the client's duty."""
    judge = Judge(None)
    odd = exchange("POST", "/transactions/cashin", 400, {"message": "no"},
                   body={"amount": 100.5, "number": "+1 555"}, headers=bearer(token()))  # fmt: skip
    assert judge.observe(odd) == []


def test_a_token_issued_through_the_proxy_is_named_by_its_application_in_a_curl() -> None:
    """The proxy's curls name a token the target issued in the session by the application's
    variable; before the judge learned the tokens it saw issued, every curl called one a
    forgery of the suite's and told the reader to export a made-up token."""
    from paysuite_core.results.evidence import evidence_of
    from paysuite_core.target_config import Application, TargetConfig

    app = Application("app-1", "s3cret", "read-write", "M1")
    judge = Judge(TargetConfig(BASE, (app,)), confirm=False)
    issued = token()
    authorize = exchange(
        "POST", AUTHORIZE_PATH, 200, {"access": issued, "refresh": token(sub="refresh"),
                                      "expires": int(NOW + 900)},
        body={"client_id": "app-1", "client_secret": "s3cret"},
    )  # fmt: skip
    find = exchange("GET", "/transactions/find/abc", 404, {"status": 404, "message": "no"},
                    headers=bearer(issued))  # fmt: skip
    for one in (authorize, find):
        judge.observe(one)
    item = evidence_of(find, judge.masker)
    assert "$PAYSUITE_TOKEN_M1_READ_WRITE" in item["curl"], item["curl"]
    assert issued not in item["curl"]
    assert "not one the target issued" not in (item.get("note") or ""), item.get("note")
