"""Where each fault of ``fault_catalog`` bites, applied when a ``StubApp`` is assembled.

Each fault replaces one rule hook of ``stub_server.state.RuleHooks`` (or one setting of a rule
object) with a broken version, so the handlers keep the document's rules only and never ask
which fault is on. With no fault selected ``install`` changes nothing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Collection
from functools import partial

from stub_server import timefmt
from stub_server.fault_catalog import BAD_SIGNATURE_SUFFIX, EARLY_EXPIRY_S, OUT_OF_ORDER_HOLD_S
from stub_server.rules import lifecycle
from stub_server.rules.idempotency import Persist, key_reused
from stub_server.settings import StubSettings
from stub_server.state import StubApp
from stub_server.store import NewTransaction, Store, TxRecord

#: Faults that each set one attribute: fault -> (the object's path on ``StubApp``, attribute,
#: the broken value).
_SETS: dict[str, tuple[str, str, object]] = {
    "tokens-never-expire": ("tokens", "check_exp", False),
    "signature-not-verified": ("tokens", "check_signature", False),
    "refresh-as-access": ("hooks", "access_subs", ("access", "refresh")),
    "early-expiry": ("hooks", "access_max_age_s", EARLY_EXPIRY_S),
    "privileges-ignored": ("hooks", "may_create", lambda privilege, kind: True),
    "server-error-on-malformed": (
        "hooks",
        "malformed_json",
        lambda: RuntimeError("fault server-error-on-malformed: unparsed body"),
    ),
    "query-key-ignored": ("keys", "read_query", False),
    "long-keys-accepted": ("keys", "max_length", None),
    "wrong-kind": ("hooks", "stored_kind", lambda kind: "CASHIN" if kind == "CASHOUT" else kind),
    "cross-merchant-visible": ("hooks", "visible_merchant", lambda record: None),
    "filter-ignored": ("hooks", "status_filter", lambda status: None),
    "processed-event-missing": ("hooks", "record_processed_event", False),
    "webhook-bad-signature": (
        "webhook_hooks",
        "signing_secret",
        lambda secret: secret + BAD_SIGNATURE_SUFFIX,
    ),
    "webhook-no-retry": ("webhook_hooks", "retries", False),
    "webhook-duplicate-new-id": ("webhook_hooks", "duplicate_new_id", True),
    "webhook-out-of-order": ("webhook_hooks", "out_of_order_hold_s", OUT_OF_ORDER_HOLD_S),
    "webhook-live-signature-only": ("webhook_hooks", "signature_formats", ("live",)),
    # find reads success for failed and failed for success
    "find-status-disagrees": (
        "render",
        "find_status",
        lambda status: {"success": "failed", "failed": "success"}.get(status, status),
    ),
}


def assemble(settings: StubSettings) -> StubApp:
    """The stub as ``settings`` say, its faults installed: the one way a ``StubApp`` is built,
    so that the faults are applied here and the state knows nothing of them."""
    stub = StubApp(settings)
    install(stub, settings.faults, random.Random())
    return stub


def install(stub: StubApp, faults: Collection[str], rng: random.Random) -> None:
    """Break, in ``stub``, exactly the rules the selected ``faults`` name (``FAULTS``)."""
    for fault in faults:
        if fault in _SETS:
            where, attribute, value = _SETS[fault]
            setattr(getattr(stub, where), attribute, value)
    hooks = stub.hooks
    if "refs-reused" in faults:
        hooks.new_ref = _every_second_ref_reused(hooks.new_ref)
    hooks.persist = _persist(stub, faults, rng)
    if "status-stuck-pending" in faults:
        hooks.sandbox_settle = lambda stub, tx, action: tx
        hooks.resolve_in_background = False
    if "cancel-reads-success" in faults:
        hooks.sandbox_outcomes = {**hooks.sandbox_outcomes, "cancel": "success"}
    if "processed-changes-again" in faults:
        hooks.may_settle = lambda status: True
        hooks.sandbox_settle = _settle_again
    # wins over any variant's format
    if "timestamp-format" in faults:
        stub.render.utc_text = partial(timefmt.utc_text, broken=True)
        stub.render.offset_text = partial(timefmt.offset_text, broken=True)


def _persist(stub: StubApp, faults: Collection[str], rng: random.Random) -> Persist:
    """How a creation is stored under the idempotency faults (the rule when none is on)."""
    store = stub.store
    persist = stub.hooks.persist
    racy = False
    if "idempotency-ignored" in faults:
        persist = _overwrite_insert(store)
    elif "idempotency-rejected-but-executed" in faults:
        persist = _overwrite_insert(store, refuse_reuse=True)
    elif "idempotency-racy" in faults:
        persist = _overwrite_insert(store)
        racy = True
    elif "key-reuse-other-kind-executes" in faults:
        persist = _other_kind_executed_then_rejected(persist, store)
    if "drop-acknowledged" in faults:
        persist = _dropping(persist, rng, stub.settings.drop_rate)
    if racy:  # the check and the window come before anything else of the store
        persist = _check_then_insert(persist, store)
    return persist


def _every_second_ref_reused(new_ref: Callable[[], str]) -> Callable[[], str]:
    """Refs a, a, b, b, ...: every second creation gets the previous creation's ref."""
    refs = (ref for fresh in iter(new_ref, None) for ref in (fresh, fresh))
    return refs.__next__


def _overwrite_insert(store: Store, *, refuse_reuse: bool = False) -> Persist:
    """The key is recorded without checking it: a reused key creates a second transaction.
    ``refuse_reuse``: and is refused in the answer only, the transaction inserted first."""

    async def persist(new: NewTransaction) -> None:
        reused = refuse_reuse and store.key_used(new.key_scope or new.merchant, new.key)
        await store.create_transaction(new, key_mode="overwrite")
        if reused:
            raise key_reused(new.key)

    return persist


def _other_kind_executed_then_rejected(persist: Persist, store: Store) -> Persist:
    """A key reused on the other kind is refused in the answer only (the transaction was
    inserted first); on its own kind the rule holds. The kind a key was first used with is kept
    by this hook alone (a fault needs no column of its own)."""
    first_kinds: dict[tuple[str, str], str] = {}

    async def persist_other_kind(new: NewTransaction) -> None:
        slot = (new.key_scope or new.merchant, new.key)
        first = first_kinds.get(slot)
        if first is not None and first != new.kind and store.key_used(*slot):
            await store.create_transaction(new, key_mode="overwrite")
            raise key_reused(new.key)
        await persist(new)
        first_kinds.setdefault(slot, new.kind)

    return persist_other_kind


def _check_then_insert(persist: Persist, store: Store) -> Persist:
    """Check, then wait, then insert: sequential reuse is still refused, concurrent is not."""

    async def racy(new: NewTransaction) -> None:
        if store.key_used(new.key_scope or new.merchant, new.key):
            raise key_reused(new.key)
        await asyncio.sleep(0.02)  # the deliberate window between check and insert
        await persist(new)

    return racy


def _dropping(persist: Persist, rng: random.Random, rate: float) -> Persist:
    """A fraction ``rate`` of creations is acknowledged without being stored."""

    async def maybe(new: NewTransaction) -> None:
        if rng.random() >= rate:
            await persist(new)

    return maybe


def _settle_again(stub: lifecycle.Settling, tx: TxRecord, action: str) -> TxRecord:
    """Settle a pending transaction as the rule does; a processed one is overwritten."""
    if tx.status == "pending":
        return lifecycle.settle(stub, tx, action)
    status = stub.hooks.sandbox_outcomes[action]
    stub.store.process_many(
        [(tx.id, status)], timefmt.now_us(), record_event=False, pending_only=False
    )
    return stub.store.find(tx.ref, None) or tx
