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
import html
import io
import json
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from load.records import LoadSummary
from paysuite_core.durations import duration_argument

CONFORM_TIMEOUT_S = 240.0


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


def junit_totals(path: Path) -> dict[str, int]:
    """tests/failures/errors/skipped summed over the test suites of a JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            try:
                totals[key] += int(suite.get(key, 0) or 0)
            except ValueError:
                pass
    totals["passed"] = max(
        totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"], 0
    )
    return totals


def _json_totals(path: Path) -> dict[str, int]:
    """Totals from conformance.json's ``summary``, the suite's machine-readable verdict."""
    try:
        summary = json.loads(path.read_text(encoding="utf-8")).get("summary") or {}
        passed, failed = int(summary["passed"]), int(summary["failed"])
        skipped, errors = int(summary.get("skipped", 0)), int(summary.get("errors", 0))
        warnings = int(summary.get("warnings", 0))  # failures that do not gate the run
        not_applicable = int(summary.get("not_applicable", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
    return {
        "tests": passed + failed + warnings + skipped + not_applicable + errors,
        "passed": passed,
        "warnings": warnings,
        "failures": failed,
        "errors": errors,
        "skipped": skipped,
        "not_applicable": not_applicable,
    }


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
        returncode = runner.run(options, stderr=errors)
    except SetupError as exc:
        errors.write(f"{runner.PROG}: {exc}\n")
        returncode = 2
    sys.stderr.write(errors.getvalue())
    totals: dict[str, int] = {}
    summary_json = out_dir / "conformance.json"
    if summary_json.is_file():
        totals = _json_totals(summary_json)
    junit = out_dir / "junit.xml"
    if not totals and junit.is_file():
        try:
            totals = junit_totals(junit)
        except ET.ParseError:
            totals = {}
    report = out_dir / "report.html"
    rel = str(report.relative_to(report_root)) if report.is_file() else None
    status = {0: "passed", 1: "failed"}.get(returncode, "error")
    message = "" if status != "error" else (errors.getvalue().strip().splitlines() or [""])[-1]
    return ConformanceResult(status, returncode, totals, rel, message)


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


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>paysuite demo</title>
<style>
body{{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:58em;color:#222}}
.cards{{display:flex;gap:1.2em;flex-wrap:wrap}}
.card{{flex:1 1 24em;border:1px solid #ccc;border-radius:8px;padding:.8em 1.2em}}
.pass{{color:#176b2c}} .fail{{color:#b00020}}
h1 .pass,h1 .fail{{font-size:.8em}} td{{padding:.1em .8em .1em 0}}
</style></head><body>
<h1>paysuite demo: <span class="{overall_cls}">{overall}</span></h1>
<p>{when} · the bundled reference stub on loopback · exit status {exit_code}</p>
<div class="cards">
<div class="card"><h2>Conformance <span class="{conf_cls}">{conf_status}</span></h2>
{conf_body}</div>
<div class="card"><h2>Load: smoke <span class="{load_cls}">{load_status}</span></h2>
{load_body}</div>
</div>
</body></html>
"""


def _table(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(
        f"<tr><td>{html.escape(str(k))}</td><td><b>{html.escape(str(v))}</b></td></tr>"
        for k, v in rows
    )
    return f"<table>{cells}</table>"


def _link(path: str | None, label: str) -> str:
    return f'<p><a href="{html.escape(path)}">{html.escape(label)}</a></p>' if path else ""


def write_index(
    report_dir: Path,
    conformance: ConformanceResult,
    load_code: int | None,
    load_summary: LoadSummary | None,
    exit_code: int,
) -> Path:
    """``index.html``: both verdicts on one screen, with links (self-contained, no scripts)."""
    totals = conformance.totals
    conf_rows = [
        (name, totals[key])
        for name, key in (
            ("checks", "tests"),
            ("passed", "passed"),
            ("failed", "failures"),
            ("warnings", "warnings"),
            ("errors", "errors"),
            ("skipped", "skipped"),
            ("n/a", "not_applicable"),
        )
        if key in totals
    ]
    conf_body = _table(conf_rows) if conf_rows else ""
    if conformance.message:
        conf_body += f"<p>{html.escape(conformance.message)}</p>"
    conf_body += _link(conformance.report, "conformance report")
    if conformance.report:
        conf_body += _link(str(Path(conformance.report).with_name("junit.xml")), "junit.xml")
    conf_cls = "pass" if conformance.status == "passed" else "fail"

    if load_summary is not None and load_summary.get("no_load"):
        load_body = f"<p>{html.escape(str(load_summary.get('reason', '')))}</p>"
        load_body += _link("load/load.html", "load summary")
    elif load_summary is not None:
        verdicts = load_summary.get("slo", {}).get("verdicts", [])
        failed = [v for v in verdicts if not v["passed"]]
        recon = load_summary.get("reconciliation", {})
        total = load_summary.get("total", {})
        rows = [
            ("requests", total.get("requests")),
            ("failures", total.get("failures")),
            ("throughput (req/s)", total.get("rps")),
            ("p95 latency (ms)", total.get("p95_ms")),
            ("SLO verdicts", f"{len(verdicts) - len(failed)} met, {len(failed)} breached"),
            ("creates acknowledged", recon.get("acknowledged")),
            ("found on the target", recon.get("found")),
            ("lost", recon.get("lost")),
        ]
        load_body = _table(rows)
        load_body += "".join(
            f"<p class='fail'>breached: {html.escape(v['operation'])} "
            f"{html.escape(v['metric'])}</p>"
            for v in failed
        )
        load_body += _link("load/load.html", "load summary (chart, verdicts, reconciliation)")
        load_body += _link("load/locust.html", "Locust report")
    else:
        load_body = "<p>the load run produced no verdict</p>"
    load_status = "PASS" if load_code == 0 else "FAIL"
    page = _PAGE.format(
        overall="PASS" if exit_code == 0 else "FAIL",
        overall_cls="pass" if exit_code == 0 else "fail",
        when=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        exit_code=exit_code,
        conf_status=conformance.status.upper(),
        conf_cls=conf_cls,
        conf_body=conf_body,
        load_status=load_status,
        load_cls="pass" if load_code == 0 else "fail",
        load_body=load_body,
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
        print(f"paysuite demo: the stub did not start: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    exit_code = 0 if conformance.status == "passed" and load_code == 0 else 1
    index = write_index(report_dir, conformance, load_code, load_summary, exit_code)
    say(f"conformance {conformance.status}; load {'passed' if load_code == 0 else 'failed'}")
    say(f"open {index.resolve()}")
    say(f"finished in {time.monotonic() - started:.0f} s: exit {exit_code}")
    return exit_code


def _run(args: argparse.Namespace) -> int:
    if args.load_duration is not None and args.load_duration <= 0:
        print("paysuite demo: --load-duration must be greater than 0", file=sys.stderr)
        return 2
    return run_demo(args)


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="stub + conformance suite + smoke load run, summarized in reports/index.html",
        description=(
            "Start the bundled stub, run the conformance suite and a smoke load run against it, "
            "and write reports/index.html. Exit 0 only if both passed."
        ),
    )
    demo.add_argument("--report-dir", default="reports", help="where reports go (default reports/)")
    demo.add_argument(
        "--load-duration",
        type=duration_argument,
        default=None,
        help="smoke run length (30, 30s, 1m; default 30 s)",
    )
    demo.add_argument("--users", type=int, default=None, help="smoke run users (default 5)")
    demo.add_argument(
        "--quiet",
        action="store_true",
        help="no Locust statistics table (by default it is printed once, at the end)",
    )
    demo.set_defaults(func=_run)
