"""Running out of file descriptors: one log line every few seconds, not a traceback flood.

Why: when ``accept()`` fails with EMFILE (or ENFILE, ENOBUFS, ENOMEM), asyncio's accept loop
reports it through the event loop's exception handler and backs off for a second; the default
handler logs a full traceback each time, from every listening socket. Under a connection flood
that wrote 24 MB of identical tracebacks in 13 s. ``ResourceErrorLog`` is installed with the
public ``loop.set_exception_handler``: resource errors become one warning per ``interval_s``
saying how many were folded into it; every other error goes to asyncio's default handler as
before. ``raise_fd_limit`` lifts the soft descriptor limit to the hard one at start, so the
limit is the administrator's choice and not a shell default of 1024.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("stub_server")

RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class ResourceErrorLog:
    """An asyncio exception handler folding resource exhaustion into rate-limited lines."""

    def __init__(self, interval_s: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.interval_s = interval_s
        self.clock = clock
        self.folded = 0
        self.lines = 0
        self._next = 0.0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if not (isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS):
            loop.default_exception_handler(context)
            return
        self.folded += 1
        now = self.clock()
        if now < self._next:
            return
        self._next = now + self.interval_s
        self.lines += 1
        log.warning(
            "out of resources: %s (%s); %d such error(s) since the last line; new connections "
            "wait until idle ones time out",
            context.get("message", "error"),
            exc.strerror or exc,
            self.folded,
        )
        self.folded = 0


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft
