"""How long and how much ``paysuite load`` waits for and reads from a target (issue 13).

Why: a target is not trusted to end its answers. Against one that streamed an endless chunked
body the pre-check hung and the Locust process grew past 1.5 GB; a 50 MB body was read whole by
every user. So every request of the run (the pre-check, each Locust user's, the reconciliation's)
has a connect timeout, a read timeout (per socket operation), a total timeout (the whole request,
head and body: a trickle cannot stretch it) and a maximum response size: a body past it is an
error saying so, and is not read further (the connection is closed). Redirects are not followed:
a target's 3xx is its answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass

READ_CHUNK = 65536


@dataclass(frozen=True)
class ClientLimits:
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 15.0
    total_timeout_s: float = 30.0
    max_response_bytes: int = 4 * 1024 * 1024

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, float]) -> ClientLimits:
        """The inverse of ``to_dict`` (a run's plan carries its limits this way)."""
        return cls(
            connect_timeout_s=float(data["connect_timeout_s"]),
            read_timeout_s=float(data["read_timeout_s"]),
            total_timeout_s=float(data["total_timeout_s"]),
            max_response_bytes=int(data["max_response_bytes"]),
        )


class ResponseTooLarge(Exception):
    """The body went past ``max_response_bytes``; nothing more was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"response body larger than {limit} bytes (--max-response-bytes); not read further"
        )


class ConnectTimeout(TimeoutError):
    """No connection within ``connect_timeout_s``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no connection within {seconds:g} s (--connect-timeout)")


class ReadTimeout(TimeoutError):
    """A read waited ``read_timeout_s`` for a byte of the answer."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"a read waited {seconds:g} s (--read-timeout)")


class TotalTimeout(Exception):
    """The request did not complete within ``total_timeout_s``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete response within {seconds:g} s (--total-timeout)")


def read_capped(read: Callable[[int], bytes], limit: int, deadline: float | None = None) -> bytes:
    """Read a body with ``read(n)`` until it ends; ``ResponseTooLarge`` one byte past ``limit``,
    ``TotalTimeout`` (with 0 s) when ``deadline`` (``time.monotonic``) passes between reads.

    The chunks are joined once at the end: a body that comes in one read (every small JSON
    answer) is returned as that read gave it (``bytes.join`` of one ``bytes`` is that object),
    without a copy into and out of a ``bytearray``: this is on every load request's path."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline is not None and time.monotonic() > deadline:
            raise TotalTimeout(0)
        chunk = read(min(READ_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(limit)
