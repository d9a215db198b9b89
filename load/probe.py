"""The pre-check's one exchange, outside Locust: ``paysuite_core.bounded_http``'s client.

Not a Locust user's gevent connection: ``paysuite load`` itself is not monkey-patched (it starts
the stub, then Locust as a subprocess). The pre-check judges the target's certificate with the
run's TLS settings, as the virtual users will (``load.connection``), and uses no environment proxy
either: a certificate the users would refuse stops the run here, in one line, before any load.
"""

from __future__ import annotations

import httpx

from paysuite_core.bounded_http import (
    Answer,
    BoundedClient,
    ConnectTimeout,
    Limits,
    ResponseTooLarge,
    TotalTimeout,
    in_words,
    no_answer,
)
from paysuite_core.tls import TLSSettings, explain

_HEADERS = {
    "Accept": "application/json",
    "Accept-Encoding": "identity",  # the size cap applies to the bytes read, not inflated ones
}


class ProbeError(Exception):
    """No usable answer; the message says why in words. ``tls``: the TLS handshake failed, and
    the message is ``paysuite_core.tls.explain``'s line (it names the host itself)."""

    def __init__(self, message: str, *, tls: bool = False) -> None:
        super().__init__(message)
        self.tls = tls


def post_json(url: str, payload: object, limits: Limits, tls: TLSSettings | None = None) -> Answer:
    """POST ``payload`` as JSON to ``url`` within ``limits``, trusting what ``tls`` says."""
    client = BoundedClient(limits, tls=tls, trust_env=False)
    try:
        return client.send(client.build_request("POST", url, json=payload, headers=_HEADERS))
    except (httpx.HTTPError, TimeoutError, TotalTimeout, ResponseTooLarge, OSError) as exc:
        # a refused certificate fails the connect, a missing client certificate the first read
        # (TLS 1.3 sends that alert after the handshake): either way, the one-line diagnosis
        line = explain(exc, url)
        if line is not None:
            raise ProbeError(line, tls=True) from None
        if isinstance(exc, (httpx.ConnectError, ConnectTimeout)):
            raise ProbeError(f"unreachable ({in_words(exc)})") from None
        raise ProbeError(no_answer(exc)) from None
    finally:
        client.close()
