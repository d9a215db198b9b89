"""report.html of a proxy session or a replay: the conformance report's page, plus what only a
session has.

The page is ``conformance.report.to_html`` over the target's rules (verdict banner, scorecard,
each failure with its Expected/Actual, exchanges and curl), so a QA reads a proxy report as a
conform report. Two sections follow it, written here because the conformance report has no room
for them: **Client faults** (what the client sent against the document, each with its exchanges
and curl: the client's fault, never shown among the target's) and **Exchanges** (every exchange
of the session with its operation, status, time and verdict).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

from conformance import report as conform_report
from paysuite_core.results.evidence import evidence_of
from paysuite_core.results.masking import shown_url
from paysuite_core.results.verdict import Verdict
from proxy.judge import Judge
from proxy.rules import CLIENT_RULES, CLIENT_SECTION, party

if TYPE_CHECKING:
    from paysuite_core.results.rule import Check
    from proxy.report import RuleResult

_CSS = (
    "<style>.client-faults{border-left:4px solid #b45309;padding-left:1em;margin-top:2em}"
    ".client-faults h2{color:#92400e}.exchanges td,.exchanges th{font-size:.9em}"
    ".v-client{color:#92400e;font-weight:600}.v-pass{color:#0a7a2f}.v-fail{color:#b42318;font-weight:600}.v-nj{color:#6b7280}"
    "</style>"
)


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def render(
    judge: Judge,
    rule_results: list[RuleResult[Check]],
    verdict: Verdict,
    *,
    target: str,
    started_at: str,
    duration_s: float,
    title: str,
    exchanges: list[dict[str, Any]],
    tls: str = "",
) -> str:
    """The whole page; ``tls``: how the target's certificate was judged, under the title."""
    server = [r for r in rule_results if party(r.check) == "server"]
    client = [r for r in rule_results if party(r.check) == "client"]
    page = conform_report.to_html(
        server,
        verdict=verdict,
        target=target,
        started_at=started_at,
        duration_s=duration_s,
        title=title,
    )
    extra = _CSS + client_section(judge, client) + exchanges_section(exchanges)
    if tls:
        page = page.replace("</h1>", f"</h1><p id='tls'>{_e(tls)}</p>", 1)
    return page.replace("</body>", extra + "</body>", 1)


def client_section(judge: Judge, client: list[RuleResult[Check]]) -> str:
    """The client's violations, apart: whether they gate the exit status (``--judge``), then
    each with its exchanges and curl."""
    gating = "client" in judge.gates
    found = [v for v in judge.violations if party(v.check) == "client"]
    rules = ", ".join(f"{r.check.id} ({r.outcome})" for r in client)
    head = (
        f"<section class='client-faults' id='client-faults'><h2>Client faults</h2>"
        f"<p>{_e(CLIENT_SECTION)}: requests the client sent that the document does not allow. "
        + (
            "They gate this run's exit status (--judge client or both: exit 3)."
            if gating
            else "They do not gate this run's exit status (--judge server)."
        )
        + f" Rules: {_e(rules)}.</p>"
    )
    if not found:
        return head + "<p id='no-client-fault'>No client fault.</p></section>"

    blocks = []
    for violation in found:
        items = "".join(_exchange(evidence_of(e, judge.masker)) for e in violation.exchanges)
        blocks.append(
            f"<section class='check check-{'fail' if gating else 'warning'}'>"
            f"<h3>{_e(violation.check.id)} {_e(violation.message)}</h3>"
            f"<dl class='ea'><dt>Expected</dt><dd>{_e(violation.expected)}</dd>"
            f"<dt>Actual</dt><dd>{_e(violation.actual)}</dd></dl>{items}</section>"
        )
    return head + "".join(blocks) + "</section>"


def _exchange(item: dict[str, Any]) -> str:
    request, response = item.get("request") or {}, item.get("response") or {}
    req = f"{request.get('method', '')} {request.get('url', '')}\n"
    req += "".join(f"{k}: {v}\n" for k, v in (request.get("headers") or {}).items())
    if request.get("body") is not None:
        req += "\n" + str(request["body"])
    if "error" in response:
        res = str(response["error"])
    else:
        res = f"HTTP {response.get('status')}\n"
        if response.get("body") is not None:
            res += "\n" + str(response["body"])
    out = f"<div>Request</div><pre>{_e(req)}</pre><div>Response</div><pre>{_e(res)}</pre>"
    if item.get("curl"):
        out += f"<div>Reproduce</div><pre class='curl'>{_e(item['curl'])}</pre>"
    return out


def exchanges_section(rows: list[dict[str, Any]]) -> str:
    """Every exchange of the session with its verdict (conformance.json's ``exchanges``)."""
    body = []
    for row in rows:
        verdict = row["verdict"]
        found = [v["id"] for v in row.get("violations") or []]
        if found and all(check in CLIENT_RULES for check in found):
            verdict = "client fault"  # the target is not to blame for this exchange
        css = {"pass": "v-pass", "fail": "v-fail", "client fault": "v-client"}.get(verdict, "v-nj")
        ids = ", ".join(found)
        body.append(
            f"<tr><td>#{row['seq']}</td><td>{_e(row['method'])}</td>"
            f"<td><code>{_e(shown_url(row['url']))}</code></td>"
            f"<td>{_e(row['operation'] or '-')}</td><td>{row['status'] or _e(row['error'])}</td>"
            f"<td>{row['elapsed_ms']:.1f}</td>"
            f"<td class='{css}'>{_e(verdict)}{(' ' + _e(ids)) if ids else ''}</td></tr>"
        )
    return (
        "<section class='exchanges' id='exchanges'><h2>Exchanges</h2><table><thead><tr>"
        "<th>#</th><th>Method</th><th>URL</th><th>Operation</th><th>Status</th><th>ms</th>"
        f"<th>Verdict</th></tr></thead><tbody>{''.join(body)}</tbody></table></section>"
    )
