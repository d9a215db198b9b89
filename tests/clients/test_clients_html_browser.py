"""clients.html of a real run, opened in headless Chromium: conform's page for the SDK matrix.

``paysuite clients`` against a stub with the ``wrong-kind`` fault (a cashout answered as
``CASHIN``): the terminal names what was expected and what came, and the page shows the FAIL
banner, one row per cell, the failed cell with its Expected / Actual, the exchange and its curl,
and no token. The screenshot is kept beside the report for a person to look at.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from browserkit import chromium, needs_chromium, png_size

from paysuite.clients import cache

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("sdk-clients")]


@needs_chromium
def test_clients_html_of_a_wrong_kind_target_in_headlesschromium(make_stub, tmp_path) -> None:
    stub = make_stub(faults=("wrong-kind",))
    reports = tmp_path / "r"
    done = subprocess.run(
        [sys.executable, "-m", "paysuite", "clients", "--config", str(stub.credentials_path),
         "--report-dir", str(reports), "--cache-dir", str(cache.default_cache_dir())],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    assert "FAIL expected kind CASHOUT, got CASHIN" in rows["cashout"]
    assert rows["cashin"].split()[1] == "ok"
    report = json.loads((reports / "clients.json").read_text())
    sdks = [column for column in report["sdks"] if not column["skip"]]
    cells = sum(len(column["cells"]) for column in sdks)
    cell = sdks[0]["cells"]["cashout"]
    assert (cell["expected"], cell["actual"]) == ("kind CASHOUT", "CASHIN")

    page = reports / "clients.html"
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html and "<link" not in html and "url(" not in html
    dom = chromium(tmp_path, "--dump-dom", page.resolve().as_uri()).stdout
    assert "paysuite clients report" in dom
    assert re.search(r"id=\"verdict\".*?FAIL", dom, re.S)
    assert dom.count('<tr class="row-') == cells  # one row per cell
    assert "paypack-py:cashout" in dom and "expected kind CASHOUT, got CASHIN" in dom
    assert "<dt>Expected</dt><dd>kind CASHOUT</dd>" in dom
    assert "<dt>Actual</dt><dd>CASHIN</dd>" in dom
    assert 'class="curl">curl -sS -i -X POST' in dom and "/transactions/cashout" in dom
    assert "«masked:access:" in dom and not re.search(r"eyJ[\w-]{8,}\.[\w-]{8,}", dom)
    # one variable per application, named as the configuration names it (merchant, privilege)
    assert re.search(r"export PAYSUITE_TOKEN_[A-Z0-9]+_READ_WRITE=", dom), dom[-2000:]
    assert "--reveal-secrets" not in dom

    shot = reports / "clients-html.png"
    result = chromium(
        tmp_path, "--window-size=1400,2400", f"--screenshot={shot}", page.resolve().as_uri()
    )
    assert shot.is_file(), result.stderr[-2000:]
    width, height = png_size(shot)
    assert (width, height) == (1400, 2400)
    assert shot.stat().st_size > 60_000  # drawn, not a blank page
