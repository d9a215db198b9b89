"""Webhook delivery across the stub's process life (RC-40): a SIGKILL with deliveries pending
loses none, a restart resumes them, the config file's secret is shown once and written into the
credentials file, and ``paysuite stub webhooks add|list`` manage endpoints of a database."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from stubkit import Api
from webhookkit import Receiver, deliveries, wait_log

from paysuite_core.launcher import RunningStub, start_stub, stop_stub
from paysuite_core.target_config import Application, parse_target_config


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver(answer=lambda n: 503 if made.failing else 200)  # type: ignore[attr-defined]
    made.failing = False  # type: ignore[attr-defined]
    yield made
    made.close()


def credentials(stub: RunningStub) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(stub.credentials_path.read_text("utf-8"))
    return data


def applications(stub: RunningStub) -> tuple[Application, ...]:
    """The credentials file's applications, read around its ``webhooks`` section (whose
    reading is the receiving side's part of paysuite_core.target_config)."""
    data = credentials(stub)
    data.pop("webhooks", None)
    return parse_target_config(data, env={}).applications


def stub_config(url: str) -> dict[str, Any]:
    return {
        "webhooks": {"development": url},
        "webhook_retry": {"base_s": 0.2, "cap_s": 0.5, "max_attempts": 1000, "timeout_s": 2},
    }


def listed_event_ids(api: Api, refs: list[str]) -> set[str]:
    ids = set()
    for ref in refs:
        ids |= {r["event_id"] for r in api.events(ref=ref).json()["transactions"]}
    return ids


@pytest.mark.parametrize("tried", [True, False], ids=["after-failed-attempts", "at-once"])
def test_a_sigkill_with_deliveries_pending_loses_none(
    tmp_path: Path, receiver: Receiver, tried: bool
) -> None:
    """Killed once every delivery has failed at least once, or right after the last creation
    was acknowledged (deliveries committed with their events, maybe never tried)."""
    receiver.failing = True  # type: ignore[attr-defined]
    stub = start_stub(tmp_path, stub_config=stub_config(receiver.url))
    try:
        api = Api(stub.base_url, stub.root_url, applications(stub))
        refs = [api.create("cashin").json()["ref"] for _ in range(12)]
        for ref in refs[:6]:
            assert api.sandbox(ref, "confirm").status_code == 200
        expected = listed_event_ids(api, refs)
        assert len(expected) == 18
        api.close()
        if tried:  # every transaction's delivery was tried and failed: pending when it dies
            # (its first: after 5 failures in a row the endpoint's circuit breaker holds the
            # rest back, and a processed delivery waits behind its created one)
            wait_log(
                stub.root_url,
                lambda rows: (
                    len(rows) == 18
                    and all(r["attempts"] >= 1 for r in rows if r["event_kind"].endswith("created"))
                ),
            )
    finally:
        stop_stub(stub, kill=True)
    receiver.failing = False  # type: ignore[attr-defined]
    before_restart = len(receiver.arrivals)
    again = start_stub(tmp_path, stub_config=stub_config(receiver.url))
    try:
        rows = wait_log(
            again.root_url, lambda r: all(x["status"] == "delivered" for x in r), timeout_s=30
        )
        assert {r["event_id"] for r in rows} == expected
        assert expected <= {a.event_id for a in receiver.arrivals}
        resumed = receiver.arrivals[before_restart:]
        for ref in refs[:6]:  # both pending at the restart: still sent in event order
            kinds = [a.record["event_kind"] for a in resumed if a.record["data"]["ref"] == ref]
            assert kinds == ["transaction:created", "transaction:processed"], (ref, kinds)
        secret = credentials(again)["webhooks"]["secret"]
        for arrival in receiver.arrivals:
            arrival.verify(secret)
    finally:
        stop_stub(again)


def test_a_graceful_restart_resumes_retries(tmp_path: Path, receiver: Receiver) -> None:
    receiver.failing = True  # type: ignore[attr-defined]
    stub = start_stub(tmp_path, stub_config=stub_config(receiver.url))
    try:
        api = Api(stub.base_url, stub.root_url, applications(stub))
        ref = api.create("cashin").json()["ref"]
        api.close()
        wait_log(stub.root_url, lambda rows: rows[0]["attempts"] >= 2, ref=ref)
    finally:
        assert stop_stub(stub) == 0
    receiver.failing = False  # type: ignore[attr-defined]
    again = start_stub(tmp_path, stub_config=stub_config(receiver.url))
    try:
        (row,) = wait_log(again.root_url, lambda rows: rows[0]["status"] == "delivered", ref=ref)
        assert row["attempts"] >= 3  # the count went on from before the restart
    finally:
        stop_stub(again)


def test_a_config_endpoint_s_secret_is_shown_once_and_kept_in_the_credentials(
    tmp_path: Path, receiver: Receiver
) -> None:
    stub = start_stub(tmp_path, stub_config=stub_config(receiver.url))
    try:
        section = credentials(stub)["webhooks"]
        assert section["url"] == receiver.url and section["mode"] == "development"
        assert section["listen"] == f"127.0.0.1:{receiver.port}"
        assert section["secret"].startswith("whsec_")
        assert f"secret: {section['secret']}" in stub.stderr_text()
        api = Api(stub.base_url, stub.root_url, applications(stub))
        api.create("cashin")
        api.close()
        (arrival,) = receiver.wait_for(1)
        arrival.verify(section["secret"])
    finally:
        stop_stub(stub)
    again = start_stub(tmp_path, stub_config=stub_config(receiver.url))
    try:
        assert "whsec_" not in again.stderr_text()  # shown once, at the start that made it
        assert credentials(again)["webhooks"]["secret"] == section["secret"]
        assert len(applications(again)) == len(applications(stub))  # the apps were kept
    finally:
        stop_stub(again)


def paysuite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paysuite", "stub", "webhooks", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_webhooks_add_and_list(tmp_path: Path, receiver: Receiver) -> None:
    stub = start_stub(tmp_path)
    try:
        db = str(stub.db_path)
        added = paysuite("add", "--db", db, "--mode", "development", "--url", receiver.url)
        assert added.returncode == 0, added.stderr
        (secret,) = [
            line.removeprefix("secret: ")
            for line in added.stdout.splitlines()
            if line.startswith("secret: whsec_")
        ]
        assert f"HEAD {receiver.url}: answered" in added.stdout
        assert receiver.heads >= 1
        listed = paysuite("list", "--db", db)
        assert listed.returncode == 0 and listed.stdout == f"development\t{receiver.url}\n"
        assert "whsec_" not in listed.stdout + listed.stderr
        # the running stub picks the endpoint up without a restart
        deadline = time.monotonic() + 10
        api = Api(stub.base_url, stub.root_url, applications(stub))
        while not receiver.arrivals and time.monotonic() < deadline:
            api.create("cashin")
            time.sleep(0.5)
        api.close()
        receiver.wait_for(1)[0].verify(secret)
        assert deliveries(stub.root_url)
    finally:
        stop_stub(stub)


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (("--mode", "development", "--url", "http://198.51.100.7/hook"), 2, "not a loopback"),
        (("--mode", "", "--url", "http://127.0.0.1:9/"), 2, "a mode is 1..64 characters"),
    ],
)
def test_webhooks_add_refuses_what_it_cannot_use(
    tmp_path: Path, args: tuple[str, ...], status: int, message: str
) -> None:
    stub = start_stub(tmp_path)
    stop_stub(stub)
    refused = paysuite("add", "--db", str(stub.db_path), *args)
    assert refused.returncode == status and message in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


def test_webhooks_add_reports_a_url_that_does_not_answer_a_head(tmp_path: Path) -> None:
    stub = start_stub(tmp_path)
    stop_stub(stub)
    added = paysuite("add", "--db", str(stub.db_path), "--mode", "production", "--url",
                     "http://127.0.0.1:9/hook")  # fmt: skip
    assert added.returncode == 0, added.stderr  # added all the same: it may start later
    assert "warning: http://127.0.0.1:9/hook does not answer a HEAD" in added.stderr


def test_webhooks_commands_need_an_existing_database(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.db")
    for args in (("list", "--db", missing), ("add", "--db", missing, "--mode", "m", "--url",
                                             "http://127.0.0.1:9/")):  # fmt: skip
        answer = paysuite(*args)
        assert answer.returncode == 1 and "no database at" in answer.stderr
    assert not Path(missing).exists()


def test_listening_on_comes_first_and_an_undecodable_body_logs_no_unhandled_exception(
    tmp_path: Path,
) -> None:
    """One terminal (stdout and stderr together): "listening on" is the first line even with a
    webhook endpoint whose secret is shown at this start (docs/stub.md), and a body claiming a
    gzip coding it does not have (ERR-004 sends one on purpose) is answered 400 without an
    "Unhandled exception" line: the client's doing, logged at debug level."""
    import httpx

    config = tmp_path / "stub.yaml"
    config.write_text(yaml.safe_dump(stub_config("http://127.0.0.1:9/hook")), "utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "paysuite", "stub", "--port", "0", "--db", str(tmp_path / "s.db"),
         "--config", str(config), "--credentials", str(tmp_path / "creds.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("paysuite stub listening on http://127.0.0.1:"), first
        root = first.split()[-1]
        for _ in range(3):
            answer = httpx.post(
                f"{root}/api/transactions/cashin",
                content=b'{"amount": 100, "number": "0780000000"}',
                headers={"Content-Type": "application/json", "Content-Encoding": "gzip",
                         "Connection": "close"},
                timeout=10,
            )  # fmt: skip
            assert answer.status_code in (400, 401), answer.text
        time.sleep(0.5)  # the lingering connection's second read, where aiohttp logged it
    finally:
        process.terminate()
        process.wait(timeout=30)
    # read through the same text stream as the first line: communicate() would read the pipe
    # beneath it and lose what readline() had already buffered (the lines after the first)
    rest = process.stdout.read()
    assert "webhook endpoint development http://127.0.0.1:9/hook" in rest, rest
    assert "Unhandled exception" not in rest and "RequestPayloadError" not in rest, rest
