"""``paysuite load`` against the stub behind an HTTPS front (tests/tlsfront.py): the pre-check,
the users and the reconciliation trust what ``--ca-bundle`` says and present the client
certificate; without them the pre-check's one line and exit 2; ``--insecure`` said in the
verdict line, load.json and load.html."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest
from loadkit import LoadRun, run_load
from tlsfront import TLSFront

from load.plan import UsageError, build_plan, read_plan, write_plan
from paysuite_core.launcher import RunningStub
from paysuite_core.tls import TLSSettings

#: a short bounded run: a few users, a few seconds, loopback. The smoke shape asks every
#: operation for one completed request: with 4 s and 2 users a busy runner once ended the run with
#: the rarest one (events?filter) still in flight, so 3 users for 6 s.
SHORT = ("--duration", "6", "--users", "3", "--spawn-rate", "3")


@pytest.fixture
def front(
    request: pytest.FixtureRequest, load_stub: RunningStub, tmp_path: Path
) -> Iterator[TLSFront]:
    port = int(load_stub.root_url.rsplit(":", 1)[1])
    with TLSFront(port, request.param, tmp_path / "tls") as running:
        yield running


def _load(front: TLSFront, stub: RunningStub, report_dir: Path, *flags: str) -> LoadRun:
    config = ("--config", str(stub.credentials_path), "--target", front.base_url)
    return run_load(report_dir, *config, *flags, *SHORT, timeout=180)


def _output(run: LoadRun) -> str:
    return run.stdout[-3000:] + run.stderr[-3000:]


@pytest.mark.parametrize(
    ("front", "given", "line"),
    [
        ("private-ca", (), "its certificate comes from a CA that is not trusted"),
        ("mtls", ("ca",), "the server requires a client certificate: give it with --client-cert"),
        ("wrong-host", ("ca",), "its certificate is not for this"),
        ("expired", ("ca",), "its certificate has expired"),
    ],
    indirect=["front"],
)
def test_a_certificate_problem_is_the_pre_checks_one_line_and_exit_2(
    front: TLSFront, load_stub: RunningStub, tmp_path: Path, given: tuple[str, ...], line: str
) -> None:
    flags = ("--ca-bundle", str(front.ca_pem)) if given else ()
    run = _load(front, load_stub, tmp_path, *flags)
    assert run.returncode == 2, _output(run)
    host = f"127.0.0.1:{front.port}"
    [said] = [text for text in run.stderr.splitlines() if text.startswith("paysuite load:")]
    assert said.startswith(f"paysuite load: TLS: {host}: ") and line in said, said
    assert "Traceback" not in run.stderr
    summary = run.summary()
    assert summary["verdict"] == "error" and summary["no_load"] is True
    assert summary["reason"].startswith(f"TLS: {host}: ")
    assert summary["total"]["requests"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("front", ["private-ca", "mtls"], indirect=True)
def test_the_run_passes_with_the_ca_bundle_and_the_client_certificate(
    front: TLSFront, load_stub: RunningStub, tmp_path: Path
) -> None:
    flags = front.flags()
    run = _load(front, load_stub, tmp_path, *flags)
    assert run.returncode == 0, _output(run)
    summary = run.summary()
    assert summary["total"]["requests"] > 0 and summary["total"]["failures"] == 0
    recon = summary["reconciliation"]
    assert recon["checked"] > 0 and recon["found"] == recon["checked"] and recon["passed"]
    assert summary["tls"].startswith(f"TLS verified against CA bundle {front.ca_pem}")
    assert ("client certificate" in summary["tls"]) == (front.client_cert is not None)
    assert "paysuite: result: PASS (exit 0)\n" in run.stdout + "\n"


@pytest.mark.slow
@pytest.mark.parametrize("front", ["wrong-host"], indirect=True)
def test_insecure_passes_a_wrong_host_and_says_insecure_everywhere(
    front: TLSFront, load_stub: RunningStub, tmp_path: Path
) -> None:
    run = _load(front, load_stub, tmp_path, "--insecure")
    assert run.returncode == 0, _output(run)
    insecure = "INSECURE: TLS certificates not verified (--insecure)"
    assert f"paysuite: result: PASS (exit 0); {insecure}" in run.stdout
    summary = run.summary()
    assert summary["tls"] == insecure and summary["total"]["failures"] == 0
    assert summary["reconciliation"]["passed"] is True
    page = (tmp_path / "load.html").read_text(encoding="utf-8")
    banner = page.split('id="verdict">', 1)[1].split("</div>", 1)[0]
    assert banner.startswith("PASS") and insecure in banner


# --- the plan: resolved once, carried whole to every worker ---------------------------------
def test_the_plan_carries_the_resolved_settings_to_the_workers(
    load_stub: RunningStub, tmp_path: Path
) -> None:
    front = TLSFront(1, "mtls", tmp_path)  # its files only: never started
    args = dict(config=load_stub.credentials_path, target="https://127.0.0.1:9/api")
    settings = TLSSettings(str(front.ca_pem), str(front.client_cert), str(front.client_key))
    plan = build_plan(**args, tls=settings)
    assert read_plan(write_plan(plan)).tls == settings
    assert plan.tls_text.startswith("TLS verified against CA bundle")
    # nothing given: the environment's bundle, resolved in paysuite load, not in each worker
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SSL_CERT_FILE", str(front.ca_pem))
        env.delenv("REQUESTS_CA_BUNDLE", raising=False)
        resolved = build_plan(**args)
    assert resolved.tls == TLSSettings(ca_bundle=str(front.ca_pem))
    assert read_plan(write_plan(resolved)).tls == resolved.tls
    insecure = build_plan(**args, tls=TLSSettings(insecure=True))
    assert insecure.tls_text.startswith("INSECURE")
    plain = build_plan(config=load_stub.credentials_path)
    assert plain.tls_text == "plain HTTP (no TLS)"


def test_an_unreadable_tls_file_is_a_usage_error(load_stub: RunningStub, tmp_path: Path) -> None:
    run = run_load(
        tmp_path, "--config", str(load_stub.credentials_path),
        "--ca-bundle", str(tmp_path / "missing.pem"),
    )  # fmt: skip
    assert run.returncode == 2
    assert (
        run.stderr.strip()
        == f"paysuite load: --ca-bundle: no such file: {tmp_path / 'missing.pem'}"
    )
    flags = argparse.Namespace(client_key=str(load_stub.credentials_path))
    with pytest.raises(UsageError, match="^--client-key needs --client-cert"):
        build_plan(config=load_stub.credentials_path, tls=flags)
