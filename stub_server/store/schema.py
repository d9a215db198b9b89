"""The tables, their indexes, and bringing an older database up to them.

Why a migration at all: a ``--db`` file outlives a stub version. ``migrate`` runs at every start
inside one SQL transaction, so a database is either fully on this schema or untouched.
"""

from __future__ import annotations

import sqlite3

from stub_server.store.event_totals import (
    fill_hourly,
    fill_totals,
    install_hourly_triggers,
    install_totals_triggers,
)

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
CREATE TABLE IF NOT EXISTS event_totals_hourly (
    merchant TEXT NOT NULL,
    hour INTEGER NOT NULL,
    event_kind TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    n INTEGER NOT NULL,
    amount NOT NULL,
    n_real INTEGER NOT NULL,
    PRIMARY KEY (merchant, hour, event_kind, kind, status)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idempotency (
    merchant TEXT NOT NULL,
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    PRIMARY KEY (merchant, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS used_refresh (jti TEXT PRIMARY KEY, exp INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    mode TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_us INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS webhook_outbox (
    id INTEGER PRIMARY KEY,
    event_seq INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    ref TEXT NOT NULL,
    event_kind TEXT NOT NULL,
    mode TEXT NOT NULL,
    url TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    last_error TEXT,
    next_attempt_us INTEGER,
    delivered_us INTEGER,
    created_us INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_due ON webhook_outbox(next_attempt_us) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS outbox_mode_due ON webhook_outbox(mode, next_attempt_us)
    WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS outbox_ref ON webhook_outbox(ref);
CREATE INDEX IF NOT EXISTS outbox_event ON webhook_outbox(event_id);
"""

#: Indexes of earlier versions, replaced by wider ones that also cover ``amount``.
_OLD_INDEXES = ("ev_merchant", "ev_client")


def migrate(db: sqlite3.Connection) -> None:
    """Bring a database of an earlier version up to this schema, atomically: the running
    totals are filled from the events and their triggers created in one SQL transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        names = {
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('trigger', 'index')"
            )
        }
        if "ev_totals_insert" not in names:
            fill_totals(db)
            install_totals_triggers(db)
        if "ev_hourly_insert" not in names:
            fill_hourly(db)
            install_hourly_triggers(db)
        for index in _OLD_INDEXES:
            if index in names:
                db.execute(f"DROP INDEX {index}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
