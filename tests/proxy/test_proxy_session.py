"""``paysuite proxy`` end to end on what a session must survive: a client's mistakes kept apart
from the target's (``--judge``, exit 3), the base URL as a configuration writes it, a session that
never reached the API, and Ctrl-C pressed again while the session settles."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from proxykit import Client, config_file, start_proxy, writer

from paysuite_core.tokens import AUTHORIZE_PATH
from proxy.har import read_session

pytestmark = pytest.mark.slow


def _client_mistakes(client: Client) -> None:
    """A 33-character key, bad JSON, a missing and a string amount: all the client's."""
    url = f"{client.base_url}/transactions/cashin"
    client.create(key="k" * 33)
    client.http.post(url, content=b"{not json", headers=client.headers())
    client.http.post(url, json={"number": "0781234567"}, headers=client.headers())
    client.http.post(url, json={"amount": "100", "number": "0781234567"}, headers=client.headers())
    client.create()  # and one the document allows


@pytest.mark.parametrize(("judge", "status"), [("server", 0), ("client", 3), ("both", 3)])
def test_the_clients_mistakes_are_the_clients(
    make_stub, tmp_path: Path, judge: str, status: int
) -> None:
    stub = make_stub()
    run = start_proxy(stub.root_url, tmp_path / "r", "--judge", judge,
                      config=config_file(stub, tmp_path))  # fmt: skip
    client = Client(run.base_url, writer(stub), run.url)
    _client_mistakes(client)
    client.close()
    assert run.stop() == status, run.output
    check = run.check("PROXY-SCHEMA-REQ")
    assert check["outcome"] == "failed" and check["gating"] is (judge != "server")
    assert "× client PROXY-SCHEMA-REQ" in run.output  # the live line says whose fault
    assert "The client's requests" in run.output  # its own section of the scorecard
    assert {c["id"] for c in run.report["checks"] if c["outcome"] == "failed"} == {
        "PROXY-SCHEMA-REQ"
    }  # the target rejected each: no rule of the target's failed
    html = (tmp_path / "r" / "report.html").read_text("utf-8")
    assert html.count("PROXY-SCHEMA-REQ") >= 4 and "id='client-faults'" in html


def test_a_target_fault_still_exits_1_with_judge_both(make_stub, tmp_path: Path) -> None:
    stub = make_stub(faults=("wrong-kind",))
    run = start_proxy(stub.root_url, tmp_path / "r", "--judge", "both",
                      config=config_file(stub, tmp_path))  # fmt: skip
    client = Client(run.base_url, writer(stub), run.url)
    client.create(key="k" * 33)
    client.create("cashout")
    client.close()
    assert run.stop() == 1, run.output
    assert run.failed() == {"PROXY-SCHEMA-REQ", "TXN-002"}


def test_a_target_given_as_the_configs_base_url_is_not_doubled(make_stub, tmp_path: Path) -> None:
    """--target http://host:port/api (as the configuration writes it) with the client at the
    proxy's /api: forwarded to /api/..., never /api/api/..."""
    stub = make_stub()
    run = start_proxy(stub.base_url, tmp_path / "r", config=config_file(stub, tmp_path))
    client = Client(run.base_url, writer(stub), run.url)
    made = client.create()
    assert made.status_code == 200, made.text
    assert client.find(made.json()["ref"]).status_code == 200
    client.close()
    assert run.stop() == 0, run.output
    urls = [e["url"] for e in run.report["exchanges"]]
    assert urls and all("/api/api/" not in url and "/api/" in url for url in urls), urls


def test_a_session_that_reached_no_route_of_the_api_is_exit_2(make_stub, tmp_path: Path) -> None:
    """A --target whose path is wrong: every exchange answered 404. No PASS for that."""
    stub = make_stub()
    run = start_proxy(stub.root_url + "/apix", tmp_path / "r")
    client = Client(run.base_url, writer(stub), run.url)
    for _ in range(2):
        client.http.post(f"{run.base_url}{AUTHORIZE_PATH}",
                         json={"client_id": "x", "client_secret": "y"})  # fmt: skip
    client.close()
    assert run.stop() == 2, run.output
    assert run.report["verdict"] == "error"
    assert "no exchange reached a route of the API" in run.output


def test_ctrl_c_twice_while_settling_leaves_a_har_and_a_report(make_stub, tmp_path: Path) -> None:
    """The customer confirmed and find still said pending: the end of the session waits for the
    outcome (up to the suite's 30 s). Ctrl-C stops the session, a second one 0.1 s later and a
    SIGTERM hit the settling: exit 130 at once, a complete HAR, and reports that say what was
    not settled."""
    stub = make_stub(faults=("status-stuck-pending",))
    reports = tmp_path / "r"
    run = start_proxy(stub.root_url, reports, config=config_file(stub, tmp_path))
    client = Client(run.base_url, writer(stub), run.url)
    ref = client.create().json()["ref"]
    client.sandbox(ref, "confirm")
    assert client.find(ref).json()["status"] == "pending"
    client.close()
    began = time.monotonic()
    run.process.send_signal(signal.SIGINT)
    time.sleep(0.1)
    run.process.send_signal(signal.SIGINT)  # the worst moment: writing or settling
    time.sleep(0.1)
    run.process.send_signal(signal.SIGTERM)
    try:
        out, _ = run.process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        run.process.kill()
        raise
    assert time.monotonic() - began < 15, out  # the 30 s settling was cut short
    assert run.process.returncode == 130, out
    session = read_session(reports / "session.har")
    assert len(session.exchanges) == 4  # authorize, create, the confirm, find: all of them
    report = json.loads((reports / "conformance.json").read_text("utf-8"))
    assert report["exit_code"] == 130
    assert any("not settled" in e and ref in e for e in report["run_errors"]), report["run_errors"]
    html = (reports / "report.html").read_text("utf-8")
    assert html.rstrip().endswith("</html>") and "not settled" in html
