"""The reports render one verdict: synthetic results through scorecard, JSON, junit and HTML.

Fast (no target, no pytest session): a SHOULD failure that does not gate the run must be a
warning in all four, the verdict and its coverage must be stated everywhere, and a failure's curl
must replay: by environment variable in the safe form, with the real token when revealed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from conformance import catalog, report
from conformance.options import Options
from conformance.preflight import write_setup_reports
from paysuite_core.report_engine import reports
from paysuite_core.results.evidence import Recorded
from paysuite_core.results.masking import Masker
from paysuite_core.results.verdict import CheckResult, Coverage, Verdict
from paysuite_core.tokens import AUTHORIZE_PATH

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ3cml0ZXIiLCJleHAiOjF9." + "S" * 43
REFRESH = "rf-" + "r" * 40
SECRET = "s3cret-of-the-writer"
BASE = "http://127.0.0.1:9/api"
#: The run these exchanges belong to: it learns what authorize issued.
RUN = Masker()


def _token_exchanges() -> list[Recorded]:
    """An authorize that issued TOKEN, then a cashout sent with it (what a check records)."""
    authorize = Recorded.build(
        "POST",
        f"{BASE}{AUTHORIZE_PATH}",
        {"Content-Type": "application/json", "Accept": "application/json"},
        json.dumps({"client_id": "writer-app", "client_secret": SECRET}),
        masker=RUN,
    )
    authorize.record_response(
        200, {}, json.dumps({"access": TOKEN, "refresh": REFRESH, "expires": "900"}), 5.0
    )
    cashout = Recorded.build(
        "POST",
        f"{BASE}/transactions/cashout",
        {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        '{"amount": 1000, "number": "0780000000"}',
        masker=RUN,
    )
    cashout.record_response(200, {}, '{"kind": "CASHIN"}', 12.0)
    return [authorize, cashout]


def _results() -> list[CheckResult]:
    authorize, cashout = _token_exchanges()
    return [
        CheckResult(catalog.get("AUTH-001"), "passed", note="bare token: accepted"),
        CheckResult(
            catalog.get("TXN-002"),
            "failed",
            "the cashout answered kind CASHIN",
            evidence=[cashout.to_dict()],
            expected="kind = CASHOUT",
            actual="kind = CASHIN",
        ),
        CheckResult(
            catalog.get("IDEM-004"),
            "failed",
            "a reused key answered 201",
            evidence=[authorize.to_dict()],
            expected="the replay answers as the first call",
            actual="a second transaction was created",
            gating=False,
        ),
        CheckResult(catalog.get("EVT-008"), "skipped", "reference choice"),
        CheckResult(
            catalog.get("PROP-001"),
            "error",
            "could not check: the target stopped answering",
            evidence=[{"request": {"operation": "GET /x"}, "response": None, "curl": "curl x"}],
            expected="responses match the schema",
            actual="no answer",
        ),
    ]


VERDICT = Verdict(
    verdict="fail",
    exit_code=1,
    profile="seed",
    strict=False,
    coverage=Coverage(run=3, total=4, skipped=(("EVT-008", "reference choice"),), minimum=0.5),
    run_errors=("the target stopped answering during PROP-001: ConnectError",),
    reason="1 MUST check(s) failed: TXN-002",
)


@pytest.fixture
def written(tmp_path: Path) -> dict[str, Any]:
    results = _results()
    paths = reports.write_all(
        results,
        verdict=VERDICT,
        report_dir=tmp_path,
        target=BASE,
        started_at="2026-01-01T00:00:00+00:00",
        duration_s=1.5,
    )
    return {
        "results": results,
        "paths": paths,
        "json": json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8")),
        "junit": ET.parse(tmp_path / "junit.xml").getroot(),
        "junit_text": (tmp_path / "junit.xml").read_text(encoding="utf-8"),
        "html": (tmp_path / "report.html").read_text(encoding="utf-8"),
    }


def test_json_carries_verdict_and_coverage(written: dict[str, Any]) -> None:
    data = written["json"]
    assert (data["verdict"], data["exit_code"], data["profile"], data["strict"]) == (
        "fail",
        1,
        "seed",
        False,
    )
    assert data["reason"] == "1 MUST check(s) failed: TXN-002"
    assert data["coverage"] == {
        "run": 3,
        "total": 4,
        "ratio": 0.75,
        "minimum": 0.5,
        "skipped": [{"id": "EVT-008", "reason": "reference choice"}],
        "applicable": 4,
        "not_applicable": [],
    }
    assert data["summary"] == {
        "passed": 1, "failed": 1, "warnings": 1, "skipped": 1, "not_applicable": 0, "errors": 1
    }  # fmt: skip
    checks = {c["id"]: c for c in data["checks"]}
    expected_keys = {"id", "title", "level", "section", "profile", "quote", "outcome", "gating"}
    expected_keys |= {"severity", "message", "expected", "actual", "note", "evidence"}
    expected_keys |= {"not_applicable"}
    problems = {"TXN-002", "IDEM-004", "PROP-001"}  # these carry their reproduction too
    for c in data["checks"]:
        assert set(c) == expected_keys | ({"reproduce"} if c["id"] in problems else set())
    assert checks["TXN-002"]["reproduce"]["file"] == "reproduce/TXN-002.sh"
    assert (checks["TXN-002"]["expected"], checks["TXN-002"]["actual"]) == (
        "kind = CASHOUT",
        "kind = CASHIN",
    )
    assert checks["AUTH-001"]["note"] == "bare token: accepted"
    assert [checks[i]["severity"] for i in ("AUTH-001", "TXN-002", "EVT-008", "PROP-001")] == [
        "pass",
        "fail",
        "skip",
        "error",
    ]


def test_non_gating_should_failure_is_a_warning_everywhere(written: dict[str, Any]) -> None:
    card = reports.scorecard(written["results"], VERDICT)
    line = next(x for x in card.splitlines() if "IDEM-004" in x)
    assert line.lstrip().startswith("⚠") and "warning" in line and "failed" not in line
    idem = next(c for c in written["json"]["checks"] if c["id"] == "IDEM-004")
    assert (idem["outcome"], idem["gating"], idem["severity"]) == ("failed", False, "warning")
    suite = written["junit"].find("testsuite")
    assert suite is not None and suite.get("failures") == "1"  # TXN-002 only
    case = next(c for c in suite.findall("testcase") if c.get("name", "").startswith("IDEM-004"))
    assert case.find("failure") is None and case.find("error") is None
    assert (case.findtext("system-out") or "").startswith("WARNING: a reused key")
    prop = case.find("properties/property[@name='paysuite.outcome']")
    assert prop is not None and prop.get("value") == "warning"
    html = written["html"]
    assert "<tr class='row-warning'><td class='id'><a href='#IDEM-004'>" in html
    assert "<h2>Warnings</h2>" in html and "class='check check-warning' id='IDEM-004'" in html


def test_expected_and_actual_are_shown(written: dict[str, Any]) -> None:
    card = reports.scorecard(written["results"], VERDICT)
    assert "Expected: kind = CASHOUT" in card and "Actual:   kind = CASHIN" in card
    assert "Expected: responses match the schema" in card  # an error too
    html = written["html"]
    assert "<dt>Expected</dt><dd>kind = CASHOUT</dd><dt>Actual</dt><dd>kind = CASHIN</dd>" in html
    assert "Expected: kind = CASHOUT\nActual: kind = CASHIN" in written["junit_text"]


def test_run_errors_are_shown(written: dict[str, Any]) -> None:
    error = VERDICT.run_errors[0]
    assert error in reports.scorecard(written["results"], VERDICT)
    assert written["json"]["run_errors"] == [error]
    banner = written["html"].split("<h2 id='scorecard'>Scorecard</h2>")[0]
    assert "Run errors" in banner and error in banner
    suite = written["junit"].find("testsuite")
    assert suite is not None and suite.get("errors") == "2"  # PROP-001 and the run
    run = next(c for c in suite.findall("testcase") if c.get("name") == "run")
    node = run.find("error")
    assert node is not None and error in (node.text or "")


def test_terminal_ends_with_the_verdict_line(written: dict[str, Any]) -> None:
    results = written["results"]
    line = reports.verdict_line(VERDICT, results)
    assert line == (
        "VERDICT: FAIL — 1 MUST check(s) failed: TXN-002; 1 warning; 1 run error; "
        "coverage 3/4 (75%, minimum 50%) — exit 1"
    )
    card = reports.scorecard(results, VERDICT)
    assert card.splitlines()[-1] == line
    assert "      · bare token: accepted" in card  # a pass's observation
    colored = reports.scorecard(results, VERDICT, color=True, with_verdict=False)
    assert "\x1b[2m      · bare token: accepted\x1b[0m" in colored
    assert not colored.splitlines()[-1].startswith("VERDICT")


def test_html_opens_with_the_verdict_banner(written: dict[str, Any]) -> None:
    html = written["html"]
    assert "<script" not in html and "http" not in html.split("<body>")[0]
    banner = html.index("<div class='banner verdict-fail' id='verdict'>")
    assert banner < html.index("<table")
    head = html[banner : html.index("<table")]
    assert "FAIL" in head and "1 MUST check(s) failed: TXN-002" in head
    assert "coverage 3/4 (75%, minimum 50%)" in head and "profile <b>seed</b>" in head
    assert "not strict" in head and "1 warning" in head
    passing = Verdict("pass", 0, "reference", True, Coverage(4, 4, ()), reason="all ran")
    page = reports.to_html([], verdict=passing, target=BASE, started_at="", duration_s=0.0)
    assert "banner verdict-pass" in page and "profile <b>reference</b>" in page


def test_safe_curl_names_the_token_by_variable(written: dict[str, Any]) -> None:
    for text in (json.dumps(written["json"]), written["html"], written["junit_text"]):
        assert TOKEN not in text and SECRET not in text and REFRESH not in text
    txn = next(c for c in written["json"]["checks"] if c["id"] == "TXN-002")
    item = txn["evidence"][0]
    assert '-H "Authorization: Bearer $PAYSUITE_TOKEN_WRITER_APP"' in item["curl"]
    assert item["env"] == {"PAYSUITE_TOKEN_WRITER_APP": "writer-app"} and "note" not in item
    assert item["request"]["headers"]["Authorization"].startswith("Bearer eyJhbGciOiJI…")
    idem = next(c for c in written["json"]["checks"] if c["id"] == "IDEM-004")
    authorize = idem["evidence"][0]
    assert '"client_secret": "\'"$PAYSUITE_CLIENT_SECRET_WRITER_APP"\'"}' in authorize["curl"]
    assert "s3cr…" in authorize["request"]["body"]  # masked in the displayed body
    assert "…" in authorize["response"]["body"]  # the issued pair is shortened too
    exports = written["json"]["replay"]["exports"]
    assert any(line.startswith("export PAYSUITE_TOKEN_WRITER_APP=$(curl") for line in exports)
    assert any('"client_id":"writer-app"' in line for line in exports)
    assert "export PAYSUITE_TOKEN_WRITER_APP=$(curl" in written["html"]
    # The schemathesis item passes through as given.
    prop = next(c for c in written["json"]["checks"] if c["id"] == "PROP-001")
    assert prop["evidence"] == [
        {"request": {"operation": "GET /x"}, "response": None, "curl": "curl x"}
    ]


def _argv(curl: str, env: dict[str, str]) -> list[str]:
    """The arguments a shell would pass to curl (printf stands in for curl)."""
    command = "printf '%s\\0' " + curl.removeprefix("curl ")
    out = subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, check=True
    ).stdout
    return out.split("\0")[:-1]


def test_safe_curl_replays_once_the_variables_are_exported() -> None:
    authorize, cashout = _token_exchanges()
    wrong = Recorded.build(
        "POST",
        f"{BASE}{AUTHORIZE_PATH}",
        {"Content-Type": "application/json"},
        json.dumps({"client_id": "writer-app", "client_secret": SECRET + "x"}),
        masker=RUN,
    )
    env = {
        "PAYSUITE_TOKEN_WRITER_APP": TOKEN,
        "PAYSUITE_CLIENT_SECRET_WRITER_APP": SECRET,
        "PATH": "/usr/bin:/bin",
    }
    assert f"Authorization: Bearer {TOKEN}" in _argv(cashout.curl(), env)
    assert json.loads(_argv(wrong.curl(), env)[-2])["client_secret"] == SECRET + "x"
    # A forgery of an issued token is rebuilt from the variable: the same forgery of a fresh one.
    forged = Recorded.build(
        "GET", f"{BASE}/x", {"Authorization": f"Bearer {TOKEN[:-4]}AAAA"}, None, masker=RUN
    )
    assert "note" not in forged.to_dict() and TOKEN not in forged.curl()
    env["PATH"] = os.environ["PATH"]  # python3 rebuilds it
    assert f"Authorization: Bearer {TOKEN[:-4]}AAAA" in _argv(forged.curl(), env)
    unknown = Recorded.build(
        "GET", f"{BASE}/x", {"Authorization": "Bearer " + "Z" * 60}, None, masker=RUN
    )
    assert "forgery" in unknown.to_dict()["note"]  # says it is not replayed exactly


def test_reveal_secrets_prints_the_real_token(tmp_path: Path) -> None:
    results = _results()
    reports.write_all(
        results,
        verdict=VERDICT,
        report_dir=tmp_path,
        target=BASE,
        started_at="",
        duration_s=0.0,
        reveal_secrets=True,
    )
    data = json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8"))
    txn = next(c for c in data["checks"] if c["id"] == "TXN-002")
    curl = txn["evidence"][0]["curl"]
    assert f"Authorization: Bearer {TOKEN}" in shlex.split(curl)
    assert "$PAYSUITE" not in curl and txn["evidence"][0]["request"]["headers"][
        "Authorization"
    ] == (f"Bearer {TOKEN}")
    idem = next(c for c in data["checks"] if c["id"] == "IDEM-004")
    assert (
        SECRET in idem["evidence"][0]["curl"] and TOKEN in idem["evidence"][0]["response"]["body"]
    )
    assert data["replay"]["reveal_secrets"] is True and data["replay"]["exports"] == []
    assert TOKEN in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert TOKEN in (tmp_path / "junit.xml").read_text(encoding="utf-8")


def test_html_puts_failures_and_errors_first_each_with_its_proof(written: dict[str, Any]) -> None:
    """The failure, then the error, then the warning, each with its curl under it; then the
    scorecard of every check: a failure is never found in the middle of a table."""
    html = written["html"]
    failure = html.index("<section class='check check-fail' id='TXN-002'>")
    error = html.index("<section class='check check-error' id='PROP-001'>")
    warning = html.index("<section class='check check-warning' id='IDEM-004'>")
    scorecard = html.index("<h2 id='scorecard'>Scorecard</h2>")
    assert html.index("id='verdict'") < failure < error < warning < scorecard
    assert html.index("<table") > scorecard  # the table comes after every problem
    proof = html[failure:error]
    assert "<dt>Expected</dt><dd>kind = CASHOUT</dd>" in proof
    assert proof.index("Response</div>") < proof.index("class='curl'")  # its curl under it
    assert "transactions/cashout" in proof[proof.index("class='curl'") :]


def test_sections_are_named_by_the_documents_headings(written: dict[str, Any]) -> None:
    assert reports.heading("Authentication, 1") == "Authentication"
    assert reports.heading("Errors, rule 2") == "Errors"
    assert reports.heading("Endpoints, 2. Cashout") == "Endpoints › 2. Cashout"
    ids = ("AUTH-005", "AUTH-002", "ERR-001")  # Authentication 1 and 2, Errors rule 2
    sections = [catalog.get(cid).section for cid in ids]
    assert sections == ["Authentication, 1", "Authentication, 2", "Errors, rule 2"]
    results = [CheckResult(catalog.get(cid), "passed") for cid in ("AUTH-005", "AUTH-002")]
    card = reports.scorecard(results, VERDICT).splitlines()
    assert card.count("Authentication") == 1  # the rules of one heading under one heading
    assert not any(line.startswith("Authentication, ") for line in card)
    assert "<th class='section' colspan='4'>Authentication</th>" in reports.to_html(
        results, verdict=VERDICT, target=BASE, started_at="", duration_s=0.0
    )
    assert "Authentication, " not in written["html"] and "Errors, rule" not in written["html"]


def test_quiet_terminal_shows_each_problem_with_its_curl(written: dict[str, Any]) -> None:
    text = report.problems(written["results"], target=BASE)
    lines = text.splitlines()
    failure = next(i for i, line in enumerate(lines) if "TXN-002" in line)
    assert lines[failure + 1 : failure + 5] == [
        "      -> the cashout answered kind CASHIN",
        "         Expected: kind = CASHOUT",
        "         Actual:   kind = CASHIN",
        lines[failure + 4],
    ]
    assert lines[failure + 4].startswith("         Reproduce: curl -sS -i -X POST")
    assert "$PAYSUITE_TOKEN_WRITER_APP" in lines[failure + 4] and TOKEN not in text
    assert any("PROP-001" in line and "error" in line for line in lines)
    assert any("IDEM-004" in line and "warning" in line for line in lines)  # one line
    assert any(line.strip().startswith("export PAYSUITE_TOKEN_WRITER_APP=$(curl") for line in lines)
    assert "AUTH-001" not in text  # a pass prints nothing
    assert report.problems([CheckResult(catalog.get("AUTH-001"), "passed")]) == ""


def test_a_preflight_failure_writes_the_three_reports_as_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    why = f"no API at http://127.0.0.1:9/apix (404 on {AUTHORIZE_PATH}): check base_url's path"
    options = Options.parse(target="http://127.0.0.1:9/apix", report_dir=str(tmp_path))
    write_setup_reports(options, why)  # prints "reports: <the paths written>"
    paths = [Path(p) for p in capsys.readouterr().out.split("reports: ")[1].strip().split(", ")]
    assert [p.name for p in paths] == ["junit.xml", "conformance.json", "report.html"]
    data = json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8"))
    assert (data["verdict"], data["exit_code"]) == ("error", 2) and why in data["reason"]
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("errors")) == ("1", "1")
    (case,) = suite.findall("testcase")
    node = case.find("error")
    assert node is not None and why in node.get("message", "")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "banner verdict-error" in page and escape(why) in page
    # what stopped the run and nothing else: no "no failure" under ERROR, no empty scorecard
    assert page.count(escape(why)) == 1, page
    assert "No failure" not in page and "Scorecard" not in page and "<table" not in page
    assert "no check ran" in page


def test_a_not_applicable_check_is_n_a_in_every_report(tmp_path: Path) -> None:
    """One word, ``n/a``, where the configuration cannot meet a check: the scorecard, the quiet
    terminal (which names it with its reason), the totals, conformance.json, junit.xml and
    report.html; ``skipped`` stays the word of a check skipped for another reason."""
    reason = "access_token_ttl_s 900 exceeds max_wait_s 30 and no short_lived_pair is declared"
    results = [
        CheckResult(catalog.get("AUTH-001"), "passed"),
        CheckResult(catalog.get("AUTH-008"), "skipped", reason, not_applicable=True),
        CheckResult(catalog.get("EVT-008"), "skipped", "reference choice"),
    ]
    card = reports.scorecard(results, VERDICT).splitlines()
    (line,) = [x for x in card if "AUTH-008" in x]
    assert " n/a " in line and "skipped" not in line
    assert any("EVT-008" in x and "skipped" in x for x in card)
    quiet = report.problems(results, target=BASE).splitlines()
    assert [x for x in quiet if "AUTH-008" in x and " n/a " in x and x.endswith(reason)]
    assert reports.totals_line(results) == "1 passed, 0 failed, 1 skipped, 1 n/a"
    data = reports.to_json(
        results, verdict=VERDICT, target=BASE, started_at="2026-01-01T00:00:00Z", duration_s=1.0
    )
    checks = {c["id"]: c for c in data["checks"]}
    assert (checks["AUTH-008"]["severity"], checks["EVT-008"]["severity"]) == ("n/a", "skip")
    assert (data["summary"]["not_applicable"], data["summary"]["skipped"]) == (1, 1)
    junit = ET.fromstring(reports.to_junit(results, verdict=VERDICT, duration_s=1.0))
    case = next(c for c in junit.iter("testcase") if "AUTH-008" in (c.get("name") or ""))
    skipped = case.find("skipped")
    assert skipped is not None and skipped.get("message") == f"n/a: {reason}"
    (suite,) = junit.iter("testsuite")
    assert suite.get("skipped") == "2"
    html = reports.to_html(
        results, verdict=VERDICT, target=BASE, started_at="2026-01-01T00:00:00Z", duration_s=1.0
    )
    assert "<td class='out na'>n/a</td>" in html
