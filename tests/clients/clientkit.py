"""Helpers of the SDK tests: a client that reads the stub without any SDK, the job a driver
gets, fresh customer numbers, and the comparison of an SDK's results with the stub's state."""

from __future__ import annotations

import contextlib
import itertools
import random
import sqlite3
from typing import Any

import httpx

from paysuite.clients.cli import make_job
from paysuite_core import tokens
from paysuite_core.launcher import RunningStub

#: Access tokens of the test stub live this long: one driver run fits, and the refresh after
#: expiry is reachable within the test.
ACCESS_TTL_S = 4
#: Past the token's exp, which the stub rounds up to a whole second.
EXPIRY_WAIT_S = ACCESS_TTL_S + 1.5
_counter = itertools.count()


def fresh_number(prefix: str = "078") -> str:
    """A customer number no earlier run used, so each run's lists hold only its own."""
    return f"{prefix}{(next(_counter) * 7919 + random.randrange(10**6)) % 10**7:07d}"


class Direct:
    """The stub read without any SDK: fresh Bearer tokens for every call, and its database."""

    def __init__(self, stub: RunningStub) -> None:
        self.stub = stub
        self.app = stub.config().applications_with("read-write")[0]
        self.http = httpx.Client(base_url=stub.base_url, timeout=15)

    def headers(self) -> dict[str, str]:
        """A freshly authorized token (the SDK under test may have spent or rotated others)."""
        pair = tokens.TokenFlow(tokens.httpx_send(self.http, self.stub.base_url), self.app)
        return {"Authorization": f"Bearer {pair.access()}"}

    def refresh(self, refresh_token: str) -> tokens.Answer | None:
        """Refresh on the path the SDKs call: to prove a token they used is spent."""
        send = tokens.httpx_send(self.http, self.stub.base_url)
        return tokens.refresh(send, refresh_token, tokens.SDK_REFRESH_PATH)

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params=params, headers=self.headers())
        assert response.status_code == 200, response.text
        return response.json()

    def webhook_mode(self, ref: str) -> str | None:
        path = self.stub.db_path
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT webhook_mode FROM transactions WHERE ref = ?", (ref,))
            return row.fetchone()[0]


def job_for(stub: RunningStub, number: str, **extra: Any) -> dict[str, Any]:
    return {**make_job(stub.config()), "number": number, **extra}


def cells(column: Any) -> dict[str, dict[str, Any]]:
    """The column's cells by operation; a skipped SDK fails the caller's test."""
    assert column.skip is None, column.skip
    return dict(column.cells)


def assert_matches_the_stub(column: Any, direct: Any, number: str, amount: int) -> None:
    """Every operation of the matrix ran ok, and what the SDK returned is what the stub stored
    and shows through its own routes (read with a separate client)."""
    got = cells(column)
    for op in ("authorize", "cashin", "cashout", "find", "events", "events from/to",
               "transactions", "me"):  # fmt: skip
        assert got[op]["ok"] is True, (op, got[op]["detail"])
    cashin, cashout = got["cashin"]["data"], got["cashout"]["data"]
    for created, kind in ((cashin, "CASHIN"), (cashout, "CASHOUT")):
        stored = direct.get(f"/transactions/find/{created['ref']}")
        assert (stored["kind"], stored["amount"], stored["client"]) == (kind, amount, number)
        assert created["kind"] == kind and created["amount"] == amount
    assert direct.webhook_mode(cashin["ref"]) == "development"
    assert got["find"]["data"] == direct.get(f"/transactions/find/{cashin['ref']}")
    refs = [cashout["ref"], cashin["ref"]]  # newest first
    events = got["events"]["data"]
    assert events == direct.get("/events/transactions", client=number, limit=10)
    assert [e["data"]["ref"] for e in events["transactions"]] == refs
    ranged = got["events from/to"]["data"]
    assert [e["data"]["ref"] for e in ranged["transactions"]] == refs
    assert ranged["total"] == 2
    listed = got["transactions"]["data"]
    assert (
        listed["transactions"]
        == direct.get("/transactions/list", client=number, limit=10)["transactions"]
    )
    assert [tx["ref"] for tx in listed["transactions"]] == refs
    assert (listed["cashin"], listed["cashout"]) == (amount, amount)
    assert got["me"]["data"] == direct.get("/merchants/me")
