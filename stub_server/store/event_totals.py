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
        f"CREATE TRIGGER IF NOT EXISTS {prefix}_insert AFTER INSERT ON events BEGIN {add} END",
        f"CREATE TRIGGER IF NOT EXISTS {prefix}_delete AFTER DELETE ON events BEGIN {remove} END",
        f"CREATE TRIGGER IF NOT EXISTS {prefix}_update AFTER UPDATE OF {updated} ON events"
        f" BEGIN {remove} {add} END",
    ]


#: The triggers of both tables, created with the tables (``schema.SCHEMA``) while ``events`` is
#: still empty, so every cell counts every event from the first.
TRIGGERS = "".join(
    f"{statement};\n"
    for prefix, table, hourly in (
        ("ev_totals", "event_totals", False),
        ("ev_hourly", "event_totals_hourly", True),
    )
    for statement in _triggers(prefix, table, hourly)
)
