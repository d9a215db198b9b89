"""ISO 8601 timestamps as the document specifies each one.

Python's ``datetime.fromisoformat`` stops at microseconds, and the document allows "up to
nanosecond fraction" in event data, so parsing is done here with one regex that also reports
which parts (fraction, zone) were present: the checks need to know, not just get a datetime.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

_ISO = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[T](?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})"
    r"(?:\.(?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2})?$"
)


@dataclass(frozen=True)
class Stamp:
    text: str
    moment: datetime
    fraction_digits: int
    zone: str | None  # "Z", "+02:00", or None (no zone)

    @property
    def has_fraction(self) -> bool:
        return self.fraction_digits > 0

    @property
    def numeric_offset(self) -> bool:
        return self.zone is not None and self.zone != "Z"

    @property
    def is_utc(self) -> bool:
        """``Z`` or a zero offset: the same instant written in UTC."""
        return self.zone is not None and (
            self.zone == "Z" or self.moment.utcoffset() == timedelta(0)
        )


def parse(text: object) -> Stamp | None:
    """A ``Stamp`` for an ISO 8601 date-time string, ``None`` for anything else."""
    if not isinstance(text, str):
        return None
    match = _ISO.match(text)
    if not match:
        return None
    frac = match.group("frac") or ""
    zone = match.group("zone")
    tz = UTC
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    try:
        moment = datetime.fromisoformat(
            f"{match.group('date')}T{match.group('h')}:{match.group('m')}:{match.group('s')}"
        ).replace(microsecond=int((frac + "000000")[:6]), tzinfo=tz)
    except ValueError:
        return None
    return Stamp(text=text, moment=moment, fraction_digits=len(frac), zone=zone)


def numeric_offset_with_fraction(text: object) -> str | None:
    stamp = parse(text)
    if stamp is None:
        return f"{text!r} is not an ISO 8601 date-time"
    if not stamp.numeric_offset:
        return f"{text!r} has no numeric UTC offset (zone {stamp.zone or 'missing'})"
    if not stamp.has_fraction:
        return f"{text!r} has no fractional seconds"
    return None


def instant(text: object) -> str | None:
    """Problem with an ISO 8601 instant (a zone is given), or ``None`` when it is one."""
    stamp = parse(text)
    if stamp is None:
        return f"{text!r} is not an ISO 8601 date-time"
    if stamp.zone is None:
        return f"{text!r} has no time zone: it names no instant"
    return None


def instant_with_fraction(text: object) -> str | None:
    """Problem with an ISO 8601 instant (a zone is given) with fractional seconds, or ``None``.

    The document asks for UTC; an explicit other offset still names one instant unambiguously
    (the live service writes ``+02:00``), so the MUST is the zone and the fraction, and UTC
    itself is FMT-007's SHOULD.
    """
    problem, parsed = instant(text), parse(text)
    if problem is None and parsed is not None and not parsed.has_fraction:
        return f"{text!r} has no fractional seconds"
    return problem


#: How far a creation's timestamp may stand from the suite's clock when it is read: loose for
#: clocks that drift, tight enough that a fixed example value or a zone mislabelled by hours
#: (local time written as UTC) is not taken for the moment of creation.
RECENT_S = 3600.0


def not_recent(text: object, now: datetime, tolerance_s: float = RECENT_S) -> str | None:
    """Problem when ``text`` does not name a moment within ``tolerance_s`` of ``now``."""
    stamp = parse(text)
    if stamp is None or stamp.zone is None:
        return None  # the shape rules report these
    drift = (stamp.moment - now).total_seconds()
    if abs(drift) <= tolerance_s:
        return None
    return (
        f"{text!r} is {abs(drift) / 3600:.1f} h {'after' if drift > 0 else 'before'} the creation"
    )


def granularity(stamp: Stamp) -> timedelta:
    """How far a written instant may stand from the real one: one unit of its last written
    digit (a whole second without a fraction), never finer than the microsecond ``parse``
    keeps."""
    return timedelta(microseconds=10 ** (6 - min(stamp.fraction_digits, 6)))


def same_instant(one: object, other: object) -> bool | None:
    """Whether two timestamps name one instant, whatever offset each is written in, up to the
    granularity of both (``...12.123456Z`` and ``...14.123456789+02:00`` agree); ``None`` when
    either names no instant (no date-time, or no zone: the shape rules report those)."""
    first, second = parse(one), parse(other)
    if first is None or second is None or first.zone is None or second.zone is None:
        return None
    return abs(first.moment - second.moment) <= granularity(first) + granularity(second)
