"""Every HTML page of the report engine: self-contained, and a target's text is never markup.

Fast (no target): each front-end's page rendered from objects like its run's. A page must load
nothing (no ``src``/``href`` to an http(s) address, no ``<link>``, no ``@import``, no ``url(``,
no script), and a message carrying ``<script>`` is shown escaped, as text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "conformance"))

from test_report_render import BASE, VERDICT, _results

from conformance import catalog
from paysuite_core.report_engine import reports
from paysuite_core.results.verdict import CheckResult

HOSTILE = "<script>alert('x')</script>"
#: What a page would fetch or run.
LOADS = re.compile(
    r"""(?:src|href)\s*=\s*['"]?\s*(?:https?:)?//|<link|@import|url\(|<script""", re.I
)


def _conform_page() -> str:
    results = [
        *_results(),
        CheckResult(catalog.get("FMT-001"), "failed", f"answered {HOSTILE}", actual=HOSTILE),
    ]
    return reports.to_html(
        results, verdict=VERDICT, target=BASE, started_at=HOSTILE, duration_s=1.0
    )


def _load_page(tmp: Path) -> str:
    from load.report import render_page

    summary = {
        "shape": "smoke",
        "exit_code": 1,
        "target": "http://127.0.0.1:9/api",
        "operations": {
            "find": {
                "requests": 3,
                "failures": 1,
                "rps": 1.0,
                "p50_ms": 1.0,
                "p95_ms": 2.0,
                "p99_ms": 2.0,
            }
        },
        "failures": [{"occurrences": 1, "method": "GET", "name": "find", "error": HOSTILE}],
        "reconciliation": {"passed": False, "reasons": [HOSTILE]},
        "timeline": {
            "samples": [
                {
                    "t": 1.0,
                    "users": 1,
                    "rps": 3.0,
                    "fail_s": 1.0,
                    "p50": 1.0,
                    "p95": 2.0,
                    "p99": 2.0,
                    "ops": {},
                }
            ]
        },
        "files": {"locust_html": "locust.html"},
    }
    return render_page(summary, tmp)


def _demo_page(tmp: Path) -> str:
    from paysuite.demo import ConformanceResult, write_index

    conformance = ConformanceResult("error", 2, {}, "conformance/report.html", HOSTILE)
    return write_index(tmp, conformance, None, None, 2).read_text(encoding="utf-8")


def _clients_page(_: Path) -> str:
    from paysuite.clients import report as clients
    from paysuite.clients.matrix import SdkColumn
    from paysuite_core.results.masking import Masker

    exchange = {
        "method": "POST",
        "url": f"{BASE}/transactions/cashout",
        "status": 200,
        "request_body": "{}",
        "response_body": HOSTILE,
    }
    cell = {
        "outcome": "fail",
        "detail": HOSTILE,
        "expected": "kind CASHOUT",
        "actual": HOSTILE,
        "exchanges": [exchange],
    }
    columns = [SdkColumn("paypack-py", "1.0", cells={"cashout": cell})]
    verdict = clients.verdict_of(columns)
    return reports.to_html(
        clients.results(columns, Masker()),
        verdict=verdict,
        target=BASE,
        started_at="",
        duration_s=1.0,
        title=clients.TITLE,
        tls=HOSTILE,
        rerun_hint=False,
    )


PAGES = {
    "conform": lambda _: _conform_page(),
    "clients": _clients_page,
    "load": _load_page,
    "demo": _demo_page,
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_page_is_self_contained(name: str, tmp_path: Path) -> None:
    page = PAGES[name](tmp_path)
    assert "<style>" in page and page.rstrip().endswith("</html>")
    found = LOADS.findall(page)
    assert not found, f"{name} loads {found}"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_script_in_a_message_is_text(name: str, tmp_path: Path) -> None:
    page = PAGES[name](tmp_path)
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "<script" not in page
