"""A session's verdict in the formats of ``paysuite conform``: junit.xml, conformance.json (plus
every exchange's verdict) and report.html, rendered by conform's writers
(``paysuite_core.report_engine.reports``): conform's page over the target's rules (``proxy.html``
extends it) with the client's faults and every exchange of the session in sections of their own.

Each rule of ``proxy.rules.RULES`` and ``proxy.traffic.TRAFFIC_RULES`` becomes one
``CheckResult`` (``paysuite_core.results``, what every judge hands the reports): failed with its
first violation's message and Expected/Actual and the exchanges of every violation as evidence
(at most ``MAX_EVIDENCE``), passed when it judged something and found nothing, skipped (with the
reason) when nothing in the session gave it anything to judge. Whose violations gate is
``--judge``'s choice: the target's rules by default, the client's (``proxy.rules.CLIENT_RULES``)
reported apart and gating only with ``--judge client`` or ``both`` (exit 3). The proxy has no
SHOULD leniency: a rule it judges is one the target declared or the document states. Evidence is
the conformance suite's safe form (tokens shortened, secrets masked, curl with
``$PAYSUITE_TOKEN``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paysuite_core.report_engine import reports
from paysuite_core.results.evidence import evidence_of as conform_evidence_of
from paysuite_core.results.masking import shown_url
from paysuite_core.results.verdict import CheckResult, Verdict, coverage_of
from proxy.judge import Judge, Observed
from proxy.rules import CLIENT_RULES, CLIENT_SECTION, party

MAX_EVIDENCE = 10
TITLE = "paysuite proxy report"


def results(judge: Judge) -> list[CheckResult]:
    out: list[CheckResult] = []
    for state in judge.rule_states():
        gating = party(state.check) in judge.gates
        found = [v for v in judge.violations if v.check.id == state.check.id]
        note = "; ".join(state.notes)
        if found:
            first = found[0]
            evidence: list[dict[str, Any]] = []
            for violation in found:
                evidence += [
                    conform_evidence_of(e, judge.masker, f"proxied exchange #{e.seq}")
                    for e in violation.exchanges
                ]
                evidence += [dict(c) for c in violation.confirmations]
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            out.append(
                CheckResult(
                    state.check,
                    "failed",
                    f"{len(found)} violation{'s' if len(found) > 1 else ''}: {first.message}{more}",
                    evidence[:MAX_EVIDENCE],
                    expected=first.expected,
                    actual=first.actual,
                    note=note,
                    gating=gating,
                )
            )
        elif state.not_judged or state.exercised == 0:
            why = state.not_judged or "no exchange of this session gave the rule anything to judge"
            out.append(CheckResult(state.check, "skipped", f"not judged: {why}"))
        else:
            note = f"judged on {state.exercised} exchange(s)" + (f"; {note}" if note else "")
            out.append(CheckResult(state.check, "passed", note=note))
    return out


#: Exit status when a gating rule of the client's (``--judge client`` or ``both``) failed and
#: none of the target's did.
CLIENT_FAULT_EXIT = 3
#: Exit status when the end of the session was interrupted before it settled and nothing failed.
INTERRUPTED_EXIT = 130


def verdict_of(judge: Judge, rule_results: list[CheckResult]) -> Verdict:
    """1 on a violation of the target's; 3 on one of the client's when ``--judge`` gates it and
    the target broke nothing; 2 when nothing gating failed but the target left exchanges
    unanswered (no verdict on those), or when no exchange reached a route of the API at all (a
    client that never reached the proxy, or a --target whose path is wrong, must not turn a CI
    job green); 130 when a Ctrl-C or SIGTERM cut the settling short; else 0."""
    failed = [r for r in rule_results if r.outcome == "failed" and r.gating]
    server = [r.check.id for r in failed if party(r.check) == "server"]
    client = [r.check.id for r in failed if party(r.check) == "client"]
    run_errors = tuple(judge.run_errors)
    if judge.unanswered:
        run_errors += (f"the target left {judge.unanswered} exchange(s) unanswered (502 to the "
                       "client)",)  # fmt: skip
    judged = [r for r in judge.observed if _judged(r)]
    if not judged:
        run_errors += (
            f"no exchange of the document's operations was judged ({len(judge.observed)} "
            "exchange(s) in all): did the client use the proxy's address as its base URL?",
        )
    elif all(r.exchange.status == 404 for r in judged):
        run_errors += (
            f"no exchange reached a route of the API: all {len(judged)} answered 404 (check "
            "--target's path, and the client's base URL)",
        )
    run_errors += tuple(f"not settled: {what}" for what in judge.unsettled)

    def count(ids: list[str]) -> int:
        return sum(1 for v in judge.violations if v.check.id in ids)

    if server:
        verdict, code = "fail", 1
        reason = f"{count(server)} violation(s) by the target: {', '.join(server)}"
    elif client:
        verdict, code = "fail", CLIENT_FAULT_EXIT
        reason = f"{count(client)} violation(s) by the client: {', '.join(client)}"
    elif judge.unsettled:
        verdict, code, reason = "error", INTERRUPTED_EXIT, run_errors[-1]
    elif run_errors:
        verdict, code, reason = "error", 2, run_errors[0]
    else:
        verdict, code = "pass", 0
        reason = f"{len(judge.observed)} exchange(s), no violation"
    return Verdict(
        verdict=verdict,
        exit_code=code,
        profile=judge.profile,
        strict=True,
        coverage=coverage_of(rule_results),
        run_errors=run_errors,
        reason=reason,
    )


def _judged(record: Observed) -> bool:
    """An answered exchange of one of the document's operations: something the rules judged."""
    return record.operation is not None and record.exchange.status != 0


def exchange_verdicts(judge: Judge) -> list[dict[str, Any]]:
    """Every exchange of the session with its verdict, for conformance.json's ``exchanges``."""
    rows = []
    for record in judge.observed:
        exchange = record.exchange
        verdict = "fail" if record.violations else "pass" if _judged(record) else "not judged"
        rows.append(
            {
                "seq": exchange.seq,
                "method": exchange.method,
                "url": shown_url(exchange.url),
                "operation": record.operation,
                "status": exchange.status,
                "elapsed_ms": exchange.elapsed_ms,
                "error": exchange.error or None,
                "verdict": verdict,
                "violations": [
                    {"id": v.check.id, "message": v.message, "exchanges": list(v.seqs)}
                    for v in record.violations
                ],
            }
        )
    return rows


def write_reports(
    judge: Judge,
    report_dir: str | Path,
    *,
    target: str,
    started: float,
    duration_s: float,
    extra: dict[str, Any] | None = None,
) -> tuple[Verdict, list[Path]]:
    """Write junit.xml, conformance.json and report.html in conform's formats, under the
    proxy's name; conformance.json adds ``mode`` and every exchange's verdict (and ``extra``,
    what a replay says of itself). Return the verdict and the paths."""
    rule_results = results(judge)
    verdict = verdict_of(judge, rule_results)
    rows = exchange_verdicts(judge)
    tls = {"tls": reports.tls_text(judge.tls, target)} if judge.tls is not None else {}
    # The API's base URL, where the report's exports authorize: the configuration knows it; the
    # forwarded-to root does not name the API's path (/api)
    api_base = judge.config.base_url if judge.config is not None else target
    started_at = datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds")
    duration_s = round(duration_s, 3)
    client = [r for r in rule_results if party(r.check) == "client"]
    page = reports.to_html(
        [r for r in rule_results if party(r.check) == "server"],
        verdict=verdict,
        target=api_base,
        started_at=started_at,
        duration_s=duration_s,
        title=TITLE,
        tls=tls.get("tls", ""),
        template="proxy.html",
        client_section=CLIENT_SECTION,
        client=client,
        client_rules=CLIENT_RULES,
        gating="client" in judge.gates,
        exchanges=rows,
        violations=[
            (v, [conform_evidence_of(e, judge.masker) for e in v.exchanges])
            for v in judge.violations
            if party(v.check) == "client"
        ],
    )
    paths = reports.write_all(
        rule_results,
        verdict=verdict,
        report_dir=report_dir,
        target=api_base,
        started_at=started_at,
        duration_s=duration_s,
        title=TITLE,
        suite_name="paysuite-proxy",
        extra={"mode": "proxy", "exchanges": rows, **tls, **(extra or {})},
        html=page,
    )
    return verdict, paths


def scorecard(judge: Judge) -> str:
    """The terminal scorecard (the conform layout), its verdict line last."""
    rule_results = results(judge)
    verdict = verdict_of(judge, rule_results)
    text = reports.scorecard(rule_results, verdict, with_verdict=False, heading="Proxy scorecard")
    line = reports.verdict_line(verdict, rule_results)
    if judge.tls is not None and judge.tls.insecure:
        line += f"; {judge.tls.describe()}"
    return text + "\n" + line
