"""A stub with a webhook endpoint pointed at paysuite's receiver, for the receiving side's tests
(conformance WEBHOOK checks, ``paysuite webhooks listen``, the demo flow, the reconciliation).

The receiver binds a port chosen before the stub starts, because the stub must know where to
deliver: ``free_port`` picks one the system has just handed out and released.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paysuite_core.launcher import RunningStub, start_stub

#: Retries fast enough for a test: 100 ms doubling to 400 ms, 10 attempts.
FAST_RETRY = {"base_s": 0.1, "cap_s": 0.4, "max_attempts": 10, "timeout_s": 3}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hooked_stub(
    workdir: Path,
    port: int,
    *,
    faults: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    retry: dict[str, Any] | None = None,
) -> RunningStub:
    """A stub whose ``development`` endpoint is ``http://127.0.0.1:PORT/hooks``; its credentials
    file carries the matching ``webhooks`` section (listen, url, secret, mode)."""
    config = {
        "webhooks": {"development": f"http://127.0.0.1:{port}/hooks"},
        "webhook_retry": retry or FAST_RETRY,
    }
    return start_stub(
        workdir,
        faults=tuple(faults),
        extra_args=tuple(extra_args),
        stub_config=config,
        startup_timeout_s=60,
    )
