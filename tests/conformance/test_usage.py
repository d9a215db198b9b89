"""Usage: the catalog, --list, the documentation table, and exit status 2 for bad input."""

from __future__ import annotations

import importlib
import json
import pkgutil
import socket
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

import conformance.suite
from conformance import catalog
from conformance.checks import LAST, entry_of, late_order
from paysuite.cli import main
from paysuite_core.launcher import RunningStub
from paysuite_core.tokens import AUTHORIZE_PATH

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def run_paysuite(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``paysuite ARGS`` in a scratch working directory: a run without --report-dir writes its
    reports there, never into the checkout's reports/."""
    with tempfile.TemporaryDirectory(prefix="paysuite-usage-") as scratch:
        return subprocess.run(
            [sys.executable, "-m", "paysuite", *args],
            capture_output=True, text=True, timeout=timeout, cwd=scratch,
        )  # fmt: skip


def section_modules() -> list[str]:
    return [info.name for info in pkgutil.iter_modules(conformance.suite.__path__)]


def implementations() -> list[tuple[str, str, str]]:
    """(check ID, module, function name) of every check function of the suite's modules."""
    found = []
    for name in section_modules():
        module = importlib.import_module(f"conformance.suite.{name}")
        for attribute, value in vars(module).items():
            entry = entry_of(value)
            if entry is not None and value.__module__ == module.__name__:
                found.append((entry.id, name, attribute))
    return found


def test_every_catalog_entry_has_exactly_one_check() -> None:
    ids = [check_id for check_id, _, _ in implementations()]
    assert sorted(ids) == sorted(c.id for c in catalog.CATALOG)
    # Every module of the suite is one the catalog gathers (else its checks would not be listed).
    assert sorted(section_modules()) == sorted(catalog.SECTION_MODULES)


def test_checks_cannot_be_mistaken_for_self_tests() -> None:
    for check_id, module, function in implementations():
        assert not module.startswith("test_") and not module.endswith("_test"), module
        assert not function.startswith("test"), (check_id, function)
    assert not (Path(conformance.suite.__file__).parent / "conftest.py").exists()


def test_each_group_lives_in_one_section_module() -> None:
    """A group's checks are found in one file (the module named after its section)."""
    modules: dict[str, set[str]] = {}
    for check_id, module, _ in implementations():
        modules.setdefault(catalog.get(check_id).group, set()).add(module)
    assert all(len(found) == 1 for found in modules.values()), modules
    assert set(modules) == set(catalog.GROUPS)


def test_sections_are_the_documents() -> None:
    from paysuite_core.results.rule import SECTIONS

    assert {c.section for c in catalog.CATALOG} <= set(SECTIONS)
    assert catalog.section_order() == [
        s for s in SECTIONS if any(c.section == s for c in catalog.CATALOG)
    ]


def test_the_catalog_loads_without_pytest_httpx_or_schemathesis() -> None:
    """``--list`` stays light: the catalog imports the checks, which import nothing heavy."""
    probe = (
        "import sys, conformance.catalog as c; assert len(c.CATALOG) > 60; "
        "print(sorted(m for m in ('pytest', '_pytest', 'httpx', 'schemathesis', 'hypothesis') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_plain_pytest_collects_the_checks_by_id_in_catalog_order(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance.suite", "--collect-only", "-q",
         "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    nodes = [line for line in result.stdout.splitlines() if "::" in line]
    # The catalog's order, but for the checks set up when the run starts: they run last (the
    # expiry check last of all), time passing for them meanwhile.
    order = late_order([c.id for c in catalog.CATALOG])
    assert order[-1] == LAST == "AUTH-008"
    assert [node.split("::")[1].split(" ")[0] for node in nodes] == order
    assert any(node.endswith("::AUTH-001 authorize_returns_the_token_pair") for node in nodes)


def test_catalog_ids_are_stable_and_unique() -> None:
    ids = [c.id for c in catalog.CATALOG]
    assert len(ids) == len(set(ids))
    for check in catalog.CATALOG:
        assert check.level in ("MUST", "SHOULD")
        assert check.quote and check.title and check.section
        # A reference-only check is never MUST: the document does not mandate it.
        assert not (check.profile == "reference" and check.level == "MUST"), check.id


def test_list_prints_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "--list"]) == 0
    out = capsys.readouterr().out
    for check in catalog.CATALOG:
        assert check.id in out
    assert out.strip().endswith(f"{len(catalog.CATALOG)} checks")


def test_docs_table_is_the_catalog() -> None:
    assert catalog.render_markdown() in DOCS.read_text(encoding="utf-8")


def test_only_accepts_ids_and_groups() -> None:
    assert catalog.parse_only("idem, AUTH-003") == {
        c.id for c in catalog.CATALOG if c.group == "IDEM"
    } | {"AUTH-003"}
    with pytest.raises(catalog.UnknownCheckError, match="NOPE-1"):
        catalog.parse_only("AUTH,NOPE-1")


def _one_line_failure(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert fragment in lines[0]


def test_bad_only_exits_2() -> None:
    _one_line_failure(run_paysuite("conform", "--only", "AUTH-999"), "AUTH-999")


def test_bad_config_value_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "target.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "base_url": "http://127.0.0.1:9/api",
                "applications": [{"client_id": "a", "client_secret": "b", "privilege": "admin"}],
            }
        )
    )
    _one_line_failure(run_paysuite("conform", "--config", str(path)), "privilege")


def test_unknown_config_key_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "target.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "base_url": "http://127.0.0.1:9/api",
                "applications": [{"client_id": "a", "client_secret": "b"}],
                "amout": {"min": 1},
            }
        )
    )
    _one_line_failure(run_paysuite("conform", "--config", str(path)), "amout")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_target_exits_2() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/api"
    _one_line_failure(run_paysuite("conform", "--target", url), "cannot reach")


def test_bad_min_coverage_exits_2() -> None:
    _one_line_failure(run_paysuite("conform", "--min-coverage", "lots"), "--min-coverage")


def test_unreachable_target_exits_2_under_plain_pytest(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/api"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance.suite", "--target", url,
         "-q", "-p", "no:cacheprovider", "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot reach" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_cli_end_to_end_with_the_bundled_stub(tmp_path: Path) -> None:
    """The README's main job, from the repository root (whose pytest addopts must not leak)."""
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "paysuite", "conform", "--only", "AUTH-001,AUTH-003",
         "--report-dir", str(tmp_path), "-v"],
        capture_output=True, text=True, timeout=180, cwd=repo,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "(bundled stub)" in result.stdout
    assert "[2/2] AUTH-003" in result.stdout  # -v: progress, a line per check
    assert "Conformance scorecard" in result.stdout  # -v: the whole scorecard
    lines = result.stdout.rstrip().splitlines()
    assert "2 passed, 0 failed, 0 skipped" in lines
    assert lines[-1].startswith("VERDICT: PASS") and lines[-1].endswith("exit 0")
    assert (tmp_path / "report.html").exists()


def _quiet_pass_lines(stdout: str, report_dir: Path) -> list[str]:
    """A quiet passing run's lines, checked: the header, the counts, the reports, the verdict."""
    lines = stdout.rstrip().splitlines()
    assert len(lines) <= 10, stdout
    assert lines[0].startswith("paysuite conform: ") and "(bundled stub)" in lines[0]
    assert lines[-1].startswith("VERDICT: PASS") and lines[-1].endswith("exit 0")
    assert any(line.startswith(f"reports: {report_dir}") for line in lines)
    assert not any(line.startswith("[") for line in lines)  # no progress lines
    assert "Conformance scorecard" not in stdout
    return lines


def test_a_passing_run_is_quiet_by_default(tmp_path: Path) -> None:
    result = run_paysuite(
        "conform", "--only", "AUTH-001,AUTH-003,TXN-001", "--report-dir", str(tmp_path)
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    lines = _quiet_pass_lines(result.stdout, tmp_path)
    assert "3 passed, 0 failed, 0 skipped" in lines


@pytest.mark.slow
def test_the_whole_suite_passing_fits_in_ten_lines(tmp_path: Path) -> None:
    result = run_paysuite("conform", "--report-dir", str(tmp_path), timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    lines = _quiet_pass_lines(result.stdout, tmp_path)
    assert any(line.endswith(" skipped") and " passed, 0 failed" in line for line in lines)


def test_a_wrong_base_url_path_names_the_path_and_writes_the_reports(
    module_stub: RunningStub, tmp_path: Path
) -> None:
    """A 404 on the document's authorize path: the base URL's path, not the credentials."""
    data = yaml.safe_load(module_stub.credentials_path.read_text(encoding="utf-8"))
    data["base_url"] = module_stub.root_url + "/apix"
    config = tmp_path / "apix.yaml"
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    reports = tmp_path / "reports"
    result = run_paysuite("conform", "--config", str(config), "--report-dir", str(reports))
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    why = f"no API at {module_stub.root_url}/apix (404 on {AUTHORIZE_PATH}): check base_url's path"
    assert result.stderr.strip() == f"paysuite conform: {why}"
    assert "client_secret" not in result.stderr
    # every exit writes its reports: a CI's test-report step finds why nothing ran
    report = json.loads((reports / "conformance.json").read_text(encoding="utf-8"))
    assert (report["verdict"], report["exit_code"], report["checks"]) == ("error", 2, [])
    assert why in report["reason"]
    suite = ET.parse(reports / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    (case,) = suite.findall("testcase")
    assert why in case.find("error").get("message", "")  # type: ignore[union-attr]
    assert "banner verdict-error" in (reports / "report.html").read_text(encoding="utf-8")


def test_plain_pytest_junitxml_names_each_check_and_its_level(tmp_path: Path) -> None:
    """pytest's own --junitxml carries the check ID and level beside the suite's junit.xml."""
    own = tmp_path / "pytest-junit.xml"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "conformance.suite", "--only", "AUTH-001",
         "-q", "-p", "no:cacheprovider", "--report-dir", str(tmp_path / "reports"),
         f"--junitxml={own}"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (case,) = ET.parse(own).getroot().iter("testcase")
    assert case.get("name") == "AUTH-001 authorize_returns_the_token_pair"
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties == {"paysuite.check_id": "AUTH-001", "paysuite.level": "MUST"}
    suite = ET.parse(tmp_path / "reports" / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "1"


def test_the_flags_are_declared_once_for_both_spellings() -> None:
    """``paysuite conform`` and the pytest plugin read one table; pytest's spelling of --strict
    works for ``paysuite conform`` too."""
    import argparse

    from conformance.cli import register
    from conformance.options import FLAGS, Options

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    for spelling in ("--strict", "--conformance-strict"):
        args = parser.parse_args(["conform", spelling, "--seed", "7", "--read-timeout", "5"])
        options = Options.from_args(args)
        assert (options.strict, options.seed, options.limits.read_s) == (True, 7, 5.0)
    declared: list[str] = []

    class Group:
        def addoption(self, *names: str, **kwargs: object) -> None:
            declared.extend(names)

    class Parser:
        def getgroup(self, name: str, description: str = "") -> Group:
            return Group()

    from conformance.plugin import pytest_addoption

    pytest_addoption(Parser())  # type: ignore[arg-type]
    expected = [flag.pytest_name or flag.name for flag in FLAGS if not flag.cli_only]
    assert declared == expected and "--conformance-strict" in declared
