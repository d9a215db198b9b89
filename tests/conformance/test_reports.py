"""Reports: conformance.json has its documented structure, junit.xml one case per check, and
report.html shows a person the scorecard and a failure's proof (checked in headless Chromium)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from browserkit import chromium, needs_chromium
from conformkit import Outcome, conform, fast_config

#: One worker runs this module: its checks share one (module-scoped) conformance run.
pytestmark = pytest.mark.xdist_group("reports-failing-run")

pytestmark = pytest.mark.slow

ONLY = "TXN,FMT-006"


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The suite against a stub whose cashout answers kind CASHIN (TXN-002 fails)."""
    from paysuite_core.launcher import start_stub, stop_stub

    workdir = tmp_path_factory.mktemp("wrongkind")
    stub = start_stub(workdir / "stub", faults=("wrong-kind",), startup_timeout_s=60)
    try:
        config = fast_config(stub, workdir)
        capture = _Capture()
        return conform(capture, workdir / "reports", config=config, only=ONLY)  # type: ignore[arg-type]
    finally:
        stop_stub(stub)


class _Capture:
    """A stand-in for capsys in a module-scoped fixture (output is not asserted there)."""

    def readouterr(self):  # mimics capsys
        class _Out:
            out = ""
            err = ""

        return _Out()


def test_json_structure(failing_run: Outcome) -> None:
    report = failing_run.report
    assert set(report) == {
        "verdict", "exit_code", "profile", "strict", "reason", "coverage", "run_errors",
        "target", "started_at", "duration_s", "summary", "replay", "checks", "throttling", "tls",
        "engine_errors", "findings",
    }  # fmt: skip
    assert set(report["summary"]) == {
        "passed",
        "failed",
        "warnings",
        "skipped",
        "errors",
        "not_applicable",
    }
    assert report["profile"] == "seed" and report["target"].endswith("/api")
    assert (report["verdict"], report["exit_code"], report["strict"]) == ("fail", 1, False)
    assert set(report["coverage"]) == {
        "run", "total", "ratio", "minimum", "skipped", "applicable", "not_applicable",
    }  # fmt: skip
    for check in report["checks"]:
        shown = {"reproduce"} if check["severity"] in ("fail", "warning", "error") else set()
        assert set(check) - shown == {
            "id", "title", "level", "section", "profile", "quote", "outcome", "gating",
            "severity", "message", "expected", "actual", "note", "evidence", "not_applicable",
        }  # fmt: skip
        for item in check["evidence"]:
            assert {"request", "response", "curl"} <= set(item)
            assert set(item) <= {"request", "response", "curl", "env", "note"}
    failed = {c["id"]: c for c in report["checks"] if c["outcome"] == "failed"}
    assert set(failed) == {"TXN-002"}
    assert failed["TXN-002"]["reproduce"]["script"].count("curl ") >= 1
    evidence = failed["TXN-002"]["evidence"]
    assert evidence and "transactions/cashout" in evidence[0]["curl"]
    assert evidence[0]["response"]["status"] == 200
    assert "CASHIN" in evidence[0]["response"]["body"]
    assert "Bearer $PAYSUITE_TOKEN" in evidence[0]["curl"]  # replays once exported
    assert "…" in evidence[0]["request"]["headers"]["Authorization"]  # shown shortened
    assert any(line.startswith("export PAYSUITE_TOKEN_") for line in report["replay"]["exports"])
    assert failing_run.status == 1


def test_junit_one_case_per_check(failing_run: Outcome) -> None:
    root = ET.parse(failing_run.report_dir / "junit.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(failing_run.report["checks"])
    failures = [case for case in cases if case.find("failure") is not None]
    assert [case.get("name", "").split()[0] for case in failures] == ["TXN-002"]
    assert "CASHOUT" in failures[0].find("failure").get("message", "")  # type: ignore[union-attr]


@pytest.mark.browser
@needs_chromium
def test_html_in_headless_chromium(failing_run: Outcome, tmp_path: Path) -> None:
    page = failing_run.report_dir / "report.html"
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and "http://" not in html.split("<body>")[0]  # self-contained
    result = chromium(tmp_path, "--dump-dom", page.resolve().as_uri())
    dom = result.stdout
    assert "Scorecard" in dom, result.stderr[-2000:]
    assert dom.index("banner verdict-fail") < dom.index("<table")  # the verdict comes first
    # then the failure with its proof, before the scorecard of every check
    failure = dom.index('id="TXN-002"')
    assert dom.index("banner verdict-fail") < failure < dom.index('id="scorecard"')
    assert failure < dom.index("curl -sS -i -X POST", failure) < dom.index("<table")
    assert "TXN-002" in dom
    assert "curl -sS -i -X POST" in dom and "transactions/cashout" in dom
    assert "Response: the transaction creation response with kind = CASHOUT" in dom  # the quote
    summary = failing_run.report["summary"]
    assert f"{summary['passed']} passed, {summary['failed']} failed" in dom
