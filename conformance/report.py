"""The verdict, rendered: terminal scorecard, junit.xml, conformance.json, report.html.

All four come from the same results (any ``Result``: the suite's, the proxy's, the webhook
listener's) and the same :class:`Verdict`, so they cannot disagree: a SHOULD failure that does
not gate the run is a *warning* in every one of them. The HTML report is self-contained (inline
CSS, no scripts, no external resources) so it can be attached to a CI run and opened anywhere.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from conformance import catalog
from paysuite_core.results.evidence import issued, item_form, masker_of, replay_exports, wire_of
from paysuite_core.results.outcome import EngineError
from paysuite_core.results.verdict import Coverage, Verdict
from paysuite_core.tls import TLSSettings

_MARK = {"pass": "✔", "fail": "×", "warning": "⚠", "n/a": "-", "skip": "-", "error": "!"}
#: The one word for each severity, wherever a person reads it: the terminal (live and the
#: scorecard), junit.xml's messages and report.html. A check the configuration cannot meet is
#: ``n/a`` everywhere; ``skipped`` is left for a check that did not run for another reason.
_WORD = {
    "pass": "passed",
    "fail": "failed",
    "warning": "warning",
    "n/a": "n/a",
    "skip": "skipped",
    "error": "error",
}
_EVIDENCE_KEYS = ("request", "response", "curl")
_DIM, _RESET = "\x1b[2m", "\x1b[0m"


class Rule(Protocol):
    """A catalog ``Check``, or another judge's rule shaped like it (an SDK's operation)."""

    @property
    def id(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def section(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def quote(self) -> str: ...
    @property
    def profile(self) -> str: ...


class Result(Protocol):
    """The plugin's ``CheckResult``, or another judge's result shaped like it."""

    @property
    def check(self) -> Rule: ...
    @property
    def outcome(self) -> str: ...  # passed | failed | skipped | error
    @property
    def message(self) -> str: ...
    @property
    def evidence(self) -> list[dict[str, Any]]: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def expected(self) -> str: ...
    @property
    def actual(self) -> str: ...
    @property
    def note(self) -> str: ...
    @property
    def gating(self) -> bool: ...


def severity(result: Result) -> str:
    """pass, fail, warning (a failure that does not gate the run), n/a (the configuration
    cannot meet what the check needs), skip (did not run for another reason) or error."""
    if result.outcome == "passed":
        return "pass"
    if result.outcome == "failed":
        return "fail" if result.gating else "warning"
    if result.outcome == "skipped":
        return "n/a" if getattr(result, "not_applicable", False) else "skip"
    return "error"


def word(result: Result) -> str:
    """The one word for the result's outcome (``passed``, ``n/a``...), live and in reports."""
    return _WORD[severity(result)]


def _expected_actual(result: Result) -> list[tuple[str, str]]:
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


def _first_line(text: str, limit: int = 200) -> str:
    return clip(text, limit)


#: ``early_expiry`` speaks when at least this many checks failed or errored on such refusals,
#: and they are most of the failed and errored checks.
EARLY_EXPIRY_MIN_CHECKS = 3


def early_expiry(results: Sequence[Result]) -> tuple[str, ...]:
    """One line when most failed or errored checks met a 401 on a token younger than the
    ``expires`` it was issued with: the target expires tokens early, and each check's own
    message ("answered 401") would leave the reader to find that out 45 times."""
    broken = [r for r in results if severity(r) in ("fail", "error")]
    refused = 0
    hit = 0
    for result in broken:
        early = sum(1 for item in result.evidence if _refused_early(item))
        refused += early
        hit += 1 if early else 0
    if hit < EARLY_EXPIRY_MIN_CHECKS or hit * 2 <= len(broken):
        return ()
    return (
        f"the target refused {refused} request{'s' if refused != 1 else ''} with 401 on tokens "
        f"issued less than their `expires` ago ({hit} of the {len(broken)} failed or errored "
        "checks): it expires tokens early",
    )


def _refused_early(item: Mapping[str, Any]) -> bool:
    """Whether an evidence item is a 401 to a token sent before the ``expires`` it came with."""
    wire = wire_of(item)
    if wire is None or wire.status != 401:
        return False
    credential = (wire.request_header("Authorization") or "").partition(" ")[2]
    facts = issued(item, credential) if credential else None
    if facts is None or facts.expires_at is None or not wire.started:
        return False
    return bool(wire.started < facts.expires_at - 1.0)


def summary(results: Sequence[Result]) -> dict[str, int]:
    """Counts by severity; a warning is not counted among the failures, an n/a check not
    among the skipped ones."""
    counts = dict.fromkeys(
        ("passed", "failed", "warnings", "skipped", "not_applicable", "errors"), 0
    )
    key = {
        "pass": "passed",
        "fail": "failed",
        "warning": "warnings",
        "skip": "skipped",
        "n/a": "not_applicable",
    }
    for result in results:
        counts[key.get(severity(result), "errors")] += 1
    return counts


def totals_line(results: Sequence[Result]) -> str:
    counts = summary(results)
    line = f"{counts['passed']} passed, {counts['failed']} failed"
    if counts["warnings"]:
        line += f", {counts['warnings']} warnings"
    line += f", {counts['skipped']} skipped"
    if counts["not_applicable"]:
        line += f", {counts['not_applicable']} n/a"
    if counts["errors"]:
        line += f", {counts['errors']} errors"
    return line


_RULE_SUFFIX = re.compile(r", (?:rule )?\d+$")


def heading(section: str) -> str:
    """The document's heading a catalog section sits under, as a reader finds it in the document.

    "Authentication, 1" is rule 1 of "Authentication": a reader looks for the heading, not for
    the catalog's rule number. A subsection keeps its path ("Endpoints › 2. Cashout")."""
    return _RULE_SUFFIX.sub("", section).replace(", ", " › ", 1)


def _by_section(results: Sequence[Result]) -> list[tuple[str, list[Result]]]:
    """Results grouped under the document's headings, in the document's order."""
    groups: dict[str, list[Result]] = {}
    order = list(catalog.section_order())
    for section in order:
        members = [r for r in results if r.check.section == section]
        if members:
            groups.setdefault(heading(section), []).extend(members)
    others = [r for r in results if r.check.section not in order]
    if others:  # never drop a result because its section is not in the catalog's order
        groups.setdefault("Other", []).extend(others)
    return list(groups.items())


def verdict_line(verdict: Verdict, results: Sequence[Result]) -> str:
    """The terminal's last line: the verdict, why, warnings, coverage and the exit status."""
    parts = [verdict.reason]
    warnings = summary(results)["warnings"]
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    if verdict.run_errors:
        count = len(verdict.run_errors)
        parts.append(f"{count} run error{'s' if count != 1 else ''}")
    if verdict.throttling is not None and verdict.throttling.throttled:
        parts.append(verdict.throttling.text())
    if verdict.tls is not None and verdict.tls.insecure:
        parts.append(verdict.tls.describe())
    parts.append(f"coverage {verdict.coverage.text()}")
    return f"VERDICT: {verdict.verdict.upper()} — {'; '.join(parts)} — exit {verdict.exit_code}"


# --- evidence -------------------------------------------------------------------------------
def _evidence(result: Result, reveal: bool) -> list[dict[str, Any]]:
    """The result's evidence in the form asked for (a tool's dicts pass through unchanged)."""
    return [item_form(item, reveal=reveal) for item in result.evidence]


def _evidence_json(item: dict[str, Any]) -> dict[str, Any]:
    out = {key: item.get(key) for key in _EVIDENCE_KEYS}
    for key in ("env", "note"):
        if item.get(key):
            out[key] = item[key]
    return out


def _replay_needs(results: Sequence[Result]) -> dict[str, set[str]]:
    """Variable -> client_ids, over every safe curl and reproduction the reports print."""
    needs: dict[str, set[str]] = {}
    for result in results:
        for item in result.evidence:
            for var, owner in (item.get("env") or {}).items():
                needs.setdefault(var, set()).add(owner)
        for var, owner in reproduce(result, reveal=False)[1].items():
            needs.setdefault(var, set()).add(owner)
    return needs


def reproduce(result: Result, *, reveal: bool) -> tuple[str, dict[str, str]]:
    """(the shell lines that show the result's defect, variable -> client_id they need): the
    check's reproduction (fresh keys, a reuse's first request, a race sent at once), else the
    curl of its last exchange; ("", {}) when there is none."""
    made = getattr(result, "reproduction", None)
    if made is not None:
        script, needs = made.render(reveal)
        return script, {} if reveal else needs
    for item in reversed(_evidence(result, reveal)):
        if item.get("curl"):
            return str(item["curl"]), {} if reveal else dict(item.get("env") or {})
    return "", {}


#: Where each reproduction is written as a script, under the report directory.
REPRODUCE_DIR = "reproduce"


def reproduce_file(result: Result) -> str:
    """The script's path relative to the report directory: ``reproduce/IDEM-005.sh``."""
    return f"{REPRODUCE_DIR}/{re.sub(r'[^A-Za-z0-9_.-]', '_', result.check.id)}.sh"


def _script(result: Result, target: str, reveal: bool) -> str:
    """A reproduction as a file: what it shows, the exports it needs, then its lines."""
    script, needs = reproduce(result, reveal=reveal)
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


def replay(results: Sequence[Result], *, target: str, reveal_secrets: bool) -> dict[str, Any]:
    """How the printed curl commands replay: as printed (revealed) or after these exports."""
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
        "commands as printed (or rerun with --reveal-secrets)"
        if exports
        else "no curl command needs a credential"
    )
    return {"reveal_secrets": False, "how": how, "exports": exports}


# --- terminal -------------------------------------------------------------------------------
def scorecard(
    results: Sequence[Result],
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
    for section, members in _by_section(results):
        lines.append(section)
        for result in members:
            lines.extend(_scorecard_lines(result, color))
    lines.append("")
    lines.extend(f"  ! {finding}" for finding in verdict.findings)
    lines.append(totals_line(results))
    if verdict.run_errors:
        lines.append("Run errors")
        lines.extend(f"  ! {error}" for error in verdict.run_errors)
    if with_verdict:
        lines.append(verdict_line(verdict, results))
    return "\n".join(lines)


def _scorecard_lines(result: Result, color: bool) -> list[str]:
    check = result.check
    level = severity(result)
    lines = [f"  {_MARK[level]} {check.id:<9} {check.level:<6} {_WORD[level]:<7} {check.title}"]
    if level in ("fail", "warning", "error", "n/a", "skip") and result.message:
        lines.append(f"      -> {_first_line(result.message)}")
    if level in ("fail", "warning", "error"):
        for label, value in (("Expected:", result.expected), ("Actual:  ", result.actual)):
            if value:
                lines.append(f"         {label} {_first_line(value, 300)}")
    note = result.note
    if note and level in ("pass", "warning"):
        line = f"      · {_first_line(note, 300)}"
        lines.append(f"{_DIM}{line}{_RESET}" if color else line)
    return lines


#: Errors shown in full at the terminal; past it one line says how many more report.html has
#: (a target that stops answering makes every later check an error of the same cause).
ERRORS_SHOWN = 5


def problems(
    results: Sequence[Result],
    *,
    target: str = "",
    reveal_secrets: bool = False,
    report_dir: str | Path | None = None,
) -> str:
    """What a quiet run prints of its checks: every failure with its Expected / Actual and the
    curl that reproduces it, the first errors, a line per warning and per n/a check (with the
    reason: a check the configuration cannot meet is never left for the reader to find in the
    reports); "" when there is none.

    A passing run then fits on a screen, and a failing one still says at the terminal what broke
    and how to see it again, without opening a report.
    """
    lines: list[str] = []
    errors = [r for r in results if severity(r) == "error"]
    for result in results:
        level = severity(result)
        if level in ("warning", "n/a"):
            check = result.check
            lines.append(
                f"  {_MARK[level]} {check.id:<9} {check.level:<6} {_WORD[level]:<7} "
                f"{check.title}: {_first_line(result.message, 200)}"
            )
            continue
        if level not in ("fail", "error"):
            continue
        if level == "error" and errors.index(result) >= ERRORS_SHOWN:
            continue
        lines.extend(_scorecard_lines(result, color=False))
        script = reproduce(result, reveal=reveal_secrets)[0]
        if script:  # several lines (fresh keys, a reuse, a race): kept indented under it
            lines.append("         Reproduce: " + script.replace("\n", "\n" + " " * 20))
            if report_dir is not None:
                lines.append(f"         (as a script: {Path(report_dir) / reproduce_file(result)})")
    if len(errors) > ERRORS_SHOWN:
        lines.append(f"  ! ... and {len(errors) - ERRORS_SHOWN} more errors: see report.html")
    if not lines:
        return ""
    shown = [r for r in results if severity(r) in ("fail", "error")]
    exports = replay(shown, target=target, reveal_secrets=reveal_secrets)["exports"]
    if exports and any("Reproduce:" in line for line in lines):
        lines.append("  the reproductions run after these exports (or with --reveal-secrets):")
        lines.extend(f"    {line}" for line in exports)
    return "\n".join(lines)


# --- conformance.json -----------------------------------------------------------------------
def to_json(
    results: Sequence[Result],
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


def tls_text(tls: TLSSettings | None) -> str:
    """How the certificate was judged (``TLSSettings.describe``), or that there was no TLS."""
    return tls.describe() if tls is not None else PLAIN_HTTP


def _check_json(result: Result, reveal: bool) -> dict[str, Any]:
    check = result.check
    return {
        "id": check.id,
        "title": check.title,
        "level": check.level,
        "section": check.section,
        "profile": check.profile,
        "quote": check.quote,
        "outcome": result.outcome,
        "not_applicable": bool(getattr(result, "not_applicable", False)),
        "gating": result.gating,
        "severity": severity(result),
        "message": result.message,
        "expected": result.expected,
        "actual": result.actual,
        "note": result.note,
        "evidence": [_evidence_json(item) for item in _evidence(result, reveal)],
        **_reproduce_json(result, reveal),
    }


def _reproduce_json(result: Result, reveal: bool) -> dict[str, Any]:
    """``reproduce``: the script that shows the defect, the variables it needs, its file."""
    if severity(result) not in ("fail", "warning", "error"):
        return {}
    script, needs = reproduce(result, reveal=reveal)
    if not script:
        return {}
    data: dict[str, Any] = {"script": script, "file": reproduce_file(result)}
    if needs:
        data["env"] = needs
    race = getattr(getattr(result, "reproduction", None), "race", 0)
    if race:
        data["race"] = race
    return {"reproduce": data}


# --- junit.xml ------------------------------------------------------------------------------
def to_junit(
    results: Sequence[Result],
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
        node = ET.SubElement(case, "error", message=_first_line(verdict.run_errors[0], 500))
        node.text = "\n".join(verdict.run_errors)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _properties(parent: ET.Element, values: dict[str, str]) -> None:
    node = ET.SubElement(parent, "properties")
    for name, value in values.items():
        ET.SubElement(node, "property", name=name, value=value)


def _junit_case(suite: ET.Element, result: Result, reveal: bool, target: str = "") -> None:
    check = result.check
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"conformance.{check.id.split('-', 1)[0]}",  # the group
        name=f"{check.id} [{check.level}] {check.title}",
        time=f"{result.duration_s:.3f}",
    )
    level = severity(result)
    if level in ("warning", "fail", "error", "n/a"):
        _properties(case, {"paysuite.outcome": _WORD[level]})
    if level == "warning":
        out = ET.SubElement(case, "system-out")
        out.text = "WARNING: " + _junit_text(result, reveal, target)
    elif level in ("fail", "error"):
        tag = "failure" if level == "fail" else "error"
        node = ET.SubElement(case, tag, message=_first_line(result.message, 500))
        node.text = _junit_text(result, reveal, target)
    elif level == "n/a":
        ET.SubElement(case, "skipped", message=f"n/a: {result.message}")
    elif level == "skip":
        ET.SubElement(case, "skipped", message=result.message)
    elif result.note:
        ET.SubElement(case, "system-out").text = f"NOTE: {result.note}"


def _junit_text(result: Result, reveal: bool, target: str = "") -> str:
    """The message, Expected/Actual, the document's sentence, then the reproduction with the
    exports it needs (a CI log is read alone), then each exchange's curl."""
    parts = [result.message]
    parts += [f"{label}: {value}" for label, value in _expected_actual(result)]
    parts += ["", f"Document ({result.check.section}): {result.check.quote}"]
    script, needs = reproduce(result, reveal=reveal)
    if script:
        exports = replay_exports(target, {v: {o} for v, o in needs.items()}, masker_of([result]))
        parts += ["", "Reproduce (after these exports):" if exports else "Reproduce:"]
        parts += [*exports, script]
    curls = [item["curl"] for item in _evidence(result, reveal)[:5] if item.get("curl")]
    if curls:
        parts += ["", "Each exchange as sent (curl):", *curls]
    return "\n".join(parts)


# --- report.html ----------------------------------------------------------------------------
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1100px;padding:0 1em;color:#1c1c1c}
h1{font-size:1.6em;margin-bottom:.2em}.meta{color:#555;margin-bottom:1.5em}
.banner{border-radius:6px;padding:.8em 1.2em;margin:1em 0 1.5em;color:#fff}
.banner .big{font-size:1.5em;font-weight:700;letter-spacing:.04em}
.banner ul{margin:.4em 0 0;padding-left:1.2em}.banner code{color:inherit}
.banner .finding{font-weight:700;margin:.3em 0}
.verdict-pass{background:#0a7a2f}.verdict-fail{background:#b42318}
.verdict-error{background:#6b21a8}.tls-insecure{font-weight:700}
table{border-collapse:collapse;width:100%;margin-bottom:1.5em}
th,td{text-align:left;padding:.3em .5em;border-bottom:1px solid #e3e3e3;vertical-align:top}
th.section{background:#f3f4f6;font-weight:600;padding-top:.6em}
.pass{color:#0a7a2f}.fail{color:#b42318;font-weight:600}.skip,.na{color:#6b7280}
.warning{color:#b45309;font-weight:600}.error{color:#7a2ab4;font-weight:600}
tr.row-warning{background:#fffbeb}.reason{color:#555;font-size:.92em}
.note{color:#6b7280;font-size:.9em}
.totals{font-size:1.15em;font-weight:600;margin:1em 0 2em}
.check{border:1px solid #f1c0bb;border-left:5px solid #b42318;border-radius:4px;
padding:.6em 1em;margin:1.2em 0}
.check-error{border-left-color:#7a2ab4;border-color:#dcc6ef}
.check-warning{border-left-color:#d97706;border-color:#fcd9a8;background:#fffdf5}
dl.ea{display:grid;grid-template-columns:max-content 1fr;gap:.2em .8em;margin:.5em 0}
dl.ea dt{font-weight:600}dl.ea dd{margin:0}
td.id,td.lvl,td.out{white-space:nowrap}
blockquote{margin:.5em 0;padding:.4em .8em;background:#f7f7f9;border-left:3px solid #999}
pre{background:#0f172a;color:#e2e8f0;padding:.6em .8em;border-radius:4px;overflow-x:auto;
white-space:pre-wrap;word-break:break-all;font-size:12.5px}
.replay{border:1px solid #d1d5db;border-radius:4px;padding:.6em 1em;margin:1em 0}
h3{margin:.2em 0}.level{font-size:.8em;padding:.1em .4em;border-radius:3px;background:#eee}
"""


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text))


def _banner(verdict: Verdict, results: Sequence[Result]) -> str:
    """The verdict above everything: colour, reason, coverage, profile, strictness, run errors."""
    warnings = summary(results)["warnings"]
    facts = [
        f"coverage {_e(verdict.coverage.text())}",
        f"profile <b>{_e(verdict.profile)}</b>",
        "strict" if verdict.strict else "not strict (a SHOULD failure is a warning)",
        f"exit {verdict.exit_code}",
    ]
    if warnings:
        facts.insert(1, f"{warnings} warning{'s' if warnings != 1 else ''}")
    if verdict.throttling is not None:
        facts.append(
            f"<span id='throttling'>{_e(verdict.throttling.text())}</span>"
            if verdict.throttling.throttled
            else "<span id='throttling'>the target did not throttle (no 429)</span>"
        )
    if verdict.tls is not None:
        kind = "insecure" if verdict.insecure else "verified"
        facts.append(f"<span id='tls' class='tls-{kind}'>{_e(verdict.tls.describe())}</span>")
    errors = "".join(f"<div class='finding'>{_e(finding)}</div>" for finding in verdict.findings)
    if verdict.run_errors:
        errors += (
            "<div>Run errors:</div><ul>"
            + "".join(f"<li>{_e(error)}</li>" for error in verdict.run_errors)
            + "</ul>"
        )
    return (
        f"<div class='banner verdict-{_e(verdict.verdict)}' id='verdict'>"
        f"<div class='big'>{_e(verdict.verdict.upper())}</div>"
        f"<div class='why'>{_e(verdict.reason)}</div>"
        f"<div>{' · '.join(facts)}</div>{errors}</div>"
    )


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
        needs = ", ".join(f"${var}" for var in item.get("env") or {})
        label = "As sent, as curl" + (
            f" (after exporting {_e(needs)}: see Replay)" if needs else ""
        )
        out.append(f"<div>{label}</div><pre class='curl'>{_e(item['curl'])}</pre>")
    if item.get("note"):
        out.append(f"<div class='note'>{_e(item['note'])}</div>")
    return "\n".join(out)


def _row_html(result: Result) -> str:
    level = severity(result)
    detail = ""
    if level != "pass" and result.message:
        detail = f"<div class='reason'>{_e(_first_line(result.message, 300))}</div>"
    if result.note and level in ("pass", "warning"):
        detail += f"<div class='note'>· {_e(_first_line(result.note, 300))}</div>"
    check_id = _e(result.check.id)
    anchor = (
        f"<a href='#{check_id}'>{check_id}</a>"
        if level in ("fail", "warning", "error")
        else check_id
    )
    return (
        f"<tr class='row-{_css(level)}'><td class='id'>{anchor}</td>"
        f"<td class='lvl'>{_e(result.check.level)}</td>"
        f"<td class='out {_css(level)}'>{_e(_WORD[level])}</td>"
        f"<td>{_e(result.check.title)}{detail}</td></tr>"
    )


def _css(level: str) -> str:
    """A severity as a CSS class name (``n/a`` is ``na``)."""
    return level.replace("/", "")


def _section_html(result: Result, reveal: bool) -> str:
    """A failure, warning or error in full: the rule, what it expects, what happened, the proof."""
    level = severity(result)
    pairs = [f"<dt>{label}</dt><dd>{_e(value)}</dd>" for label, value in _expected_actual(result)]
    expected_actual = f"<dl class='ea'>{''.join(pairs)}</dl>" if pairs else ""
    items = _evidence(result, reveal)
    exchanges = "\n".join(_exchange_html(item) for item in items) or "<p>(no exchange)</p>"
    script, needs = reproduce(result, reveal=reveal)
    if script:
        after = (
            f" (after exporting {', '.join('$' + v for v in needs)}: see Replay)" if needs else ""
        )
        exchanges = (
            f"<div>Reproduce{_e(after)}, or run <code>{_e(reproduce_file(result))}</code></div>"
            f"<pre class='repro'>{_e(script)}</pre>{exchanges}"
        )
    return (
        f"<section class='check check-{level}' id='{_e(result.check.id)}'>"
        f"<h3>{_e(result.check.id)} <span class='level'>{_e(result.check.level)}</span> "
        f"<span class='{level}'>{_e(_WORD[level])}</span> {_e(result.check.title)}</h3>"
        f"<div>Section: {_e(heading(result.check.section))}</div>"
        f"<blockquote>{_e(result.check.quote)}</blockquote>"
        f"{expected_actual}<pre>{_e(result.message)}</pre>{exchanges}</section>"
    )


def _engine_html(errors: Sequence[EngineError]) -> str:
    """paysuite's own errors, each with its traceback: the run's, never a check's failure."""
    items = "".join(
        f"<section class='check check-error'><h3>{_e(error.message)}</h3>"
        f"<div>During {_e(error.where)}</div><pre>{_e(error.traceback)}</pre></section>"
        for error in errors
    )
    return (
        "<h2 id='engine-errors'>Errors of paysuite itself</h2><p>Exceptions inside paysuite "
        "(its checks, hooks or property engine), not answers of the target: the run is an "
        f"error until they are fixed.</p>{items}"
    )


def _replay_html(info: dict[str, Any]) -> str:
    if info["reveal_secrets"]:
        return f"<div class='replay'><b>Replay.</b> {_e(info['how'])}</div>"
    if not info["exports"]:
        return ""
    return (
        f"<div class='replay' id='replay'><b>Replay.</b> {_e(info['how'])}:"
        f"<pre>{_e(chr(10).join(info['exports']))}</pre></div>"
    )


def to_html(
    results: Sequence[Result],
    *,
    verdict: Verdict,
    target: str,
    started_at: str,
    duration_s: float,
    reveal_secrets: bool = False,
    title: str = "paysuite conformance report",
) -> str:
    """The report a person reads: verdict banner, then every failure and error with its proof
    and curl right under it, then the warnings, then the scorecard of every check.

    Problems come first (as schemathesis puts them): on a run of one failure and forty skips
    the reader should not look for it in the middle of a table in document order. A run
    stopped before any check (the pre-flight) gets only what stopped it: no "No failure, no
    error" and no empty scorecard under its ERROR banner.
    """
    if not results and verdict.run_errors:
        return _stopped_html(verdict, target=target, started_at=started_at, title=title)
    rows = []
    for section, members in _by_section(results):
        rows.append(f"<tr><th class='section' colspan='4'>{_e(section)}</th></tr>")
        rows.extend(_row_html(r) for r in members)
    failing = [r for r in results if severity(r) == "fail"]
    failing += [r for r in results if severity(r) == "error"]
    warned = [r for r in results if severity(r) == "warning"]
    blocks = [
        "<h2 id='problems'>Failures and errors</h2>"
        + "\n".join(_section_html(r, reveal_secrets) for r in failing)
        if failing
        else "<h2 id='problems'>No failure, no error</h2>"
    ]
    if warned:
        blocks.append(
            "<h2>Warnings</h2><p>SHOULD checks that failed without failing the run "
            "(--strict makes them failures).</p>"
            + "\n".join(_section_html(r, reveal_secrets) for r in warned)
        )
    if verdict.engine_errors:
        blocks.append(_engine_html(verdict.engine_errors))
    replay_info = replay(results, target=target, reveal_secrets=reveal_secrets)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>"
        f"<div class='meta'>Target <code>{_e(target)}</code> · profile "
        f"<b>{_e(verdict.profile)}</b> · started {_e(started_at)} · {duration_s:.1f} s</div>"
        f"{_banner(verdict, results)}"
        f"<div class='totals' id='totals'>{_e(totals_line(results))}</div>"
        f"{_replay_html(replay_info) if failing or warned else ''}"
        f"{''.join(blocks)}"
        "<h2 id='scorecard'>Scorecard</h2>"
        "<table><thead><tr><th>ID</th><th>Level</th><th>Outcome</th><th>Check</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        "</body></html>"
    )


def _stopped_html(verdict: Verdict, *, target: str, started_at: str, title: str) -> str:
    """The page of a run stopped before any check: the verdict, what stopped it, nothing else."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title>"
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>"
        f"<div class='meta'>Target <code>{_e(target)}</code> · started {_e(started_at)}</div>"
        f"<div class='banner verdict-{_e(verdict.verdict)}' id='verdict'>"
        f"<div class='big'>{_e(verdict.verdict.upper())}</div>"
        f"<div class='why'>{_e(verdict.reason)}</div>"
        f"<div>no check ran · exit {verdict.exit_code}</div></div>"
        "</body></html>"
    )


def write_setup_error(
    reason: str,
    *,
    report_dir: str | Path,
    target: str,
    profile: str = "seed",
    strict: bool = False,
    started_at: str = "",
    reveal_secrets: bool = False,
) -> list[Path]:
    """The three reports of a run the pre-flight stopped: verdict error (exit 2), no check run,
    one error case naming the cause, so a CI's report step shows why instead of no file."""
    verdict = Verdict(
        verdict="error",
        exit_code=2,
        profile=profile,
        strict=strict,
        coverage=Coverage(run=0, total=0),
        run_errors=(f"pre-flight: {reason}",),
        reason=f"the pre-flight stopped the run before any check: {reason}",
    )
    return write_all(
        [],
        verdict=verdict,
        report_dir=report_dir,
        target=target,
        started_at=started_at,
        duration_s=0.0,
        reveal_secrets=reveal_secrets,
    )


#: How the reports write what UTF-8 cannot hold: a lone surrogate a check sent on purpose (a
#: JSON ``\\ud800`` escape, read back from its own request) is written as that escape again.
UNENCODABLE = "backslashreplace"


def write_all(
    results: Sequence[Result],
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
) -> list[Path]:
    """Write junit.xml, conformance.json and report.html; return their paths.

    ``title``, ``suite_name`` and ``extra`` (keys added to conformance.json) let another judge
    of the same rules (the proxy, its replay) write the same three reports under its own name.
    """
    directory = Path(report_dir)
    directory.mkdir(parents=True, exist_ok=True)
    junit = directory / "junit.xml"
    junit.write_text(
        to_junit(
            results,
            verdict=verdict,
            duration_s=duration_s,
            reveal_secrets=reveal_secrets,
            suite_name=suite_name,
            target=target,
        ),
        encoding="utf-8",
        errors=UNENCODABLE,
    )
    common: dict[str, Any] = {
        "verdict": verdict,
        "target": target,
        "started_at": started_at,
        "duration_s": duration_s,
        "reveal_secrets": reveal_secrets,
    }
    as_json = directory / "conformance.json"
    data = {**to_json(results, **common), **(extra or {})}
    as_json.write_text(
        json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8", errors=UNENCODABLE
    )
    page = directory / "report.html"
    page.write_text(to_html(results, **common, title=title), encoding="utf-8", errors=UNENCODABLE)
    _write_scripts(results, directory, target, reveal_secrets)
    return [junit, as_json, page]


def _write_scripts(results: Sequence[Result], directory: Path, target: str, reveal: bool) -> None:
    """Each failure's, warning's and error's reproduction as a script beside the reports (an
    earlier run's scripts removed: the folder holds this run's)."""
    for old in (directory / REPRODUCE_DIR).glob("*.sh"):
        old.unlink()
    for result in results:
        if severity(result) not in ("fail", "warning", "error"):
            continue
        if not reproduce(result, reveal=reveal)[0]:
            continue
        path = directory / reproduce_file(result)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_script(result, target, reveal), encoding="utf-8", errors=UNENCODABLE)
        path.chmod(0o700 if reveal else 0o755)
