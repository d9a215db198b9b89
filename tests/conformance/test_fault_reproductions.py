"""Every stub fault's printed reproduction, run in a fresh shell, shows the defect.

For each fault of ``stub_server.fault_catalog.FAULTS``: ``paysuite conform`` against a stub with
it, ``--only`` the first check it fails; then the reproduction the terminal printed under that
check (``Reproduce: ...`` and its indented lines) runs in a fresh ``bash`` whose environment is
cleared but ``PATH`` and ``HOME``, after the export lines printed below the failures, exactly as
printed. Its output (curl's ``-i``: status lines, headers, bodies) must show the defect: what
that means for each fault is one line of ``SHOWS``, and a fault without a line fails the test.

Slow (one stub and one conform run per fault; the expiry fault waits out a short-lived token).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conformkit import conform, fast_config

from paysuite_core.launcher import RunningStub
from stub_server.fault_catalog import FAULTS

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Shows:
    """The first check a fault fails, and what its reproduction's output shows: ``pattern``
    found (a status line, a field's value, a thing seen twice), ``absent`` not found. ``why``
    instead of a check: the fault is shown some other way (said so, never silently passed)."""

    check: str = ""
    pattern: str = ""
    absent: str = ""
    why: str = ""
    concurrency: str | None = None


_OK = r"HTTP/[0-9.]+ 20[01]"
_TWICE_OK = rf"(?s){_OK}.*{_OK}"
_CREATED_TWICE = r"transaction:created.*transaction:created"
_WEBHOOK = "a webhook fault shows at a receiver (test_webhook_checks.py), not in a curl's answer"

SHOWS: dict[str, Shows] = {
    "idempotency-ignored": Shows("IDEM-001", _TWICE_OK),
    "idempotency-rejected-but-executed": Shows("IDEM-001", rf"(?s) 409 .*{_CREATED_TWICE}"),
    "key-reuse-other-kind-executes": Shows("IDEM-002", rf"(?s) 409 .*{_CREATED_TWICE}"),
    "idempotency-racy": Shows("IDEM-005", _TWICE_OK),
    "long-keys-accepted": Shows("IDEM-003", _OK),
    "query-key-ignored": Shows("IDEM-004", _TWICE_OK),
    "tokens-never-expire": Shows("AUTH-008", _OK),
    "refresh-as-access": Shows("AUTH-010", _OK),
    "signature-not-verified": Shows("AUTH-007", _OK),
    "wrong-kind": Shows("TXN-002", r'"kind": ?"CASHIN"'),  # the answer to a cashout
    "refs-reused": Shows(
        "IDEM-006", r'(?s)"ref": ?"([0-9a-f-]{36})".*"ref": ?"\1"', concurrency="1"
    ),
    "status-stuck-pending": Shows("LIFE-002", r'"status": ?"pending"'),
    "cancel-reads-success": Shows("LIFE-003", r'"status": ?"success"'),
    "processed-changes-again": Shows("LIFE-004", r'"status": ?"failed"'),
    "find-status-disagrees": Shows("LIFE-002", r'"status": ?"failed"'),
    "processed-event-missing": Shows(
        "LIFE-002", "transaction:created", absent="transaction:processed"
    ),
    "filter-ignored": Shows("EVT-006", r'"status": ?"failed"'),  # listed under status=pending
    "cross-merchant-visible": Shows("ISO-001", _OK),
    "privileges-ignored": Shows("PRIV-001", _OK),
    "server-error-on-malformed": Shows("ERR-001", r"HTTP/[0-9.]+ 500"),
    "timestamp-format": Shows("FMT-003", r'"created_at": ?"\d{4}-\d\d-\d\d \d'),
    "drop-acknowledged": Shows(why="load only: the load run's reconciliation finds it"),
    "early-expiry": Shows(why="load only: the load run's token renewal finds it"),
    "webhook-bad-signature": Shows(why=_WEBHOOK),
    "webhook-no-retry": Shows(why=_WEBHOOK),
    "webhook-duplicate-new-id": Shows(why=_WEBHOOK),
    "webhook-out-of-order": Shows(why=_WEBHOOK),
    "webhook-live-signature-only": Shows(why=_WEBHOOK),
}


def test_every_fault_has_a_line() -> None:
    assert sorted(FAULTS) == sorted(SHOWS), "a fault without a line in SHOWS"
    for name, shows in SHOWS.items():
        assert bool(shows.check) != bool(shows.why), name
        if shows.check:
            assert shows.check in FAULTS[name].trips, (name, shows.check)


def printed_reproduction(stdout: str) -> tuple[list[str], str]:
    """(the export lines, the first failure's reproduction), as the terminal printed them."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Reproduce: " in line)
    script = [lines[start].split("Reproduce: ", 1)[1]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * 20):
            break
        script.append(line[20:])
    exports: list[str] = []
    marker = next(
        (i for i, line in enumerate(lines) if "run after these exports" in line), len(lines)
    )
    for line in lines[marker + 1 :]:
        if not line.startswith("    "):
            break
        exports.append(line[4:])
    return exports, "\n".join(script)


def run_fresh(exports: list[str], script: str, cwd: Path) -> str:
    """The exports then the script in a fresh bash: only PATH and HOME from this process."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(cwd))}
    done = subprocess.run(
        ["bash", "-c", "\n".join([*exports, script])],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_printed_reproduction_shows_the_defect(
    fault: str,
    make_stub: Callable[..., RunningStub],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shows = SHOWS.get(fault)
    assert shows is not None, f"{fault} has no line in SHOWS"
    if shows.why:
        pytest.skip(shows.why)
    stub = make_stub(faults=(fault,))
    outcome = conform(
        capsys,
        tmp_path / "reports",
        config=fast_config(stub, tmp_path),
        only=shows.check,
        strict=True,  # a SHOULD check's failure prints in full, as a MUST's
        concurrency=shows.concurrency,
    )
    assert outcome.ids("failed") == {shows.check}, outcome.stdout[-3000:]
    exports, script = printed_reproduction(outcome.stdout)
    output = run_fresh(exports, script, tmp_path)
    shown = f"{fault}: {shows.check}\n{script}\n--- output ---\n{output[-4000:]}"
    assert re.search(shows.pattern, output), shown
    if shows.absent:
        assert not re.search(shows.absent, output), shown
    # The same lines are written beside the reports, with the exports they need.
    written = (outcome.report_dir / f"reproduce/{shows.check}.sh").read_text(encoding="utf-8")
    assert script in written
    assert all(line in exports for line in written.splitlines() if line.startswith("export "))
