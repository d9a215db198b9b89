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

from test_report_render import BASE, VERDICT, _results  # noqa: E402

from conformance import catalog, report  # noqa: E402
from conformance.plugin import CheckResult  # noqa: E402

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
    return report.to_html(results, verdict=VERDICT, target=BASE, started_at=HOSTILE, duration_s=1.0)


PAGES = {"conform": _conform_page}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_page_is_self_contained(name: str) -> None:
    page = PAGES[name]()
    assert "<style>" in page and page.rstrip().endswith("</html>")
    found = LOADS.findall(page)
    assert not found, f"{name} loads {found}"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_script_in_a_message_is_text(name: str) -> None:
    page = PAGES[name]()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "<script" not in page
