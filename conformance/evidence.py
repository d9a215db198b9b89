"""Evidence: the HTTP exchanges a check made, kept so a failure can prove itself.

Every request a check sends is recorded with its response. The record is safe to publish in a
report: bearer tokens are shortened and client secrets masked, and long bodies are truncated. The
curl command reproduces the request (with the shortened token standing in for the real one, so
it has to be pasted back in: a report must not leak credentials).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

MAX_BODY_CHARS = 2000
_SECRET_KEYS = re.compile(r'("client_secret"\s*:\s*")([^"]*)(")')


def shorten_token(value: str) -> str:
    """``Bearer eyJhbGciOiJI…Xk3`` : enough to tell tokens apart, not enough to use one."""
    scheme, sep, token = value.partition(" ")
    if not sep:
        scheme, token = "", value
    if len(token) > 24:
        token = f"{token[:12]}…{token[-6:]}"
    return f"{scheme} {token}" if scheme else token


def redact_body(text: str) -> str:
    """Mask client secrets and path tokens the report would otherwise publish."""
    return _SECRET_KEYS.sub(lambda m: f"{m.group(1)}{m.group(2)[:4]}…{m.group(3)}", text)


def redact_url(url: str) -> str:
    """Shorten a refresh token carried in a refresh path."""
    return re.sub(
        r"(/refresh/)([^/?#]{25,})",
        lambda m: m.group(1) + m.group(2)[:12] + "…" + m.group(2)[-6:],
        url,
    )


def truncate(text: str, limit: int = MAX_BODY_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def _safe_headers(headers: dict[str, str]) -> dict[str, str]:
    safe = {}
    for name, value in headers.items():
        if name.lower() == "authorization":
            value = shorten_token(value)
        safe[name] = value
    return safe


@dataclass
class Exchange:
    """One request and its response (or the transport error that replaced it)."""

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: str | None
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: str | None = None
    error: str | None = None
    elapsed_ms: float | None = None
    note: str | None = None

    @classmethod
    def build(
        cls,
        method: str,
        url: str,
        headers: dict[str, str],
        body: str | bytes | None,
        note: str | None = None,
    ) -> Exchange:
        if isinstance(body, bytes):
            body = body.decode("utf-8", errors="replace")
        return cls(
            method=method.upper(),
            url=redact_url(url),
            request_headers=_safe_headers(headers),
            request_body=None if body is None else truncate(redact_body(body)),
            note=note,
        )

    def record_response(
        self, status: int, headers: dict[str, str], body: str, elapsed_ms: float
    ) -> None:
        self.status = status
        self.response_headers = dict(headers)
        self.response_body = truncate(body)
        self.elapsed_ms = round(elapsed_ms, 1)

    def curl(self) -> str:
        """A shell command that sends the same request."""
        parts = ["curl", "-sS", "-i", "-X", self.method]
        for name, value in self.request_headers.items():
            if name.lower() in ("content-length", "host", "accept-encoding", "connection"):
                continue
            if name.lower() == "user-agent":
                continue
            parts += ["-H", f"{name}: {value}"]
        if self.request_body is not None:
            parts += ["--data-raw", self.request_body]
        parts.append(self.url)
        return " ".join(shlex.quote(part) for part in parts)

    def json(self) -> Any:
        """The response body parsed as JSON, or ``None`` when it is not JSON."""
        if self.response_body is None:
            return None
        try:
            return json.loads(self.response_body)
        except ValueError:
            return None

    def to_dict(self) -> dict[str, Any]:
        request = {
            "method": self.method,
            "url": self.url,
            "headers": self.request_headers,
            "body": self.request_body,
        }
        if self.note:
            request["note"] = self.note
        response: dict[str, Any] | None
        if self.error is not None:
            response = {"error": self.error}
        else:
            response = {
                "status": self.status,
                "headers": self.response_headers,
                "body": self.response_body,
                "elapsed_ms": self.elapsed_ms,
            }
        return {"request": request, "response": response, "curl": self.curl()}

    def summary(self) -> str:
        outcome = self.error if self.error is not None else f"-> {self.status}"
        return f"{self.method} {self.url} {outcome}"


@dataclass
class Evidence:
    """What one check recorded: its exchanges, plus any from a tool (schemathesis) verbatim."""

    exchanges: list[Exchange] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    limit: int = 400

    def add(self, exchange: Exchange) -> None:
        if len(self.exchanges) < self.limit:
            self.exchanges.append(exchange)

    def to_list(self, *, only_last: int | None = None) -> list[dict[str, Any]]:
        items = [exchange.to_dict() for exchange in self.exchanges]
        if only_last is not None and len(items) > only_last:
            items = items[-only_last:]
        return self.extra + items
