"""The credentials QA is given: a verdict on what they reach, the rest not applicable.

Production access is often a read application alone, or one merchant's cashin application. Every
check of the catalog (reference profile, --strict: nothing skipped for its profile) runs against
the conformant stub with such a configuration: none may fail or err, and every check that does
not run says why, as not applicable to the configuration, counted apart from the coverage.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conformkit import conform, fast_config

from conformance.checks import ENTRY_ATTRIBUTE, entry_of
from paysuite_core.launcher import RunningStub

Keep = Callable[[dict[str, Any]], bool]

CONFIGURATIONS: dict[str, Keep] = {
    "read-only": lambda app: app["privilege"] == "read",
    "cashin-only": lambda app: app["privilege"] == "cashin",
    "single-merchant": lambda app: app["merchant"] == "DEMO01",
}


def _partial_config(stub: RunningStub, directory: Path, keep: Keep) -> Path:
    path = fast_config(stub, directory)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["applications"] = [app for app in data["applications"] if keep(app)]
    assert data["applications"], "the stub's credentials lack the application kind kept"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_every_check_against_partial_credentials(
    name: str, module_stub: RunningStub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _partial_config(module_stub, tmp_path, CONFIGURATIONS[name])
    outcome = conform(capsys, tmp_path / "reports", config=config, profile="reference", strict=True)
    report = outcome.report
    bad = [
        f"{c['id']}: {c['outcome']} {c['message'][:300]}"
        for c in report["checks"]
        if c["outcome"] in ("failed", "error")
    ]
    assert bad == [] and outcome.status == 0, "\n".join(bad) or outcome.stdout[-2000:]
    skipped = [c for c in report["checks"] if c["outcome"] == "skipped"]
    assert skipped, f"{name}: every check ran, so the configuration was not partial"
    unexplained = [c["id"] for c in skipped if not (c["not_applicable"] and c["message"])]
    assert unexplained == [], f"skipped without a not-applicable reason: {unexplained}"
    coverage = report["coverage"]
    assert {item["id"] for item in coverage["not_applicable"]} == {c["id"] for c in skipped}
    assert coverage["applicable"] == coverage["run"] == len(report["checks"]) - len(skipped)
    assert "not applicable to this configuration" in outcome.stdout
    if name == "read-only":
        # What a reader can judge is judged: the token rules on the reads, find, the list.
        ran = {c["id"] for c in report["checks"] if c["outcome"] == "passed"}
        assert {"AUTH-001", "AUTH-004", "AUTH-005", "AUTH-007", "FIND-002"} <= ran
        reasons = {c["id"]: c["message"] for c in skipped}
        assert "no application may cashin" in reasons["TXN-001"]


def test_a_stray_assert_in_a_check_is_an_error_of_the_suite(
    module_stub: RunningStub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the suite's own failure type fails a check: a bare ``assert`` that does not hold
    says nothing about the target, so it must not read as a broken rule."""
    module = importlib.import_module("conformance.suite.endpoint_find")
    original = module.find_with_an_unknown_ref_is_rejected

    def find_with_an_unknown_ref_is_rejected(target: Any) -> None:
        assert target is None  # a type-narrowing assert that does not hold

    find_with_an_unknown_ref_is_rejected.__module__ = module.__name__
    setattr(find_with_an_unknown_ref_is_rejected, ENTRY_ATTRIBUTE, entry_of(original))
    monkeypatch.setattr(
        module, "find_with_an_unknown_ref_is_rejected", find_with_an_unknown_ref_is_rejected
    )
    config = fast_config(module_stub, tmp_path)
    outcome = conform(capsys, tmp_path / "reports", config=config, only="FIND-002")
    result = outcome.check("FIND-002")
    assert result["outcome"] == "error", result
    # said as the suite's own error, with its traceback in the report, never as the target's
    assert result["message"].startswith("paysuite's own error"), result["message"]
    assert "AssertionError" in result["message"], result["message"]
    (engine,) = outcome.report["engine_errors"]
    assert "assert target is None" in str(engine), engine
    assert outcome.status == 2 and outcome.report["verdict"] == "error"
