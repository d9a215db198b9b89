"""``python -m benchmarks conform``: what a far target costs ``paysuite conform``.

``paysuite conform`` against its bundled stub (loopback), and against the same bundled stub given
``--latency`` (80 ms: a service one region away), in interleaved rounds, each side's turn
alternating first, so that noise from elsewhere on the shared machine hits both alike. Both sides
run the very same checks with the same budgets; only the latency differs. The figure is the
ratio of the far run's wall time to the near run's (each round's, and the median), with both
verdicts, which must be the same: concurrency hides the latency only if it judges alike. Why a
process per run: that is the wall time a user waits, start-up included (``one_run`` is
``paysuite conform`` with the bundled stub's extra flags, which the command does not offer).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import HERE, say, write_report

#: What issue 29 asks: a target 80 ms away costs at most twice a near one's wall time.
TARGET_RATIO = 2.0


@dataclass
class Run:
    """One ``paysuite conform`` run: its wall time, verdict and each check's outcome."""

    seconds: float
    verdict: str
    outcomes: dict[str, str]
    #: the first line of each failed or unjudged check's message, by check ID
    problems: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 2), "verdict": self.verdict, **self.problems}


@dataclass
class Sides:
    """The near and far runs, round by round."""

    latency_ms: float
    concurrency: int
    near: list[Run] = field(default_factory=list)
    far: list[Run] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [far.seconds / near.seconds for near, far in zip(self.near, self.far, strict=True)]

    @property
    def ratio(self) -> float:
        """The median of the rounds' ratios."""
        return statistics.median(self.ratios)

    @property
    def same_verdicts(self) -> bool:
        """Every run judged alike: one verdict, and each check the same outcome."""
        runs = self.near + self.far
        return all(
            (run.verdict, run.outcomes) == (runs[0].verdict, runs[0].outcomes) for run in runs
        )

    @property
    def passed(self) -> bool:
        return self.same_verdicts and self.ratio <= TARGET_RATIO

    def verdict_line(self) -> str:
        status = "pass" if self.passed else "FAIL"
        verdicts = "same verdict" if self.same_verdicts else "VERDICTS DIFFER"
        return (
            f"conform {self.latency_ms:g} ms away / near, --concurrency {self.concurrency}: "
            f"x{self.ratio:.2f} (target <= x{TARGET_RATIO:g}), {verdicts}  {status}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "latency_ms": self.latency_ms,
            "concurrency": self.concurrency,
            "near": [run.to_dict() for run in self.near],
            "far": [run.to_dict() for run in self.far],
            "ratios": [round(ratio, 3) for ratio in self.ratios],
            "ratio": round(self.ratio, 3),
            "same_verdicts": self.same_verdicts,
            "passed": self.passed,
        }


def one_run(argv: list[str]) -> int:
    """``paysuite conform --concurrency N --report-dir DIR`` against the bundled stub started
    with ``--latency L`` (``argv``: L in ms, N, DIR; L 0: no latency); its exit status."""
    from conformance.options import Options
    from conformance.preflight import start_bundled_stub
    from conformance.runner import run_prepared
    from paysuite_core.driver.preflight import preflight
    from paysuite_core.throttle import Throttle

    latency_ms, concurrency, report_dir = argv
    options = Options.parse(concurrency=concurrency, report_dir=report_dir)
    extra = ("--latency", f"{latency_ms}ms") if float(latency_ms) > 0 else ()
    prepared = start_bundled_stub(extra)
    try:
        prepared.throttle = Throttle(options.max_throttle_wait_s)
        assert prepared.config is not None
        preflight(prepared.config, options.limits, prepared.throttle)
        return run_prepared(options, prepared)
    finally:
        prepared.close()


def conform(latency_ms: float, concurrency: int, report_dir: Path) -> Run:
    """One run in a process of its own, timed as a user waits for it."""
    code = (
        "import sys; from benchmarks.conform_bench import one_run; sys.exit(one_run(sys.argv[1:]))"
    )
    command = [sys.executable, "-c", code, f"{latency_ms:g}", str(concurrency), str(report_dir)]
    started = time.monotonic()
    subprocess.run(
        command, cwd=HERE.parent, capture_output=True, text=True, timeout=1800, check=False
    )
    seconds = time.monotonic() - started
    report = json.loads((report_dir / "conformance.json").read_text(encoding="utf-8"))
    outcomes = {check["id"]: check["outcome"] for check in report["checks"]}
    problems = {
        check["id"]: str(check["message"]).splitlines()[0][:300]
        for check in report["checks"]
        if check["outcome"] in ("failed", "error")
    }
    return Run(seconds, report["verdict"], outcomes, problems)


def run_conform_bench(rounds: int, latency_ms: float, concurrency: int, report_dir: Path) -> int:
    """Measure, print each run and the ratio, write conform-bench.json; exit 0."""
    load = os.getloadavg()
    shown = " ".join(f"{value:.2f}" for value in load)
    say("conform", f"machine load {shown} (1, 5, 15 min), {os.cpu_count()} cores")
    sides = Sides(latency_ms, concurrency)
    with tempfile.TemporaryDirectory(prefix="paysuite-conform-bench-") as tmp:
        for index in range(rounds):
            order = [("near", 0.0), ("far", latency_ms)]
            if index % 2:
                order.reverse()
            for name, latency in order:
                run = conform(latency, concurrency, Path(tmp) / f"{name}-{index}")
                getattr(sides, name).append(run)
                say("conform", f"round {index + 1} {name}: {run.seconds:.1f} s, {run.verdict}")
                for check_id, message in run.problems.items():
                    say("conform", f"  {check_id}: {message}")
            ratio = sides.far[-1].seconds / sides.near[-1].seconds
            say("conform", f"round {index + 1}: far / near x{ratio:.2f}")
    say("conform", sides.verdict_line())
    data = sides.to_dict() | {"load_average": [round(value, 2) for value in load]}
    written = write_report(report_dir, "conform-bench.json", data)
    say("conform", f"wrote {written}")
    return 0
