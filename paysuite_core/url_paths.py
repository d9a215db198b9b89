"""A value put into a URL's path is one segment, whatever it holds.

A ref a target answered, an event id typed on a command line: either may hold ``/``, ``?``,
``#``, ``..`` or a tab. Put into a path unencoded, ``webhooks resend "../../transactions/REF/
cancel?"`` cancelled a pending transaction instead of resending an event. So every path built
from such a value goes through ``segment`` (percent-encoded, dot segments too, so no client or
server can resolve them), and a value a person gives as an id is refused unless it has the
shape of one (``id_segment``).
"""

from __future__ import annotations

import re
from urllib.parse import quote

from paysuite_core.usage import UsageError

#: What an id looks like: letters, digits, ``-`` and ``_`` (a UUID, a ULID, ``evt_123``), at
#: most 128 characters; no separator, no dot, no space.
ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


class NotAnId(UsageError, ValueError):
    """A value given as an id that has not its shape; the message is one line (exit status 2)."""


def segment(value: str) -> str:
    """``value`` as one path segment: every byte outside RFC 3986's unreserved set
    percent-encoded, and ``.``/``..`` as ``%2E`` (an encoded dot is not a dot segment)."""
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def id_segment(value: str, what: str = "id") -> str:
    """``segment(value)`` for a value that must be an id; ``NotAnId`` when it is not one."""
    if not ID_SHAPE.fullmatch(value):
        raise NotAnId(
            f"{what} {value[:80]!r} is not an id (letters, digits, '-' and '_', at most 128)"
        )
    return segment(value)
