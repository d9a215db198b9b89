"""One HTTP request and its answer as they went over the wire: the record every judge keeps.

The proxy forwards bytes unchanged and writes HAR files, and the conformance suite replays what
it sent as a curl command, so the record holds the real values: raw bodies, and headers in order
(a header may repeat). What a report may publish (tokens shortened, secrets masked) is derived
from it by the reader (``paysuite_core.results.evidence``, ``paysuite_core.results.masking``),
never stored in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from paysuite_core.guarded_json import JsonRefused, loads

Headers = tuple[tuple[str, str], ...]


@dataclass(unsafe_hash=True)  # the proxy keys and dedups finished records by value
class Exchange:
    """A request and its answer. ``status`` is 0 while there is no answer (``error`` says why).

    Mutable only while the conformance client fills in the answer it is waiting for; a record
    handed on (judged, written, replayed) is not changed again.
    """

    method: str
    url: str
    request_headers: Headers = ()
    request_body: bytes = b""
    status: int = 0
    response_headers: Headers = ()
    response_body: bytes = b""
    error: str = ""
    elapsed_ms: float = 0.0  # from the request leaving to the last byte of the answer
    seq: int = 0  # the proxy's running number of the exchange in its session
    started: float = 0.0  # Unix seconds when the request was sent (or reached the proxy)
    notes: tuple[str, ...] = field(default=())

    def request_header(self, name: str) -> str | None:
        """The first value of a request header, case-insensitively."""
        return _first(self.request_headers, name)

    def response_header(self, name: str) -> str | None:
        """The first value of a response header, case-insensitively."""
        return _first(self.response_headers, name)

    def request_json(self) -> object:
        """The request body as JSON, or None when it is empty or not JSON."""
        return _json(self.request_body)

    def response_json(self) -> Any:
        """The response body as JSON, or None when it is empty or not JSON."""
        return _json(self.response_body)


def _first(headers: Headers, name: str) -> str | None:
    wanted = name.lower()
    return next((value for key, value in headers if key.lower() == wanted), None)


def _json(body: bytes) -> object:
    if not body:
        return None
    try:
        return loads(body)
    except JsonRefused:  # not JSON, not UTF-8, or nested past what a record of this API holds
        return None
