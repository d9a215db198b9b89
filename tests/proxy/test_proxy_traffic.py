"""The rules read from the traffic (``proxy.traffic``) on hand-made exchanges: what each must
flag, and the doubts it must not turn into a false alarm (a reuse's answer, a number in another
notation, success and successful, a page that is not the whole result, an event recorded a
moment late, another merchant's listing)."""

from __future__ import annotations

from typing import Any

from test_proxy_judge import BASE, NOW, bearer, exchange, token

from paysuite_core.target_config import Application, TargetConfig
from proxy.appmap import map_applications
from proxy.judge import Judge

REF = "3f2b8c1e-0000-4000-8000-00000000000a"
OTHER = "3f2b8c1e-0000-4000-8000-00000000000b"
NUMBER = "0781234567"


def ids(found: list[Any]) -> list[str]:
    return sorted(v.check.id for v in found if not v.check.id.startswith("PROXY-"))


def create(tok: str, ref: str, *, kind: str = "cashin", answered: str | None = None,
           started: float | None = None, key: str | None = None) -> Any:  # fmt: skip
    headers = bearer(tok, **({"Idempotency-Key": key} if key else {}))
    answer = {"amount": 100, "created_at": "2026-11-24T10:00:00.000000Z", "ref": ref,
              "kind": answered or kind.upper(), "status": "pending"}  # fmt: skip
    body = {"amount": 100, "number": NUMBER}
    return exchange("POST", f"/transactions/{kind}", 200, answer, body=body, headers=headers,
                    started=started)  # fmt: skip


def event(ref: str, kind: str, status: str, *, client: str = NUMBER) -> dict[str, Any]:
    return {"event_id": f"{ref}-{kind}", "event_kind": kind, "created_at": "x",
            "data": {"ref": ref, "kind": "CASHIN", "amount": 100, "client": client,
                     "status": status}}  # fmt: skip


def listing(tok: str, query: str, events: list[dict[str, Any]], *, total: int | None = None,
            started: float | None = None, limit: int = 20) -> Any:  # fmt: skip
    envelope = {"limit": limit, "offset": 0, "transactions": events,
                "total": len(events) if total is None else total}  # fmt: skip
    return exchange("GET", f"/events/transactions?{query}", 200, envelope,
                    headers=bearer(tok), started=started)  # fmt: skip


def find(tok: str, ref: str, status: str, *, started: float | None = None,
         client: str = NUMBER, kind: str = "CASHIN") -> Any:  # fmt: skip
    answer = {"ref": ref, "amount": 100, "client": client, "kind": kind, "status": status,
              "fee": 0, "merchant": "M1",
              "timestamp": "2026-11-24T10:00:00.000000+00:00"}  # fmt: skip
    return exchange("GET", f"/transactions/find/{ref}", 200, answer, headers=bearer(tok),
                    started=started)  # fmt: skip


def test_a_creation_answered_another_kind_and_a_ref_answered_twice() -> None:
    judge, tok = Judge(None), token()
    assert ids(judge.observe(create(tok, REF, kind="cashout", answered="CASHIN"))) == ["TXN-002"]
    assert ids(judge.observe(create(tok, REF))) == ["FMT-001"]
    # a reuse of one key answered 2xx is the idempotency rule's, not TXN's or FMT's
    judge = Judge(None)
    judge.observe(create(tok, OTHER, key="k1"))
    assert ids(judge.observe(create(tok, OTHER, kind="cashout", key="k1"))) == ["IDEM-002"]


def test_find_and_the_created_event_against_the_creation() -> None:
    judge, tok = Judge(None), token()
    judge.observe(create(tok, REF))
    assert ids(judge.observe(find(tok, REF, "pending", client="250781234567"))) == []  # notation
    assert ids(judge.observe(find(tok, REF, "pending", kind="CASHOUT"))) == ["FIND-001"]
    wrong = event(REF, "transaction:created", "success")
    assert ids(judge.observe(listing(tok, f"ref={REF}", [wrong]))) == ["LIFE-001"]


def test_every_event_of_a_filtered_list_matches_its_filters() -> None:
    judge, tok = Judge(None), token()
    ok = [event(REF, "transaction:processed", "successful")]  # one outcome with success
    assert ids(judge.observe(listing(tok, "status=success", ok))) == []
    stray = [event(REF, "transaction:created", "pending")]
    assert ids(judge.observe(listing(tok, "status=success", stray))) == ["EVT-006"]
    assert ids(judge.observe(listing(tok, f"client=%2B25{NUMBER}", stray))) == []
    assert ids(judge.observe(listing(tok, "client=0789999999", stray))) == ["EVT-004"]
    assert ids(judge.observe(listing(tok, f"ref={OTHER}", stray))) == ["EVT-003"]
    assert ids(judge.observe(listing(tok, "kind=CASHOUT", stray))) == ["EVT-005"]
    assert ids(judge.observe(listing(tok, "status=success&status=pending", stray))) == []


def test_total_against_a_complete_listing() -> None:
    judge, tok = Judge(None), token()
    two = [event(REF, "transaction:created", "pending"), event(OTHER, "transaction:created",
                                                               "pending")]  # fmt: skip
    assert ids(judge.observe(listing(tok, "", two, total=1))) == ["EVT-007"]  # fewer than shown
    assert ids(judge.observe(listing(tok, "", two, total=5))) == ["EVT-007"]  # room left
    assert ids(judge.observe(listing(tok, "limit=2", two, total=5, limit=2))) == []  # a full page


def test_the_processed_event_is_listed_allowing_for_a_late_one() -> None:
    judge, tok = Judge(None), token()
    judge.observe(create(tok, REF, started=NOW))
    judge.observe(find(tok, REF, "success", started=NOW + 1))
    only_created = [event(REF, "transaction:created", "pending")]
    # right after: the event may be recorded a moment late; no violation, left to the end
    assert ids(judge.observe(listing(tok, f"ref={REF}", only_created, started=NOW + 2))) == []
    assert [ref for ref, _ in judge.traffic.unsettled()] == [REF]
    # another merchant's listing need not show it; a filter that excludes it proves nothing
    assert ids(judge.observe(listing(token("M2"), f"ref={REF}", [], started=NOW + 9))) == []
    assert ids(judge.observe(listing(tok, "status=pending", only_created, started=NOW + 9))) == []
    # 5 s and more later, a complete listing without it fails
    found = judge.observe(listing(tok, f"client={NUMBER}", only_created, started=NOW + 9))
    assert ids(found) == ["LIFE-002"]
    assert "find #" in found[-1].message


def test_no_violation_when_the_processed_event_is_listed() -> None:
    judge, tok = Judge(None), token()
    judge.observe(create(tok, REF, started=NOW))
    judge.observe(find(tok, REF, "failed", started=NOW + 1))
    both = [event(REF, "transaction:processed", "failed"), event(REF, "transaction:created",
                                                                 "pending")]  # fmt: skip
    assert ids(judge.observe(listing(tok, f"ref={REF}", both, started=NOW + 9))) == []
    assert judge.traffic.unsettled() == []


def test_applications_map_by_privilege_and_merchant() -> None:
    apps = (Application("a-rw", "s", "read-write", "m1"), Application("a-r", "s", "read", "m1"),
            Application("b-rw", "s", "read-write", "m2"))  # fmt: skip
    config = TargetConfig(base_url=BASE, applications=apps)
    recorded = {"x-rw": {"privilege": "read-write", "merchant": "A"},
                "x-r": {"privilege": "read", "merchant": "A"},
                "y-rw": {"privilege": "read-write", "merchant": "B"}}  # fmt: skip
    mapped = map_applications(recorded, config)
    assert not mapped.problems
    assert {k: v.client_id for k, v in mapped.apps.items()} == {
        "x-rw": "a-rw", "x-r": "a-r", "y-rw": "b-rw"}  # fmt: skip
    cashout = map_applications({"z": {"privilege": "cashout", "merchant": "A"}}, config)
    assert cashout.problems and "--map z=CLIENT_ID" in cashout.problems[0]
    assert "no cashout application" in cashout.problems[0]
    explicit = map_applications({"z": {"privilege": "cashout"}}, config, {"z": "b-rw"})
    assert explicit.apps["z"].client_id == "b-rw" and not explicit.problems
