"""load.html: a self-contained summary of one load run (inline SVG and CSS; no script, nothing
fetched from anywhere), drawn from the run's summary (what load.json holds) as the run hands it
over, so that a CI's report step needs nothing else. A summary without a timeline falls back to
Locust's ``*_stats_history.csv``.

The page is the report engine's ``load.html`` template; this module computes what it draws:
the points, ticks, reference lines and legend of each chart (:class:`Plot`), which the
template's ``chart.svg`` turns into SVG in a loop.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from load.records import LoadSummary, ShapeSummary
from load.shape_catalog import AUTH_OPERATIONS
from load.slo import FLOORS, ramp_finding
from paysuite_core.report_engine import render

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


def timeline_rows(summary: LoadSummary, report_dir: Path) -> list[HistoryRow]:
    """The run's points, from load.json's timeline (else Locust's history CSV), ``t`` from 0."""
    timeline = summary.get("timeline")
    samples = timeline["samples"] if timeline else []
    if samples:
        rows: list[HistoryRow] = [{"t": 0.0, "users": 0.0, "req/s": None, "fail/s": None}]
        for s in samples:
            row: dict[str, Any] = {"req/s": s["rps"], "fail/s": s["fail_s"]}
            row.update((key, s[key]) for key in ("t", "users", "p50", "p95", "p99"))
            for op, point in (s.get("ops") or {}).items():
                for key in ("p50", "p95", "p99", "rps"):
                    row[f"{op}:{key}"] = point.get(key)
            rows.append(row)
        return rows
    files = summary.get("files") or {}
    history_csv = files.get("history_csv")
    history = read_history(report_dir / history_csv) if history_csv else []
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
    steps = (step * magnitude for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10))
    return next((top for top in steps if value <= top), value)


def _count_max(value: float) -> float:
    """The top of an axis of counts (users): four whole-numbered intervals above ``value``."""
    steps = (1, 2, 3, 4, 5, 10, 15, 20, 25, 50, 75, 100, 150, 200, 250, 500, 1000)
    tops = (4.0 * step for step in steps)
    return next((top for top in tops if value * 1.05 <= top), None) or _nice_max(value * 1.05)


def _time_step(span: float) -> float:
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
    return next((step for step in steps if span / step <= 10), 7200)


def _clock(t: float, span: float) -> str:
    if span < 120:
        return f"{t:g}s"
    return f"{int(t // 60)}:{int(t % 60):02d}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:g}"


@dataclass
class Plot:
    """What one chart draws, in SVG coordinates: the template's ``chart.svg`` loops over it."""

    chart: Chart
    left: int = 64
    top: int = 40
    plot_w: int = 0
    plot_h: int = 0
    empty: bool = True
    #: (y, left label, right label or "") of each horizontal grid line
    y_ticks: list[tuple[float, str, str]] = field(default_factory=list)
    #: (x, label) of each time tick
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    #: (y, label) of each reference line drawn; the labels of those too far above to draw
    limits: list[tuple[float, str]] = field(default_factory=list)
    off_scale: list[str] = field(default_factory=list)
    #: (series, "x,y x,y ...") of each run of points without a gap; (series, x, y) of a lone one
    lines: list[tuple[Series, str]] = field(default_factory=list)
    dots: list[tuple[Series, str, str]] = field(default_factory=list)
    #: (x, series, label), right-aligned above the plot
    legend: list[tuple[float, Series, str]] = field(default_factory=list)
    has_right: bool = False
    #: the seconds the time axis spans
    t_span: float = 1.0

    def x(self, t: float) -> float:
        return self.left + min(max(t, 0.0), self.t_span) / self.t_span * self.plot_w

    def y(self, v: float, top_value: float) -> float:
        return self.top + self.plot_h - v / top_value * self.plot_h


def plot(rows: Sequence[dict[str, Any]], chart: Chart, t_end: float | None = None) -> Plot:
    """One responsive line chart: time on x from 0 to the end of the run, the left series on
    the left axis, the ``right`` ones (users) on their own right-hand axis."""
    out = Plot(chart)
    out.plot_w = chart.width - out.left - (64 if chart.right_unit else 20)
    out.plot_h = chart.height - out.top - 36
    has = [s for s in chart.series if any(r.get(s.key) is not None for r in rows)]
    if not rows or not has:
        return out
    out.empty = False
    t_end = t_end if t_end is not None else max(float(r["t"]) for r in rows)
    out.t_span = max(t_end, 1.0)

    def values(series: list[Series]) -> list[float]:
        return [float(r[s.key]) for s in series for r in rows if r.get(s.key) is not None]

    right_series = [s for s in has if s.right]
    out.has_right = bool(right_series)
    left_max = max([0.0, *values([s for s in has if not s.right])])
    data_max = _nice_max(left_max * 1.05)
    # a limit far above the data would squash it: name it instead of drawing it
    drawn = [(v, label) for v, label in chart.limits if v <= data_max * 2]
    out.off_scale = [label for v, label in chart.limits if v > data_max * 2]
    y_left = _nice_max(max([left_max, *(v for v, _ in drawn)]) * 1.05)
    y_right = _count_max(max(values(right_series), default=0.0))
    out.y_ticks = [
        (
            out.y(y_left * i / 4, y_left),
            _number(y_left * i / 4),
            _number(y_right * i / 4) if right_series else "",
        )
        for i in range(5)
    ]
    step = _time_step(out.t_span)
    count = int((out.t_span + 1e-6) // step) + 1
    out.x_ticks = [(out.x(i * step), _clock(i * step, out.t_span)) for i in range(count)]
    out.limits = [(out.y(v, y_left), label) for v, label in drawn]
    for s in has:
        _line(out, rows, s, y_right if s.right else y_left)
    legend_x = out.left + out.plot_w
    for s in reversed(has):
        label = s.name + (" (right axis)" if s.right else "")
        legend_x -= 30 + 7 * len(label)
        out.legend.append((legend_x, s, label))
    return out


def _line(out: Plot, rows: Sequence[dict[str, Any]], s: Series, top_value: float) -> None:
    """One series: a polyline per run of points without a gap, a dot for a lone point."""
    runs: list[list[str]] = [[]]
    for r in rows:
        v = r.get(s.key)
        if v is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(f"{out.x(float(r['t'])):.1f},{out.y(float(v), top_value):.1f}")
    for run in runs:
        if len(run) == 1:
            cx, cy = run[0].split(",")
            out.dots.append((s, cx, cy))
        elif run:
            out.lines.append((s, " ".join(run)))


def _limit_for(thresholds: dict[str, Any], op: str) -> list[tuple[float, str]]:
    """The p95 ceiling that applies to ``op`` (its own, else ``*``), as a chart reference line."""
    metrics = thresholds.get(op) or {}
    if "p95_ms" not in metrics and op not in AUTH_OPERATIONS:
        metrics = thresholds.get("*") or {}
    limit = metrics.get("p95_ms")
    return [] if limit is None else [(float(limit), f"p95 limit {limit:g} ms")]


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


def ramp_text(ramp: ShapeSummary) -> str:
    """What the ramp found (its knee, plateau or SLO break), in a sentence above its steps."""
    text = ramp_finding(ramp, terminal=False)
    text = f"{text[0].upper()}{text[1:]}."
    broke = ramp.get("slo_break")
    if broke:
        text += f" SLO broken at step {broke['step']} ({', '.join(broke['breached'])})."
    step_s = ramp.get("step_s")
    return text + (f" Steps of {step_s:g} s." if step_s else "")


def render_html(summary: LoadSummary, report_dir: str | Path) -> Path:
    """Write ``load.html`` beside ``load.json`` from the run's ``summary``; returns its path."""
    out = Path(report_dir) / "load.html"
    out.write_text(render_page(summary, Path(report_dir)), encoding="utf-8")
    return out


def render_page(summary: LoadSummary, report_dir: Path) -> str:
    """The page's HTML (see the module docstring)."""
    if summary.get("no_load"):
        return render("load.html", s=summary, no_load=True)
    rows = timeline_rows(summary, report_dir)
    t_end = summary.get("duration_s")
    if rows:
        t_end = max(float(rows[-1]["t"] or 0.0), 1.0)
    slo = summary.get("slo")
    thresholds = (slo.get("thresholds") if slo else None) or {}
    operations = summary.get("operations") or {}
    charts = [
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
        Chart(
            "Latency of the mix operations per interval (authorize and refresh: below)",
            "ms",
            [Series(p, p, COLOURS[p]) for p in ("p50", "p95", "p99")],
        ),
    ]
    per_op = [
        Chart(
            f"{op}: latency",
            "ms",
            [Series(p, f"{op}:{p}", COLOURS[p]) for p in ("p50", "p95", "p99")],
            limits=_limit_for(thresholds, op),
            width=760,
            height=280,
        )
        for op in sorted(operations)
        if any(r.get(f"{op}:p95") is not None for r in rows)
    ]
    return render(
        "load.html",
        s=summary,
        no_load=False,
        charts=[plot(rows, chart, t_end) for chart in charts],
        per_op=[plot(rows, chart, t_end) for chart in per_op],
        users=COLOURS["users"],
        floors=FLOORS,
        recon_counts=RECON_COUNTS,
        ramp_text=ramp_text(summary["ramp"]) if summary.get("ramp") else "",
    )
