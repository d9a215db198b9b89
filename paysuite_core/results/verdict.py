"""A check's result and the run's verdict: what every judge hands its renderers.

The suite's plugin, the proxy, the SDK runs and the webhook listener each produce
``CheckResult`` records and one ``Verdict``; the terminal scorecard, junit.xml,
conformance.json and report.html are rendered from them alone, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from paysuite_core.results.evidence import Reproduction
from paysuite_core.results.outcome import EngineError
from paysuite_core.results.rule import Check
from paysuite_core.throttle import ThrottleStats
from paysuite_core.tls import TLSSettings


@dataclass
class CheckResult:
    check: Check
    outcome: str  # passed | failed | skipped | error
    message: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0
    expected: str = ""  # h2spec's Expected: what the rule demands
    actual: str = ""  # what the target did instead
    note: str = ""  # an observation that is no failure ("bare token: accepted")
    gating: bool = True  # False: a failure that does not fail the run (a warning)
    #: A skip because the configuration cannot meet what the check needs (no writer, one
    #: merchant, no customer driver): counted apart from the coverage, never against it.
    not_applicable: bool = False
    #: The shell lines that show the defect on their own (``evidence.reproduction``).
    reproduction: Reproduction | None = None


@dataclass(frozen=True)
class Coverage:
    """How much of the profile the verdict rests on: a pass on 1 check of 54 is no pass."""

    run: int  # checks that ran to a verdict (passed or failed)
    total: int  # checks of the profile selected for this run
    skipped: tuple[tuple[str, str], ...] = ()  # (check id, why it did not run)
    minimum: float | None = None  # --min-coverage, a share in [0, 1]
    #: (check id, why): skipped because the configuration cannot meet what the check needs
    #: (read-only credentials, one merchant, no customer driver). A subset of ``skipped``,
    #: counted apart: a run with the credentials QA was given is judged on what they reach.
    not_applicable: tuple[tuple[str, str], ...] = ()

    @property
    def applicable(self) -> int:
        """The profile's checks this configuration can run."""
        return self.total - len(self.not_applicable)

    @property
    def ratio(self) -> float:
        """Share of the applicable checks that ran; 0 when there were none (nothing judged)."""
        return self.run / self.applicable if self.applicable else 0.0

    def text(self) -> str:
        """``52/54 (96%)``, floored so that a single unrun check never reads as 100%."""
        percent = int(self.ratio * 100 + 1e-9)
        line = f"{self.run}/{self.applicable} ({percent}%"
        if self.minimum is not None:
            line += f", minimum {int(self.minimum * 100 + 1e-9)}%"
        line += ")"
        if self.not_applicable:
            line += f", {len(self.not_applicable)} n/a (not applicable to this configuration)"
        return line


@dataclass(frozen=True)
class Verdict:
    """The run's verdict, decided once by the plugin and shown the same way everywhere."""

    verdict: str  # "pass" | "fail" | "error"
    exit_code: int  # 0 pass, 1 fail, 2 error (could not judge)
    profile: str  # seed | reference
    strict: bool
    coverage: Coverage
    run_errors: tuple[str, ...] = ()  # problems of the run, not of one check
    reason: str = ""  # one line: why this verdict (every judge gives one)
    #: How often the target answered 429 and how long the run waited (None: not a suite run).
    throttling: ThrottleStats | None = None
    #: How the target's certificate was judged (``shown_tls``); None: plain HTTP, nothing to say.
    tls: TLSSettings | None = None
    #: Exceptions inside paysuite (not the target's answers), with their tracebacks; each has
    #: its line among ``run_errors`` too.
    engine_errors: tuple[EngineError, ...] = ()
    #: What the failures have in common, said once (``early_expiry``).
    findings: tuple[str, ...] = ()

    @property
    def insecure(self) -> bool:
        """Certificates were not verified (``--insecure``): said wherever the verdict is."""
        return self.tls is not None and self.tls.insecure

    @classmethod
    def stopped(cls, reason: str, *, before: str, profile: str, strict: bool) -> Verdict:
        """The verdict of a run the pre-flight stopped ``before`` anything ran: error, exit 2,
        nothing judged, the cause as its one run error."""
        return cls(
            verdict="error",
            exit_code=2,
            profile=profile,
            strict=strict,
            coverage=Coverage(run=0, total=0),
            run_errors=(f"pre-flight: {reason}",),
            reason=f"the pre-flight stopped the run before {before}: {reason}",
        )


def coverage_of(results: Sequence[CheckResult]) -> Coverage:
    """How much of ``results`` was judged (passed or failed), each skipped one with its reason:
    the coverage of a judge whose every rule is one result (the proxy, the webhook listener)."""
    return Coverage(
        run=sum(1 for r in results if r.outcome in ("passed", "failed")),
        total=len(results),
        skipped=tuple((r.check.id, r.message) for r in results if r.outcome == "skipped"),
    )


def shown_tls(target: str, tls: TLSSettings | None) -> TLSSettings | None:
    """The TLS settings a verdict reports: an HTTPS target's, and ``--insecure`` whatever the
    target's scheme (a run told not to verify says so even where nothing was verified)."""
    if tls is None:
        return None
    return tls if tls.insecure or target.lower().startswith("https:") else None
