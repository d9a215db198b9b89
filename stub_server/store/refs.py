"""UUID-shaped refs and event ids from a pool of random bytes (FMT-001, FMT-002).

Why a pool: ``str(uuid.uuid4())`` makes a ``UUID`` object and a system call per ref, and a
creation needs two (its ref and its created event's id): a hot path under load.
"""

from __future__ import annotations

import os

_hex_pool = ""
_hex_pos = 0


def uuid4_text() -> str:
    """``os.urandom`` drawn 4 KiB at a time; only the event loop's thread calls this."""
    global _hex_pool, _hex_pos
    pos = _hex_pos
    if pos >= len(_hex_pool):
        _hex_pool = os.urandom(4096).hex()
        pos = 0
    _hex_pos = pos + 32
    h = _hex_pool[pos : pos + 32]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"
