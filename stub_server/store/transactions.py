"""Transactions: creation with its idempotency key, lookup, and the pending -> processed move
(Errors rule 1: IDEM-001/002/005/007; Endpoints 1-3; States and transitions: LIFE-001..004).

Why it is race-free without locks: every call runs on the event loop's thread, the idempotency
row, the transaction, its created event and its webhook delivery go in one SQL transaction, and
a transaction is processed by ``UPDATE ... WHERE status = 'pending'`` exactly once. A creation
is all or nothing without a SAVEPOINT: the idempotency insert goes first (a duplicate key fails
that one statement, which writes nothing), and if a later insert fails the rows already
inserted are deleted again before the error propagates (``_undo_creation``).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from typing import Literal

from stub_server.store.records import TX_COLUMNS, KeyReused, NewTransaction, TxRecord
from stub_server.store.refs import uuid4_text
from stub_server.store.webhook_outbox import WebhookOutbox

#: ``overwrite``: the key is recorded without checking it (fault switches only).
KeyMode = Literal["strict", "overwrite"]
LOOKUP_CACHE_SIZE = 20_000


class Transactions(WebhookOutbox):
    """``lookups`` caches what a caller derived from a committed transaction (the find handler:
    its rendered response), by ref and then by the merchant the read was scoped to. Every write
    that touches a ref drops that ref's entries in the same synchronous call, before anything
    else can read, so a cached value is always what a read of the committed row would give now.
    """

    lookups: dict[str, dict[str | None, bytes]]

    def forget_ref(self, ref: str) -> None:
        self.lookups.pop(ref, None)

    def cached_lookup(self, ref: str, merchant: str | None) -> bytes | None:
        entry = self.lookups.get(ref)
        return None if entry is None else entry.get(merchant)

    def remember_lookup(self, ref: str, merchant: str | None, value: bytes) -> None:
        """``value`` was derived from ``find(ref, merchant)`` just now (committed data)."""
        lookups = self.lookups
        if len(lookups) >= LOOKUP_CACHE_SIZE:
            lookups.clear()
        lookups.setdefault(ref, {})[merchant] = value

    def key_used(self, scope: str, key: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM idempotency WHERE merchant = ? AND key = ?", (scope, key)
        ).fetchone()
        return row is not None

    def create_transaction(
        self, new: NewTransaction, *, key_mode: KeyMode = "strict"
    ) -> asyncio.Future[None]:
        """Insert the key, the transaction and its created event, all or nothing; returns the
        future of the batch's COMMIT: await it before acknowledging."""
        db = self._db
        self.open_batch()
        if key_mode == "overwrite":
            # INSERT OR REPLACE may have replaced an older key row: only a SAVEPOINT can put
            # it back if a later insert fails. Fault switches only, so not the fast path.
            db.execute("SAVEPOINT creation")
            try:
                self._insert_creation("INSERT OR REPLACE", new)
            except BaseException:
                db.execute("ROLLBACK TO creation")
                db.execute("RELEASE creation")
                raise
            db.execute("RELEASE creation")
        else:
            self._insert_creation("INSERT", new)
        return self.batch_commit()

    def _insert_creation(self, insert: str, new: NewTransaction) -> None:
        """The key goes first: a duplicate fails that statement alone, which writes nothing
        (SQLite undoes a failed statement), so ``KeyReused`` leaves the batch untouched."""
        db = self._db
        scope = new.key_scope or new.merchant
        self.forget_ref(new.ref)  # refs-reused: a new row answers find for an old ref
        try:
            db.execute(
                f"{insert} INTO idempotency (merchant, key, ref, created_us) VALUES (?, ?, ?, ?)",
                (scope, new.key, new.ref, new.created_us),
            )
        except sqlite3.IntegrityError:
            raise KeyReused(new.key) from None
        tx_id: int | None = None
        try:
            tx_id = db.execute(
                "INSERT INTO transactions (ref, merchant, app_id, kind, amount, client, fee,"
                " status, created_us, processed_us, webhook_mode, idem_key, due_us, due_status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, NULL, ?, ?, ?, ?)",
                (
                    new.ref, new.merchant, new.app_id, new.kind, new.amount, new.client, new.fee,
                    new.created_us, new.webhook_mode, new.key, new.due_us, new.due_status,
                ),
            ).lastrowid  # fmt: skip
            if tx_id is not None:
                self._record_event(
                    tx_id, "transaction:created", new.created_us, new.ref, new.webhook_mode
                )
        except BaseException:
            if insert == "INSERT":  # the SAVEPOINT of the other mode undoes it instead
                self._undo_creation(scope, new.key, tx_id)
            self.forget_ref(new.ref)
            raise

    def _undo_creation(self, scope: str, key: str, tx_id: int | None) -> None:
        """Delete what a failed creation inserted, unless SQLite rolled the whole batch back
        (it does on some I/O errors), in which case there is nothing left to delete."""
        db = self._db
        if not db.in_transaction:
            return
        if tx_id is not None:
            db.execute("DELETE FROM transactions WHERE id = ?", (tx_id,))
        db.execute("DELETE FROM idempotency WHERE merchant = ? AND key = ?", (scope, key))

    def _record_event(
        self, tx_id: int, event_kind: str, now_us: int, ref: str, mode: str | None
    ) -> None:
        """Insert ``tx_id``'s event as its row reads now, and its webhook delivery, both or
        neither (inside the caller's SQL transaction)."""
        db = self._db
        event_id = uuid4_text()
        event_seq = db.execute(
            "INSERT INTO events (event_id, event_kind, created_us, merchant, ref, kind, client,"
            " amount, fee, status, tx_created_us, processed_us) SELECT ?, ?, ?, merchant, ref,"
            " kind, client, amount, fee, status, created_us, processed_us FROM transactions"
            " WHERE id = ?",
            (event_id, event_kind, now_us, tx_id),
        ).lastrowid
        if not self.webhook_urls or event_seq is None:
            return
        try:
            self.enqueue_delivery(event_seq, event_id, ref, event_kind, mode, now_us)
        except BaseException:
            if db.in_transaction:  # unless SQLite rolled the whole batch back
                db.execute("DELETE FROM webhook_outbox WHERE event_seq = ?", (event_seq,))
                db.execute("DELETE FROM events WHERE seq = ?", (event_seq,))
            raise

    def find(self, ref: str, merchant: str | None) -> TxRecord | None:
        """The latest transaction with ``ref``, within ``merchant`` unless that is None."""
        scoped = "" if merchant is None else " AND merchant = ?"
        row = self.conn.execute(
            f"SELECT {TX_COLUMNS} FROM transactions WHERE ref = ?{scoped} ORDER BY id DESC LIMIT 1",
            (ref,) if merchant is None else (ref, merchant),
        ).fetchone()
        return None if row is None else TxRecord(*row)

    def process(self, tx_id: int, status: str, now_us: int, *, record_event: bool) -> bool:
        """False when it was no longer pending."""
        return self.process_many([(tx_id, status)], now_us, record_event=record_event) == 1

    def process_many(
        self,
        items: Sequence[tuple[int, str]],
        now_us: int,
        *,
        record_event: bool,
        pending_only: bool = True,
    ) -> int:
        """How many of (id, status) were pending: each changes at most once, whoever asks
        (sandbox, auto-resolution, time-out) and in whatever order. ``pending_only=False``:
        the ``processed-changes-again`` fault, which changes a processed one again."""
        conn = self.conn
        done = 0
        pending = " AND status = 'pending'" if pending_only else ""
        conn.execute("BEGIN IMMEDIATE")
        try:
            for tx_id, status in items:
                updated = conn.execute(
                    "UPDATE transactions SET status = ?, processed_us = ?, due_us = NULL"
                    f" WHERE id = ?{pending} RETURNING ref, webhook_mode",
                    (status, now_us, tx_id),
                ).fetchall()
                if len(updated) != 1:
                    continue
                ref, mode = updated[0]
                self.forget_ref(ref)
                done += 1
                if record_event:
                    self._record_event(tx_id, "transaction:processed", now_us, ref, mode)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self.lookups.clear()  # refs updated before the failure are back as they were
            raise
        self.count_commit()
        return done

    def due(self, now_us: int, limit: int = 500) -> list[tuple[int, str | None]]:
        """(id, status) of the pending transactions whose resolution or time-out is due."""
        rows: list[tuple[int, str | None]] = self.conn.execute(
            "SELECT id, due_status FROM transactions"
            " WHERE status = 'pending' AND due_us <= ? ORDER BY due_us LIMIT ?",
            (now_us, limit),
        ).fetchall()
        return rows

    def next_due(self) -> int | None:
        row = self.conn.execute(
            "SELECT MIN(due_us) FROM transactions WHERE status = 'pending'"
        ).fetchone()
        return None if row is None else row[0]
