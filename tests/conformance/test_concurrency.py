"""``--concurrency``: independent checks run at once and judge exactly as one after another.

The proof that concurrency mixes no check's traffic into another's is test_faults.py: each fault
still fails exactly its checks, with the default concurrency. Here: the plan of a concurrent run
(the checks that run alone, the late ones), the per-thread evidence and budget, the same verdict
and outcomes with and without concurrency, the reports in the run's order, and a far stub.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from conformkit import conform, fast_config
from test_usage import _one_line_failure, run_paysuite

from conformance import catalog
from conformance.checks import (
    AFTER_OTHERS,
    ALONE,
    EARLY_SETUPS,
    FIRST,
    LAST,
    Plan,
    concurrent_plan,
    late_order,
)
from conformance.options import DEFAULT_CONCURRENCY, Options, SetupError
from paysuite_core.driver.http import RecordingClient
from paysuite_core.launcher import RunningStub
from paysuite_core.results.evidence import Evidence


def test_the_plan_runs_the_alone_checks_by_themselves_and_the_early_ones_last() -> None:
    order = late_order([check.id for check in catalog.CATALOG])
    plan = concurrent_plan(order)
    special = set(ALONE) | set(AFTER_OTHERS) | set(EARLY_SETUPS)
    assert plan.first == [cid for cid in order if cid in FIRST]
    assert plan.together == [cid for cid in order if cid not in special]
    late = [cid for cid in order if cid in AFTER_OTHERS or cid in EARLY_SETUPS]
    assert plan.then == [[cid for cid in late if cid != LAST], [LAST]]
    assert plan.last == [cid for cid in order if cid in ALONE and cid not in FIRST]
    every = plan.first + plan.together + [c for b in plan.then for c in b] + plan.last
    assert sorted(every) == sorted(order)  # each check once, none lost
    assert {"AUTH-018", "IDEM-006", "EVT-010"} <= set(ALONE) and FIRST <= set(ALONE)
    assert all(why for why in (*ALONE.values(), *AFTER_OTHERS.values()))


def test_a_small_selection_plans_as_expected() -> None:
    plan = concurrent_plan(["AUTH-001", "AUTH-018", "TXN-001", "EVT-010", "FMT-001"])
    assert plan == Plan(
        first=["AUTH-018"], together=["AUTH-001", "TXN-001"], then=[["FMT-001"]], last=["EVT-010"]
    )
    assert concurrent_plan([]) == Plan([], [], [], [])


@pytest.mark.parametrize("value", ["0", "65", "many", "-2", "1.5"])
def test_a_bad_concurrency_is_a_setup_error(value: str) -> None:
    with pytest.raises(SetupError, match="--concurrency"):
        Options.parse(concurrency=value)
    assert Options.parse().concurrency == DEFAULT_CONCURRENCY
    assert Options.parse(concurrency="1").concurrency == 1


def test_a_bad_concurrency_exits_2_with_one_line() -> None:
    _one_line_failure(run_paysuite("conform", "--concurrency", "0"), "--concurrency")


def test_each_thread_has_its_own_budget_and_a_sibling_keeps_its_makers() -> None:
    """What a concurrent check sets is its own; a race's racer, made in the check's thread and
    sent from another, records into that check's evidence under its budget."""
    local = threading.local()
    client = RecordingClient("http://127.0.0.1:9/api", lambda: getattr(local, "evidence", None))
    seen: dict[str, object] = {}

    def check(name: str, deadline: float) -> None:
        local.evidence = Evidence()
        client.check_deadline = deadline
        racer = client.sibling()
        seen[name] = (client.check_deadline, local.evidence)

        def in_another_thread() -> None:
            seen[f"{name} racer"] = (racer.check_deadline, racer._sink())

        thread = threading.Thread(target=in_another_thread)
        thread.start()
        thread.join()

    threads = [threading.Thread(target=check, args=(n, d)) for n, d in (("a", 10.0), ("b", 20.0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert client.check_deadline is None  # this thread set none
        assert seen["a"][0] == 10.0 and seen["b"][0] == 20.0
        assert seen["a racer"] == seen["a"] and seen["b racer"] == seen["b"]
        assert seen["a"][1] is not seen["b"][1]
    finally:
        client.close()


def _run_order(report_checks: list[dict[str, object]]) -> list[object]:
    return [check["id"] for check in report_checks]


def _junit_names(report_dir: Path) -> list[str]:
    return re.findall(r'<testcase [^>]*name="([^"]*)"', (report_dir / "junit.xml").read_text())


def test_concurrent_and_sequential_runs_judge_alike_in_the_same_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against the bundled stub: the same verdict, every check the same outcome, and the
    reports (conformance.json, junit.xml, the scorecard) in the run's order either way."""
    sequential = conform(capsys, tmp_path / "one", concurrency="1")
    concurrent = conform(capsys, tmp_path / "eight", concurrency="8")
    assert sequential.status == concurrent.status == 0, concurrent.stdout[-2000:]
    one, eight = sequential.report, concurrent.report
    assert one["verdict"] == eight["verdict"] == "pass"
    outcomes = [(c["id"], c["outcome"], c["not_applicable"]) for c in one["checks"]]
    assert [(c["id"], c["outcome"], c["not_applicable"]) for c in eight["checks"]] == outcomes
    order = late_order([check.id for check in catalog.CATALOG])
    assert _run_order(eight["checks"]) == order
    assert _junit_names(tmp_path / "eight") == _junit_names(tmp_path / "one")


@pytest.mark.slow
def test_a_far_stub_passes_with_the_default_concurrency(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``paysuite stub --latency 80ms`` is a far target the suite judges as a near one."""
    stub = make_stub(extra_args=("--latency", "80ms", "--access-ttl", "2"))
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "far", config=config)
    assert outcome.status == 0, outcome.stdout[-3000:]
    assert outcome.report["verdict"] == "pass"


def test_verbose_shows_each_check_as_it_ends_then_the_scorecard_in_order(tmp_path: Path) -> None:
    """A long concurrent run shows it is moving: ``-v`` prints a line as each check run ahead
    ends, then the verdict lines in the run's order, as a run one after another does."""
    done = subprocess.run(
        [sys.executable, "-m", "paysuite", "conform", "-v", "--only", "AUTH-001,AUTH-003,TXN-001",
         "--report-dir", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    ended = [i for i, line in enumerate(lines) if re.match(r"  ran [123]/3: \w+-\d+ \(", line)]
    ordered = [i for i, line in enumerate(lines) if re.match(r"\[[123]/3\] ", line)]
    assert len(ended) == 3 and len(ordered) == 3, done.stdout
    assert max(ended) < min(ordered), done.stdout
