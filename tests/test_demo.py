"""`paysuite demo`: its orchestration (short), its index page, and the conformance step's outcomes.

The full demo (the whole conformance suite and a 30 s smoke run) is the README's main command and
is run by the fresh-clone check; here the conformance step is replaced where it would be slow.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from conformance import runner
from conformance.options import Options
from paysuite import demo
from paysuite.demo import ConformanceResult, run_demo, write_index


def _fake_conformance(status: str) -> Any:
    def runner(credentials: Path, out_dir: Path, root: Path) -> ConformanceResult:
        assert credentials.is_file()  # the stub's credentials file: a target configuration
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "report.html").write_text("<html>conformance</html>")
        totals = {"tests": 40, "passed": 38, "failures": 0, "errors": 0, "skipped": 2}
        return ConformanceResult(status, 0, totals, "conformance/report.html")

    return runner


@pytest.mark.slow
def test_demo_orchestration_with_a_short_load_run(tmp_path: Path) -> None:
    args = argparse.Namespace(report_dir=str(tmp_path), load_duration=4.0, users=2)
    code = run_demo(args, conformance_runner=_fake_conformance("passed"))
    assert code == 0
    page = (tmp_path / "index.html").read_text()
    assert 'href="conformance/report.html"' in page and 'href="load/load.html"' in page
    assert "<script" not in page and "PASS" in page
    assert (tmp_path / "load" / "load.json").is_file()
    assert (tmp_path / "load" / "load.html").is_file()


def test_index_marks_a_failed_or_missing_step(tmp_path: Path) -> None:
    broken = ConformanceResult("error", 2, message="paysuite conform: target unreachable")
    load_summary = {
        "total": {"requests": 100, "failures": 0, "rps": 20.0, "p95_ms": 3.0},
        "slo": {"verdicts": [{"operation": "cashin", "metric": "p95_ms", "passed": False}]},
        "reconciliation": {"acknowledged": 30, "found": 28, "lost": 2},
    }
    page = write_index(tmp_path, broken, 1, load_summary, 1).read_text()
    assert "ERROR" in page and "target unreachable" in page
    assert "breached: cashin p95_ms" in page
    assert "<b>2</b>" in page  # lost
    assert "FAIL" in page
    page = write_index(tmp_path, broken, None, None, 1).read_text()
    assert "produced no verdict" in page


def test_conformance_totals_from_the_runs_own_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "conformance"

    def fake_run(options: Options, **kwargs: Any) -> runner.Finished:
        assert options.report_dir == str(out) and options.config == str(tmp_path / "c.yaml")
        out.mkdir()
        (out / "report.html").write_text("<html/>")
        counts = {"passed": 11, "failed": 1, "warnings": 0, "skipped": 2, "errors": 1}
        return runner.Finished(1, counts={**counts, "not_applicable": 0})

    monkeypatch.setattr(runner, "conform", fake_run)
    result = demo.run_conformance(tmp_path / "c.yaml", out, tmp_path)
    assert result.status == "failed" and result.totals["failures"] == 1
    assert result.report == "conformance/report.html"


def test_conformance_totals_from_the_verdicts_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "conformance"

    def fake_run(options: Options, **kwargs: Any) -> runner.Finished:
        out.mkdir()
        summary = {"passed": 50, "failed": 2, "warnings": 1, "skipped": 3, "errors": 0}
        summary["not_applicable"] = 4  # counted among the checks, as the report counts them
        return runner.Finished(1, counts=summary)

    monkeypatch.setattr(runner, "conform", fake_run)
    result = demo.run_conformance(tmp_path / "c.yaml", out, tmp_path)
    assert result.totals == {
        "tests": 60, "passed": 50, "warnings": 1, "failures": 2, "errors": 0, "skipped": 3,
        "not_applicable": 4,
    }  # fmt: skip
    assert result.status == "failed" and result.report is None
