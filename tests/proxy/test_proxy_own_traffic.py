"""The proxy's confirmations judge only their own traffic.

A key reused through the proxy and rejected is confirmed by reproducing it on a number of the
judge's own, never by counting creations near the reuse on the client's number: other
applications of the same merchant pay that customer too. Proven both ways: no false alarm on the
correct stub while another application pays the same amount to the same number around the
reuse (live, and in a replay right after another), and IDEM-002 against a stub that executes a
cashin key reused on a cashout (answered 409). A configuration that may not create says
"unconfirmed", a note, never a failure.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml
from proxykit import Client, ProxyRun, config_file, start_proxy, writer

from paysuite.cli import main
from paysuite_core.launcher import RunningStub
from paysuite_core.target_config import Application

pytestmark = pytest.mark.slow

NUMBER = "0781234567"
AMOUNT = 100


def _session(stub: RunningStub, tmp_path: Path, name: str, config: Path | None = None):
    run = start_proxy(stub.root_url, tmp_path / name, config=config or stub.credentials_path)
    return run, Client(run.base_url, writer(stub), run.url)


def _same_merchant_cashin_app(stub: RunningStub) -> Application:
    """Another application of the writer's merchant: a till paying outside the proxy."""
    merchant = writer(stub).merchant
    return next(
        app
        for app in stub.config().applications
        if app.merchant == merchant and app.privilege == "cashin"
    )


class OutsidePayments:
    """Another application pays ``AMOUNT`` to ``NUMBER`` every 0.1 s, straight to the target."""

    def __init__(self, stub: RunningStub) -> None:
        self.client = Client(stub.config().base_url, _same_merchant_cashin_app(stub), stub.root_url)
        self.stop = threading.Event()
        self.statuses: list[int] = []
        self.thread = threading.Thread(target=self._pay, daemon=True)

    def _pay(self) -> None:
        while not self.stop.is_set():
            self.statuses.append(self.client.create(number=NUMBER, amount=AMOUNT).status_code)
            time.sleep(0.1)

    def __enter__(self) -> OutsidePayments:
        self.thread.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.5)
        self.stop.set()
        self.thread.join(timeout=30)
        self.client.close()


def _note(run: ProxyRun, check_id: str) -> str:
    return str(run.check(check_id).get("note") or "")


def test_a_rejected_reuse_amid_another_apps_payments_to_that_number_passes(
    make_stub, tmp_path: Path
) -> None:
    """The issue's case: the stub answers 409 and executes nothing, while a cashin application
    of the same merchant pays the same amount to the same number outside the proxy, before,
    during and after the reuse. The old window count made that `× IDEM-001 ... answered 409,
    yet 9 transactions were created`; the reproduction on the judge's own number sees one."""
    stub = make_stub()
    run, client = _session(stub, tmp_path, "shared")
    key = uuid.uuid4().hex
    with OutsidePayments(stub) as outside:
        assert client.create(key=key, number=NUMBER, amount=AMOUNT).status_code == 200
        assert client.create(key=key, number=NUMBER, amount=AMOUNT).status_code == 409
    client.close()
    assert len(outside.statuses) >= 5 and set(outside.statuses) == {200}, outside.statuses
    assert run.stop() == 0, run.output
    assert "× IDEM" not in run.output
    assert run.check("IDEM-001")["outcome"] == "passed"
    assert "confirmed by reproduction" in _note(run, "IDEM-001"), run.check("IDEM-001")
    assert NUMBER not in _note(run, "IDEM-001")  # counted on the judge's own number


def test_a_cashin_key_reused_on_cashout_and_rejected_passes(make_stub, tmp_path: Path) -> None:
    stub = make_stub()
    run, client = _session(stub, tmp_path, "clean")
    key = uuid.uuid4().hex
    assert client.create("cashin", key=key).status_code == 200
    assert client.create("cashout", key=key).status_code == 409
    client.close()
    assert run.stop() == 0, run.output
    assert run.check("IDEM-002")["outcome"] == "passed"
    assert "confirmed by reproduction" in _note(run, "IDEM-002"), run.check("IDEM-002")


def test_a_cashin_key_reused_on_cashout_executed_anyway_is_idem_002(
    make_stub, tmp_path: Path
) -> None:
    """409 on the cashout, but the cashout was executed: the reproduction counts each request's
    own kind and amount (the old count looked for the first request's CASHIN only)."""
    stub = make_stub(faults=("key-reuse-other-kind-executes",))
    run, client = _session(stub, tmp_path, "fault")
    key = uuid.uuid4().hex
    assert client.create("cashin", key=key).status_code == 200
    assert client.create("cashout", key=key).status_code == 409
    client.close()
    assert run.stop() == 1, run.output
    assert run.failed() == {"IDEM-002"}, run.output
    check = run.check("IDEM-002")
    assert "the cashout reuse answered 409, yet 2 transactions were created" in check["message"]
    assert check["expected"] and check["actual"] and "2 transactions" in check["actual"]
    urls = [item["request"]["url"] for item in check["evidence"]]
    # the two proxied creations, then the judge's own reproduction and its events list
    assert urls[0].endswith("/transactions/cashin") and urls[1].endswith("/transactions/cashout")
    assert any(u.endswith("/transactions/cashout") for u in urls[2:]), urls
    assert any("/events/transactions" in u for u in urls[2:]), urls
    assert "× IDEM-002" in run.output


def test_a_read_only_configuration_leaves_a_rejected_reuse_unconfirmed(
    make_stub, tmp_path: Path
) -> None:
    """No application may create: the reuse cannot be reproduced, and a passive count on the
    client's number is no proof either way. The rule says so; it neither fails nor claims."""
    stub = make_stub(faults=("idempotency-rejected-but-executed",))
    data = yaml.safe_load(stub.credentials_path.read_text(encoding="utf-8"))
    readers = [a for a in data["applications"] if a["privilege"] == "read"]
    assert readers
    config = config_file(stub, tmp_path, applications=readers)
    run, client = _session(stub, tmp_path, "read-only", config=config)
    key = uuid.uuid4().hex
    assert client.create(key=key).status_code == 200
    assert client.create(key=key).status_code == 409
    client.close()
    assert run.stop() == 0, run.output
    check = run.check("IDEM-001")
    assert check["outcome"] == "passed", check
    note = _note(run, "IDEM-001")
    assert "unconfirmed:" in note and "read-only credentials" in note, check


def _reuse_on_the_shared_number(client: Client) -> None:
    key = uuid.uuid4().hex
    made = client.create(key=key, number=NUMBER, amount=AMOUNT)
    client.create(key=key, number=NUMBER, amount=AMOUNT)
    client.find(made.json()["ref"])


def _replay(har: Path, stub: RunningStub, report_dir: Path) -> int:
    return main(
        ["replay", str(har), "--target", stub.root_url, "--config", str(stub.credentials_path),
         "--report-dir", str(report_dir)]
    )  # fmt: skip


def test_a_replay_right_after_another_passes(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two recorded sessions on one number and amount, replayed back to back: the second's
    rejected reuse comes within a second of the first replay's creations on that number."""
    stub = make_stub()
    hars = []
    for name in ("one", "two"):
        run, client = _session(stub, tmp_path, name)
        _reuse_on_the_shared_number(client)
        client.close()
        assert run.stop() == 0, run.output
        hars.append(run.report_dir / "session.har")
    capsys.readouterr()
    assert _replay(hars[0], stub, tmp_path / "replay-one") == 0
    assert _replay(hars[1], stub, tmp_path / "replay-two") == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "× IDEM" not in out
    report = json.loads((tmp_path / "replay-two" / "conformance.json").read_text("utf-8"))
    idem = next(c for c in report["checks"] if c["id"] == "IDEM-001")
    assert idem["outcome"] == "passed" and "confirmed by reproduction" in idem["note"], idem
