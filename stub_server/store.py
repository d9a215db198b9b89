"""SQLite persistence: applications, transactions, events, idempotency keys, used refresh tokens.

Why these choices:
- stdlib ``sqlite3`` in WAL mode with ``synchronous=NORMAL``. In WAL mode a commit is in the WAL
  file (in the OS page cache) before ``COMMIT`` returns, so every acknowledged write survives a
  SIGKILL of the stub; only a power loss or OS crash can lose the last commits, which a test
  double may accept in exchange for not paying an fsync per request.
- Every call is synchronous on the event loop's thread. That serializes writers, so the
  idempotency insert and the ``pending`` -> processed update are race-free without locks: the
  idempotency row, the transaction and its created event go in one SQL transaction, and a
  transaction is processed by ``UPDATE ... WHERE status = 'pending'`` exactly once.
- Each write commits before the handler answers 2xx. Creations use *group commit*: the first
  creation of an event-loop turn opens a SQL transaction, later ones in the same turn join it,
  and one COMMIT, scheduled with ``call_soon``, acknowledges them all: their handlers await that
  commit before answering. Any other use of the connection (reads, processing, refresh rotation)
  commits the open batch first, so reads only ever see committed data.
- A creation is all or nothing without a SAVEPOINT: the idempotency insert goes first (a
  duplicate key fails that one statement, which writes nothing), and if a later insert fails the
  rows already inserted are deleted again before the error propagates (``_undo_creation``).
- The events list's ``total`` and ``amount`` (RC-27) come from ``event_totals``, one row per
  (merchant, event kind, kind, status) kept by triggers on ``events`` inside the same SQL
  statement as the insert, so they are exactly what a scan would count and sum, and the
  unfiltered list (or one filtered by status, kind or event kind) costs the same at any store
  size. Whenever the cells cannot give the scan's exact answer (a float amount, whose sum depends
  on the order of addition; a sum past SQLite's integers) the list falls back to the scan.
- Checkpoints (copying the WAL back into the database file, with an fsync) run on a background
  thread with its own connection, not inside the COMMIT of a request (``Checkpointer``).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stub_server.secrets_hash import hash_secret

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS applications (
    client_id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    privilege TEXT NOT NULL,
    merchant TEXT NOT NULL,
    created_us INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS transactions (
    id INTEGER PRIMARY KEY,
    ref TEXT NOT NULL,
    merchant TEXT NOT NULL,
    app_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    amount NOT NULL,
    client TEXT NOT NULL,
    fee NOT NULL,
    status TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    processed_us INTEGER,
    webhook_mode TEXT,
    idem_key TEXT NOT NULL,
    due_us INTEGER,
    due_status TEXT
);
CREATE INDEX IF NOT EXISTS tx_ref ON transactions(ref);
CREATE INDEX IF NOT EXISTS tx_due ON transactions(due_us) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL,
    event_kind TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    merchant TEXT NOT NULL,
    ref TEXT NOT NULL,
    kind TEXT NOT NULL,
    client TEXT NOT NULL,
    amount NOT NULL,
    fee NOT NULL,
    status TEXT NOT NULL,
    tx_created_us INTEGER NOT NULL,
    processed_us INTEGER
);
CREATE INDEX IF NOT EXISTS ev_merchant_time ON events(merchant, created_us, seq, amount);
CREATE INDEX IF NOT EXISTS ev_ref ON events(ref);
CREATE INDEX IF NOT EXISTS ev_client_time ON events(merchant, client, created_us, amount);
CREATE TABLE IF NOT EXISTS event_totals (
    merchant TEXT NOT NULL,
    event_kind TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    n INTEGER NOT NULL,
    amount NOT NULL,
    n_real INTEGER NOT NULL,
    PRIMARY KEY (merchant, event_kind, kind, status)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idempotency (
    merchant TEXT NOT NULL,
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    PRIMARY KEY (merchant, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS used_refresh (jti TEXT PRIMARY KEY, exp INTEGER NOT NULL) WITHOUT ROWID;
"""

#: Created, with the rows they summarize, in one SQL transaction (``Store._migrate``). ``amount``
#: is an exact integer sum while every amount is an integer; SQLite's ``+`` turns it into a REAL
#: on integer overflow, and ``n_real`` counts float amounts: either sends the list to the scan.
_TOTALS_TRIGGERS = """
CREATE TRIGGER ev_totals_insert AFTER INSERT ON events BEGIN
    INSERT INTO event_totals (merchant, event_kind, kind, status, n, amount, n_real)
    VALUES (new.merchant, new.event_kind, new.kind, new.status, 1, new.amount,
            typeof(new.amount) = 'real')
    ON CONFLICT (merchant, event_kind, kind, status) DO UPDATE SET
        n = n + 1, amount = amount + excluded.amount, n_real = n_real + excluded.n_real;
END;
CREATE TRIGGER ev_totals_delete AFTER DELETE ON events BEGIN
    UPDATE event_totals SET n = n - 1, amount = amount - old.amount,
        n_real = n_real - (typeof(old.amount) = 'real')
    WHERE merchant = old.merchant AND event_kind = old.event_kind AND kind = old.kind
        AND status = old.status;
END;
CREATE TRIGGER ev_totals_update AFTER UPDATE OF merchant, event_kind, kind, status, amount
ON events BEGIN
    UPDATE event_totals SET n = n - 1, amount = amount - old.amount,
        n_real = n_real - (typeof(old.amount) = 'real')
    WHERE merchant = old.merchant AND event_kind = old.event_kind AND kind = old.kind
        AND status = old.status;
    INSERT INTO event_totals (merchant, event_kind, kind, status, n, amount, n_real)
    VALUES (new.merchant, new.event_kind, new.kind, new.status, 1, new.amount,
            typeof(new.amount) = 'real')
    ON CONFLICT (merchant, event_kind, kind, status) DO UPDATE SET
        n = n + 1, amount = amount + excluded.amount, n_real = n_real + excluded.n_real;
END;
"""
_TOTALS_FILL = (
    "INSERT INTO event_totals (merchant, event_kind, kind, status, n, amount, n_real)"
    " SELECT merchant, event_kind, kind, status, COUNT(*), {total}(amount),"
    " SUM(typeof(amount) = 'real') FROM events GROUP BY merchant, event_kind, kind, status"
)
#: Indexes of earlier versions, replaced by wider ones that also cover ``amount``.
_OLD_INDEXES = ("ev_merchant", "ev_client")
#: Commits after which the background thread checkpoints (a creation batch writes about ten
#: pages, so roughly SQLite's default of 1000 pages), and the backstop, in WAL pages, at which
#: the request path would checkpoint itself if that thread fell behind.
CHECKPOINT_COMMITS = 100
AUTOCHECKPOINT_BACKSTOP_PAGES = 20000


_hex_pool = ""
_hex_pos = 0


def uuid4_text() -> str:
    """``str(uuid.uuid4())`` without a ``UUID`` object or a system call per ref (a hot path of
    creation: two per creation). The randomness is ``os.urandom``'s, drawn 4 KiB at a time;
    only the event loop's thread calls this."""
    global _hex_pool, _hex_pos
    pos = _hex_pos
    if pos >= len(_hex_pool):
        _hex_pool = os.urandom(4096).hex()
        pos = 0
    _hex_pos = pos + 32
    h = _hex_pool[pos : pos + 32]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


_TX_COLUMNS = (
    "id, ref, merchant, app_id, kind, amount, client, fee, status, created_us, processed_us"
)
_EVENT_COLUMNS = (
    "event_id, event_kind, created_us, merchant, ref, kind, client, amount, fee, status, "
    "tx_created_us, processed_us"
)


@dataclass(frozen=True, slots=True)
class AppRecord:
    client_id: str
    secret_hash: str
    privilege: str
    merchant: str


@dataclass(frozen=True, slots=True)
class TxRecord:
    id: int
    ref: str
    merchant: str
    app_id: str
    kind: str
    amount: Any
    client: str
    fee: Any
    status: str
    created_us: int
    processed_us: int | None


@dataclass(frozen=True, slots=True)
class EventRecord:
    event_id: str
    event_kind: str
    created_us: int
    merchant: str
    ref: str
    kind: str
    client: str
    amount: Any
    fee: Any
    status: str
    tx_created_us: int
    processed_us: int | None


@dataclass(frozen=True, slots=True)
class EventQuery:
    merchant: str | None
    status: str | None = None
    client: str | None = None
    ref: str | None = None
    kind: str | None = None
    event_kind: str | None = None
    from_us: int | None = None
    to_us: int | None = None
    limit: int = 20
    offset: int = 0
    oldest_first: bool = False


@dataclass(frozen=True, slots=True)
class NewTransaction:
    """What a creation stores: the transaction, its idempotency key and its resolution plan."""

    ref: str
    merchant: str
    app_id: str
    kind: str
    amount: Any
    client: str
    fee: Any
    created_us: int
    webhook_mode: str | None
    key: str
    due_us: int | None
    due_status: str | None
    #: The idempotency row's scope: the merchant (RC-6), or one service-wide value under the
    #: ``global-keys`` behaviour. ``None`` means ``merchant``.
    key_scope: str | None = None


class KeyReused(Exception):
    """The idempotency key is already recorded in its scope (the merchant, or global)."""


def make_private(path: str) -> None:
    """Create the database file mode 0600 before SQLite opens it, and tighten an existing one
    and its ``-wal``/``-shm``: they hold merchants' transactions and customers' numbers.

    SQLite creates ``-wal`` and ``-shm`` with the database file's permissions, so a 0600
    database is enough for files made from now on.
    """
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for suffix in ("", "-wal", "-shm"):
        try:
            os.chmod(path + suffix, 0o600)
        except FileNotFoundError:
            pass


def where_clause(
    equal: Iterable[tuple[str, Any]], from_us: int | None, to_us: int | None
) -> tuple[str, list[Any]]:
    """`` WHERE col = ? AND ... AND created_us >= ? ...`` and its parameters: the filters both
    lists (events and the SDKs' transactions) apply the same way. ``None`` values filter
    nothing; an empty filter set is an empty clause."""
    where: list[str] = []
    params: list[Any] = []
    for column, value in equal:
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if from_us is not None:
        where.append("created_us >= ?")
        params.append(from_us)
    if to_us is not None:
        where.append("created_us <= ?")
        params.append(to_us)
    return (" WHERE " + " AND ".join(where)) if where else "", params


class Store:
    """One connection, used only from the event loop thread (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path != ":memory:" and not path.startswith("file:"):
            # ``--db reports/run1/stub.db`` should just work, as ``--credentials`` does
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            make_private(path)
        self._db = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, cached_statements=256
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute("PRAGMA cache_size=-32768")  # 32 MiB: indexes of large stores
        self._db.executescript(SCHEMA)
        self._migrate()
        self._batch: list[asyncio.Future[None]] | None = None
        self._checkpointer: Checkpointer | None = None
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
            self._db.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_BACKSTOP_PAGES}")
            self._checkpointer = Checkpointer(path)

    def _migrate(self) -> None:
        """Bring a database of an earlier version up to this schema, atomically: the running
        totals are filled from the events and their triggers created in one SQL transaction."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            names = {
                row[0]
                for row in db.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('trigger', 'index')"
                )
            }
            if "ev_totals_insert" not in names:
                db.execute("DELETE FROM event_totals")
                try:
                    db.execute(_TOTALS_FILL.format(total="SUM"))
                except sqlite3.OperationalError:  # integer overflow: REAL cells, scanned later
                    db.execute(_TOTALS_FILL.format(total="TOTAL"))
                for statement in _TOTALS_TRIGGERS.split("END;")[:-1]:
                    db.execute(statement + "END;")
            for index in _OLD_INDEXES:
                if index in names:
                    db.execute(f"DROP INDEX {index}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, after committing any open batch of creations."""
        if self._batch is not None:
            self.flush()
        return self._db

    def flush(self) -> None:
        """Commit the open batch of creations and wake the handlers waiting on it."""
        waiters, self._batch = self._batch, None
        if waiters is None:
            return
        try:
            self._db.execute("COMMIT")
        except Exception as exc:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        if self._checkpointer is not None:
            self._checkpointer.commits += 1
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def close(self) -> None:
        self.flush()
        if self._checkpointer is not None:
            self._checkpointer.stop()
        try:
            self._db.execute("PRAGMA optimize")
        except sqlite3.Error:
            pass
        self._db.close()

    # -- meta -----------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def erase_meta(self, key: str) -> None:
        """Delete a meta row so that its bytes are gone from the files too (a secret): SQLite
        keeps deleted content in free pages and in the WAL unless told otherwise."""
        conn = self.conn
        previous = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
        conn.execute("PRAGMA secure_delete=ON")
        try:
            if conn.execute("DELETE FROM meta WHERE key = ?", (key,)).rowcount:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.execute(f"PRAGMA secure_delete={previous}")  # the build's default otherwise

    # -- applications ---------------------------------------------------------------------
    def create_app(self, merchant: str, privilege: str, now_us: int) -> tuple[str, str]:
        """Create an application; return (client_id, client_secret). The secret is not kept."""
        client_id = str(uuid.uuid4())
        client_secret = secrets.token_hex(32)
        self.conn.execute(
            "INSERT INTO applications (client_id, secret_hash, privilege, merchant, created_us)"
            " VALUES (?, ?, ?, ?, ?)",
            (client_id, hash_secret(client_secret), privilege, merchant, now_us),
        )
        return client_id, client_secret

    def app(self, client_id: str) -> AppRecord | None:
        row = self.conn.execute(
            "SELECT client_id, secret_hash, privilege, merchant FROM applications"
            " WHERE client_id = ?",
            (client_id,),
        ).fetchone()
        return None if row is None else AppRecord(*row)

    def app_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM applications").fetchone()[0])

    # -- refresh rotation -----------------------------------------------------------------
    def use_refresh(self, jti: str, exp: int) -> bool:
        """Record a refresh token as spent; False when it already was."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO used_refresh (jti, exp) VALUES (?, ?)", (jti, exp)
        )
        return cur.rowcount == 1

    def prune_refresh(self, now_s: int) -> None:
        self.conn.execute("DELETE FROM used_refresh WHERE exp < ?", (now_s,))

    # -- transactions ---------------------------------------------------------------------
    def key_used(self, scope: str, key: str) -> bool:
        """Whether ``key`` has a row in ``scope`` (a merchant, or the global scope)."""
        row = self.conn.execute(
            "SELECT 1 FROM idempotency WHERE merchant = ? AND key = ?", (scope, key)
        ).fetchone()
        return row is not None

    def create_transaction(
        self, new: NewTransaction, *, key_mode: str = "strict"
    ) -> asyncio.Future[None]:
        """Insert the key, the transaction and its created event, all or nothing.

        Returns the future of the batch's COMMIT: await it before acknowledging. Must be called
        from the event loop. ``key_mode``: ``strict`` raises ``KeyReused`` at once on a duplicate
        key (the rule); ``overwrite`` records the key without checking it (faults only).
        """
        db = self._db
        loop = asyncio.get_running_loop()
        if self._batch is None:
            db.execute("BEGIN IMMEDIATE")
            self._batch = []
            loop.call_soon(self.flush)
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
        done: asyncio.Future[None] = loop.create_future()
        self._batch.append(done)
        return done

    def _insert_creation(self, insert: str, new: NewTransaction) -> None:
        """The key, the transaction and its created event; on failure, none of them.

        The key goes first: a duplicate fails that statement alone, which writes nothing (SQLite
        undoes a failed statement), so ``KeyReused`` leaves the batch untouched.
        """
        db = self._db
        scope = new.key_scope or new.merchant
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
            db.execute(
                "INSERT INTO events (event_id, event_kind, created_us, merchant, ref, kind,"
                " client, amount, fee, status, tx_created_us, processed_us)"
                " VALUES (?, 'transaction:created', ?, ?, ?, ?, ?, ?, ?, 'pending', ?, NULL)",
                (uuid4_text(), new.created_us, new.merchant, new.ref, new.kind, new.client,
                 new.amount, new.fee, new.created_us),
            )  # fmt: skip
        except BaseException:
            if insert == "INSERT":  # the SAVEPOINT of the other mode undoes it instead
                self._undo_creation(scope, new.key, tx_id)
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

    def find(self, ref: str, merchant: str | None) -> TxRecord | None:
        """The latest transaction with ``ref``, within ``merchant`` unless that is None."""
        if merchant is None:
            row = self.conn.execute(
                f"SELECT {_TX_COLUMNS} FROM transactions WHERE ref = ? ORDER BY id DESC LIMIT 1",
                (ref,),
            ).fetchone()
        else:
            row = self.conn.execute(
                f"SELECT {_TX_COLUMNS} FROM transactions WHERE ref = ? AND merchant = ?"
                " ORDER BY id DESC LIMIT 1",
                (ref, merchant),
            ).fetchone()
        return None if row is None else TxRecord(*row)

    def process(self, tx_id: int, status: str, now_us: int, *, record_event: bool) -> bool:
        """Move a pending transaction to ``status`` once; False when it was no longer pending."""
        return self.process_many([(tx_id, status)], now_us, record_event=record_event) == 1

    def process_many(
        self, items: Sequence[tuple[int, str]], now_us: int, *, record_event: bool
    ) -> int:
        """Process (id, status) pairs in one SQL transaction; return how many were pending.

        ``UPDATE ... WHERE status = 'pending'`` makes each transaction change at most once,
        whoever asks (sandbox, auto-resolution, time-out) and in whatever order.
        """
        conn = self.conn
        done = 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            for tx_id, status in items:
                cur = conn.execute(
                    "UPDATE transactions SET status = ?, processed_us = ?, due_us = NULL"
                    " WHERE id = ? AND status = 'pending'",
                    (status, now_us, tx_id),
                )
                if cur.rowcount != 1:
                    continue
                done += 1
                if record_event:
                    conn.execute(
                        "INSERT INTO events (event_id, event_kind, created_us, merchant, ref,"
                        " kind, client, amount, fee, status, tx_created_us, processed_us)"
                        " SELECT ?, 'transaction:processed', ?, merchant, ref, kind, client,"
                        " amount, fee, status, created_us, processed_us FROM transactions"
                        " WHERE id = ?",
                        (uuid4_text(), now_us, tx_id),
                    )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if self._checkpointer is not None:
            self._checkpointer.commits += 1
        return done

    def due(self, now_us: int, limit: int = 500) -> list[tuple[int, str]]:
        """Pending transactions whose auto-resolution or time-out is due: (id, status)."""
        return self.conn.execute(
            "SELECT id, due_status FROM transactions"
            " WHERE status = 'pending' AND due_us <= ? ORDER BY due_us LIMIT ?",
            (now_us, limit),
        ).fetchall()

    def next_due(self) -> int | None:
        row = self.conn.execute(
            "SELECT MIN(due_us) FROM transactions WHERE status = 'pending'"
        ).fetchone()
        return None if row is None else row[0]

    # -- events ---------------------------------------------------------------------------
    def list_events(self, q: EventQuery) -> tuple[int, Any, list[EventRecord]]:
        """(total, sum of amounts, page) for the matching events."""
        clause, params = where_clause(
            (
                ("merchant", q.merchant),
                ("status", q.status),
                ("client", q.client),
                ("ref", q.ref),
                ("kind", q.kind),
                ("event_kind", q.event_kind),
            ),
            q.from_us,
            q.to_us,
        )
        counted = None
        if q.client is None and q.ref is None and q.from_us is None and q.to_us is None:
            counted = self._totals_from_cells(clause, params)
        total, amount = counted if counted is not None else self.scan_totals(clause, params)
        order = "ASC" if q.oldest_first else "DESC"
        rows: Sequence[tuple[Any, ...]] = []
        if total > q.offset:
            rows = self.conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events{clause}"
                f" ORDER BY created_us {order}, seq {order} LIMIT ? OFFSET ?",
                [*params, q.limit, q.offset],
            ).fetchall()
        return int(total), amount, [EventRecord(*row) for row in rows]

    def _totals_from_cells(self, clause: str, params: list[Any]) -> tuple[int, Any] | None:
        """(total, amount) from the running totals, or None when only a scan is exact."""
        try:
            n, amount, n_real, any_real = self.conn.execute(
                "SELECT COALESCE(SUM(n), 0), COALESCE(SUM(amount), 0), COALESCE(SUM(n_real), 0),"
                f" MAX(typeof(amount) = 'real') FROM event_totals{clause}",
                params,
            ).fetchone()
        except sqlite3.OperationalError:  # integer overflow of the cells' sum
            return None
        if n_real or any_real:
            return None
        return n, amount

    def scan_totals(self, clause: str = "", params: Sequence[Any] = ()) -> tuple[int, Any]:
        """(count, sum of amounts) of the events matching ``clause``, by reading them all."""
        try:
            total, amount = self.conn.execute(
                f"SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM events{clause}", params
            ).fetchone()
        except sqlite3.OperationalError:  # integer overflow: only with huge configured amounts
            total, amount = self.conn.execute(
                f"SELECT COUNT(*), TOTAL(amount) FROM events{clause}", params
            ).fetchone()
        return total, amount

    # -- test and tooling helpers ---------------------------------------------------------
    def totals_mismatches(self) -> list[tuple[Any, ...]]:
        """Running-total cells that differ from a scan of the events (empty when consistent).

        Each row: (merchant, event_kind, kind, status, cell n, cell amount, scanned n,
        scanned amount). Cells emptied by deletes (n = 0) count as absent.
        """
        cells = {
            row[:4]: (row[4], row[5], row[6])
            for row in self.conn.execute(
                "SELECT merchant, event_kind, kind, status, n, amount, n_real FROM event_totals"
                " WHERE n != 0"
            )
        }
        scanned = {
            row[:4]: (row[4], row[5], row[6])
            for row in self.conn.execute(
                "SELECT merchant, event_kind, kind, status, COUNT(*), TOTAL(amount),"
                " SUM(typeof(amount) = 'real') FROM events"
                " GROUP BY merchant, event_kind, kind, status"
            )
        }
        wrong = []
        for cell in sorted(cells.keys() | scanned.keys()):
            have = cells.get(cell, (0, 0, 0))
            want = scanned.get(cell, (0, 0.0, 0))
            exact = have[2] == 0 and not isinstance(have[1], float)
            same_amount = have[1] == want[1] if not exact else float(have[1]) == want[1]
            if have[0] != want[0] or have[2] != want[2] or not same_amount:
                wrong.append((*cell, have[0], have[1], want[0], want[1]))
        return wrong

    def count_pending(self) -> int:
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM transactions WHERE status = 'pending'"
            ).fetchone()[0]
        )

    def count_transactions(self, merchant: str | None = None) -> int:
        if merchant is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM transactions").fetchone()[0])
        return int(
            self.conn.execute(
                "SELECT COUNT(*) FROM transactions WHERE merchant = ?", (merchant,)
            ).fetchone()[0]
        )


class Checkpointer:
    """Copies the WAL back into the database file on a background thread.

    SQLite's automatic checkpoint runs inside the COMMIT that crosses the threshold, on the event
    loop, and fsyncs the database file: every request in flight would wait for it. This thread
    runs a PASSIVE checkpoint (it never blocks the writer) with its own connection once
    ``CHECKPOINT_COMMITS`` commits were counted (``commits``, bumped by the store), or at most
    ``idle_s`` after the first commit not yet checkpointed; the request path keeps SQLite's own
    checkpoint only as a backstop at ``AUTOCHECKPOINT_BACKSTOP_PAGES``. Durability is unchanged:
    a COMMIT is in the WAL before a handler answers, whoever checkpoints it later.
    """

    def __init__(self, path: str, interval_s: float = 0.1, idle_s: float = 2.0) -> None:
        self.commits = 0  # bumped on the event loop thread; read here (an int: GIL-atomic)
        self._path = path
        self._idle_rounds = max(1, int(idle_s / interval_s))
        self._interval_s = interval_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stub-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return
        try:
            conn.execute("PRAGMA busy_timeout=100")
            done = 0
            waited_rounds = 0  # rounds since the first commit not yet checkpointed
            while not self._stopping.wait(self._interval_s):
                pending = self.commits - done
                waited_rounds = waited_rounds + 1 if pending else 0
                if pending >= CHECKPOINT_COMMITS or waited_rounds >= self._idle_rounds:
                    seen = self.commits
                    try:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    except sqlite3.Error:
                        continue  # busy: the next round tries again
                    done = seen
                    waited_rounds = 0
        finally:
            conn.close()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)
