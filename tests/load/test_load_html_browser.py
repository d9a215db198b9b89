"""load.html of a real load run, opened in headless Chromium: the charts and tables are there.

One short smoke run (5 s) against a stub that refuses tokens early (failed requests with their
messages) and drops some acknowledged creates (a reconciliation loss): the page must show the
charts (throughput with users on their own axis, latency, latency per operation), the
thresholds, the failure messages, the reconciliation counts and why it failed, with nothing
fetched from anywhere. The screenshot is kept beside the report for a person to look at.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browserkit import chromium, needs_chromium, png_size
from loadkit import AUTO_RESOLVE, run_load

from paysuite_core.launcher import running_stub

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@needs_chromium
def test_load_html_of_a_real_run_in_headlesschromium(tmp_path: Path) -> None:
    # Half the acknowledged creates dropped: a loss is certain even when a busy machine lets the
    # run acknowledge only a dozen (at 0.1, one run in ten lost none).
    config = {**AUTO_RESOLVE, "drop_rate": 0.5}
    with running_stub(
        tmp_path / "stub", faults=["early-expiry", "drop-acknowledged"], stub_config=config
    ) as stub:
        run = run_load(
            tmp_path / "r",
            "--config", str(stub.credentials_path),
            "--duration", "5s",
            "--users", "4",
        )  # fmt: skip
    assert run.returncode == 3, run.stdout[-3000:] + run.stderr[-3000:]  # a loss: exit 3
    summary = run.summary()
    page = tmp_path / "r" / "load.html"
    html = page.read_text(encoding="utf-8")
    head = html.split("<body>")[0]
    assert "<script" not in html and "src=" not in html and "http://" not in head
    assert "<link" not in html and "@import" not in html and "url(" not in html

    dom = chromium(tmp_path, "--dump-dom", page.resolve().as_uri()).stdout
    assert "paysuite load: shape smoke" in dom
    charts = re.findall(r'<svg class="chart"', dom)
    ops = [name for name, s in summary["operations"].items() if s["requests"]]
    assert len(charts) >= 2 + len(ops) - 1, len(charts)  # every operation with samples
    assert "Throughput and users" in dom and "users (right axis)" in dom
    assert "cashin: latency" in dom and "find: latency" in dom
    assert "no data" not in dom and dom.count("<polyline") >= 8
    # the time axis ends with the run: no sample after the load stopped
    assert summary["timeline"]["samples"][-1]["t"] <= summary["duration_s"] + 1.5
    assert 'class="thresholds"' in dom and "✓" in dom
    assert 'class="failures"' in dom and "401: token refused" in dom
    assert 'id="reconciliation-counts"' in dom
    assert f"{summary['reconciliation']['lost']} lost (" in dom  # the reason of the FAIL
    assert f"<b>{summary['peak_users']}</b> users at peak" in dom

    shot = tmp_path / "r" / "load-html.png"
    result = chromium(
        tmp_path, "--window-size=1400,3000", f"--screenshot={shot}", page.resolve().as_uri()
    )
    assert shot.is_file(), result.stderr[-2000:]
    width, height = png_size(shot)
    assert (width, height) == (1400, 3000)
    assert shot.stat().st_size > 60_000  # drawn, not a blank page
