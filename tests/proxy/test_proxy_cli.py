"""``paysuite proxy`` as a command: its exit status (0 clean, 1 violation, 2 usage or no
answer), its stop conditions, and the per-exchange spec rules seen end to end."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from proxykit import (
    ROOT,
    Client,
    config_file,
    start_proxy,
    writer,
)

pytestmark = pytest.mark.slow


def _paysuite(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "paysuite", *args], capture_output=True,
                          text=True, timeout=timeout_s, cwd=ROOT)  # fmt: skip


def _dead_url() -> str:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{closed.getsockname()[1]}"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    remote = _paysuite("proxy", "--target", "http://127.0.0.1:1", "--listen", "0.0.0.0:0")
    assert remote.returncode == 2 and "loopback addresses only" in remote.stderr
    bad = _paysuite("proxy", "--target", "http://127.0.0.1:1", "--max-exchanges", "0")
    assert bad.returncode == 2 and "--max-exchanges" in bad.stderr
    missing = _paysuite("proxy", "--target", "http://127.0.0.1:1", "--config",
                        str(tmp_path / "nope.yaml"))  # fmt: skip
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr
    assert _paysuite("proxy").returncode == 2  # --target is required


def test_an_unreachable_target_exits_2(tmp_path: Path) -> None:
    done = _paysuite("proxy", "--target", _dead_url(), "--listen", "127.0.0.1:0")
    assert done.returncode == 2 and "does not answer" in done.stderr


def test_a_target_that_dies_mid_session_gives_502_and_exit_2(make_stub, tmp_path: Path) -> None:
    from paysuite_core.launcher import stop_stub

    stub = make_stub()
    run = start_proxy(stub.root_url, tmp_path / "reports")
    stop_stub(stub)
    answer = httpx.get(f"{run.base_url}/transactions/find/x", timeout=30)
    assert answer.status_code == 502 and answer.json()["code"] == "proxy_upstream_unreachable"
    assert run.stop() == 2, run.output
    assert run.report["verdict"] == "error"
    assert run.report["exchanges"][0]["error"]


def test_max_exchanges_stops_the_session(make_stub, tmp_path: Path) -> None:
    stub = make_stub()
    run = start_proxy(stub.root_url, tmp_path / "reports", "--max-exchanges", "2")
    for _ in range(2):  # refused for want of a token: judged, and as the document allows
        assert httpx.get(f"{run.url}/api/events/transactions", timeout=30).status_code == 401
    run.process.wait(60)
    assert run.stop() == 0, run.output
    assert len(run.report["exchanges"]) == 2
    for name in ("junit.xml", "conformance.json", "report.html"):
        assert (tmp_path / "reports" / name).is_file()


def test_duration_stops_the_session(make_stub, tmp_path: Path) -> None:
    stub = make_stub()
    done = _paysuite("proxy", "--target", stub.root_url, "--listen", "127.0.0.1:0",
                     "--duration", "1", "--report-dir", str(tmp_path / "r"))  # fmt: skip
    # no traffic at all is no verdict: a client that never reached the proxy must not pass CI
    assert done.returncode == 2, done.stdout + done.stderr
    report = json.loads((tmp_path / "r" / "conformance.json").read_text())
    assert report["exchanges"] == [] and report["verdict"] == "error"
    assert "no exchange of the document's operations was judged" in done.stdout


def test_only_exchanges_outside_the_document_is_no_verdict(make_stub, tmp_path: Path) -> None:
    stub = make_stub()
    run = start_proxy(stub.root_url, tmp_path / "reports", "--max-exchanges", "1")
    assert httpx.get(f"{run.url}/healthz", timeout=30).status_code == 200
    run.process.wait(60)
    assert run.stop() == 2, run.output
    assert run.report["exchanges"][0]["verdict"] == "not judged"


@pytest.mark.parametrize(
    ("listen", "message"),
    [("127.0.0.1:99999", "out of range"), ("TAKEN", "cannot listen on")],
)
def test_an_address_that_cannot_be_bound_is_one_line_and_exit_2(
    make_stub, tmp_path: Path, listen: str, message: str
) -> None:
    stub = make_stub()
    if listen == "TAKEN":
        listen = stub.root_url.removeprefix("http://")  # the stub holds it
    done = _paysuite("proxy", "--target", stub.root_url, "--listen", listen, "--duration", "1",
                     "--report-dir", str(tmp_path / "r"))  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_spec_violations_of_one_exchange(make_stub, tmp_path: Path) -> None:
    """A request the document forbids is the client's violation; an answer that breaks the
    spec's seed view is the target's: each named with its own ID and Expected/Actual."""
    stub = make_stub(faults=("timestamp-format",))
    run = start_proxy(stub.root_url, tmp_path / "reports", config=config_file(stub, tmp_path))
    client = Client(run.base_url, writer(stub), run.url)
    no_number = client.http.post(f"{run.base_url}/transactions/cashin", json={"amount": 100},
                                 headers=client.headers())  # fmt: skip
    assert no_number.status_code == 400
    long_key = client.create(key="k" * 33)
    assert long_key.status_code == 400
    created = client.create()  # created_at without zone or fraction: the fault
    assert created.status_code == 200
    client.close()
    assert run.stop() == 1, run.output
    assert {"PROXY-SCHEMA-REQ", "PROXY-SCHEMA-RESP"} <= run.failed()
    request = run.check("PROXY-SCHEMA-REQ")
    assert "number is missing" in request["message"] and "(and 1 more)" in request["message"]
    response = run.check("PROXY-SCHEMA-RESP")
    assert "created_at" in response["message"], response
    verdicts = {e["seq"]: e["verdict"] for e in run.report["exchanges"]}
    assert list(verdicts.values()).count("fail") == 3
