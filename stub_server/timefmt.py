"""Timestamps: stored as integer microseconds since the epoch, rendered per reference choice
(RC-19/RC-21: UTC with microseconds and ``Z``; RC-20: find's ``timestamp`` with the configured
offset).

Rendering is on every response's path, so the text up to the whole second is cached per second
(``strftime``/``isoformat`` cost more than the rest of a find's Python code) and only the
microseconds are formatted per call.
"""

from __future__ import annotations

import email.utils
import re
import time
from datetime import UTC, datetime, timedelta, timezone

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def now_us() -> int:
    return time.time_ns() // 1000


def to_datetime(us: int, tz: timezone = UTC) -> datetime:
    return (_EPOCH + timedelta(microseconds=us)).astimezone(tz)


_CACHE_SIZE = 4096
_utc_seconds: dict[int, str] = {}
_offset_seconds: dict[tuple[int, timezone], tuple[str, str]] = {}


def utc_text(us: int | None, *, broken: bool = False) -> str | None:
    """``2026-11-21T06:44:32.421455Z``; ``broken``: the ``timestamp-format`` fault's text."""
    if us is None:
        return None
    if broken:
        return (_EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%d %H:%M:%S")
    seconds, micros = divmod(us, 1_000_000)
    head = _utc_seconds.get(seconds)
    if head is None:
        if len(_utc_seconds) >= _CACHE_SIZE:
            _utc_seconds.clear()
        head = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.")
        _utc_seconds[seconds] = head
    return f"{head}{micros:06d}Z"


def offset_text(us: int, tz: timezone, *, broken: bool = False) -> str:
    """``2026-11-21T08:44:32.421455+02:00`` in the configured zone."""
    if broken:
        return to_datetime(us, tz).strftime("%Y-%m-%d %H:%M:%S")
    seconds, micros = divmod(us, 1_000_000)
    parts = _offset_seconds.get((seconds, tz))
    if parts is None:
        moment = to_datetime(seconds * 1_000_000, tz)
        if moment.microsecond:  # an offset with a fraction of a second: no shortcut
            return to_datetime(us, tz).isoformat(timespec="microseconds")
        text = moment.isoformat(timespec="microseconds")  # ...T08:44:32.000000+02:00
        dot = text.index(".", 19)
        parts = (text[: dot + 1], text[dot + 7 :])
        if len(_offset_seconds) >= _CACHE_SIZE:
            _offset_seconds.clear()
        _offset_seconds[(seconds, tz)] = parts
    return f"{parts[0]}{micros:06d}{parts[1]}"


def sub_micro_digits(us: int) -> str:
    """Three digits below the microsecond, derived from it so that one instant always renders
    as the same text and texts sort like their instants. Not zeros: a client that rounds a
    9-digit fraction instead of truncating it then reads another instant, which a check can
    notice."""
    return f"{us * 7919 % 1000:03d}"


def utc_text_ns(us: int | None) -> str | None:

    if us is None:
        return None
    text = utc_text(us) or ""  # never empty: us is not None
    return f"{text[:-1]}{sub_micro_digits(us)}Z"


def offset_text_ns(us: int, tz: timezone) -> str:

    text = offset_text(us, tz)
    return f"{text[:-6]}{sub_micro_digits(us)}{text[-6:]}"  # the offset is always +HH:MM


def parse_bound(text: str, *, upper: bool) -> int:
    """An events ``from``/``to`` value as epoch microseconds (RC-24, RC-34): ISO 8601, else the
    JavaScript ``Date`` texts paypack-js puts on the wire (``toString()``, ``toUTCString()``). A
    bare date as ``to`` means the day's last microsecond (both bounds inclusive); no offset is
    UTC."""
    if len(text) == 10:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
        if upper:
            day += timedelta(days=1, microseconds=-1)
        moment = day
    else:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            moment = _parse_js_date(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


#: ``Date.prototype.toString()`` (ECMA-262 21.4.4.41): weekday, month, day, year, time, then
#: ``GMT`` and a signed four-digit offset, then an implementation-defined zone name in
#: parentheses. The offset's ``+`` arrives as a space: paypack-js does not encode the query, and
#: a ``+`` in a query string means a space (WHATWG URL, ``application/x-www-form-urlencoded``).
_JS_DATE = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ([A-Z][a-z]{2}) (\d{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2})"
    r" GMT([+\- ])(\d{2})(\d{2})(?: \([^()]*\))?",
    re.ASCII,
)


def _parse_js_date(text: str) -> datetime:
    match = _JS_DATE.fullmatch(text.strip())
    if match is None:
        try:
            return email.utils.parsedate_to_datetime(text)  # toUTCString(), RFC 5322
        except (TypeError, ValueError, IndexError):
            raise ValueError(f"not a date: {text!r}") from None
    *moment, sign, off_h, off_m = match.groups()
    offset = timedelta(hours=int(off_h), minutes=int(off_m))
    parsed = datetime.strptime(" ".join(moment), "%b %d %Y %H %M %S")  # the C locale's months
    return parsed.replace(tzinfo=timezone(-offset if sign == "-" else offset))
