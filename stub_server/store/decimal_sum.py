"""The events list's ``amount`` (RC-27) summed as decimals: no binary drift in the total.

Adding doubles drifts, and SQLite's own ``SUM`` drifts one way or another depending on how the
library was built (an 80-bit accumulator on x86, plain doubles elsewhere). So the REAL rows go
through ``decimal_sum``, an aggregate registered on the store's connection: each value as the
shortest decimal that reads back as the same double (``repr``), added exactly; the total goes
out as the double nearest the exact sum. Integer amounts stay with SQLite's exact ``SUM``.
"""

from __future__ import annotations

import sqlite3
from decimal import Context, Decimal
from typing import Any, cast

from stub_server.store.records import Amount

#: Wide enough that no sum of doubles within the stub's bounds is ever rounded.
_EXACT = Context(prec=400, Emax=999_999, Emin=-999_999)


class DecimalSum:
    """As text (NULL when no row gave a value), so no double touches the running total."""

    def __init__(self) -> None:
        self.total = Decimal(0)
        self.seen = False

    def step(self, value: int | float | None) -> None:
        if value is None:
            return
        self.seen = True
        self.total = _EXACT.add(self.total, Decimal(repr(value)))

    def finalize(self) -> str | None:
        return str(self.total) if self.seen else None


def register(conn: sqlite3.Connection) -> None:
    # typeshed's aggregate protocol allows only integer values and results; SQLite takes any
    conn.create_aggregate("decimal_sum", 1, cast(Any, DecimalSum))


#: An exact sum of ``amount`` as a pair that ``combine`` turns into the total.
EXACT_SUM_SQL = (
    "COALESCE(SUM(amount) FILTER (WHERE typeof(amount) = 'integer'), 0),"
    " decimal_sum(amount) FILTER (WHERE typeof(amount) = 'real')"
)
#: The same pair when SQLite's integer ``SUM`` overflows (amounts past 2**63 in all): the
#: integers summed as decimals too, still exact.
EXACT_SUM_WIDE_SQL = (
    "COALESCE(decimal_sum(amount) FILTER (WHERE typeof(amount) = 'integer'), '0'),"
    " decimal_sum(amount) FILTER (WHERE typeof(amount) = 'real')"
)


def combine(integers: int | str, reals: str | None) -> Amount:
    if reals is None:
        return int(integers)
    return float(_EXACT.add(Decimal(integers), Decimal(reals)))
