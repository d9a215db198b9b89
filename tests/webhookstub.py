"""A stub with a webhook endpoint pointed at paysuite's receiver, for the receiving side's tests
(conformance WEBHOOK checks, ``paysuite webhooks listen``, the demo flow, the reconciliation),
and ``HookServer``, the one webhook endpoint those tests write without paysuite.

The receiver binds a port chosen before the stub starts, because the stub must know where to
deliver: ``free_port`` picks one the system has just handed out and released.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from paysuite_core import tokens
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
    stub_config: dict[str, Any] | None = None,
) -> RunningStub:
    """A stub whose ``development`` endpoint is ``http://127.0.0.1:PORT/hooks``; its credentials
    file carries the matching ``webhooks`` section (listen, url, secret, mode)."""
    config = {
        "webhooks": {"development": f"http://127.0.0.1:{port}/hooks"},
        "webhook_retry": retry or FAST_RETRY,
        **(stub_config or {}),
    }
    return start_stub(
        workdir,
        faults=tuple(faults),
        extra_args=tuple(extra_args),
        stub_config=config,
        startup_timeout_s=60,
    )


def cashin(stub: RunningStub, *, mode: str | None = "development", confirm: bool = True) -> str:
    """One cashin on ``stub`` (X-Webhook-Mode ``mode``), confirmed through the sandbox; its ref."""
    config = stub.config()
    app = next(a for a in config.applications if a.privilege == "read-write")
    with httpx.Client(base_url=stub.base_url, timeout=15) as http:
        answer = tokens.authorize(tokens.httpx_send(http, stub.base_url), app)
        assert answer is not None and answer.status == 200, answer
        headers = {"Authorization": f"Bearer {answer.json()['access']}"}
        if mode is not None:
            headers["X-Webhook-Mode"] = mode
        number = "078" + str(random.randrange(10**6, 10**7 - 1)).replace("0000", "0001")
        created = http.post(
            "/transactions/cashin", json={"amount": 100, "number": number}, headers=headers
        )
        assert created.status_code == 200, created.text
    ref = str(created.json()["ref"])
    if confirm:
        confirmed = httpx.post(f"{stub.root_url}/_sandbox/transactions/{ref}/confirm", timeout=15)
        assert confirmed.status_code == 200, confirmed.text
    return ref


#: What a ``HookServer`` answers a POST (its headers, its body): a status and a JSON body, or b"".
Reply = Callable[[dict[str, str], bytes], tuple[int, bytes]]


class HookServer:
    """A webhook endpoint on http.server alone (a developer's handler, a merchant's receiver):
    records each POST, answers what ``reply`` makes of it after ``delay_s``, and answers a HEAD
    200, counted."""

    def __init__(self, reply: Reply, path: str = "/hooks", delay_s: float = 0.0) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.heads = 0
        self.lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                with hook.lock:
                    hook.heads += 1
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = dict(self.headers.items())
                with hook.lock:
                    hook.got.append((headers, body))
                status, answer = reply(headers, body)
                time.sleep(delay_s)
                self.send_response(status)
                if answer:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
