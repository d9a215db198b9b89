"""Test-only reads of the stub's store: counts, and the running totals checked against a scan.

Kept out of ``stub_server.store`` so the production path holds only what a request needs. Each
function takes the ``Store`` and must run on the thread that owns it (``InProcessStub.call``).
"""

from __future__ import annotations

from typing import Any

from stub_server.store import Store


def totals_mismatches(store: Store) -> list[tuple[Any, ...]]:
    """Running-total cells that differ from a scan of the events (empty when consistent).

    Each row: (merchant, event_kind, kind, status, cell n, cell amount, scanned n,
    scanned amount). Cells emptied by deletes (n = 0) count as absent.
    """
    cells = {
        row[:4]: (row[4], row[5], row[6])
        for row in store.conn.execute(
            "SELECT merchant, event_kind, kind, status, n, amount, n_real FROM event_totals"
            " WHERE n != 0"
        )
    }
    scanned = {
        row[:4]: (row[4], row[5], row[6])
        for row in store.conn.execute(
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


def count_pending(store: Store) -> int:
    return int(
        store.conn.execute("SELECT COUNT(*) FROM transactions WHERE status = 'pending'").fetchone()[
            0
        ]
    )


def count_transactions(store: Store, merchant: str | None = None) -> int:
    if merchant is None:
        return int(store.conn.execute("SELECT COUNT(*) FROM transactions").fetchone()[0])
    return int(
        store.conn.execute(
            "SELECT COUNT(*) FROM transactions WHERE merchant = ?", (merchant,)
        ).fetchone()[0]
    )
