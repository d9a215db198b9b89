"""Running out of file descriptors: one log line every few seconds, not a traceback flood.

Why: when ``accept()`` fails with EMFILE (or ENFILE, ENOBUFS, ENOMEM), asyncio's default
exception handler logs a full traceback each time, from every listening socket: under a
connection flood, 24 MB in 13 s. ``raise_fd_limit`` makes the limit the administrator's choice,
not a shell default of 1024.
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
    """Folds resource errors into one warning per ``interval_s``; the rest goes to asyncio's
    default handler."""

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
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft
