"""The load runner: ``run(plan) -> LoadResult``, the one entry point of a load run.

It starts the bundled stub when the plan has no target, checks the target (loopback only, one
authorize) and runs Locust as a subprocess, so that distributed mode is Locust's own (``--workers
N``: one master and N local workers; remote workers join with ``--master-host``). The verdict is
computed inside the Locust master when it quits (``load.finalize``); ``run`` maps it to the exit
status: 0 met and nothing lost, 1 a threshold breached, 2 usage error or no verdict, 3 the
reconciliation failed. Load only goes to loopback unless ``PAYSUITE_ALLOW_REMOTE_TARGET=1``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import STDOUT
from typing import Any

from load import loopback, probe
from load.plan import LoadPlan, UsageError, write_plan
from load.records import LoadSummary
from load.terminal import say
from load.webhook_journal import receiving
from paysuite_core import guarded_json, tokens
from paysuite_core.bounded_http import LOAD_LIMITS, Limits
from paysuite_core.launcher import RunningStub, end_with_parent
from paysuite_core.target_config import TargetConfig
from paysuite_core.throttle import Throttle, send_honouring
from paysuite_core.tls import TLSSettings

__all__ = ["LoadResult", "TargetRefused", "UsageError", "run"]

LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
#: The bundled stub's customers answer by themselves, so transactions complete during the run.
BUNDLED_STUB_CONFIG: dict[str, Any] = {
    "auto_resolve": {
        "default": {"outcome": "success", "delay_s": 0.5},
        "rules": [{"number_suffix": "0000", "outcome": "failed", "delay_s": 0.5}],
    }
}


@dataclass(frozen=True)
class LoadResult:
    exit_code: int
    report_dir: Path
    #: load.json as written by the Locust master (``None``: the run produced no verdict)
    summary: LoadSummary | None
    #: the plan as run (against the bundled stub: with the stub's configuration)
    plan: LoadPlan


class TargetRefused(UsageError):
    """The pre-check ended the run before any load. ``fail`` (exit 1): the target answered
    wrongly (a 5xx, no token pair), a finding about it. ``error`` (exit 2): nothing could be
    measured (no answer, refused credentials, a wrong base URL), so there is no verdict."""

    def __init__(self, message: str, verdict: str = "error") -> None:
        super().__init__(message)
        self.verdict = verdict

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict == "fail" else 2


def check_loopback(config: TargetConfig) -> None:
    """``loopback.check_loopback`` with its refusal as a run ended before any load (exit
    status 2, no verdict): like every other exit past the arguments it writes load.json and
    load.html, so that a CI job's report step shows why nothing ran."""
    try:
        loopback.check_loopback(config, warn=say)
    except loopback.NotLoopbackError as exc:
        raise TargetRefused(str(exc), verdict="error") from None


def preflight(
    config: TargetConfig, limits: Limits | None = None, tls: TLSSettings | None = None
) -> None:
    """Authorize once with the first application: reachable target, accepted credentials, an
    answer that is a token pair. Bounded by ``limits``: no redirect followed, no body
    read past the size limit, no wait past the total timeout. A 429 is waited for as it asks
    (``paysuite_core.throttle``, its default budget) and sent again. ``tls``: the run's TLS
    settings; a certificate problem is its one-line diagnosis (no verdict, exit 2)."""
    limits = limits or LOAD_LIMITS
    app = config.applications[0]
    throttle = Throttle()
    request = tokens.authorize_request(app)
    try:
        answer = send_honouring(
            throttle,
            lambda: probe.post_json(config.base_url + request.path, request.json, limits, tls),
            lambda answer: answer.status,
            lambda answer: answer.headers,
            give_up=lambda answer: answer,
        )
    except probe.ProbeError as exc:
        raise TargetRefused(str(exc) if exc.tls else f"target {config.base_url}: {exc}") from None
    if answer.status == 404:
        raise TargetRefused(tokens.no_api_at(config.base_url))
    if answer.status in (401, 403):
        raise TargetRefused(
            f"the target refused the credentials of application {app.client_id} "
            f"(HTTP {answer.status})"
        )
    if 300 <= answer.status < 400:
        raise TargetRefused(
            f"the target answered authorize with a redirect (HTTP {answer.status} to "
            f"{answer.headers.get('location')!r}); paysuite does not follow redirects: fix base_url"
        )
    if answer.status == 429:
        raise TargetRefused(
            f"the target kept answering authorize with HTTP 429 (rate limited): "
            f"{throttle.stats().text()}"
        )
    if not 200 <= answer.status < 300:
        raise TargetRefused(
            f"the target answered authorize with HTTP {answer.status}: no load was sent",
            "fail" if answer.status >= 500 else "error",
        )
    try:
        pair = guarded_json.loads(answer.body)
    except ValueError:
        pair = None
    if not isinstance(pair, dict) or not isinstance(pair.get("access"), str):
        raise TargetRefused(
            "the target's answer to authorize is not a token pair (a JSON object with "
            f"'access'): {answer.body[:80]!r}; no load was sent",
            "fail",
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def locust_command(plan: LoadPlan, plan_file: Path) -> list[str]:
    """The Locust master's (or single process's) command line; the shape's name too, which the
    locustfile reads before Locust parses options."""
    report_dir = plan.report_dir.resolve()
    cmd = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE),
        "--headless",
        "--host", plan.target.base_url,
        "--html", str(report_dir / "locust.html"),
        "--csv", str(report_dir / "locust"),
        "--csv-full-history",
        "--paysuite-plan-file", str(plan_file.resolve()),
        "--paysuite-shape", plan.shape_name,
    ]  # fmt: skip
    # Locust's own switches: --only-summary drops the table printed every few seconds (the
    # verdict prints Locust's table once, load.terminal); --skip-log-setup leaves logging to
    # Python's defaults, which print warnings and errors but not the INFO records the table
    # is made of (--quiet: no table at all).
    cmd += ["--only-summary"]
    if plan.quiet:
        cmd += ["--skip-log-setup"]
    return [*cmd, *plan.shape.user_classes]  # the shape's user classes, Locust's positionals


def worker_command(port: int) -> list[str]:
    """A local worker: the master sends it the plan with its spawn order."""
    return [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE),
        "--worker", "--master-host", "127.0.0.1", "--master-port", str(port),
    ]  # fmt: skip


@contextmanager
def bundled_stub(workdir: Path) -> Iterator[RunningStub]:
    from paysuite_core.launcher import StubStartError, start_stub, stop_stub

    say("starting the bundled stub (customers auto-resolve after 0.5 s)")
    try:
        # its own session: a Ctrl-C stops the load, not the target the reconciliation checks
        stub = start_stub(workdir, stub_config=BUNDLED_STUB_CONFIG, own_session=True)
    except StubStartError as exc:
        raise UsageError(f"the bundled stub did not start: {str(exc).splitlines()[0]}") from None
    say(f"stub listening on {stub.root_url}")
    try:
        yield stub
    finally:
        stop_stub(stub)


def run_locust(plan: LoadPlan, plan_file: Path, log_path: Path | None = None) -> int:
    """Run Locust (local, or master + local workers); returns its exit status. Its output goes
    to this process's stdout, or to ``log_path``."""
    shape = plan.shape
    plan.report_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("load.json", "load.html"):
        (plan.report_dir / stale).unlink(missing_ok=True)
    deadline_s = shape.duration_s + plan.reconcile_timeout_s + 90 + 10 * plan.workers
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Locust in sessions of its own: a terminal's Ctrl-C reaches paysuite alone, which passes
    # exactly one SIGINT to the master (``wait_for_master``); the master stops its workers
    # itself, after their last statistics. SIGINT, not SIGTERM, if paysuite dies: Locust treats
    # it as a Ctrl-C (reports written).
    detached: dict[str, Any] = {
        "start_new_session": True,
        "preexec_fn": end_with_parent(os.getpid(), signal.SIGINT),
    }
    cmd = locust_command(plan, plan_file)
    workers: list[subprocess.Popen[bytes]] = []
    logs = []
    mode = f"with {plan.workers} local workers" if plan.workers else "in one process"
    say(
        f"running shape {shape.name} against {plan.target.base_url}: {shape.outline()}, at "
        f"most {shape.duration_s:g} s / {shape.max_requests} requests, {mode}"
        + (", --abort-on-fail" if plan.abort_on_fail else "")
    )
    say(plan.tls_text)
    if plan.workers:
        port = free_port()
        cmd += [
            "--master",
            "--master-bind-host", "127.0.0.1",
            "--master-bind-port", str(port),
            "--expect-workers", str(plan.workers),
            "--expect-workers-max-wait", "60",
        ]  # fmt: skip
        worker_dir = plan.report_dir / "workers"
        worker_dir.mkdir(parents=True, exist_ok=True)
        for index in range(plan.workers):
            log = open(worker_dir / f"worker-{index}.log", "wb")  # closed below
            logs.append(log)
            command = worker_command(port)
            workers.append(
                subprocess.Popen(command, stdout=log, stderr=STDOUT, env=env, **detached)
            )
    master: subprocess.Popen[bytes] | None = None
    try:
        out = open(log_path, "wb") if log_path is not None else None  # closed below
        logs += [out] if out is not None else []
        err = STDOUT if out is not None else None
        master = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, **detached)
        with _sigterm_as_ctrl_c():
            code = wait_for_master(master, time.monotonic() + deadline_s, plan.reconcile_timeout_s)
    except KeyboardInterrupt:  # the second Ctrl-C (or one before the master started)
        for proc in [*workers, *([master] if master is not None else [])]:
            proc.kill()
        say("interrupted again: Locust stopped without waiting for its reports")
        raise
    finally:
        for proc in workers:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if master is not None and master.poll() is None:
            master.kill()
            master.wait(10)
        for log in logs:
            log.close()
    return code


def wait_for_master(master: subprocess.Popen[bytes], deadline: float, reconcile_s: float) -> int:
    """The master's exit status; 2 if it is still running at ``deadline`` (then killed).

    A Ctrl-C (or SIGTERM) reaches paysuite alone: the first is passed on as one SIGINT, and this
    waits while Locust stops, reconciles and writes load.json (at most the reconciliation's
    budget and a margin). A second one propagates and the caller kills Locust."""
    try:
        return _wait(master, deadline)
    except KeyboardInterrupt:
        pass
    if master.poll() is None:
        master.send_signal(signal.SIGINT)
    deadline = min(deadline, time.monotonic() + reconcile_s + 60)
    say(
        f"interrupted: waiting up to {deadline - time.monotonic():.0f} s for Locust to stop the "
        "load, reconcile and write its reports (Ctrl-C again to stop it now)"
    )
    return _wait(master, deadline)


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """A SIGTERM (a CI job cancelled) ends the run as a Ctrl-C does: with its reports, not with
    Locust left running. Main thread only (signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _wait(master: subprocess.Popen[bytes], deadline: float) -> int:
    try:
        return master.wait(timeout=max(deadline - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        master.kill()
        master.wait(10)
        say(f"Locust did not finish in time (exit status {master.returncode}); killed")
        return 2


def outcome(plan: LoadPlan, code: int) -> LoadResult:
    """Map Locust's exit status and load.json to paysuite's."""
    load_json = plan.report_dir / "load.json"
    if not load_json.is_file():
        reason = f"Locust ended without a verdict (exit status {code}); see its output above"
        say(reason)
        return ended_early(plan, TargetRefused(reason), "Locust ended without a verdict")
    summary = json.loads(load_json.read_text())
    exit_code = int(summary.get("exit_code", code))  # reports and verdict printed by Locust
    # 130: a Ctrl-C (or SIGTERM) ended a run in which nothing failed (load.finalize)
    return LoadResult(exit_code if code in (0, 1, 3, 130) else 2, plan.report_dir, summary, plan)


#: load.json's ``stop_reason`` of a run the pre-check stopped
STOPPED_BY_PRECHECK = "the pre-check stopped the run before any load"


def ended_early(
    plan: LoadPlan, refused: TargetRefused, stop_reason: str = STOPPED_BY_PRECHECK
) -> LoadResult:
    """load.json and load.html of a run without a verdict of its own: the pre-check stopped it
    (no load sent), or Locust ended without writing one (``stop_reason`` says which).

    The same schema as a run's, with nothing measured: a reader (a CI step, ``paysuite demo``)
    finds the verdict and its reason where it always does, never a missing file.
    """
    from load.finalize import SCHEMA
    from load.report import render_html

    summary: LoadSummary = {
        "schema": SCHEMA,
        "shape": plan.shape_name,
        "profile": plan.shape_name,
        "target": plan.target.base_url,
        "tls": plan.tls_text,
        "verdict": refused.verdict,
        "reason": str(refused),
        "exit_code": refused.exit_code,
        "no_load": True,
        "duration_s": 0,
        "stop_reason": stop_reason,
        "operations": {},
        "total": {"requests": 0, "failures": 0, "rps": 0.0},
        "slo": {"thresholds": {}, "verdicts": []},
        "slo_passed": False,
        "failed_because": [str(refused)],
        "reconciliation": {"nothing_to_check": True, "passed": False, "reasons": []},
        "failures": [],
        "files": {"load_html": "load.html"},
    }
    plan.report_dir.mkdir(parents=True, exist_ok=True)
    (plan.report_dir / "load.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    render_html(summary, plan.report_dir)
    say(f"reports: {plan.report_dir.resolve()}/load.html, load.json")
    return LoadResult(refused.exit_code, plan.report_dir, summary, plan)


def _run_against_target(plan: LoadPlan, locust_log: Path | None) -> LoadResult:
    try:
        check_loopback(plan.target)
        preflight(plan.target, plan.limits, plan.tls)
    except TargetRefused as exc:
        print(f"paysuite load: {exc}", file=sys.stderr, flush=True)
        result = ended_early(plan, exc)
        word = "FAIL" if exc.verdict == "fail" else "ERROR"
        insecure = f"; {plan.tls_text}" if plan.tls.insecure else ""
        say(f"result: {word} (exit {exc.exit_code}): {exc}{insecure}")
        return result
    with tempfile.TemporaryDirectory(prefix="paysuite-load-") as tmp:
        plan_file = Path(tmp) / "plan.json"
        # it holds the applications' secrets: readable by this user only, gone after the run
        plan_file.touch(mode=0o600)
        plan_file.write_text(write_plan(plan), encoding="utf-8")
        with receiving(plan):  # the target's webhooks, when the plan includes them
            code = run_locust(plan, plan_file, locust_log)
    return outcome(plan, code)


def run(plan: LoadPlan, *, locust_log: Path | None = None) -> LoadResult:
    """Run one load plan to its verdict; without a target, against the bundled stub (its
    customers answer by themselves: the lifecycle resolves ``auto``). Raises ``UsageError``
    (exit status 2, one line) when the stub does not start or the target is refused."""
    if plan.config is not None:
        return _run_against_target(plan, locust_log)
    with tempfile.TemporaryDirectory(prefix="paysuite-stub-") as workdir:
        with bundled_stub(Path(workdir)) as stub:
            return _run_against_target(
                plan.for_target(stub.config(), lifecycle_resolve="auto"), locust_log
            )
