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

from paysuite_core.tls import add_arguments as add_tls_arguments

if TYPE_CHECKING:
    from paysuite_core.tls import TLSSettings

SDK_NAMES = ("paypack-py", "paypack-js")


class UsageError(ValueError):
    """The target cannot be driven as configured; the message says what to change."""


def register(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "clients",
        help="run the live service's published SDKs against a target and print what works",
        description="Run paypack-py and (when node and npm exist) paypack-js, unchanged, "
        "against a target (the bundled stub by default) and print an SDK x operation matrix.",
    )
    parser.add_argument("--config", metavar="FILE", help="target configuration (default: "
                        "start the bundled stub)")  # fmt: skip
    parser.add_argument(
        "--sdk", action="append", choices=SDK_NAMES, help="run only this SDK (repeatable)"
    )
    parser.add_argument(
        "--cache-dir", metavar="DIR", help="where SDKs are installed on first use "
        "(default $PAYSUITE_CACHE_DIR, else ~/.cache/paysuite)",
    )  # fmt: skip
    parser.add_argument("--json", metavar="FILE", help="also write clients.json to FILE")
    parser.add_argument(
        "--report-dir", metavar="DIR", default="reports",
        help="where clients.json and clients.html are written (default: reports)",
    )  # fmt: skip
    limits = parser.add_argument_group("limits of each SDK request (as paysuite conform)")
    limits.add_argument("--connect-timeout", metavar="S", help="seconds to connect (10)")
    limits.add_argument("--read-timeout", metavar="S", help="seconds between two bytes (30)")
    limits.add_argument("--total-timeout", metavar="S", help="seconds for a whole answer (60)")
    limits.add_argument(
        "--max-response-bytes", metavar="N", help="an answer's body past this is abandoned (1 MiB)"
    )
    add_tls_arguments(parser)
    parser.set_defaults(func=run_clients)
    return parser


def make_job(config: Any) -> dict[str, Any]:
    """What every driver needs: the base URL, one read-write application, a customer number
    the target accepts, and an amount paypack-js does not refuse (it wants at least 100)."""
    apps = config.applications_with("read-write")
    if not apps:
        raise UsageError("the target configuration has no read-write application; the SDKs "
                         "need one that may cashin and cashout")  # fmt: skip
    pattern = re.compile(config.effective_number_pattern)
    number = next((n for n in config.numbers if pattern.fullmatch(n)), None)
    if number is None:
        number = f"078{random.randrange(10**7):07d}"
        if not pattern.fullmatch(number):
            raise UsageError("no customer number: add `numbers:` to the target configuration")
    amount = max(config.amount.min, 100)
    if amount > config.amount.max:
        raise UsageError(f"paypack-js refuses amounts below 100; the target allows at most "
                         f"{config.amount.max}")  # fmt: skip
    amount = int(amount) if float(amount).is_integer() else amount
    return {
        "base_url": config.base_url,
        "client_id": apps[0].client_id,
        "client_secret": apps[0].client_secret,
        "number": number,
        "amount": amount,
    }


def run_clients(args: argparse.Namespace) -> int:
    from conformance.options import LIMIT_OPTIONS, SetupError, parse_limits
    from conformance.preflight import check_reachable, preflight
    from paysuite.clients import matrix
    from paysuite.clients.cache import default_cache_dir
    from paysuite_core.target_config import TargetConfigError, load_target_config
    from paysuite_core.tls import TLSSettings, TLSSettingsError

    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    started = time.time()
    with ExitStack() as stack:
        try:
            limits = parse_limits({name: getattr(args, name, None) for name in LIMIT_OPTIONS})
            if args.config:
                config = load_target_config(args.config)
            else:
                from paysuite_core.launcher import running_stub

                workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="paysuite-"))
                config = stack.enter_context(running_stub(Path(workdir))).config()
            tls = TLSSettings.from_args(args, config)
            # both drivers judge the target's certificate as the pre-flight did
            job = {**make_job(config), "tls": tls.to_dict()}
        except (TargetConfigError, UsageError, SetupError, TLSSettingsError) as exc:
            print(f"paysuite clients: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
        try:
            check_reachable(config.base_url, limits.connect_s, tls=tls)
            preflight(config, limits, tls=tls)
        except SetupError as exc:  # past the arguments: the reports say why nothing ran
            reason = " ".join(str(exc).split())
            print(f"paysuite clients: {reason}", file=sys.stderr)
            return write_stopped(args, config, reason, started, tls)
        if tls.insecure:
            print(f"paysuite clients: {tls.describe()}", file=sys.stderr)
        columns = [matrix.RUNNERS[name](job, cache_dir, limits) for name in args.sdk or SDK_NAMES]
    return write_outputs(args, config, columns, started, tls)


def _write_reports(args: argparse.Namespace, as_json: str, page: str) -> list[Path]:
    """clients.json and clients.html into ``--report-dir`` (and ``--json``); OSError as it came."""
    directory = Path(args.report_dir)
    written = []
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in (("clients.json", as_json), ("clients.html", page)):
        (directory / name).write_text(text, encoding="utf-8")
        written.append(directory / name)
    if args.json:
        Path(args.json).write_text(as_json, encoding="utf-8")
        written.append(Path(args.json))
    return written


def write_stopped(
    args: argparse.Namespace,
    config: Any,
    reason: str,
    started: float,
    tls: TLSSettings | None = None,
) -> int:
    """The reports of a run the pre-flight stopped, as conform writes its own: verdict error
    (exit 2), what stopped it, no SDK run; so a CI's report step shows why instead of no file.
    The terminal gets where they went (the reason is on stderr already), no empty matrix."""
    from paysuite.clients import report
    from paysuite_core.results.masking import Masker

    masker = Masker.for_config(config, getattr(args, "config", None))
    verdict = report.stopped_verdict(reason)
    common = {
        "target": config.base_url,
        "started_at": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 3),
    }
    tls_text = report.tls_text(tls, config.base_url)
    data = {**report.to_json([], verdict, **common), "tls": tls_text}
    as_json = masker.text(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
    page = masker.text(report.to_html([], verdict, **common, masker=masker, tls=tls_text))
    try:
        written = _write_reports(args, as_json, page)
    except OSError as exc:
        print(f"paysuite clients: cannot write the reports: {exc}", file=sys.stderr)
        return 2
    print(f"reports: {', '.join(str(path) for path in written)}")
    return verdict.exit_code


def write_outputs(
    args: argparse.Namespace,
    config: Any,
    columns: list[Any],
    started: float,
    tls: TLSSettings | None = None,
) -> int:
    """Mask, print the matrix and the verdict, write clients.json and clients.html; how the
    target's certificate was judged goes in both, and ``INSECURE`` in the verdict line."""
    from conformance import report as conform_report
    from paysuite.clients import matrix, report
    from paysuite_core.results.masking import Masker

    # the run's secrets: the reports' curls name each application's credentials as conform's do
    masker = Masker.for_config(config, getattr(args, "config", None))
    shown = report.mask_columns(columns, masker)
    verdict = report.verdict_of(shown)
    common = {
        "target": config.base_url,
        "started_at": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 3),
    }
    tls_text = report.tls_text(tls, config.base_url)
    data = {**report.to_json(shown, verdict, **common), "tls": tls_text}
    as_json = masker.text(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
    page = masker.text(report.to_html(shown, verdict, **common, masker=masker, tls=tls_text))
    try:
        written = _write_reports(args, as_json, page)
    except OSError as exc:
        print(masker.text(matrix.render(shown, config.base_url)))
        print(f"paysuite clients: cannot write the reports: {exc}", file=sys.stderr)
        return 2
    print(masker.text(matrix.render(shown, config.base_url)))
    print(f"\nreports: {', '.join(str(path) for path in written)}")
    line = conform_report.verdict_line(verdict, report.results(shown, masker))
    if tls is not None and tls.insecure:
        line += f"; {tls.describe()}"
    print(masker.text(line))
    return verdict.exit_code
