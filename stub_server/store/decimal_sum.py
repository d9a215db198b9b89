"""The events list's ``amount`` (RC-27) summed as decimals: no binary drift in the total.

Amounts arrive as JSON numbers and are stored as SQLite REALs (binary doubles) when they are
fractional. Adding doubles drifts: ``100.01 + 100.1 + 100.1 + 100.0000000000001`` is
``400.21000000000015`` in binary, ``400.2100000000001`` in decimals, and SQLite's own ``SUM``
gives one or the other depending on how the library was built (an 80-bit accumulator on x86,
plain doubles elsewhere). So fractional amounts are summed by ``decimal_sum``, an aggregate this
module registers on the store's connection: each value as the shortest decimal that reads back
as the same double (``repr``, what the client wrote whenever it wrote at most 17 significant
digits), added exactly. The result goes out as the double nearest the exact decimal sum.

Integer amounts stay with SQLite's ``SUM`` (exact, in C, the fast path of every load run); only
the REAL rows go through Python, through a ``FILTER`` clause.
"""

from __future__ import annotations

import sqlite3
from decimal import Context, Decimal
from typing import Any, cast

from stub_server.store.records import Amount

#: Wide enough that no sum of doubles within the stub's bounds is ever rounded.
_EXACT = Context(prec=400, Emax=999_999, Emin=-999_999)


class DecimalSum:
    """SQLite aggregate ``decimal_sum(x)``: the exact decimal sum of the values, as text
    (NULL when no row gave a value), so no double touches the running total."""

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
    """Make ``decimal_sum`` available on ``conn`` (the store's connection, at open)."""
    # typeshed's aggregate protocol allows only integer values and results; SQLite takes any
    conn.create_aggregate("decimal_sum", 1, cast(Any, DecimalSum))


#: The select list of an exact sum of ``amount``: integers by SQLite, reals by ``decimal_sum``;
#: ``combine`` turns the pair it yields into the total.
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
    """The total of an ``EXACT_SUM_SQL`` pair: an ``int`` while every amount was one, else the
    double nearest the exact decimal sum."""
    if reals is None:
        return int(integers)
    return float(_EXACT.add(Decimal(integers), Decimal(reals)))
