"""Drive the published paypack-py SDK (1.0.5), unchanged, against one target.

Run as ``python -m paysuite.clients.paypack_py_driver`` with a job (JSON) on stdin; prints one
JSON line per cell as it is decided (so a driver stopped at its budget still leaves what it did)
and a last line with the SDK's version and state. A subprocess, because the SDK keeps its state
in module globals (tokens, credentials, one ``requests.Session`` with sticky headers) and its
base URL is a module constant copied at import: a fresh interpreter is the only clean client.
Only ``base_url`` is changed, and the session gets a transport adapter
(``bounded_requests.BoundedAdapter``) that bounds every answer with conform's limits and
records each exchange, so a cell can name the status and message that broke it even when the
SDK hides them (``KeyError: 'access'`` on a refused refresh).

A cell is ``ok``, ``fail`` (the target answered, and not what the SDK needs: the cell says what
was expected and what came), ``error`` (no usable answer within the limits: not the SDK's
fault, nor judged) or ``not run`` (the target had stopped answering, or the walk's budget was
spent: waiting again would only take another time-out).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from importlib import metadata
from typing import Any

from paysuite.clients.bounded_requests import (
    BoundedAdapter,
    Recorded,
    Unanswered,
    limits_of,
    tls_of,
)
from paysuite.clients.matrix import one_line
from paysuite_core import guarded_json
from paysuite_core.api_types import JsonObject

#: (expected, actual) when an answer is not what the SDK's caller needs; None when it is.
Mismatch = tuple[str, str] | None
Check = Callable[[object], Mismatch]
#: The walk's own budget when the job gives none: two whole-answer time-outs of conform.
DEFAULT_WALK_S = 120.0
_UNKNOWN_REF = "00000000-0000-4000-8000-000000000000"


def shown(data: object, limit: int = 120) -> str:
    """A short one-line rendering of an answer for "got ..."."""
    if isinstance(data, str):
        return one_line(data, limit)
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(data)
    return one_line(text, limit)


def answer_text(exchange: Recorded) -> str:
    """``401 token_expired: ...`` or ``404 text/html '<!DOCTYPE ...'``: one line."""
    status, body = exchange["status"], exchange["response_body"]
    try:
        parsed = guarded_json.loads(body) if body else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and ("message" in parsed or "code" in parsed):
        text = f"{parsed.get('code', '')}: {parsed.get('message', '')}".strip(": ")
        return one_line(f"{status} {text}")
    media = next(
        (v for k, v in exchange["response_headers"] if k.lower() == "content-type"), "no type"
    )
    return one_line(f"{status} {media.split(';')[0]} {body[:80]!r}")


class Driver:
    """Runs the SDK's public methods in order and emits one cell per operation."""

    def __init__(self, job: dict[str, Any], emit: Callable[[JsonObject], None]) -> None:
        import paypack.client
        import paypack.config
        import paypack.http_client

        paypack.config.base_url = job["base_url"]
        paypack.client.base_url = job["base_url"]  # copied at import by ``from ... import``
        self.job = job
        self.emit = emit
        self.adapter = BoundedAdapter(limits_of(job), tls_of(job))
        for prefix in ("http://", "https://"):
            paypack.http_client.client.mount(prefix, self.adapter)
        self.walk_deadline = time.monotonic() + float(job.get("walk_s", DEFAULT_WALK_S))
        self.stopped: str | None = None  # why the rest of the walk is not run
        paypack.client.HttpClient(client_id=job["client_id"], client_secret=job["client_secret"])

    def op(self, name: str, call: Callable[[], Any], check: Check) -> Any:
        """Run one SDK call; an error body the SDK returns as data is a failure too."""
        if self.stopped is None and time.monotonic() > self.walk_deadline:
            self.stopped = f"the walk used its {self.job.get('walk_s', DEFAULT_WALK_S):g} s budget"
        if self.stopped:
            self.emit({"op": name, "ok": None, "outcome": "not run", "detail": self.stopped})
            return None
        first = len(self.adapter.exchanges)
        cell: JsonObject = {"op": name}
        try:
            data = call()
        except Unanswered as exc:
            if exc.gone:
                self.stopped = f"not run: the target stopped answering ({name})"
            cell.update(ok=False, outcome="error", detail=one_line(str(exc)))
        except Exception as exc:  # the SDK raises whatever its code trips on
            sdk = one_line(f"{type(exc).__name__}: {exc}", 120)
            failure = self._failure(first)
            expected, actual = "a 2xx JSON answer", failure or sdk
            detail = f"{failure} (SDK: {sdk})" if failure else sdk
            cell.update(ok=False, outcome="fail", detail=detail, expected=expected, actual=actual)
        else:
            mismatch = check(data)
            failure = self._failure(first)
            if mismatch and failure:
                mismatch = ("a 2xx answer", failure)
            cell.update(ok=True, outcome="ok", detail="")
            if mismatch:
                expected, actual = mismatch
                detail = one_line(f"expected {expected}, got {actual}")
                cell.update(
                    ok=False, outcome="fail", detail=detail, expected=expected, actual=actual
                )
            cell["data"] = data
        cell["exchanges"] = self.adapter.exchanges[first:]
        self.emit(cell)
        return data if cell["ok"] else None

    def _failure(self, first: int) -> str | None:
        """The last non-2xx answer among this operation's exchanges, as one line."""
        for exchange in reversed(self.adapter.exchanges[first:]):
            if exchange["status"] >= 300 or (exchange["status"] and _not_json(exchange)):
                return answer_text(exchange)
        return None

    def run(self) -> JsonObject:
        from paypack.events import Event
        from paypack.merchant import Merchant
        from paypack.oauth2 import Oauth
        from paypack.transactions import Transaction

        job = self.job
        number, amount = job["number"], job["amount"]
        self.op("authorize", lambda: Oauth().auth(), _keys("access", "refresh", "expires"))
        cashin = self.op(
            "cashin",
            lambda: Transaction().cashin(amount=amount, phone_number=number, mode="development"),
            _created("CASHIN"),
        )
        cashout = self.op(
            "cashout",
            lambda: Transaction().cashout(amount=amount, phone_number=number),
            _created("CASHOUT"),
        )
        refs = [tx["ref"] for tx in (cashin, cashout) if tx]
        ref = cashin["ref"] if cashin else _UNKNOWN_REF
        self.op("find", lambda: Transaction().find(ref), _same_ref(ref))
        self.op("events", lambda: Event().list(client=number, limit=10), _lists(refs))
        now = datetime.now(UTC).replace(tzinfo=None)
        span = {  # the SDK's own date format, HttpClient.date_format
            "from": (now - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
            "to": (now + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S"),
        }
        self.op("events from/to", lambda: Event().list(client=number, **span), _lists(refs))
        self.op("transactions", lambda: Transaction().list(client=number, limit=10), _lists(refs))
        self.op("me", lambda: Merchant().me(), _keys("id", "name", "balance"))
        self.op("refresh", lambda: Oauth().refresh_access_token(), _keys("access", "refresh"))
        state: JsonObject = {"refs": refs}
        if job.get("expiry_wait_s") and not self.stopped:
            # The SDK answers a 401 by refreshing with its stored refresh token and retrying.
            import paypack.client

            state["refresh_before"] = paypack.client.token_keys.get("refresh")
            time.sleep(float(job["expiry_wait_s"]))
            self.op("find after expiry", lambda: Transaction().find(ref), _same_ref(ref))
            state["refresh_after"] = paypack.client.token_keys.get("refresh")
        return {"sdk": "paypack-py", "version": metadata.version("paypack-py"), "state": state}


def _not_json(exchange: Recorded) -> bool:
    try:
        guarded_json.loads(exchange["response_body"])
    except ValueError:
        return True
    return False


def _keys(*names: str) -> Check:
    def check(data: object) -> Mismatch:
        if not isinstance(data, dict):
            return f"a JSON object with {', '.join(names)}", shown(data)
        missing = [name for name in names if name not in data]
        if missing:
            return f"{', '.join(names)}", f"an object without {', '.join(missing)}"
        return None

    return check


def _created(kind: str) -> Check:
    def check(data: object) -> Mismatch:
        if not isinstance(data, dict):
            return f"a {kind} creation (JSON object)", shown(data)
        if data.get("kind") != kind:
            return f"kind {kind}", shown(data.get("kind"), 40)
        if data.get("status") != "pending":
            return "status pending", shown(data.get("status"), 40)
        if not isinstance(data.get("ref"), str) or not data["ref"]:
            return "a ref", shown(data.get("ref"), 40)
        return None

    return check


def _same_ref(ref: str) -> Check:
    def check(data: object) -> Mismatch:
        if not isinstance(data, dict):
            return f"the transaction {ref}", shown(data)
        if data.get("ref") != ref:
            return f"ref {ref}", f"ref {shown(data.get('ref'), 60)}"
        return None

    return check


def _lists(refs: list[str]) -> Check:
    def check(data: object) -> Mismatch:
        items = data.get("transactions") if isinstance(data, dict) else None
        if not isinstance(items, list):
            return "an object with a transactions list", shown(data)
        listed = json.dumps(items)
        missing = [ref for ref in refs if ref not in listed]
        if missing:
            return (
                f"the {len(refs)} created transaction(s) listed",
                f"{len(items)} listed, without {', '.join(missing)}",
            )
        return None

    return check


def _emit(line: JsonObject) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def main() -> int:
    job = json.loads(sys.stdin.read())
    _emit(Driver(job, _emit).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
