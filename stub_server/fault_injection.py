"""What each fault switch changes, in one place, applied when a ``StubApp`` is assembled.

``stub_server.fault_catalog`` declares the faults (and the checks each must trip); this module carries
them out. Each fault replaces one rule hook of ``stub_server.state.RuleHooks`` (or one
setting of a rule object) with a broken version, so the handlers keep the document's rules
only and never ask which fault is on. With no fault selected ``install`` changes nothing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Collection
from functools import partial
from typing import TYPE_CHECKING

from stub_server import timefmt
from stub_server.fault_catalog import BAD_SIGNATURE_SUFFIX, EARLY_EXPIRY_S, OUT_OF_ORDER_HOLD_S
from stub_server.rules import lifecycle
from stub_server.rules.idempotency import Persist, key_reused
from stub_server.store import AppRecord, NewTransaction, Store, TxRecord
from stub_server.token_issuer import TokenService

if TYPE_CHECKING:
    from stub_server.state import StubApp


def install(stub: StubApp, faults: Collection[str], rng: random.Random) -> None:
    """Break, in ``stub``, exactly the rules the selected ``faults`` name (``FAULTS``)."""
    hooks = stub.hooks
    settings = stub.settings
    # -- tokens (Authentication 1, 4) -------------------------------------------------------
    if "tokens-never-expire" in faults or "signature-not-verified" in faults:
        stub.tokens = TokenService(
            stub.tokens.key,
            settings.access_ttl_s,
            settings.refresh_ttl_s,
            check_exp="tokens-never-expire" not in faults,
            check_signature="signature-not-verified" not in faults,
        )
    if "refresh-as-access" in faults:
        hooks.access_subs = ("access", "refresh")
    if "early-expiry" in faults:
        hooks.access_max_age_s = EARLY_EXPIRY_S
    if "privileges-ignored" in faults:
        hooks.may_create = _anything_goes
    # -- request bodies and keys (Errors, Limits) -----------------------------------------
    if "server-error-on-malformed" in faults:
        hooks.malformed_json = _server_error
    if "query-key-ignored" in faults:
        stub.keys.read_query = False
    if "long-keys-accepted" in faults:
        stub.keys.max_length = None
    # -- creations (Endpoints 1-2, Errors rule 1) -------------------------------------------
    if "wrong-kind" in faults:
        hooks.stored_kind = _cashout_as_cashin
    if "refs-reused" in faults:
        hooks.new_ref = _every_second_ref_reused(hooks.new_ref)
    persist = hooks.persist
    racy = False
    if "idempotency-ignored" in faults:
        persist = _overwrite_insert(stub.store)
    elif "idempotency-rejected-but-executed" in faults:
        persist = _executed_then_rejected(stub.store)
    elif "idempotency-racy" in faults:
        persist = _overwrite_insert(stub.store)
        racy = True
    elif "key-reuse-other-kind-executes" in faults:
        persist = _other_kind_executed_then_rejected(persist, stub.store)
    if "drop-acknowledged" in faults:
        persist = _dropping(persist, rng, settings.drop_rate)
    if racy:  # the check and the window come before anything else of the store
        persist = _check_then_insert(persist, stub.store)
    hooks.persist = persist
    # -- reads (RC-6, Endpoints 3-4) --------------------------------------------------------
    if "cross-merchant-visible" in faults:
        hooks.visible_merchant = _every_merchant
    if "filter-ignored" in faults:
        hooks.status_filter = _no_filter
    # -- lifecycle (States and transitions) -------------------------------------------------
    if "status-stuck-pending" in faults:
        hooks.sandbox_settle = _left_pending
        hooks.resolve_in_background = False
    if "cancel-reads-success" in faults:
        hooks.sandbox_outcomes = {**hooks.sandbox_outcomes, "cancel": "success"}
    if "processed-event-missing" in faults:
        hooks.record_processed_event = False
    # -- webhook delivery (RC-40) ----------------------------------------------------------
    delivery = stub.webhook_hooks
    if "webhook-bad-signature" in faults:
        delivery.signing_secret = _wrong_secret
    if "webhook-no-retry" in faults:
        delivery.retries = False
    if "webhook-duplicate-new-id" in faults:
        delivery.duplicate_new_id = True
    if "webhook-out-of-order" in faults:
        delivery.out_of_order_hold_s = OUT_OF_ORDER_HOLD_S
    if "webhook-live-signature-only" in faults:
        delivery.signature_formats = ("live",)
    if "processed-changes-again" in faults:
        hooks.may_settle = _any_status
        hooks.sandbox_settle = _settle_again
    if "find-status-disagrees" in faults:
        stub.render.find_status = _opposite_outcome
    # -- rendering (Resources and their fields); wins over any variant's format --------------
    if "timestamp-format" in faults:
        stub.render.utc_text = partial(timefmt.utc_text, broken=True)
        stub.render.offset_text = partial(timefmt.offset_text, broken=True)


def _anything_goes(privilege: str, kind: str) -> bool:
    return True


def _server_error() -> Exception:
    return RuntimeError("fault server-error-on-malformed: unparsed body")


def _cashout_as_cashin(kind: str) -> str:
    return "CASHIN" if kind == "CASHOUT" else kind


def _every_second_ref_reused(new_ref: Callable[[], str]) -> Callable[[], str]:
    creations = 0
    last: str | None = None

    def reused() -> str:
        nonlocal creations, last
        ref = new_ref()
        creations += 1
        if creations % 2 == 0 and last is not None:
            ref = last
        last = ref
        return ref

    return reused


def _overwrite_insert(store: Store) -> Persist:
    """The key is recorded without checking it: a reused key creates a second transaction."""

    async def persist(new: NewTransaction) -> None:
        await store.create_transaction(new, key_mode="overwrite")

    return persist


def _executed_then_rejected(store: Store) -> Persist:
    """A reused key is refused in the answer only: the transaction was inserted first."""

    async def persist(new: NewTransaction) -> None:
        reused = store.key_used(new.key_scope or new.merchant, new.key)
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
        if rng.random() < rate:
            return
        await persist(new)

    return maybe


def _every_merchant(record: AppRecord) -> str | None:
    return None


def _no_filter(status: str | None) -> str | None:
    return None


def _wrong_secret(secret: str) -> str:
    return secret + BAD_SIGNATURE_SUFFIX


def _left_pending(stub: StubApp, tx: TxRecord, action: str) -> TxRecord:
    return tx


def _any_status(status: str) -> bool:
    return True


def _settle_again(stub: StubApp, tx: TxRecord, action: str) -> TxRecord:
    """Settle a pending transaction as the rule does; a processed one is overwritten."""
    if tx.status == "pending":
        return lifecycle.settle(stub, tx, action)
    stub.store.overwrite_status(tx.id, stub.hooks.sandbox_outcomes[action], timefmt.now_us())
    return stub.store.find(tx.ref, None) or tx


def _opposite_outcome(status: str) -> str:
    """find reads success for failed and failed for success."""
    return {"success": "failed", "failed": "success"}.get(status, status)
