"""load.html: a self-contained summary of one load run (no scripts, no external resources).

Drawn from load.json and Locust's CSV statistics history: a chart of throughput (requests and
failures per second from the history's cumulative counts, and users) and latency percentiles
(p50, p95, p99 over Locust's 10 s window) over time as inline SVG, the SLO verdict table, the
reconciliation, and links to Locust's own report.
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any

COLOURS = {
    "req/s": "#1f77b4",
    "fail/s": "#d62728",
    "users": "#7f7f7f",
    "p50": "#2ca02c",
    "p95": "#ff7f0e",
    "p99": "#9467bd",
}


#: One point of the history: ``t`` (s), ``users``, ``req/s``, ``fail/s``, and ``p50``, ``p95``,
#: ``p99`` (ms; ``None`` when Locust had no sample).
HistoryRow = dict[str, float | None]


def read_history(path: Path) -> list[HistoryRow]:
    """The Aggregated rows of Locust's ``*_stats_history.csv`` as numbers (missing -> skipped)."""
    rows: list[HistoryRow] = []
    if not path.is_file():
        return rows
    previous: tuple[float, float, float] | None = None  # time, requests, failures so far
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row.get("Name") != "Aggregated":
                continue

            def num(key: str, row: dict[str, str] = row) -> float | None:
                try:
                    return float(row.get(key) or "")
                except ValueError:
                    return None

            t = num("Timestamp")
            if t is None:
                continue
            count = num("Total Request Count") or 0.0
            failed = num("Total Failure Count") or 0.0
            # Locust's own Requests/s column is a lagging 10 s average; the differences of the
            # cumulative counts give what happened in each interval.
            req_s = fail_s = 0.0
            if previous is not None and t > previous[0]:
                span = t - previous[0]
                req_s = max(count - previous[1], 0.0) / span
                fail_s = max(failed - previous[2], 0.0) / span
            previous = (t, count, failed)
            rows.append(
                {
                    "t": t,
                    "users": num("User Count") or 0.0,
                    "count": count,
                    "failed": failed,
                    "p50": num("50%"),
                    "p95": num("95%"),
                    "p99": num("99%"),
                    "req/s": req_s,
                    "fail/s": fail_s,
                }
            )
    return rows


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** len(str(int(value))) / 10
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return step * magnitude
    return value


def svg_chart(
    rows: list[dict[str, Any]], series: list[str], title: str, unit: str, width: int = 760
) -> str:
    """One line chart as an SVG element: time on x, the named series on y."""
    height, left, right, top, bottom = 220, 56, 16, 28, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    points = [r for r in rows if any(r.get(s) is not None for s in series)]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>',
    ]
    if not points:
        parts.append(f'<text x="{left}" y="{top + plot_h / 2}" font-size="12">no data</text></svg>')
        return "".join(parts)
    t0 = rows[0]["t"]  # all rows: both charts share one time axis
    t_span = max(rows[-1]["t"] - t0, 1.0)
    y_max = _nice_max(max((r[s] or 0.0) for r in points for s in series if r.get(s) is not None))

    def x(t: float) -> float:
        return left + (t - t0) / t_span * plot_w

    def y(v: float) -> float:
        return top + plot_h - v / y_max * plot_h

    for i in range(5):
        value = y_max * i / 4
        yy = y(value)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{yy + 4:.1f}" font-size="10" text-anchor="end">'
            f"{value:g}</text>"
        )
    for i in range(6):
        t = t_span * i / 5
        xx = x(t0 + t)
        parts.append(
            f'<text x="{xx:.1f}" y="{top + plot_h + 14}" font-size="10" text-anchor="middle">'
            f"{t:.0f}s</text>"
        )
    parts.append(
        f'<text x="{left - 40}" y="{top - 8}" font-size="10">{html.escape(unit)}</text>'
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>'
    )
    legend_x = left + plot_w - 10
    for index, name in enumerate(series):
        coords = " ".join(
            f"{x(r['t']):.1f},{y(r[name]):.1f}" for r in points if r.get(name) is not None
        )
        colour = COLOURS.get(name, "#000")
        if coords:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{coords}"/>'
            )
        ly = top + 12 + index * 13
        parts.append(
            f'<text x="{legend_x}" y="{ly}" font-size="11" text-anchor="end" fill="{colour}">'
            f"{html.escape(name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _table(headers: list[str], rows: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    return f"<table><tr>{head}</tr>{rows}</table>"


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:g}"
    return html.escape(str(value))


def render_html(report_dir: str | Path) -> Path | None:
    """Write ``load.html`` beside ``load.json``; returns its path (None without load.json)."""
    report_dir = Path(report_dir)
    try:
        summary = json.loads((report_dir / "load.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = summary.get("files") or {}
    history = read_history(report_dir / files["history_csv"]) if files.get("history_csv") else []
    passed = summary.get("exit_code") == 0
    recon = summary.get("reconciliation") or {}
    verdict_rows = "".join(
        "<tr class='{cls}'><td>{op}</td><td>{metric}</td><td>{rel} {thr}</td><td>{obs}</td>"
        "<td>{verdict}</td></tr>".format(
            cls="pass" if v["passed"] else "fail",
            op=_cell(v["operation"]),
            metric=_cell(v["metric"]),
            rel="&ge;" if v["metric"] in ("min_rps", "requests", "steps_completed") else "&le;",
            thr=_cell(v["threshold"]),
            obs=_cell(v["observed"]),
            verdict=("PASS" if v["passed"] else "FAIL")
            + (f" ({_cell(v['note'])})" if v.get("note") else ""),
        )
        for v in summary.get("slo", {}).get("verdicts", [])
    )
    op_rows = "".join(
        f"<tr><td>{_cell(name)}</td><td>{s['requests']}</td><td>{s['failures']}</td>"
        f"<td>{_cell(s['rps'])}</td><td>{_cell(s['p50_ms'])}</td><td>{_cell(s['p95_ms'])}</td>"
        f"<td>{_cell(s['p99_ms'])}</td></tr>"
        for name, s in sorted((summary.get("operations") or {}).items())
    )
    recon_rows = "".join(
        f"<tr><td>{html.escape(key)}</td><td>{_cell(recon.get(key))}</td></tr>"
        for key in (
            "acknowledged",
            "unique_refs",
            "checked",
            "found",
            "lost",
            "missing",
            "missing_created_event",
            "mismatched",
            "duplicate_keys",
            "reused_refs",
            "errors",
            "unchecked",
            "elapsed_s",
        )
    )
    samples = recon.get("samples") or []
    sample_rows = "".join(
        f"<tr><td>{_cell(s['ref'])}</td><td>{_cell(s['key'])}</td><td>{_cell(s['outcome'])}</td></tr>"
        for s in samples
    )
    extra = []
    if summary.get("ramp"):
        ramp = summary["ramp"]
        steps = "".join(
            f"<tr class='{'fail' if s['breached'] else 'pass'}'>"
            f"<td>{s['step']}</td><td>{s['users']}</td>"
            f"<td>{s['requests']}</td><td>{_cell(s['rps'])}</td><td>{_cell(s['p95_ms'])}</td>"
            f"<td>{_cell(s['error_ratio'])}</td><td>{_cell(', '.join(s['breached']))}</td></tr>"
            for s in ramp.get("steps", [])
        )
        knee = ramp.get("knee")
        knee_text = (
            f"knee at step {knee['step']} ({knee['users']} users, {knee['rps']} req/s)"
            if knee
            else "no knee within the ramp's duration"
        )
        plateau = ramp.get("plateau")
        if plateau:
            knee_text += (
                f"; throughput stopped growing at step {plateau['step']} "
                f"({plateau['users']} users, {plateau['rps']} req/s)"
            )
        extra.append(
            f"<h2>Ramp steps</h2><p>{html.escape(knee_text)}</p><table><tr><th>step</th><th>users"
            "</th><th>requests</th><th>req/s</th><th>p95 ms</th><th>error ratio</th><th>breached"
            f"</th></tr>{steps}</table>"
        )
    if summary.get("time_to_processed"):
        ttp = summary["time_to_processed"]
        extra.append(
            "<h2>Time to processed</h2><table><tr><th>count</th><th>p50 s</th><th>p95 s</th>"
            "<th>p99 s</th><th>max s</th><th>timeouts</th><th>outcomes</th></tr>"
            f"<tr><td>{ttp['count']}</td><td>{_cell(ttp['p50_s'])}</td><td>{_cell(ttp['p95_s'])}</td><td>"
            f"{_cell(ttp['p99_s'])}</td><td>{_cell(ttp['max_s'])}</td>"
            f"<td>{_cell(ttp.get('timeouts'))}"
            f"</td><td>{_cell(json.dumps(ttp.get('by_status', {})))}</td></tr></table>"
        )
    if summary.get("idempotency"):
        idem = summary["idempotency"]
        extra.append(
            "<h2>Idempotency storm</h2><p>"
            f"{idem['conflicts_409']} requests rejected with 409 (expected, counted as successes); "
            f"{idem['keys']} keys acknowledged; "
            f"{idem['duplicate_keys']} keys produced two refs.</p>"
        )
    links = " · ".join(
        f'<a href="{html.escape(path)}">{html.escape(label)}</a>'
        for label, path in (
            ("Locust report", files.get("locust_html")),
            ("statistics CSV", files.get("stats_csv")),
            ("history CSV", files.get("history_csv")),
            ("load.json", "load.json"),
        )
        if path
    )
    auth = summary.get("auth") or {}
    total = summary.get("total") or {}
    verdict_colour = "#176b2c" if passed else "#b00020"
    headline = (
        f"{'PASS' if passed else 'FAIL'}: SLOs "
        f"{'met' if summary.get('slo_passed') else 'breached'}, reconciliation "
        f"{'found nothing lost' if recon.get('passed') else 'FAILED'}"
    )
    facts = " · ".join(
        [
            f"target {_cell(summary.get('target'))}",
            f"{_cell(summary.get('duration_s'))} s",
            f"{_cell(summary.get('users'))} users",
            f"{total.get('requests', 0)} requests ({_cell(total.get('rps'))} req/s, "
            f"{total.get('failures', 0)} failures)",
            f"authorize {auth.get('authorize', 0)}",
            f"refresh {auth.get('refresh', 0)}",
            f"stopped: {_cell(summary.get('stop_reason'))}",
        ]
    )
    samples_table = _table(["ref", "key", "outcome"], sample_rows) if sample_rows else ""
    shape = _cell(summary.get("shape") or summary.get("profile"))  # profile: its old key
    page = "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>paysuite load: {shape}</title>",
            "<style>",
            "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:60em}",
            "table{border-collapse:collapse;margin:.5em 0}",
            "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}",
            "tr.pass td:last-child{color:#176b2c} tr.fail td{background:#fde8e8}",
            f".verdict{{font-size:1.3em;font-weight:bold;color:{verdict_colour}}}",
            "</style></head><body>",
            f"<h1>paysuite load: shape {shape}</h1>",
            f'<p class="verdict">{headline}</p>',
            f"<p>{facts}</p>",
            f"<p>{links}</p>",
            "<h2>Throughput and latency over time</h2>",
            svg_chart(history, ["req/s", "fail/s", "users"], "Throughput", "req/s"),
            svg_chart(history, ["p50", "p95", "p99"], "Latency percentiles (10 s window)", "ms"),
            "<h2>SLO verdicts</h2>",
            _table(["operation", "metric", "threshold", "observed", "verdict"], verdict_rows),
            "<h2>Operations</h2>",
            _table(
                ["name", "requests", "failures", "req/s", "p50 ms", "p95 ms", "p99 ms"], op_rows
            ),
            "<h2>Reconciliation: nothing lost?</h2>",
            f"<table>{recon_rows}</table>",
            samples_table,
            "".join(extra),
            "</body></html>",
            "",
        ]
    )
    out = report_dir / "load.html"
    out.write_text(page, encoding="utf-8")
    return out
