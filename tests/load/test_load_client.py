"""The load side's HTTP client (``load.connection``, ``load.bounded``): every exchange bounded,
a connection never reused after an unfinished answer, and one Locust request event per request,
with the reason of its failure."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from typing import Any

import gevent
import pytest
from hostile import hostile_server

from load.bounded import Client, Reply, RequestFailed
from load.connection import Connection
from load.probe import ProbeError, post_json
from paysuite_core.bounded_http import Limits, ResponseTooLarge, TotalTimeout
from paysuite_core.tls import TLSSettings
from paysuite_core.tokens import AUTHORIZE_PATH

LIMITS = Limits(connect_s=1.0, read_s=1.0, total_s=1.5, max_body_bytes=10_000)
AUTHORIZE = "/api" + AUTHORIZE_PATH


class RecordedEvents:
    """Stands in for Locust's ``request`` event hook: what was fired, in order."""

    def __init__(self) -> None:
        self.fired: list[dict[str, Any]] = []

    def fire(self, **kwargs: Any) -> None:
        self.fired.append(kwargs)


def _authorize(connection: Connection) -> tuple[int, bytes, str | None]:
    body = json.dumps({"client_id": "a", "client_secret": "b"}).encode()
    return connection.exchange("POST", AUTHORIZE, body, {"Content-Type": "application/json"})


@pytest.mark.parametrize(
    ("behaviour", "error"),
    [("auth-then-trickle", TotalTimeout), ("auth-then-huge-body", ResponseTooLarge)],
)
def test_after_an_unfinished_answer_the_next_exchange_starts_clean(
    behaviour: str, error: type[Exception]
) -> None:
    """Were the connection kept, the next request would be answered by the rest of the
    unfinished body (or not at all: the server is still sending it)."""
    with hostile_server(behaviour) as server:
        connection = Connection(server.root_url, LIMITS)
        status, body, _ = _authorize(connection)
        assert (status, json.loads(body)["access"]) == (200, "hostile.access.token")
        started = time.monotonic()
        with pytest.raises(error):
            connection.exchange("GET", "/api/transactions/find/x", None, {})
        assert time.monotonic() - started < LIMITS.total_s + 1.0
        status, body, _ = _authorize(connection)
        assert (status, json.loads(body)["access"]) == (200, "hostile.access.token")
        assert len(server.requests) == 3
        connection.close()


def test_a_silent_target_is_a_read_timeout_failure_with_its_reason() -> None:
    events = RecordedEvents()
    with hostile_server("hang") as server:
        client = Client(server.base_url, LIMITS, events)
        with client.request("GET", "/events/transactions", name="events") as reply:
            assert reply.status == 0
            assert reply.problem == "no answer: a read waited 1 s (--read-timeout)"
            reply.success()  # a problem stays a failure
    [event] = events.fired
    assert event["name"] == "events" and event["request_type"] == "GET"
    assert isinstance(event["exception"], RequestFailed)
    assert str(event["exception"]) == "no answer: a read waited 1 s (--read-timeout)"


def test_a_refused_connection_is_a_failure_with_its_reason() -> None:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]  # closed again before the request: nothing listens
    events = RecordedEvents()
    client = Client(f"http://127.0.0.1:{port}/api", LIMITS, events)
    with client.request("GET", "/transactions/find/x", name="find") as reply:
        assert reply.problem is not None
        assert reply.problem.startswith("no answer: ConnectionRefusedError"), reply.problem
    assert str(events.fired[0]["exception"]).startswith("no answer: ConnectionRefusedError")


def test_each_request_is_one_event_with_its_judgement() -> None:
    events = RecordedEvents()
    with hostile_server("auth-then-invalid-json") as server:
        client = Client(server.base_url, LIMITS, events)
        with client.request("POST", AUTHORIZE_PATH, name="authorize", json={}) as reply:
            pass  # not judged: a 200 succeeds, as Locust judges an unjudged response
        with client.request("GET", "/transactions/find/x", name="find") as reply:
            with pytest.raises(ValueError):
                reply.json()
            reply.failure("2xx without 'ref'")
        with client.request("GET", "/transactions/find/y", name="find") as reply:
            reply.success()
        assert server.requests[0].startswith(f"POST {AUTHORIZE} ")
        assert server.requests[1].startswith("GET /api/transactions/find/x ")
    assert [(e["name"], e["exception"]) for e in events.fired][::2] == [
        ("authorize", None),
        ("find", None),
    ]
    failed = events.fired[1]
    assert isinstance(failed["exception"], RequestFailed)
    assert str(failed["exception"]) == "2xx without 'ref'"
    assert failed["response_length"] == len(b"{this is not json")
    assert failed["url"] == f"{server.base_url}/transactions/find/x"
    assert all(e["response_time"] >= 0 for e in events.fired)


def test_a_redirect_is_an_answer_and_a_failure_that_names_it() -> None:
    events = RecordedEvents()
    with hostile_server("redirect") as server:
        client = Client(server.base_url, LIMITS, events)
        with client.request("GET", "/transactions/find/x", name="find") as reply:
            assert reply.status == 302
        assert len(server.requests) == 1  # not followed
    assert reply.problem is not None and "paysuite does not follow redirects" in reply.problem
    assert "paysuite does not follow redirects" in str(events.fired[0]["exception"])


def test_an_error_in_the_block_is_reported_once_and_raised() -> None:
    events = RecordedEvents()
    with hostile_server("invalid-json") as server:
        client = Client(server.base_url, LIMITS, events)
        with pytest.raises(KeyError):
            with client.request("GET", "/transactions/find/x", name="find"):
                raise KeyError("ref")
        # a user being stopped mid-block: its request is not counted (as Locust's own context)
        with pytest.raises(gevent.GreenletExit):
            with client.request("GET", "/transactions/find/y", name="find"):
                raise gevent.GreenletExit()
    [event] = events.fired
    assert str(event["exception"]) == "KeyError: 'ref'"


def test_an_absolute_url_goes_to_its_own_origin() -> None:
    events = RecordedEvents()
    with hostile_server("invalid-json") as target, hostile_server("invalid-json") as sandbox:
        client = Client(target.base_url, LIMITS, events)
        with client.request("POST", f"{sandbox.root_url}/sandbox/confirm?x=1", name="customer"):
            pass
        with client.request("GET", "/transactions/find/x", name="find"):
            pass
        assert sandbox.requests == ["POST /sandbox/confirm?x=1 HTTP/1.1"]
        assert target.requests == ["GET /api/transactions/find/x HTTP/1.1"]
    assert [e["url"] for e in events.fired] == [
        f"{sandbox.root_url}/sandbox/confirm?x=1",
        f"{target.base_url}/transactions/find/x",
    ]


def test_an_unjudged_reply_fails_from_400_on() -> None:
    assert Reply(404, b"", None).outcome() == "status 404"
    assert Reply(201, b"", None).outcome() is None
    judged = Reply(404, b"", None)
    judged.success()
    assert judged.outcome() is None


def test_a_connect_that_never_completes_is_named_a_connect_timeout() -> None:
    """A listener whose accept queue is full: the connect itself waits (the read never starts)."""
    limits = Limits(connect_s=0.5, read_s=5.0, total_s=8.0, max_body_bytes=1000)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        try:
            for _ in range(8):  # fill the backlog: later connects are not answered
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
                fillers.append(filler)
            time.sleep(0.2)
            events = RecordedEvents()
            client = Client(f"http://127.0.0.1:{port}/api", limits, events)
            started = time.monotonic()
            with client.request("GET", "/transactions/find/x", name="find") as reply:
                pass
            waited = time.monotonic() - started
        finally:
            for filler in fillers:
                filler.close()
    assert reply.problem == "no answer: no connection within 0.5 s (--connect-timeout)"
    assert waited < limits.read_s


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate and its key for 127.0.0.1 (the openssl command line): its own
    CA, so ``--ca-bundle`` of the certificate trusts it."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a self-signed certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", key, "-out", cert],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def test_the_certificate_is_verified_unless_insecure(self_signed: tuple[str, str]) -> None:
    """The users verify the target's certificate by default (unlike Locust's FastHttpUser),
    trust what ``--ca-bundle`` gives, accept anything with ``--insecure``; the run's pre-check
    judges it the same way."""
    cert, key = self_signed

    class Answer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # http.server's name
            body = b'{"ref": "r"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET  # http.server's name

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"https://127.0.0.1:{server.server_address[1]}/api"
    try:
        events = RecordedEvents()
        insecure, trusted = TLSSettings(insecure=True), TLSSettings(ca_bundle=cert)
        with Client(base, LIMITS, events).request("GET", "/x", name="x") as reply:
            assert reply.problem is not None and "CERTIFICATE_VERIFY_FAILED" in reply.problem
        for tls in (insecure, trusted):
            with Client(base, LIMITS, events, tls=tls).request("GET", "/x", name="x") as reply:
                assert (reply.status, reply.problem) == (200, None)
        # and the pre-check before the users (httpx, not gevent) accepts what they accept
        with pytest.raises(ProbeError, match=r"^TLS: 127\.0\.0\.1:\d+: .*--ca-bundle"):
            post_json(f"{base}/x", {}, LIMITS)
        assert post_json(f"{base}/x", {}, LIMITS, insecure).status == 200
        assert post_json(f"{base}/x", {}, LIMITS, trusted).status == 200
    finally:
        server.shutdown()
        server.server_close()
