"""HTTP byte for byte, for the listening sides' self-tests (the stub, the webhook receiver, the
proxy): requests no client library would send (a head without its body, a garbage request line,
``Expect: 100-continue`` with a length to be refused), and a handler that answers as no server
library would (a body in parts, cut short, endless).

``tests/conftest.py`` puts this directory on ``sys.path``: ``from rawhttp import ...``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RawAnswer:
    """What came back: the final answer, any interim (1xx) status lines before it, when its first
    byte came and whether the server closed the connection after it."""

    status: int
    headers: dict[str, str]
    body: bytes
    interim: list[int]
    first_byte_s: float
    closed: bool

    def json(self) -> Any:
        return json.loads(self.body)


def _status(head: bytes) -> int:
    return int(head.split(b"\r\n", 1)[0].split()[1])


def send_raw(
    port: int, data: bytes, *, timeout_s: float = 5.0, host: str = "127.0.0.1", linger_s: float = 0
) -> RawAnswer:
    """Send ``data`` and read one answer (after any ``1xx``); ``linger_s``: how long to wait after
    it for the server's close (``closed`` says whether it came)."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        started = time.monotonic()
        sock.sendall(data)
        received = b""
        first: float | None = None
        interim: list[int] = []
        while True:
            while b"\r\n\r\n" not in received:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError(f"closed before an answer: {received!r}")
                first = first if first is not None else time.monotonic() - started
                received += chunk
            head, _, received = received.partition(b"\r\n\r\n")
            if 100 <= _status(head) < 200:
                interim.append(_status(head))
                continue
            break
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(received) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        closed = False
        if linger_s > 0:
            sock.settimeout(linger_s)
            try:
                closed = sock.recv(65536) == b""
            except TimeoutError:
                closed = False
            except ConnectionResetError:
                closed = True
    assert first is not None
    return RawAnswer(_status(head), headers, received[:length], interim, first, closed)


#: A scripted answer: the parts to write with the pause before each, then whether to close.
Script = list[tuple[float, bytes]]


@dataclass
class ScriptedHandler:
    """A webhook handler (or any target) on 127.0.0.1 that reads each request whole and then
    writes ``script(path)``'s parts, each after its pause, and closes. ``got``: the requests'
    bodies. An endless script is a generator; every connection ends within ``max_s``."""

    script: Callable[[], Iterator[tuple[float, bytes]]]
    max_s: float = 30.0
    got: list[bytes] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/handler"

    def serve(self, conn: socket.socket) -> None:
        deadline = time.monotonic() + self.max_s
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(body) < length:
                    body += conn.recv(65536)
                self.got.append(body)
                for pause, part in self.script():
                    if time.monotonic() > deadline:
                        return
                    time.sleep(pause)
                    conn.sendall(part)
            except OSError:
                return  # the other side hung up: the script is over


@contextmanager
def scripted_handler(
    script: Callable[[], Iterator[tuple[float, bytes]]], max_s: float = 30.0
) -> Iterator[ScriptedHandler]:
    handler = ScriptedHandler(script, max_s)
    listener = socket.create_server(("127.0.0.1", 0))
    handler.port = listener.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=handler.serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield handler
    finally:
        stop.set()
        thread.join(5)
        listener.close()
