"""The proxy's report.html opened in headless Chromium: it reads like the conformance report
(verdict banner, the target's rules one by one, each failure with its exchanges and curl), with
the client's faults in a section of their own and every exchange listed. The screenshot is kept
beside the report for a person to look at (``screenshot.png``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browserkit import chromium, needs_chromium
from proxykit import Client, config_file, start_proxy, writer

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@needs_chromium
def test_proxy_report_html_in_headlesschromium(make_stub, tmp_path: Path) -> None:
    stub = make_stub(faults=("wrong-kind",))
    reports = tmp_path / "reports"
    run = start_proxy(stub.root_url, reports, config=config_file(stub, tmp_path))
    client = Client(run.base_url, writer(stub), run.url)
    made = client.create("cashout")  # answered CASHIN: the target's TXN-002
    client.find(made.json()["ref"])
    bad = client.http.post(f"{run.base_url}/transactions/cashin", headers=client.headers(),
                           json={"amount": "100", "number": "0781234567"})  # fmt: skip
    assert bad.status_code == 400  # a string amount: the client's fault
    client.close()
    assert run.stop() == 1, run.output
    page = reports / "report.html"
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and "src=" not in html
    dom = chromium(tmp_path, "--dump-dom", page.resolve().as_uri()).stdout
    assert 'id="verdict"' in dom and "FAIL" in dom
    assert "TXN-002" in dom and "FIND-001" in dom and "curl" in dom
    client_part = dom.split('id="client-faults"', 1)[1].split('id="exchanges"', 1)[0]
    assert "PROXY-SCHEMA-REQ" in client_part and "amount" in client_part
    assert "do not gate" in client_part
    server_part = dom.split('id="client-faults"', 1)[0]
    assert "PROXY-SCHEMA-REQ" not in server_part  # the client's fault is not the target's
    exchanges = dom.split('id="exchanges"', 1)[1]
    assert exchanges.count("<tr>") >= 5  # head + authorize, cashout, find, the bad cashin
    shot = reports / "screenshot.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2400",
              page.resolve().as_uri())  # fmt: skip
    assert shot.exists() and shot.stat().st_size > 10_000
