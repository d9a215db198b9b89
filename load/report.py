"""load.html: a self-contained summary of one load run (inline SVG and CSS; no script, nothing
fetched from anywhere), drawn from load.json alone, so that a CI's report step needs nothing
else. A load.json without a timeline falls back to Locust's ``*_stats_history.csv``.
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

from load.slo import FLOORS

COLOURS = {
    "req/s": "#1f77b4",
    "fail/s": "#d62728",
    "users": "#6b6b6b",
    "p50": "#2ca02c",
    "p95": "#ff7f0e",
    "p99": "#9467bd",
}

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
    magnitude = 10.0 ** math.floor(math.log10(value))
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


@dataclass
class _Frame:
    """A chart's plot area: where a time and a value are drawn."""

    left: float
    top: float
    width: float
    height: float
    t_span: float

    def x(self, t: float) -> float:
        return self.left + min(max(t, 0.0), self.t_span) / self.t_span * self.width

    def y(self, v: float, top_value: float) -> float:
        return self.top + self.height - v / top_value * self.height


def svg_line_chart(rows: Sequence[dict[str, Any]], chart: Chart, t_end: float | None = None) -> str:
    """One responsive line chart (inline SVG): time on x from 0 to the end of the run, the left
    series on the left axis, the ``right`` ones (users) on their own right-hand axis."""
    width, height = chart.width, chart.height
    left, top = 64, 40
    plot_w, plot_h = width - left - (64 if chart.right_unit else 20), height - top - 36
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
    frame = _Frame(left, top, plot_w, plot_h, max(t_end, 1.0))

    def values(series: list[Series]) -> list[float]:
        return [float(r[s.key]) for s in series for r in rows if r.get(s.key) is not None]

    right_series = [s for s in has if s.right]
    left_max = max([0.0, *values([s for s in has if not s.right])])
    data_max = _nice_max(left_max * 1.05)
    # a limit far above the data would squash it: name it instead of drawing it
    limits = [(v, label) for v, label in chart.limits if v <= data_max * 2]
    off_scale = [label for v, label in chart.limits if v > data_max * 2]
    y_left = _nice_max(max([left_max, *(v for v, _ in limits)]) * 1.05)
    y_right = _count_max(max(values(right_series), default=0.0))
    parts += _axes(frame, chart, y_left, y_right if right_series else None)
    parts += _limits(frame, limits, off_scale, y_left)
    for s in has:
        parts += _line(frame, rows, s, y_right if s.right else y_left)
    parts += _legend(frame, has)
    parts.append("</svg>")
    return "".join(parts)


def _axes(frame: _Frame, chart: Chart, y_left: float, y_right: float | None) -> list[str]:
    """The grid, the left (and right) value axis, the time axis and the units."""
    left, top, plot_w, plot_h = frame.left, frame.top, frame.width, frame.height
    parts = []
    for i in range(5):
        value = y_left * i / 4
        yy = frame.y(value, y_left)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>'
            f'<text x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end" class="tick">'
            f"{_number(value)}</text>"
        )
        if y_right is not None:
            parts.append(
                f'<text x="{left + plot_w + 8}" y="{yy + 4:.1f}" class="tick" '
                f'fill="{COLOURS["users"]}">{_number(y_right * i / 4)}</text>'
            )
    step = _time_step(frame.t_span)
    t = 0.0
    while t <= frame.t_span + 1e-6:
        xx = frame.x(t)
        parts.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top}" y2="{top + plot_h}" class="vgrid"/>'
            f'<text x="{xx:.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="tick">'
            f"{_clock(t, frame.t_span)}</text>"
        )
        t += step
    parts.append(
        f'<text x="{left - 8}" y="{top - 10}" text-anchor="end" class="unit">'
        f"{html.escape(chart.unit)}</text>"
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="frame"/>'
    )
    if y_right is not None:
        parts.append(
            f'<text x="{left + plot_w + 8}" y="{top - 10}" class="unit" '
            f'fill="{COLOURS["users"]}">{html.escape(chart.right_unit)}</text>'
        )
    return parts


def _limits(
    frame: _Frame, limits: list[tuple[float, str]], off_scale: list[str], y_left: float
) -> list[str]:
    """The reference lines, and the names of those too far above the data to draw."""
    right = frame.left + frame.width
    parts = [
        f'<text x="{right - 6}" y="{frame.top + 14}" text-anchor="end" '
        f'class="limit-label">{html.escape(label)} (far above)</text>'
        for label in off_scale
    ]
    for value, label in limits:
        yy = frame.y(value, y_left)
        parts.append(
            f'<line x1="{frame.left}" x2="{right}" y1="{yy:.1f}" y2="{yy:.1f}" class="limit"/>'
            f'<text x="{right - 4}" y="{yy - 4:.1f}" text-anchor="end" class="limit-label">'
            f"{html.escape(label)}</text>"
        )
    return parts


def _line(frame: _Frame, rows: Sequence[dict[str, Any]], s: Series, top_value: float) -> list[str]:
    """One series: a polyline per run of points without a gap, a dot for a lone point."""
    runs: list[list[str]] = [[]]
    for r in rows:
        v = r.get(s.key)
        if v is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(f"{frame.x(float(r['t'])):.1f},{frame.y(float(v), top_value):.1f}")
    dash = ' stroke-dasharray="6 4"' if s.dashed else ""
    parts = []
    for run in runs:
        if len(run) == 1:
            cx, cy = run[0].split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{s.colour}"/>')
        elif run:
            parts.append(
                f'<polyline fill="none" stroke="{s.colour}" stroke-width="2"{dash} '
                f'points="{" ".join(run)}"><title>{html.escape(s.name)}</title></polyline>'
            )
    return parts


def _legend(frame: _Frame, has: list[Series]) -> list[str]:
    """Right-aligned above the plot."""
    parts = []
    legend_x = frame.left + frame.width
    for s in reversed(has):
        label = html.escape(s.name + (" (right axis)" if s.right else ""))
        legend_x -= 30 + 7 * len(label)
        parts.append(
            f'<rect x="{legend_x:.0f}" y="{frame.top - 21}" width="10" height="10" '
            f'fill="{s.colour}"/><text x="{legend_x + 14:.0f}" y="{frame.top - 12}" '
            f'class="legend">{label}</text>'
        )
    return parts


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
        unit = _unit(v["metric"]) if v["observed"] is not None else ""
        rows.append(
            f"<tr class='{'pass' if v['passed'] else 'fail'}'><td class='mark'>"
            f"{'&#10003;' if v['passed'] else '&#10007;'}</td><td>{_cell(v['operation'])}</td>"
            f"<td>{_cell(v['metric'])} {relation} {_cell(v['threshold'])}{unit}</td>"
            f"<td class='num'>{_cell(v['observed'])}{unit}{note}</td></tr>"
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
    knee, plateau, broke = (ramp.get(key) or {} for key in ("knee", "plateau", "slo_break"))
    marked = knee.get("step", plateau.get("step"))
    rows = []
    for s in ramp.get("steps", []):
        marks = ((knee, "knee"), (plateau, "throughput plateau"), (broke, "SLO broken"))
        tags = [tag for found, tag in marks if s["step"] == found.get("step")]
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


#: the page's style sheet, a file of its own beside this module
CSS = Path(__file__).with_name("report.css").read_text(encoding="utf-8")


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


def insecure_note(summary: dict[str, Any]) -> str:
    """``; INSECURE: ...`` after a verdict whose run verified no certificate (else nothing)."""
    tls = str(summary.get("tls") or "")
    return f"; {tls}" if tls.startswith("INSECURE") else ""


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
            f"{_cell(summary.get('exit_code'))}): {html.escape(str(summary.get('reason')))}"
            f"{insecure_note(summary)}</div>",
            f'<div class="facts"><span>target <b>{_cell(summary.get("target"))}</b></span>'
            f"<span>stopped: {_cell(summary.get('stop_reason'))}</span>"
            f"<span id='tls'>{_cell(summary.get('tls') or 'TLS not recorded')}</span></div>",
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
        t_end = max(float(rows[-1]["t"] or 0.0), 1.0)
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
        + insecure_note(summary)
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
            f"<span id='tls'>{_cell(summary.get('tls') or 'TLS not recorded')}</span>",
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
