"""``paysuite clients [--config FILE]``: the published SDKs against a target, as a matrix.

Without ``--config`` the bundled stub is started on a free loopback port in a temporary folder
and stopped afterwards. Before any SDK runs, conform's pre-flight (``conformance.preflight``)
proves the target is up, answers like this API and takes the configured applications: a target
that is down, not this API, or refuses the secret is exit status 2 and one line, as for conform.

Exit status: 0 when every SDK that could run worked (an SDK not available here is not a
failure), 1 when the target answered an operation not as an SDK needs, 2 when the run could not
judge (a usage error, the pre-flight refused, an operation got no usable answer within conform's
limits, or a driver gave no result). Every run past its arguments writes ``clients.json`` and
``clients.html`` into ``--report-dir`` (one the pre-flight stopped: its verdict and why, as
conform's), with every credential masked as the proxy masks its reports.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paysuite_core.cli_flags import TLS, Flag, UsageError, add_command, limit_flags

if TYPE_CHECKING:
    from paysuite_core.tls import TLSSettings

SDK_NAMES = ("paypack-py", "paypack-js")


FLAGS = (
    Flag("--config", "target configuration (default: start the bundled stub)", "FILE"),
    Flag("--sdk", "run only this SDK (repeatable)", choices=SDK_NAMES, extra={"action": "append"}),
    Flag(
        "--cache-dir",
        "where SDKs are installed on first use (default $PAYSUITE_CACHE_DIR, else "
        "~/.cache/paysuite)",
        "DIR",
    ),
    Flag("--json", "also write clients.json to FILE", "FILE"),
    Flag(
        "--report-dir",
        "where clients.json and clients.html are written (default: reports)",
        "DIR",
        default="reports",
    ),
    *limit_flags("limits of each SDK request (as paysuite conform)"),
    *TLS,
)


def register(subparsers: Any) -> argparse.ArgumentParser:
    return add_command(
        subparsers,
        "clients",
        run_clients,
        FLAGS,
        help="run the live service's published SDKs against a target and print what works",
        description="Run paypack-py and (when node and npm exist) paypack-js, unchanged, "
        "against a target (the bundled stub by default) and print an SDK x operation matrix.",
    )


def make_job(config: Any) -> dict[str, Any]:
    """What every driver needs: the base URL, one read-write application, a customer number
    the target accepts, and an amount paypack-js does not refuse (it wants at least 100)."""
    apps = config.applications_with("read-write")
    if not apps:
        raise UsageError(
            "the target configuration has no read-write application; the SDKs need one that "
            "may cashin and cashout"
        )
    pattern = re.compile(config.effective_number_pattern)
    number = next((n for n in config.numbers if pattern.fullmatch(n)), None)
    if number is None:
        number = f"078{random.randrange(10**7):07d}"
        if not pattern.fullmatch(number):
            raise UsageError("no customer number: add `numbers:` to the target configuration")
    amount = max(config.amount.min, 100)
    if amount > config.amount.max:
        raise UsageError(
            f"paypack-js refuses amounts below 100; the target allows at most {config.amount.max}"
        )
    amount = int(amount) if float(amount).is_integer() else amount
    return {
        "base_url": config.base_url,
        "client_id": apps[0].client_id,
        "client_secret": apps[0].client_secret,
        "number": number,
        "amount": amount,
    }


def run_clients(args: argparse.Namespace) -> int:
    from paysuite.clients import matrix
    from paysuite.clients.cache import default_cache_dir
    from paysuite_core.bounded_http import CONFORM_LIMITS
    from paysuite_core.cli_flags import parse_limits
    from paysuite_core.driver.preflight import check_reachable, preflight
    from paysuite_core.target_config import load_target_config
    from paysuite_core.tls import TLSSettings

    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    started = time.time()
    with ExitStack() as stack:
        limits = parse_limits(vars(args), CONFORM_LIMITS)
        if args.config:
            config = load_target_config(args.config)
        else:
            from paysuite_core.launcher import running_stub

            workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="paysuite-"))
            config = stack.enter_context(running_stub(Path(workdir))).config()
        tls = TLSSettings.from_args(args, config)
        # both drivers judge the target's certificate as the pre-flight did
        job = {**make_job(config), "tls": tls.to_dict()}
        try:
            check_reachable(config.base_url, limits.connect_s, tls=tls)
            preflight(config, limits, tls=tls)
        except UsageError as exc:  # past the arguments: the reports say why nothing ran
            reason = " ".join(str(exc).split())
            print(f"paysuite clients: {reason}", file=sys.stderr)
            return write_outputs(args, config, [], started, tls, stopped=reason)
        if tls.insecure:
            print(f"paysuite clients: {tls.describe()}", file=sys.stderr)
        columns = [matrix.RUNNERS[name](job, cache_dir, limits) for name in args.sdk or SDK_NAMES]
    return write_outputs(args, config, columns, started, tls)


def write_outputs(
    args: argparse.Namespace,
    config: Any,
    columns: list[Any],
    started: float,
    tls: TLSSettings | None = None,
    *,
    stopped: str = "",
) -> int:
    """Mask, print the matrix and the verdict, write clients.json and clients.html (into
    ``--report-dir``, and ``--json``); how the target's certificate was judged goes in both, and
    ``INSECURE`` in the verdict line. A run the pre-flight ``stopped`` (why) gets its reports as
    conform writes its own: verdict error (exit 2), no SDK run, so a CI's report step shows why
    instead of no file; its terminal gets where they went (the reason is on stderr already)."""
    from paysuite.clients import matrix, report
    from paysuite_core.report_engine import reports
    from paysuite_core.results.masking import Masker

    # the run's secrets: the reports' curls name each application's credentials as conform's do
    masker = Masker.for_config(config, getattr(args, "config", None))
    shown = report.mask_columns(columns, masker)
    verdict = report.stopped_verdict(stopped) if stopped else report.verdict_of(shown)
    common = {
        "target": config.base_url,
        "started_at": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 3),
    }
    tls_text = reports.tls_text(tls, config.base_url)
    data = {**report.to_json(shown, verdict, **common), "tls": tls_text}
    as_json = masker.text(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
    rows = report.results(shown, masker)  # no --reveal-secrets here: the page offers none
    page = reports.to_html(
        rows, verdict=verdict, **common, title=report.TITLE, tls=tls_text, rerun_hint=False
    )
    page = masker.text(page)
    table = None if stopped else masker.text(matrix.render(shown, config.base_url))
    written = [Path(args.report_dir) / "clients.json", Path(args.report_dir) / "clients.html"]
    written += [Path(args.json)] if args.json else []
    try:
        written[0].parent.mkdir(parents=True, exist_ok=True)
        for path, text in zip(written, (as_json, page, as_json), strict=False):
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        if table is not None:
            print(table)
        print(f"paysuite clients: cannot write the reports: {exc}", file=sys.stderr)
        return 2
    listed = ", ".join(str(path) for path in written)
    if table is None:
        print(f"reports: {listed}")
        return verdict.exit_code
    print(f"{table}\n\nreports: {listed}")
    line = reports.verdict_line(verdict, rows)
    if tls is not None and tls.insecure:
        line += f"; {tls.describe()}"
    print(masker.text(line))
    return verdict.exit_code
