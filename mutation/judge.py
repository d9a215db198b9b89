"""Judge the stub of the current directory (a worker's copy of the tree, one mutant applied) in
every configuration of ``configurations.py``: cosmic-ray's test command.

    python /path/to/mutation/judge.py            # stop at the first configuration that kills
    python /path/to/mutation/judge.py --all      # every configuration (the baseline)

Exit status: 0 when every configuration passes (the mutant survived), otherwise the exit status
of the conform run that did not pass (1: a check failed; 2: no verdict, e.g. the stub did not
start). The last line names the configuration (``MUTANT: killed in <name>`` or ``MUTANT:
survived <names>``): ``report.py`` reads it from the session to count kills per configuration.

Why the copy's own interpreter path is not needed: ``python -m paysuite`` and ``python -m
stub_server`` are started with the copy as their working directory, and ``-m`` puts the working
directory first on ``sys.path``, so both the suite and the stub are the copy's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from configurations import Configuration, ladder

#: conform's line of counts: "93 passed, 0 failed, 0 skipped, 14 n/a".
COUNTS = re.compile(r"\s*\d+ passed, ")
#: A conform run's own bounds are in its arguments; this one only ends a run that ignores them.
HARD_LIMIT_S = 200.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def target_file(credentials: Path, configuration: Configuration, out: Path) -> Path:
    """The stub's credentials file as conform's target configuration, with short customer waits
    (as the self-tests' ``fast_config``) and the configuration's customer driver."""
    data: dict[str, Any] = yaml.safe_load(credentials.read_text(encoding="utf-8"))
    data["customer"] = dict(configuration.customer or data["customer"], timeout_s=2)
    if configuration.webhooks:
        data["max_wait_s"] = 8
    path = out / "target.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def conform(tree: Path, args: Sequence[str], reports: Path) -> tuple[int, str]:
    command = [sys.executable, "-m", "paysuite", "conform", *args, "--report-dir", str(reports)]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(
            command, cwd=tree, env=env, capture_output=True, text=True, timeout=HARD_LIMIT_S
        )
    except subprocess.TimeoutExpired:
        return 2, f"conform still running after {HARD_LIMIT_S:g} s"
    return done.returncode, done.stdout + done.stderr


def run(tree: Path, configuration: Configuration) -> tuple[int, str]:
    """One configuration: its exit status and the end of what conform printed."""
    work = Path(tempfile.mkdtemp(prefix=f"mutant-{configuration.name}-"))
    try:
        if not configuration.own_stub:
            return conform(tree, configuration.conform_args, work / "reports")
        from paysuite_core.launcher import start_stub, stop_stub

        stub_config = dict(configuration.stub_config)
        if configuration.webhooks:
            stub_config["webhooks"] = {"development": f"http://127.0.0.1:{free_port()}/hooks"}
        previous = Path.cwd()
        os.chdir(tree)  # the launcher's ``python -m stub_server`` starts from the copy
        try:
            stub = start_stub(
                work / "stub",
                variants=configuration.variants,
                extra_args=configuration.stub_args,
                stub_config=stub_config,
                startup_timeout_s=60,
            )
        except Exception as exc:  # a mutant that breaks the start is noticed
            return 2, f"the stub did not start: {exc}"
        finally:
            os.chdir(previous)
        try:
            config = target_file(stub.credentials_path, configuration, work)
            args = ("--config", str(config), *configuration.conform_args)
            return conform(tree, args, work / "reports")
        finally:
            stop_stub(stub)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def problems(output: str) -> str:
    """What a reader of the session needs: the failed checks' lines and the verdict."""
    lines = output.strip().splitlines()
    keep = [line for line in lines if line.startswith(("FAIL", "ERROR", "  ", "VERDICT"))]
    return "\n".join((keep or lines)[-25:])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python mutation/judge.py", description=__doc__)
    parser.add_argument("--all", action="store_true", help="every configuration, no early stop")
    parser.add_argument("--only", metavar="NAME,...", help="these configurations only")
    args = parser.parse_args(argv)
    tree = Path.cwd()
    chosen = ladder()
    if args.only:
        names = set(args.only.split(","))
        chosen = tuple(c for c in chosen if c.name in names)
    worst, passed = 0, []
    for configuration in chosen:
        started = time.monotonic()
        status, output = run(tree, configuration)
        took = time.monotonic() - started
        counts = next((line for line in output.splitlines() if COUNTS.match(line)), "").strip()
        print(
            f"configuration {configuration.name}: exit {status} in {took:.1f} s ({counts})",
            flush=True,
        )
        if status == 0:
            passed.append(configuration.name)
            continue
        print(problems(output), flush=True)
        worst = worst or status
        if not args.all:
            print(f"MUTANT: killed in {configuration.name}", flush=True)
            return status
    if worst:
        return worst
    print(f"MUTANT: survived {','.join(passed)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
