"""Creations, finds and the customer's answers, as the document allows them.

A creation the configuration allows (privilege, a valid amount and number, a key never used by
its merchant) must create one pending transaction of its kind and amount under a new ref; a key
its merchant used before must be refused with nothing created (on either channel, either kind:
one key, one execution); a key over 32 characters is refused. Find shows the merchant's own
transactions and nobody else's. Where the document is silent the model allows each reading: a
key another merchant used, a cashin application's cashout, reads by cashin and cashout
applications (the reference choices RC-6 and RC-12 narrow these).
"""

from __future__ import annotations

from dataclasses import replace

from conformance.model.records import (
    IDEMPOTENCY,
    LIFECYCLE,
    PRIVILEGES,
    SPELLINGS,
    Act,
    Answer,
    Create,
    Find,
)
from conformance.model.state import State, Txn, World
from conformance.model.status_words import read_status, reference_word
from conformance.model.verdicts import Judged, allow, forbid, note_reference
from paysuite_core.driver.api import UUID_RE, same_amount
from paysuite_core.request_data import same_number

MAX_KEY = 32


def _family(request: Create | Find, family: str) -> str:
    """A rule broken through another spelling is reported as such (MODEL-006)."""
    return family if request.spelling == "canonical" else SPELLINGS


def create(world: World, state: State, request: Create, answer: Answer, done: float) -> Judged:
    app = world.app(request.app)
    what = f"a {app.privilege} application's {request.kind.lower()}"
    key = request.key
    if answer.refused and request.spelling != "canonical":
        return allow(state)  # another spelling of the path may be no route at all
    refused_state = replace(
        state,
        refused=state.refused
        | {(app.merchant, request.kind, float(request.amount), request.number)},
    )
    if key is not None and state.key_use(app.merchant, key) is None and answer.refused:
        refused_state = refused_state.with_key(app.merchant, key, "maybe")
    may = app.may_create(request.kind, "seed")
    if may is False:
        if answer.ok:
            return forbid(
                _family(request, PRIVILEGES),
                f"{what} was accepted ({answer.status})",
                "a refusal (4xx) and nothing created: the privilege does not allow it",
            )
        return allow(refused_state)
    if key is not None and len(key) > MAX_KEY:
        if answer.ok:
            return forbid(
                _family(request, IDEMPOTENCY),
                f"a creation with a {len(key)}-character {request.channel} key was accepted",
                "a refusal (4xx): Idempotency-Key, maximum length 32",
            )
        return allow(refused_state)
    use = state.key_use(app.merchant, key) if key is not None else None
    if use == "used":
        if answer.ok:
            return forbid(
                _family(request, IDEMPOTENCY),
                f"{request.kind.lower()} reusing the {request.channel} key {key!r}, already used "
                f"by this merchant, was accepted ({answer.status}, ref {answer.get('ref')!r})",
                "a refusal (4xx) and nothing executed: a reused key is rejected",
            )
        # the reference refuses a privilege first (RC-12: 403), a reused key then (409)
        unprivileged = app.may_create(request.kind, "reference") is False
        if world.narrowing == "reference" and answer.status != (403 if unprivileged else 409):
            return note_reference(
                refused_state,
                f"a reused key answered {answer.status}",
                "403 (RC-12)" if unprivileged else "409",
            )
        return allow(refused_state)
    if not answer.ok:
        return _refused_creation(world, state, request, answer, refused_state, may)
    return _created(world, state, request, answer, done, may)


def _refused_creation(
    world: World, state: State, request: Create, answer: Answer, refused: State, may: bool | None
) -> Judged:
    app = world.app(request.app)
    key = request.key
    if may is None:  # a cashin application's cashout: the document is silent
        return allow(refused)
    if not float(request.amount).is_integer():
        # the document types the amount a number and gives no precision: a fraction may be
        # refused (RC-13 accepts it)
        if world.narrowing == "reference":
            return note_reference(
                refused, f"an amount of {request.amount!r} was refused", "RC-13: fractions"
            )
        return allow(refused)
    if key is not None and (
        state.key_use(app.merchant, key) == "maybe" or state.key_used_elsewhere(app.merchant, key)
    ):
        if world.narrowing == "reference" and state.key_used_elsewhere(app.merchant, key):
            return note_reference(
                refused,
                f"a key used by another merchant was refused ({answer.status})",
                "RC-6: keys are per merchant",
            )
        return allow(refused)
    family = IDEMPOTENCY if key is not None else PRIVILEGES
    with_key = f" with the fresh {request.channel} key {key!r}" if key is not None else ""
    return forbid(
        family,
        f"a valid {request.kind.lower()} of a {app.privilege} application{with_key} "
        f"answered {answer.status}",
        "acceptance (2xx) and one pending transaction",
    )


def _created(
    world: World, state: State, request: Create, answer: Answer, done: float, may: bool | None
) -> Judged:
    app = world.app(request.app)
    ref = answer.get("ref")
    family = _family(request, LIFECYCLE)
    if not isinstance(ref, str) or not ref:
        return forbid(family, f"a creation answered {answer.status} without a ref", "a new ref")
    earlier = state.txn(ref)
    if earlier is not None:
        return forbid(
            family,
            f"a {request.kind.lower()} answered ref {ref}, the ref of an earlier "
            f"{earlier.kind.lower()} of the history",
            "a new ref: a ref is unique",
        )
    wrong = []
    if answer.get("kind") != request.kind:
        wrong.append(f"kind {answer.get('kind')!r}")
    if answer.get("status") != "pending":
        wrong.append(f"status {answer.get('status')!r}")
    if not same_amount(answer.get("amount"), request.amount):
        wrong.append(f"amount {answer.get('amount')!r} for {request.amount!r} sent")
    if wrong:
        return forbid(
            family,
            f"the {request.kind.lower()} answered {', '.join(wrong)}",
            f"kind {request.kind}, status pending, amount {request.amount!r}",
        )
    txn = Txn(ref, app.merchant, request.kind, request.amount, request.number, created=done)
    after = state.with_txn(txn)
    if request.key is not None:
        after = after.with_key(app.merchant, request.key, "used")
    if world.narrowing == "reference":
        if may is None:
            return note_reference(
                after,
                f"a {app.privilege} application's {request.kind.lower()} was accepted",
                "RC-12: refused (403)",
            )
        if answer.status != 200:
            return note_reference(after, f"a creation answered {answer.status}", "RC-2: 200")
        if not UUID_RE.match(ref):
            return note_reference(after, f"ref {ref!r} is not UUID-shaped", "a UUID")
    return allow(after)


def find(world: World, state: State, request: Find, answer: Answer, done: float) -> Judged:
    app = world.app(request.app)
    txn = state.txn(request.ref)
    if txn is None:
        if answer.ok:
            return forbid(
                _family(request, LIFECYCLE),
                f"find of {request.ref}, a ref no creation answered, answered {answer.status}",
                "a refusal (4xx): no such transaction",
            )
        return allow(state)
    if txn.merchant != app.merchant:
        if answer.ok:
            return forbid(
                _family(request, PRIVILEGES),
                f"merchant {app.merchant}'s find of {txn.ref}, merchant {txn.merchant}'s "
                f"transaction, answered {answer.status}",
                "a refusal (4xx): a merchant sees only its own transactions",
            )
        return allow(state)
    if not answer.ok:
        return _refused_find(world, state, request, answer)
    return _found(world, state, request, answer, txn, done)


def _refused_find(world: World, state: State, request: Find, answer: Answer) -> Judged:
    app = world.app(request.app)
    if request.spelling != "canonical" and answer.refused:
        return allow(state)
    may = app.may_read("seed")
    if may is None and answer.refused:
        if world.narrowing == "reference":
            return note_reference(
                state,
                f"a {app.privilege} application's find answered {answer.status}",
                "RC-12: any privilege reads",
            )
        return allow(state)
    return forbid(
        _family(request, LIFECYCLE),
        f"find of {request.ref}, a transaction of this merchant, answered {answer.status}",
        "the transaction (2xx)",
    )


def _found(
    world: World, state: State, request: Find, answer: Answer, txn: Txn, done: float
) -> Judged:
    family = _family(request, LIFECYCLE)
    wrong = []
    if str(answer.get("ref", "")).lower() != txn.ref.lower():
        wrong.append(f"ref {answer.get('ref')!r}")
    if answer.get("kind") != txn.kind:
        wrong.append(f"kind {answer.get('kind')!r}")
    if not same_amount(answer.get("amount"), txn.amount):
        wrong.append(f"amount {answer.get('amount')!r}")
    if not same_number(answer.get("client"), txn.number):
        wrong.append(f"client {answer.get('client')!r}")
    if wrong:
        return forbid(
            family,
            f"find of {txn.ref} answered {', '.join(wrong)}",
            f"the transaction as created: {txn.kind}, amount {txn.amount!r}, client {txn.number}",
        )
    if request.expect_processed and answer.get("status") == "pending" and txn.pending:
        return forbid(
            family,
            f"{txn.ref} still reads pending long after the customer's "
            + " and ".join(outcome for outcome, _ in txn.asked),
            "one terminal status once the customer confirmed or cancelled",
        )
    after, problem = read_status(world, txn, answer.get("status"), done, f"find of {txn.ref}")
    if problem is not None:
        if request.spelling != "canonical":
            problem = replace(problem, family=SPELLINGS)
        return Judged((), problem)
    state = state.with_txn(after)
    if world.narrowing == "reference" and txn.pending and not after.pending:
        better = reference_word(after, str(after.word))
        if better is not None:
            return note_reference(state, f"{txn.ref} reads {after.word!r}", f"RC-17: {better!r}")
    return allow(state)


def act(world: World, state: State, request: Act, answer: Answer, done: float) -> Judged:
    """The customer's answer through the driver: it is no part of the document, so its own
    answer is never judged; once the driver took it, the transaction may leave pending."""
    txn = state.txn(request.ref)
    if txn is None or not answer.ok or not txn.pending:
        return allow(state)
    return allow(state.with_txn(replace(txn, asked=(*txn.asked, (request.outcome, done)))))


def landed(world: World, state: State, request: Create) -> Judged:
    """A creation that got no answer, had it taken effect: the transaction exists (its ref
    unknown until an event shows it) and its key is spent. One the document has the target
    refuse (a read-only application, a key over 32 characters or used before) changes
    nothing. The checker itself tries the other case, that it never happened."""
    app = world.app(request.app)
    key = request.key
    if request.spelling != "canonical" or app.may_create(request.kind, "seed") is False:
        return allow(state)
    if key is not None and (len(key) > MAX_KEY or state.key_use(app.merchant, key) == "used"):
        return allow(state)
    landing = (app.merchant, request.kind, float(request.amount), request.number)
    after = replace(state, landed=state.landed | {landing})
    if key is not None:
        after = after.with_key(app.merchant, key, "used")
    return allow(after)
