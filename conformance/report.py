"""What only ``paysuite conform`` prints of its verdict: the quiet terminal's problems (each
failure with its reproduction) and the finding that a target expires tokens early. Everything
every judge writes alike (the scorecard, junit.xml, conformance.json, report.html, and those of
a run the pre-flight stopped, ``Verdict.stopped``) is ``paysuite_core.report_engine.reports``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paysuite_core.report_engine.reports import (
    clip,
    replay,
    reproduce,
    reproduce_file,
    scorecard_lines,
    severity,
)
from paysuite_core.results.evidence import issued, wire_of
from paysuite_core.results.verdict import CheckResult

#: ``early_expiry`` speaks when at least this many checks failed or errored on such refusals,
#: and they are most of the failed and errored checks.
EARLY_EXPIRY_MIN_CHECKS = 3


def early_expiry(results: Sequence[CheckResult]) -> tuple[str, ...]:
    """One line when most failed or errored checks met a 401 on a token younger than the
    ``expires`` it was issued with: the target expires tokens early, and each check's own
    message ("answered 401") would leave the reader to find that out 45 times."""
    broken = [r for r in results if severity(r) in ("fail", "error")]
    early = [sum(1 for item in result.evidence if _refused_early(item)) for result in broken]
    refused, hit = sum(early), sum(1 for count in early if count)
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


#: Errors shown in full at the terminal; past it one line says how many more report.html has
#: (a target that stops answering makes every later check an error of the same cause).
ERRORS_SHOWN = 5


def problems(
    results: Sequence[CheckResult],
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
        if level in ("warning", "n/a"):  # the scorecard's line, its reason after it
            lines.append(f"{scorecard_lines(result, color=False)[0]}: {clip(result.message, 200)}")
            continue
        if level not in ("fail", "error"):
            continue
        if level == "error" and errors.index(result) >= ERRORS_SHOWN:
            continue
        lines.extend(scorecard_lines(result, color=False))
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
