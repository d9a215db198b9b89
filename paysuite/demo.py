"""``paysuite demo``: the whole product in one command, finishing by itself in about two minutes.

1. starts the bundled stub once, with the short token lifetime ``paysuite conform`` gives its
   own bundled stub, and without auto-resolution: the conformance suite drives the
   customer itself through the sandbox, and the smoke load shape needs no transaction to complete;
2. runs the conformance suite against it (``conformance.runner.run``, in this process), into
   ``reports/conformance``;
3. then runs the ``smoke`` load shape against the same stub (``load.runner.run``), into
   ``reports/load``, so the load's reconciliation also runs over a store the conformance suite
   has already written to;
4. writes ``reports/index.html``: one screen with both verdicts and links to both reports.

Exit 0 only if the conformance suite passed and the load run met its SLOs and lost nothing.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from load.records import LoadSummary
from paysuite_core.cli_flags import Flag, UsageError, add_command
from paysuite_core.durations import duration_argument
from paysuite_core.report_engine import render

CONFORM_TIMEOUT_S = 240.0
#: the reports' ``summary`` keys where the index names them otherwise
_INDEX = {"failed": "failures"}


@dataclass
class ConformanceResult:
    """What the conformance step produced (``status``: passed, failed or error)."""

    status: str
    exit_code: int | None = None
    totals: dict[str, int] = field(default_factory=dict)
    report: str | None = None  # relative to the demo's report dir
    message: str = ""


def say(message: str) -> None:
    print(f"paysuite demo: {message}", flush=True)


def run_conformance(credentials: Path, out_dir: Path, report_root: Path) -> ConformanceResult:
    """The conformance runner as a library call (``conformance.runner.run``), exit 0/1/2.

    Bounded by ``--max-duration`` (``CONFORM_TIMEOUT_S``): checks not judged by then are
    reported as not attempted, and the run is an error, never a hang.
    """
    from conformance import runner
    from conformance.options import Options, SetupError

    say(f"running the conformance suite into {out_dir}")
    errors = io.StringIO()
    try:
        options = Options.parse(
            config=str(credentials), report_dir=str(out_dir), max_duration=CONFORM_TIMEOUT_S
        )
        finished = runner.conform(options, stderr=errors)
    except SetupError as exc:
        errors.write(f"{runner.PROG}: {exc}\n")
        finished = runner.Finished(2)
    sys.stderr.write(errors.getvalue())
    returncode, counts = finished.status, finished.counts
    # the run's own counts by severity, as the index names them (a failure is one of "failures")
    totals = {"tests": sum(counts.values())} | {_INDEX.get(k, k): n for k, n in counts.items()}
    report = out_dir / "report.html"
    rel = str(report.relative_to(report_root)) if report.is_file() else None
    status = {0: "passed", 1: "failed"}.get(returncode, "error")
    message = "" if status != "error" else (errors.getvalue().strip().splitlines() or [""])[-1]
    return ConformanceResult(status, returncode, totals if counts else {}, rel, message)


def run_load_step(
    credentials: Path,
    out_dir: Path,
    duration: float | None,
    users: int | None,
    quiet: bool = False,
) -> tuple[int, LoadSummary | None]:
    """The smoke shape through the load runner's entry point; (exit status, load.json).

    Locust's table is printed once at the end (the demo's own lines say the rest), or not at
    all with ``quiet``."""
    from load.plan import UsageError, build_plan
    from load.runner import run

    try:
        plan = build_plan(
            shape="smoke",
            config=credentials,
            report_dir=out_dir,
            users=users,
            duration=duration,
            lifecycle_resolve="auto",
            quiet=quiet,
            summary_only=True,
        )
        result = run(plan)
    except UsageError as exc:
        say(f"load step: {exc}")
        return 2, None
    return result.exit_code, result.summary


def write_index(
    report_dir: Path,
    conformance: ConformanceResult,
    load_code: int | None,
    load_summary: LoadSummary | None,
    exit_code: int,
) -> Path:
    """``index.html``: both verdicts on one screen, with links (self-contained, no scripts)."""
    page = render(
        "demo.html",
        title="paysuite demo",
        conformance=conformance,
        junit=str(Path(conformance.report).with_name("junit.xml")) if conformance.report else "",
        load=load_summary,
        load_code=load_code,
        exit_code=exit_code,
        when=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    )
    index = report_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def run_demo(
    args: argparse.Namespace,
    conformance_runner: Callable[[Path, Path, Path], ConformanceResult] = run_conformance,
) -> int:
    from paysuite_core.launcher import StubStartError, running_stub

    started = time.monotonic()
    report_dir = Path(args.report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="paysuite-demo-") as workdir:
            say("starting the bundled stub")
            # the stub as `paysuite stub` starts it, so that the demo's counts are those of a
            # run with its credentials file (AUTH-008 on its declared short_lived_pair)
            with running_stub(Path(workdir) / "stub") as stub:
                say(f"stub listening on {stub.root_url}")
                conformance = conformance_runner(
                    stub.credentials_path, report_dir / "conformance", report_dir
                )
                say(f"conformance: {conformance.status} {conformance.message}".rstrip())
                load_code, load_summary = run_load_step(
                    stub.credentials_path,
                    report_dir / "load",
                    args.load_duration,
                    args.users,
                    quiet=bool(getattr(args, "quiet", False)),
                )
    except StubStartError as exc:
        raise UsageError(f"the stub did not start: {str(exc).splitlines()[0]}") from None
    exit_code = 0 if conformance.status == "passed" and load_code == 0 else 1
    index = write_index(report_dir, conformance, load_code, load_summary, exit_code)
    say(f"conformance {conformance.status}; load {'passed' if load_code == 0 else 'failed'}")
    say(f"open {index.resolve()}")
    say(f"finished in {time.monotonic() - started:.0f} s: exit {exit_code}")
    return exit_code


def _run(args: argparse.Namespace) -> int:
    if args.load_duration is not None and args.load_duration <= 0:
        raise UsageError("--load-duration must be greater than 0")
    return run_demo(args)


FLAGS = (
    Flag("--report-dir", "where reports go (default reports/)", default="reports"),
    Flag("--load-duration", "smoke run length (30, 30s, 1m; default 30 s)", type=duration_argument),
    Flag("--users", "smoke run users (default 5)", type=int),
    Flag(
        "--quiet",
        "no Locust statistics table (by default it is printed once, at the end)",
        switch=True,
    ),
)


def register(subparsers: Any) -> None:
    add_command(
        subparsers,
        "demo",
        _run,
        FLAGS,
        help="stub + conformance suite + smoke load run, summarized in reports/index.html",
        description=(
            "Start the bundled stub, run the conformance suite and a smoke load run against it, "
            "and write reports/index.html. Exit 0 only if both passed."
        ),
    )
