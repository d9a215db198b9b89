"""The suite has teeth, and bites only where it should: each fault fails exactly its checks.

``stub_server.fault_catalog.FAULTS`` holds, beside each fault, the exact set of checks it must fail
(``Fault.trips``). Each test here runs the suite against a stub with one fault and asserts that
the failed checks are that set: not fewer (a missed defect), not more (blame on another rule).

The run covers the whole catalog but two parts whose cost is time, not coverage: the property
phase (PROP, ~20 s a run) and the token-expiry wait (AUTH-008). Those run in addition for the
faults whose map names them, so that their failures are asserted as exactly as the others.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conformkit import conform, fast_config

from conformance import catalog
from paysuite_core.launcher import RunningStub
from stub_server.fault_catalog import FAULTS

# First tier (not marked slow): every change must keep each fault failing exactly its checks.

#: The checks every fault run covers; PROP and AUTH-008 join only where the map names them.
EXPENSIVE = {c.id for c in catalog.CATALOG if c.group == "PROP"} | {"AUTH-008"}
BROAD = [c.id for c in catalog.CATALOG if c.id not in EXPENSIVE]
#: The webhook faults trip reference-profile checks that need a receiver and a stub delivering
#: to it: test_webhook_checks.py proves their map.
CONFORMANCE_FAULTS = sorted(
    name
    for name, fault in FAULTS.items()
    if not fault.load_only and not name.startswith("webhook-")
)


def test_every_fault_names_checks_that_exist() -> None:
    known = {c.id for c in catalog.CATALOG}
    for name in CONFORMANCE_FAULTS:
        assert FAULTS[name].trips, f"{name} trips no check"
        assert FAULTS[name].trips <= known, name


@pytest.mark.parametrize("fault", CONFORMANCE_FAULTS)
def test_fault_fails_exactly_its_checks(
    fault: str,
    make_stub: Callable[..., RunningStub],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trips = FAULTS[fault].trips
    only = sorted(set(BROAD) | (trips & EXPENSIVE))
    # AUTH-008 with the stub's default 15-minute lifetime: it judges the sandbox's short-lived
    # pairs, which the credentials file declares (short_lived_pair)
    stub = make_stub(faults=(fault,))
    config = fast_config(stub, tmp_path)
    concurrency = "1" if FAULTS[fault].interleaved else None
    outcome = conform(
        capsys,
        tmp_path / "strict",
        config=config,
        only=",".join(only),
        strict=True,
        concurrency=concurrency,
    )
    failed = outcome.ids("failed")
    assert failed == set(trips), (fault, sorted(failed), outcome.report["checks"])
    assert outcome.status == 1 and outcome.report["verdict"] == "fail"
    for check in outcome.report["checks"]:
        if check["id"] in trips:
            # A failure explains itself: a message, Expected/Actual, and an exchange to replay.
            assert check["message"] and check["expected"] and check["actual"], check
            assert check["evidence"] and check["evidence"][0]["curl"].startswith("curl "), check
    levels = {catalog.get(check_id).level for check_id in trips}
    if levels == {"SHOULD"}:
        # --strict only decides which failures gate the run (plugin._gates), never what a
        # check sends or concludes: the strict run above proved the broad set fails exactly
        # ``trips``, so the lenient run needs only those checks to prove they fail as warnings.
        lenient = conform(
            capsys,
            tmp_path / "lenient",
            config=config,
            only=",".join(sorted(trips)),
            concurrency=concurrency,
        )
        assert lenient.ids("failed") == set(trips)
        assert lenient.status == 0, "a SHOULD failure must not fail the run without --strict"
        assert {c["severity"] for c in lenient.report["checks"] if c["id"] in trips} == {"warning"}


def test_plain_pytest_agrees_with_the_verdict(
    make_stub: Callable[..., RunningStub], tmp_path: Path
) -> None:
    """pytest's exit status is the suite's: a SHOULD failure passes unless strict."""
    stub = make_stub(faults=("query-key-ignored",))
    config = fast_config(stub, tmp_path)
    base = [sys.executable, "-m", "pytest", "--pyargs", "conformance.suite", "-q",
            "-p", "no:cacheprovider", "--config", str(config), "--only", "IDEM-004",
            "--report-dir", str(tmp_path / "reports")]  # fmt: skip
    lenient = subprocess.run(base, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert lenient.returncode == 0, lenient.stdout[-3000:]
    assert "VERDICT: PASS" in lenient.stdout and "1 warnings" in lenient.stdout
    strict = subprocess.run(
        [*base, "--conformance-strict"], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert strict.returncode == 1, strict.stdout[-3000:]
    assert "VERDICT: FAIL" in strict.stdout
