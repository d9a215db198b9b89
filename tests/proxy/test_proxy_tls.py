"""``paysuite proxy`` and ``paysuite replay`` toward the stub behind an HTTPS front
(tests/tlsfront.py): the upstream connection, the judge's own confirmations and the replay's
client trust what ``--ca-bundle`` says and present the client certificate; without them one line
naming the host, the cause and the option, exit 2; ``--insecure`` said in the verdict line and
the reports."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from proxykit import ROOT, Client, config_file, start_proxy, writer
from tlsfront import TLSFront

from paysuite.cli import main
from paysuite_core.launcher import RunningStub, start_stub, stop_stub

INSECURE = "INSECURE: TLS certificates not verified (--insecure)"


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    running = start_stub(tmp_path_factory.mktemp("stub"), startup_timeout_s=60)
    try:
        yield running
    finally:
        stop_stub(running)


@pytest.fixture
def front(request: pytest.FixtureRequest, stub: RunningStub, tmp_path: Path) -> Iterator[TLSFront]:
    port = int(stub.root_url.rsplit(":", 1)[1])
    with TLSFront(port, request.param, tmp_path / "tls") as running:
        yield running


def _through(front: TLSFront, stub: RunningStub, tmp_path: Path, *flags: str) -> tuple[int, str]:
    """A reused key's session (4 exchanges) through the proxy in front of ``front``, the judge
    confirming over the same TLS (the configuration's base URL is the front's)."""
    config = config_file(stub, tmp_path, base_url=front.base_url)
    run = start_proxy(front.origin, tmp_path / "reports", *flags, config=config)
    client = Client(run.base_url, writer(stub), run.url)
    try:
        key = f"order-{uuid.uuid4().hex[:12]}"
        made = client.create(key=key)
        assert made.status_code == 200, made.text
        client.create(key=key)
        assert client.find(made.json()["ref"]).status_code == 200
    finally:
        client.close()
        status = run.stop()
    return status, run.output


@pytest.mark.parametrize("front", ["private-ca", "mtls"], indirect=True)
def test_the_proxy_forwards_over_tls_with_the_ca_bundle_and_client_certificate(
    front: TLSFront, stub: RunningStub, tmp_path: Path
) -> None:
    status, output = _through(front, stub, tmp_path, *front.flags())
    assert status == 0, output
    report = json.loads((tmp_path / "reports" / "conformance.json").read_text("utf-8"))
    assert [row["verdict"] for row in report["exchanges"]] == ["pass"] * 4
    assert report["tls"].startswith(f"TLS verified against CA bundle {front.ca_pem}")
    assert INSECURE not in output


@pytest.mark.parametrize(
    ("front", "given", "line"),
    [
        ("private-ca", False, "its certificate comes from a CA that is not trusted"),
        ("mtls", True, "the server requires a client certificate: give it with --client-cert"),
        ("expired", True, "its certificate has expired: renew the certificate, or --insecure"),
    ],
    indirect=["front"],
)
def test_the_proxy_says_a_certificate_problem_in_one_line_before_it_listens(
    front: TLSFront, tmp_path: Path, given: bool, line: str
) -> None:
    flags = ["--ca-bundle", str(front.ca_pem)] if given else []
    done = subprocess.run(
        [sys.executable, "-m", "paysuite", "proxy", "--target", front.origin, "--listen",
         "127.0.0.1:0", "--report-dir", str(tmp_path), *flags],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stderr.strip()
    assert said.startswith(f"paysuite proxy: TLS: 127.0.0.1:{front.port}: ") and line in said
    assert len(said.splitlines()) == 1 and "listening" not in done.stdout


@pytest.mark.parametrize("front", ["wrong-host"], indirect=True)
def test_the_proxy_with_insecure_passes_a_wrong_host_and_says_so(
    front: TLSFront, stub: RunningStub, tmp_path: Path
) -> None:
    status, output = _through(front, stub, tmp_path, "--insecure")
    assert status == 0, output
    [verdict] = [line for line in output.splitlines() if line.startswith("VERDICT")]
    assert verdict.endswith(f"; {INSECURE}"), verdict
    report = json.loads((tmp_path / "reports" / "conformance.json").read_text("utf-8"))
    assert report["tls"] == INSECURE
    assert INSECURE in (tmp_path / "reports" / "report.html").read_text("utf-8")


# --- replay ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def recorded(stub: RunningStub, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session recorded through the proxy in front of the plain stub: a reused key, a find."""
    report_dir = tmp_path_factory.mktemp("recorded")
    run = start_proxy(stub.root_url, report_dir, config=stub.credentials_path)
    client = Client(run.base_url, writer(stub), run.url)
    try:
        made = client.create(key="merchant-order-0002")
        client.create(key="merchant-order-0002")
        client.find(made.json()["ref"])
    finally:
        client.close()
        run.stop()
    return report_dir / "session.har"


def _replay(recorded: Path, front: TLSFront, stub: RunningStub, tmp_path: Path, *flags: str) -> int:
    config = config_file(stub, tmp_path, base_url=front.base_url)
    return main(
        ["replay", str(recorded), "--target", front.origin, "--config", str(config),
         "--report-dir", str(tmp_path / "replay"), *flags]
    )  # fmt: skip


@pytest.mark.parametrize("front", ["private-ca", "mtls"], indirect=True)
def test_replay_over_tls_passes_with_the_options_and_says_why_without(
    front: TLSFront, stub: RunningStub, recorded: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert _replay(recorded, front, stub, tmp_path, *front.flags()) == 0
    assert "replayed 4, not replayed 0" in capsys.readouterr().out
    report = json.loads((tmp_path / "replay" / "conformance.json").read_text("utf-8"))
    assert report["tls"].startswith("TLS verified against CA bundle")
    without = ["--ca-bundle", str(front.ca_pem)] if front.client_cert else []
    assert _replay(recorded, front, stub, tmp_path, *without) == 2
    err = capsys.readouterr().err.strip().splitlines()
    cause = "requires a client certificate" if front.client_cert else "not trusted"
    assert (
        err[-1].startswith(f"paysuite replay: TLS: 127.0.0.1:{front.port}: ") and cause in err[-1]
    )


@pytest.mark.parametrize("front", ["wrong-host"], indirect=True)
def test_replay_with_insecure_passes_a_wrong_host_and_says_so(
    front: TLSFront, stub: RunningStub, recorded: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert _replay(recorded, front, stub, tmp_path, "--ca-bundle", str(front.ca_pem)) == 2
    assert "its certificate is not for this" in capsys.readouterr().err
    assert _replay(recorded, front, stub, tmp_path, "--insecure") == 0
    captured = capsys.readouterr()
    assert INSECURE in captured.err
    [verdict] = [line for line in captured.out.splitlines() if line.startswith("VERDICT")]
    assert verdict.endswith(f"; {INSECURE}")
    report = json.loads((tmp_path / "replay" / "conformance.json").read_text("utf-8"))
    assert report["tls"] == INSECURE
