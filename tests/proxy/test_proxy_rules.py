"""Each stateful rule of the proxy, proven both ways: silent on the conformant stub, and naming
its check ID (with the exchanges as evidence, exit 1) against the fault that breaks it.

The client is a plain httpx client pointed at the proxy, as a merchant's app would be; the
customer is the stub's sandbox, reached through the proxy too (forwarded, not judged).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import jwt
import pytest
from proxykit import (
    Client,
    config_file,
    start_proxy,
    wait_processed,
    writer,
)

from paysuite_core import tokens

pytestmark = pytest.mark.slow


def _session(stub, tmp_path: Path, name: str, **config_overrides):
    config = config_file(stub, tmp_path, **config_overrides)
    run = start_proxy(stub.root_url, tmp_path / name, config=config)
    return run, Client(run.base_url, writer(stub), run.url)


def _only_failed(run, *check_ids: str) -> None:
    assert run.status == 1, run.output
    assert run.failed() == set(check_ids), run.output
    for check_id in check_ids:
        check = run.check(check_id)
        assert check["message"] and check["expected"] and check["actual"], check
        assert check["evidence"] and check["evidence"][0]["curl"].startswith("curl "), check
        assert f"× {check_id}" in run.output  # the live line


# --- IDEM-001 -----------------------------------------------------------------------------
def _reuse_a_key(client: Client) -> tuple[str, str]:
    key = uuid.uuid4().hex
    first = client.create(key=key)
    second = client.create(key=key)
    assert first.status_code == 200
    return first.json()["ref"], str(second.status_code)


def test_a_rejected_reuse_passes(make_stub, tmp_path: Path) -> None:
    stub = make_stub()
    run, client = _session(stub, tmp_path, "clean")
    _, second = _reuse_a_key(client)
    assert second == "409"
    client.close()
    assert run.stop() == 0, run.output
    assert run.check("IDEM-001")["outcome"] == "passed"
    # confirmed through the judge's own client: one created event for the key's number
    assert "IDEM-001" not in run.failed()


def test_a_key_executed_twice_is_idem_001(make_stub, tmp_path: Path) -> None:
    stub = make_stub(faults=("idempotency-ignored",))
    run, client = _session(stub, tmp_path, "fault")
    first_ref, second = _reuse_a_key(client)
    assert second == "200"
    client.close()
    run.stop()
    _only_failed(run, "IDEM-001")
    check = run.check("IDEM-001")
    assert "2 transactions were created for number 0781234567" in check["message"], check
    assert first_ref in check["message"]
    # the two creations are the evidence, in order
    urls = [item["request"]["url"] for item in check["evidence"]]
    assert len(urls) == 2 and all(u.endswith("/transactions/cashin") for u in urls)
    failing = [e for e in run.report["exchanges"] if e["verdict"] == "fail"]
    assert [e["violations"][0]["id"] for e in failing] == ["IDEM-001", "IDEM-001"]


def test_a_rejected_reuse_executed_anyway_is_found_on_the_events_list(
    make_stub,
    tmp_path: Path,
) -> None:
    """The traffic says 409; the judge's own count of created events says two transactions."""
    stub = make_stub(faults=("idempotency-rejected-but-executed",))
    run, client = _session(stub, tmp_path, "fault")
    first_ref, second = _reuse_a_key(client)
    assert second == "409"
    client.close()
    run.stop()
    _only_failed(run, "IDEM-001")
    check = run.check("IDEM-001")
    assert "answered 409, yet 2 transactions were created" in check["message"], check
    assert first_ref not in check["message"]  # counted on the judge's own reproduction
    assert "reproduced by the judge on its own number" in check["message"], check
    # the two proxied creations, then the judge's own reproduction and events list
    urls = [item["request"]["url"] for item in check["evidence"]]
    assert urls[0].endswith("/transactions/cashin") and urls[1].endswith("/transactions/cashin")
    assert any("/events/transactions" in url for url in urls[2:]), urls
    assert "× IDEM-001" in run.output


def test_another_clients_payment_between_first_and_reuse_is_not_an_execution(
    make_stub,
    tmp_path: Path,
) -> None:
    """The same customer paid the same amount by another client, outside the proxy, between the
    first creation and the rejected reuse: that is not the reuse executing (no false alarm)."""
    stub = make_stub()
    run, client = _session(stub, tmp_path, "clean")
    key = uuid.uuid4().hex
    assert client.create(key=key).status_code == 200
    elsewhere = Client(stub.config().base_url, writer(stub), stub.root_url)
    assert elsewhere.create().status_code == 200  # same number and amount, not proxied
    elsewhere.close()
    assert client.create(key=key).status_code == 409
    client.close()
    assert run.stop() == 0, run.output
    assert run.check("IDEM-001")["outcome"] == "passed"


def test_without_credentials_a_rejected_reuse_is_not_confirmed(
    make_stub,
    tmp_path: Path,
) -> None:
    stub = make_stub(faults=("idempotency-rejected-but-executed",))
    run = start_proxy(stub.root_url, tmp_path / "noconfig")
    client = Client(run.base_url, writer(stub), run.url)
    _reuse_a_key(client)
    client.close()
    assert run.stop() == 0, run.output  # nothing the traffic proves; said so, not guessed
    check = run.check("IDEM-001")
    assert check["outcome"] == "passed" and "not confirmed" in check["note"], check


# --- AUTH-008 -----------------------------------------------------------------------------
def _use_after_expiry(client: Client) -> int:
    token = client.flow.access()
    assert client.create(token=token).status_code == 200
    exp = jwt.decode(token, options={"verify_signature": False})["exp"]
    # the stub runs with --access-ttl 2; the proxy's grace after exp is 1 s
    time.sleep(max(0.0, exp + 2.0 - time.time()))
    return client.create(token=token).status_code


def test_an_expired_token_refused_passes(make_stub, tmp_path: Path) -> None:
    stub = make_stub(extra_args=("--access-ttl", "2"))
    run, client = _session(stub, tmp_path, "clean")
    assert _use_after_expiry(client) == 401
    client.close()
    assert run.stop() == 0, run.output
    assert run.check("AUTH-008")["outcome"] == "passed"


def test_an_expired_token_accepted_is_auth_008(make_stub, tmp_path: Path) -> None:
    stub = make_stub(faults=("tokens-never-expire",), extra_args=("--access-ttl", "2"))
    run, client = _session(stub, tmp_path, "fault")
    assert _use_after_expiry(client) == 200
    client.close()
    run.stop()
    _only_failed(run, "AUTH-008")
    check = run.check("AUTH-008")
    assert "expired" in check["message"]
    # the authorize that issued the token, then the request that used it too late
    assert check["evidence"][0]["request"]["url"].endswith(tokens.AUTHORIZE_PATH)
    # the evidence shows them, masked: no secret and no usable token in any report
    assert client.flow.pair is not None
    token = client.flow.pair.access
    for report in (path for path in run.report_dir.rglob("*") if path.is_file()):
        text = report.read_text(encoding="utf-8")
        assert writer(stub).client_secret not in text, report
        assert token not in text, report


# --- AUTH-012 -----------------------------------------------------------------------------
def _refresh_twice(client: Client) -> tuple[int, int]:
    client.flow.authorize()
    assert client.flow.pair is not None and client.flow.pair.refresh
    used = client.flow.pair.refresh
    send = httpx_send_of(client)
    first = tokens.refresh(send, used, tokens.SDK_REFRESH_PATH)
    second = tokens.refresh(send, used, tokens.SDK_REFRESH_PATH)
    assert first is not None and second is not None
    return first.status, second.status


def httpx_send_of(client: Client) -> tokens.Send:
    return tokens.httpx_send(client.http, client.base_url)


def test_rotation_kept_passes(make_stub, tmp_path: Path) -> None:
    stub = make_stub()  # rotates, and declares it in its credentials file
    run, client = _session(stub, tmp_path, "clean")
    assert _refresh_twice(client) == (200, 401)
    client.close()
    assert run.stop() == 0, run.output
    assert run.check("AUTH-012")["outcome"] == "passed"


def test_a_refresh_token_reused_under_declared_rotation_is_auth_012(
    make_stub,
    tmp_path: Path,
) -> None:
    stub = make_stub(variants=("no-rotation",))
    run, client = _session(stub, tmp_path, "fault", refresh_rotation=True)
    assert _refresh_twice(client) == (200, 200)
    client.close()
    run.stop()
    _only_failed(run, "AUTH-012")


def test_rotation_not_declared_is_not_judged(make_stub, tmp_path: Path) -> None:
    stub = make_stub(variants=("no-rotation",))
    assert "refresh_rotation: false" in stub.credentials_path.read_text(encoding="utf-8")
    run, client = _session(stub, tmp_path, "undeclared", refresh_rotation=None)
    assert _refresh_twice(client) == (200, 200)
    client.close()
    assert run.stop() == 0, run.output
    check = run.check("AUTH-012")
    assert check["outcome"] == "skipped"
    assert "does not declare refresh_rotation" in check["message"]


# --- LIFE-004 -----------------------------------------------------------------------------
def _act_twice(client: Client) -> tuple[str, str]:
    ref = client.create().json()["ref"]
    assert client.sandbox(ref, "confirm").status_code == 200
    before = wait_processed(client, ref).json()["status"]
    client.sandbox(ref, "cancel")
    return before, client.find(ref).json()["status"]


def test_a_processed_transaction_that_stays_passes(make_stub, tmp_path: Path) -> None:
    stub = make_stub()
    run, client = _session(stub, tmp_path, "clean")
    assert _act_twice(client) == ("success", "success")
    client.close()
    assert run.stop() == 0, run.output
    assert run.check("LIFE-004")["outcome"] == "passed"


def test_a_processed_transaction_that_changes_is_life_004(make_stub, tmp_path: Path) -> None:
    stub = make_stub(faults=("processed-changes-again",))
    run, client = _session(stub, tmp_path, "fault")
    assert _act_twice(client) == ("success", "failed")
    client.close()
    run.stop()
    _only_failed(run, "LIFE-004")
    assert "changed from 'success'" in run.check("LIFE-004")["message"]


# --- LIFE-002/003: the processed event and find --------------------------------------------
def _confirm_and_list(client: Client, *, find: bool) -> str:
    ref = client.create().json()["ref"]
    assert client.sandbox(ref, "confirm").status_code == 200
    events = client.events(ref=ref).json()["transactions"]
    assert any(e["event_kind"] == "transaction:processed" for e in events)
    if find:
        client.find(ref)
    return ref


def test_find_agreeing_with_the_processed_event_passes(make_stub, tmp_path: Path) -> None:
    stub = make_stub()
    run, client = _session(stub, tmp_path, "clean")
    _confirm_and_list(client, find=True)
    _confirm_and_list(client, find=False)  # confirmed at the end by the judge's own find
    client.close()
    assert run.stop() == 0, run.output
    assert run.check("LIFE-002")["outcome"] == "passed"


def test_find_disagreeing_with_the_processed_event_is_life_002(
    make_stub,
    tmp_path: Path,
) -> None:
    stub = make_stub(faults=("find-status-disagrees",))
    run, client = _session(stub, tmp_path, "fault")
    _confirm_and_list(client, find=True)
    client.close()
    run.stop()
    _only_failed(run, "LIFE-002")
    assert "status 'success' differs from find's 'failed'" in run.check("LIFE-002")["message"]


def test_a_processed_event_nobody_found_is_confirmed_at_the_end(
    make_stub,
    tmp_path: Path,
) -> None:
    stub = make_stub(faults=("find-status-disagrees",))
    run, client = _session(stub, tmp_path, "fault")
    ref = _confirm_and_list(client, find=False)
    client.close()
    run.stop()
    _only_failed(run, "LIFE-002")
    check = run.check("LIFE-002")
    # the proxied events list, then the judge's own find of that ref
    assert check["evidence"][-1]["request"]["url"].endswith(f"/transactions/find/{ref}")
