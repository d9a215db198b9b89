"""``python -m benchmarks proxy``: the figure it prints is computed as documented, and a short
real run prints it and writes proxy-bench.json. No test here times anything: the bench measures,
the tests check that what it reports is the arithmetic it claims."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.__main__ import main
from benchmarks.proxy_bench import TARGET_P50_MS, FindLoop, Overhead
from paysuite_core.launcher import running_stub


def test_the_figure_is_the_difference_of_the_medians() -> None:
    overhead = Overhead(
        direct_ms=[1.0, 0.5, 9.0],  # median 1.0: an outlier does not move it
        proxied_ms=[2.5, 2.0, 40.0],  # median 2.5
        round_differences_ms=[1.5],
        forwarding_ms=[1.5, 1.6, 1.4],  # median 1.5
    )
    assert overhead.added_p50 == pytest.approx(1.5)
    assert overhead.passed
    assert overhead.verdict_line() == "proxy adds p50 1.50 ms (target <= 2 ms)  pass"
    assert overhead.split_line() == (
        "of which forwarding 0.50 ms, judging and recording 1.00 ms (p50 differences)"
    )
    data = overhead.to_dict()
    assert data["added_p50_ms"] == 1.5 and data["forwarding_added_p50_ms"] == 0.5
    assert data["direct"]["requests"] == 3 and data["proxied"]["p99_ms"] == 40.0


def test_over_the_target_is_a_fail() -> None:
    slow = Overhead([1.0], [1.0 + TARGET_P50_MS + 0.01], [TARGET_P50_MS + 0.01], [1.0])
    assert not slow.passed and slow.verdict_line().endswith("FAIL")
    assert Overhead([1.0], [1.0 + TARGET_P50_MS], [TARGET_P50_MS], [1.0]).passed  # "<=" 2 ms


def test_a_find_that_does_not_answer_200_stops_the_measure(tmp_path: Path) -> None:
    """Timing 401s would measure the wrong path: the loop refuses to."""
    with running_stub(tmp_path / "stub") as stub:
        loop = FindLoop(f"{stub.base_url}/transactions/find/x", token="not-a-token")
        try:
            with pytest.raises(RuntimeError, match="answered 401, not 200"):
                loop.run(3)
        finally:
            loop.close()


def test_a_short_run_prints_the_line_and_writes_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["proxy", "--rounds", "1", "--requests", "20", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads((tmp_path / "proxy-bench.json").read_text("utf-8"))
    assert data["rounds"] == 1 and data["proxied"]["requests"] == 20
    assert data["direct"]["requests"] == data["forwarding_only"]["requests"] == 20
    printed = re.search(
        r"^proxy adds p50 (-?[\d.]+) ms \(target <= 2 ms\)  (pass|FAIL)$", out, re.M
    )
    assert printed is not None, out
    assert float(printed.group(1)) == pytest.approx(data["added_p50_ms"], abs=0.006)
    assert (printed.group(2) == "pass") == data["passed"]
    assert "forwarding only" in out and "paysuite proxy" in out


@pytest.mark.parametrize("flag", ["--rounds", "--requests"])
def test_counts_must_be_positive(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["proxy", flag, "0"]) == 2
    assert "must be positive" in capsys.readouterr().err
