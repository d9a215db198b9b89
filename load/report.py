"""load.html: a self-contained summary of one load run (inline SVG and CSS; no script, nothing
fetched from anywhere).

Drawn from load.json alone: the run's timeline (``load.timeline``: per-interval requests and
failures per second, users, and the p50/p95/p99 latency of each interval's requests, overall and
per operation) as full-width responsive charts whose time axis ends with the run, users on their
own axis; then the thresholds with check marks, the operations, Locust's failure messages, the
reconciliation counts and why it failed if it did, and what the shape found (ramp steps and knee,
time to processed, idempotency storm). A load.json without a timeline (older runs) falls back to
Locust's ``*_stats_history.csv``.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLOURS = {
    "req/s": "#1f77b4",
    "fail/s": "#d62728",
    "users": "#6b6b6b",
    "p50": "#2ca02c",
    "p95": "#ff7f0e",
    "p99": "#9467bd",
}
FLOORS = ("min_rps", "requests", "steps_completed", "successes")

#: One point of the history: ``t`` (s), ``users``, ``req/s``, ``fail/s``, and ``p50``, ``p95``,
#: ``p99`` (ms; ``None`` when there was no sample).
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


def timeline_rows(summary: dict[str, Any], report_dir: Path) -> list[HistoryRow]:
    """The run's points, from load.json's timeline (else Locust's history CSV), ``t`` from 0."""
    samples = (summary.get("timeline") or {}).get("samples") or []
    if samples:
        rows: list[HistoryRow] = [{"t": 0.0, "users": 0.0, "req/s": None, "fail/s": None}]
        for s in samples:
            row: dict[str, Any] = {
                "t": s["t"],
                "users": s["users"],
                "req/s": s["rps"],
                "fail/s": s["fail_s"],
                "p50": s["p50"],
                "p95": s["p95"],
                "p99": s["p99"],
            }
            for op, point in (s.get("ops") or {}).items():
                for key in ("p50", "p95", "p99", "rps"):
                    row[f"{op}:{key}"] = point.get(key)
            rows.append(row)
        return rows
    files = summary.get("files") or {}
    history = read_history(report_dir / files["history_csv"]) if files.get("history_csv") else []
    if history:
        t0 = history[0]["t"] or 0.0
        for row in history:
            row["t"] = (row["t"] or 0.0) - t0
    return history


# -- charts ----------------------------------------------------------------------------------------
@dataclass
class Series:
    name: str
    key: str
    colour: str
    right: bool = False  # on the right-hand axis
    dashed: bool = False


@dataclass
class Chart:
    title: str
    unit: str
    series: list[Series]
    right_unit: str = ""
    #: horizontal reference lines: (value, label)
    limits: list[tuple[float, str]] = field(default_factory=list)
    width: int = 1200
    height: int = 300


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= step * magnitude:
            return step * magnitude
    return value


def _count_max(value: float) -> float:
    """The top of an axis of counts (users): four whole-numbered intervals above ``value``."""
    for step in (1, 2, 3, 4, 5, 10, 15, 20, 25, 50, 75, 100, 150, 200, 250, 500, 1000):
        if value * 1.05 <= step * 4:
            return float(step * 4)
    return _nice_max(value * 1.05)


def _time_step(span: float) -> float:
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        if span / step <= 10:
            return step
    return 7200


def _clock(t: float, span: float) -> str:
    if span < 120:
        return f"{t:g}s"
    return f"{int(t // 60)}:{int(t % 60):02d}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:g}"


def svg_line_chart(rows: Sequence[dict[str, Any]], chart: Chart, t_end: float | None = None) -> str:
    """One responsive line chart (inline SVG): time on x from 0 to the end of the run, the left
    series on the left axis, the ``right`` ones (users) on their own right-hand axis."""
    width, height = chart.width, chart.height
    left, right, top, bottom = 64, 64 if chart.right_unit else 20, 40, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    title = html.escape(chart.title)
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{title}">',
        f'<text x="{left}" y="18" class="title">{title}</text>',
    ]
    has = [s for s in chart.series if any(r.get(s.key) is not None for r in rows)]
    if not rows or not has:
        parts.append(
            f'<text x="{width / 2}" y="{top + plot_h / 2}" text-anchor="middle" class="muted">'
            "no data</text></svg>"
        )
        return "".join(parts)
    t_end = t_end if t_end is not None else max(float(r["t"]) for r in rows)
    t_span = max(t_end, 1.0)

    def scale(series: list[Series], extra: float = 0.0) -> float:
        values = [float(r[s.key]) for s in series for r in rows if r.get(s.key) is not None]
        return _nice_max(max([extra, *values]) * 1.05)

    left_series = [s for s in has if not s.right]
    right_series = [s for s in has if s.right]
    data_max = scale(left_series)
    # a limit far above the data would squash it: name it instead of drawing it
    limits = [(v, label) for v, label in chart.limits if v <= data_max * 2]
    off_scale = [label for v, label in chart.limits if v > data_max * 2]
    y_left = scale(left_series, max((v for v, _ in limits), default=0.0))
    y_right = _count_max(max((float(r[s.key]) for s in right_series for r in rows
                              if r.get(s.key) is not None), default=0.0))  # fmt: skip

    def x(t: float) -> float:
        return left + min(max(t, 0.0), t_span) / t_span * plot_w

    def y(v: float, top_value: float) -> float:
        return top + plot_h - v / top_value * plot_h

    for i in range(5):  # grid and left axis
        value = y_left * i / 4
        yy = y(value, y_left)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>'
            f'<text x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end" class="tick">'
            f"{_number(value)}</text>"
        )
        if right_series:
            rv = y_right * i / 4
            parts.append(
                f'<text x="{left + plot_w + 8}" y="{yy + 4:.1f}" class="tick" '
                f'fill="{COLOURS["users"]}">{_number(rv)}</text>'
            )
    step = _time_step(t_span)
    t = 0.0
    while t <= t_span + 1e-6:
        xx = x(t)
        parts.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top}" y2="{top + plot_h}" class="vgrid"/>'
            f'<text x="{xx:.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="tick">'
            f"{_clock(t, t_span)}</text>"
        )
        t += step
    parts.append(
        f'<text x="{left - 8}" y="{top - 10}" text-anchor="end" class="unit">'
        f"{html.escape(chart.unit)}</text>"
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="frame"/>'
    )
    if right_series:
        parts.append(
            f'<text x="{left + plot_w + 8}" y="{top - 10}" class="unit" '
            f'fill="{COLOURS["users"]}">{html.escape(chart.right_unit)}</text>'
        )
    for label in off_scale:
        parts.append(
            f'<text x="{left + plot_w - 6}" y="{top + 14}" text-anchor="end" '
            f'class="limit-label">{html.escape(label)} (far above)</text>'
        )
    for value, label in limits:
        yy = y(value, y_left)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" class="limit"/>'
            f'<text x="{left + plot_w - 4}" y="{yy - 4:.1f}" text-anchor="end" class="limit-label">'
            f"{html.escape(label)}</text>"
        )
    for s in has:
        top_value = y_right if s.right else y_left
        runs: list[list[str]] = [[]]
        for r in rows:
            v = r.get(s.key)
            if v is None:
                if runs[-1]:
                    runs.append([])
                continue
            runs[-1].append(f"{x(float(r['t'])):.1f},{y(float(v), top_value):.1f}")
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        for run in runs:
            if len(run) == 1:
                cx, cy = run[0].split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{s.colour}"/>')
            elif run:
                parts.append(
                    f'<polyline fill="none" stroke="{s.colour}" stroke-width="2"{dash} '
                    f'points="{" ".join(run)}"><title>{html.escape(s.name)}</title></polyline>'
                )
    legend_x = left + plot_w
    for s in reversed(has):  # legend, right-aligned above the plot
        label = html.escape(s.name + (" (right axis)" if s.right else ""))
        legend_x -= 30 + 7 * len(label)
        parts.append(
            f'<rect x="{legend_x:.0f}" y="{top - 21}" width="10" height="10" fill="{s.colour}"/>'
            f'<text x="{legend_x + 14:.0f}" y="{top - 12}" class="legend">{label}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def svg_chart(
    rows: list[dict[str, Any]], series: list[str], title: str, unit: str, width: int = 1200
) -> str:
    """A line chart of named series (the keys of ``rows``) on one axis."""
    chart = Chart(title, unit, [Series(s, s, COLOURS.get(s, "#000")) for s in series], width=width)
    if rows:
        t0 = float(rows[0]["t"])
        rows = [{**r, "t": float(r["t"]) - t0} for r in rows]
    return svg_line_chart(rows, chart)


# -- tables ----------------------------------------------------------------------------------------
def _table(headers: list[str], rows: str, cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:g}"
    return html.escape(str(value))


def _unit(metric: str) -> str:
    return {"min_rps": " req/s"}.get(metric, " ms" if metric.endswith("_ms") else "")


def _threshold_rows(verdicts: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    rows = []
    for v in verdicts:
        relation = "&ge;" if v["metric"] in FLOORS else "&le;"
        unit = _unit(v["metric"])
        note = f" <span class='muted'>({_cell(v['note'])})</span>" if v.get("note") else ""
        stats = (
            summary.get("total")
            if v["operation"] == "total"
            else (summary.get("operations") or {}).get(v["operation"])
        )
        if v["metric"] == "error_ratio" and stats and not note:
            note = (
                f" <span class='muted'>({stats['failures']} of {stats['requests']} failed)</span>"
            )
        rows.append(
            "<tr class='{cls}'><td class='mark'>{mark}</td><td>{op}</td><td>{metric} {rel} {thr}"
            "{unit}</td><td class='num'>{obs}{unit}{note}</td></tr>".format(
                cls="pass" if v["passed"] else "fail",
                mark="&#10003;" if v["passed"] else "&#10007;",
                op=_cell(v["operation"]),
                metric=_cell(v["metric"]),
                rel=relation,
                thr=_cell(v["threshold"]),
                unit=unit if v["observed"] is not None else "",
                obs=_cell(v["observed"]),
                note=note,
            )
        )
    return "".join(rows)


def _limit_for(thresholds: dict[str, Any], op: str) -> list[tuple[float, str]]:
    """The p95 ceiling that applies to ``op`` (its own, else ``*``), as a chart reference line."""
    own = thresholds.get(op) or {}
    star = thresholds.get("*") or {}
    if "p95_ms" in own:
        return [(float(own["p95_ms"]), f"p95 limit {own['p95_ms']:g} ms")]
    if "p95_ms" in star and op not in ("authorize", "refresh"):
        return [(float(star["p95_ms"]), f"p95 limit {star['p95_ms']:g} ms")]
    return []


RECON_COUNTS = (
    ("acknowledged", "acknowledged creates"),
    ("unique_refs", "distinct refs"),
    ("checked", "checked"),
    ("found", "found"),
    ("lost", "lost"),
    ("mismatched", "mismatched"),
    ("duplicate_keys", "duplicate keys"),
    ("errors", "could not be checked"),
    ("unchecked", "left unchecked"),
)


def _reconciliation(recon: dict[str, Any]) -> str:
    cards = []
    for key, label in RECON_COUNTS:
        value = recon.get(key, 0) or 0
        bad = key in ("lost", "mismatched", "duplicate_keys", "errors", "unchecked") and value
        cls = "card bad" if bad else "card"
        cards.append(
            f"<div class='{cls}'><div class='big'>{_cell(value)}</div>"
            f"<div class='muted'>{html.escape(label)}</div></div>"
        )
    verdict = (
        "<p class='muted' id='reconciliation-empty'>Nothing to check: the run acknowledged no "
        "create (its mix made none, or none succeeded).</p>"
        if recon.get("nothing_to_check")
        else "<p class='ok'>&#10003; nothing lost: every acknowledged create was found, with its "
        "fields and its created event.</p>"
        if recon.get("passed")
        else "<p class='bad'>&#10007; reconciliation failed: "
        + html.escape("; ".join(recon.get("reasons") or ["see the counts"]))
        + "</p>"
    )
    samples = recon.get("samples") or []
    sample_rows = "".join(
        f"<tr><td><code>{_cell(s['ref'])}</code></td><td><code>{_cell(s['key'])}</code></td>"
        f"<td>{_cell(s['outcome'])}</td></tr>"
        for s in samples
    )
    elapsed = recon.get("elapsed_s")
    took = f"<p class='muted'>checked in {_cell(elapsed)} s</p>" if elapsed is not None else ""
    return (
        f"<div class='cards' id='reconciliation-counts'>{''.join(cards)}</div>{verdict}{took}"
        + (_table(["ref", "key", "outcome"], sample_rows) if sample_rows else "")
    )


def _failures(failures: list[dict[str, Any]]) -> str:
    if not failures:
        return "<p class='muted' id='failures-none'>No request failed.</p>"
    rows = "".join(
        f"<tr><td class='num'>{_cell(f.get('occurrences'))}</td><td>{_cell(f.get('method'))}</td>"
        f"<td>{_cell(f.get('name'))}</td><td class='msg'>{_cell(f.get('error'))}</td></tr>"
        for f in failures
    )
    return _table(["count", "method", "operation", "message"], rows, "failures")


def _ramp(ramp: dict[str, Any]) -> str:
    knee = ramp.get("knee") or {}
    plateau = ramp.get("plateau") or {}
    broke = ramp.get("slo_break") or {}
    marked = knee.get("step", plateau.get("step"))
    rows = []
    for s in ramp.get("steps", []):
        tags = []
        if s["step"] == knee.get("step"):
            tags.append("knee")
        if s["step"] == plateau.get("step"):
            tags.append("throughput plateau")
        if s["step"] == broke.get("step"):
            tags.append("SLO broken")
        cls = "fail" if s["breached"] else ("knee" if s["step"] == marked else "")
        rows.append(
            f"<tr class='{cls}'><td>{s['step']}</td><td class='num'>{s['users']}</td>"
            f"<td class='num'>{s['requests']}</td><td class='num'>{_cell(s['rps'])}</td>"
            f"<td class='num'>{_cell(s['p95_ms'])}</td><td class='num'>{_cell(s['error_ratio'])}"
            f"</td><td>{_cell(', '.join(s['breached']))}</td><td>{', '.join(tags)}</td></tr>"
        )
    if knee:
        text = (
            f"Knee at step {knee['step']} ({knee['users']} users, {knee['rps']:g} req/s): "
            f"throughput stopped growing after it while latency or errors rose ({knee['why']})."
        )
    elif plateau:
        text = (
            f"Throughput stopped growing at step {plateau['step']} ({plateau['users']} users, "
            f"{plateau['rps']:g} req/s; {plateau['why']}), but latency and errors did not rise: "
            "the load generator may be the limit."
        )
    else:
        text = "No knee: throughput still grew at the last step."
    if broke:
        text += f" SLO broken at step {broke['step']} ({', '.join(broke['breached'])})."
    step_s = ramp.get("step_s")
    length = f" Steps of {step_s:g} s." if step_s else ""
    return f"<h2>Ramp steps</h2><p>{html.escape(text + length)}</p>" + _table(
        ["step", "users", "requests", "req/s", "p95 ms", "error ratio", "breached", ""],
        "".join(rows),
    )


CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:1.2em 2em;
color:#1d1d1f;background:#fff}
h1{font-size:1.5em;margin:.2em 0}
h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid #e3e3e3;padding-bottom:.2em}
.banner{padding:.7em 1em;border-radius:6px;margin:.6em 0;font-weight:600}
.banner.pass{background:#e7f5ea;color:#176b2c;border:1px solid #b7e0c1}
.banner.fail{background:#fde8e8;color:#9b0018;border:1px solid #f3b7bd}
.banner.error{background:#f3e8fd;color:#6b21a8;border:1px solid #d8b4fe}
.banner ul{margin:.3em 0 0 1.2em;padding:0;font-weight:400}
.facts{display:flex;flex-wrap:wrap;gap:.4em 1.6em;margin:.4em 0;color:#333}
.facts b{font-weight:600}
svg.chart{width:100%;height:auto;display:block;margin:.4em 0 1em}
svg .title{font-size:15px;font-weight:600;fill:#1d1d1f}
svg .tick{font-size:12px;fill:#555}
svg .unit{font-size:12px;fill:#555}
svg .legend{font-size:12px;fill:#333}
svg .muted{font-size:14px;fill:#888}
svg .grid{stroke:#e8e8e8}
svg .vgrid{stroke:#f2f2f2}
svg .frame{fill:none;stroke:#bbb}
svg .limit{stroke:#d62728;stroke-dasharray:4 4;stroke-width:1.2}
svg .limit-label{font-size:11px;fill:#d62728}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:0 1.5em}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.93em}
td,th{border-bottom:1px solid #e3e3e3;padding:.3em .8em;text-align:left;vertical-align:top}
th{background:#f6f6f6;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.mark{font-weight:bold}
tr.pass td.mark{color:#176b2c}
tr.fail td{background:#fdf0f0} tr.fail td.mark{color:#b00020}
tr.knee td{background:#fff6e0}
td.msg{font-family:ui-monospace,monospace;font-size:.92em;word-break:break-word}
.cards{display:flex;flex-wrap:wrap;gap:.6em}
.card{border:1px solid #e3e3e3;border-radius:6px;padding:.5em .9em;min-width:8em}
.card.bad{border-color:#f3b7bd;background:#fdf0f0}
.big{font-size:1.5em;font-weight:600;font-variant-numeric:tabular-nums}
.muted{color:#777}
.ok{color:#176b2c;font-weight:600} .bad{color:#9b0018;font-weight:600}
a{color:#1558b0}
"""


def render_html(report_dir: str | Path) -> Path | None:
    """Write ``load.html`` beside ``load.json``; returns its path (None without load.json)."""
    report_dir = Path(report_dir)
    try:
        summary = json.loads((report_dir / "load.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    out = report_dir / "load.html"
    out.write_text(render_page(summary, report_dir), encoding="utf-8")
    return out


def _no_load_page(summary: dict[str, Any]) -> str:
    """The page of a run the pre-check stopped: the verdict and its reason, nothing measured."""
    word = str(summary.get("verdict") or "error").upper()
    shape = _cell(summary.get("shape"))
    cls = "fail" if word == "FAIL" else "error"
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>paysuite load: {shape}: {word}</title>",
            f"<style>{CSS}</style></head><body>",
            f"<h1>paysuite load: shape {shape}</h1>",
            f'<div class="banner {cls}" id="verdict">{word} (exit '
            f"{_cell(summary.get('exit_code'))}): {html.escape(str(summary.get('reason')))}</div>",
            f'<div class="facts"><span>target <b>{_cell(summary.get("target"))}</b></span>'
            f"<span>stopped: {_cell(summary.get('stop_reason'))}</span></div>",
            "<p id='no-load'>"
            + (
                "The target answered the pre-check's authorize, wrongly: a finding about the "
                "target, so the run fails without sending load."
                if word == "FAIL"
                else "Nothing could be measured: there is no verdict on the target."
            )
            + ' <a href="load.json">load.json</a></p>',
            "</body></html>",
            "",
        ]
    )


def render_page(summary: dict[str, Any], report_dir: Path) -> str:
    """The page's HTML (see the module docstring)."""
    if summary.get("no_load"):
        return _no_load_page(summary)
    files = summary.get("files") or {}
    rows = timeline_rows(summary, report_dir)
    t_end = summary.get("duration_s")
    if rows:
        t_end = max(float(rows[-1]["t"]), 1.0)
    passed = summary.get("exit_code") == 0
    recon = summary.get("reconciliation") or {}
    thresholds = (summary.get("slo") or {}).get("thresholds") or {}
    verdicts = (summary.get("slo") or {}).get("verdicts", [])
    operations = summary.get("operations") or {}
    op_rows = "".join(
        f"<tr><td>{_cell(name)}</td><td class='num'>{s['requests']}</td>"
        f"<td class='num'>{s['failures']}</td><td class='num'>{_cell(s['rps'])}</td>"
        f"<td class='num'>{_cell(s['p50_ms'])}</td><td class='num'>{_cell(s['p95_ms'])}</td>"
        f"<td class='num'>{_cell(s['p99_ms'])}</td></tr>"
        for name, s in sorted(operations.items())
    )
    charts = [
        svg_line_chart(
            rows,
            Chart(
                "Throughput and users",
                "req/s",
                [
                    Series("requests/s", "req/s", COLOURS["req/s"]),
                    Series("failures/s", "fail/s", COLOURS["fail/s"]),
                    Series("users", "users", COLOURS["users"], right=True, dashed=True),
                ],
                right_unit="users",
            ),
            t_end,
        ),
        svg_line_chart(
            rows,
            Chart(
                "Latency of the mix operations per interval (authorize and refresh: below)",
                "ms",
                [Series(p, p, COLOURS[p]) for p in ("p50", "p95", "p99")],
            ),
            t_end,
        ),
    ]
    per_op = []
    for op in sorted(operations):
        if not any(r.get(f"{op}:p95") is not None for r in rows):
            continue
        per_op.append(
            svg_line_chart(
                rows,
                Chart(
                    f"{op}: latency",
                    "ms",
                    [Series(p, f"{op}:{p}", COLOURS[p]) for p in ("p50", "p95", "p99")],
                    limits=_limit_for(thresholds, op),
                    width=760,
                    height=280,
                ),
                t_end,
            )
        )
    extra = []
    if summary.get("ramp"):
        extra.append(_ramp(summary["ramp"]))
    if summary.get("time_to_processed"):
        ttp = summary["time_to_processed"]
        extra.append(
            "<h2>Time to processed</h2>"
            + _table(
                ["count", "p50 s", "p95 s", "p99 s", "max s", "time-outs", "outcomes"],
                f"<tr><td class='num'>{ttp['count']}</td><td class='num'>{_cell(ttp['p50_s'])}"
                f"</td><td class='num'>{_cell(ttp['p95_s'])}</td><td class='num'>"
                f"{_cell(ttp['p99_s'])}</td><td class='num'>{_cell(ttp['max_s'])}</td>"
                f"<td class='num'>{_cell(ttp.get('timeouts'))}</td>"
                f"<td>{_cell(json.dumps(ttp.get('by_status', {})))}</td></tr>",
            )
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
    word = "PASS" if passed else "INTERRUPTED" if summary.get("exit_code") == 130 else "FAIL"
    if recon.get("nothing_to_check"):
        recon_word = "had nothing to check (no create acknowledged)"
    else:
        recon_word = "found nothing lost" if recon.get("passed") else "FAILED"
    headline = (
        f"{word} (exit {_cell(summary.get('exit_code'))}): thresholds "
        f"{'met' if summary.get('slo_passed') else 'breached'}, reconciliation {recon_word}"
    )
    reasons = summary.get("failed_because") or []
    reason_list = (
        "<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in reasons) + "</ul>"
        if reasons and not passed
        else ""
    )
    peak = summary.get("peak_users") or summary.get("users")
    facts = "".join(
        f"<span>{fact}</span>"
        for fact in (
            f"target <b>{_cell(summary.get('target'))}</b>",
            f"<b>{_cell(summary.get('duration_s'))} s</b>",
            f"<b>{_cell(peak)}</b> users at peak",
            f"<b>{total.get('requests', 0)}</b> requests ({_cell(total.get('rps'))} req/s)",
            f"<b>{total.get('failures', 0)}</b> failures",
            f"authorize {auth.get('authorize', 0)} · refresh {auth.get('refresh', 0)}",
            f"stopped: {_cell(summary.get('stop_reason'))}",
        )
    )
    shape = _cell(summary.get("shape") or summary.get("profile"))  # profile: its old key
    page = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>paysuite load: {shape}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>paysuite load: shape {shape}</h1>",
        f'<div class="banner {"pass" if passed else "fail"}" id="verdict">{html.escape(headline)}'
        f"{reason_list}</div>",
        f'<div class="facts">{facts}</div>',
        f"<p>{links}</p>",
        "<h2>Throughput and latency over time</h2>",
        *charts,
        "<h2>Latency per operation over time</h2>" if per_op else "",
        f'<div class="grid2">{"".join(per_op)}</div>' if per_op else "",
        "<h2>Thresholds</h2>",
        _table(
            ["", "operation", "threshold", "measured"],
            _threshold_rows(verdicts, summary),
            "thresholds",
        ),
        "<h2>Operations</h2>",
        _table(
            ["name", "requests", "failures", "req/s", "p50 ms", "p95 ms", "p99 ms"],
            op_rows,
            "operations",
        ),
        "<h2>Failures</h2>",
        _failures(summary.get("failures") or []),
        "<h2>Reconciliation: nothing lost?</h2>",
        _reconciliation(recon),
        *extra,
        "</body></html>",
        "",
    ]
    return "\n".join(page)
