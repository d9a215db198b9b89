"""The events list's running ``total`` and ``amount`` (RC-27): the ``event_totals`` triggers.

Checked by EVT-007 and EVT-009 (and the self-test ``tests/stub/test_stub_event_totals.py``).
``event_totals`` holds one row per (merchant, event kind, kind, status), and
``event_totals_hourly`` one per hour of those, both kept by triggers on
``events`` inside the same SQL statement as the insert, so a cell is exactly what a scan would
count and sum. ``store.events`` reads the cells and falls back to a scan when they cannot be exact.
"""

from __future__ import annotations

import sqlite3

#: Created, with the rows they summarize, in one SQL transaction (``schema.migrate``). ``amount``
#: is an exact integer sum while every amount is an integer; SQLite's ``+`` turns it into a REAL
#: on integer overflow, and ``n_real`` counts float amounts: either sends the list to the scan.
TOTALS_TRIGGERS = """
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


def _refill(db: sqlite3.Connection, table: str, fill: str) -> None:
    """Recompute every cell of ``table`` from the events (inside the caller's transaction)."""
    db.execute(f"DELETE FROM {table}")
    try:
        db.execute(fill.format(total="SUM"))
    except sqlite3.OperationalError:  # integer overflow: REAL cells, scanned later
        db.execute(fill.format(total="TOTAL"))


def _install(db: sqlite3.Connection, triggers: str) -> None:
    for statement in triggers.split("END;")[:-1]:
        db.execute(statement + "END;")


def fill_totals(db: sqlite3.Connection) -> None:
    """Recompute every running-total cell from the events (inside the caller's transaction)."""
    _refill(db, "event_totals", _TOTALS_FILL)


def install_totals_triggers(db: sqlite3.Connection) -> None:
    """Create the triggers that keep ``event_totals`` in step with ``events``."""
    _install(db, TOTALS_TRIGGERS)


#: ``event_totals_hourly``: the same cells per hour of the event's time (``created_us / HOUR_US``,
#: SQLite's integer division), so a ``from``/``to`` list counts whole hours from the cells and
#: scans only the partial hours at either end (``store.events``).
HOUR_US = 3_600_000_000
HOURLY_TRIGGERS = """
CREATE TRIGGER ev_hourly_insert AFTER INSERT ON events BEGIN
    INSERT INTO event_totals_hourly (merchant, hour, event_kind, kind, status, n, amount, n_real)
    VALUES (new.merchant, new.created_us / 3600000000, new.event_kind, new.kind, new.status, 1,
            new.amount, typeof(new.amount) = 'real')
    ON CONFLICT (merchant, hour, event_kind, kind, status) DO UPDATE SET
        n = n + 1, amount = amount + excluded.amount, n_real = n_real + excluded.n_real;
END;
CREATE TRIGGER ev_hourly_delete AFTER DELETE ON events BEGIN
    UPDATE event_totals_hourly SET n = n - 1, amount = amount - old.amount,
        n_real = n_real - (typeof(old.amount) = 'real')
    WHERE merchant = old.merchant AND hour = old.created_us / 3600000000
        AND event_kind = old.event_kind AND kind = old.kind AND status = old.status;
END;
CREATE TRIGGER ev_hourly_update AFTER UPDATE OF merchant, event_kind, kind, status, amount,
created_us ON events BEGIN
    UPDATE event_totals_hourly SET n = n - 1, amount = amount - old.amount,
        n_real = n_real - (typeof(old.amount) = 'real')
    WHERE merchant = old.merchant AND hour = old.created_us / 3600000000
        AND event_kind = old.event_kind AND kind = old.kind AND status = old.status;
    INSERT INTO event_totals_hourly (merchant, hour, event_kind, kind, status, n, amount, n_real)
    VALUES (new.merchant, new.created_us / 3600000000, new.event_kind, new.kind, new.status, 1,
            new.amount, typeof(new.amount) = 'real')
    ON CONFLICT (merchant, hour, event_kind, kind, status) DO UPDATE SET
        n = n + 1, amount = amount + excluded.amount, n_real = n_real + excluded.n_real;
END;
"""
_HOURLY_FILL = (
    "INSERT INTO event_totals_hourly (merchant, hour, event_kind, kind, status, n, amount, n_real)"
    " SELECT merchant, created_us / 3600000000, event_kind, kind, status, COUNT(*),"
    " {total}(amount), SUM(typeof(amount) = 'real') FROM events"
    " GROUP BY merchant, created_us / 3600000000, event_kind, kind, status"
)


def fill_hourly(db: sqlite3.Connection) -> None:
    """Recompute every hourly cell from the events (inside the caller's transaction)."""
    _refill(db, "event_totals_hourly", _HOURLY_FILL)


def install_hourly_triggers(db: sqlite3.Connection) -> None:
    """Create the triggers that keep ``event_totals_hourly`` in step with ``events``."""
    _install(db, HOURLY_TRIGGERS)
