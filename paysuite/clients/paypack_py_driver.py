"""Drive the published paypack-py SDK (1.0.5), unchanged, against one target.

Run as ``python -m paysuite.clients.paypack_py_driver`` with a job (JSON) on stdin; prints one
JSON result on stdout. A subprocess, because the SDK keeps its state in module globals (tokens,
credentials, one ``requests.Session`` with sticky headers) and its base URL is a module constant
copied at import: a fresh interpreter is the only clean client. Only ``base_url`` is changed. A
``requests`` response hook *observes* each answer, so a cell can name the status and message
that broke it even when the SDK hides them (``KeyError: 'access'`` on a refused refresh).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from importlib import metadata
from typing import Any

Check = Callable[[Any], str | None]


class Driver:
    """Runs the SDK's public methods in order and records one cell per operation."""

    def __init__(self, job: dict[str, Any]) -> None:
        import paypack.client
        import paypack.config
        import paypack.http_client

        paypack.config.base_url = job["base_url"]
        paypack.client.base_url = job["base_url"]  # copied at import by ``from ... import``
        self.job = job
        self.cells: list[dict[str, Any]] = []
        self.last_failure: str | None = None
        paypack.http_client.client.hooks["response"].append(self._observe)
        paypack.client.HttpClient(client_id=job["client_id"], client_secret=job["client_secret"])

    def _observe(self, response: Any, *args: Any, **kwargs: Any) -> None:
        if response.status_code >= 300:
            try:
                body = response.json()
                text = f"{body.get('code', '')}: {body.get('message', '')}".lstrip(": ")
            except ValueError:
                text = response.text[:200]
            self.last_failure = f"{response.status_code} {text}"

    def op(self, name: str, call: Callable[[], Any], check: Check) -> Any:
        """Run one SDK call; an error body the SDK returns as data is a failure too."""
        self.last_failure = None
        try:
            data = call()
        except Exception as exc:  # the SDK raises whatever its code trips on
            sdk = f"{type(exc).__name__}: {exc}"
            detail = f"{self.last_failure} (SDK: {sdk})" if self.last_failure else sdk
            self.cells.append({"op": name, "ok": False, "detail": detail})
            return None
        problem = check(data)
        if problem and self.last_failure:
            problem = self.last_failure
        self.cells.append(
            {"op": name, "ok": problem is None, "detail": problem or "", "data": data}
        )
        return None if problem else data

    def run(self) -> dict[str, Any]:
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
        ref = cashin["ref"] if cashin else "00000000-0000-4000-8000-000000000000"
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
        state: dict[str, Any] = {"refs": refs}
        if job.get("expiry_wait_s"):
            # The SDK answers a 401 by refreshing with its stored refresh token and retrying.
            import paypack.client

            state["refresh_before"] = paypack.client.token_keys.get("refresh")
            time.sleep(float(job["expiry_wait_s"]))
            self.op("find after expiry", lambda: Transaction().find(ref), _same_ref(ref))
            state["refresh_after"] = paypack.client.token_keys.get("refresh")
        return {
            "sdk": "paypack-py",
            "version": metadata.version("paypack-py"),
            "cells": self.cells,
            "state": state,
        }


def _keys(*names: str) -> Check:
    def check(data: Any) -> str | None:
        if isinstance(data, dict) and all(name in data for name in names):
            return None
        return f"unexpected answer {json.dumps(data)[:200]}"

    return check


def _created(kind: str) -> Check:
    def check(data: Any) -> str | None:
        if isinstance(data, dict) and data.get("kind") == kind and data.get("status") == "pending":
            return None
        return f"unexpected answer {json.dumps(data)[:200]}"

    return check


def _same_ref(ref: str) -> Check:
    def check(data: Any) -> str | None:
        if isinstance(data, dict) and data.get("ref") == ref:
            return None
        return f"unexpected answer {json.dumps(data)[:200]}"

    return check


def _lists(refs: list[str]) -> Check:
    def check(data: Any) -> str | None:
        items = data.get("transactions") if isinstance(data, dict) else None
        if not isinstance(items, list):
            return f"unexpected answer {json.dumps(data)[:200]}"
        listed = json.dumps(items)
        missing = [ref for ref in refs if ref not in listed]
        return f"not listed: {', '.join(missing)}" if missing else None

    return check


def main() -> int:
    job = json.loads(sys.stdin.read())
    print(json.dumps(Driver(job).run()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
