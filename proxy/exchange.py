"""One request/response pair as the proxy saw it: the unit that is judged, reported, written to
the HAR file and replayed.

The proxy forwards bytes unchanged, so an exchange keeps the raw bodies and the headers in order
(a header may repeat); everything that reads an exchange (the judge, the masking, the HAR writer,
the replay) works from this one record rather than from aiohttp's request objects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Exchange:
    """A forwarded exchange. ``status`` is 0 when the target gave no answer (``error`` says why)."""

    seq: int
    started: float  # Unix seconds when the request reached the proxy
    elapsed_ms: float  # from the request reaching the proxy to the last byte of the answer
    method: str
    url: str  # the target's full URL the request was forwarded to
    request_headers: Headers
    request_body: bytes
    status: int
    response_headers: Headers
    response_body: bytes
    error: str = ""
    notes: tuple[str, ...] = field(default=())

    def request_header(self, name: str) -> str | None:
        """The first value of a request header, case-insensitively."""
        return _first(self.request_headers, name)

    def response_header(self, name: str) -> str | None:
        """The first value of a response header, case-insensitively."""
        return _first(self.response_headers, name)

    def request_json(self) -> Any:
        """The request body as JSON, or None when it is empty or not JSON."""
        return _json(self.request_body)

    def response_json(self) -> Any:
        """The response body as JSON, or None when it is empty or not JSON."""
        return _json(self.response_body)


def _first(headers: Headers, name: str) -> str | None:
    wanted = name.lower()
    return next((value for key, value in headers if key.lower() == wanted), None)


def _json(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None
