#!/usr/bin/env python3
"""The conformant independent implementation, except that it crashes after N answered requests.

Why it exists: a target that dies in the middle of a run (an OOM kill, a panic) must make the
suite report errors or failures on what it could not check, never passes, and never hang it. The
process answers its N-th request in full, then leaves with ``os._exit`` (no clean-up, no reply to
anything else in flight), as a crash would.

Run: ``python tests/foreign/dies.py --port 0 --config-out FILE --die-after N [--access-ttl S]``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))
import independent  # a sibling script, not a package

#: The exit status of the deliberate crash, distinct from a clean SIGTERM exit.
CRASH_EXIT_CODE = 70


def die_after(limit: int) -> Any:
    """A middleware counting answered requests; the ``limit``-th answer is the last."""
    answered = 0

    @web.middleware
    async def counting(request: web.Request, handler: independent.Handler) -> web.StreamResponse:
        nonlocal answered
        response = await handler(request)  # the inner middleware has turned errors into answers
        answered += 1
        if answered < limit:
            return response
        await response.prepare(request)
        await response.write_eof()
        transport = request.transport
        for _ in range(50):  # let the last answer leave the socket buffer (at most 0.5 s)
            if transport is None or transport.get_write_buffer_size() == 0:
                break
            await asyncio.sleep(0.01)
        print(f"dies.py: crashing after {answered} answered requests", file=sys.stderr, flush=True)
        os._exit(CRASH_EXIT_CODE)

    return counting


def main(argv: Sequence[str] | None = None) -> None:
    parser = independent.build_parser("The independent service, crashing after N requests.")
    parser.add_argument("--die-after", type=int, required=True, metavar="N")
    args = parser.parse_args(argv)
    if args.die_after < 1:
        parser.error("--die-after must be at least 1")
    asyncio.run(independent.serve(args, [die_after(args.die_after)]))


if __name__ == "__main__":
    main()
