"""Hostile HTTP targets on 127.0.0.1, for proving that paysuite's clients end, on their own.

Each server speaks just enough HTTP/1.1 to be believed and then misbehaves in one way
(``BEHAVIOURS``). They are plain sockets served from daemon threads, so nothing a client does
can make them cooperate: an endless body keeps coming until the client hangs up. Every loop is
bounded (``MAX_SECONDS`` per connection, ``MAX_STREAM_BYTES`` per endless body) so a client that
never gives up still cannot keep a test running forever.

Reusable by any self-test (``paysuite load`` now, ``paysuite conform`` later)::

    from hostile import hostile_server, write_config

    with hostile_server("endless-chunked") as server:
        config = write_config(server, tmp_path / "target.yaml")
        ...  # run the client against config; server.requests counts what arrived

``tests/conftest.py`` puts this directory on ``sys.path``, so ``import hostile`` works from any
test folder.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paysuite_core.target_config import (
    Application,
    CustomerDriver,
    TargetConfig,
    write_target_config,
)

#: What each behaviour does to every request (``auth-then-*``: a good token pair first).
BEHAVIOURS: dict[str, str] = {
    "endless-chunked": "200 with a chunked body that never ends",
    "huge-body": "200 with a 50 MB body (Content-Length)",
    "hang": "reads the request, never answers",
    "invalid-json": "200 application/json whose body is not JSON",
    "redirect": "302 to the same URL (a redirect loop)",
    "auth-then-invalid-json": "authorize answers a token pair; everything else invalid JSON",
    "auth-then-hang": "authorize answers a token pair; everything else hangs",
    "auth-then-endless-chunked": "authorize answers a token pair; everything else endless",
    "auth-then-huge-body": "authorize answers a token pair; everything else 50 MB",
    "trickle": "200 whose body comes one byte every 0.5 s (no single read ever waits long)",
    "auth-then-trickle": "authorize answers a token pair; everything else trickles",
    # Past a pre-flight (authorize and the events list answer like the API), then hostile.
    "api-then-hang": "authorize and the events list answer; everything else hangs",
    "api-then-endless-chunked": "authorize and the events list answer; everything else endless",
    "api-then-huge-body": "authorize and the events list answer; everything else 50 MB",
    "api-then-trickle": "authorize and the events list answer; everything else trickles",
    # The third round's modes (each also as auth-then- and api-then-, like those above).
    "endless-headers": "a 200 status line, then 8 KB header lines for ever",
    "gzip-bomb": "200 chunked, Content-Encoding: gzip: 4 GiB of zeros in about 4 MB",
    "deep-json": "200 application/json: a JSON array nested 100,000 deep (200 KB)",
    "half-sent": "200 declaring 1000 bytes; 26 come, then the connection closes",
}
for _mode in ("endless-headers", "gzip-bomb", "deep-json", "half-sent"):
    BEHAVIOURS[f"auth-then-{_mode}"] = f"authorize answers a token pair; everything else {_mode}"
    BEHAVIOURS[f"api-then-{_mode}"] = f"authorize and the events list answer; else {_mode}"
_EMPTY_LIST = json.dumps({"limit": 20, "offset": 0, "total": 0, "transactions": []}).encode()
HUGE_BODY_BYTES = 50 * 1024 * 1024
MAX_STREAM_BYTES = 4 * 1024**3
MAX_SECONDS = 120.0
_CHUNK = b"x" * 65536
DEEP_JSON = b"[" * 100_000 + b"]" * 100_000
_HEADER_LINE = b"X-Pad-%d: " + b"h" * 8192 + b"\r\n"


def _gzip_pieces() -> tuple[bytes, bytes]:
    """A gzip member's head and first MiB of zeros, and the piece that adds each further MiB
    (deflate's output for a window of zeros, flushed to a byte boundary, repeats exactly): a
    bomb streamed without compressing 4 GiB."""
    import zlib

    deflate = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    zeros = bytes(1 << 20)
    first = deflate.compress(zeros) + deflate.flush(zlib.Z_SYNC_FLUSH)
    steady = deflate.compress(zeros) + deflate.flush(zlib.Z_SYNC_FLUSH)
    return first, steady


_GZIP = _gzip_pieces()


@dataclass
class HostileServer:
    """A running hostile target: ``root_url``, ``base_url`` (root + /api), what it received."""

    behaviour: str
    root_url: str
    requests: list[str] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/api"


def _read_head(conn: socket.socket) -> tuple[str, bytes] | None:
    """The request line and whatever body bytes followed the head (read up to Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk or len(data) > 1_000_000:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = min(int(value.strip()), 1_000_000)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return lines[0], rest


def _token_pair() -> bytes:
    body = {"access": "hostile.access.token", "refresh": "hostile.refresh", "expires": 9e9}
    return json.dumps(body).encode()


def _answer(conn: socket.socket, status: str, body: bytes, extra: str = "") -> None:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    )
    conn.sendall(head.encode() + body)


def _answered_before_misbehaving(server: HostileServer, conn: socket.socket, path: str) -> bool:
    """The "auth-then-" and "api-then-" prefixes: answer the calls a client makes first properly."""
    behaviour = server.behaviour
    authorize = path.endswith("/auth/agents/authorize")
    if authorize and behaviour.startswith(("auth-then-", "api-then-")):
        _answer(conn, "200 OK", _token_pair())
        return True
    if behaviour.startswith("api-then-") and path.split("?")[0].endswith("/events/transactions"):
        _answer(conn, "200 OK", _EMPTY_LIST)
        return True
    return False


def _endless_chunked(
    server: HostileServer, conn: socket.socket, path: str, deadline: float
) -> bool:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    sent = 0
    frame = b"%x\r\n%s\r\n" % (len(_CHUNK), _CHUNK)
    while sent < MAX_STREAM_BYTES and time.monotonic() < deadline:
        if server.stopping.is_set():
            return False
        conn.sendall(frame)
        sent += len(_CHUNK)
    return False


def _huge_body(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {HUGE_BODY_BYTES}\r\n\r\n"
    )
    conn.sendall(head.encode() + b'{"pad":"')
    left = HUGE_BODY_BYTES - 10
    while left > 0 and not server.stopping.is_set() and time.monotonic() < deadline:
        piece = _CHUNK[: min(left, len(_CHUNK))]
        conn.sendall(piece)
        left -= len(piece)
    conn.sendall(b'"}')
    return True


def _trickle(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    for _ in range(1000):
        if server.stopping.wait(0.5) or time.monotonic() > deadline:
            return False
        conn.sendall(b" ")
    return True


def _hang(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    server.stopping.wait(MAX_SECONDS)
    return False


def _invalid_json(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    _answer(conn, "200 OK", b"{this is not json")
    return True


def _redirect(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    _answer(conn, "302 Found", b"{}", f"Location: {server.root_url}{path}\r\n")
    return True


def _endless_headers(
    server: HostileServer, conn: socket.socket, path: str, deadline: float
) -> bool:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    for n in range(MAX_STREAM_BYTES // len(_HEADER_LINE)):
        if server.stopping.is_set() or time.monotonic() > deadline:
            break
        conn.sendall(_HEADER_LINE % n)
    return False


def _gzip_bomb(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    first, steady = _GZIP
    conn.sendall(b"%x\r\n%s\r\n" % (len(first), first))
    frame = b"%x\r\n%s\r\n" % (len(steady), steady)
    for _ in range(MAX_STREAM_BYTES >> 20):  # a MiB of zeros a frame
        if server.stopping.is_set() or time.monotonic() > deadline:
            break
        conn.sendall(frame)
    return False


def _deep_json(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    _answer(conn, "200 OK", DEEP_JSON)
    return True


def _half_sent(server: HostileServer, conn: socket.socket, path: str, deadline: float) -> bool:
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        b'{"ref": "half", "status": '
    )
    return False


_MISBEHAVIOURS = {
    "endless-headers": _endless_headers,
    "gzip-bomb": _gzip_bomb,
    "deep-json": _deep_json,
    "half-sent": _half_sent,
    "endless-chunked": _endless_chunked,
    "huge-body": _huge_body,
    "trickle": _trickle,
    "hang": _hang,
    "invalid-json": _invalid_json,
    "redirect": _redirect,
}


def _misbehave(server: HostileServer, conn: socket.socket, line: str) -> bool:
    """Answer one request; False when the connection must end."""
    path = line.split(" ")[1] if line.count(" ") >= 2 else "/"
    if _answered_before_misbehaving(server, conn, path):
        return True
    behaviour = server.behaviour.removeprefix("api-then-").removeprefix("auth-then-")
    misbehave = _MISBEHAVIOURS.get(behaviour)
    if misbehave is None:
        raise ValueError(f"unknown behaviour {behaviour!r}; known: {', '.join(BEHAVIOURS)}")
    return misbehave(server, conn, path, time.monotonic() + MAX_SECONDS)


def _serve_connection(server: HostileServer, conn: socket.socket) -> None:
    with conn:
        conn.settimeout(MAX_SECONDS)
        try:
            for _ in range(10_000):  # keep-alive, bounded
                request = _read_head(conn)
                if request is None or server.stopping.is_set():
                    return
                server.requests.append(request[0])
                if not _misbehave(server, conn, request[0]):
                    return
        except OSError:  # the client hung up: that is what we wanted
            return


@contextmanager
def hostile_server(behaviour: str) -> Iterator[HostileServer]:
    """Serve ``behaviour`` on 127.0.0.1 (a free port) until the block ends."""
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"unknown behaviour {behaviour!r}; known: {', '.join(BEHAVIOURS)}")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    server = HostileServer(behaviour, f"http://127.0.0.1:{port}")

    def accept_loop() -> None:
        while not server.stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(
                target=_serve_connection, args=(server, conn), daemon=True, name="hostile-conn"
            ).start()

    acceptor = threading.Thread(target=accept_loop, daemon=True, name="hostile-accept")
    acceptor.start()
    try:
        yield server
    finally:
        server.stopping.set()
        acceptor.join(2)
        listener.close()


def write_config(server: HostileServer, path: Path) -> Path:
    """A target configuration naming ``server`` (two made-up applications)."""
    config = TargetConfig(
        base_url=server.base_url,
        applications=(
            Application("hostile-rw", "secret", "read-write", "HOSTILE"),  # type: ignore[arg-type]
            Application("hostile-r", "secret", "read", "HOSTILE"),  # type: ignore[arg-type]
        ),
        customer=CustomerDriver(driver="none", timeout_s=5),
        max_wait_s=5,
    )
    return write_target_config(config, path)


@dataclass
class Finished:
    """How a client command ended against a hostile target."""

    returncode: int | None  # None: killed at the budget
    output: str
    seconds: float
    peak_mb: float


def _tree_rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants (Linux ``/proc``)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += parents.get(current, [])
        try:
            with open(f"/proc/{current}/statm", encoding="ascii") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
    return total


def _quietly(action: Callable[[], object]) -> None:
    try:
        action()
    except Exception:  # the client's failure shows in the command's result
        pass


def run_bounded(
    command: list[str],
    budget_s: float,
    during: Callable[[], object] | None = None,
    **popen: Any,
) -> Finished:
    """Run ``command`` (its own process group) sampling its tree's memory every 0.1 s; kill the
    group at ``budget_s``. The test then asserts on the exit status, the time and the peak.
    ``during``: what a client does meanwhile (in a thread: a request through a proxy started by
    ``command``, a delivery to a listener); an exception of its own is not the command's."""
    started = time.monotonic()
    if during is not None:
        threading.Thread(target=_quietly, args=(during,), daemon=True).start()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        **popen,
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout or ()), daemon=True)
    reader.start()
    peak = 0
    returncode: int | None = None
    while time.monotonic() - started < budget_s:
        peak = max(peak, _tree_rss_bytes(process.pid))
        returncode = process.poll()
        if returncode is not None:
            break
        time.sleep(0.1)
    else:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    reader.join(10)
    return Finished(returncode, "".join(output), time.monotonic() - started, peak / 2**20)
