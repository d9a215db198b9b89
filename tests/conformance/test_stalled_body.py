"""ERR-007 has teeth: a stalled request body must get 408 ``request_timeout`` and a closed
connection (RC-4), and every other ending fails the check within its bound.

The stub's rule runs in this process with a short body time-out (0.5 s, a stub setting), so a run
of ERR-007 takes about a second: conformant, then with the rule's 408 turned into the 407 and
the 409 of the mutation score's survivors (the status ``read_json`` raises rewritten, as the
mutants do). The endings no stub setting gives (never an answer, an answer on a connection left
open, a close without an answer) are a tiny socket server each, met by the check's own
``Stall`` with a bound of a fraction of a second; one of them behind TLS, through the same
settings as every other request of a run.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
from aiohttp import web
from conformkit import conform
from tlsfront import TLSFront

import stub_server.rules.request_body as stub_request_body
from conformance import stalled_body
from conformance.stalled_body import Stall, judge
from paysuite_core.bounded_http import ResponseTooLarge
from paysuite_core.listening import LINGER_S
from paysuite_core.results.outcome import CheckFailed
from paysuite_core.tls import TLSSettings
from stub_server.errors import ApiError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub, make_settings

#: The stub's body time-out in these runs: the check waits for the answer, not for its bound.
SHORT_BODY_TIMEOUT_S = 0.5

HEAD = [
    ("Host", "127.0.0.1"),
    ("Content-Type", "application/json"),
    ("Authorization", "Bearer t0ken"),
    ("Idempotency-Key", "k-0001"),
    ("Content-Length", "40"),
]
SENT = b'{"amount": 100, '
ANSWER_408 = (
    b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: 68\r\n"
    b'%s\r\n{"status":408,"code":"request_timeout","message":"the body stalled"}'
)


@pytest.fixture
def short_timeout_stub(tmp_path: Path) -> Iterator[Path]:
    """The stub's app in this process, its body time-out short; the credentials file for it.
    Served as ``paysuite stub`` serves it (stub_server/server.py): what is left of a refused body
    is drained ``LINGER_S`` at most before the connection closes, not aiohttp's 10 s."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(web, "AppRunner", partial(web.AppRunner, lingering_time=LINGER_S))
        settings = make_settings(body_timeout_s=SHORT_BODY_TIMEOUT_S)
        instance = InProcessStub(settings, background=False)
    config = instance.write_credentials(tmp_path / "target.yaml")
    yield config
    instance.close()


def test_the_stub_passes_err_007(
    short_timeout_stub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = conform(
        capsys,
        tmp_path / "r",
        config=short_timeout_stub,
        profile="reference",
        strict=True,
        only="ERR-007",
    )
    assert outcome.ids("passed") == {"ERR-007"}, outcome.report["checks"]
    assert outcome.status == 0


def test_the_seed_profile_sends_no_stalled_body(
    short_timeout_stub: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document says nothing of slow bodies: ERR-007 is the reference profile's alone, and
    a seed run does not even send its request (its early set-up is the profile's too)."""
    sent: list[object] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stalled_body, "Stall", lambda *args, **kwargs: sent.append(args))
        outcome = conform(capsys, tmp_path / "r", config=short_timeout_stub, only="ERR-001,ERR-007")
    assert "ERR-007" in outcome.ids("skipped"), outcome.report["checks"]
    assert sent == []


@pytest.mark.parametrize("status", [407, 409])
def test_a_stub_answering_another_status_fails_err_007(
    status: int,
    short_timeout_stub: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mutants ``408 -> 407`` and ``408 -> 409`` of request_body.py: the same code and
    message, the same closed connection, another status."""

    def mutated(code: int, *args: object, **kwargs: object) -> ApiError:
        return ApiError(status if code == 408 else code, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stub_request_body, "ApiError", mutated)
    outcome = conform(
        capsys,
        tmp_path / "r",
        config=short_timeout_stub,
        profile="reference",
        strict=True,
        only="ERR",
    )
    assert outcome.ids("failed") == {"ERR-007"}, outcome.report["checks"]
    assert outcome.status == 1
    failed = outcome.check("ERR-007")
    assert f"answered {status} 'request_timeout'" in failed["message"], failed
    assert failed["expected"].startswith("408 request_timeout within the body time-out"), failed
    assert failed["actual"].startswith(f"{status} 'request_timeout' after "), failed
    (item,) = failed["evidence"]
    assert item["response"]["status"] == status
    curl = item["curl"]
    assert curl.startswith('(printf %s \'{"amount": ') and "| curl " in curl, curl
    assert "-H 'Content-Length: " in curl and " -T - " in curl and "number" not in curl, curl


# --- the endings no stub setting gives: a tiny server each -----------------------------------
Behaviour = Callable[[socket.socket], None]


def _silent(conn: socket.socket) -> None:
    conn.settimeout(5)
    while conn.recv(4096):
        pass


def _answer(keep_open: bool) -> Behaviour:
    def answer(conn: socket.socket) -> None:
        conn.recv(4096)  # the head and the start of the body
        conn.sendall(ANSWER_408 % (b"" if keep_open else b"Connection: close\r\n"))
        if keep_open:
            _silent(conn)

    return answer


def _close_unanswered(conn: socket.socket) -> None:
    conn.recv(4096)


@contextmanager
def tiny_server(behaviour: Behaviour) -> Iterator[int]:
    """A loopback server treating each connection with ``behaviour``, then closing it."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stopping = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                behaviour(conn)
            except OSError:
                pass

    def accept() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stopping.set()
        thread.join(5)
        listener.close()


def _stall(url: str, bound_s: float = 0.6, tls: TLSSettings | None = None) -> Stall:
    return Stall(url, HEAD, SENT, tls=tls, bound_s=bound_s, max_body_bytes=1 << 20)


def _verdict(stall: Stall) -> CheckFailed | None:
    """ERR-007's judgement of ``stall``, once its watch has ended (within its bound)."""
    seen = stall.wait()
    try:
        judge(seen, stall)
    except CheckFailed as failed:
        return failed
    return None


def test_a_target_that_never_answers_fails_within_the_bound() -> None:
    with tiny_server(_silent) as port:
        stall = _stall(f"http://127.0.0.1:{port}/api/transactions/cashin")
        failed = _verdict(stall)
    assert failed is not None
    assert str(failed) == "a cashin body that stalled: no answer within 0.6 s"
    assert failed.actual == "no answer within 0.6 s"
    assert failed.expected.startswith("408 request_timeout within the body time-out (10 s")
    assert failed.proof == [stall.exchange]
    assert stall.exchange.error and "no answer within 0.6 s" in stall.exchange.error


def test_an_answer_on_a_connection_left_open_fails() -> None:
    with tiny_server(_answer(keep_open=True)) as port:
        failed = _verdict(_stall(f"http://127.0.0.1:{port}/api/transactions/cashin"))
    assert failed is not None and "the connection stayed open" in str(failed), failed
    assert failed.actual.startswith("408 'request_timeout' after ")


def test_a_close_without_an_answer_fails() -> None:
    with tiny_server(_close_unanswered) as port:
        failed = _verdict(_stall(f"http://127.0.0.1:{port}/api/transactions/cashin"))
    assert failed is not None and "closed after" in str(failed), failed
    assert "without an answer" in failed.actual


def _endless_body(conn: socket.socket) -> None:
    conn.recv(4096)
    conn.sendall(b"HTTP/1.1 408 Request Timeout\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
    while True:
        conn.sendall(chunk)


def test_an_endless_answer_is_cut_at_the_size_cap() -> None:
    """A hostile target's answer never ends: the watch stops reading one chunk past the cap
    (here 4 KiB) and the check fails on what it has, never holding more."""
    with tiny_server(_endless_body) as port:
        url = f"http://127.0.0.1:{port}/api/transactions/cashin"
        stall = Stall(url, HEAD, SENT, tls=None, bound_s=5.0, max_body_bytes=4096)
        failed = _verdict(stall)
    assert failed is not None and "answered 408 None" in str(failed), failed
    assert stall.seen.error == str(ResponseTooLarge(4096))
    assert len(stall.seen.body) <= 4096 + 65536


def _trickle(conn: socket.socket) -> None:
    conn.recv(4096)
    conn.sendall(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 100000\r\n\r\n")
    while True:
        conn.sendall(b"x")
        time.sleep(0.01)


def test_a_trickling_answer_is_read_no_further_than_the_bound() -> None:
    """Bytes that keep coming past the bound do not keep the watch reading: it ends at the
    bound (the thread would hold the run's end otherwise)."""
    with tiny_server(_trickle) as port:
        stall = _stall(f"http://127.0.0.1:{port}/api/transactions/cashin", bound_s=0.5)
        waiter = threading.Thread(target=stall.wait, daemon=True)
        waiter.start()
        waiter.join(30)  # a hang guard, not a speed assertion
        assert not waiter.is_alive()
    assert stall.seen.error == "nothing more within 0.5 s"
    failed = _verdict(stall)
    assert failed is not None and "answered 408 None" in str(failed), failed


def test_a_408_then_a_close_passes_over_https(tmp_path: Path) -> None:
    """Behind TLS the stall goes through the run's settings: the front's CA trusted, it passes;
    without it, the handshake refuses the front's certificate (the check's error, not a
    verdict)."""
    with (
        tiny_server(_answer(keep_open=False)) as port,
        TLSFront(port, "private-ca", tmp_path) as front,
    ):
        url = f"{front.origin}/api/transactions/cashin"
        stall = _stall(url, bound_s=5.0, tls=TLSSettings(ca_bundle=str(front.ca_pem)))
        assert _verdict(stall) is None
        assert stall.exchange.status == 408
        with pytest.raises(OSError, match="certificate verify failed"):
            _stall(url, tls=TLSSettings())


def test_the_printed_curl_stalls_the_same_way() -> None:
    """The evidence's curl, run in a shell, sends the head and the start of the body, then
    nothing: the tiny server's 408 is what it prints."""
    with tiny_server(_answer(keep_open=False)) as port:
        stall = _stall(f"http://127.0.0.1:{port}/api/transactions/cashin")
        assert _verdict(stall) is None
        curl = stall.exchange.curl(reveal=True)
        assert curl.startswith("(printf %s '{\"amount\": 100, '; sleep 1) | curl "), curl
        done = subprocess.run(
            ["sh", "-c", curl], capture_output=True, text=True, timeout=60, check=False
        )
    assert "HTTP/1.1 408 Request Timeout" in done.stdout, (curl, done.stdout, done.stderr)
    assert '"code":"request_timeout"' in done.stdout
