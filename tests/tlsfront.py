"""A TLS-terminating front for a loopback server, as a staging gateway stands before a target.

``TLSFront(upstream_port, mode, tmp_path)`` listens on 127.0.0.1 with a certificate from a
private CA made by ``trustme`` and pipes each decrypted connection, byte for byte, to the plain
HTTP server at ``upstream_port`` (the bundled stub). The modes are the ways a real target's TLS
meets a QA engineer:

- ``private-ca``: a certificate for 127.0.0.1 and localhost from the private CA;
- ``mtls``: the same, and the front demands a client certificate the CA signed;
- ``wrong-host``: a certificate from the CA for another host name only;
- ``expired``: a certificate from the CA for 127.0.0.1 whose validity ended yesterday.

Files written under ``directory``: ``ca.pem`` (what ``--ca-bundle`` takes), and for ``mtls``
``client.pem`` / ``client-key.pem`` (``--client-cert`` / ``--client-key``).
"""

from __future__ import annotations

import datetime
import select
import socket
import ssl
import threading
from pathlib import Path
from typing import Literal

import trustme

Mode = Literal["private-ca", "mtls", "wrong-host", "expired"]
MODES: tuple[Mode, ...] = ("private-ca", "mtls", "wrong-host", "expired")


class TLSFront:
    def __init__(self, upstream_port: int, mode: Mode, directory: Path) -> None:
        self.upstream_port = upstream_port
        self.mode = mode
        directory.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA()
        self.ca_pem = directory / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca_pem))
        if mode == "wrong-host":
            leaf = ca.issue_cert("other.example")
        elif mode == "expired":
            now = datetime.datetime.now(datetime.UTC)
            leaf = ca.issue_cert(
                "127.0.0.1",
                "localhost",
                not_before=now - datetime.timedelta(days=30),
                not_after=now - datetime.timedelta(days=1),
            )
        else:
            leaf = ca.issue_cert("127.0.0.1", "localhost")
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        leaf.configure_cert(self.context)
        self.client_cert: Path | None = None
        self.client_key: Path | None = None
        if mode == "mtls":
            ca.configure_trust(self.context)
            self.context.verify_mode = ssl.CERT_REQUIRED
            client = ca.issue_cert("paysuite-qa@example.test")
            self.client_cert = directory / "client.pem"
            self.client_key = directory / "client-key.pem"
            client.cert_chain_pems[0].write_to_path(str(self.client_cert))
            client.private_key_pem.write_to_path(str(self.client_key))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="tls-front", daemon=True)

    # --- lifecycle --------------------------------------------------------------------
    def __enter__(self) -> TLSFront:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join(10)
        self._listener.close()

    def flags(self) -> list[str]:
        """The command-line options that reach this front: its CA, and for ``mtls`` the client
        certificate and key."""
        flags = ["--ca-bundle", str(self.ca_pem)]
        if self.client_cert is not None:
            flags += ["--client-cert", str(self.client_cert), "--client-key", str(self.client_key)]
        return flags

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/api"

    def _accept(self) -> None:
        self._listener.settimeout(0.1)  # a closed listener does not wake accept(): poll
        while not self._stopping.is_set():
            try:
                raw, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        """One connection: the handshake on a real socket (so OpenSSL sends its alert, as a
        gateway does, when the client's certificate is missing), then bytes both ways."""
        raw.settimeout(30)
        try:
            secure = self.context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=30)
        except OSError:
            secure.close()
            return
        try:
            _pipe(secure, upstream)
        finally:
            for end in (secure, upstream):
                try:
                    end.close()
                except OSError:
                    pass


def _pipe(secure: ssl.SSLSocket, upstream: socket.socket) -> None:
    """Bytes both ways, every TLS operation in this one thread: OpenSSL's connection object
    is not safe to read in one thread while another writes to it (a TLS 1.3 session ticket
    written during a read corrupted the stream now and then)."""
    while True:
        ready = [secure] if secure.pending() else []
        if not ready:
            ready, _, _ = select.select([secure, upstream], [], [], 30)
            if not ready:
                return  # idle for 30 s, as a gateway closes an idle connection
        for source, sink in ((secure, upstream), (upstream, secure)):
            if source not in ready:
                continue
            try:
                data = source.recv(65536)
            except ssl.SSLWantReadError:
                continue  # a TLS record not yet whole
            except (OSError, ssl.SSLError):
                return
            if not data:
                return
            try:
                sink.sendall(data)
            except (OSError, ssl.SSLError):
                return
