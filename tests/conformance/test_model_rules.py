"""The executable model alone: each rule allows what the document allows and refuses the rest.

Pure and fast: no server, answers written by hand, one rule per test.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from conformance.model.judge import judge
from conformance.model.records import (
    EVENTS,
    IDEMPOTENCY,
    LIFECYCLE,
    OVER_TIME,
    PRIVILEGES,
    REFERENCE,
    SPELLINGS,
    Act,
    Answer,
    Authorize,
    Create,
    Find,
    ListEvents,
    Refresh,
    Request,
)
from conformance.model.state import App, State, World
from paysuite_core.tokens import REFRESH_PATHS

APPS = (
    App("rw1", "read-write", "M1"),
    App("r1", "read", "M1"),
    App("in1", "cashin", "M1"),
    App("rw2", "read-write", "M2"),
)
SEED = World(APPS, settle_s=1.0)
REF = World(APPS, narrowing="reference", settle_s=1.0)
NUMBER = "0781234567"


def tokens(world: World = SEED) -> State:
    state = State()
    for app in APPS:
        state = run(
            world, state, Authorize(app.client_id, f"{app.client_id}#1", 900.0), ok({"access": "a"})
        )
    return state


def ok(body: Any, status: int = 200) -> Answer:
    return Answer(status, body)


def run(world: World, state: State, request: Request, answer: Answer, at: float = 0.0) -> State:
    judged = judge(world, state, request, answer, at, at + 0.01)
    assert judged.allowed, judged.problem
    (after,) = judged.states
    return after


def problem_of(
    world: World, state: State, request: Request, answer: Answer, at: float = 0.0
) -> Any:
    judged = judge(world, state, request, answer, at, at + 0.01)
    assert judged.problem is not None, "the model allowed it"
    return judged.problem


def cashin(app: str = "rw1", key: str | None = None, channel: Any = "header", **kw: Any) -> Create:
    return Create(
        app, f"{app}#1", kw.pop("kind", "CASHIN"), kw.pop("amount", 100), NUMBER, key, channel, **kw
    )


def created(kind: str = "CASHIN", amount: Any = 100, ref: str | None = None) -> Answer:
    return ok(
        {"ref": ref or str(uuid.uuid4()), "kind": kind, "status": "pending", "amount": amount}
    )


def test_a_fresh_creation_is_one_pending_transaction_and_its_key_is_spent_on_both_channels() -> (
    None
):
    state = run(SEED, tokens(), cashin(key="k1"), created())
    assert len(state.txns) == 1 and state.txns[0].pending
    for channel in ("header", "query"):
        for kind in ("CASHIN", "CASHOUT"):
            reuse = cashin(key="k1", channel=channel, kind=kind)
            assert run(SEED, state, reuse, Answer(409)).txns == state.txns
            assert problem_of(SEED, state, reuse, created(kind)).family == IDEMPOTENCY


def test_another_merchants_key_is_open_in_seed_and_fresh_in_reference() -> None:
    state = run(SEED, tokens(), cashin(key="k1"), created())
    other = cashin("rw2", key="k1")
    run(SEED, state, other, Answer(409))
    run(SEED, state, other, created())
    assert problem_of(REF, state, other, Answer(409)).family == REFERENCE


def test_a_key_over_32_characters_is_refused_and_32_is_a_key() -> None:
    state = tokens()
    assert problem_of(SEED, state, cashin(key="k" * 33), created()).family == IDEMPOTENCY
    run(SEED, state, cashin(key="k" * 33), Answer(400))
    assert problem_of(SEED, state, cashin(key="k" * 32), Answer(400)).family == IDEMPOTENCY


def test_the_creation_answer_names_kind_status_and_amount_as_sent() -> None:
    state = tokens()
    assert problem_of(SEED, state, cashin(kind="CASHOUT"), created("CASHIN")).family == LIFECYCLE
    assert problem_of(SEED, state, cashin(), created(amount=99)).family == LIFECYCLE
    assert problem_of(REF, state, cashin(), ok(created().body, 201)).family == REFERENCE
    run(SEED, state, cashin(), ok(created().body, 201))


def test_privileges_read_only_never_creates_cashin_app_cashout_is_a_choice() -> None:
    state = tokens()
    assert problem_of(SEED, state, cashin("r1"), created()).family == PRIVILEGES
    run(SEED, state, cashin("r1"), Answer(403))
    run(SEED, state, cashin("in1", kind="CASHOUT"), Answer(403))
    run(SEED, state, cashin("in1", kind="CASHOUT"), created("CASHOUT"))
    assert (
        problem_of(REF, state, cashin("in1", kind="CASHOUT"), created("CASHOUT")).family
        == REFERENCE
    )


def found(ref: str, status: str = "pending", **kw: Any) -> Answer:
    body = {"ref": ref, "kind": "CASHIN", "amount": 100, "client": NUMBER, "status": status}
    return ok({**body, **kw})


def one(world: World = SEED) -> tuple[State, str]:
    answer = created()
    return run(world, tokens(world), cashin(), answer), answer.body["ref"]


def test_find_is_isolated_by_merchant_and_an_unknown_ref_is_refused() -> None:
    state, ref = one()
    run(SEED, state, Find("rw1", "rw1#1", ref), found(ref))
    assert problem_of(SEED, state, Find("rw2", "rw2#1", ref), found(ref)).family == PRIVILEGES
    run(SEED, state, Find("rw2", "rw2#1", ref), Answer(404))
    unknown = str(uuid.uuid4())
    assert (
        problem_of(SEED, state, Find("rw1", "rw1#1", unknown), found(unknown)).family == LIFECYCLE
    )
    # the number in international form names the same customer
    run(SEED, state, Find("rw1", "rw1#1", ref), found(ref, client="250" + NUMBER[1:]))


def test_another_spelling_may_be_refused_but_never_reaches_what_the_canonical_is_refused() -> None:
    state, ref = one()
    upper = Find("rw2", "rw2#1", ref, spelling="upper")
    assert problem_of(SEED, state, upper, found(ref.upper())).family == SPELLINGS
    run(SEED, state, Find("rw1", "rw1#1", ref, spelling="upper"), Answer(404))
    run(SEED, state, Find("rw1", "rw1#1", ref, spelling="upper"), found(ref.upper()))
    slash = cashin("r1", spelling="slash")
    run(SEED, state, slash, Answer(404))
    assert problem_of(SEED, state, slash, created()).family == SPELLINGS


def test_pending_until_the_customer_acts_then_one_terminal_word_for_ever() -> None:
    state, ref = one()
    mine = Find("rw1", "rw1#1", ref)
    assert problem_of(SEED, state, mine, found(ref, "success")).family == OVER_TIME
    acted = run(SEED, state, Act(ref, "confirm"), Answer(200), at=1.0)
    run(SEED, acted, mine, found(ref), at=2.0)  # the customer's answer may take a moment
    settled = run(SEED, acted, mine, found(ref, "successful"), at=2.0)
    run(SEED, settled, mine, found(ref, "success"), at=3.0)  # one outcome, two words
    assert problem_of(SEED, settled, mine, found(ref, "failed"), at=3.0).family == OVER_TIME
    assert problem_of(SEED, settled, mine, found(ref), at=3.0).family == OVER_TIME
    assert problem_of(
        REF, run(REF, one(REF)[0], Act(ref, "confirm"), Answer(200)), mine, found(ref, "successful")
    ).family in (REFERENCE, LIFECYCLE)
    late = Find("rw1", "rw1#1", ref, expect_processed=True)
    assert problem_of(SEED, acted, late, found(ref), at=9.0).family == LIFECYCLE


def test_a_declared_pending_timeout_allows_failed_without_the_customer() -> None:
    world = World(APPS, pending_timeout_s=3.0)
    state, ref = one(world)
    assert (
        problem_of(world, state, Find("rw1", "rw1#1", ref), found(ref, "failed"), at=0.5).family
        == OVER_TIME
    )
    run(world, state, Find("rw1", "rw1#1", ref), found(ref, "failed"), at=3.5)


def event(
    ref: str, kind: str = "transaction:created", status: str = "pending", **data: Any
) -> dict[str, Any]:
    body = {"ref": ref, "kind": "CASHIN", "amount": 100, "client": NUMBER, "status": status, **data}
    return {"event_id": data.pop("event_id", f"{ref}-{kind}"), "event_kind": kind, "data": body}


def listing(*items: dict[str, Any], total: int | None = None) -> Answer:
    return ok({"transactions": list(items), "total": len(items) if total is None else total})


MINE = (("client", NUMBER),)


def test_the_list_under_the_historys_number_shows_every_due_event_with_its_total() -> None:
    state, ref = one()
    lst = ListEvents("rw1", "rw1#1", MINE)
    run(SEED, state, lst, listing(event(ref)), at=5.0)
    run(SEED, state, lst, listing(), at=0.5)  # within the settle window: may be late
    assert problem_of(SEED, state, lst, listing(), at=5.0).family == EVENTS
    assert problem_of(SEED, state, lst, listing(event(ref), total=0), at=5.0).family == EVENTS
    page = ListEvents("rw1", "rw1#1", MINE, limit=1, offset=0)
    run(SEED, state, page, listing(event(ref), total=1), at=5.0)


def test_events_keep_identity_snapshot_and_merchant() -> None:
    state, ref = one()
    lst = ListEvents("rw1", "rw1#1", MINE)
    seen = run(SEED, state, lst, listing(event(ref)), at=5.0)
    assert (
        problem_of(SEED, seen, lst, listing(event(ref, event_id="other")), at=6.0).family == EVENTS
    )
    assert problem_of(SEED, state, lst, listing(event(ref, amount=5)), at=5.0).family == EVENTS
    stranger = event(str(uuid.uuid4()))
    assert problem_of(SEED, state, lst, listing(event(ref), stranger), at=5.0).family == EVENTS
    other = ListEvents("rw2", "rw2#1", MINE)
    assert problem_of(SEED, state, other, listing(event(ref)), at=5.0).family == PRIVILEGES
    assert (
        problem_of(SEED, state, lst, listing(event(ref), event(ref, event_id="x2")), at=5.0).family
        == EVENTS
    )


def test_a_refused_creation_that_shows_in_the_list_executed_after_all() -> None:
    state = run(SEED, tokens(), cashin(key="k1"), created())
    state = run(SEED, state, cashin(key="k1", amount=200), Answer(409))
    ref = state.txns[0].ref
    lst = ListEvents("rw1", "rw1#1", MINE)
    ghost = event(str(uuid.uuid4()), amount=200)
    assert problem_of(SEED, state, lst, listing(event(ref), ghost), at=5.0).family == IDEMPOTENCY


def test_a_filter_is_honoured_and_a_country_code_filter_may_list_less() -> None:
    state, ref = one()
    wrong = ListEvents("rw1", "rw1#1", (*MINE, ("kind", "CASHOUT")))
    assert problem_of(SEED, state, wrong, listing(event(ref)), at=5.0).family == EVENTS
    spelled = ListEvents("rw1", "rw1#1", (("client", "250" + NUMBER[1:]),), spelling="country-code")
    run(SEED, state, spelled, listing(), at=5.0)
    run(SEED, state, spelled, listing(event(ref)), at=5.0)


def test_tokens_expire_and_refresh_obtains_a_pair() -> None:
    state = tokens()
    short = run(SEED, state, Authorize("rw1", "s#1", 2.0), ok({"access": "a"}), at=0.0)
    mine = Find("rw1", "s#1", str(uuid.uuid4()))
    assert (
        problem_of(
            SEED,
            short,
            Find("rw1", "s#1", short.txns[0].ref) if short.txns else mine,
            Answer(200, {}),
            at=5.0,
        ).family
        == OVER_TIME
    )
    longer = run(SEED, state, Authorize("rw1", "s#1", 10.0), ok({"access": "a"}))
    assert problem_of(SEED, longer, mine, Answer(401), at=0.5).family == OVER_TIME
    refresh = Refresh("rw1", "rw1#1", "rw1#2", REFRESH_PATHS[1], 900.0)
    assert problem_of(SEED, state, refresh, Answer(401)).family == OVER_TIME
    unserved = run(SEED, state, refresh, Answer(404))  # one of the two shapes may not be served
    run(SEED, unserved, refresh, Answer(404))  # ... every time
    other = Refresh("rw1", "rw1#1", "rw1#2", REFRESH_PATHS[0], 900.0)
    assert problem_of(SEED, unserved, other, Answer(404)).family == OVER_TIME  # not neither
    after = run(SEED, state, refresh, ok({"access": "a", "refresh": "r"}))
    run(SEED, after, refresh, Answer(401))  # a used refresh token may be refused
    run(SEED, after, Find("rw1", "rw1#1", str(uuid.uuid4())), Answer(401))  # revocation: open
    rotating = World(APPS, refresh_rotation=True)
    assert (
        problem_of(rotating, after, refresh, ok({"access": "b", "refresh": "s"})).family
        == OVER_TIME
    )


@pytest.mark.parametrize("world", [SEED, REF])
def test_states_are_hashable_and_judging_is_pure(world: World) -> None:
    state, ref = one(world)
    request, answer = Find("rw1", "rw1#1", ref), found(ref)
    first = judge(world, state, request, answer, 1.0, 1.1)
    assert first == judge(world, state, request, answer, 1.0, 1.1)
    assert len({state, *first.states}) >= 1


def test_an_unanswered_creation_is_judged_as_if_it_took_effect() -> None:
    """The checker tries "never happened" itself; the model gives the effect it would have had:
    its transaction exists under a ref an event may show later, and its key is spent."""
    state = run(SEED, tokens(), cashin(key="k1"), Answer(None))
    assert state.landed == {("M1", "CASHIN", 100.0, NUMBER)}
    assert state.key_use("M1", "k1") == "used"
    assert problem_of(SEED, state, cashin(key="k1", channel="query"), created()).family == (
        IDEMPOTENCY
    )
    lst = ListEvents("rw1", "rw1#1", MINE)
    ref = str(uuid.uuid4())
    seen = run(SEED, state, lst, listing(event(ref)), at=5.0)
    assert seen.landed == frozenset() and seen.txn(ref) is not None
    assert problem_of(SEED, state, lst, listing(event(ref, amount=7)), at=5.0).family == EVENTS
    other = ListEvents("rw2", "rw2#1", MINE)
    assert problem_of(SEED, state, other, listing(event(ref)), at=5.0).family == EVENTS
    # one the document has refused changes nothing, whatever became of it
    assert run(SEED, tokens(), cashin("r1"), Answer(None)) == tokens()
    assert run(SEED, tokens(), cashin(key="k" * 33), Answer(None)) == tokens()


def test_an_unanswered_answer_of_the_customer_or_refresh_took_effect_and_a_429_did_not() -> None:
    state, ref = one()
    acted = run(SEED, state, Act(ref, "confirm"), Answer(None), at=1.0)
    run(SEED, acted, Find("rw1", "rw1#1", ref), found(ref, "success"), at=2.0)
    refresh = Refresh("rw1", "rw1#1", "rw1#2", REFRESH_PATHS[0], 900.0)
    spent = run(SEED, state, refresh, Answer(None))
    assert spent.token("rw1#1") is not None and spent.token("rw1#1").spent  # type: ignore[union-attr]
    assert run(SEED, state, Find("rw1", "rw1#1", ref), Answer(None)) == state
    assert run(SEED, tokens(), cashin(key="k1"), Answer(429)) == tokens()
    assert run(SEED, state, Act(ref, "cancel"), Answer(429)) == state
