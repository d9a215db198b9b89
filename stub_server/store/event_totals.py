"""The events list's running ``total`` and ``amount`` (RC-27; EVT-007, EVT-009).

``event_totals`` holds one cell per (merchant, event kind, kind, status) and
``event_totals_hourly`` one per hour of those, both kept by triggers on ``events`` inside the
same SQL statement as the insert, so a cell is exactly what a scan would count and sum.
``amount`` is an exact integer sum while every amount is an integer; SQLite's ``+`` turns it
into a REAL on integer overflow, and ``n_real`` counts float amounts: either sends the list to
the scan (``store.events``). The hourly cells let a ``from``/``to`` list count whole hours from
the cells and scan only the partial hours at either end.
"""

from __future__ import annotations

import sqlite3

HOUR_US = 3_600_000_000
_HOUR = "created_us / 3600000000"  # SQLite's integer division: the event's hour


def _triggers(prefix: str, table: str, hourly: bool) -> list[str]:
    """The insert, delete and update triggers that keep ``table`` in step with ``events``."""
    hour_column = "hour, " if hourly else ""
    cell = f"merchant, {hour_column}event_kind, kind, status"
    add = (
        f"INSERT INTO {table} ({cell}, n, amount, n_real) VALUES (new.merchant, "
        + (f"new.{_HOUR}, " if hourly else "")
        + "new.event_kind, new.kind, new.status, 1, new.amount, typeof(new.amount) = 'real')"
        f" ON CONFLICT ({cell}) DO UPDATE SET n = n + 1, amount = amount + excluded.amount,"
        " n_real = n_real + excluded.n_real;"
    )
    remove = (
        f"UPDATE {table} SET n = n - 1, amount = amount - old.amount,"
        " n_real = n_real - (typeof(old.amount) = 'real') WHERE merchant = old.merchant"
        + (f" AND hour = old.{_HOUR}" if hourly else "")
        + " AND event_kind = old.event_kind AND kind = old.kind AND status = old.status;"
    )
    updated = "merchant, event_kind, kind, status, amount" + (", created_us" if hourly else "")
    return [
        f"CREATE TRIGGER {prefix}_insert AFTER INSERT ON events BEGIN {add} END",
        f"CREATE TRIGGER {prefix}_delete AFTER DELETE ON events BEGIN {remove} END",
        f"CREATE TRIGGER {prefix}_update AFTER UPDATE OF {updated} ON events"
        f" BEGIN {remove} {add} END",
    ]


def _refill(db: sqlite3.Connection, table: str, hourly: bool) -> None:
    """Recompute every cell of ``table`` from the events (inside the caller's transaction)."""
    hour = f"{_HOUR}, " if hourly else ""
    cell = f"merchant, {'hour, ' if hourly else ''}event_kind, kind, status"
    db.execute(f"DELETE FROM {table}")
    for total in ("SUM", "TOTAL"):  # TOTAL on integer overflow: REAL cells, scanned later
        try:
            db.execute(
                f"INSERT INTO {table} ({cell}, n, amount, n_real) SELECT merchant, {hour}"
                f"event_kind, kind, status, COUNT(*), {total}(amount),"
                f" SUM(typeof(amount) = 'real') FROM events"
                f" GROUP BY merchant, {hour}event_kind, kind, status"
            )
            return
        except sqlite3.OperationalError:
            if total == "TOTAL":
                raise


def fill_totals(db: sqlite3.Connection) -> None:
    _refill(db, "event_totals", hourly=False)


def install_totals_triggers(db: sqlite3.Connection) -> None:
    for statement in _triggers("ev_totals", "event_totals", hourly=False):
        db.execute(statement)


def fill_hourly(db: sqlite3.Connection) -> None:
    _refill(db, "event_totals_hourly", hourly=True)


def install_hourly_triggers(db: sqlite3.Connection) -> None:
    for statement in _triggers("ev_hourly", "event_totals_hourly", hourly=True):
        db.execute(statement)
