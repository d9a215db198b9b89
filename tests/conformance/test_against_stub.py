"""The suite passes against the conformant stub, in both profiles, with --strict.

Each profile is one full run (every check, property tests included) against a module-scoped
stub; the reports of the seed run are checked for shape here too.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conformkit import STUB_ACCESS_TTL, STUB_PENDING_TIMEOUT, Outcome, conform, fast_config
from webhookstub import free_port, hooked_stub

from conformance.catalog import CATALOG
from paysuite_core.launcher import RunningStub, stop_stub

# First tier (not marked slow): every change must keep the stub passing both profiles.


@pytest.mark.parametrize("profile", ["seed", "reference"])
def test_full_suite_passes_strict(
    profile: str,
    module_stub: RunningStub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stub = module_stub
    if profile == "reference":  # a stub that delivers webhooks, so the WEBHOOK checks run too
        stub = hooked_stub(
            tmp_path / "stub", free_port(), extra_args=STUB_ACCESS_TTL + STUB_PENDING_TIMEOUT
        )
    try:
        outcome = _full_run(profile, stub, tmp_path, capsys)
    finally:
        if stub is not module_stub:
            stop_stub(stub)
    print(f"full {profile} run against the stub: {outcome.report['duration_s']} s")


def _full_run(
    profile: str, stub: RunningStub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Outcome:
    config = fast_config(stub, tmp_path)
    # every check runs, the history phase's MODEL checks too (on a short budget)
    outcome = conform(
        capsys,
        tmp_path / "reports",
        config=config,
        profile=profile,
        strict=True,
        history_budget="20",  # the concurrent part takes at least 6 s of it
    )
    report = outcome.report
    bad = [
        f"{c['id']}: {c['outcome']} {c['message'][:300]}"
        for c in report["checks"]
        if c["outcome"] in ("failed", "error")
    ]
    assert outcome.status == 0, "\n".join(bad) or outcome.stderr
    assert report["profile"] == profile
    assert report["summary"]["failed"] == 0 and report["summary"]["errors"] == 0
    # Every check ran: the stub has every application kind, a customer driver, a short-lived
    # pair (short_lived_pair, AUTH-008) and
    # (reference) a short pending time-out.
    skipped = {c["id"]: c["message"] for c in report["checks"] if c["outcome"] == "skipped"}
    if profile == "reference":
        # AUTH-020 watches a revoked access token: the bundled stub revokes none (RC-10)
        assert set(skipped) == {"AUTH-020"}, skipped
    else:
        assert set(skipped) == {c.id for c in CATALOG if c.profile == "reference"}
    assert report["summary"]["passed"] == len(CATALOG) - len(skipped)
    assert "passed, 0 failed, " in outcome.stdout  # the closing totals line
    # junit.xml: one test case per check, none failed.
    suite = ET.parse(tmp_path / "reports" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == len(CATALOG)
    assert not any(case.find("failure") is not None for case in cases)
    return outcome


def test_the_configuration_is_read_and_probed_once(
    module_stub: RunningStub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``paysuite conform`` loads and probes the target once and hands it to pytest in-process."""
    from conformance import preflight

    calls = {"load_config": 0, "check_reachable": 0, "preflight": 0}

    def counted(name: str) -> Any:
        real = getattr(preflight, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real(*args, **kwargs)

        return wrapper

    for name in calls:
        monkeypatch.setattr(preflight, name, counted(name))
    config = fast_config(module_stub, tmp_path)
    outcome = conform(capsys, tmp_path / "reports", config=config, only="AUTH-001")
    assert outcome.status == 0, outcome.stdout[-2000:] + outcome.stderr
    assert calls == {"load_config": 1, "check_reachable": 1, "preflight": 1}
