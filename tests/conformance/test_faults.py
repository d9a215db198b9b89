"""The suite has teeth: against each faulty stub it fails, on the check the fault breaks.

Only the group a fault targets runs (``--only``), to keep the self-tests within CI's budget.
``drop-acknowledged`` and ``early-expiry`` are the load suite's: its reconciliation catches the
first, its token renewal is proven against the second (tokens that die before their declared
expiry break no rule of the document, whose lifetimes are "typical").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conformkit import conform, fast_config

from stub_server.faults import FAULTS

pytestmark = pytest.mark.slow

#: fault -> (--only selection, check IDs that must fail, level of those checks)
FAULT_TABLE: dict[str, tuple[str, set[str], str]] = {
    "idempotency-ignored": ("IDEM", {"IDEM-001", "IDEM-002"}, "MUST"),
    "idempotency-racy": ("IDEM-005", {"IDEM-005"}, "MUST"),
    "long-keys-accepted": ("IDEM-003", {"IDEM-003"}, "MUST"),
    "query-key-ignored": ("IDEM-004", {"IDEM-004"}, "SHOULD"),
    "tokens-never-expire": ("AUTH-008", {"AUTH-008"}, "MUST"),
    "refresh-as-access": ("AUTH-010", {"AUTH-010"}, "MUST"),
    "signature-not-verified": ("AUTH-007", {"AUTH-007"}, "MUST"),
    "wrong-kind": ("TXN", {"TXN-002"}, "MUST"),
    "refs-reused": ("FMT-001", {"FMT-001"}, "MUST"),
    "status-stuck-pending": ("LIFE-002,LIFE-003", {"LIFE-002", "LIFE-003"}, "MUST"),
    "cancel-reads-success": ("LIFE-003", {"LIFE-003"}, "MUST"),
    "processed-event-missing": ("LIFE-002", {"LIFE-002"}, "MUST"),
    "filter-ignored": ("EVT-006", {"EVT-006"}, "MUST"),
    "cross-merchant-visible": ("ISO", {"ISO-001", "ISO-002"}, "MUST"),
    "privileges-ignored": ("PRIV", {"PRIV-001", "PRIV-003", "PRIV-004"}, "MUST"),
    "server-error-on-malformed": ("ERR-001", {"ERR-001"}, "SHOULD"),
    "timestamp-format": ("FMT-003,FMT-004", {"FMT-003", "FMT-004"}, "MUST"),
}
NOT_OURS = {"drop-acknowledged", "early-expiry"}


def test_table_covers_every_fault() -> None:
    assert set(FAULT_TABLE) | NOT_OURS == set(FAULTS)


@pytest.mark.parametrize("fault", sorted(FAULT_TABLE))
def test_fault_is_caught(
    fault: str, make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only, expected, level = FAULT_TABLE[fault]
    extra = ("--access-ttl", "2") if fault == "tokens-never-expire" else ()
    stub = make_stub(faults=(fault,), extra_args=extra)
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "strict", config=config, only=only, strict=True)
    failed = outcome.ids("failed")
    assert expected <= failed, (fault, failed, outcome.report["checks"])
    assert outcome.status == 1
    evidence = [c for c in outcome.report["checks"] if c["id"] in expected]
    assert all(c["evidence"] and c["evidence"][0]["curl"] for c in evidence if c["id"] != "x")
    if level == "SHOULD":
        lenient = conform(capsys, tmp_path / "lenient", config=config, only=only)
        assert expected <= lenient.ids("failed")
        assert lenient.status == 0, "a SHOULD failure must not fail the run without --strict"


def test_plain_pytest_agrees_with_the_verdict(make_stub, tmp_path: Path) -> None:
    """pytest's exit status is the suite's: a SHOULD failure passes unless strict."""
    stub = make_stub(faults=("query-key-ignored",))
    config = fast_config(stub, tmp_path)
    base = [sys.executable, "-m", "pytest", "--pyargs", "conformance.suite", "-q",
            "-p", "no:cacheprovider", "--config", str(config), "--only", "IDEM-004",
            "--report-dir", str(tmp_path / "reports")]  # fmt: skip
    lenient = subprocess.run(base, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert lenient.returncode == 0, lenient.stdout[-3000:]
    assert "0 passed, 1 failed, 0 skipped" in lenient.stdout
    strict = subprocess.run(
        [*base, "--conformance-strict"], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert strict.returncode == 1, strict.stdout[-3000:]


def test_property_tests_have_teeth(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """schemathesis's response-schema check notices timestamps without zone or fraction."""
    stub = make_stub(faults=("timestamp-format",))
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "reports", config=config, only="PROP-004,PROP-006")
    assert outcome.ids("failed") == {"PROP-004"}, outcome.report["checks"]
    assert outcome.ids("passed") == {"PROP-006"}
    assert outcome.status == 1
    (failed,) = [c for c in outcome.report["checks"] if c["id"] == "PROP-004"]
    assert failed["evidence"] and all(
        item["curl"].startswith("curl ") for item in failed["evidence"]
    )
