"""A verdict, rendered: terminal scorecard, junit.xml, conformance.json, report.html.

All four come from the same results (``CheckResult``: the suite's, the proxy's, the SDK runs',
the webhook listener's) and the same ``Verdict``, so they cannot disagree: a SHOULD failure that
does not gate the run is a *warning* in every one of them. Every judge of the document's rules
writes its reports here (conform's own terminal lines live in ``conformance.report``); the
HTML page is the ``conform.html`` template, self-contained so it can be attached to a CI run and
opened anywhere.
"""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paysuite_core.report_engine import render
from paysuite_core.results.evidence import item_form, masker_of, replay_exports
from paysuite_core.results.rule import SECTIONS
from paysuite_core.results.verdict import CheckResult, Verdict
from paysuite_core.tls import TLSSettings

MARK = {"pass": "✔", "fail": "×", "warning": "⚠", "n/a": "-", "skip": "-", "error": "!"}
#: The one word for each severity, wherever a person reads it: the terminal (live and the
#: scorecard), junit.xml's messages and report.html. A check the configuration cannot meet is
#: ``n/a`` everywhere; ``skipped`` is left for a check that did not run for another reason.
WORDS = {
    "pass": "passed",
    "fail": "failed",
    "warning": "warning",
    "n/a": "n/a",
    "skip": "skipped",
    "error": "error",
}
#: The ``summary`` key each severity is counted under, in conformance.json's order.
_COUNTED = {
    "pass": "passed",
    "fail": "failed",
    "warning": "warnings",
    "skip": "skipped",
    "n/a": "not_applicable",
    "error": "errors",
}
_EVIDENCE_KEYS = ("request", "response", "curl")
_DIM, _RESET = "\x1b[2m", "\x1b[0m"


def severity(result: CheckResult) -> str:
    """pass, fail, warning (a failure that does not gate the run), n/a (the configuration
    cannot meet what the check needs), skip (did not run for another reason) or error."""
    if result.outcome == "passed":
        return "pass"
    if result.outcome == "failed":
        return "fail" if result.gating else "warning"
    if result.outcome == "skipped":
        return "n/a" if result.not_applicable else "skip"
    return "error"


def word(result: CheckResult) -> str:
    """The one word for the result's outcome (``passed``, ``n/a``...), live and in reports."""
    return WORDS[severity(result)]


def expected_actual(result: CheckResult) -> list[tuple[str, str]]:
    """h2spec's pair, as far as the result says it (an error has none: nothing was judged)."""
    pairs = (("Expected", result.expected), ("Actual", result.actual))
    return [(label, value) for label, value in pairs if value]


def clip(text: str, limit: int = 200) -> str:
    """The first line of ``text``, at most ``limit`` characters, cut at a word boundary with an
    ellipsis (a reason cut mid-word reads as a different word)."""
    line = text.splitlines()[0] if text else ""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def summary(results: Sequence[CheckResult]) -> dict[str, int]:
    """Counts by severity; a warning is not counted among the failures, an n/a check not
    among the skipped ones."""
    counts = dict.fromkeys(_COUNTED.values(), 0)
    for result in results:
        counts[_COUNTED[severity(result)]] += 1
    return counts


def totals_line(results: Sequence[CheckResult]) -> str:
    """``3 passed, 1 failed, 2 skipped``: passed, failed and skipped always, the rest if any."""
    counts = summary(results)
    return ", ".join(
        f"{count} {'n/a' if key == 'not_applicable' else key}"
        for key, count in counts.items()
        if count or key in ("passed", "failed", "skipped")
    )


_RULE_SUFFIX = re.compile(r", (?:rule )?\d+$")


def heading(section: str) -> str:
    """The document's heading a catalog section sits under, as a reader finds it in the document.

    "Authentication, 1" is rule 1 of "Authentication": a reader looks for the heading, not for
    the catalog's rule number. A subsection keeps its path ("Endpoints › 2. Cashout")."""
    return _RULE_SUFFIX.sub("", section).replace(", ", " › ", 1)


def by_section(results: Sequence[CheckResult]) -> list[tuple[str, list[CheckResult]]]:
    """Results grouped under the document's headings, in the document's order; a section the
    document does not have (the proxy's client rules, the SDK-only routes) follows, as named."""
    rank = {section: i for i, section in enumerate(SECTIONS)}
    groups: dict[str, list[CheckResult]] = {}
    for result in sorted(results, key=lambda r: rank.get(r.check.section, len(rank))):
        section = result.check.section
        groups.setdefault(heading(section) if section in rank else section, []).append(result)
    return list(groups.items())


def verdict_line(verdict: Verdict, results: Sequence[CheckResult]) -> str:
    """The terminal's last line: the verdict, why, warnings, coverage and the exit status."""
    parts = [verdict.reason]
    counted = ((summary(results)["warnings"], "warning"), (len(verdict.run_errors), "run error"))
    parts += [f"{count} {what}{'s' if count != 1 else ''}" for count, what in counted if count]
    if verdict.throttling is not None and verdict.throttling.throttled:
        parts.append(verdict.throttling.text())
    if verdict.tls is not None and verdict.tls.insecure:
        parts.append(verdict.tls.describe())
    parts.append(f"coverage {verdict.coverage.text()}")
    return f"VERDICT: {verdict.verdict.upper()} — {'; '.join(parts)} — exit {verdict.exit_code}"


# --- evidence -------------------------------------------------------------------------------
def evidence(result: CheckResult, reveal: bool) -> list[dict[str, Any]]:
    """The result's evidence in the form asked for (a tool's dicts pass through unchanged)."""
    return [item_form(item, reveal=reveal) for item in result.evidence]


def _evidence_json(item: dict[str, Any]) -> dict[str, Any]:
    out = {key: item.get(key) for key in _EVIDENCE_KEYS}
    for key in ("env", "note"):
        if item.get(key):
            out[key] = item[key]
    return out


def _replay_needs(results: Sequence[CheckResult]) -> dict[str, set[str]]:
    """Variable -> client_ids, over every safe curl and reproduction the reports print."""
    needs: dict[str, set[str]] = {}
    for result in results:
        for item in result.evidence:
            for var, owner in (item.get("env") or {}).items():
                needs.setdefault(var, set()).add(owner)
        for var, owner in reproduce(result, reveal=False)[1].items():
            needs.setdefault(var, set()).add(owner)
    return needs


def reproduce(result: CheckResult, *, reveal: bool) -> tuple[str, dict[str, str]]:
    """(the shell lines that show the result's defect, variable -> client_id they need): the
    check's reproduction (fresh keys, a reuse's first request, a race sent at once), else the
    curl of its last exchange; ("", {}) when there is none."""
    made = result.reproduction
    if made is not None:
        script, needs = made.render(reveal)
        return script, {} if reveal else needs
    for item in reversed(evidence(result, reveal)):
        if item.get("curl"):
            return str(item["curl"]), {} if reveal else dict(item.get("env") or {})
    return "", {}


#: Where each reproduction is written as a script, under the report directory.
REPRODUCE_DIR = "reproduce"


def reproduce_file(result: CheckResult) -> str:
    """The script's path relative to the report directory: ``reproduce/IDEM-005.sh``."""
    return f"{REPRODUCE_DIR}/{re.sub(r'[^A-Za-z0-9_.-]', '_', result.check.id)}.sh"


def _script(result: CheckResult, target: str, reveal: bool) -> str:
    """A reproduction as a file: what it shows, the exports it needs, then its lines ("" when
    there is nothing to reproduce)."""
    script, needs = reproduce(result, reveal=reveal)
    if not script:
        return ""
    exports = replay_exports(target, {v: {o} for v, o in needs.items()}, masker_of([result]))
    lines = [
        "#!/bin/sh",
        f"# {result.check.id} [{result.check.level}] {result.check.title}",
        f"# {clip(result.message, 300)}",
        f"# paysuite conform's reproduction against {target}",
        *exports,
        script,
    ]
    return "\n".join(lines) + "\n"


def replay(
    results: Sequence[CheckResult], *, target: str, reveal_secrets: bool, hint: bool = True
) -> dict[str, Any]:
    """How the printed curl commands replay: as printed (revealed) or after these exports;
    ``hint=False``: a tool without ``--reveal-secrets`` does not offer it."""
    if reveal_secrets:
        return {
            "reveal_secrets": True,
            "how": "the curl commands carry the real credentials of this run: replay as printed "
            "(tokens expire; keep this report private)",
            "exports": [],
        }
    exports = replay_exports(target, _replay_needs(results), masker_of(results))
    how = (
        "credentials are shown as environment variables: run these exports, then the curl "
        "commands as printed" + (" (or rerun with --reveal-secrets)" if hint else "")
        if exports
        else "no curl command needs a credential"
    )
    return {"reveal_secrets": False, "how": how, "exports": exports}


# --- terminal -------------------------------------------------------------------------------
def scorecard(
    results: Sequence[CheckResult],
    verdict: Verdict,
    *,
    color: bool = False,
    with_verdict: bool = True,
    heading: str = "Conformance scorecard",
) -> str:
    """h2spec style: sections of the document, a line per check, totals, run errors, verdict.

    Under a failure, warning or error: its message and the Expected / Actual pair; under a pass
    with an observation: a dim ``·`` line (ANSI dim only with ``color``, CI logs stay clean).
    ``with_verdict=False`` leaves the verdict line to the caller (to print it last of all);
    ``heading`` names what was judged (the proxy and the webhook listener reuse this layout).
    """
    lines = ["", heading, "=" * len(heading)]
    for section, members in by_section(results):
        lines.append(section)
        for result in members:
            lines.extend(scorecard_lines(result, color))
    lines.append("")
    lines.extend(f"  ! {finding}" for finding in verdict.findings)
    lines.append(totals_line(results))
    if verdict.run_errors:
        lines.append("Run errors")
        lines.extend(f"  ! {error}" for error in verdict.run_errors)
    if with_verdict:
        lines.append(verdict_line(verdict, results))
    return "\n".join(lines)


def scorecard_lines(result: CheckResult, color: bool) -> list[str]:
    check = result.check
    level = severity(result)
    lines = [f"  {MARK[level]} {check.id:<9} {check.level:<6} {WORDS[level]:<7} {check.title}"]
    if level in ("fail", "warning", "error", "n/a", "skip") and result.message:
        lines.append(f"      -> {clip(result.message)}")
    if level in ("fail", "warning", "error"):
        pairs = expected_actual(result)
        lines += [f"         {label + ':':<9} {clip(value, 300)}" for label, value in pairs]
    if result.note and level in ("pass", "warning"):
        line = f"      · {clip(result.note, 300)}"
        lines.append(f"{_DIM}{line}{_RESET}" if color else line)
    return lines


# --- conformance.json -----------------------------------------------------------------------
def to_json(
    results: Sequence[CheckResult],
    *,
    verdict: Verdict,
    target: str,
    started_at: str,
    duration_s: float,
    reveal_secrets: bool = False,
) -> dict[str, Any]:
    """The machine-readable report: the verdict first, then every check with its proof."""
    coverage = verdict.coverage
    return {
        "verdict": verdict.verdict,
        "exit_code": verdict.exit_code,
        "profile": verdict.profile,
        "strict": verdict.strict,
        "reason": verdict.reason,
        "coverage": {
            "run": coverage.run,
            "total": coverage.total,
            "ratio": round(coverage.ratio, 4),
            "minimum": coverage.minimum,
            "skipped": [{"id": cid, "reason": why} for cid, why in coverage.skipped],
            "applicable": coverage.applicable,
            "not_applicable": [{"id": cid, "reason": why} for cid, why in coverage.not_applicable],
        },
        "run_errors": list(verdict.run_errors),
        "engine_errors": [error.to_dict() for error in verdict.engine_errors],
        "findings": list(verdict.findings),
        **({"throttling": verdict.throttling.to_dict()} if verdict.throttling is not None else {}),
        "tls": tls_text(verdict.tls),
        "target": target,
        "started_at": started_at,
        "duration_s": duration_s,
        "summary": summary(results),
        "replay": replay(results, target=target, reveal_secrets=reveal_secrets),
        "checks": [_check_json(r, reveal_secrets) for r in results],
    }


#: What conformance.json says of a plain-HTTP target's TLS (the words of every command's report).
PLAIN_HTTP = "plain HTTP (no TLS)"


def tls_text(tls: TLSSettings | None, target: str = "") -> str:
    """How the certificate was judged (``TLSSettings.describe``), or that there was no TLS (no
    settings, or a ``target`` over plain HTTP that was not told ``--insecure``)."""
    if tls is None or (target and not tls.insecure and not target.startswith("https:")):
        return PLAIN_HTTP
    return tls.describe()


def _check_json(result: CheckResult, reveal: bool) -> dict[str, Any]:
    check = result.check
    return {
        "id": check.id,
        "title": check.title,
        "level": check.level,
        "section": check.section,
        "profile": check.profile,
        "quote": check.quote,
        "outcome": result.outcome,
        "not_applicable": result.not_applicable,
        "gating": result.gating,
        "severity": severity(result),
        "message": result.message,
        "expected": result.expected,
        "actual": result.actual,
        "note": result.note,
        "evidence": [_evidence_json(item) for item in evidence(result, reveal)],
        **_reproduce_json(result, reveal),
    }


def _reproduce_json(result: CheckResult, reveal: bool) -> dict[str, Any]:
    """``reproduce``: the script that shows the defect, the variables it needs, its file."""
    if severity(result) not in ("fail", "warning", "error"):
        return {}
    script, needs = reproduce(result, reveal=reveal)
    if not script:
        return {}
    data: dict[str, Any] = {"script": script, "file": reproduce_file(result)}
    if needs:
        data["env"] = needs
    if result.reproduction is not None and result.reproduction.race:
        data["race"] = result.reproduction.race
    return {"reproduce": data}


# --- junit.xml ------------------------------------------------------------------------------
def to_junit(
    results: Sequence[CheckResult],
    *,
    verdict: Verdict,
    duration_s: float,
    reveal_secrets: bool = False,
    suite_name: str = "paysuite-conformance",
    target: str = "",
) -> str:
    """One testcase per check; a warning passes (with its WARNING shown); run errors are a case.

    ``failures`` counts gating failures only, so a CI dashboard agrees with the exit status.
    Written here rather than by pytest's ``--junitxml``: the proxy, the replay, the webhook
    listener and a failed pre-flight write the same file with no pytest session, and pytest's
    writer has no passing-but-warned case nor an ``error`` for a check that raised while it ran.
    """
    counts = summary(results)
    run_case = 1 if verdict.run_errors else 0
    suite = ET.Element(
        "testsuite",
        name=f"{suite_name}-{verdict.profile}",
        tests=str(len(results) + run_case),
        failures=str(counts["failed"]),
        errors=str(counts["errors"] + run_case),
        skipped=str(counts["skipped"] + counts["not_applicable"]),
        time=f"{duration_s:.3f}",
    )
    _properties(
        suite,
        {
            "paysuite.verdict": verdict.verdict,
            "paysuite.exit_code": str(verdict.exit_code),
            "paysuite.profile": verdict.profile,
            "paysuite.strict": str(verdict.strict).lower(),
            "paysuite.coverage": verdict.coverage.text(),
            "paysuite.coverage_ratio": f"{verdict.coverage.ratio:.4f}",
            "paysuite.reason": verdict.reason,
            **({"paysuite.tls": verdict.tls.describe()} if verdict.tls is not None else {}),
        },
    )
    for result in results:
        _junit_case(suite, result, reveal_secrets, target)
    if verdict.run_errors:
        case = ET.SubElement(suite, "testcase", classname="conformance.run", name="run")
        node = ET.SubElement(case, "error", message=clip(verdict.run_errors[0], 500))
        node.text = "\n".join(verdict.run_errors)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _properties(parent: ET.Element, values: dict[str, str]) -> None:
    node = ET.SubElement(parent, "properties")
    for name, value in values.items():
        ET.SubElement(node, "property", name=name, value=value)


def _junit_case(suite: ET.Element, result: CheckResult, reveal: bool, target: str = "") -> None:
    check = result.check
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"conformance.{check.group}",
        name=f"{check.id} [{check.level}] {check.title}",
        time=f"{result.duration_s:.3f}",
    )
    level = severity(result)
    if level in ("warning", "fail", "error", "n/a"):
        _properties(case, {"paysuite.outcome": WORDS[level]})
    if level == "warning":
        out = ET.SubElement(case, "system-out")
        out.text = "WARNING: " + _junit_text(result, reveal, target)
    elif level in ("fail", "error"):
        tag = "failure" if level == "fail" else "error"
        node = ET.SubElement(case, tag, message=clip(result.message, 500))
        node.text = _junit_text(result, reveal, target)
    elif level == "n/a":
        ET.SubElement(case, "skipped", message=f"n/a: {result.message}")
    elif level == "skip":
        ET.SubElement(case, "skipped", message=result.message)
    elif result.note:
        ET.SubElement(case, "system-out").text = f"NOTE: {result.note}"


def _junit_text(result: CheckResult, reveal: bool, target: str = "") -> str:
    """The message, Expected/Actual, the document's sentence, then the reproduction with the
    exports it needs (a CI log is read alone), then each exchange's curl."""
    parts = [result.message]
    parts += [f"{label}: {value}" for label, value in expected_actual(result)]
    parts += ["", f"Document ({result.check.section}): {result.check.quote}"]
    script, needs = reproduce(result, reveal=reveal)
    if script:
        exports = replay_exports(target, {v: {o} for v, o in needs.items()}, masker_of([result]))
        parts += ["", "Reproduce (after these exports):" if exports else "Reproduce:"]
        parts += [*exports, script]
    curls = [item["curl"] for item in evidence(result, reveal)[:5] if item.get("curl")]
    if curls:
        parts += ["", "Each exchange as sent (curl):", *curls]
    return "\n".join(parts)


# --- report.html ----------------------------------------------------------------------------
def to_html(
    results: Sequence[CheckResult],
    *,
    verdict: Verdict,
    target: str,
    started_at: str,
    duration_s: float,
    reveal_secrets: bool = False,
    title: str = "paysuite conformance report",
    tls: str = "",
    rerun_hint: bool = True,
    template: str = "conform.html",
    **more: object,
) -> str:
    """The report a person reads: verdict banner, then every failure and error with its proof
    and curl right under it, then the warnings, then the scorecard of every check.

    Problems come first (as schemathesis puts them): on a run of one failure and forty skips
    the reader should not look for it in the middle of a table in document order. A run
    stopped before any check (the pre-flight) gets only what stopped it: no "No failure, no
    error" and no empty scorecard under its ERROR banner. ``tls``: how another judge (the
    proxy, the clients) judged the certificate, under the title; ``rerun_hint=False`` for a
    tool without ``--reveal-secrets``; ``template`` and ``more``: a page that extends conform's
    (the proxy's) and what it adds.
    """

    def having(level: str) -> list[CheckResult]:
        return [r for r in results if severity(r) == level]

    return render(
        template,
        r=sys.modules[__name__],
        results=results,
        verdict=verdict,
        target=target,
        started_at=started_at,
        duration_s=duration_s,
        reveal=reveal_secrets,
        title=title,
        tls=tls,
        stopped=not results and bool(verdict.run_errors),
        failing=having("fail") + having("error"),
        warned=having("warning"),
        replay=replay(results, target=target, reveal_secrets=reveal_secrets, hint=rerun_hint),
        **more,
    )


#: How the reports write what UTF-8 cannot hold: a lone surrogate a check sent on purpose (a
#: JSON ``\\ud800`` escape, read back from its own request) is written as that escape again.
UNENCODABLE = "backslashreplace"


def write_all(
    results: Sequence[CheckResult],
    *,
    verdict: Verdict,
    report_dir: str | Path,
    target: str,
    started_at: str,
    duration_s: float,
    reveal_secrets: bool = False,
    title: str = "paysuite conformance report",
    suite_name: str = "paysuite-conformance",
    extra: Mapping[str, Any] | None = None,
    html: str | None = None,
) -> list[Path]:
    """Write junit.xml, conformance.json and report.html; return their paths.

    ``title``, ``suite_name``, ``extra`` (keys added to conformance.json) and ``html`` (its own
    page, a template over conform's) let another judge of the same rules (the proxy, its
    replay) write the same three reports under its own name. Each file is replaced whole: a
    reader (or a Ctrl-C) never sees half a page.
    """
    directory = Path(report_dir)
    directory.mkdir(parents=True, exist_ok=True)
    common: dict[str, Any] = {"verdict": verdict, "target": target, "duration_s": duration_s}
    common["reveal_secrets"] = reveal_secrets
    data = {**to_json(results, **common, started_at=started_at), **(extra or {})}
    texts = {
        "junit.xml": to_junit(results, **common, suite_name=suite_name),
        "conformance.json": json.dumps(data, indent=2, ensure_ascii=False) + "\n",
        "report.html": html or to_html(results, **common, started_at=started_at, title=title),
    }
    for name, text in texts.items():
        partial = directory / f".{name}.partial"
        partial.write_text(text, encoding="utf-8", errors=UNENCODABLE)
        os.replace(partial, directory / name)
    _write_scripts(results, directory, target, reveal_secrets)
    return [directory / name for name in texts]


def _write_scripts(
    results: Sequence[CheckResult], directory: Path, target: str, reveal: bool
) -> None:
    """Each failure's, warning's and error's reproduction as a script beside the reports (an
    earlier run's scripts removed: the folder holds this run's)."""
    for old in (directory / REPRODUCE_DIR).glob("*.sh"):
        old.unlink()
    for result in results:
        failing = severity(result) in ("fail", "warning", "error")
        script = _script(result, target, reveal) if failing else ""
        if not script:
            continue
        path = directory / reproduce_file(result)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script, encoding="utf-8", errors=UNENCODABLE)
        path.chmod(0o700 if reveal else 0o755)
