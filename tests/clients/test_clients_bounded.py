"""``paysuite clients`` as honest and as bounded as ``paysuite conform``.

Before any SDK runs, conform's pre-flight: a target that is down, not this API, or refuses the
secret is exit 2 and one line. Past it, each driver runs under conform's request limits
(``bounded_http.CONFORM_LIMITS``) and a heap cap: an endless body, a silent target or a trickle
ends within conform's time-outs, with the process tree's memory measured from ``/proc``. What is
written (terminal, clients.json, clients.html) carries no token the SDKs were issued.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time
from argparse import Namespace
from pathlib import Path

import pytest
import yaml
from clientkit import fresh_number, job_for
from hostile import hostile_server, run_bounded, write_config

from paysuite.clients import cache, matrix, paypack_py_driver
from paysuite.clients.cli import write_outputs
from paysuite_core.bounded_http import CONFORM_LIMITS
from paysuite_core.launcher import RunningStub

pytestmark = pytest.mark.xdist_group("sdk-clients")

LIMITS = CONFORM_LIMITS
#: Under this peak (the whole process tree: paysuite clients and its driver) an endless body
#: has been refused; before the limits it took the driver to 24 GB.
PEAK_MB = 300
JWT = re.compile(r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}")


def _command(config: Path, report_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "paysuite", "clients", "--config", str(config),
            "--report-dir", str(report_dir), "--cache-dir", str(cache.default_cache_dir()),
            *args]  # fmt: skip


def _clients(config: Path, report_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _command(config, report_dir, *args),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _assert_one_line_exit_2(
    done: subprocess.CompletedProcess[str], words: str, report_dir: Path
) -> None:
    """Exit 2, one line, and the reports of a stopped run (as conform writes them)."""
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr
    assert lines[0].startswith("paysuite clients: ") and "Traceback" not in done.stderr
    # no matrix of 18 connection errors: where the reports went, nothing else
    assert done.stdout.splitlines() == [
        f"reports: {report_dir / 'clients.json'}, {report_dir / 'clients.html'}"
    ]
    report = json.loads((report_dir / "clients.json").read_text(encoding="utf-8"))
    assert (report["verdict"], report["exit_code"], report["sdks"]) == ("error", 2, [])
    assert report["reason"].startswith("the pre-flight stopped the run before any SDK ran: ")
    assert words in report["reason"]
    page = (report_dir / "clients.html").read_text(encoding="utf-8")
    assert "ERROR" in page and words in html.unescape(page) and "Scorecard" not in page


def test_a_down_target_is_exit_2_and_one_line(tmp_path: Path) -> None:
    path = tmp_path / "down.yaml"
    with hostile_server("hang") as server:
        write_config(server, path)
    # the server is gone: its port refuses connections
    started = time.monotonic()
    done = _clients(path, tmp_path / "r")
    assert time.monotonic() - started < 15
    _assert_one_line_exit_2(done, "cannot reach the target", tmp_path / "r")
    assert "refused" in done.stderr


def test_not_this_api_is_exit_2_and_one_line(tmp_path: Path) -> None:
    with hostile_server("invalid-json") as server:
        done = _clients(write_config(server, tmp_path / "t.yaml"), tmp_path / "r")
    _assert_one_line_exit_2(done, "does not answer like this API", tmp_path / "r")


def test_a_refused_secret_is_exit_2_and_one_line(short_stub: RunningStub, tmp_path: Path) -> None:
    data = yaml.safe_load(short_stub.credentials_path.read_text())
    for app in data["applications"]:
        app["client_secret"] = "not-the-secret-" + app["client_secret"][:4]
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(data))
    done = _clients(path, tmp_path / "r")
    _assert_one_line_exit_2(done, "the target refused application", tmp_path / "r")


def test_a_silent_target_gives_up_within_the_pre_flight(tmp_path: Path) -> None:
    """Silent from the first byte: the pre-flight's reachability probe (conform's) stops it."""
    with hostile_server("hang") as server:
        config = write_config(server, tmp_path / "t.yaml")
        done = run_bounded(_command(config, tmp_path / "r", "--connect-timeout", "2"), 60)
    assert done.returncode == 2, done.output
    assert done.seconds < 2 + 5, done.seconds
    assert "cannot reach the target" in done.output and "Traceback" not in done.output


@pytest.mark.slow
def test_a_silent_target_ends_within_conforms_read_timeout(tmp_path: Path) -> None:
    """conform's own figures (no option): the pre-flight's probe gives up at the connect
    time-out (10 s), within the read time-out (30 s); the driver was held 180 s before."""
    with hostile_server("hang") as server:
        config = write_config(server, tmp_path / "t.yaml")
        done = run_bounded(_command(config, tmp_path / "r"), LIMITS.total_s)
    assert done.returncode == 2, done.output
    assert done.seconds < LIMITS.read_s, done.seconds
    assert "cannot reach the target" in done.output


@pytest.mark.parametrize("sdk", ["paypack-py", "paypack-js"])
def test_silent_after_the_pre_flight_stops_at_the_read_timeout(sdk: str, tmp_path: Path) -> None:
    """Past the pre-flight the target stops answering: the first SDK request waits conform's
    read time-out (2 s here), the rest of the walk is not run, the verdict is an error."""
    if sdk == "paypack-js" and cache.paypack_js(cache.default_cache_dir()).skip:
        pytest.skip("paypack-js is not available here")
    with hostile_server("api-then-hang") as server:
        config = write_config(server, tmp_path / "t.yaml")
        args = ("--sdk", sdk, "--read-timeout", "2")
        done = run_bounded(_command(config, tmp_path / "r", *args), 90)
    assert done.returncode == 2, done.output
    assert done.seconds < 2 + 8, done.seconds
    rows = {line.split("  ")[0]: line for line in done.output.splitlines()}
    assert "ERROR no answer: a read waited 2 s (--read-timeout)" in rows["cashin"]
    assert rows["cashout"].split()[-2:] == ["not", "run"]
    report = json.loads((tmp_path / "r" / "clients.json").read_text())
    assert (report["verdict"], report["exit_code"]) == ("error", 2)


@pytest.mark.parametrize("sdk", ["paypack-py", "paypack-js"])
def test_an_endless_body_is_cut_at_conforms_size_limit(sdk: str, tmp_path: Path) -> None:
    """Past the pre-flight every answer is an endless chunked body: each SDK request stops at
    1 MiB, the run ends well within conform's total time-out, and the tree stays small."""
    if sdk == "paypack-js" and cache.paypack_js(cache.default_cache_dir()).skip:
        pytest.skip("paypack-js is not available here")
    with hostile_server("api-then-endless-chunked") as server:
        config = write_config(server, tmp_path / "t.yaml")
        done = run_bounded(_command(config, tmp_path / "r", "--sdk", sdk), LIMITS.total_s + 30)
    assert done.returncode == 2, done.output
    assert done.seconds < LIMITS.total_s, done.seconds
    assert done.peak_mb < PEAK_MB, done.peak_mb
    limit = f"the target sent a body over the {LIMITS.max_body_bytes}-byte limit"
    rows = {line.split("  ")[0]: line for line in done.output.splitlines()}
    assert f"ERROR {limit}" in rows["cashin"] and f"ERROR {limit}" in rows["me"]
    cells = json.loads((tmp_path / "r" / "clients.json").read_text())["sdks"][0]["cells"]
    assert cells["cashin"]["outcome"] == "error"
    assert limit in cells["cashin"]["exchanges"][-1]["error"]


def test_the_driver_alone_is_bounded_by_an_endless_body(tmp_path: Path) -> None:
    """No pre-flight in front (every answer, authorize's too, is endless): the paypack-py driver
    itself stops each body at the cap; its heap is capped besides."""
    with hostile_server("endless-chunked") as server:
        job = {"base_url": server.base_url, "client_id": "c", "client_secret": "s",
               "number": "0781234567", "amount": 100}  # fmt: skip
        code = (
            "import json, sys; from paysuite.clients import matrix, cache; "
            "column = matrix.run_paypack_py(json.loads(sys.argv[1]), cache.default_cache_dir()); "
            "print(json.dumps({op: c['detail'] for op, c in column.cells.items()}))"
        )
        done = run_bounded([sys.executable, "-c", code, json.dumps(job)], LIMITS.total_s + 30)
    assert done.returncode == 0, done.output
    assert done.seconds < LIMITS.total_s and done.peak_mb < PEAK_MB, (done.seconds, done.peak_mb)
    details = json.loads(done.output.strip().splitlines()[-1])
    assert "over the 1048576-byte limit" in details["authorize"]


def test_the_driver_heap_is_capped(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        matrix._cap_memory(process.pid)
        limits = Path(f"/proc/{process.pid}/limits").read_text()
    finally:
        process.kill()
        process.wait()
    row = next(line for line in limits.splitlines() if line.startswith("Max data size"))
    assert row.split()[3:5] == [str(matrix.DRIVER_MEMORY_BYTES)] * 2, row


def test_a_failed_cell_says_what_was_expected_and_what_came() -> None:
    """The driver's checks, as the ``wrong-kind`` fault trips them (the whole run against that
    stub: test_clients_html_browser.py, slow tier)."""
    answer = {"ref": "r-1", "status": "pending", "amount": 100, "kind": "CASHIN"}
    assert paypack_py_driver._created("CASHOUT")(answer) == ("kind CASHOUT", "CASHIN")
    assert paypack_py_driver._created("CASHIN")(answer) is None
    assert paypack_py_driver._created("CASHIN")({**answer, "status": "success"}) == (
        "status pending",
        "success",
    )
    assert paypack_py_driver._same_ref("r-2")(answer) == ("ref r-2", "ref r-1")
    listed = paypack_py_driver._lists(["r-1", "r-2"])({"transactions": [{"data": answer}]})
    assert listed == ("the 2 created transaction(s) listed", "1 listed, without r-2")
    assert paypack_py_driver._keys("access", "expires")({"access": "a"}) == (
        "access, expires",
        "an object without expires",
    )
    html_page = "<!DOCTYPE html>\n<html>\n" + "<p>x</p>\n" * 100
    exchange = {"status": 404, "response_body": html_page,
                "response_headers": [["Content-Type", "text/html; charset=utf-8"]]}  # fmt: skip
    text = paypack_py_driver.answer_text(exchange)
    assert text.startswith("404 text/html '<!DOCTYPE html>") and "\n" not in text


def test_no_issued_token_is_written(short_stub: RunningStub, tmp_path: Path, capsys) -> None:
    """The tokens the SDKs were issued, known here in clear, appear in no output: the terminal,
    clients.json, clients.html, --json; the proxy's placeholders stand in for them."""
    job = job_for(short_stub, fresh_number())
    column = matrix.run_paypack_py(job, cache.default_cache_dir())
    issued = set()
    for op in ("authorize", "refresh"):
        issued |= {column.cells[op]["data"]["access"], column.cells[op]["data"]["refresh"]}
    secret = job["client_secret"]
    assert len(issued) == 4 and all(len(token) > 20 for token in issued)
    columns = [column]
    if not cache.paypack_js(cache.default_cache_dir()).skip:  # a bare token in Authorization
        js = matrix.run_paypack_js(job_for(short_stub, fresh_number()), cache.default_cache_dir())
        issued |= {
            js.cells["authorize"]["data"]["access"],
            js.cells["authorize"]["data"]["refresh"],
        }
        columns.append(js)
    args = Namespace(report_dir=str(tmp_path / "r"), json=str(tmp_path / "extra.json"))
    code = write_outputs(args, short_stub.config(), columns, time.time())
    assert code == 0
    outputs = {
        "terminal": capsys.readouterr().out,
        "clients.json": (tmp_path / "r" / "clients.json").read_text(),
        "clients.html": (tmp_path / "r" / "clients.html").read_text(),
        "--json": (tmp_path / "extra.json").read_text(),
    }
    for name, text in outputs.items():
        leaked = [token[:12] for token in (*issued, secret) if token in text]
        assert not leaked, (name, leaked)
        assert not JWT.search(text), (name, JWT.search(text))
    written = outputs["clients.json"]
    assert "«masked:access:1»" in written and "«masked:refresh:1»" in written
    assert "«masked:secret:" in written
    # the same token keeps its placeholder: the SDK's later requests carry authorize's access
    report = json.loads(written)
    cells = report["sdks"][0]["cells"]
    access = cells["authorize"]["data"]["access"]
    sent = dict(cells["cashin"]["exchanges"][0]["request_headers"])["Authorization"]
    assert sent == f"Bearer {access}"


def test_a_cell_is_one_line_and_a_missing_sdk_is_a_clear_cell(monkeypatch, tmp_path) -> None:
    column = matrix.SdkColumn("paypack-py", version="1.0.5")
    column.cells["find"] = {
        "op": "find", "ok": False, "outcome": "fail",
        "detail": "404 text/html\n<!DOCTYPE html>\n<html>" + "<p>x</p>\n" * 200,
    }  # fmt: skip
    text = column.text("find")
    assert "\n" not in text and len(text) <= matrix.CELL_CHARS and text.startswith("FAIL 404")
    monkeypatch.setenv("PATH", str(tmp_path))  # no node, no npm
    js = matrix.run_paypack_js({"base_url": "http://127.0.0.1:1/api"}, tmp_path)
    assert js.skip and "node and npm not found" in js.skip
    shown = matrix.render([column, js], "http://127.0.0.1:1/api")
    assert "paypack-js (not available)" in shown and "not available" in shown.splitlines()[3]
    assert "paypack-js not available: node and npm not found on PATH" in shown
