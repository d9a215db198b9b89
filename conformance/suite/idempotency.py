"""The document's "Errors", rule 1, and the Idempotency-Key of "Limits" and "Endpoints:
1. Cashin" (IDEM-001..017): a key executes once, whatever the path and the timing.

Every proof counts ``transaction:created`` events for a customer number used by this check
alone, so "not executed twice" is observed, not inferred from a status code; and only its own
events: a ref its creations were answered, or the kind and amount of one of its own requests
(a configured list of numbers is shared with other clients).

A rule the document states for "cashin and cashout" is checked on each kind a configured
application may create, and a rule about the key on each channel it can come through (the
header; the query parameter of the examples, a SHOULD; both at once). The newer checks send their
creations through ``_Trail``: each creation with an amount of its own on the check's own number,
so that every execution found is attributed to the request that caused it (by its amount).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from conformance.checks import Findings, check
from paysuite_core.api_types import JsonObject
from paysuite_core.driver.api import data_of, kind_path, reuse_problems
from paysuite_core.results.outcome import expect, not_applicable, precondition
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from paysuite_core.driver.http import Reply
    from paysuite_core.driver.target import Target
    from paysuite_core.target_config import Application

KINDS = ("CASHIN", "CASHOUT")
#: What a check demands of one creation it sent: a 2xx, a 4xx, or either (the document leaves
#: the answer open); whatever the answer, a rejected creation executes nothing and an accepted
#: one executes once.
Must = Literal["accept", "reject", "either"]


def _writer(target: Target, *kinds: str) -> Application:
    app = target.app("read-write")
    if app is None and len(kinds) == 1:
        app = target.writer(kinds[0])
    if app is None:
        not_applicable(f"no application may {' and '.join(k.lower() for k in kinds)}")
    return app


def _writers(target: Target, *, specific: bool = False) -> list[tuple[str, Application]]:
    """(kind, application) for cashin and for cashout, each where a configured application may
    create it: a rule the document states for "cashin and cashout" is checked on both kinds the
    configuration reaches, never on one only.

    ``specific``: the kind's own application (cashin, cashout) before read-write, so that the
    checks between them run with each privilege that may create (the coverage matrix in
    docs/conformance.md, *Coverage matrix*, says which check runs with which)."""
    found = []
    for kind in KINDS:
        own = target.app(kind.lower())
        app = (own or target.app("read-write")) if specific else target.writer(kind)
        if app is not None:
            found.append((kind, app))
    if not found:
        not_applicable("no application may cashin or cashout")
    return found


def _amounts(target: Target) -> Iterator[int | float]:
    """Amounts the target accepts, each different from the others of one check: a creation's
    kind and amount then name the request that executed it."""
    low, high = target.amounts.low, min(target.amounts.high, max(target.amounts.low * 100, 1000))
    if high - low < 64:  # bounds too narrow to tell requests apart: the totals still count
        while True:
            yield target.amount()
    yield from target.rng.sample(range(low, high + 1), 64)
    while True:
        yield target.amount()


def _same_amount(one: object, other: float) -> bool:
    """One amount, whatever its JSON spelling (100 and 100.0); a boolean is no amount."""
    if isinstance(one, bool) or not isinstance(one, (int, float)):
        return False
    return float(one) == float(other)


@dataclass
class _Sent:
    """One creation a check sent, what the check demands of it, and its executions."""

    what: str
    kind: str
    amount: int | float
    must: Must
    reply: Reply
    refs: list[str] = field(default_factory=list)


@dataclass
class _Trail:
    """The creations one check sends for one customer number, through one application."""

    target: Target
    app: Application
    amounts: Iterator[int | float]
    number: str = ""
    seen: set[str] = field(default_factory=set)
    sent: list[_Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.number = self.target.number()
        self.seen = self.target.known_refs(self.app, self.number)

    def send(
        self,
        what: str,
        kind: str,
        must: Must,
        *,
        header: str | bytes | None = None,
        query: str | None = None,
    ) -> _Sent:
        """POST one creation, its key in the header, the query parameter, or both (two
        different keys too, which ``Target.create`` cannot send); a header key given as bytes
        goes on the wire as they are (UTF-8, which a ``str`` header cannot carry)."""
        amount = next(self.amounts)
        reply = self.target.client.post(
            kind_path(kind),
            json={"amount": amount, "number": self.number},
            headers={} if header is None else {"Idempotency-Key": header},
            params=None if query is None else {"Idempotency-Key": query},
            token=self.target.token(self.app),
        )
        sent = _Sent(what, kind, amount, must, reply)
        self.sent.append(sent)
        return sent

    def created(self) -> list[JsonObject]:
        """The number's created events, read by an application of the creator's merchant that
        the document lets read (read-write or read) where one is configured: whether a cashin
        or cashout application may read is a reference choice (RC-12)."""
        target, merchant = self.target, self.app.merchant
        reader = target.app("read-write", "read", merchant=merchant) or self.app
        own = {str(sent.reply.get("ref")) for sent in self.sent if sent.reply.ok}
        return target.created_events_for_number(
            reader, self.number, self.seen, sent=[(s.kind, s.amount) for s in self.sent],
            own_refs=own,
        )  # fmt: skip

    def attribute(self, events: list[JsonObject]) -> int:
        """Give each sent creation its executions; return how many of ``events`` are the
        trail's. An event under a ref a creation was answered belongs to that creation (of two
        answered one ref, the one of its amount, else the first); any other is given by amount
        (each of a trail's creations has one of its own where the configured bounds allow; the
        kind is not matched, so a wrong kind stays TXN-002's finding). With equal amounts
        (narrow bounds) a rejected creation is thus never blamed for an accepted one's
        transaction."""
        answered: dict[str, list[_Sent]] = {}
        for sent in self.sent:
            ref = sent.reply.get("ref") if sent.reply.ok else None
            if isinstance(ref, str):
                answered.setdefault(ref, []).append(sent)
            sent.refs = []
        matched: set[int] = set()
        for index, event in enumerate(events):
            data = data_of(event)
            ref = str(data.get("ref"))
            by_amount = [s for s in self.sent if _same_amount(data.get("amount"), s.amount)]
            if ref in answered:  # one ref answered twice: its amount tells the two apart
                named = answered[ref]
                owners = [next((s for s in named if s in by_amount), named[0])]
            else:
                owners = by_amount
            for sent in owners:
                sent.refs.append(ref)
            if owners:
                matched.add(index)
        return len(matched)


def _trails(
    target: Target, *, specific: bool = False
) -> tuple[dict[str, _Trail], list[tuple[str, _Trail]]]:
    """One trail per application that may create (one number each), and each kind's trail."""
    writers = _writers(target, specific=specific)
    amounts = _amounts(target)
    trails: dict[str, _Trail] = {}
    for _, app in writers:
        trails.setdefault(app.client_id, _Trail(target, app, amounts))
    return trails, [(kind, trails[app.client_id]) for kind, app in writers]


def _count(target: Target, trails: Sequence[_Trail], expected: int | None = None) -> None:
    """Attribute every execution of the trails' creations: polled until ``expected`` (by default
    one per accepted creation) are listed, as an implementation may record its events a moment
    after it answers, then read once more after a settle, so that a late second execution is
    seen too."""
    from paysuite_core.driver.target import EVENTUAL_S

    if expected is None:
        expected = sum(1 for trail in trails for sent in trail.sent if sent.reply.ok)

    def read() -> list[list[JsonObject]]:
        return [trail.created() for trail in trails]

    def ours(found: list[list[JsonObject]]) -> int:
        return sum(trail.attribute(events) for trail, events in zip(trails, found, strict=True))

    found = target.wait_until(read, lambda f: ours(f) >= expected, EVENTUAL_S)
    if ours(found) == expected:
        time.sleep(target.settle_s)
        ours(read())


def _count_and_judge(target: Target, trails: dict[str, _Trail], expected: str) -> None:
    """Attribute the trails' executions (``_count``), then judge each creation (``_judge``)."""
    _count(target, list(trails.values()))
    _judge(list(trails.values()), expected)


def _judge(trails: Sequence[_Trail], expected: str) -> None:
    """Fail with every creation that was answered or executed against what the check demands:
    a rejected creation executes nothing, an accepted one once."""
    found = Findings()
    for trail in trails:
        answered: dict[str, _Sent] = {}
        for sent in trail.sent:
            ref = sent.reply.get("ref") if sent.reply.ok else None
            if isinstance(ref, str) and ref in answered and not sent.refs:
                # An earlier creation's answer replayed: accepted, yet nothing executed.
                found.add(
                    f"{sent.what}: answered ref {ref}, as {answered[ref].what} was, and executed "
                    "nothing",
                    answered[ref].reply,
                    sent.reply,
                )
            elif isinstance(ref, str):
                answered[ref] = sent
    for sent in (sent for trail in trails for sent in trail.sent):
        status, executed = sent.reply.status, len(sent.refs)
        wrong = []
        if sent.must == "reject" and not sent.reply.rejected:
            wrong.append(f"answered {status}, expected a rejection (4xx)")
        elif sent.must == "accept" and not sent.reply.ok:
            wrong.append(f"answered {status}, expected a 2xx")
        if sent.reply.ok and executed > 1:
            wrong.append(f"executed {executed} times (refs {', '.join(sent.refs)})")
        elif not sent.reply.ok and executed:
            wrong.append(f"answered {status}, yet executed (refs {', '.join(sent.refs)})")
        if wrong:
            found.add(f"{sent.what}: {'; '.join(dict.fromkeys(wrong))}", sent.reply)
    found.verdict(expected, shown=4)


def _refs(*replies: Reply) -> set[str]:
    """The refs the check's own creations were answered: its executions, whatever their kind."""
    return {str(r.get("ref")) for r in replies if r.ok and isinstance(r.body, dict)}


def _reuse(target: Target, first_kind: str, second_kind: str, key_in: str) -> list[str]:
    """Two requests with one key; describe what went wrong (empty when conformant)."""
    app = (
        _writer(target, first_kind, second_kind)
        if first_kind != second_kind
        else _writer(target, first_kind)
    )
    number = target.number()
    seen = target.known_refs(app, number)
    amount = target.amount()
    key = target.fresh_key()
    first = target.create(first_kind, app, number=number, amount=amount, key=key, key_in=key_in)
    precondition(first.ok, f"the first {first_kind.lower()} answered {first.status}", first)
    # The same request again (a client's retry): the document says it is rejected.
    second = target.create(second_kind, app, number=number, amount=amount, key=key, key_in=key_in)
    created = target.created_events_for_number(
        app, number, seen, expect=1, sent={(first_kind, amount), (second_kind, amount)},
        own_refs=_refs(first, second),
    )  # fmt: skip
    refs = [str(data_of(e).get("ref")) for e in created]
    problems = reuse_problems(second_kind, key_in, second.status, refs, number)
    if problems:
        expect(False, "; ".join(problems), first, second)
    return problems


@check(
    "IDEM-001",
    "MUST",
    Section.ERRORS_1,
    "a reused Idempotency-Key header is rejected and the transaction is not executed twice",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected, and the transaction is not executed twice.",
)
def a_reused_key_is_rejected_and_not_executed_twice(target: Target) -> None:
    # Each kind an application may create: a cashout-only configuration is judged too.
    for kind, _ in _writers(target):
        _reuse(target, kind, kind, "header")


@check(
    "IDEM-002",
    "MUST",
    Section.ERRORS_1,
    "a key used by cashin is rejected on cashout (and the reverse)",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected, and the transaction is not executed twice.",
)
def a_key_used_by_cashin_is_rejected_on_cashout(target: Target) -> None:
    if target.app("read-write") is None:
        not_applicable("no read-write application (cashin and cashout with one key)")
    _reuse(target, "CASHIN", "CASHOUT", "header")
    _reuse(target, "CASHOUT", "CASHIN", "header")


@check(
    "IDEM-003",
    "MUST",
    Section.LIMITS,
    "an Idempotency-Key header of 33 characters is rejected; one of 32 is accepted (cashin and "
    "cashout)",
    "Idempotency-Key length: at most 32 characters (cashin and cashout).",
)
def a_key_over_32_characters_is_rejected(target: Target) -> None:
    _length_limit(target, "header")


def _length_limit(target: Target, channel: Literal["header", "query"]) -> None:
    """The Limits row "at most 32 characters", which names cashin and cashout: on each kind, a
    key of 33 characters is rejected and executes nothing, one of exactly 32 is accepted."""
    trails, per_kind = _trails(target, specific=channel == "header")
    for kind, trail in per_kind:
        long_key = (target.fresh_key() + "x")[:33]  # a hex uuid is 32 characters: one more
        exact = target.fresh_key()[:32].ljust(32, "k")
        where = "header" if channel == "header" else "query parameter"
        trail.send(
            f"{kind.lower()} with a 33-character {where} key",
            kind,
            "reject",
            **{channel: long_key},
        )
        trail.send(
            f"{kind.lower()} with a 32-character {where} key",
            kind,
            "accept",
            **{channel: exact},
        )
    _count_and_judge(
        target,
        trails,
        "a 33-character key rejected (4xx) and executed nothing; a 32-character key accepted, "
        "on cashin and cashout",
    )


@check(
    "IDEM-004",
    "SHOULD",
    Section.ENDPOINT_CASHIN,
    "the Idempotency-Key query parameter is honoured as the header is: a reuse through either "
    "channel, or on the other kind, is rejected (cashin and cashout)",
    "The examples also pass it as a query parameter named Idempotency-Key.",
)
def the_query_parameter_key_is_honoured(target: Target) -> None:
    """The query parameter is the document's key passed another way, not a second key space: a
    key used through it is rejected when reused through it or the header, and the reverse."""
    trails, per_kind = _trails(target)
    for kind, trail in per_kind:
        k = kind.lower()
        key = target.fresh_key()
        trail.send(f"{k} with a query key", kind, "accept", query=key)
        trail.send(f"{k} reusing that query key", kind, "reject", query=key)
    kind, trail = per_kind[0]
    k = kind.lower()
    in_header, in_query = target.fresh_key(), target.fresh_key()
    trail.send(f"{k} with a header key", kind, "accept", header=in_header)
    trail.send(
        f"{k} reusing that header key as the query parameter", kind, "reject", query=in_header
    )
    trail.send(f"{k} with another query key", kind, "accept", query=in_query)
    trail.send(f"{k} reusing that query key in the header", kind, "reject", header=in_query)
    if trail.app.privilege == "read-write":  # one application of both kinds: IDEM-002's query cell
        other = "CASHOUT" if kind == "CASHIN" else "CASHIN"
        across = target.fresh_key()
        trail.send(f"{k} with a third query key", kind, "accept", query=across)
        trail.send(
            f"{other.lower()} reusing it as the query parameter", other, "reject", query=across
        )
    _count_and_judge(
        target,
        trails,
        "a key sent as the query parameter is the key: reused through the query or the header "
        "(and a header key reused through the query) it is rejected and executes nothing",
    )


@check(
    "IDEM-005",
    "MUST",
    Section.ERRORS_1,
    "concurrent requests with one key create exactly one transaction (cashin and cashout)",
    "Cashin and cashout requests accept an optional idempotency key so that one request "
    "executes at most once.",
)
def concurrent_requests_with_one_key_create_one_transaction(target: Target) -> None:
    _race(target, "header", RACE_SIZE)


#: How many requests with one key each race sends per kind (the query channel's: half).
RACE_SIZE = 16


def _burst(
    target: Target,
    kind: str,
    app: Application,
    channel: Literal["header", "query"],
    number: str,
    amount: int | float,
    size: int,
) -> list[Reply | None]:
    """``size`` identical creations with one new key, all in flight before any answer is read,
    with a token just issued."""
    from paysuite_core.driver.http import concurrent_requests

    key = target.fresh_key()
    call = {
        "method": "POST",
        "path": kind_path(kind),
        "json": {"amount": amount, "number": number},
        "token": target.pair(app, fresh=True).access,
        **({"headers": {"Idempotency-Key": key}} if channel == "header" else {}),
        **({"params": {"Idempotency-Key": key}} if channel == "query" else {}),
    }
    return concurrent_requests(target.client, [call] * size)


def _race(target: Target, channel: Literal["header", "query"], size: int) -> None:
    """``size`` simultaneous creations with one key (all in flight before any answer is read),
    for each kind a configured application may create: of each burst one is accepted and one
    transaction created. The bursts go one after the other, each with a token just issued, so
    that neither a short token lifetime nor twice the load refuses a burst for another reason."""
    amounts = _amounts(target)
    bursts: list[tuple[str, _Trail, int | float]] = []
    answers: list[tuple[str, list[Reply | None]]] = []
    where = "key" if channel == "header" else "query key"
    for kind, app in _writers(target, specific=channel == "query"):
        trail = _Trail(target, app, amounts)  # a number of its own: the count is this burst's
        amount = next(amounts)
        what = f"{size} concurrent {kind.lower()} requests with one {where}"
        for attempt in range(2):
            mine = _burst(target, kind, app, channel, trail.number, amount, size)
            replies = [reply for reply in mine if reply is not None]
            precondition(replies, f"none of {what} got an answer")
            accepted = [r for r in replies if r.ok]
            refused = {r.status for r in replies if not r.ok}
            # Refused all for the token or the rate (401, 403, 429) is about the burst, not the
            # key: once more with a token just issued (a short lifetime may end mid-burst).
            if accepted or not refused <= {401, 403, 429}:
                break
            precondition(
                attempt == 0,
                f"{what}: every one was refused ({', '.join(map(str, sorted(refused)))}), "
                "twice, none for its key",
                *replies[:2],
            )
        trail.sent.append(_Sent(what, kind, amount, "either", (accepted or replies)[0]))
        bursts.append((kind, trail, amount))
        answers.append((what, mine))
    _count(target, [trail for _, trail, _ in bursts], expected=len(bursts))
    found = Findings()
    for (what, mine), (_, trail, _) in zip(answers, bursts, strict=True):
        replies = [reply for reply in mine if reply is not None]
        accepted = [r for r in replies if r.ok]
        odd = [r for r in replies if not r.ok and not r.rejected]
        created = trail.sent[0].refs
        unanswered = len(mine) - len(replies)
        if unanswered or odd:
            # Refusing or failing some of the simultaneous requests is about load, not this rule
            # (PROP-001 and ERR-001 judge 5xx); what the key let execute is what counts.
            target.note(f"{what}: {unanswered} got no answer, {len(odd)} answered 5xx or other")
        precondition(
            accepted or created or not (unanswered or odd),
            f"{what}: no request was accepted and nothing created: {unanswered} got no answer, "
            f"{len(odd)} answered neither 2xx nor 4xx",
            *odd[:2],
        )
        if len(accepted) > 1 or (len(accepted) == 0 and len(replies) == len(mine) and not odd):
            found.add(f"{what}: {len(accepted)} were accepted", *accepted[:3])
        if len(created) != 1:
            found.add(
                f"{what}: {len(created)} transactions were created for {trail.number}", *odd[:2]
            )
    found.verdict(
        "of each burst with one key, exactly one request accepted and one transaction created",
        shown=5,
    )


@check(
    "IDEM-006",
    "MUST",
    Section.ENDPOINT_CASHIN,
    "without a key, identical requests each create a transaction, under a ref of its own "
    "(cashin and cashout)",
    "Idempotency-Key: Unique string, maximum length 32. Generated by the service when omitted.",
)
def without_a_key_each_request_creates_a_transaction(target: Target) -> None:
    """Three identical keyless requests per kind: each is a new request (the service generates
    its key), so three transactions under three refs. One ref answered to two of them is a
    failure, not an unjudged check: either one transaction was executed for both, or two share
    the "unique reference key". Three, not two: a target that hands out every second ref twice
    shows it within any three consecutive creations."""
    trails, per_kind = _trails(target, specific=True)
    for kind, trail in per_kind:
        amount = next(trail.amounts)
        for n in ("a", "the same", "and again the same"):
            reply = target.create(kind, trail.app, number=trail.number, amount=amount)
            what = f"{n} {kind.lower()} without a key"
            trail.sent.append(_Sent(what, kind, amount, "accept", reply))
    _count(target, list(trails.values()))
    found = Findings()
    for trail in trails.values():
        for group in (trail.sent[i : i + 3] for i in range(0, len(trail.sent), 3)):
            k = group[0].kind.lower()
            refs = [sent.reply.get("ref") for sent in group]
            if not all(sent.reply.ok for sent in group):
                statuses = ", ".join(str(sent.reply.status) for sent in group)
                found.problems.append(f"three {k} requests without a key answered {statuses}")
            elif len(set(map(str, refs))) != len(refs):
                found.problems.append(
                    f"three {k} requests without a key were answered refs "
                    f"{', '.join(map(str, refs))}: one ref for two requests"
                )
            elif len(recorded := {ref for sent in group for ref in sent.refs}) != len(group):
                found.problems.append(
                    f"{len(recorded)} {k} transaction(s) recorded for three keyless requests"
                )
            else:
                continue
            found.proof += [sent.reply for sent in group]
    found.verdict(
        "three transactions under three refs for three identical requests without a key", shown=6
    )


@check(
    "IDEM-007",
    "SHOULD",
    Section.ERRORS_1,
    "a key is scoped to its merchant: another merchant may use it (RC-6)",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected. [Whose keys are compared: not shown.]",
    "reference",
)
def a_key_is_scoped_to_its_merchant(target: Target) -> None:
    writers: dict[str, Application] = {}
    for app in target.apps("read-write", "cashin"):
        writers.setdefault(app.merchant, app)
    if len(writers) < 2:
        not_applicable("no cashin-capable applications of two merchants configured")
    first, second = list(writers.values())[:2]
    key = target.fresh_key()
    one = target.create("CASHIN", first, key=key)
    precondition(one.ok, f"the first merchant's cashin answered {one.status}", one)
    other = target.create("CASHIN", second, key=key)
    expect(
        other.ok,
        f"merchant {second.merchant}'s cashin with a key merchant {first.merchant} used answered "
        f"{other.status}; RC-6 scopes keys to the merchant",
        one,
        other,
        expected="2xx: keys of different merchants never collide",
        actual=str(other.status),
    )


BOTH_CHANNELS = (
    "Idempotency-Key: Unique string, maximum length 32. [...] The examples also pass it as a "
    "query parameter named Idempotency-Key. A second cashin or cashout request that reuses an "
    "idempotency key already used is rejected, and the transaction is not executed twice."
)


@check(
    "IDEM-008",
    "MUST",
    Section.ERRORS_1,
    "one key sent in the header and the query at once is that key: rejected once used, and "
    "used for a later request with it in the header (cashin and cashout)",
    BOTH_CHANNELS,
)
def one_key_in_both_channels_is_that_key(target: Target) -> None:
    """A client that sends its key both ways sends one key, whichever channel the target reads:
    a key already used is rejected that way too, and a key first sent that way is used. Whether
    the target accepts a key in both channels is left open (a refusal is noted)."""
    trails, per_kind = _trails(target, specific=True)
    for kind, trail in per_kind:
        k = kind.lower()
        used, new = target.fresh_key(), target.fresh_key()
        trail.send(f"{k} with a header key", kind, "accept", header=used)
        trail.send(
            f"{k} reusing it in the header and the query at once",
            kind,
            "reject",
            header=used,
            query=used,
        )
        both = trail.send(
            f"{k} with a new key in the header and the query at once",
            kind,
            "either",
            header=new,
            query=new,
        )
        if both.reply.ok:
            trail.send(f"{k} reusing that key in the header alone", kind, "reject", header=new)
        else:
            target.note(
                f"{k} with one key in both header and query answered "
                f"{both.reply.status}: refused, which the document leaves open"
            )
    _count_and_judge(
        target,
        trails,
        "a used key sent in both channels is rejected and executes nothing; a key first sent "
        "in both is rejected when reused in the header",
    )


@check(
    "IDEM-009",
    "MUST",
    Section.ERRORS_1,
    "different keys in the header and the query: the request executes at most once and its "
    "repetition is rejected (cashin and cashout)",
    BOTH_CHANNELS,
)
def different_keys_in_the_two_channels_execute_once(target: Target) -> None:
    """Two different keys in one request may be refused as ambiguous or resolved either way (the
    document says nothing); but the client did send keys, so whichever the target honoured, the
    same request sent again reuses it and must not execute again."""
    trails, per_kind = _trails(target)
    for kind, trail in per_kind:
        k = kind.lower()
        header, query = target.fresh_key(), target.fresh_key()
        first = trail.send(
            f"{k} with one key in the header and another in the query",
            kind,
            "either",
            header=header,
            query=query,
        )
        again: Must = "reject" if first.reply.ok else "either"
        trail.send(f"{k} repeating both keys", kind, again, header=header, query=query)
        if not first.reply.ok:
            target.note(
                f"{k} with different header and query keys answered "
                f"{first.reply.status}: refused as ambiguous"
            )
    _count_and_judge(
        target,
        trails,
        "the request with two different keys executes at most once; sent again it is rejected "
        "and executes nothing",
    )


@check(
    "IDEM-010",
    "MUST",
    Section.ENDPOINT_CASHIN,
    "keys match byte for byte: a key differing from a used one only in letter case is another "
    "key, accepted and executed (cashin and cashout)",
    "Idempotency-Key: string [...] Unique string, maximum length 32.",
)
def a_key_in_another_case_is_another_key(target: Target) -> None:
    """The document makes the key a string: two strings that differ are two keys (the IETF
    Idempotency-Key draft makes it an sf-string, compared exactly). A target that folds case
    would answer a client's new payment "already used" and never make it. The key is no UUID
    (one is 36 characters, over the limit), so RFC 9562's case-insensitive UUIDs do not apply.

    If the other-case key is refused, a never-used key of the same shape tells a reuse (the
    failure) from a target that refuses keys of that shape (left open: noted)."""
    trails, per_kind = _trails(target, specific=True)
    for kind, trail in per_kind:
        k = kind.lower()
        key = "Idem" + target.fresh_key()[:24]
        trail.send(f"{k} with key {key}", kind, "accept", header=key)
        control = ("Idem" + target.fresh_key()[:24]).swapcase()
        _another_key(
            target, trail, kind, key.swapcase(), control, header=True, how="in another letter case"
        )
    _count_and_judge(
        target,
        trails,
        "a key that differs only in letter case from a used one accepted and executed once",
    )


def _another_key(
    target: Target,
    trail: _Trail,
    kind: str,
    variant: str,
    control: str,
    *,
    header: bool,
    how: str,
) -> None:
    """Send ``variant`` (a used key, altered); when it is refused, send ``control`` (a key of
    the same shape never used): accepted, it proves the refusal was a reuse, and the variant is
    then judged as a creation that had to be accepted."""
    k = kind.lower()
    channel = {"header": variant} if header else {"query": variant}
    sent = trail.send(f"{k} with the key {how} ({variant!r})", kind, "either", **channel)
    if sent.reply.ok or not sent.reply.rejected:
        return
    probe = {"header": control} if header else {"query": control}
    fresh = trail.send(
        f"{k} with a never-used key of that shape ({control!r})", kind, "either", **probe
    )
    if fresh.reply.ok:
        sent.must = "accept"
    else:
        target.note(
            f"{k}: keys shaped like {control!r} are refused ({fresh.reply.status}), "
            "so the variant's refusal is no reuse"
        )


@check(
    "IDEM-011",
    "SHOULD",
    Section.ENDPOINT_CASHIN,
    "a query key differing from a used one by a trailing space is another key (cashin and cashout)",
    "Idempotency-Key: string [...] Unique string. The examples also pass it as a query "
    "parameter named Idempotency-Key.",
)
def a_query_key_with_a_trailing_space_is_another_key(target: Target) -> None:
    """Only the query channel can carry a trailing space: HTTP strips it from a header value
    (RFC 9110, 5.5), so a header can never tell "k " from "k". As a string "k " is another key;
    a target that trims keys refuses a new payment as a reuse. A SHOULD: the query channel itself
    is one (IDEM-004), and trimming may be a target's normalisation of that channel."""
    trails, per_kind = _trails(target)
    for kind, trail in per_kind:
        k = kind.lower()
        key = target.fresh_key()[:24]
        trail.send(f"{k} with query key {key!r}", kind, "accept", query=key)
        _another_key(
            target,
            trail,
            kind,
            key + " ",
            target.fresh_key()[:24] + " ",
            header=False,
            how="with a trailing space",
        )
    _count_and_judge(
        target,
        trails,
        "a query key that differs from a used one by a trailing space accepted and executed once",
    )


@check(
    "IDEM-012",
    "SHOULD",
    Section.LIMITS,
    "an Idempotency-Key query parameter of 33 characters is rejected; one of 32 is accepted "
    "(cashin and cashout)",
    "Idempotency-Key length: at most 32 characters (cashin and cashout). The examples also pass "
    "it as a query parameter named Idempotency-Key.",
)
def a_query_key_over_32_characters_is_rejected(target: Target) -> None:
    _length_limit(target, "query")


@check(
    "IDEM-013",
    "SHOULD",
    Section.ERRORS_1,
    "concurrent requests with one query key create exactly one transaction (cashin and cashout)",
    "Cashin and cashout requests accept an optional idempotency key so that one request "
    "executes at most once. The examples also pass it as a query parameter.",
)
def concurrent_requests_with_one_query_key_create_one_transaction(target: Target) -> None:
    _race(target, "query", RACE_SIZE // 2)


@check(
    "IDEM-014",
    "MUST",
    Section.RESOURCES_APPLICATION,
    "a key another merchant used never reveals that merchant's transaction, however keys are "
    "scoped (cashin and cashout)",
    "A second cashin or cashout request that reuses an idempotency key already used is "
    "rejected. [Whose keys are compared: not shown.] An application is created by the merchant.",
)
def another_merchants_key_reveals_nothing(target: Target) -> None:
    """Keys may be the merchant's (RC-6: the second merchant's request executes) or the
    service's (it is rejected): both are open. Either way the answer is about the second
    merchant's own request: it never carries the first merchant's transaction (its ref), as a
    replayed response or a rejection that names the transaction holding the key would."""
    leaks, judged = Findings(), 0
    for kind in KINDS:
        creators: dict[str, Application] = {}
        for app in target.apps("read-write", kind.lower()):
            creators.setdefault(app.merchant, app)
        if len(creators) < 2:
            continue
        (mine, first), (theirs, second) = list(creators.items())[:2]
        key = target.fresh_key()
        one = target.create(kind, first, key=key)
        ref = one.get("ref")
        precondition(
            one.ok and isinstance(ref, str) and ref,
            f"merchant {mine}'s {kind.lower()} answered {one.status}",
            one,
        )
        other = target.create(kind, second, key=key)
        judged += 1
        target.note(
            f"merchant {theirs}'s {kind.lower()} with merchant {mine}'s key answered {other.status}"
        )
        places = [name for name, value in other.headers.items() if ref in value]
        if ref in other.text:
            places.append("body")
        if places:
            leaks.add(
                f"merchant {theirs}'s {kind.lower()} reusing merchant {mine}'s key "
                f"answered {other.status} with {mine}'s ref {ref} in its {', '.join(places)}",
                one,
                other,
            )
    if not judged:
        not_applicable("no two merchants' applications may create the same kind")
    leaks.verdict(
        "an answer about the second merchant's own request, without the first merchant's ref",
        shown=4,
    )


@check(
    "IDEM-015",
    "SHOULD",
    Section.ERRORS_1,
    "with a key in the header and another in the query, the header's is the one used (RC-6; "
    "cashin and cashout)",
    BOTH_CHANNELS,
    "reference",
)
def the_header_key_wins_over_the_query_key(target: Target) -> None:
    """RC-6 resolves IDEM-009's ambiguity: the header's key is recorded, the query's is not
    (the header is what the document names first, and what the SDKs send). Sent alone later,
    the header's key is a reuse and the query's a new key."""
    trails, per_kind = _trails(target)
    for kind, trail in per_kind:
        k = kind.lower()
        header, query = target.fresh_key(), target.fresh_key()
        trail.send(
            f"{k} with key A in the header and key B in the query",
            kind,
            "accept",
            header=header,
            query=query,
        )
        trail.send(f"{k} with key A alone, in the header", kind, "reject", header=header)
        trail.send(f"{k} with key B alone, in the query", kind, "accept", query=query)
    _count_and_judge(
        target,
        trails,
        "the header's key A is recorded (A alone is a reuse); the query's B is not (B alone is "
        "a new key, executed once)",
    )


def _non_ascii_key(target: Target) -> str:
    """A fresh key that is a string but not ASCII: 24 characters, 25 bytes in UTF-8."""
    return "clé-" + target.fresh_key()[:20]


def _non_ascii(target: Target, channel: Literal["header", "query"]) -> None:
    """A key with a non-ASCII character, sent (UTF-8) through ``channel``: accepted and
    executed once, then rejected on reuse without executing."""
    trails, per_kind = _trails(target)
    for kind, trail in per_kind:
        k = kind.lower()
        key = _non_ascii_key(target)
        header = key.encode() if channel == "header" else None
        query = key if channel == "query" else None
        what = f"the {channel} key {key!r} (UTF-8)"
        trail.send(f"{k} with {what}", kind, "accept", header=header, query=query)
        trail.send(f"{k} reusing {what}", kind, "reject", header=header, query=query)
    _count_and_judge(
        target,
        trails,
        f"a non-ASCII {channel} key is a key: accepted and executed once, rejected on reuse",
    )


@check(
    "IDEM-016",
    "SHOULD",
    Section.ENDPOINT_CASHIN,
    "a non-ASCII Idempotency-Key query parameter (clé-..., UTF-8) is a key: accepted, executed "
    "once, rejected on reuse (cashin and cashout)",
    "Idempotency-Key: string [...] Unique string, maximum length 32. The examples also pass it "
    "as a query parameter named Idempotency-Key.",
)
def a_non_ascii_query_key_is_a_key(target: Target) -> None:
    """The document makes the key a string, and a query parameter carries any string (its UTF-8
    bytes percent-encoded, ``?Idempotency-Key=cl%C3%A9-...``): a target that refuses one refuses
    a client's payment for its key's spelling. A SHOULD, as the query channel itself (IDEM-004)."""
    _non_ascii(target, "query")


@check(
    "IDEM-017",
    "SHOULD",
    Section.ENDPOINT_CASHIN,
    "a non-ASCII Idempotency-Key header (UTF-8 bytes) is a key: accepted, executed once, "
    "rejected on reuse (RC-39; cashin and cashout)",
    "Idempotency-Key: string [...] Unique string, maximum length 32.",
    "reference",
)
def a_non_ascii_header_key_is_a_key(target: Target) -> None:
    """HTTP header values are ASCII by convention (RFC 9110, 5.5: other octets are "obs-text"),
    so a target may refuse one: only the reference profile demands the stub's choice, a header
    key taken as its UTF-8 text like any other string."""
    _non_ascii(target, "header")
