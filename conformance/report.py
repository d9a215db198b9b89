"""The verdict, rendered: terminal scorecard, junit.xml, conformance.json, report.html.

All four come from the same list of ``CheckResult`` so they cannot disagree. The HTML report is
self-contained (inline CSS, no scripts, no external resources) so it can be attached to a CI run
and opened anywhere.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance import catalog

OUTCOMES = ("passed", "failed", "skipped", "error")
_MARK = {"passed": "✔", "failed": "×", "skipped": "-", "error": "!"}


def summary(results: Sequence[Any]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    for result in results:
        key = "errors" if result.outcome == "error" else result.outcome
        counts[key] += 1
    return counts


def totals_line(results: Sequence[Any]) -> str:
    counts = summary(results)
    line = f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
    if counts["errors"]:
        line += f", {counts['errors']} errors"
    return line


def _by_section(results: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    groups: list[tuple[str, list[Any]]] = []
    for section in catalog.section_order():
        members = [r for r in results if r.check.section == section]
        if members:
            groups.append((section, members))
    return groups


def scorecard(results: Sequence[Any]) -> str:
    """h2spec style: sections of the document, a line per check, then the totals."""
    lines = ["", "Conformance scorecard", "====================="]
    for section, members in _by_section(results):
        lines.append(section)
        for result in members:
            check = result.check
            lines.append(
                f"  {_MARK[result.outcome]} {check.id:<9} {check.level:<6} {result.outcome:<7} "
                f"{check.title}"
            )
            if result.outcome != "passed" and result.message:
                lines.append(f"      -> {result.message.splitlines()[0][:200]}")
    lines.append("")
    lines.append(totals_line(results))
    return "\n".join(lines)


def to_json(
    results: Sequence[Any], *, target: str, profile: str, started_at: str, duration_s: float
) -> dict[str, Any]:
    return {
        "target": target,
        "profile": profile,
        "started_at": started_at,
        "duration_s": duration_s,
        "summary": summary(results),
        "checks": [
            {
                "id": r.check.id,
                "title": r.check.title,
                "level": r.check.level,
                "section": r.check.section,
                "outcome": r.outcome,
                "message": r.message,
                "evidence": [
                    {
                        "request": item.get("request"),
                        "response": item.get("response"),
                        "curl": item.get("curl"),
                    }
                    for item in r.evidence
                ],
            }
            for r in results
        ],
    }


def to_junit(results: Sequence[Any], *, profile: str, duration_s: float) -> str:
    counts = summary(results)
    suite = ET.Element(
        "testsuite",
        name=f"paysuite-conformance-{profile}",
        tests=str(len(results)),
        failures=str(counts["failed"]),
        errors=str(counts["errors"]),
        skipped=str(counts["skipped"]),
        time=f"{duration_s:.3f}",
    )
    for r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"conformance.{r.check.group}",
            name=f"{r.check.id} [{r.check.level}] {r.check.title}",
            time=f"{r.duration_s:.3f}",
        )
        if r.outcome == "failed":
            node = ET.SubElement(
                case, "failure", message=r.message.splitlines()[0] if r.message else ""
            )
            node.text = _junit_text(r)
        elif r.outcome == "error":
            node = ET.SubElement(
                case, "error", message=r.message.splitlines()[0] if r.message else ""
            )
            node.text = _junit_text(r)
        elif r.outcome == "skipped":
            ET.SubElement(case, "skipped", message=r.message)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _junit_text(result: Any) -> str:
    parts = [result.message, "", f"Document ({result.check.section}): {result.check.quote}"]
    for item in result.evidence[:5]:
        if item.get("curl"):
            parts.append(item["curl"])
    return "\n".join(parts)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1100px;padding:0 1em;color:#1c1c1c}
h1{font-size:1.6em;margin-bottom:.2em}.meta{color:#555;margin-bottom:1.5em}
table{border-collapse:collapse;width:100%;margin-bottom:1.5em}
th,td{text-align:left;padding:.3em .5em;border-bottom:1px solid #e3e3e3;vertical-align:top}
th.section{background:#f3f4f6;font-weight:600;padding-top:.6em}
.passed{color:#0a7a2f}.failed{color:#b42318;font-weight:600}.skipped{color:#8a6d00}
.error{color:#7a2ab4;font-weight:600}.reason{color:#555;font-size:.92em}
.totals{font-size:1.15em;font-weight:600;margin:1em 0 2em}
.check{border:1px solid #f1c0bb;border-left:5px solid #b42318;border-radius:4px;
padding:.6em 1em;margin:1.2em 0}
.check-error{border-left-color:#7a2ab4;border-color:#dcc6ef}
td.id,td.lvl,td.out{white-space:nowrap}.msg{font-weight:600}
blockquote{margin:.5em 0;padding:.4em .8em;background:#f7f7f9;border-left:3px solid #999}
pre{background:#0f172a;color:#e2e8f0;padding:.6em .8em;border-radius:4px;overflow-x:auto;
white-space:pre-wrap;word-break:break-all;font-size:12.5px}
h3{margin:.2em 0}.level{font-size:.8em;padding:.1em .4em;border-radius:3px;background:#eee}
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def _exchange_html(item: dict[str, Any]) -> str:
    out = []
    request = item.get("request") or {}
    response = item.get("response") or {}
    if request:
        req = f"{request.get('method', '')} {request.get('url', '')}\n"
        req += "".join(f"{k}: {v}\n" for k, v in (request.get("headers") or {}).items())
        if request.get("body") is not None:
            req += "\n" + str(request["body"])
        out.append(f"<div>Request</div><pre>{_e(req)}</pre>")
    if response:
        if "error" in response:
            res = str(response["error"])
        else:
            res = f"HTTP {response.get('status')}\n"
            res += "".join(f"{k}: {v}\n" for k, v in (response.get("headers") or {}).items())
            if response.get("body") is not None:
                res += "\n" + str(response["body"])
        out.append(f"<div>Response</div><pre>{_e(res)}</pre>")
    if item.get("curl"):
        out.append(f"<div>Reproduce</div><pre class='curl'>{_e(item['curl'])}</pre>")
    return "\n".join(out)


def to_html(
    results: Sequence[Any], *, target: str, profile: str, started_at: str, duration_s: float
) -> str:
    rows = []
    for section, members in _by_section(results):
        rows.append(f"<tr><th class='section' colspan='4'>{_e(section)}</th></tr>")
        for r in members:
            reason = ""
            if r.outcome != "passed" and r.message:
                reason = f"<div class='reason'>{_e(r.message.splitlines()[0][:300])}</div>"
            anchor = (
                f"<a href='#{_e(r.check.id)}'>{_e(r.check.id)}</a>"
                if r.outcome in ("failed", "error")
                else _e(r.check.id)
            )
            rows.append(
                f"<tr><td class='id'>{anchor}</td><td class='lvl'>{_e(r.check.level)}</td>"
                f"<td class='out {r.outcome}'>{_e(r.outcome)}</td>"
                f"<td>{_e(r.check.title)}{reason}</td></tr>"
            )
    failures = []
    for r in results:
        if r.outcome not in ("failed", "error"):
            continue
        exchanges = "\n".join(_exchange_html(item) for item in r.evidence) or "<p>(no exchange)</p>"
        failures.append(
            f"<section class='check check-{r.outcome}' id='{_e(r.check.id)}'>"
            f"<h3>{_e(r.check.id)} <span class='level'>{_e(r.check.level)}</span> "
            f"<span class='{r.outcome}'>{_e(r.outcome)}</span> {_e(r.check.title)}</h3>"
            f"<div>Section: {_e(r.check.section)}</div>"
            f"<blockquote>{_e(r.check.quote)}</blockquote>"
            f"<pre>{_e(r.message)}</pre>{exchanges}</section>"
        )
    failed_block = (
        "<h2>Failed checks</h2>" + "\n".join(failures) if failures else "<h2>No failed check</h2>"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<title>paysuite conformance report</title>"
        f"<style>{_CSS}</style></head><body>"
        "<h1>paysuite conformance report</h1>"
        f"<div class='meta'>Target <code>{_e(target)}</code> · profile <b>{_e(profile)}</b> · "
        f"started {_e(started_at)} · {duration_s:.1f} s</div>"
        "<h2>Scorecard</h2>"
        "<table><thead><tr><th>ID</th><th>Level</th><th>Outcome</th><th>Check</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        f"<div class='totals' id='totals'>{_e(totals_line(results))}</div>"
        f"{failed_block}</body></html>"
    )


def write_all(
    results: Sequence[Any],
    *,
    report_dir: str | Path,
    target: str,
    profile: str,
    started_at: str,
    duration_s: float,
) -> list[Path]:
    directory = Path(report_dir)
    directory.mkdir(parents=True, exist_ok=True)
    junit = directory / "junit.xml"
    junit.write_text(to_junit(results, profile=profile, duration_s=duration_s), encoding="utf-8")
    data = to_json(
        results, target=target, profile=profile, started_at=started_at, duration_s=duration_s
    )
    as_json = directory / "conformance.json"
    as_json.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    page = directory / "report.html"
    page.write_text(
        to_html(
            results, target=target, profile=profile, started_at=started_at, duration_s=duration_s
        ),
        encoding="utf-8",
    )
    return [junit, as_json, page]
