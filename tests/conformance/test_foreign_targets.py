"""Verdicts on implementations nobody on the team wrote (tests/foreign): trust in both directions.

- an independent implementation, written from the document with other choices where it is
  silent (the live service's, mostly), passes the seed profile with --strict;
- the same implementation with one defect fails on the check that names the defect;
- a stateless mock of the spec fails (exit 1), its stateful chain first of all;
- no credentials, refused credentials and a server that is not this API give exit 2 and one
  line; a target that dies during the run is an error of the run, never a pass.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conformkit import conform

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "foreign"))
from defect_checks import DEFECT_CHECKS
from foreignkit import Foreign, start_foreign
from independent import CHOICES

pytestmark = pytest.mark.slow


def run_paysuite(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``paysuite ARGS`` in a scratch working directory (reports never in the checkout's)."""
    with tempfile.TemporaryDirectory(prefix="paysuite-foreign-") as scratch:
        return subprocess.run(
            [sys.executable, "-m", "paysuite", *args],
            capture_output=True, text=True, timeout=timeout, cwd=scratch,
        )  # fmt: skip


def _one_line_exit_2(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def independent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Foreign]:
    server = start_foreign(
        "independent", tmp_path_factory.mktemp("independent"), "--access-ttl", "2"
    )
    yield server
    server.stop()


@pytest.fixture(scope="module")
def mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Foreign]:
    server = start_foreign("static_mock", tmp_path_factory.mktemp("mock"))
    yield server
    server.stop()


def test_conformant_independent_implementation_passes_seed_strict(
    independent: Foreign, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = conform(capsys, tmp_path, config=independent.config_path, strict=True)
    bad = [
        f"{c['id']}: {c['outcome']} {c['message'][:300]}"
        for c in outcome.report["checks"]
        if c["outcome"] in ("failed", "error")
    ]
    assert outcome.status == 0, "\n".join(bad)
    assert outcome.report["verdict"] == "pass" and outcome.report["coverage"]["ratio"] == 1.0
    assert outcome.stdout.rstrip().splitlines()[-1].startswith("VERDICT: PASS")


def test_other_conformant_choices_raise_no_alarm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Normalised numbers, strict filter validation, +02:00 offsets, problem+json errors: all
    conformant. Only the UTC SHOULD notices the offsets, as a warning. (``rate-limit`` has its
    own test, test_throttled_target.py, with a token lifetime that outlasts its waits.)"""
    choices = [arg for name in sorted(set(CHOICES) - {"rate-limit"}) for arg in ("--choice", name)]
    server = start_foreign("independent", tmp_path, "--access-ttl", "2", *choices)
    try:
        outcome = conform(capsys, tmp_path / "r", config=server.config_path)
    finally:
        server.stop()
    report = outcome.report
    bad = [
        f"{c['id']}: {c['message'][:300]}"
        for c in report["checks"]
        if c["severity"] in ("fail", "error")
    ]
    assert outcome.status == 0 and report["verdict"] == "pass", "\n".join(bad)
    assert {c["id"] for c in report["checks"] if c["severity"] == "warning"} == {"FMT-007"}


def run_defect(defect: str, work: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    """The independent implementation with ``defect``, judged by ``paysuite conform`` on the
    defect's checks: (exit status, conformance.json). One run per test, so pytest-xdist spreads
    the runs over its workers; conform runs in this process (as conformkit runs it for every
    self-test), which spares each of the sixty runs an interpreter's start and imports."""
    server = start_foreign("independent", work, "--defect", defect, "--access-ttl", "2")
    try:
        outcome = conform(
            capsys,
            work / "r",
            config=server.config_path,
            strict=True,
            only=",".join(sorted(DEFECT_CHECKS[defect])),
        )
    finally:
        server.stop()
    return outcome.status, outcome.report


#: Runs a race defect gets (``test_each_defect_fails_the_check_that_names_it``).
RACE_RUNS = 3


@pytest.mark.parametrize("defect", sorted(DEFECT_CHECKS))
def test_each_defect_fails_the_check_that_names_it(
    defect: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A race defect shows only when the racers overlap within its gap, which a busy runner may
    miss in one run: it gets up to ``RACE_RUNS`` runs, and one that fails its checks is enough
    (a run that misses it is no false alarm, and the conformant server is judged elsewhere)."""
    for run in range(RACE_RUNS if defect.endswith("-race") else 1):
        work = tmp_path / f"run{run}"
        work.mkdir()
        status, report = run_defect(defect, work, capsys)
        failed = {c["id"] for c in report["checks"] if c["outcome"] == "failed"}
        if DEFECT_CHECKS[defect] <= failed:
            break
    assert DEFECT_CHECKS[defect] <= failed, report["checks"]
    assert status == 1 and report["verdict"] == "fail"


def test_static_mock_fails_on_its_chain(
    mock: Foreign, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prism-style fixed answers: the stateful chain, tokens and ids give it away."""
    outcome = conform(
        capsys,
        tmp_path,
        config=mock.config_path,
        only="PROP-009,AUTH-001,AUTH-009,FMT-002,EVT-003,IDEM-001",
    )
    assert outcome.status == 1 and outcome.report["verdict"] == "fail"
    assert {"PROP-009", "AUTH-001", "AUTH-009", "IDEM-001"} <= outcome.ids("failed")
    assert not outcome.ids("passed"), "no check may pass on fixed answers"


def test_no_applications_exits_2(mock: Foreign) -> None:
    _one_line_exit_2(run_paysuite("conform", "--target", mock.base_url), "no applications")


def test_refused_credentials_exit_2(independent: Foreign, tmp_path: Path) -> None:
    data = yaml.safe_load(independent.config_path.read_text(encoding="utf-8"))
    data["applications"][0]["client_secret"] = "not-the-secret"
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    _one_line_exit_2(run_paysuite("conform", "--config", str(path)), "the target refused")


def test_not_this_api_exits_2(tmp_path: Path) -> None:
    with start_foreign("not_api", tmp_path) as server:
        result = run_paysuite("conform", "--config", str(server.config_path))
    _one_line_exit_2(result, "does not answer like this API")


def test_a_target_that_dies_is_an_error_of_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with start_foreign("dies", tmp_path, "--die-after", "60") as server:
        outcome = conform(capsys, tmp_path / "r", config=server.config_path)
    report = outcome.report
    assert outcome.status == 2 and report["verdict"] == "error", report["reason"]
    assert report["run_errors"] and "stopped answering" in report["run_errors"][0]
    assert outcome.ids("error")
    assert "stopped answering" in outcome.stdout
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "stopped answering" in html
