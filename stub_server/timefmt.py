"""Timestamps: stored as integer microseconds since the epoch, rendered per reference choice.

RC-19/RC-21: UTC with microseconds and ``Z``. RC-20: find's ``timestamp`` with the configured
numeric offset. The ``timestamp-format`` fault renders ``2026-11-21 06:44:32`` instead.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def now_us() -> int:
    return time.time_ns() // 1000


def to_datetime(us: int, tz: timezone = UTC) -> datetime:
    return (_EPOCH + timedelta(microseconds=us)).astimezone(tz)


def utc_text(us: int | None, *, broken: bool = False) -> str | None:
    """``2026-11-21T06:44:32.421455Z``; ``None`` stays ``None`` (unprocessed)."""
    if us is None:
        return None
    moment = _EPOCH + timedelta(microseconds=us)
    if broken:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def offset_text(us: int, tz: timezone, *, broken: bool = False) -> str:
    """``2026-11-21T08:44:32.421455+02:00`` in the configured zone."""
    moment = to_datetime(us, tz)
    if broken:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.isoformat(timespec="microseconds")


def parse_bound(text: str, *, upper: bool) -> int:
    """An events ``from``/``to`` value (ISO 8601 date or date-time) as epoch microseconds.

    A bare date covers the whole day: as ``to`` it means the day's last microsecond, so both
    bounds are inclusive. A date-time without an offset is taken as UTC.
    """
    if len(text) == 10:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        if upper:
            day += timedelta(days=1, microseconds=-1)
        moment = day
    else:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
