"""Pending -> processed (States and transitions): the sandbox, the simulated customer, the
pending time-out.

Checked by LIFE-001..LIFE-005 (and, through the events it records, EVT-*). A transaction is
created ``pending`` and moves once, to ``success`` or ``failed``, recording exactly one
``transaction:processed`` event: the store's ``UPDATE ... WHERE status = 'pending'`` makes that
hold whoever asks first (the sandbox, auto-resolution or the time-out).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from stub_server import timefmt
from stub_server.errors import ApiError
from stub_server.settings import StubSettings
from stub_server.store import Store, TxRecord

log = logging.getLogger("stub_server")

#: The sandbox's actions and the status each one settles a transaction in.
SANDBOX_OUTCOMES: Mapping[str, str] = {"confirm": "success", "cancel": "failed"}

#: How a sandbox action settles a pending transaction: (stub, tx, action) -> the tx to show.
Settle = Callable[["Settling", TxRecord, str], TxRecord]


class _Outcomes(Protocol):
    @property
    def sandbox_outcomes(self) -> Mapping[str, str]: ...
    @property
    def record_processed_event(self) -> bool: ...


class Settling(Protocol):
    """What settling needs of the stub (``state.StubApp`` is one): its store, and the two rule
    hooks the faults replace. A protocol, so the rules stand below the state that uses them."""

    @property
    def store(self) -> Store: ...
    @property
    def hooks(self) -> _Outcomes: ...


def due_for(settings: StubSettings, number: str, created_us: int) -> tuple[int, str]:
    """When and how the simulated customer resolves a new transaction: its auto-resolution
    (``auto_resolve``), or ``failed`` at the pending time-out, whichever comes first."""
    outcome, delay_s = settings.auto_resolve.for_number(number)
    if outcome == "none" or delay_s >= settings.pending_timeout_s:
        return created_us + int(settings.pending_timeout_s * 1_000_000), "failed"
    return created_us + int(delay_s * 1_000_000), outcome


def is_pending(status: str) -> bool:
    """Whether a customer action may still settle a transaction: only while it is pending
    ("It stays there until the customer confirms or cancels", and not after)."""
    return status == "pending"


def settle(stub: Settling, tx: TxRecord, action: str) -> TxRecord:
    """Process ``tx`` as the sandbox ``action`` says, and read it back."""
    status = stub.hooks.sandbox_outcomes[action]
    record_event = stub.hooks.record_processed_event
    if not stub.store.process(tx.id, status, timefmt.now_us(), record_event=record_event):
        raise ApiError(409, "transaction_not_pending", f"transaction {tx.ref} is not pending")
    return stub.store.find(tx.ref, None) or tx


def resolve_due(stub: Settling) -> int:
    """Process every pending transaction whose auto-resolution or time-out is due."""
    now = timefmt.now_us()
    due = [(tx_id, status or "failed") for tx_id, status in stub.store.due(now)]
    if not due:
        return 0
    return stub.store.process_many(due, now, record_event=stub.hooks.record_processed_event)


async def resolve_due_forever(stub: Settling, max_sleep_s: float = 0.1) -> None:
    """Auto-resolution and pending time-out, from the indexed due-time column.

    The due time is stored with the transaction, so resolution survives a restart. Spent
    refresh tokens past their expiry are pruned here too, every second: often enough that a
    conform run sees a prune happen between a token's use and its reuse (AUTH-012 judges it
    again at the run's end), and cheap, a DELETE of a small table.
    """
    prune_at = 0.0
    loop = asyncio.get_running_loop()
    while True:
        try:
            resolve_due(stub)
            if loop.time() >= prune_at:
                stub.store.prune_refresh(timefmt.now_us() // 1_000_000)
                prune_at = loop.time() + 1
            next_due = stub.store.next_due()
        except Exception:  # keep resolving after a transient database error
            log.exception("auto-resolution pass failed")
            next_due = None
        delay = max_sleep_s
        if next_due is not None:
            delay = min(max_sleep_s, max(0.005, (next_due - timefmt.now_us()) / 1e6))
        await asyncio.sleep(delay)
