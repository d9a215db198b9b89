"""The pre-check's one exchange, outside Locust: ``paysuite_core.bounded_http``'s client.

Not a Locust user's gevent connection: ``paysuite load`` itself is not monkey-patched (it starts
the stub, then Locust as a subprocess). The virtual users verify no certificate and use no
environment proxy (``load.connection``), so neither does their pre-check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from paysuite_core.bounded_http import (
    BoundedClient,
    ConnectTimeout,
    Limits,
    ResponseTooLarge,
    TotalTimeout,
    in_words,
    no_answer,
)

_HEADERS = {
    "Accept": "application/json",
    "Accept-Encoding": "identity",  # the size cap applies to the bytes read, not inflated ones
}


class ProbeError(Exception):
    """No usable answer; the message says why in words."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    location: str | None
    retry_after: str | None = None


def post_json(url: str, payload: Any, limits: Limits) -> Answer:
    """POST ``payload`` as JSON to ``url`` within ``limits``."""
    client = BoundedClient(limits, verify=False, trust_env=False)
    try:
        answer = client.send(client.build_request("POST", url, json=payload, headers=_HEADERS))
    except (httpx.ConnectError, ConnectTimeout) as exc:
        raise ProbeError(f"unreachable ({in_words(exc)})") from None
    except (httpx.HTTPError, TimeoutError, TotalTimeout, ResponseTooLarge) as exc:
        raise ProbeError(no_answer(exc)) from None
    finally:
        client.close()
    headers = answer.headers
    return Answer(answer.status, answer.body, headers.get("location"), headers.get("retry-after"))
