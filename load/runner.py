"""``paysuite load``: check the inputs, start the bundled stub if asked, run Locust, give a verdict.

Locust runs as a subprocess (``python -m locust -f load/locustfile.py --headless ...``), so that
distributed mode is Locust's own: ``--workers N`` starts one ``--master --expect-workers N`` and N
``--worker`` processes here, and workers on other machines join the same master with
``--master-host`` (docs/load.md). The verdict (SLOs, reconciliation, load.json) is computed inside
the Locust master when it quits; this module maps the outcome to the exit status: 0 met and
nothing lost, 1 breached or lost, 2 usage/configuration error or unreachable target.

Load is only ever sent to loopback addresses from here. ``PAYSUITE_ALLOW_REMOTE_TARGET=1`` lifts
that for real-world use against a system you are authorized to load.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from load import loopback, probe
from load.limits import ClientLimits
from load.profiles import Profile, get_profile, parse_mix, parse_pacing
from paysuite_core import tokens
from paysuite_core.target_config import TargetConfig, TargetConfigError, load_target_config
from paysuite_core.tokens import PlainAnswer

LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
#: The bundled stub's customers answer by themselves, so transactions complete during the run.
BUNDLED_STUB_CONFIG: dict[str, Any] = {
    "auto_resolve": {
        "default": {"outcome": "success", "delay_s": 0.5},
        "rules": [{"number_suffix": "0000", "outcome": "failed", "delay_s": 0.5}],
    }
}


class UsageError(Exception):
    """Exit status 2: the message is the one-line reason."""


def say(message: str) -> None:
    print(f"paysuite: {message}", flush=True)


def check_loopback(config: TargetConfig) -> None:
    """``loopback.check_loopback`` with its refusal as a usage error (exit status 2)."""
    try:
        loopback.check_loopback(config, warn=say)
    except loopback.NotLoopbackError as exc:
        raise UsageError(str(exc)) from None


def preflight(config: TargetConfig, limits: ClientLimits | None = None) -> None:
    """Authorize once with the first application: reachable target, accepted credentials, an
    answer that is a token pair. Bounded by ``limits`` (issue 13): no redirect followed, no body
    read past the size limit, no wait past the total timeout."""
    limits = limits or ClientLimits()
    app = config.applications[0]

    @contextmanager
    def probe_send(request: tokens.Request) -> Iterator[PlainAnswer]:
        got = probe.post_json(config.base_url + request.path, request.json, limits)
        yield PlainAnswer(got.status, got.body, got.location)

    try:
        answer = tokens.authorize(probe_send, app)
    except probe.ProbeError as exc:
        raise UsageError(f"target {config.base_url}: {exc}") from None
    assert isinstance(answer, PlainAnswer)
    if answer.status in (401, 403):
        raise UsageError(
            f"the target refused the credentials of application {app.client_id} "
            f"(HTTP {answer.status})"
        )
    if 300 <= answer.status < 400:
        raise UsageError(
            f"the target answered authorize with a redirect (HTTP {answer.status} to "
            f"{answer.location!r}); paysuite does not follow redirects: fix base_url"
        )
    if not 200 <= answer.status < 300:
        raise UsageError(f"the target answered authorize with HTTP {answer.status}")
    try:
        pair = json.loads(answer.body)
    except ValueError:
        pair = None
    if not isinstance(pair, dict) or not isinstance(pair.get("access"), str):
        raise UsageError(
            "the target's answer to authorize is not a token pair (a JSON object with "
            f"'access'): {answer.body[:80]!r}"
        )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LoadRequest:
    """Everything ``paysuite load`` was asked to do, validated."""

    profile: Profile
    report_dir: Path
    config_path: Path | None
    target: str | None
    users: int | None = None
    spawn_rate: float | None = None
    duration: float | None = None
    max_requests: int | None = None
    workers: int = 0
    slo_path: Path | None = None
    mix: str = ""
    pacing: str = ""
    lifecycle_resolve: str = ""
    reconcile_timeout: float = 120.0
    quiet: bool = False
    limits: ClientLimits = ClientLimits()


def request_from_args(args: Any) -> LoadRequest:
    try:
        profile = get_profile(args.profile)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    for name in ("users", "spawn_rate", "duration", "max_requests"):
        value = getattr(args, name, None)
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be greater than 0")
    if args.workers < 0:
        raise UsageError("--workers must be 0 or more")
    if args.target and not args.config:
        raise UsageError("--target needs --config (the applications to authorize with)")
    try:
        if args.mix:
            parse_mix(args.mix)
        if getattr(args, "pacing", None):
            parse_pacing(args.pacing)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    limits = ClientLimits(
        connect_timeout_s=getattr(args, "connect_timeout", None) or ClientLimits.connect_timeout_s,
        read_timeout_s=getattr(args, "read_timeout", None) or ClientLimits.read_timeout_s,
        total_timeout_s=getattr(args, "total_timeout", None) or ClientLimits.total_timeout_s,
        max_response_bytes=getattr(args, "max_response_bytes", None)
        or ClientLimits.max_response_bytes,
    )
    for name, value in limits.to_dict().items():
        if value <= 0:
            raise UsageError(f"{name}: must be greater than 0")
    slo_path = Path(args.slo) if args.slo else None
    if slo_path is not None:
        from load.slo import SLOError, load_slo_file

        try:
            load_slo_file(slo_path)
        except SLOError as exc:
            raise UsageError(str(exc)) from None
    return LoadRequest(
        profile=profile,
        report_dir=Path(args.report_dir),
        config_path=Path(args.config) if args.config else None,
        target=args.target,
        users=args.users,
        spawn_rate=args.spawn_rate,
        duration=args.duration,
        max_requests=args.max_requests,
        workers=args.workers,
        slo_path=slo_path,
        mix=args.mix or "",
        pacing=getattr(args, "pacing", None) or "",
        lifecycle_resolve=args.lifecycle_resolve or "",
        reconcile_timeout=args.reconcile_timeout,
        quiet=args.quiet,
        limits=limits,
    )


def locust_command(req: LoadRequest, config_path: Path, host: str, role: str = "") -> list[str]:
    """The Locust command line; ``role`` is "", "--master ..." or "--worker ..." parts."""
    report_dir = req.report_dir.resolve()
    cmd = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE)]
    if role == "worker":
        return cmd  # the master sends the options; the caller adds --worker and the master's port
    cmd += [
        "--headless",
        "--host", host,
        "--html", str(report_dir / "locust.html"),
        "--csv", str(report_dir / "locust"),
        "--csv-full-history",
        "--paysuite-config", str(config_path.resolve()),
        "--paysuite-profile", req.profile.name,
        "--paysuite-report-dir", str(report_dir),
        "--paysuite-reconcile-timeout", str(req.reconcile_timeout),
        "--paysuite-connect-timeout-s", str(req.limits.connect_timeout_s),
        "--paysuite-read-timeout-s", str(req.limits.read_timeout_s),
        "--paysuite-total-timeout-s", str(req.limits.total_timeout_s),
        "--paysuite-max-response-bytes", str(req.limits.max_response_bytes),
    ]  # fmt: skip
    for flag, value in (
        ("--paysuite-users", req.users),
        ("--paysuite-spawn-rate", req.spawn_rate),
        ("--paysuite-duration", req.duration),
        ("--paysuite-max-requests", req.max_requests),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    if req.slo_path:
        cmd += ["--paysuite-slo", str(req.slo_path.resolve())]
    if req.mix:
        cmd += ["--paysuite-mix", req.mix]
    if req.pacing:
        cmd += ["--paysuite-pacing", req.pacing]
    if req.lifecycle_resolve:
        cmd += ["--paysuite-lifecycle-resolve", req.lifecycle_resolve]
    if req.quiet:
        cmd += ["--only-summary"]
    return cmd


@contextmanager
def bundled_stub(workdir: Path) -> Iterator[Any]:
    from paysuite_core.launcher import StubStartError, start_stub, stop_stub

    say("starting the bundled stub (customers auto-resolve after 0.5 s)")
    try:
        stub = start_stub(workdir, stub_config=BUNDLED_STUB_CONFIG)
    except StubStartError as exc:
        raise UsageError(f"the bundled stub did not start: {str(exc).splitlines()[0]}") from None
    say(f"stub listening on {stub.root_url}")
    try:
        yield stub
    finally:
        stop_stub(stub)


def run_locust(
    req: LoadRequest, config: TargetConfig, config_path: Path, log_path: Path | None = None
) -> int:
    """Run Locust (local, or master + local workers); returns its exit status.

    Its output goes to this process's stdout, or to ``log_path`` (the benchmark's quiet mode).
    """
    profile = req.profile.with_overrides(duration_s=req.duration, max_requests=req.max_requests)
    req.report_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("load.json", "load.html"):
        (req.report_dir / stale).unlink(missing_ok=True)
    deadline_s = profile.duration_s + req.reconcile_timeout + 90 + 10 * req.workers
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = locust_command(req, config_path, config.base_url)
    workers: list[subprocess.Popen[bytes]] = []
    logs = []
    users = req.users or profile.users
    mode = f"with {req.workers} local workers" if req.workers else "in one process"
    say(
        f"running profile {profile.name} against {config.base_url}: {users} users, at most "
        f"{profile.duration_s:g} s / {profile.max_requests} requests, {mode}"
    )
    if req.workers:
        port = free_port()
        cmd += [
            "--master",
            "--master-bind-host", "127.0.0.1",
            "--master-bind-port", str(port),
            "--expect-workers", str(req.workers),
            "--expect-workers-max-wait", "60",
        ]  # fmt: skip
        worker_dir = req.report_dir / "workers"
        worker_dir.mkdir(parents=True, exist_ok=True)
        for index in range(req.workers):
            log = open(worker_dir / f"worker-{index}.log", "wb")  # noqa: SIM115 - closed below
            logs.append(log)
            worker_cmd = locust_command(req, config_path, config.base_url, role="worker")
            worker_cmd += ["--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]
            workers.append(
                subprocess.Popen(worker_cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
            )
    try:
        if log_path is not None:
            master_log = open(log_path, "wb")  # noqa: SIM115 - closed below
            logs.append(master_log)
            master = subprocess.Popen(cmd, env=env, stdout=master_log, stderr=subprocess.STDOUT)
        else:
            master = subprocess.Popen(cmd, env=env)
        try:
            code = master.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            master.kill()
            master.wait(10)
            say(f"Locust did not finish within {deadline_s:g} s; killed")
            return 2
    finally:
        for proc in workers:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for log in logs:
            log.close()
    return code


def outcome(req: LoadRequest, code: int) -> int:
    """Map Locust's exit status and load.json to paysuite's."""
    load_json = req.report_dir / "load.json"
    if not load_json.is_file():
        say(f"Locust ended without a verdict (exit status {code}); see its output above")
        return 2
    from load.report import render_html

    render_html(req.report_dir)
    summary = json.loads(load_json.read_text())
    exit_code = int(summary.get("exit_code", code))
    say(f"reports: {req.report_dir.resolve()}/load.html, load.json, locust.html, locust_*.csv")
    return exit_code if code in (0, 1) else 2


def run(args: Any, *, stub_factory: Callable[[Path], Any] = bundled_stub) -> int:
    """The ``paysuite load`` command."""
    started = time.monotonic()
    try:
        req = request_from_args(args)
        if req.config_path is None:
            with tempfile.TemporaryDirectory(prefix="paysuite-stub-") as workdir:
                with stub_factory(Path(workdir)) as stub:
                    req.lifecycle_resolve = req.lifecycle_resolve or "auto"
                    config = stub.config()
                    check_loopback(config)
                    preflight(config, req.limits)
                    code = run_locust(req, config, stub.credentials_path)
        else:
            try:
                config = load_target_config(req.config_path, base_url=req.target)
            except TargetConfigError as exc:
                raise UsageError(str(exc)) from None
            check_loopback(config)
            preflight(config, req.limits)
            # the file as given may hold ${VAR} references: hand Locust the resolved base URL
            code = run_locust(req, config, req.config_path)
    except UsageError as exc:
        print(f"paysuite load: {exc}", file=sys.stderr, flush=True)
        return 2
    result = outcome(req, code)
    say(f"load run finished in {time.monotonic() - started:.0f} s: exit {result}")
    return result


def wrk_available() -> str | None:
    return shutil.which("wrk")
