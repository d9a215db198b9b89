"""Webhooks in the load reconciliation: every acknowledged create's events delivered."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from loadkit import AUTO_RESOLVE, run_load
from webhookstub import free_port, hooked_stub

from load.webhook_journal import reconcile_webhooks
from paysuite_core.launcher import stop_stub


def write_journal(path: Path, *lines: dict) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")


def arrival(event_id: str, ref: str, verdict: str = "verified", reason: str = "") -> dict:
    return {
        "status": 200 if verdict == "verified" else 401, "verdict": verdict, "reason": reason,
        "code": "" if verdict == "verified" else "invalid_signature", "event_id": event_id,
        "attempt": "1", "mode": "development",
        "event": {"event_id": event_id, "event_kind": "transaction:created", "data": {"ref": ref}},
        "received_at": 0,
    }  # fmt: skip


def test_the_journal_is_read_until_every_listed_event_arrived(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    write_journal(journal, arrival("e1", "r1"))
    naps: list[float] = []

    def nap(seconds: float) -> None:  # the late delivery lands while the reconciliation waits
        naps.append(seconds)
        write_journal(journal, arrival("e2", "r2"))

    result = reconcile_webhooks(
        {"r1": {"e1"}, "r2": {"e2"}}, journal, time_budget_s=5, progress=lambda _: None, sleep=nap
    )
    assert result["webhook_delivered"] == 2 and result["webhook_undelivered"] == 0
    assert len(naps) == 1


def test_an_event_never_delivered_verified_is_lost_with_the_reason(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    write_journal(journal, arrival("e1", "r1", "rejected", "signature mismatch: ..."))
    result = reconcile_webhooks(
        {"r1": {"e1"}, "r2": {"e2"}}, journal, time_budget_s=0, progress=lambda _: None
    )
    assert (result["webhook_events"], result["webhook_undelivered"]) == (2, 2)
    assert result["webhook_rejected_reasons"] == ["signature mismatch: ..."]
    assert {s["ref"] for s in result["webhook_samples"]} == {"r1", "r2"}


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["", "webhook-bad-signature"])
def test_load_run_reconciles_the_webhooks(tmp_path: Path, fault: str) -> None:
    stub = hooked_stub(
        tmp_path / "stub", free_port(), faults=(fault,) if fault else (), stub_config=AUTO_RESOLVE
    )
    try:
        run = run_load(
            tmp_path / "r",
            "--config", str(stub.credentials_path),
            "--duration", "4",
            "--mix", "cashin=3,find=1",
            "--reconcile-timeout", "20",
            "--webhooks",
        )  # fmt: skip
    finally:
        stop_stub(stub)
    recon = run.summary()["reconciliation"]
    assert recon["webhook_events"] >= recon["found"] > 0, recon
    if not fault:
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert recon["webhook_delivered"] == recon["webhook_events"]
        assert recon["passed"] is True
    else:
        assert run.returncode == 3, run.stdout[-3000:] + run.stderr[-3000:]
        assert recon["webhook_undelivered"] == recon["webhook_events"]
        assert any("not delivered by webhook (signature mismatch" in r for r in recon["reasons"])


def test_webhooks_without_a_webhooks_section_is_a_usage_error(tmp_path: Path) -> None:
    run = run_load(tmp_path / "r", "--duration", "1", "--webhooks")
    assert run.returncode == 2
    assert "--webhooks needs a --config with a webhooks section" in run.stderr + run.stdout


@pytest.mark.slow
def test_no_webhook_is_lost_across_a_sigkill_of_the_stub_mid_run(tmp_path: Path) -> None:
    """The stub is SIGKILLed during the load and restarted on the same port and database: every
    acknowledged create's events are still delivered (the requests refused while it was down
    may breach a threshold, exit 1; the reconciliation must pass all the same)."""
    port, stub_port = free_port(), free_port()

    def start() -> Any:
        return hooked_stub(
            tmp_path / "stub", port, stub_config=AUTO_RESOLVE, extra_args=("--port", str(stub_port))
        )

    stub = start()
    restarted: list[Any] = []

    def kill_and_restart() -> None:
        stop_stub(stub, kill=True)
        restarted.append(start())

    timer = threading.Timer(3.0, kill_and_restart)
    timer.start()
    try:
        run = run_load(
            tmp_path / "r",
            "--config", str(stub.credentials_path),
            "--duration", "8",
            "--mix", "cashin=3,find=1",
            "--reconcile-timeout", "30",
            "--webhooks",
        )  # fmt: skip
    finally:
        timer.join()
        for process in (stub, *restarted):
            stop_stub(process)
    assert restarted, "the stub was not restarted"
    recon = run.summary()["reconciliation"]
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    assert recon["passed"] is True, recon["reasons"]
    assert recon["lost"] == 0 and recon["webhook_undelivered"] == 0
    assert recon["webhook_events"] >= recon["found"] > 0
    print(
        f"exit {run.returncode}: {recon['found']} creates found, {recon['webhook_delivered']} of "
        f"{recon['webhook_events']} events delivered across the SIGKILL"
    )
