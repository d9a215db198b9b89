"""``paysuite webhooks listen`` end to end: the demo flow of docs/webhooks.md (a stub delivering
to the listener, a cashin confirmed through the sandbox, both events verified), each webhook
fault caught with a clear message, and the usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from webhookstub import HookServer, cashin, free_port, hooked_stub

from paysuite_core.launcher import RunningStub, stop_stub
from paysuite_core.webhooks.signature import sign_live

LISTEN = [sys.executable, "-m", "paysuite", "webhooks", "listen"]


class Listener:
    """``paysuite webhooks listen`` as a subprocess, its output collected."""

    def __init__(self, args: Sequence[str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [*LISTEN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # bounded: the process prints it or dies
        assert "paysuite webhooks listening on http://127.0.0.1:" in line, (
            line + self.process.stderr.read()  # type: ignore[union-attr]
        )

    def finish(self, timeout_s: float = 60) -> tuple[int, str, str]:
        """Wait for the exit, then read the rest of the output through the same text buffers:
        ``communicate`` reads the raw pipe and would lose lines ``readline`` already buffered
        (the output is a few lines, well under a pipe's capacity)."""
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        assert self.process.stdout is not None and self.process.stderr is not None
        return self.process.returncode, self.process.stdout.read(), self.process.stderr.read()


@pytest.fixture
def stubs(tmp_path: Path):  # type: ignore[no-untyped-def]
    started: list[RunningStub] = []

    def make(port: int, faults: Sequence[str] = ()) -> RunningStub:
        stub = hooked_stub(tmp_path / f"stub{len(started)}", port, faults=faults)
        started.append(stub)
        return stub

    yield make
    for stub in started:
        stop_stub(stub)


def checks_of(report_dir: Path) -> dict[str, dict]:
    report = json.loads((report_dir / "conformance.json").read_text(encoding="utf-8"))
    return {c["id"]: c for c in report["checks"]}


@pytest.mark.slow
def test_demo_flow_the_listener_shows_both_events_verified(stubs, tmp_path: Path) -> None:
    port = free_port()
    stub = stubs(port)
    reports = tmp_path / "reports"
    listener = Listener(
        ["--config", str(stub.credentials_path), "--max-events", "2", "--duration", "60",
         "--report-dir", str(reports)],
        tmp_path,
    )  # fmt: skip
    ref = cashin(stub)
    status, out, err = listener.finish()
    assert status == 0, out + err
    verified = [line for line in out.splitlines() if line.startswith("✔ verified")]
    assert len(verified) == 2, out
    assert "transaction:created" in verified[0] and "transaction:processed" in verified[1]
    assert all(f"ref={ref}" in line and "mode development" in line for line in verified)
    assert "VERDICT: PASS" in out
    checks = checks_of(reports)
    assert {cid: c["outcome"] for cid, c in checks.items()} == {
        "WEBHOOK-001": "passed", "WEBHOOK-002": "passed", "WEBHOOK-003": "passed",
        "WEBHOOK-004": "passed", "WEBHOOK-005": "skipped", "WEBHOOK-006": "passed",
    }  # fmt: skip
    assert "2 listed events" in checks["WEBHOOK-001"]["note"]
    assert (reports / "junit.xml").exists() and (reports / "report.html").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "extra", "check_id", "says"),
    [
        ("webhook-bad-signature", [], "WEBHOOK-002", "signature mismatch"),
        ("webhook-duplicate-new-id", [], "WEBHOOK-003", "arrived under event_ids"),
        ("webhook-out-of-order", [], "WEBHOOK-004", "processed before created"),
        ("webhook-no-retry", ["--fail-first"], "WEBHOOK-005", "never came again"),
    ],
)
def test_each_webhook_fault_is_caught_by_the_listener(
    stubs, tmp_path: Path, fault: str, extra: list[str], check_id: str, says: str
) -> None:
    port = free_port()
    stub = stubs(port, faults=(fault,))
    reports = tmp_path / "reports"
    listener = Listener(
        ["--config", str(stub.credentials_path), "--duration", "4", "--settle", "1",
         "--report-dir", str(reports), *extra],
        tmp_path,
    )  # fmt: skip
    cashin(stub)
    status, out, err = listener.finish()
    assert status == 1, out + err
    checks = checks_of(reports)
    failed = {cid for cid, c in checks.items() if c["outcome"] == "failed"}
    assert failed == {check_id}, {cid: c["message"] for cid, c in checks.items()}
    assert says in checks[check_id]["message"], checks[check_id]
    assert f"VERDICT: FAIL — 1 webhook check(s) failed: {check_id}" in out
    if fault == "webhook-bad-signature":
        assert "× rejected" in out and "signature mismatch" in out  # the live line says why


def test_without_a_secret_or_port_the_listener_says_what_is_missing(tmp_path: Path) -> None:
    no_secret = subprocess.run(
        [*LISTEN, "--port", "0"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PATH": "/usr/bin"},
    )  # fmt: skip
    assert no_secret.returncode == 2 and "no signing secret" in no_secret.stderr
    no_port = subprocess.run(
        [*LISTEN, "--secret", "whsec_x"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert no_port.returncode == 2 and "no port" in no_port.stderr
    remote = subprocess.run(
        [*LISTEN, "--secret", "whsec_x", "--port", "0", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert remote.returncode == 2 and "not a loopback address" in remote.stderr
    assert "Traceback" not in no_secret.stderr + no_port.stderr + remote.stderr
    events_alone = subprocess.run(
        [*LISTEN, "--secret", "whsec_x", "--port", "0", "--events", "transaction:processed"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert events_alone.returncode == 2 and "give --forward-to URL" in events_alone.stderr


def test_an_unreachable_target_is_no_verdict_not_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "target.yaml"
    port = free_port()
    config.write_text(
        "base_url: http://127.0.0.1:9/api\n"
        "applications: [{client_id: a, client_secret: s, privilege: read, merchant: M}]\n"
        f"webhooks: {{listen: '127.0.0.1:{port}', secret: whsec_x}}\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [*LISTEN, "--config", str(config), "--duration", "0.3", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "could not read the events list: the target did not answer" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_a_listener_that_heard_nothing_has_no_verdict(tmp_path: Path) -> None:
    started = time.monotonic()
    result = subprocess.run(
        [*LISTEN, "--secret", "whsec_x", "--port", "0", "--duration", "0.5",
         "--report-dir", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no delivery arrived: nothing was judged" in result.stdout
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_a_sigkilled_stub_delivers_every_pending_event_after_its_restart(tmp_path: Path) -> None:
    """Deliveries pending while no receiver listens survive a SIGKILL of the stub: after the
    restart the listener receives every event of every acknowledged cashin, once, verified."""
    port = free_port()
    patient = {"base_s": 0.2, "cap_s": 0.5, "max_attempts": 1000, "timeout_s": 2}
    stub = hooked_stub(tmp_path / "stub", port, retry=patient)
    try:
        refs = [cashin(stub) for _ in range(3)]  # nobody listens: every delivery fails
        time.sleep(0.5)
    finally:
        stop_stub(stub, kill=True)
    reports = tmp_path / "reports"
    restarted = hooked_stub(tmp_path / "stub", port, retry=patient)  # same database
    try:
        listener = Listener(
            ["--config", str(restarted.credentials_path), "--max-events", "6", "--duration", "60",
             "--report-dir", str(reports)],
            tmp_path,
        )  # fmt: skip
        status, out, err = listener.finish()
    finally:
        stop_stub(restarted)
    assert status == 0, out + err
    verified = [line for line in out.splitlines() if line.startswith("✔ verified")]
    assert len(verified) == 6, out
    for ref in refs:
        assert sum(f"ref={ref}" in line for line in verified) == 2, out
    checks = checks_of(reports)
    assert checks["WEBHOOK-001"]["outcome"] == "passed", checks["WEBHOOK-001"]
    assert "6 listed events" in checks["WEBHOOK-001"]["note"]


def Handler(answer: Callable[[str, int], int], delay_s: float = 0.0) -> HookServer:
    """A developer's own webhook handler behind ``--forward-to``: ``answer(event_id, n)`` is
    the status of the n-th (1, 2, ...) delivery of an event."""

    def reply(headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        event_id = json.loads(body)["event_id"]
        with hook.lock:
            n = sum(json.loads(b)["event_id"] == event_id for _, b in hook.got)
        return answer(event_id, n), b""

    hook = HookServer(reply, "/shop/webhook", delay_s)
    return hook


def forwarded_rows(report_dir: Path) -> list[dict[str, Any]]:
    report = json.loads((report_dir / "conformance.json").read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = report["forwarded"]
    return rows


@pytest.mark.slow
def test_forward_to_shows_a_handler_failing_its_first_attempt_and_the_retry(
    stubs, tmp_path: Path
) -> None:
    port = free_port()
    stub = stubs(port)
    handler = Handler(lambda event_id, n: 500 if n == 1 else 200)
    reports = tmp_path / "reports"
    try:
        listener = Listener(
            ["--config", str(stub.credentials_path), "--forward-to", handler.url,
             "--max-events", "2", "--duration", "60", "--report-dir", str(reports)],
            tmp_path,
        )  # fmt: skip
        ref = cashin(stub)
        status, out, err = listener.finish()
    finally:
        handler.close()
    print(out)
    assert status == 0, out + err
    assert f"forwarding verified deliveries to {handler.url}" in out
    rows = forwarded_rows(reports)
    assert [r["kind"] for r in rows] == ["transaction:created", "transaction:processed"]
    for row in rows:
        assert row["ref"] == ref and row["handler_acknowledged"]
        first, second = row["deliveries"][:2]
        assert (first["verdict"], first["handler_status"], first["answered_sender"]) == (
            "verified", 500, 500)  # fmt: skip
        assert (second["verdict"], second["handler_status"]) == ("duplicate", 200)
        assert second["attempt"] == "2"  # the stub's retry, told by the handler's 500
    assert "#1 verified: handler 500 in" in out and "#2 duplicate: handler 200 in" in out
    secret = stub.config().webhooks.secret  # type: ignore[union-attr]
    for headers, body in handler.got:  # byte for byte, headers included: still verifies
        assert headers["X-Paypack-Signature"] == sign_live(secret, body)
    assert len(handler.got) == 4


@pytest.mark.slow
def test_forward_to_a_handler_that_fails_for_ever_is_bounded_and_reported(
    stubs, tmp_path: Path
) -> None:
    port = free_port()
    stub = stubs(port)
    handler = Handler(lambda event_id, n: 500, delay_s=0.2)  # slow, and never accepts
    reports = tmp_path / "reports"
    started = time.monotonic()
    try:
        listener = Listener(
            ["--config", str(stub.credentials_path), "--forward-to", handler.url,
             "--events", "transaction:processed", "--max-events", "2", "--duration", "4",
             "--settle", "0.5", "--report-dir", str(reports)],
            tmp_path,
        )  # fmt: skip
        cashin(stub)
        status, out, err = listener.finish()
    finally:
        handler.close()
    assert time.monotonic() - started < 30
    assert status == 0, out + err  # the target retried as it should: the handler is reported
    created, processed = forwarded_rows(reports)
    assert not any(d["forwarded"] for d in created["deliveries"])  # --events
    assert "not forwarded (--events)" in out
    attempts = processed["deliveries"]
    assert len(attempts) >= 3 and not processed["handler_acknowledged"]
    assert {d["handler_status"] for d in attempts} == {500}
    assert all(d["handler_ms"] >= 200 for d in attempts)  # the slow handler's time recorded
    assert all(json.loads(b)["event_kind"] == "transaction:processed" for _, b in handler.got)


@pytest.mark.slow
def test_the_listener_follows_a_stub_restarted_on_a_new_port_and_blames_no_one_for_a_forgery(
    tmp_path: Path,
) -> None:
    port = free_port()
    workdir = tmp_path / "stub"
    reports = tmp_path / "reports"
    first = hooked_stub(workdir, port)
    listener = Listener(
        ["--config", str(first.credentials_path), "--max-events", "2", "--duration", "60",
         "--report-dir", str(reports)],
        tmp_path,
    )  # fmt: skip
    stop_stub(first)
    restarted = hooked_stub(workdir, port)  # the same database, another API port
    try:
        assert restarted.base_url != first.base_url
        forged = json.dumps(
            {"event_id": "forged-1", "event_kind": "transaction:processed", "created_at": "x",
             "data": {"ref": "not-a-real-ref", "status": "successful"}}
        ).encode()  # fmt: skip
        answer = httpx.post(
            f"http://127.0.0.1:{port}/hooks", content=forged,
            headers={"X-Paypack-Signature": "bm90IGEgc2lnbmF0dXJl"}, timeout=5,
        )  # fmt: skip
        assert answer.status_code == 401 and answer.json()["code"] == "invalid_signature"
        ref = cashin(restarted)
        status, out, err = listener.finish()
    finally:
        stop_stub(restarted)
    assert status == 0, out + err
    assert f"(configuration re-read: the target is now {restarted.base_url})" in out
    assert "× rejected" in out and "finding: 1 forged deliveries" in out
    checks = checks_of(reports)
    assert checks["WEBHOOK-001"]["outcome"] == "passed", checks["WEBHOOK-001"]
    assert checks["WEBHOOK-002"]["outcome"] == "passed", checks["WEBHOOK-002"]
    assert "1 forged ones rejected, not the target's" in checks["WEBHOOK-002"]["note"]
    assert sum(f"ref={ref}" in line for line in out.splitlines() if "✔ verified" in line) == 2


@pytest.mark.slow
def test_trigger_makes_the_deliveries_and_resend_repeats_one(stubs, tmp_path: Path) -> None:
    port = free_port()
    stub = stubs(port)
    creds = str(stub.credentials_path)
    listener = Listener(
        ["--config", creds, "--duration", "10", "--settle", "1",
         "--report-dir", str(tmp_path / "reports")],
        tmp_path,
    )  # fmt: skip
    command = [sys.executable, "-m", "paysuite", "webhooks"]
    trigger = subprocess.run(
        [*command, "trigger", "--config", creds], capture_output=True, text=True, timeout=60
    )
    assert trigger.returncode == 0, trigger.stdout + trigger.stderr
    ref = trigger.stdout.split()[2]
    assert "created cashin" in trigger.stdout and f"confirmed {ref}: status success" in (
        trigger.stdout
    )
    log_url = f"{stub.root_url}/_sandbox/webhooks/deliveries"
    deadline = time.monotonic() + 15
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        rows = httpx.get(log_url, params={"ref": ref}, timeout=5).json()["deliveries"]
        if len(rows) == 2 and all(r["status"] == "delivered" for r in rows):
            break
        time.sleep(0.1)
    processed = next(r for r in rows if r["event_kind"] == "transaction:processed")
    resend = subprocess.run(
        [*command, "resend", processed["event_id"], "--config", creds],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert resend.returncode == 0, resend.stderr
    assert f"resending transaction:processed {processed['event_id']}" in resend.stdout
    unknown = subprocess.run(
        [*command, "resend", "no-such-event", "--config", creds],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert unknown.returncode == 1 and "404" in unknown.stderr
    status, out, err = listener.finish()
    assert status == 0, out + err
    summary = next(line for line in out.splitlines() if "events received" in line)
    assert summary.startswith("2 events received: 2 verified"), out
    assert f"= duplicate transaction:processed {processed['event_id']}" in out


@pytest.mark.slow
def test_a_target_signing_only_the_live_way_is_judged_on_it(tmp_path: Path) -> None:
    """No timestamp: WEBHOOK-002 holds on X-Paypack-Signature, WEBHOOK-006 is a warning (the
    live service's own format), a failure with --strict."""
    port = free_port()
    stub = hooked_stub(tmp_path / "stub", port, stub_config={"webhook_signatures": ["live"]})
    reports = tmp_path / "reports"
    try:
        listener = Listener(
            ["--config", str(stub.credentials_path), "--max-events", "2", "--duration", "60",
             "--report-dir", str(reports)],
            tmp_path,
        )  # fmt: skip
        cashin(stub)
        status, out, err = listener.finish()
    finally:
        stop_stub(stub)
    assert status == 0, out + err
    assert out.count("sig live ->") == 2 and "signatures: live x2" in out
    checks = checks_of(reports)
    assert checks["WEBHOOK-002"]["outcome"] == "passed"
    assert checks["WEBHOOK-006"]["outcome"] == "failed"
    assert "can be replayed" in checks["WEBHOOK-006"]["message"]
    assert "VERDICT: PASS" in out and "1 warning" in out


@pytest.mark.slow
def test_a_new_listener_judges_only_what_it_could_have_seen(stubs, tmp_path: Path) -> None:
    """A transaction delivered to an earlier listener, then its created event resent to a new
    one: the new listener saw the resend and nothing else, and its processed event (delivered
    before it started) is not "never arrived"."""
    stub = stubs(free_port())
    creds = str(stub.credentials_path)
    first = Listener(
        ["--config", creds, "--max-events", "2", "--duration", "60",
         "--report-dir", str(tmp_path / "first")],
        tmp_path,
    )  # fmt: skip
    command = [sys.executable, "-m", "paysuite", "webhooks"]
    trigger = subprocess.run(
        [*command, "trigger", "--config", creds], capture_output=True, text=True, timeout=60
    )
    assert trigger.returncode == 0, trigger.stdout + trigger.stderr
    status, out, err = first.finish()
    assert status == 0, out + err
    created = checks_of(tmp_path / "first")  # the first listener's list shows both
    assert created["WEBHOOK-001"]["outcome"] == "passed"
    ref = trigger.stdout.split()[2]
    rows = httpx.get(
        f"{stub.root_url}/_sandbox/webhooks/deliveries", params={"ref": ref}, timeout=5
    ).json()["deliveries"]
    event_id = next(r["event_id"] for r in rows if r["event_kind"] == "transaction:created")
    time.sleep(2.5)  # past the listener's clock slack: both events are older than its start
    second = Listener(
        ["--config", creds, "--duration", "4", "--settle", "1",
         "--report-dir", str(tmp_path / "second")],
        tmp_path,
    )  # fmt: skip
    resend = subprocess.run(
        [*command, "resend", event_id, "--config", creds],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert resend.returncode == 0, resend.stderr
    status, out, err = second.finish()
    assert status == 0, out + err
    assert "never arrived" not in out
    checks = checks_of(tmp_path / "second")
    assert checks["WEBHOOK-001"]["outcome"] == "passed", checks["WEBHOOK-001"]
    assert "1 listed event" in checks["WEBHOOK-001"]["note"], checks["WEBHOOK-001"]
    assert "before the listener started" in checks["WEBHOOK-001"]["note"]
