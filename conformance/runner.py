"""One conformance run as a library call: ``run(options) -> exit status``, or ``conform(options)``
for the verdict and its counts as well (``paysuite demo`` shows them without reading a report).

``paysuite conform`` parses its arguments into ``Options`` and calls ``run``; another part of
paysuite (``paysuite demo``) can do the same without a subprocess. ``run`` prepares the target
once (loads the configuration or starts the bundled stub, then the pre-flight:
``conformance.preflight.prepare``) and hands the prepared objects to an in-process pytest
session through a ``PreparedRun`` plugin object, so the plugin neither parses options nor probes
the target again. Exit status: 0 pass, 1 fail, 2 no verdict (see docs/conformance.md).
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from conformance.options import Options, SetupError

if TYPE_CHECKING:
    from paysuite_core.results.verdict import Verdict

PROG = "paysuite conform"


@dataclass(frozen=True)
class Finished:
    """A run's exit status and, when the checks ran, its verdict and counts by severity
    (``paysuite_core.report_engine.reports.summary``)."""

    status: int
    verdict: Verdict | None = None
    counts: dict[str, int] = field(default_factory=dict)


def run(options: Options, *, stderr: TextIO | None = None) -> int:
    """``conform``'s exit status."""
    return conform(options, stderr=stderr).status


def conform(options: Options, *, stderr: TextIO | None = None) -> Finished:
    """Prepare the target described by ``options``, run the checks, write the reports.

    A run that cannot start (the target unreachable, not this API, refusing the credentials;
    the bundled stub not starting) is exit status 2 with one line on ``stderr``. A bundled stub
    started for the run is stopped before this returns.
    """
    from conformance.preflight import prepare, write_setup_reports
    from paysuite_core.report_engine.reports import summary

    try:
        prepared = prepare(options)
    except SetupError as exc:
        print(f"{PROG}: {exc}", file=stderr or sys.stderr)
        write_setup_reports(options, str(exc), stderr=stderr)
        return Finished(2, counts=summary([]))  # no check ran
    try:
        return run_prepared(options, prepared, stderr=stderr)
    finally:
        prepared.close()


def run_prepared(options: Options, prepared: object, *, stderr: TextIO | None = None) -> Finished:
    """The checks against an already prepared target (``conformance.preflight.Prepared``)."""
    import pytest

    import conformance.suite
    from conformance.plugin import PreparedRun
    from conformance.preflight import Prepared

    assert isinstance(prepared, Prepared)
    suite = Path(conformance.suite.__file__).resolve().parent
    # An empty ini of our own: the caller's pytest configuration (addopts, filterwarnings, ...)
    # must not change the verdict, and its terminal options would not parse without the
    # terminal plugin, whose output the suite's progress lines and scorecard replace.
    with tempfile.TemporaryDirectory(prefix="paysuite-conform-ini-") as tmp:
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        # Only the suite's own plugin: every other pytest11 plugin of the environment (locust's
        # imports gevent, faker's, hypothesis's, schemathesis's...) would be imported, and
        # pytest would assertion-rewrite each of those distributions' modules on import: about
        # 2.7 s of CPU per run where bytecode is not cached (PYTHONDONTWRITEBYTECODE).
        argv = [
            "-c", str(ini), "--rootdir", str(suite.parent),
            "--disable-plugin-autoload", "-p", "conformance.plugin",
            "-p", "no:terminal", "-p", "no:cacheprovider",
            str(suite),
        ]  # fmt: skip
        handed = PreparedRun(options, prepared)
        status = int(pytest.main(argv, plugins=[handed]))
    if status not in (0, 1, 2):
        print(f"{PROG}: pytest ended with status {status}", file=stderr or sys.stderr)
        status = 2
    return Finished(status, handed.verdict, handed.counts)
