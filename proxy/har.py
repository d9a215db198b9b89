"""The session as a HAR 1.2 file: what a QA attaches to a ticket and what ``paysuite replay`` reads.

Written with ``json`` rather than the ``harfile`` package: its fixed models have no room for the
``_``-prefixed fields a replay needs (docs/proxy.md, "The HAR file"). The exchanges are written as
given: mask them first. HAR files of other tools are read too (the extension fields are optional);
a malformed one is a ``HarError`` naming the entry and field.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.client import responses
from pathlib import Path
from typing import TypeGuard, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

from paysuite_core import guarded_json
from paysuite_core.api_types import JsonObject
from paysuite_core.exchange import Exchange, Headers
from paysuite_core.usage import UsageError

HAR_VERSION = "1.2"
#: The largest HAR file read, and the most entries: parsed JSON takes several times its size in
#: memory, and every command stays under 300 MB whatever file it is handed. A proxy session of
#: this API writes about 2 KB an exchange, so the bounds hold some ten thousand exchanges.
MAX_HAR_BYTES = 32 << 20
MAX_HAR_ENTRIES = 20_000
CREATOR = "paysuite proxy"
T = TypeVar("T")


class HarError(UsageError, ValueError):
    """The file is not a HAR session paysuite can read; the message says where and why."""


@dataclass(frozen=True)
class RecordedSession:
    """What a HAR file holds: the exchanges in order, and the target they were sent to if known."""

    exchanges: list[Exchange]
    target: str | None = None
    #: client_id -> {"privilege": ..., "merchant": ...} of the applications the session used
    applications: dict[str, dict[str, str]] = field(default_factory=dict)


# --- writing -----------------------------------------------------------------------------------
def write_har(
    exchanges: Iterable[Exchange],
    path: str | Path,
    *,
    target: str | None = None,
    applications: dict[str, dict[str, str]] | None = None,
) -> Path:
    """Write ``exchanges`` (already masked) as a HAR 1.2 file, atomically (a reader never sees
    half a file, and an interrupted write leaves the previous one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    har = to_har(exchanges, target=target, applications=applications)
    text = json.dumps(har, ensure_ascii=False, indent=1)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def to_har(
    exchanges: Iterable[Exchange],
    *,
    target: str | None = None,
    applications: dict[str, dict[str, str]] | None = None,
) -> JsonObject:
    """The HAR document of ``exchanges`` (already masked), as a JSON-ready mapping."""
    log: JsonObject = {
        "version": HAR_VERSION,
        "creator": {"name": CREATOR, "version": _version()},
        "entries": [_entry(exchange) for exchange in exchanges],
    }
    if target or applications:
        log["_paysuite"] = {
            **({"target": target} if target else {}),
            **({"applications": applications} if applications else {}),
        }
    return {"log": log}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("paysuite")
    except PackageNotFoundError:
        return "unknown"


def _entry(exchange: Exchange) -> JsonObject:
    entry: JsonObject = {
        "startedDateTime": datetime.fromtimestamp(exchange.started, UTC).isoformat(),
        "time": round(exchange.elapsed_ms, 3),
        "request": _request(exchange),
        "response": _response(exchange),
        "cache": {},
        "timings": {"send": 0, "wait": round(exchange.elapsed_ms, 3), "receive": 0},
        "_seq": exchange.seq,
        "_started": exchange.started,
    }
    if exchange.error:
        entry["_error"] = exchange.error
    if exchange.notes:
        entry["_notes"] = list(exchange.notes)
    return entry


def _request(exchange: Exchange) -> JsonObject:
    request: JsonObject = {
        "method": exchange.method,
        "url": exchange.url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": _har_headers(exchange.request_headers),
        "queryString": [
            {"name": name, "value": value}
            for name, value in parse_qsl(urlsplit(exchange.url).query, keep_blank_values=True)
        ],
        "headersSize": -1,
        "bodySize": len(exchange.request_body),
    }
    if exchange.request_body:
        text, encoding = _text(exchange.request_body)
        request["postData"] = {
            "mimeType": exchange.request_header("content-type") or "",
            "text": text,
            **({"_encoding": encoding} if encoding else {}),
        }
    return request


def _response(exchange: Exchange) -> JsonObject:
    content: JsonObject = {
        "size": len(exchange.response_body),
        "mimeType": exchange.response_header("content-type") or "",
    }
    if exchange.response_body:
        content["text"], encoding = _text(exchange.response_body)
        if encoding:
            content["encoding"] = encoding
    return {
        "status": exchange.status,
        "statusText": responses.get(exchange.status, ""),
        "httpVersion": "HTTP/1.1" if exchange.status else "",
        "cookies": [],
        "headers": _har_headers(exchange.response_headers),
        "content": content,
        "redirectURL": exchange.response_header("location") or "",
        "headersSize": -1,
        "bodySize": len(exchange.response_body) if exchange.status else -1,
    }


def _har_headers(headers: Headers) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in headers]


def _text(body: bytes) -> tuple[str, str]:
    """(text, "") for a UTF-8 body, (base64, "base64") for anything else."""
    try:
        return body.decode("utf-8"), ""
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), "base64"


# --- reading -----------------------------------------------------------------------------------
def read_har(path: str | Path) -> list[Exchange]:
    """The exchanges of a HAR file, in the file's order."""
    return read_session(path).exchanges


def read_session(path: str | Path) -> RecordedSession:
    """The exchanges of a HAR file and, when paysuite wrote it, the target they were sent to."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_HAR_BYTES:
            raise HarError(
                f"{path}: {size} bytes, over the {MAX_HAR_BYTES >> 20} MiB a HAR file may have: "
                "split the recording"
            )
        data = guarded_json.loads(path.read_bytes(), what=str(path), max_bytes=MAX_HAR_BYTES)
    except FileNotFoundError:
        raise HarError(f"{path}: no such file") from None
    except OSError as exc:
        raise HarError(f"{path}: cannot be read ({exc})") from None
    except guarded_json.JsonRefused as exc:  # not UTF-8, not JSON, nested deeper than a HAR
        raise HarError(str(exc)) from None
    try:
        return parse_har(data)
    except HarError as exc:
        raise HarError(f"{path}: {exc}") from None


def parse_har(data: object) -> RecordedSession:
    log = _field(data, "log", dict, "")
    entries = _field(log, "entries", list, "log.")
    if len(entries) > MAX_HAR_ENTRIES:
        raise HarError(
            f"log.entries: {len(entries)} entries, over the {MAX_HAR_ENTRIES} a HAR file may "
            "have: split the recording"
        )
    exchanges = [_exchange(entry, index) for index, entry in enumerate(entries)]
    extension = log.get("_paysuite")
    extension = extension if isinstance(extension, dict) else {}
    target = extension.get("target")
    apps = extension.get("applications")
    applications = {
        str(client_id): {k: str(v) for k, v in facts.items() if isinstance(v, str)}
        for client_id, facts in (apps.items() if isinstance(apps, dict) else ())
        if isinstance(facts, dict)
    }
    return RecordedSession(
        exchanges, target if isinstance(target, str) and target else None, applications
    )


def _field(mapping: object, key: str, kind: type[T], where: str) -> T:
    if not isinstance(mapping, dict):
        raise HarError(f"{where.rstrip('.') or 'the file'}: expected an object")
    value = mapping.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise HarError(f"{where}{key}: expected {kind.__name__}, got {_shown(value)}")
    return value


def _shown(value: object) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {str(value)[:40]!r}"


def _exchange(entry: object, index: int) -> Exchange:
    where = f"log.entries[{index}]."
    if not isinstance(entry, dict):
        raise HarError(f"{where.rstrip('.')}: expected an object")
    request = _field(entry, "request", dict, where)
    response = _field(entry, "response", dict, where)
    status = _field(response, "status", int, f"{where}response.")
    elapsed = entry.get("time")
    notes = entry.get("_notes")
    error = entry.get("_error")
    seq = entry.get("_seq")
    return Exchange(
        seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else index + 1,
        started=_started(entry, where),
        elapsed_ms=float(elapsed) if _is_number(elapsed) and elapsed >= 0 else 0.0,
        method=_field(request, "method", str, f"{where}request.").upper(),
        url=_field(request, "url", str, f"{where}request."),
        request_headers=_headers(request.get("headers"), f"{where}request.headers"),
        request_body=_request_body(request, f"{where}request."),
        status=max(status, 0),
        response_headers=_headers(response.get("headers"), f"{where}response.headers"),
        response_body=_body(response.get("content"), "encoding", f"{where}response.content"),
        error=error if isinstance(error, str) else "",
        notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
    )


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _started(entry: JsonObject, where: str) -> float:
    exact = entry.get("_started")
    if _is_number(exact):
        return float(exact)
    text = _field(entry, "startedDateTime", str, where)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise HarError(f"{where}startedDateTime: not an ISO 8601 time: {text[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _headers(raw: object, where: str) -> Headers:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise HarError(f"{where}: expected a list of {{name, value}}")
    headers = []
    for position, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise HarError(f"{where}[{position}]: expected {{name, value}}")
        headers.append((item["name"], str(item.get("value", ""))))
    return tuple(headers)


def _request_body(request: JsonObject, where: str) -> bytes:
    post = request.get("postData")
    if post is None:
        return b""
    if isinstance(post, dict) and "text" not in post and isinstance(post.get("params"), list):
        # a form as another tool records it: re-encoded the way a browser sends it
        pairs = [(str(p.get("name", "")), str(p.get("value", ""))) for p in post["params"]]
        return urlencode(pairs).encode()
    return _body(post, "_encoding", f"{where}postData")


def _body(container: object, encoding_key: str, where: str) -> bytes:
    if container is None:
        return b""
    if not isinstance(container, dict):
        raise HarError(f"{where}: expected an object")
    text = container.get("text")
    if text is None:
        return b""
    if not isinstance(text, str):
        raise HarError(f"{where}.text: expected a string")
    encoding = container.get(encoding_key) or container.get("encoding")
    if encoding == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise HarError(f"{where}.text: not valid base64") from None
    return text.encode("utf-8")
