"""Durations as a person writes them on a command line: ``90``, ``90s``, ``1m30s``, ``1h``, ``2.5``,
``80ms``.

One grammar for ``paysuite conform``, ``paysuite load`` and ``paysuite stub webhooks rotate
--overlap``: Locust's (``-t 1h20m``, ``3h30m10s``), so a duration means the same in ``paysuite load
--duration`` and in Locust, with a decimal allowed in each part (``2.5``, ``1.5m``), which Locust's
whole seconds do not take, days (``1d``) for a secret's overlap and milliseconds (``80ms``, last)
for the stub's ``--latency``, which Locust has no use for.
"""

from __future__ import annotations

import argparse
import re

EXAMPLES = "20, 20s, 1m30s, 1h, 2.5, 80ms"
_NUMBER = r"(\d+(?:\.\d+)?)"
_DURATION = re.compile(
    # a number without a unit is seconds only at the end: "80ms" is not 8 s and 0 ms
    rf"(?:{_NUMBER}d)?(?:{_NUMBER}h)?(?:{_NUMBER}m)?(?:{_NUMBER}(?:s|\Z))?(?:{_NUMBER}ms)?"
)


def parse_duration(value: str | float) -> float:
    """Seconds of a duration; ``ValueError`` naming the accepted formats otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip().lower()
    match = _DURATION.fullmatch(text)
    if match is None or not any(match.groups()):
        raise ValueError(f"{value!r} is not a duration (examples: {EXAMPLES})")
    days, hours, minutes, seconds, millis = (float(part or 0) for part in match.groups())
    return days * 86400 + hours * 3600 + minutes * 60 + seconds + millis / 1000


def duration_argument(text: str) -> float:
    """``type=`` of an argparse option that takes a duration: a bad one is a usage error."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
