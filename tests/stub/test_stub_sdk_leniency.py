"""What the live service accepts because its published SDKs send it (RC-33..35): a bare token,
a JavaScript Date's text as an events bound, an empty X-Webhook-Mode; and ``--strict-auth``."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from stubkit import Api, new_number
from test_stub_auth import ACCESS_ROUTES

BODY = {"amount": 100, "number": "0781234567"}


def _js_to_string(moment: datetime, offset_h: int = 0) -> str:
    """What ``String(new Date(...))`` gives in a zone ``offset_h`` hours east of UTC."""
    local = moment.astimezone(UTC) + timedelta(hours=offset_h)
    sign = "+" if offset_h >= 0 else "-"
    return local.strftime(f"%a %b %d %Y %H:%M:%S GMT{sign}{abs(offset_h):02d}00 (Some Zone)")


@pytest.mark.parametrize("method,path", ACCESS_ROUTES)
def test_a_bare_token_is_accepted_on_every_protected_route(
    api: Api, method: str, path: str
) -> None:
    response = api.http.request(
        method, path, headers={"Authorization": api.token()}, json={**BODY, "number": new_number()}
    )
    expected = 404 if "/find/" in path else 200  # the all-zero ref names no transaction
    assert response.status_code == expected, response.text


@pytest.mark.parametrize("header", ["not-a-jwt", "a.b.c"])
def test_a_bare_garbage_token_is_invalid(api: Api, header: str) -> None:
    response = api.http.get("/events/transactions", headers={"Authorization": header})
    assert response.status_code == 401 and response.json()["code"] == "invalid_token"


def test_strict_auth_demands_the_bearer_scheme(inproc) -> None:
    server = inproc(strict_auth=True)
    api = server.api
    bare = api.http.get("/events/transactions", headers={"Authorization": api.token()})
    assert bare.status_code == 401
    body = bare.json()
    assert body["code"] == "missing_token" and "'Bearer <token>'" in body["message"]
    assert "bare" not in body["message"]
    assert api.events().status_code == 200  # Bearer still works


def test_javascript_date_texts_bound_the_events(api: Api) -> None:
    number = new_number()
    ref = api.create(number=number).json()["ref"]
    now = datetime.now(UTC)
    hour = timedelta(hours=1)
    texts = {
        "toString, UTC": _js_to_string(now - hour),
        "toString, +02:00": _js_to_string(now - hour, 2),
        "toString, -05:00": _js_to_string(now - hour, -5),
        "toUTCString": (now - hour).strftime("%a, %d %b %Y %H:%M:%S GMT"),
    }
    for label, text in texts.items():
        # paypack-js puts the text in the URL unencoded: its "+" arrives as a space
        raw = quote(text, safe="()+:,")
        url = f"/events/transactions?client={number}&from={raw}"
        body = api.http.get(url, headers=api.headers()).json()
        assert [e["data"]["ref"] for e in body["transactions"]] == [ref], label
        assert body["total"] == 1
    too_early = _js_to_string(now - 2 * hour, 2)  # 2 h ago in +02:00 is still before creation
    listed = api.events(client=number, to=too_early).json()
    assert listed["total"] == 0


@pytest.mark.parametrize(
    "text",
    [
        "Sun Foo 22 2026 10:34:45 GMT+0000",
        "Sun Nov 31 2026 10:34:45 GMT+0000 (UTC)",
        "Sun Nov 22 2026 10:34:45 GMT+9900",
        "Invalid Date",
        "Sun, 31 Feb 2026 10:34:45 GMT",
    ],
)
def test_bad_date_texts_are_400(api: Api, text: str) -> None:
    response = api.events(**{"from": text})
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert response.json()["message"].startswith("from: ")


def _stored_mode(db_path: Path, ref: str) -> str | None:
    with contextlib.closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as db:
        return db.execute("SELECT webhook_mode FROM transactions WHERE ref = ?", (ref,)).fetchone()[
            0
        ]


def test_an_empty_webhook_mode_is_none(api: Api, stub) -> None:
    """paypack-go sends ``X-Webhook-Mode:`` empty when its caller sets no mode."""
    empty = api.create(headers={"X-Webhook-Mode": ""})
    given = api.create(headers={"X-Webhook-Mode": "production"})
    assert empty.status_code == given.status_code == 200
    assert _stored_mode(stub.db_path, empty.json()["ref"]) is None
    assert _stored_mode(stub.db_path, given.json()["ref"]) == "production"
