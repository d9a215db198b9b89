"""``paysuite clients`` against the stub behind an HTTPS front (tests/tlsfront.py): both SDK
drivers (paypack-py through requests, paypack-js through node's https.Agent) trust what
``--ca-bundle`` says and present the client certificate; without them the pre-flight's one line
and exit 2; ``--insecure`` said in the verdict line, clients.json and clients.html."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from tlsfront import TLSFront

from paysuite.clients.cache import paypack_js
from paysuite.clients.cli import make_job
from paysuite.clients.matrix import RUNNERS
from paysuite_core.launcher import RunningStub
from paysuite_core.target_config import load_target_config
from paysuite_core.tls import TLSSettings

#: One worker runs the SDK tests: they share the SDK cache (an npm install) and one stub.
pytestmark = pytest.mark.xdist_group("sdk-clients")
INSECURE = "INSECURE: TLS certificates not verified (--insecure)"


@pytest.fixture
def front(
    request: pytest.FixtureRequest, short_stub: RunningStub, tmp_path: Path
) -> Iterator[TLSFront]:
    port = int(short_stub.root_url.rsplit(":", 1)[1])
    with TLSFront(port, request.param, tmp_path / "tls") as running:
        yield running


def _config(stub: RunningStub, front: TLSFront, directory: Path) -> Path:
    """The stub's credentials with the front's base URL."""
    data = yaml.safe_load(stub.credentials_path.read_text(encoding="utf-8"))
    data["base_url"] = front.base_url
    path = directory / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _clients(
    config: Path, sdk: str, tmp_path: Path, cache_dir: Path, *flags: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "paysuite", "clients", "--config", str(config), "--sdk", sdk,
         "--cache-dir", str(cache_dir), "--report-dir", str(tmp_path / "reports"), *flags],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def _needs(sdk: str, cache_dir: Path) -> None:
    if sdk == "paypack-js":
        installed = paypack_js(cache_dir)
        if installed.skip:
            pytest.skip(f"paypack-js unavailable: {installed.skip}")


@pytest.mark.slow
@pytest.mark.parametrize("sdk", ["paypack-py", "paypack-js"])
@pytest.mark.parametrize("front", ["private-ca", "mtls"], indirect=True)
def test_both_sdks_pass_over_tls_with_the_ca_bundle_and_client_certificate(
    front: TLSFront, sdk: str, short_stub: RunningStub, tmp_path: Path, cache_dir: Path
) -> None:
    _needs(sdk, cache_dir)
    done = _clients(_config(short_stub, front, tmp_path), sdk, tmp_path, cache_dir, *front.flags())
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "reports" / "clients.json").read_text("utf-8"))
    [column] = report["sdks"]
    assert column["sdk"] == sdk and not column["skip"] and not column["failure"]
    outcomes = {op: cell["outcome"] for op, cell in column["cells"].items()}
    assert set(outcomes.values()) <= {"ok", "n/a"} and outcomes["cashin"] == "ok", outcomes
    assert report["tls"].startswith(f"TLS verified against CA bundle {front.ca_pem}")


@pytest.mark.parametrize(
    ("front", "given", "line"),
    [
        ("private-ca", False, "its certificate comes from a CA that is not trusted"),
        ("mtls", True, "the server requires a client certificate: give it with --client-cert"),
    ],
    indirect=["front"],
)
def test_without_the_options_the_pre_flight_says_why_in_one_line(
    front: TLSFront, given: bool, line: str, short_stub: RunningStub, tmp_path: Path,
    cache_dir: Path,
) -> None:  # fmt: skip
    flags = ["--ca-bundle", str(front.ca_pem)] if given else []
    config = _config(short_stub, front, tmp_path)
    done = _clients(config, "paypack-py", tmp_path, cache_dir, *flags)
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stderr.strip()
    assert len(said.splitlines()) == 1 and line in said, said
    assert said.startswith(f"paysuite clients: cannot reach the target {front.base_url}: TLS: ")


@pytest.mark.slow
@pytest.mark.parametrize("sdk", ["paypack-py", "paypack-js"])
@pytest.mark.parametrize("front", ["wrong-host"], indirect=True)
def test_insecure_passes_a_wrong_host_and_says_so(
    front: TLSFront, sdk: str, short_stub: RunningStub, tmp_path: Path, cache_dir: Path
) -> None:
    _needs(sdk, cache_dir)
    done = _clients(_config(short_stub, front, tmp_path), sdk, tmp_path, cache_dir, "--insecure")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().splitlines()[-1].endswith(f"; {INSECURE}")
    report = json.loads((tmp_path / "reports" / "clients.json").read_text("utf-8"))
    assert report["tls"] == INSECURE
    assert INSECURE in (tmp_path / "reports" / "clients.html").read_text("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("sdk", ["paypack-py", "paypack-js"])
@pytest.mark.parametrize("front", ["mtls"], indirect=True)
def test_each_driver_takes_its_tls_from_the_job_alone(
    front: TLSFront, sdk: str, short_stub: RunningStub, tmp_path: Path, cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Past the pre-flight, a driver given no client certificate gets no answer: the settings
    reach the SDK's own client through the job (requests' adapter, node's https.Agent), not
    through anything the driver finds by itself (a stray variable is not read)."""
    _needs(sdk, cache_dir)
    monkeypatch.setenv("PAYSUITE_CLIENT_CERT", str(front.client_cert))  # not the job's: ignored
    monkeypatch.setenv("PAYSUITE_CLIENT_KEY", str(front.client_key))
    config = load_target_config(_config(short_stub, front, tmp_path))
    job = make_job(config)
    trusted = TLSSettings(ca_bundle=str(front.ca_pem))
    refused = RUNNERS[sdk]({**job, "tls": trusted.to_dict()}, cache_dir, None)
    assert refused.cells["authorize"]["outcome"] == "error", refused.cells["authorize"]
    assert "certificate" in refused.cells["authorize"]["detail"].lower(), refused.cells[
        "authorize"
    ]["detail"]
    whole = replace(trusted, client_cert=str(front.client_cert), client_key=str(front.client_key))
    passed = RUNNERS[sdk]({**job, "tls": whole.to_dict()}, cache_dir, None)
    assert passed.cells["authorize"]["outcome"] == "ok", passed.cells["authorize"]
