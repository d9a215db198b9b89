"""The live service's published Python SDK (paypack-py 1.0.5), unchanged, against the stub.

Only its base URL changes. The SDK keeps module-level state (token_keys, creadentials and one
shared requests.Session with sticky headers), which the fixture resets around each test.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import jwt
import pytest
from stubkit import Api, new_number, refresh_url

pytest.importorskip("paypack", reason="paypack-py is installed by the test set-up")

import paypack.client
import paypack.config
import paypack.http_client
from paypack.client import HttpClient
from paypack.events import Event
from paypack.oauth2 import Oauth
from paypack.transactions import Transaction


def _reset_sdk_state() -> None:
    paypack.client.token_keys.clear()
    paypack.client.creadentials.clear()
    for header in ("Authorization", "X-Webhook-Mode", "Content-Type"):
        paypack.http_client.client.headers.pop(header, None)


@pytest.fixture
def sdk(stub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(paypack.config, "base_url", stub.base_url)
    monkeypatch.setattr(paypack.client, "base_url", stub.base_url)
    _reset_sdk_state()
    app = stub.config().applications_with("read-write")[0]
    HttpClient(client_id=app.client_id, client_secret=app.client_secret)
    yield app
    _reset_sdk_state()


def _stored_webhook_mode(db_path: Path, ref: str) -> str | None:
    """Read the stub's database directly (WAL allows a reader beside the running stub)."""
    with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT webhook_mode FROM transactions WHERE ref = ?", (ref,)).fetchone()
    assert row is not None, f"{ref} is not in the database"
    return row[0]


def test_sdk_full_flow(sdk: Any, stub, api: Api) -> None:
    """Every SDK call succeeds, and what it returns is what the stub stored, read back through
    an independent client (and the database for what the API does not show)."""
    tokens = Oauth().auth()
    assert set(tokens) == {"access", "refresh", "expires"}
    claims = jwt.decode(tokens["access"], options={"verify_signature": False})
    assert claims["id"] == sdk.client_id and claims["merchant"] == sdk.merchant
    assert claims["exp"] == tokens["expires"]
    first_refresh = paypack.client.token_keys["refresh"]
    assert first_refresh == tokens["refresh"]

    number = new_number()
    cashin = Transaction().cashin(amount=100, phone_number=number, mode="development")
    cashout = Transaction().cashout(amount=250, phone_number=number)
    for created, kind, amount in ((cashin, "CASHIN", 100), (cashout, "CASHOUT", 250)):
        assert set(created) == {"amount", "created_at", "kind", "ref", "status"}
        assert (created["kind"], created["amount"], created["status"]) == (kind, amount, "pending")
        stored = api.find(created["ref"], api.app("read", "DEMO01")).json()
        assert stored == {
            "amount": amount,
            "client": number,
            "fee": round(amount * 0.023, 2),
            "kind": kind,
            "merchant": sdk.merchant,
            "ref": created["ref"],
            "status": "pending",
            "timestamp": stored["timestamp"],
        }
        assert datetime.fromisoformat(stored["timestamp"]) == datetime.fromisoformat(
            created["created_at"]
        )
    # the SDK sent X-Webhook-Mode on cashin; its session keeps the header for later calls
    assert _stored_webhook_mode(stub.db_path, cashin["ref"]) == "development"

    found = Transaction().find(cashin["ref"])
    assert found == api.find(cashin["ref"]).json()

    events = Event().list(client=number, limit=10)
    direct = api.events(client=number, limit=10).json()
    assert events == direct
    assert events["total"] == 2 and events["limit"] == 10 and events["client"] == number
    assert [e["data"]["ref"] for e in events["transactions"]] == [cashout["ref"], cashin["ref"]]
    filtered = Event().list(client=number, kind="CASHOUT")
    assert filtered["kind"] == "CASHOUT"
    assert [e["data"]["ref"] for e in filtered["transactions"]] == [cashout["ref"]]
    # no call above needed the SDK's silent refresh-and-retry on a 401
    assert paypack.client.token_keys["refresh"] == first_refresh

    refreshed = Oauth().refresh_access_token()
    assert set(refreshed) == {"access", "refresh", "expires"}
    assert refreshed["access"] != tokens["access"] and refreshed["refresh"] != first_refresh
    assert paypack.client.token_keys["refresh"] == refreshed["refresh"]
    # rotation: the SDK's previous refresh token is spent, the new pair works for anyone
    spent = api.http.get(refresh_url(first_refresh))
    assert spent.status_code == 401 and spent.json()["code"] == "invalid_token"
    with_new = api.http.get(
        f"/transactions/find/{cashout['ref']}",
        headers={"Authorization": f"Bearer {refreshed['access']}"},
    )
    assert with_new.status_code == 200 and with_new.json()["kind"] == "CASHOUT"
    # and the SDK itself now sends the refreshed token
    assert paypack.http_client.client.headers["Authorization"] == f"Bearer {refreshed['access']}"
    assert Transaction().find(cashout["ref"]) == with_new.json()


def test_sdk_recovers_from_a_rejected_token(sdk: Any) -> None:
    """On a 401 the SDK refreshes with its stored refresh token and retries."""
    first = Oauth().auth()
    paypack.http_client.client.headers["Authorization"] = "Bearer expired-or-garbage"
    body = Event().list(limit=1)
    assert "transactions" in body and body["limit"] == 1
    assert paypack.client.token_keys["refresh"] != first["refresh"]  # it did refresh
