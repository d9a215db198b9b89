"""Every HTTP client paysuite opens toward a target, built here and nowhere else.

Each client stack a command uses (httpx for the suite, the replay and the webhook commands;
requests for schemathesis and paypack-py; aiohttp for the proxy's upstream and the webhook
forwarder; geventhttpclient for the load users) is made by one function of this module from the
run's ``TLSSettings``. So a CA bundle, a client certificate or ``--insecure`` reaches every
request of every command the same way, and a client cannot be opened without them: an
architecture test (tests/test_architecture.py) forbids building one anywhere else.

``raw_connection`` is a bare socket, for a check that must write a request's bytes itself (a
body that stalls): over HTTPS it carries the same TLS settings, never a context of its own.

Bounds (time-outs, size caps) stay where each stack reads its answers (``bounded_http``,
``load.connection``); this module fixes what every client shares: no redirect followed, no
environment proxy taken unless asked, and the TLS settings.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from paysuite_core.tls import TLSSettings, client_context

if TYPE_CHECKING:
    import aiohttp
    import requests


def default_tls() -> TLSSettings:
    """The settings of a caller that has none of its own: verification on, against the
    environment's bundle (``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``) or the default CAs."""
    return TLSSettings.resolve()


def httpx_client(
    tls: TLSSettings | None = None,
    *,
    timeout: httpx.Timeout | float = 30.0,
    trust_env: bool = False,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """A synchronous httpx client (redirects not followed)."""
    settings = tls or default_tls()
    return httpx.Client(
        timeout=timeout,
        follow_redirects=False,
        verify=settings.ssl_context(),
        trust_env=trust_env,
        transport=transport,
    )


def raw_connection(url: str, tls: TLSSettings | None = None, *, timeout_s: float) -> socket.socket:
    """A connected socket to ``url``'s origin, wrapped in TLS with the run's settings for
    ``https``: for the one request no client library sends, a body that stops short of its
    ``Content-Length`` and stays silent (ERR-007). Its caller frames and bounds the exchange."""
    parts = urlsplit(url)
    https = parts.scheme == "https"
    host = parts.hostname or ""
    sock = socket.create_connection((host, parts.port or (443 if https else 80)), timeout_s)
    if not https:
        return sock
    settings = tls or default_tls()
    try:
        return settings.ssl_context().wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def requests_session(tls: TLSSettings | None = None) -> requests.Session:
    """A requests session with the settings as requests reads them (``verify``, ``cert``)."""
    import requests

    settings = tls or default_tls()
    session = requests.Session()
    session.trust_env = False
    session.verify = settings.requests_verify()
    if settings.insecure:
        # said once in the verdict and the reports, not by urllib3 on every request
        import urllib3

        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    cert = settings.requests_cert()
    if cert is not None:
        session.cert = cert
    return session


def aiohttp_session(
    tls: TLSSettings | None = None,
    *,
    limit: int = 100,
    ttl_dns_cache: int | None = 10,
    **kwargs: Any,
) -> aiohttp.ClientSession:
    """An aiohttp session (call inside a running loop) whose connector carries the settings.

    ``limit``: connections open at once (0: no limit, for a caller that bounds them itself, as
    the stub's webhook lanes do); ``ttl_dns_cache``: how long a resolved name is kept (aiohttp's
    default, 10 s; the proxy keeps its one target's longer); ``kwargs`` go to the session
    (time-outs, ``auto_decompress``, ``skip_auto_headers``)."""
    import aiohttp

    settings = tls or default_tls()
    connector = aiohttp.TCPConnector(
        ssl=settings.ssl_context(), limit=limit, ttl_dns_cache=ttl_dns_cache
    )
    return aiohttp.ClientSession(connector=connector, trust_env=False, **kwargs)


def gevent_client(origin: str, tls: TLSSettings | None = None, **kwargs: object) -> Any:
    """A geventhttpclient ``HTTPClient`` for ``origin`` (``scheme://host:port``), its TLS
    context made by gevent's ssl so that its sockets cooperate without monkey-patching."""
    from geventhttpclient import HTTPClient
    from geventhttpclient.url import URL

    url = URL(origin)
    if url.scheme == "https":
        settings = tls or default_tls()
        kwargs["ssl_context_factory"] = lambda **_: _gevent_context(settings)
        if settings.insecure:
            kwargs["insecure"] = True
    return HTTPClient.from_url(url, **kwargs)


def _gevent_context(settings: TLSSettings) -> Any:
    import gevent.ssl

    return client_context(settings, gevent.ssl.create_default_context)
