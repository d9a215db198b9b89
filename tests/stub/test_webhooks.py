"""Webhook delivery (RC-40), in process: what is sent, to where, signed how, retried when.

Each test runs a tiny recording receiver (``webhookkit.Receiver``) and checks what arrived with
the shared contract (``paysuite_core.webhooks.signature``) and against the events list: the
body of a delivery is the event record exactly as the list renders it.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from stubkit import InProcessStub
from webhookkit import FAST_RETRY, Receiver, deliveries, wait_log

from paysuite_core.target_config import load_target_config
from paysuite_core.webhooks import signature as webhook_signature
from stub_server import timefmt
from stub_server.errors import json_body
from stub_server.settings import SettingsError
from stub_server.store import EventQuery, NewTransaction, Store, WebhookEndpoint, uuid4_text
from stub_server.webhook_delivery.endpoint_url import ALLOW_REMOTE_ENV, check_endpoint_url

CREATED, PROCESSED = "transaction:created", "transaction:processed"


@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(**kwargs: Any) -> Receiver:
        made.append(Receiver(**kwargs))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def secret_of(stub: InProcessStub, mode: str = "development") -> str:
    endpoint = stub.call(stub.stub.store.webhook_endpoint, mode)
    assert endpoint is not None
    return str(endpoint.secret)


def cashin_confirmed(stub: InProcessStub, **headers: str) -> str:
    created = stub.api.create("cashin", headers=headers)
    assert created.status_code == 200, created.text
    ref = str(created.json()["ref"])
    assert stub.api.sandbox(ref, "confirm").status_code == 200
    return ref


def listed_records(stub: InProcessStub, ref: str) -> dict[str, dict[str, Any]]:
    listed = stub.api.events(ref=ref).json()["transactions"]
    return {record["event_id"]: record for record in listed}


def test_a_confirmed_cashin_delivers_both_events_signed_as_the_list_renders_them(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    receiver = receivers()
    stub = inproc(webhooks={"development": receiver.url}, webhook_retry=FAST_RETRY)
    ref = cashin_confirmed(stub)  # no X-Webhook-Mode: development (RC-40)
    created, processed = receiver.wait_for(2)
    secret = secret_of(stub)
    records = listed_records(stub, ref)
    assert [created.record["event_kind"], processed.record["event_kind"]] == [CREATED, PROCESSED]
    for arrival in (created, processed):
        arrival.verify(secret)  # raises SignatureError when it does not hold
        assert arrival.headers["Content-Type"] == "application/json"
        assert arrival.attempt == 1
        assert arrival.headers[webhook_signature.MODE_HEADER] == "development"
        assert arrival.event_id == arrival.record["event_id"]
        # byte for byte the record of the events list, in the stub's compact JSON
        assert arrival.body == json_body(records[arrival.event_id])
    assert processed.record["data"]["status"] == "success"
    log = wait_log(stub.root_url, lambda rows: len(rows) == 2, ref=ref)
    assert all(row["status"] == "delivered" and row["attempts"] == 1 for row in log)
    assert {row["event_id"] for row in log} == set(records)


def test_a_failing_receiver_gets_retries_with_the_same_event_id(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    receiver = receivers(answer=lambda n: 500 if n < 2 else 204)
    stub = inproc(webhooks={"development": receiver.url}, webhook_retry=FAST_RETRY)
    created = stub.api.create("cashin")
    arrivals = receiver.wait_for(3)
    assert [a.attempt for a in arrivals] == [1, 2, 3]
    assert len({a.event_id for a in arrivals}) == 1
    assert len({a.body for a in arrivals}) == 1  # the same record; only the signature's t moves
    (row,) = wait_log(
        stub.root_url,
        lambda rows: rows[0]["status"] == "delivered",
        ref=created.json()["ref"],
    )
    assert row["attempts"] == 3 and row["delivered_at"] and row["last_error"] is None


def test_backoff_doubles_and_a_delivery_is_abandoned_after_max_attempts(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    receiver = receivers(answer=lambda n: 503)
    retry = {"base_s": 0.1, "cap_s": 0.4, "max_attempts": 4, "timeout_s": 2}
    stub = inproc(webhooks={"development": receiver.url}, webhook_retry=retry)
    stub.api.create("cashin")
    (row,) = wait_log(stub.root_url, lambda rows: rows[0]["status"] == "abandoned")
    assert row["attempts"] == 4 and row["last_error"].startswith("HTTP 503")
    assert row["next_attempt_at"] is None and row["delivered_at"] is None
    arrivals = receiver.wait_for(4)
    assert len(arrivals) == 4  # not one more after the last attempt
    times = [a.verify(secret_of(stub)).timestamp for a in arrivals]
    assert times == sorted(times)


def test_a_timeout_and_a_refused_connection_are_failed_attempts(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    slow = receivers(delay_s=1.0)
    closed = receivers()
    closed.close()  # nothing listens on its port any more
    retry = {"base_s": 5, "cap_s": 5, "max_attempts": 3, "timeout_s": 0.3}
    stub = inproc(webhooks={"development": slow.url, "production": closed.url}, webhook_retry=retry)
    slow_ref = stub.api.create("cashin").json()["ref"]
    refused_ref = stub.api.create("cashin", headers={"X-Webhook-Mode": "production"}).json()["ref"]
    for ref, why in ((slow_ref, "no answer within 0.3 s"), (refused_ref, "Connect")):
        (row,) = wait_log(stub.root_url, lambda rows: rows[0]["attempts"] == 1, ref=ref)
        assert row["status"] == "pending" and why in row["last_error"], row
        assert row["next_attempt_at"] is not None


def test_each_mode_goes_to_its_endpoint_and_a_mode_without_one_is_logged(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    development, production = receivers(), receivers()
    stub = inproc(
        webhooks={"development": development.url, "production": production.url},
        webhook_retry=FAST_RETRY,
    )
    stub.api.create("cashin", headers={"X-Webhook-Mode": "production"})
    (arrival,) = production.wait_for(1)
    arrival.verify(secret_of(stub, "production"))
    with pytest.raises(webhook_signature.SignatureError):
        arrival.verify(secret_of(stub, "development"))  # one secret per endpoint
    staging = stub.api.create("cashin", headers={"X-Webhook-Mode": "staging"}).json()["ref"]
    (row,) = deliveries(stub.root_url, ref=staging)
    assert row["status"] == "abandoned" and row["attempts"] == 0
    assert row["last_error"] == "no endpoint for mode 'staging'" and row["url"] is None
    assert development.arrivals == []


def test_without_endpoints_no_delivery_is_recorded(inproc: Callable[..., InProcessStub]) -> None:
    """The throughput promise: no endpoint, no outbox row (one dict check per event)."""
    stub = inproc()
    cashin_confirmed(stub)
    count = stub.call(
        lambda: stub.stub.store.conn.execute("SELECT COUNT(*) FROM webhook_outbox").fetchone()[0]
    )
    assert count == 0
    assert deliveries(stub.root_url) == []


def test_the_log_filters_and_refuses_bad_parameters(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    receiver = receivers()
    stub = inproc(webhooks={"development": receiver.url}, webhook_retry=FAST_RETRY)
    first, second = cashin_confirmed(stub), cashin_confirmed(stub)
    receiver.wait_for(4)
    rows = wait_log(stub.root_url, lambda r: {x["status"] for x in r} == {"delivered"})
    assert len(rows) == 4
    assert {r["ref"] for r in deliveries(stub.root_url, ref=first)} == {first}
    one = rows[-1]["event_id"]
    assert [r["event_id"] for r in deliveries(stub.root_url, event_id=one)] == [one]
    assert deliveries(stub.root_url, status="pending") == []
    assert len(deliveries(stub.root_url, ref=second, status="delivered")) == 2
    log_url = f"{stub.root_url}/_sandbox/webhooks/deliveries"
    for params in ({"status": "lost"}, {"limit": "-1"}, {"colour": "red"}):
        answer = httpx.get(log_url, params=params)
        assert answer.status_code == 400, answer.text
        assert answer.json()["code"] == "validation_error"


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/hook",
        "http://example.com/hook",
        "ftp://127.0.0.1/hook",
        "http:///nohost",
        "http://127.0.0.1:99999/",
    ],
)
def test_only_loopback_endpoints_are_accepted(
    inproc: Callable[..., InProcessStub], url: str
) -> None:
    with pytest.raises(SettingsError, match="webhooks.development"):
        inproc(webhooks={"development": url})


@pytest.mark.parametrize("url", ["http://127.0.0.2:9/x", "http://[::1]:9/", "https://localhost/"])
def test_loopback_forms_are_accepted(url: str) -> None:
    assert check_endpoint_url(url, env={}) == url


def test_a_remote_endpoint_needs_the_operator_to_allow_it() -> None:
    with pytest.raises(ValueError, match=ALLOW_REMOTE_ENV):
        check_endpoint_url("http://192.0.2.1/hook", env={})
    assert check_endpoint_url("http://192.0.2.1/hook", env={ALLOW_REMOTE_ENV: "1"})


def test_without_faults_created_comes_first_even_when_processed_follows_at_once(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    """The rule the out-of-order fault breaks, under auto-resolution with no delay."""
    receiver = receivers(delay_s=0.05)
    stub = inproc(
        webhooks={"development": receiver.url},
        webhook_retry=FAST_RETRY,
        auto_resolve={"default": {"outcome": "success", "delay_s": 0}},
    )
    refs = [stub.api.create("cashin").json()["ref"] for _ in range(5)]
    arrivals = receiver.wait_for(10)
    for ref in refs:
        kinds = [a.record["event_kind"] for a in arrivals if a.record["data"]["ref"] == ref]
        assert kinds == [CREATED, PROCESSED], (ref, kinds)


def test_the_record_is_rendered_by_the_run_s_variants(
    inproc: Callable[..., InProcessStub], receivers: Callable[..., Receiver]
) -> None:
    """Body = the list's record for that stub: a variant's format shows in both."""
    receiver = receivers()
    stub = inproc(
        webhooks={"development": receiver.url},
        webhook_retry=FAST_RETRY,
        variants=["live"],
    )
    ref = stub.api.create("cashin").json()["ref"]
    (arrival,) = receiver.wait_for(1)
    listed = listed_records(stub, ref)[arrival.event_id]
    assert arrival.record == listed
    assert len(json.loads(arrival.body)["created_at"].split(".")[1]) == len("123456789Z")


def test_an_event_and_its_delivery_are_written_together_or_not_at_all(tmp_path: Path) -> None:
    """The outbox's promise: no event without its delivery (and no delivery without its event),
    at creation and at processing. A trigger makes the delivery's insert fail."""

    def counts(store: Store) -> tuple[int, ...]:
        return tuple(
            store.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("transactions", "events", "idempotency", "webhook_outbox")
        )

    async def scenario() -> None:
        store = Store(str(tmp_path / "stub.db"))
        store.put_webhook_endpoint(
            WebhookEndpoint("development", "http://127.0.0.1:9/", "whsec_x"), timefmt.now_us()
        )
        refuse = (
            "CREATE TRIGGER refuse_delivery BEFORE INSERT ON webhook_outbox"
            " BEGIN SELECT RAISE(ABORT, 'delivery refused'); END"
        )
        store.conn.execute(refuse)
        new = NewTransaction(
            ref=uuid4_text(), merchant="M1", app_id="app", kind="CASHIN", amount=100,
            client="0781234567", fee=2.3, created_us=timefmt.now_us(), webhook_mode=None,
            key="key-1", due_us=None, due_status=None,
        )  # fmt: skip
        with pytest.raises(sqlite3.IntegrityError, match="delivery refused"):
            await store.create_transaction(new)
        assert counts(store) == (0, 0, 0, 0)
        assert store.list_events(EventQuery(merchant="M1"))[0] == 0  # the running total too
        store.conn.execute("DROP TRIGGER refuse_delivery")
        await store.create_transaction(new)  # the key was not spent by the failed attempt
        assert counts(store) == (1, 1, 1, 1)
        store.conn.execute(refuse)
        tx = store.find(new.ref, "M1")
        assert tx is not None
        with pytest.raises(sqlite3.IntegrityError, match="delivery refused"):
            store.process(tx.id, "success", timefmt.now_us(), record_event=True)
        assert counts(store) == (1, 1, 1, 1)
        assert store.find(new.ref, "M1").status == "pending"  # type: ignore[union-attr]
        store.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("retry", "declared"),
    [({"base_s": 0.1, "cap_s": 0.4}, 0.1), ({"max_attempts": 3}, None), (None, None)],
)
def test_the_credentials_declare_the_first_retry_wait_only_when_the_settings_chose_it(
    inproc: Callable[..., InProcessStub],
    tmp_path: Path,
    retry: dict[str, Any] | None,
    declared: float | None,
) -> None:
    """WEBHOOK-012 judges retries against RC-40's 1 s unless the target declares its own: the
    stub declares the wait its settings file chose, and never its default (a declaration of the
    default would hide a wrong default from the check)."""
    settings: dict[str, Any] = {"webhooks": {"development": "http://127.0.0.1:9/hooks"}}
    if retry is not None:
        settings["webhook_retry"] = retry
    stub = inproc(**settings)
    config = load_target_config(stub.write_credentials(tmp_path / "target.yaml"), env={})
    assert config.webhooks is not None
    assert config.webhooks.retry_base_s == declared
