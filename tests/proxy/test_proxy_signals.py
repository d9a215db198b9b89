"""The proxy's command gives the caller its signal handlers back.

While it serves, settles and writes, ``paysuite proxy`` ignores SIGINT and SIGTERM outside its
own handlers. Run in a process that goes on (a test, a library caller), an ignored SIGINT left
behind is inherited by every child started later, which then cannot be interrupted: the load
suite's Ctrl-C tests failed that way after a proxy test had run in the same pytest worker.
"""

from __future__ import annotations

import signal
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from paysuite.cli import main


def test_the_proxy_command_restores_the_callers_signal_handlers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import proxy.session

    seen: dict[str, Any] = {}

    def fake_session(*args: Any, **kwargs: Any) -> Any:
        seen["during"] = signal.getsignal(signal.SIGINT)
        return SimpleNamespace(exit_code=0)

    monkeypatch.setattr(proxy.session, "run_session", fake_session)
    with socket.socket() as listening:  # a target that accepts a connection
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        target = f"http://127.0.0.1:{listening.getsockname()[1]}"
        before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        code = main(
            ["proxy", "--target", target, "--listen", "127.0.0.1:0",
             "--report-dir", str(tmp_path)]
        )  # fmt: skip
    assert code == 0 and seen["during"] is signal.SIG_IGN
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
