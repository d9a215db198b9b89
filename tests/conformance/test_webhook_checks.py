"""The WEBHOOK checks: they pass on the conformant stub delivering to paysuite's receiver, fail
on exactly the rule each webhook fault breaks, and skip with the reason without a ``webhooks``
section in the target configuration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conformkit import conform, fast_config
from webhookstub import free_port, hooked_stub

from conformance import catalog
from conformance.suite.webhooks import NO_SECTION
from paysuite_core.launcher import RunningStub, stop_stub
from stub_server.fault_catalog import FAULTS

pytestmark = pytest.mark.slow

WEBHOOK_CHECKS = {c.id for c in catalog.CATALOG if c.group == "WEBHOOK"}
WEBHOOK_FAULTS = sorted(name for name in FAULTS if name.startswith("webhook-"))


def run_webhook_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str], faults=()):  # type: ignore[no-untyped-def]
    port = free_port()
    stub = hooked_stub(tmp_path / "stub", port, faults=faults)
    try:
        config = fast_config(stub, tmp_path, max_wait_s=8)
        return conform(
            capsys, tmp_path / "reports", config=config, profile="reference", strict=True,
            only="WEBHOOK",
        )  # fmt: skip
    finally:
        stop_stub(stub)


def test_the_webhook_checks_pass_on_the_conformant_stub(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_webhook_checks(tmp_path, capsys)
    bad = {c["id"]: c["message"] for c in outcome.report["checks"] if c["outcome"] != "passed"}
    assert outcome.status == 0 and not bad, bad
    assert outcome.ids("passed") == WEBHOOK_CHECKS


@pytest.mark.parametrize("fault", WEBHOOK_FAULTS)
def test_each_webhook_fault_fails_exactly_its_check(
    fault: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_webhook_checks(tmp_path, capsys, faults=(fault,))
    checks = {c["id"]: c for c in outcome.report["checks"]}
    assert outcome.ids("failed") == set(FAULTS[fault].trips), {
        cid: (c["outcome"], c["message"]) for cid, c in checks.items()
    }
    assert outcome.ids("error") == set()
    assert outcome.status == 1
    for check_id in FAULTS[fault].trips:
        check = checks[check_id]
        assert check["message"] and check["expected"] and check["actual"], check
        assert check["evidence"][0]["curl"].startswith("curl "), check
        print(f"{fault}: {check_id} -> {check['message'][:200]}")


def test_without_a_webhooks_section_the_checks_skip_with_the_reason(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = fast_config(make_stub(), tmp_path)
    outcome = conform(capsys, tmp_path / "r", config=config, profile="reference", only="WEBHOOK")
    skipped = {c["id"]: c["message"] for c in outcome.report["checks"]}
    assert skipped == dict.fromkeys(WEBHOOK_CHECKS, NO_SECTION)
