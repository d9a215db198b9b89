"""A target the pre-check stops still gets load.json and load.html, with the verdict and why.

FAIL (exit 1) when the target answered and was wrong (a 500 to authorize), ERROR (exit 2) when
nothing could be measured (no answer; the wrong base URL path). No Locust is started for these:
each run is a second or two.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from loadkit import run_load

from load.finalize import ramp_table, verdict_table
from paysuite_core.tokens import AUTHORIZE_PATH


def _config(path: Path, base_url: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "base_url": base_url,
                "applications": [
                    {"client_id": "a", "client_secret": "b", "privilege": "read-write"}
                ],
            }
        )
    )
    return path


@pytest.fixture
def answers_500() -> Iterator[str]:
    """A tiny aiohttp server that answers 500 to every request: the base URL."""

    async def fail(request: web.Request) -> web.Response:
        return web.json_response({"message": "internal error"}, status=500)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fail)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/api"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.run_until_complete(runner.cleanup())
        loop.close()


def test_a_target_that_answers_500_fails_with_its_reports(answers_500: str, tmp_path: Path) -> None:
    config = _config(tmp_path / "c.yaml", answers_500)
    run = run_load(tmp_path / "r", "--config", str(config))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    summary = run.summary()
    assert summary["verdict"] == "fail" and summary["exit_code"] == 1
    assert "answered authorize with HTTP 500" in summary["reason"]
    page = (tmp_path / "r" / "load.html").read_text(encoding="utf-8")
    assert 'id="verdict">FAIL (exit 1): the target answered authorize with HTTP 500' in page
    assert "result: FAIL (exit 1)" in run.stdout


def test_an_unreachable_target_is_an_error_with_its_reports(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = _config(tmp_path / "c.yaml", f"http://127.0.0.1:{port}/api")
    run = run_load(tmp_path / "r", "--config", str(config))
    assert run.returncode == 2
    summary = json.loads((tmp_path / "r" / "load.json").read_text())
    assert summary["verdict"] == "error" and "unreachable" in summary["reason"]
    assert "ERROR (exit 2)" in (tmp_path / "r" / "load.html").read_text(encoding="utf-8")


def test_a_404_on_authorize_names_the_base_url_path(tmp_path: Path) -> None:
    """The stub answers 404 outside its API: a wrong path is named as such, not as credentials."""
    from paysuite_core.launcher import running_stub

    with running_stub(tmp_path / "stub") as stub:
        config = _config(tmp_path / "c.yaml", stub.root_url + "/apix")
        run = run_load(tmp_path / "r", "--config", str(config))
    assert run.returncode == 2
    expected = f"no API at {stub.root_url}/apix (404 on {AUTHORIZE_PATH}): check base_url's path"
    assert run.stderr.strip() == f"paysuite load: {expected}"
    assert run.summary()["reason"] == expected


def test_a_breach_of_many_thresholds_wraps_one_line_per_threshold() -> None:
    from load.slo import Verdict

    verdicts = [Verdict(op, "p95_ms", 100, 900.0, False) for op in ("cashin", "cashout", "find")]
    recon = {"acknowledged": 3, "checked": 3, "found": 3, "passed": True, "reasons": []}
    text = verdict_table(verdicts, recon, "smoke", 1)
    tail = text.split("paysuite: result: FAIL (exit 1: threshold breached):")[1].splitlines()
    assert [line.split()[2] for line in tail[1:]] == ["cashin", "cashout", "find"]
    assert all(len(line) < 100 for line in tail)


def test_a_reconciliation_with_nothing_to_check_says_so() -> None:
    recon = {"acknowledged": 0, "passed": True, "reasons": [], "nothing_to_check": True}
    text = verdict_table([], recon, "smoke", 0)
    assert "reconciliation: nothing to check (no create was acknowledged)" in text
    assert "found nothing lost" not in text and "PASS" not in text.splitlines()[1]


def test_the_ramp_prints_its_steps_and_marks_the_knee() -> None:
    steps = [
        {"step": i, "users": 5 * (i + 1), "rps": rps, "p95_ms": p95, "error_ratio": err}
        for i, (rps, p95, err) in enumerate([(50, 20, 0), (98, 25, 0), (101, 300, 0.02)])
    ]
    lines = ramp_table({"steps": steps, "knee": {"step": 1}})
    assert lines[0].startswith("paysuite: ramp steps")
    assert lines[0].split("\n")[1].split() == ["step", "users", "req/s", "p95", "ms", "errors"]
    assert lines[2].split() == ["1", "10", "98", "25", "0.0%", "<-", "knee"]
    assert lines[3].split() == ["2", "15", "101", "300", "2.0%"]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_500_targets_load_html_in_headless_chromium(answers_500: str, tmp_path: Path) -> None:
    config = _config(tmp_path / "c.yaml", answers_500)
    run = run_load(tmp_path / "r", "--config", str(config))
    assert run.returncode == 1
    page = (tmp_path / "r" / "load.html").resolve().as_uri()
    chromium = [
        CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]  # fmt: skip
    dom = subprocess.run(
        [*chromium, "--dump-dom", page], capture_output=True, text=True, timeout=120
    ).stdout
    assert 'class="banner fail" id="verdict">FAIL (exit 1): the target answered authorize' in dom
    assert "HTTP 500" in dom and 'id="no-load"' in dom
    shot = tmp_path / "r" / "load-html.png"  # kept for a person to look at
    subprocess.run(
        [*chromium, "--window-size=1200,500", f"--screenshot={shot}", page],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shot.is_file()


def test_quiet_asks_locust_for_no_statistics_table(tmp_path: Path) -> None:
    """Locust's own switches: --only-summary (no periodic table) and --skip-log-setup (its
    final table is INFO logging, which Python's defaults do not print)."""
    from load.plan import build_plan
    from load.runner import locust_command

    config = _config(tmp_path / "c.yaml", "http://127.0.0.1:9/api")
    plan_file = tmp_path / "plan.json"

    def flags(**kwargs: bool) -> set[str]:
        command = locust_command(build_plan(config=config, **kwargs), plan_file)
        return {"--only-summary", "--skip-log-setup"} & set(command)

    assert flags() == {"--only-summary"}  # Locust's table once, by paysuite (load.terminal)
    assert flags(quiet=True) == {"--only-summary", "--skip-log-setup"}
    assert flags(summary_only=True) == {"--only-summary"}
    # the shape's user classes, as Locust's own user-class arguments
    storm = locust_command(build_plan(config=config, shape="idempotency-storm"), plan_file)
    assert (
        storm[-1] == "StormUser"
        and locust_command(build_plan(config=config), plan_file)[-1] == "MerchantUser"
    )


def test_a_run_with_nothing_to_reconcile_does_not_claim_nothing_lost() -> None:
    from load.finalize import _pass_reason

    assert _pass_reason(0, {"nothing_to_check": True}) == (
        "every threshold met; no create was acknowledged, so nothing to reconcile"
    )
    assert _pass_reason(0, {"acknowledged": 3}) == "every threshold met, nothing lost"
