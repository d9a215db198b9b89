"""The tables, their indexes and the running totals' triggers; every start runs ``SCHEMA``
(each statement ``IF NOT EXISTS``), which creates a new database and leaves an existing one as
it is."""

from __future__ import annotations

from stub_server.store.event_totals import TRIGGERS

SCHEMA = f"""
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
{TRIGGERS}"""
