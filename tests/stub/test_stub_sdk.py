"""The live service's published Python SDK (paypack-py 1.0.5), unchanged, against the stub.

Only its base URL changes. The SDK keeps module-level state (token_keys, creadentials and one
shared requests.Session with sticky headers), which the fixture resets around each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from stubkit import new_number

pytest.importorskip("paypack", reason="paypack-py is installed by the test set-up")

import paypack.client  # noqa: E402
import paypack.config  # noqa: E402
import paypack.http_client  # noqa: E402
from paypack.client import HttpClient  # noqa: E402
from paypack.events import Event  # noqa: E402
from paypack.oauth2 import Oauth  # noqa: E402
from paypack.transactions import Transaction  # noqa: E402


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


def test_sdk_full_flow(sdk: Any, stub) -> None:
    tokens = Oauth().auth()
    assert set(tokens) >= {"access", "refresh", "expires"}

    number = new_number()
    cashin = Transaction().cashin(amount=100, phone_number=number, mode="development")
    assert cashin["kind"] == "CASHIN" and cashin["status"] == "pending"
    cashout = Transaction().cashout(amount=250, phone_number=number)
    assert cashout["kind"] == "CASHOUT" and cashout["status"] == "pending"

    found = Transaction().find(cashin["ref"])
    assert found["ref"] == cashin["ref"] and found["client"] == number
    assert found["merchant"] == sdk.merchant and found["amount"] == 100

    events = Event().list(client=number, limit=10)
    assert events["total"] == 2
    assert {e["data"]["ref"] for e in events["transactions"]} == {cashin["ref"], cashout["ref"]}
    filtered = Event().list(client=number, kind="CASHOUT")
    assert [e["data"]["ref"] for e in filtered["transactions"]] == [cashout["ref"]]

    old_refresh = paypack.client.token_keys["refresh"]
    refreshed = Oauth().refresh_access_token()
    assert refreshed["access"] != tokens["access"] and refreshed["refresh"] != old_refresh
    # the refreshed token is the one the SDK now sends
    assert Transaction().find(cashout["ref"])["kind"] == "CASHOUT"


def test_sdk_recovers_from_a_rejected_token(sdk: Any) -> None:
    """On a 401 the SDK refreshes with its stored refresh token and retries."""
    Oauth().auth()
    paypack.http_client.client.headers["Authorization"] = "Bearer expired-or-garbage"
    body = Event().list(limit=1)
    assert "transactions" in body and body["limit"] == 1
