"""The events list's ``from``/``to`` window (RC-24) as EVT-013 reads it: the bounds it sends and
whether a listed event lies within them.

Why apart from the check: the bounds are built from the target's own ``created_at`` stamps (not
this machine's clock, which may differ from the target's), and a stamp stands for any instant
up to one unit of its last written digit later (``timestamps.granularity``). An event is
called outside a window only when every instant its stamp may stand for is, so a target that
writes coarser or finer stamps than the bounds raises no false alarm.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from paysuite_core.driver import timestamps


def bound_text(moment: datetime) -> str:
    """A ``from``/``to`` value: ISO 8601 in UTC with microseconds and ``Z`` (no ``+``, which a
    query would have to escape)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


#: RC-34's offset: a JavaScript Date's text in a zone east of UTC (Kigali's), so that an offset
#: read with the wrong sign moves the bound four hours.
JS_ZONE = timezone(timedelta(hours=2))


def js_date_text(moment: datetime) -> str:
    """``moment`` as JavaScript's ``Date.prototype.toString()`` writes it in UTC+2 (RC-34): whole
    seconds, ``Sun Nov 22 2026 12:34:45 GMT+0200 (Central Africa Time)``."""
    local = moment.astimezone(JS_ZONE)
    day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[local.weekday()]
    month = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()[local.month - 1]
    clock = local.strftime("%d %Y %H:%M:%S")  # digits only: the same in every locale
    return f"{day} {month} {clock} GMT+0200 (Central Africa Time)"


def stamp_of(event: dict[str, Any]) -> timestamps.Stamp | None:
    """The event's ``created_at`` as a stamp with a zone (None when it is no instant: the
    format checks judge that)."""
    stamp = timestamps.parse(event.get("created_at"))
    return stamp if stamp is not None and stamp.zone is not None else None


def outside(event: dict[str, Any], lo: datetime | None, hi: datetime | None) -> bool:
    """Whether the event surely lies outside ``[lo, hi]`` (both inclusive; None: unbounded)."""
    stamp = stamp_of(event)
    if stamp is None:
        return False
    if lo is not None and stamp.moment + timestamps.granularity(stamp) <= lo:
        return True
    return hi is not None and stamp.moment > hi


def inside(event: dict[str, Any], lo: datetime, hi: datetime) -> bool:
    """Whether the event surely lies within ``[lo, hi]``: the client's own count keeps only
    these (the windows stay far from the check's own events)."""
    stamp = stamp_of(event)
    if stamp is None:
        return False
    return lo <= stamp.moment and stamp.moment + timestamps.granularity(stamp) <= hi


def event_ids(events: list[dict[str, Any]]) -> set[str]:
    return {str(event.get("event_id")) for event in events}
