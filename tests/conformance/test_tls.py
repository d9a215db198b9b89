"""``paysuite conform`` against the stub behind HTTPS (tests/tlsfront.py): a private CA, a gateway
that demands a client certificate, a certificate for another host, an expired one.

With the right options every client of the run (the pre-flight, the checks, the property phase's
token client and schemathesis's generated requests) trusts the same CA and presents the same
certificate; without them the run stops before any check with one line naming the host, the
cause and the option that fixes it (exit 2). The full runs (each pays for a property phase) are
the second tier (``-m slow``); the diagnoses and the report of an ``--insecure`` run are quick.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml
from conformkit import Outcome, fast_config
from tlsfront import Mode, TLSFront

from paysuite.cli import main
from paysuite_core.launcher import RunningStub
from paysuite_core.tls import CA_BUNDLE_VARIABLES, TLSSettings

#: A handful of scripted checks and the property phase (PROP-001 pays for the whole engine run).
FEW_CHECKS = "AUTH-001,TXN-001,FMT-001,PROP-001"

Front = Callable[[Mode], TLSFront]


@pytest.fixture(autouse=True)
def _no_ca_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own SSL_CERT_FILE / REQUESTS_CA_BUNDLE must not decide a test."""
    for name in CA_BUNDLE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def front(module_stub: RunningStub, tmp_path: Path) -> Iterator[Front]:
    """Start a TLS front of the given mode before the module's stub; all stopped at the end."""
    port = int(module_stub.root_url.rsplit(":", 1)[1])
    with ExitStack() as stack:

        def start(mode: Mode) -> TLSFront:
            return stack.enter_context(TLSFront(port, mode, tmp_path / mode))

        yield start


@pytest.fixture
def target_file(module_stub: RunningStub, tmp_path: Path) -> Path:
    """The stub's credentials file (its base_url the stub's own: ``--target`` names the front)."""
    return fast_config(module_stub, tmp_path)


def conform(capsys: pytest.CaptureFixture[str], report_dir: Path, *args: str | Path) -> Outcome:
    """``paysuite conform ARGS`` in this process, through the real command line."""
    capsys.readouterr()
    status = main(["conform", "--report-dir", str(report_dir), *map(str, args)])
    captured = capsys.readouterr()
    return Outcome(status, report_dir, captured.out, captured.err)


def assert_one_line(outcome: Outcome, *fragments: str) -> str:
    """Exit 2 and one line on stderr holding every fragment; no traceback anywhere."""
    assert outcome.status == 2, outcome.stdout[-2000:] + outcome.stderr
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, outcome.stderr
    assert "Traceback" not in outcome.stdout + outcome.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# --- without the right option: one line, exit 2, the reports say why ----------------------
DIAGNOSES: dict[Mode, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # mode: (the options given, what the line must say)
    "private-ca": ((), ("CA that is not trusted", "--ca-bundle")),
    "mtls": (("--ca-bundle", "CA"), ("requires a client certificate", "--client-cert")),
    "wrong-host": (("--ca-bundle", "CA"), ("not for this", "--insecure")),
    "expired": (("--ca-bundle", "CA"), ("has expired",)),
}


@pytest.mark.parametrize("mode", list(DIAGNOSES))
def test_a_certificate_problem_is_one_line_naming_host_cause_and_fix(
    mode: Mode,
    front: Front,
    target_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tls = front(mode)
    given, said = DIAGNOSES[mode]
    options = [str(tls.ca_pem) if value == "CA" else value for value in given]
    outcome = conform(
        capsys, tmp_path / "reports", "--config", target_file, "--target", tls.base_url, *options
    )
    line = assert_one_line(
        outcome, f"cannot reach the target {tls.base_url}: TLS: 127.0.0.1:{tls.port}: ", *said
    )
    if mode == "wrong-host":
        assert "not for this host name" in line or "not for this IP address" in line
    report = outcome.report  # a CI's report step shows why nothing ran
    assert (report["verdict"], report["exit_code"]) == ("error", 2)
    assert any("TLS: 127.0.0.1" in error for error in report["run_errors"])


def test_a_missing_ca_bundle_file_is_one_line(
    target_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-ca.pem"
    outcome = conform(capsys, tmp_path / "reports", "--config", target_file, "--ca-bundle", missing)
    assert_one_line(outcome, "--ca-bundle: no such file", str(missing))


def test_a_missing_file_of_the_tls_section_is_one_line(
    target_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load(target_file.read_text(encoding="utf-8"))
    data["tls"] = {"ca_bundle": "absent-ca.pem"}
    target_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    outcome = conform(capsys, tmp_path / "reports", "--config", target_file)
    assert_one_line(outcome, "tls.ca_bundle: no such file", str(tmp_path / "absent-ca.pem"))


def test_a_client_key_without_its_certificate_is_one_line(
    target_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "key.pem"
    key.write_text("not used\n", encoding="utf-8")
    outcome = conform(capsys, tmp_path / "reports", "--config", target_file, "--client-key", key)
    assert_one_line(outcome, "--client-key needs --client-cert")


# --- --insecure: the run passes and every report says so -----------------------------------
def test_insecure_passes_a_wrong_host_and_says_so_everywhere(
    front: Front, target_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tls = front("wrong-host")
    reports = tmp_path / "reports"
    outcome = conform(
        capsys,
        reports,
        "--config", target_file, "--target", tls.base_url, "--insecure", "--only", "AUTH-001",
    )  # fmt: skip
    assert outcome.status == 0, outcome.stdout[-2000:] + outcome.stderr
    verdict_line = outcome.stdout.strip().splitlines()[-1]
    assert verdict_line.startswith("VERDICT: PASS") and "INSECURE" in verdict_line
    assert outcome.report["tls"].startswith("INSECURE")
    suite = ET.parse(reports / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert str(properties.get("paysuite.tls", "")).startswith("INSECURE")
    page = (reports / "report.html").read_text(encoding="utf-8")
    assert "class='tls-insecure'" in page and "INSECURE" in page


def test_a_verified_run_says_how_and_an_http_one_says_nothing() -> None:
    """The verdict line names TLS only when it was not verified; the reports say which CA."""
    from paysuite_core.report_engine.reports import to_json, verdict_line
    from paysuite_core.results.verdict import Coverage, Verdict, shown_tls

    def verdict(tls: TLSSettings | None) -> Verdict:
        return Verdict("pass", 0, "seed", False, Coverage(1, 1), reason="all ran", tls=tls)

    verified = TLSSettings(ca_bundle="/etc/ca.pem")
    insecure = TLSSettings(insecure=True)
    assert shown_tls("https://gw.example/api", verified) == verified
    assert shown_tls("http://127.0.0.1:8080/api", verified) is None
    assert shown_tls("http://127.0.0.1:8080/api", insecure) == insecure
    assert "TLS" not in verdict_line(verdict(verified), [])
    assert "INSECURE" in verdict_line(verdict(insecure), [])
    common: dict[str, Any] = {"target": "t", "started_at": "", "duration_s": 0.0}
    said = to_json([], verdict=verdict(verified), **common)["tls"]
    assert said == "TLS verified against CA bundle /etc/ca.pem"
    assert to_json([], verdict=verdict(None), **common)["tls"] == "plain HTTP (no TLS)"


# --- the options: declared once, resolved once -----------------------------------------------
def test_the_flags_reach_the_options_and_the_flags_win(tmp_path: Path) -> None:
    import argparse

    import trustme

    from conformance.cli import register
    from conformance.options import FLAGS, Options
    from conformance.preflight import resolve_tls
    from paysuite_core.target_config import load_target_config

    assert {"--ca-bundle", "--client-cert", "--client-key", "--insecure"} <= {
        flag.name for flag in FLAGS if not flag.cli_only
    }  # so the pytest plugin takes them too
    flag_ca, file_ca, env_ca = (tmp_path / f"{name}.pem" for name in ("flag", "file", "env"))
    for path in (flag_ca, file_ca, env_ca):
        path.write_text(trustme.CA().cert_pem.bytes().decode(), encoding="utf-8")
    config_path = tmp_path / "target.yaml"
    config_path.write_text(
        yaml.safe_dump(
            {
                "base_url": "https://127.0.0.1:9/api",
                "applications": [{"client_id": "a", "client_secret": "b", "merchant": "A"}],
                "customer": {"driver": "none"},
                "tls": {"ca_bundle": "file.pem"},
            }
        ),
        encoding="utf-8",
    )
    config = load_target_config(config_path)
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    given = Options.from_args(parser.parse_args(["conform", "--ca-bundle", str(flag_ca)]))
    assert resolve_tls(given, config).ca_bundle == str(flag_ca)
    bare = Options.from_args(parser.parse_args(["conform"]))
    assert resolve_tls(bare, config).ca_bundle == str(file_ca)
    insecure = Options.from_args(parser.parse_args(["conform", "--insecure"]))
    assert resolve_tls(insecure, config).insecure


def test_schemathesis_requests_trust_the_run_ca_given_by_ssl_cert_file_alone(
    front: Front, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The property phase's generated requests go through requests, which reads
    REQUESTS_CA_BUNDLE only: with SSL_CERT_FILE alone they failed ("SSL verification problem")
    until the run's bundle was given to schemathesis's own configuration."""
    import schemathesis

    from conformance.schemathesis_adapter import build_config
    from paysuite_core.specfile import load_spec

    tls = front("private-ca")
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_pem))
    settings = TLSSettings.resolve()
    config = build_config(1, "seed", tls.base_url, tls=settings)
    schema = schemathesis.openapi.from_dict(load_spec(), config=config)
    operation = schema["/events/transactions"]["GET"]
    answer = operation.Case().call()  # no token: the stub's 401, through the front
    assert answer.status_code == 401
    project = config.projects.get_default()
    assert project.tls_verify == str(tls.ca_pem)


def test_schemathesis_presents_the_client_certificate(front: Front) -> None:
    from conformance.schemathesis_adapter import build_config

    tls = front("mtls")
    assert tls.client_cert is not None and tls.client_key is not None
    settings = TLSSettings.resolve(
        ca_bundle=str(tls.ca_pem), client_cert=str(tls.client_cert), client_key=str(tls.client_key)
    )
    project = build_config(1, "seed", tls.base_url, tls=settings).projects.get_default()
    assert project.request_cert_for() == (str(tls.client_cert), str(tls.client_key))
    insecure = build_config(1, "seed", tls.base_url, tls=TLSSettings(insecure=True))
    assert insecure.projects.get_default().tls_verify is False


# --- with the right options: the run passes, the property phase included (second tier) ------
def _passed(outcome: Outcome, *check_ids: str) -> None:
    assert outcome.status == 0, outcome.stdout[-3000:] + outcome.stderr
    assert outcome.report["verdict"] == "pass"
    for check_id in check_ids:
        assert outcome.check(check_id)["outcome"] == "passed", outcome.check(check_id)


@pytest.mark.slow
def test_private_ca_with_ca_bundle_passes_the_whole_seed_profile(
    front: Front, target_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tls = front("private-ca")
    outcome = conform(
        capsys,
        tmp_path / "reports",
        "--config", target_file, "--target", tls.base_url, "--ca-bundle", tls.ca_pem,
    )  # fmt: skip
    props = [c["id"] for c in outcome.report["checks"] if c["id"].startswith("PROP-")]
    assert props, "the property phase must be part of the run"
    _passed(outcome, *props)
    assert outcome.report["tls"] == f"TLS verified against CA bundle {tls.ca_pem}"
    assert "INSECURE" not in outcome.stdout


@pytest.mark.slow
@pytest.mark.parametrize("source", ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "tls-section"])
def test_private_ca_from_the_environment_or_the_configuration(
    source: str,
    front: Front,
    target_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tls = front("private-ca")
    config = target_file
    if source == "tls-section":  # a path relative to the configuration file
        data = yaml.safe_load(target_file.read_text(encoding="utf-8"))
        data["tls"] = {"ca_bundle": tls.ca_pem.name}
        config = tls.ca_pem.parent / "target.yaml"
        config.write_text(yaml.safe_dump(data), encoding="utf-8")
    else:
        monkeypatch.setenv(source, str(tls.ca_pem))
    outcome = conform(
        capsys,
        tmp_path / "reports",
        "--config", config, "--target", tls.base_url, "--only", FEW_CHECKS,
    )  # fmt: skip
    _passed(outcome, *FEW_CHECKS.split(","))
    assert outcome.report["tls"] == f"TLS verified against CA bundle {tls.ca_pem}"


@pytest.mark.slow
def test_mutual_tls_passes_with_the_client_certificate(
    front: Front, target_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tls = front("mtls")
    assert tls.client_cert is not None and tls.client_key is not None
    outcome = conform(
        capsys,
        tmp_path / "reports",
        "--config", target_file, "--target", tls.base_url, "--only", FEW_CHECKS,
        "--ca-bundle", tls.ca_pem, "--client-cert", tls.client_cert,
        "--client-key", tls.client_key,
    )  # fmt: skip
    _passed(outcome, *FEW_CHECKS.split(","))
    assert f"client certificate {tls.client_cert}" in outcome.report["tls"]
