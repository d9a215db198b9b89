"""pending -> processed: the sandbox, auto-resolution, the pending time-out, exactly once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from stubkit import Api, InProcessStub, make_settings, new_number


def _wait_status(api: Api, ref: str, wanted: str, timeout_s: float = 5) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        body = api.find(ref).json()
        if body["status"] == wanted or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def _processed_events(api: Api, ref: str) -> list[dict]:
    body = api.events(ref=ref, **{"event-kind": "transaction:processed"}).json()
    return body["transactions"]


@pytest.mark.parametrize(("action", "status"), [("confirm", "success"), ("cancel", "failed")])
def test_sandbox_resolves_once(api: Api, action: str, status: str) -> None:
    ref = api.create().json()["ref"]
    response = api.sandbox(ref, action)
    assert response.status_code == 200
    assert response.json()["status"] == status and response.json()["ref"] == ref
    assert api.find(ref).json()["status"] == status
    for again in ("confirm", "cancel"):
        conflict = api.sandbox(ref, again)
        assert conflict.status_code == 409
        assert conflict.json()["code"] == "transaction_not_pending"
    assert api.find(ref).json()["status"] == status
    (event,) = _processed_events(api, ref)
    assert event["data"]["status"] == status and event["data"]["processed_at"]


def test_sandbox_unknown_ref_and_wrong_method(api: Api) -> None:
    response = api.sandbox("00000000-0000-4000-8000-000000000000", "confirm")
    assert response.status_code == 404
    assert response.json()["code"] == "transaction_not_found"
    get = httpx.get(f"{api.root_url}/_sandbox/transactions/x/confirm")
    assert get.status_code == 405
    other = httpx.post(f"{api.root_url}/_sandbox/transactions/x/approve")
    assert other.status_code == 404


def test_concurrent_confirm_and_cancel_process_exactly_once(api: Api) -> None:
    ref = api.create().json()["ref"]

    async def race() -> list[int]:
        async with httpx.AsyncClient(base_url=api.root_url, timeout=30) as client:
            responses = await asyncio.gather(
                *(
                    client.post(f"/_sandbox/transactions/{ref}/{action}")
                    for action in ["confirm", "cancel"] * 10
                )
            )
        return [r.status_code for r in responses]

    statuses = asyncio.run(race())
    assert statuses.count(200) == 1 and statuses.count(409) == 19
    assert len(_processed_events(api, ref)) == 1


@pytest.mark.parametrize(("suffix", "status"), [("0000", "failed"), ("1111", "success")])
def test_auto_resolution_rules(api: Api, suffix: str, status: str) -> None:
    number = new_number()[:-4] + suffix
    ref = api.create(number=number).json()["ref"]
    assert api.find(ref).json()["status"] == "pending"
    assert _wait_status(api, ref, status)["status"] == status
    assert len(_processed_events(api, ref)) == 1
    assert api.sandbox(ref, "confirm").status_code == 409


def test_unmatched_numbers_stay_pending(api: Api) -> None:
    ref = api.create().json()["ref"]
    time.sleep(0.4)
    assert api.find(ref).json()["status"] == "pending"


def test_pending_timeout(inproc) -> None:
    server = inproc(pending_timeout_s=0.5)
    ref = server.api.create().json()["ref"]
    assert server.api.find(ref).json()["status"] == "pending"
    assert _wait_status(server.api, ref, "failed")["status"] == "failed"
    (event,) = _processed_events(server.api, ref)
    assert event["data"]["status"] == "failed"


def test_default_outcome(inproc) -> None:
    server = inproc(auto_resolve={"default": {"outcome": "success", "delay_s": 0}})
    ref = server.api.create().json()["ref"]
    assert _wait_status(server.api, ref, "success")["status"] == "success"


def test_resolution_survives_a_restart(tmp_path: Path) -> None:
    """The due time lives in the database: a stub stopped before it fires resolves on restart."""
    db = str(tmp_path / "stub.db")
    first = InProcessStub(make_settings(db=db, pending_timeout_s=0.6), background=False)
    try:
        ref = first.api.create().json()["ref"]
        app = first.applications[0]
    finally:
        first.close()
    time.sleep(0.7)
    second = InProcessStub(make_settings(db=db), apps=())
    try:
        second.api.applications = [app]
        assert _wait_status(second.api, ref, "failed")["status"] == "failed"
    finally:
        second.close()


def test_no_sandbox(inproc) -> None:
    server = inproc(sandbox=False)
    ref = server.api.create().json()["ref"]
    response = server.api.sandbox(ref, "confirm")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
