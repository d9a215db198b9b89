"""The one WHERE builder of both lists: the events list and the SDKs' transactions list."""

from __future__ import annotations

from collections.abc import Iterable

#: A value SQLite binds: the lists filter on text and on integer microseconds.
SqlValue = str | int | float | None


def where_clause(
    equal: Iterable[tuple[str, SqlValue]], from_us: int | None, to_us: int | None
) -> tuple[str, list[SqlValue]]:
    """``None`` values filter nothing; an empty filter set is an empty clause."""
    where: list[str] = []
    params: list[SqlValue] = []
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
