"""The end of a run: statistics, SLO verdicts, reconciliation, load.json, the exit status.

Exit status: 0 every threshold met and nothing lost; 1 a threshold breached (or the run aborted
by ``--abort-on-fail``); 3 the reconciliation failed, whatever the thresholds say; 2 (usage
errors, no verdict) is decided elsewhere. It runs in the Locust master (or local) process when
Locust quits, so that ``paysuite load`` and a plain ``locust -f load/locustfile.py`` give the
same verdict from the same numbers: Locust's in-memory statistics and the workers' ledger.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from load.context import of
from load.ledger import LEDGER, TimeToProcessed
from load.plan import option
from load.reconcile import reconcile
from load.records import (
    Abort,
    LoadSummary,
    OperationSummary,
    Reconciliation,
    ShapeSummary,
    TimeToProcessedStats,
)
from load.shape_catalog import Shape, Thresholds
from load.slo import NO_REQUESTS, OperationStats, Verdict, evaluate, percentile_of, ramp_finding
from load.terminal import print_table_once, reports_line
from load.timeline import TIMELINE, collect_operations
from load.webhook_journal import journal_path

if TYPE_CHECKING:  # this module is imported outside Locust too: no locust import at run time
    from locust import LoadTestShape
    from locust.env import Environment
    from locust.stats import RequestStats

SCHEMA = "paysuite-load/1"
EXIT_PASSED, EXIT_BREACHED, EXIT_LOST = 0, 1, 3
#: a run stopped before its shape ended it (Ctrl-C, SIGTERM, the web UI's Stop), in which
#: nothing failed: what ran is reported, but a run cut short is not a pass (the shell's status
#: for Ctrl-C)
EXIT_INTERRUPTED = 130
#: load.json's ``stop_reason`` of such a run
INTERRUPTED = "interrupted before the shape's end (Ctrl-C, SIGTERM or the web UI's Stop)"
#: how many of Locust's distinct failure messages load.json keeps
FAILURES_KEPT = 50


def exit_status(slo_passed: bool, reconciliation_passed: bool) -> int:
    """0 passed; 3 the reconciliation failed (it wins: data, not speed); 1 a threshold breached."""
    if not reconciliation_passed:
        return EXIT_LOST
    return EXIT_PASSED if slo_passed else EXIT_BREACHED


def verdict_word(exit_code: int) -> str:
    """load.json's ``verdict``: the exit status in the word every report shows."""
    return {EXIT_PASSED: "pass", EXIT_INTERRUPTED: "interrupted", 2: "error"}.get(exit_code, "fail")


def _pass_reason(exit_code: int, reconciliation: Reconciliation) -> str:
    """load.json's ``reason`` of a run with nothing to blame."""
    if exit_code == EXIT_INTERRUPTED:
        return INTERRUPTED
    if reconciliation.get("nothing_to_check"):
        return "every threshold met; no create was acknowledged, so nothing to reconcile"
    return "every threshold met, nothing lost"


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of a list (None when empty)."""
    return percentile_of(Counter(values), fraction)


def time_to_processed_stats(samples: list[TimeToProcessed]) -> TimeToProcessedStats:
    seconds = [s["seconds"] for s in samples]
    return {
        "count": len(seconds),
        "p50_s": percentile(seconds, 0.5),
        "p95_s": percentile(seconds, 0.95),
        "p99_s": percentile(seconds, 0.99),
        "max_s": max(seconds) if seconds else None,
        "by_status": dict(Counter(s["status"] for s in samples)),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def judge(
    shape: Shape,
    slo: Thresholds,
    ops: dict[str, OperationStats],
    total: OperationStats,
    ttp: TimeToProcessedStats,
    shape_summary: ShapeSummary,
    counters: dict[str, int] | None = None,
) -> list[Verdict]:
    """The verdicts of the run (the ramp judges its first step: breaking later is its finding)."""
    ops = dict(ops)
    if ttp["count"]:
        p50, p95, p99 = _ms(ttp["p50_s"]), _ms(ttp["p95_s"]), _ms(ttp["p99_s"])
        ops["time-to-processed"] = OperationStats(ttp["count"], 0, 0.0, p50, p95, p99)
    if shape.name == "ramp":
        steps = shape_summary.get("steps") or []
        if not steps:
            return [Verdict("ramp", "steps_completed", 1, 0, False, "no step completed")]
        first, star = steps[0], slo.get("*", {})
        label = f"step {first['step']} ({first['users']} users)"
        later = [str(step["step"]) for step in steps[1:]]
        note = (
            f"the verdict's step; steps {', '.join(later)}: the ramp's findings, not judged"
            if later
            else "the only step completed"
        )
        return [
            Verdict(
                label, metric, star[metric], first[metric], metric not in first["breached"], note
            )
            for metric in ("p95_ms", "error_ratio")
            if metric in star
        ]
    verdicts = evaluate(slo, ops, total)
    for key, started in sorted((counters or {}).items()):
        op = key.removeprefix("started:")
        if key.startswith("started:") and started and not ops.get(op, NO_REQUESTS).requests:
            # every one still hanging when the run ended: no request completed, none counted
            verdicts.append(
                Verdict(op, "successes", 1, 0, False, f"no request completed ({started} started)")
            )
    if total.requests == 0:
        verdicts.append(Verdict("total", "requests", 1, 0, False, "no request was made"))
    return verdicts


def _marks() -> tuple[str, str]:
    """k6's check mark and cross, or plain text where stdout cannot print them."""
    try:
        "✓✗".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return "ok", "XX"
    return "✓", "✗"


_UNITS = {"p50_ms": "ms", "p95_ms": "ms", "p99_ms": "ms", "min_rps": "/s"}
_MEASURED = {"p50_ms": "p50", "p95_ms": "p95", "p99_ms": "p99", "min_rps": "rps"}


def threshold_line(v: Verdict, ok: str = "✓", cross: str = "✗") -> str:
    """One threshold, k6-style: ``✓ cashin p95_ms<=500 ......... p95=12ms``."""
    unit = _UNITS.get(v.metric, "")
    rule = f"{v.operation} {v.metric}{v.relation}{v.threshold:g}{unit}"
    shown = "n/a" if v.observed is None else f"{v.observed:g}{unit}"
    measured = f"{_MEASURED.get(v.metric, v.metric)}={shown}"
    note = f" ({v.note})" if v.note else ""
    return f"  {ok if v.passed else cross} {rule} {'.' * max(3, 40 - len(rule))} {measured}{note}"


def result_reasons(
    verdicts: list[Verdict],
    reconciliation: Reconciliation,
    aborted: Abort | None = None,
) -> list[str]:
    """Why a run fails, one phrase each (empty: it passes)."""
    reasons = [f"threshold {v.describe()}" for v in verdicts if not v.passed]
    if aborted:
        reasons.insert(0, f"aborted at {aborted['at_s']:g} s by --abort-on-fail")
    reasons += [f"reconciliation: {why}" for why in reconciliation.get("reasons") or []]
    return reasons


def verdict_table(
    verdicts: list[Verdict],
    reconciliation: Reconciliation,
    shape: str,
    exit_code: int,
    aborted: Abort | None = None,
    tls: str = "",
) -> str:
    """The text printed at the end of a run: the thresholds, the reconciliation, the result;
    ``tls`` (``LoadPlan.tls_text``) is said in the result line when it is ``INSECURE: ...``."""
    ok, cross = _marks()
    lines = [f"paysuite: thresholds (shape {shape})"]
    lines += [threshold_line(v, ok, cross) for v in verdicts]
    for v in verdicts:
        if not v.passed:
            lines.append(f"  breached: {v.describe()}" + (f" ({v.note})" if v.note else ""))
    if aborted:
        lines.append(
            f"  aborted at {aborted['at_s']:g} s (--abort-on-fail): {aborted['reason']} could "
            "no longer be met"
        )
    r = reconciliation
    reasons = r.get("reasons") or []
    if r.get("nothing_to_check"):
        lines.append("paysuite: reconciliation: nothing to check (no create was acknowledged)")
    else:
        dup = r.get("duplicate_keys", 0) + r.get("server_duplicate_keys", 0)
        verdict = f"{ok} PASS" if r.get("passed") else f"{cross} FAIL: " + "; ".join(reasons)
        lines.append(
            f"paysuite: reconciliation: {r.get('acknowledged', 0)} acknowledged creates, "
            f"{r.get('checked', 0)} checked, {r.get('found', 0)} found, {r.get('lost', 0)} lost, "
            f"{r.get('mismatched', 0)} mismatched, {dup} duplicate keys, "
            f"{r.get('unchecked', 0)} unchecked -> {verdict}"
        )
    why = result_reasons(verdicts, r, aborted)
    insecure = f"; {tls}" if tls.startswith("INSECURE") else ""
    if exit_code == 0:
        lines.append(f"paysuite: result: PASS (exit 0){insecure}")
    elif exit_code == EXIT_INTERRUPTED:
        lines.append(
            f"paysuite: result: INTERRUPTED (exit {EXIT_INTERRUPTED}): {INTERRUPTED}; what ran "
            f"met every threshold and the reconciliation found nothing lost{insecure}"
        )
    else:
        meaning = {EXIT_BREACHED: "threshold breached", EXIT_LOST: "reconciliation failed"}
        # one line per reason: a breach of many thresholds stays readable in a CI log
        lines.append(
            f"paysuite: result: FAIL (exit {exit_code}: {meaning.get(exit_code, 'failed')})"
            f"{insecure}:"
        )
        lines += [f"  - {reason}" for reason in why]
    return "\n".join(lines)


def ramp_table(shape_summary: ShapeSummary) -> list[str]:
    """The ramp's steps at the terminal (users, req/s, p95, errors), the knee marked: what a
    ramp is run for, without opening load.html."""
    steps = shape_summary.get("steps") or []
    if not steps:
        return []
    marks: dict[int, list[str]] = {}
    for found, label in (
        (shape_summary.get("knee"), "knee"),
        (shape_summary.get("plateau"), "plateau"),
        (shape_summary.get("slo_break"), "SLO broken"),
    ):
        if found:
            marks.setdefault(int(found["step"]), []).append(label)
    lines = [
        f"paysuite: ramp steps\n  {'step':>4} {'users':>6} {'req/s':>9} {'p95 ms':>8} {'errors':>8}"
    ]
    for step in steps:
        p95 = "n/a" if step.get("p95_ms") is None else f"{step['p95_ms']:g}"
        errors = f"{100 * float(step.get('error_ratio') or 0):.1f}%"
        mark = marks.get(int(step["step"]))
        lines.append(
            f"  {step['step']:>4} {step['users']:>6} {step['rps']:>9g} {p95:>8} {errors:>8}"
            + (f"  <- {', '.join(mark)}" if mark else "")
        )
    return lines


def collect_failures(stats: RequestStats) -> list[dict[str, str | int]]:
    """Locust's distinct failure messages, most frequent first (load.html's failures table)."""
    errors = sorted(stats.errors.values(), key=lambda error: -error.occurrences)
    return [
        {"method": e.method, "name": e.name, "error": str(e.error), "occurrences": e.occurrences}
        for e in errors[:FAILURES_KEPT]
    ]


def ramp_lines(shape_summary: ShapeSummary) -> list[str]:
    """What the ramp found, from the same per-step numbers as load.json and load.html."""
    lines = [f"paysuite: {ramp_finding(shape_summary, terminal=True)}"]
    broke, best = shape_summary.get("slo_break"), shape_summary.get("max_sustainable")
    if broke:
        lines.append(
            f"paysuite: SLO broken at step {broke['step']} ({broke['users']} users, "
            f"{broke['rps']:g} req/s): {', '.join(broke['breached'])}"
            + (f"; last good step {best['users']} users at {best['rps']:g} req/s" if best else "")
        )
    return lines


def _stats(s: OperationStats) -> OperationSummary:
    return {
        "requests": s.requests,
        "failures": s.failures,
        "error_ratio": round(s.error_ratio, 6),
        "rps": s.rps,
        "p50_ms": s.p50,
        "p95_ms": s.p95,
        "p99_ms": s.p99,
    }


def _files(options: argparse.Namespace | None, report_dir: Path) -> dict[str, str | None]:
    """Locust's own reports, relative to load.json (load.html links them)."""
    csv_prefix = option(options, "csv_prefix")

    def rel(path: str | None) -> str | None:
        return os.path.relpath(Path(path).resolve(), report_dir.resolve()) if path else None

    def csv(kind: str) -> str | None:
        return rel(f"{csv_prefix}_{kind}.csv") if csv_prefix else None

    return {
        "locust_html": rel(option(options, "html_file")),
        "stats_csv": csv("stats"),
        "history_csv": csv("stats_history"),
        "failures_csv": csv("failures"),
        "load_html": "load.html",
    }


def _shape_findings(
    shape: Shape, shape_summary: ShapeSummary, ttp: TimeToProcessedStats, recon: Reconciliation
) -> LoadSummary:
    """What the shape is run for: the ramp's steps and knee, the lifecycle's time to processed,
    the storm's conflicts and duplicates."""
    counters = LEDGER.counters
    found: LoadSummary = {}
    if shape.name == "ramp":
        found["ramp"] = shape_summary
        found["knee"] = shape_summary.get("knee")
    if shape.name == "lifecycle" or ttp["count"]:
        found["time_to_processed"] = {**ttp, "timeouts": counters.get("lifecycle_timeouts", 0)}
    if shape.name == "idempotency-storm":
        found["idempotency"] = {
            "conflicts_409": counters.get("idempotency_conflicts", 0),
            "keys": recon.get("keys", 0),
            "duplicate_keys": recon.get("duplicate_keys", 0),
            "storm_keys_checked_on_target": recon.get("storm_keys_checked", 0),
            "server_duplicate_keys": recon.get("server_duplicate_keys", 0),
        }
    return found


def finalize(environment: Environment, shape_class: LoadTestShape | None = None) -> LoadSummary:
    """Compute everything, write load.json, print the verdict table, set the exit status.

    A run its shape did not end (it names why it ended: duration, budget, abort, SLO break) was
    interrupted: ``EXIT_INTERRUPTED`` unless something failed in what ran."""
    ctx = of(environment).current()
    plan, shape = ctx.plan, ctx.plan.shape
    assert environment.runner is not None
    stats = environment.runner.stats
    ops, total, duration = collect_operations(stats)
    ttp = time_to_processed_stats(LEDGER.time_to_processed)
    summary_of = getattr(shape_class, "summary", None)
    shape_summary: ShapeSummary = summary_of() if callable(summary_of) else {}
    interrupted = callable(summary_of) and not shape_summary.get("stop_reason")
    counters = dict(LEDGER.counters)
    verdicts = judge(shape, plan.thresholds, ops, total, ttp, shape_summary, counters)
    TIMELINE.stop()
    aborted = TIMELINE.abort
    slo_passed = all(v.passed for v in verdicts) and not aborted
    recon = reconcile(
        LEDGER.creates,
        plan.target,
        concurrency=plan.reconcile_concurrency,
        time_budget_s=plan.reconcile_timeout_s,
        limits=plan.limits,
        webhook_journal=journal_path(plan) if plan.webhooks else None,
        tls=plan.tls,
        without_ref=LEDGER.counters.get("acknowledged_without_ref", 0),
    )
    exit_code = exit_status(slo_passed, recon["passed"])
    if interrupted and exit_code == EXIT_PASSED:
        exit_code = EXIT_INTERRUPTED
    reasons = result_reasons(verdicts, recon, aborted)
    summary: LoadSummary = {
        "schema": SCHEMA,
        "shape": shape.name,
        "profile": shape.name,  # the shape's old name, kept for readers of paysuite-load/1
        "target": plan.target.base_url,
        "tls": plan.tls_text,
        "run_id": plan.run_id,
        "started_at": stats.total.start_time,
        "duration_s": round(duration, 3),
        # the most users the run reached (the shape's starting count is shape_users)
        "users": max(TIMELINE.peak_users, 0) or shape.users,
        "peak_users": TIMELINE.peak_users,
        "shape_users": shape.users,
        "stop_reason": INTERRUPTED if interrupted else shape_summary.get("stop_reason", ""),
        "aborted": aborted,
        "operations": {name: _stats(s) for name, s in sorted(ops.items())},
        "total": _stats(total),
        "auth": {
            "authorize": ops.get("authorize", NO_REQUESTS).requests,
            "refresh": ops.get("refresh", NO_REQUESTS).requests,
            "auth_errors": counters.get("auth_errors", 0),
        },
        "slo": {"thresholds": plan.thresholds, "verdicts": [v.to_dict() for v in verdicts]},
        "slo_passed": slo_passed,
        "failed_because": reasons + ([INTERRUPTED] if exit_code == EXIT_INTERRUPTED else []),
        "reconciliation": recon,
        "failures": collect_failures(stats),
        "timeline": TIMELINE.to_dict(),
        "counters": counters,
        "ledger": {"batches": LEDGER.batches_received, "sources": sorted(LEDGER.sources)},
        "mix": shape.mix,
        "exit_code": exit_code,
        "verdict": verdict_word(exit_code),
        "reason": "; ".join(reasons) or _pass_reason(exit_code, recon),
        "files": _files(environment.parsed_options, plan.report_dir),
        **_shape_findings(shape, shape_summary, ttp, recon),
    }
    plan.report_dir.mkdir(parents=True, exist_ok=True)
    (plan.report_dir / "load.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print_table_once(stats)  # Locust's table once (none under --quiet), before the verdict
    print(reports_line(plan.report_dir, summary["files"]), flush=True)
    if shape.name == "ramp":  # what the ramp found first, the verdict last
        print("\n".join(ramp_table(shape_summary) + ramp_lines(shape_summary)), flush=True)
    print(verdict_table(verdicts, recon, shape.name, exit_code, aborted, plan.tls_text), flush=True)
    environment.process_exit_code = exit_code
    return summary
