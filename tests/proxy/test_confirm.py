"""``proxy.confirm`` on a fake target: how a rejected reuse is reproduced and counted.

The end-to-end proof against the stub is ``test_proxy_own_traffic.py`` (slow tier); here the
decisions themselves, quickly: which applications reproduce, what is sent (each request's own
kind, body and key channel, on the judge's own number, one fresh key), which check an extra
execution names, and every path to "unconfirmed".
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from test_proxy_judge import BODY, CONFLICT, CREATED, REF_A, bearer, exchange, token

from paysuite_core.driver.target import _own_event
from paysuite_core.results.outcome import CouldNotCheck
from paysuite_core.target_config import parse_target_config
from proxy import confirm
from proxy.judge import Judge

CLIENTS_NUMBER = BODY["number"]


@dataclass
class FakeReply:
    status: int
    body: Any = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def get(self, name: str) -> Any:
        return self.body.get(name) if isinstance(self.body, dict) else None


@dataclass
class Sent:
    kind: str
    app: str
    body: dict[str, Any]
    key: str
    key_in: str


@dataclass
class FakeTarget:
    """A service keyed per key: ``executes_other_kind`` executes a reuse of another kind (409
    all the same), ``refuse_first`` refuses every creation; the numbers are shared or not."""

    executes_other_kind: bool = False
    accepts_reuse: bool = False
    refuse_first: bool = False
    unique: bool = True
    sent: list[Sent] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    current: Any = None
    notes: list[str] = field(default_factory=list)
    _numbers: Any = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.numbers = type("Numbers", (), {"unique": self.unique})()
        self.client = type("Client", (), {"close": lambda self: None})()

    def token(self, app: Any) -> str:
        return token("M1")

    def number(self) -> str:
        return f"07900000{next(self._numbers):02d}"

    def fresh_key(self) -> str:
        return uuid.uuid4().hex

    def known_refs(self, app: Any, number: str) -> set[str]:
        return set()

    def create(self, kind: str, app: Any, *, body: Any, key: str, key_in: str) -> FakeReply:
        self.sent.append(Sent(kind, app.client_id, body, key, key_in))
        if self.refuse_first:
            return FakeReply(403, {"status": 403})
        first_kind = self.keys.get(key)
        if first_kind is not None and self.accepts_reuse:
            return FakeReply(200, {**CREATED, "kind": kind, "ref": self._execute(kind, body)})
        if first_kind is not None:
            if self.executes_other_kind and first_kind != kind:
                self._execute(kind, body)
            return FakeReply(409, CONFLICT)
        self.keys[key] = kind
        return FakeReply(200, {**CREATED, "kind": kind, "ref": self._execute(kind, body)})

    def _execute(self, kind: str, body: dict[str, Any]) -> str:
        ref = str(uuid.uuid4())
        data = {"ref": ref, "kind": kind, "amount": body["amount"], "client": body["number"]}
        self.events.append({"event_kind": "transaction:created", "data": data})
        return ref

    def created_events_for_number(
        self, app: Any, number: str, exclude: Any = None, *, expect: Any = None,
        sent: Any = None, own_refs: Any = (),
    ) -> list[dict[str, Any]]:  # fmt: skip
        found = [
            e
            for e in self.events
            if e["data"]["client"] == number and _own_event(e["data"], sent, own_refs)
        ]
        if self.unique:
            return found
        own = [e for e in found if e["data"]["ref"] in own_refs]  # as Target does on a list
        if len(own) < len(found):
            self.notes.append(f"unconfirmed: {len(found) - len(own)} transaction(s) on {number} "
                              "...: a number of the configured list")  # fmt: skip
        return own


def config(*privileges: str) -> Any:
    apps = [
        {"client_id": f"app-{p}", "client_secret": "s", "privilege": p, "merchant": "M1"}
        for p in privileges
    ]
    return parse_target_config({"base_url": "http://127.0.0.1:9/api", "applications": apps})


def session(fake: FakeTarget, monkeypatch: pytest.MonkeyPatch, *privileges: str) -> Judge:
    monkeypatch.setattr(confirm, "Target", lambda *args, **kwargs: fake)
    return Judge(config(*privileges))


def creation(path: str, status: int, *, key: str = "k1", in_query: bool = False) -> Any:
    tok = token("M1")
    kind = "CASHOUT" if path.endswith("cashout") else "CASHIN"
    answer = {**CREATED, "kind": kind, "ref": REF_A} if status == 200 else CONFLICT
    headers = bearer(tok) if in_query else bearer(tok, **{"Idempotency-Key": key})
    query = f"?Idempotency-Key={key}" if in_query else ""
    return exchange("POST", path + query, status, answer, body=BODY, headers=headers)


def notes(judge: Judge, check_id: str) -> str:
    return " ".join(next(s for s in judge.rule_states() if s.check.id == check_id).notes)


def test_a_rejected_reuse_is_reproduced_on_the_judges_own_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeTarget()
    judge = session(fake, monkeypatch, "read", "read-write")
    judge.observe(creation("/transactions/cashin", 200))
    judge.observe(creation("/transactions/cashin", 409))
    assert judge.finish() == []
    assert [(s.kind, s.app, s.key_in) for s in fake.sent] == [
        ("CASHIN", "app-read-write", "header"),
        ("CASHIN", "app-read-write", "header"),
    ]
    numbers = {s.body["number"] for s in fake.sent}
    assert numbers == {"0790000001"} and CLIENTS_NUMBER not in numbers
    assert len({s.key for s in fake.sent}) == 1 and fake.sent[0].key != "k1"  # a fresh key
    assert "confirmed by reproduction" in notes(judge, "IDEM-001")


def test_each_request_keeps_its_own_kind_and_channel_and_blames_its_own_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cashin's key reused on a cashout (409, executed): the extra transaction is a CASHOUT,
    the reuse that has that kind is the cashout, so the check is IDEM-002."""
    fake = FakeTarget(executes_other_kind=True)
    judge = session(fake, monkeypatch, "cashin", "cashout", "read")
    judge.observe(creation("/transactions/cashin", 200, in_query=True))
    judge.observe(creation("/transactions/cashout", 409, in_query=True))
    found = judge.finish()
    assert [v.check.id for v in found] == ["IDEM-002"]
    assert [(s.kind, s.app, s.key_in) for s in fake.sent] == [
        ("CASHIN", "app-cashin", "query"),
        ("CASHOUT", "app-cashout", "query"),
    ]
    assert "cashout reuse answered 409, yet 2 transactions were created" in found[0].message
    assert [e.seq for e in found[0].exchanges] == [o.exchange.seq for o in judge.observed]


def test_a_reuse_the_reproduction_sees_accepted_is_a_violation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client's reuse was rejected, the judge's is accepted: the rule is broken either way."""
    fake = FakeTarget(accepts_reuse=True)
    judge = session(fake, monkeypatch, "read-write")
    judge.observe(creation("/transactions/cashin", 200))
    judge.observe(creation("/transactions/cashin", 409))
    (found,) = judge.finish()
    assert found.check.id == "IDEM-001"
    assert "the cashin reuse answered 200: a second cashin reusing the header key" in found.message
    assert "2 transactions were created for number 0790000001" in found.message


def test_one_pattern_is_reproduced_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTarget()
    judge = session(fake, monkeypatch, "read-write")
    for key in ("k1", "k2", "k3"):
        judge.observe(creation("/transactions/cashin", 200, key=key))
        judge.observe(creation("/transactions/cashin", 409, key=key))
    assert judge.finish() == []
    assert len(fake.sent) == 2
    assert notes(judge, "IDEM-001").count("settled once") == 2


@pytest.mark.parametrize(
    ("privileges", "fake", "why"),
    [
        (("read",), FakeTarget(), "read-only credentials"),
        (("cashin", "read"), FakeTarget(), "may create CASHIN and CASHOUT"),
        (("read-write",), FakeTarget(refuse_first=True), "first cashin answered 403"),
        (("read-write",), FakeTarget(executes_other_kind=True, unique=False), "configured list"),
    ],
)
def test_what_cannot_be_known_is_unconfirmed_never_a_failure(
    monkeypatch: pytest.MonkeyPatch, privileges: tuple[str, ...], fake: FakeTarget, why: str
) -> None:
    judge = session(fake, monkeypatch, *privileges)
    judge.observe(creation("/transactions/cashin", 200))
    judge.observe(creation("/transactions/cashout", 409))
    assert judge.finish() == []
    assert "unconfirmed:" in notes(judge, "IDEM-002") and why in notes(judge, "IDEM-002")


def test_a_reproduction_that_cannot_run_is_unconfirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTarget()

    def unreadable(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise CouldNotCheck("the events list answered 500", [])

    fake.created_events_for_number = unreadable  # type: ignore[method-assign]
    judge = session(fake, monkeypatch, "read-write")
    judge.observe(creation("/transactions/cashin", 200))
    judge.observe(creation("/transactions/cashin", 409))
    assert judge.finish() == []
    assert "unconfirmed:" in notes(judge, "IDEM-001") and "answered 500" in notes(judge, "IDEM-001")
