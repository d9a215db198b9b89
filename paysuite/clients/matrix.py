"""Run each SDK's driver on one job, bounded, and print the SDK x operation matrix.

A cell is ``ok``, ``n/a`` (the SDK has no such public method), ``not run`` (the target had
stopped answering), ``FAIL`` (the target answered, not as the SDK needs: what was expected and
what came) or ``ERROR`` (no usable answer within conform's limits), each on one line; the full
answers go to ``--json`` and the HTML report. A column whose SDK cannot run here says why.

Every driver runs under conform's request limits (``bounded_http.CONFORM_LIMITS``: the job
carries them, each driver applies them in its HTTP layer), within a budget for the whole walk,
and with its data segment capped (``RLIMIT_DATA``, set on the child before it is given its
job): nothing a target sends can hold ``paysuite clients`` past its time-outs or grow a
driver's memory.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from paysuite.clients import cache
from paysuite_core import guarded_json
from paysuite_core.bounded_http import CONFORM_LIMITS, Limits
from paysuite_core.tls import TLSSettings

#: what paypack_js_driver.js reads for its TLS settings (``TLSSettings.node_environment``)
NODE_TLS_VARIABLES = (
    "PAYSUITE_CA_BUNDLE",
    "PAYSUITE_CLIENT_CERT",
    "PAYSUITE_CLIENT_KEY",
    "PAYSUITE_INSECURE",
)

#: The rows, in order: the document's operations, then the SDK-only calls.
OPERATIONS = (
    "authorize", "cashin", "cashout", "find", "events", "events from/to", "transactions", "me",
    "refresh",
)  # fmt: skip
JS_DRIVER = Path(__file__).with_name("paypack_js_driver.js")
#: The walk's budget: two of conform's whole-answer time-outs. An operation that starts after it
#: is ``not run``; one request in flight still has its own limits.
WALK_S = 2 * CONFORM_LIMITS.total_s
#: Beyond the walk: starting the interpreter, importing the SDK, the last request's deadline.
STARTUP_S = 30.0
#: A driver's data segment (heap): a driver needs about 100 MB; an answer is capped at 1 MiB.
DRIVER_MEMORY_BYTES = 512 * 1024 * 1024
#: How many characters of a cell's detail the terminal shows (the full text is in the reports).
CELL_CHARS = 72


@dataclass
class SdkColumn:
    """One SDK's results: cells by operation, or the reason it could not run here (``skip``),
    or why its driver gave no result (``failure``)."""

    sdk: str
    version: str = ""
    skip: str | None = None
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None

    @property
    def heading(self) -> str:
        if self.skip:
            return f"{self.sdk} (not available)"
        return f"{self.sdk} {self.version}".strip()

    def text(self, operation: str) -> str:
        """The cell as one terminal line."""
        if self.skip:
            return "not available"
        cell = self.cells.get(operation)
        if cell is None:
            return "not run"
        outcome = outcome_of(cell)
        if outcome in ("fail", "error"):
            return one_line(f"{outcome.upper()} {cell.get('detail', '')}", CELL_CHARS)
        return outcome


def outcome_of(cell: dict[str, Any]) -> str:
    """ok | fail | error | n/a | not run, as both drivers write it (n/a for a cell without)."""
    outcome = cell.get("outcome")
    return outcome if isinstance(outcome, str) else "n/a"


def one_line(text: str, limit: int = 200) -> str:
    """Whitespace collapsed, cut at ``limit`` characters: a cell is one line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def bounded_job(job: dict[str, Any], limits: Limits | None = None) -> dict[str, Any]:
    """``job`` with conform's limits and the walk's budget, unless it names its own."""
    return {"limits": asdict(limits or CONFORM_LIMITS), "walk_s": WALK_S, **job}


def _budget_s(job: dict[str, Any]) -> float:
    """When the parent stops waiting: the walk, the last request's deadline, the start-up."""
    total = float(job["limits"]["total_s"])
    return float(job["walk_s"]) + total + float(job.get("expiry_wait_s") or 0) + STARTUP_S


def _cap_memory(pid: int) -> None:
    """The driver's heap capped before it reads its job (so before it sends anything)."""
    try:
        resource.prlimit(pid, resource.RLIMIT_DATA, (DRIVER_MEMORY_BYTES, DRIVER_MEMORY_BYTES))
    except (AttributeError, OSError, ValueError):  # not Linux, or not allowed: limits still hold
        pass


def parse_output(sdk: str, stdout: str) -> SdkColumn:
    """A driver's JSON lines: cells (one per line, or a ``cells`` list) and its last line."""
    column = SdkColumn(sdk)
    for line in stdout.splitlines():
        try:
            item = guarded_json.loads(line, what=f"{sdk}'s driver")
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if "op" in item:
            column.cells[str(item["op"])] = item
        for cell in item.get("cells") or ():
            column.cells[str(cell["op"])] = cell
        if "sdk" in item:
            column.version = str(item.get("version", ""))
            column.state = item.get("state") or {}
    return column


def _run_driver(sdk: str, argv: list[str], env: dict[str, str], job: dict[str, Any]) -> SdkColumn:
    budget = _budget_s(job)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return SdkColumn(sdk, failure=f"driver did not start: {exc}")
    _cap_memory(process.pid)
    timed_out = False
    try:
        stdout, stderr = process.communicate(json.dumps(job), timeout=budget)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    except BaseException:  # Ctrl-C: the driver has its own session, so it must be ended here
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    column = parse_output(sdk, stdout)
    if timed_out:
        column.failure = f"driver stopped after {budget:g} s (its budget)"
    elif not column.version:
        tail = [line for line in stderr.strip().splitlines() if line.strip()][-1:]
        why = one_line(tail[0]) if tail else "no output"
        column.failure = f"driver failed (exit {process.returncode}): {why}"
    return column


def run_paypack_py(job: dict[str, Any], cache_dir: Path, limits: Limits | None = None) -> SdkColumn:
    installed = cache.paypack_py(cache_dir)
    if installed.skip:
        return SdkColumn("paypack-py", skip=installed.skip)
    env = dict(os.environ)
    if installed.path is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(installed.path), env.get("PYTHONPATH", "")) if p
        )
    argv = [sys.executable, "-m", "paysuite.clients.paypack_py_driver"]
    return _run_driver("paypack-py", argv, env, bounded_job(job, limits))


def run_paypack_js(job: dict[str, Any], cache_dir: Path, limits: Limits | None = None) -> SdkColumn:
    installed = cache.paypack_js(cache_dir)
    if installed.skip or installed.path is None:
        return SdkColumn("paypack-js", skip=installed.skip or "not installed")
    env = {**os.environ, "NODE_PATH": str(installed.path), "NODE_NO_WARNINGS": "1"}
    # the run's TLS settings as the driver reads them into axios's https.Agent (and only them)
    for name in NODE_TLS_VARIABLES:
        env.pop(name, None)
    env.update(TLSSettings.from_dict(job.get("tls")).node_environment())
    argv = ["node", str(JS_DRIVER)]
    return _run_driver("paypack-js", argv, env, bounded_job(job, limits))


RUNNERS = {"paypack-py": run_paypack_py, "paypack-js": run_paypack_js}


def render(columns: list[SdkColumn], base_url: str) -> str:
    """The matrix as aligned text, one line per operation, then each column's reason."""
    rows = [["operation", *(c.heading for c in columns)]]
    rows += [[op, *(c.text(op) for c in columns)] for op in OPERATIONS]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [f"paysuite clients: {base_url}", ""]
    for row in rows:
        head = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*head, row[-1]]).rstrip())
    for column in columns:
        if column.skip:
            lines.append(f"\n{column.sdk} not available: {one_line(column.skip)}")
        if column.failure:
            lines.append(f"\n{column.sdk}: {column.failure}")
    return "\n".join(lines)
