"""``paysuite webhooks listen``: receive a target's webhook deliveries, verify them, judge them.

A merchant's side of the integration, on loopback: point a target's endpoint (the stub's
``webhooks: {development: URL}``) at the listener and every delivery prints one line, verified
or why not (stale, bad signature, malformed, a duplicate acknowledged once). At the end, with
``--config``, the deliveries are compared with the events list (``conformance.webhook_listen``)
and the verdict is written as ``paysuite conform`` writes its own: junit.xml, conformance.json
and report.html in ``--report-dir``. Exit status: 0 pass, 1 a rule failed, 2 no verdict
(nothing arrived, the list could not be read) or a usage error.

It stops after ``--duration``, after ``--max-events`` distinct events, or on Ctrl-C / SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paysuite_core.target_config import TargetConfig
    from paysuite_core.webhook_ledger import Ledger

PROG = "paysuite webhooks listen"
SECRET_ENV = "PAYSUITE_WEBHOOK_SECRET"
#: After the stop, how long deliveries still missing from the comparison are waited for.
DEFAULT_SETTLE_S = 5.0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "webhooks",
        help="receive and verify a target's webhook deliveries (paysuite webhooks listen)",
        description="The receiving side of webhooks: a receiver that verifies each signed "
        "delivery, deduplicates by event_id and judges what arrived (docs/webhooks.md in the "
        "source repository).",
    )
    commands = parser.add_subparsers(dest="webhooks_command", metavar="COMMAND", required=True)
    listen = commands.add_parser(
        "listen",
        help="receive deliveries, verify each, compare with the events list at the end",
        description=__doc__.split("\n\n")[1].replace("``", "") if __doc__ else None,
    )
    listen.add_argument("--port", type=int, help="port to bind (default: the config's listen)")
    listen.add_argument("--host", help="loopback address to bind (default 127.0.0.1)")
    listen.add_argument(
        "--secret", help=f"the endpoint's signing secret (default ${SECRET_ENV}, or the config's)"
    )
    listen.add_argument(
        "--config", metavar="FILE", help="target configuration: compare with its events list"
    )
    listen.add_argument(
        "--report-dir", default="reports/webhooks", metavar="DIR", help="(default reports/webhooks)"
    )
    listen.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    listen.add_argument(
        "--max-events", type=int, metavar="N", help="stop after N distinct verified events"
    )
    listen.add_argument(
        "--tolerance", type=float, metavar="S", help="signature age accepted (default 300)"
    )
    listen.add_argument(
        "--settle",
        type=float,
        default=DEFAULT_SETTLE_S,
        metavar="S",
        help=f"after the stop, wait up to S s for listed events missing ({DEFAULT_SETTLE_S:g})",
    )
    listen.add_argument(
        "--fail-first",
        action="store_true",
        help="answer 503 to each event's first attempt, to see the target retry (WEBHOOK-005)",
    )
    listen.add_argument(
        "--heard-only",
        action="store_true",
        help="compare only transactions a delivery named (other modes' traffic meanwhile)",
    )
    listen.set_defaults(func=run_listen)


class UsageError(ValueError):
    """A listener that cannot start as asked; the message says why."""


@dataclass(frozen=True)
class ListenSettings:
    """The listener's options resolved: flags first, then the environment, then the config."""

    config: TargetConfig | None
    secret: str
    host: str
    port: int
    tolerance_s: float


def _settings(args: argparse.Namespace) -> ListenSettings:
    from paysuite_core.target_config import TargetConfigError, load_target_config
    from paysuite_core.webhook_signature import DEFAULT_TOLERANCE_S

    config = None
    if args.config:
        try:
            config = load_target_config(args.config)
        except TargetConfigError as exc:
            raise UsageError(str(exc)) from None
    hooks = config.webhooks if config else None
    secret = args.secret or os.environ.get(SECRET_ENV) or (hooks.secret if hooks else None)
    if not secret:
        raise UsageError(f"no signing secret: pass --secret, set ${SECRET_ENV} or give a --config "
                         "with a webhooks section")  # fmt: skip
    port = args.port if args.port is not None else (hooks.listen_port if hooks else None)
    if port is None:
        raise UsageError("no port: pass --port, or a --config whose webhooks section has listen")
    if not 0 <= port < 65536:
        raise UsageError(f"--port {port}: not a port number")
    for name in ("duration", "max_events", "tolerance"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')}: must be greater than 0, got {value}")
    return ListenSettings(
        config=config,
        secret=secret,
        host=args.host or (hooks.listen_host if hooks else "127.0.0.1"),
        port=port,
        tolerance_s=args.tolerance or (hooks.tolerance_s if hooks else DEFAULT_TOLERANCE_S),
    )


def run_listen(args: argparse.Namespace) -> int:
    from paysuite_core.webhook_receiver import ReceiverStartError, WebhookReceiver, running

    try:
        settings = _settings(args)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2

    def show(arrival: Any) -> None:
        print(arrival.line(), flush=True)

    receiver = WebhookReceiver(settings.secret, tolerance_s=settings.tolerance_s, on_arrival=show)
    if args.fail_first:
        refused: set[str] = set()

        def first_attempt(record: dict[str, Any]) -> bool:
            event_id = str(record.get("event_id"))
            if event_id in refused:
                return False
            refused.add(event_id)
            return True

        receiver.refuse(first_attempt, times=sys.maxsize)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    started = datetime.now(UTC)
    t0 = time.monotonic()
    try:
        with running(receiver, settings.host, settings.port) as served:
            print(f"paysuite webhooks listening on {served.url} (Ctrl-C to stop)", flush=True)
            _wait(served.ledger, args, stop)
            return _finish(served.ledger, settings, args, started, t0)
    except ReceiverStartError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)


def _wait(ledger: Ledger, args: argparse.Namespace, stop: threading.Event) -> None:
    """Until --duration, --max-events, SIGTERM or Ctrl-C."""
    limit = args.duration if args.duration is not None else float("inf")
    deadline = time.monotonic() + limit
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            if args.max_events is not None and len(ledger.accepted()) >= args.max_events:
                return
            ledger.wait_for(
                lambda seen: (
                    args.max_events is not None and len(seen.accepted()) >= args.max_events
                ),
                min(0.5, max(0.0, deadline - time.monotonic())),
                stop=stop,
            )
    except KeyboardInterrupt:
        print("(interrupted: judging what arrived)", flush=True)


def _finish(
    ledger: Ledger, settings: ListenSettings, args: argparse.Namespace, started: datetime, t0: float
) -> int:
    from conformance import report, webhook_listen

    counts = ledger.counts()
    print(
        f"{len(ledger.accepted())} events received: {counts['verified']} verified, "
        f"{counts['duplicate']} duplicates acknowledged, {counts['rejected']} rejected",
        flush=True,
    )
    config = settings.config
    listing, expected = None, []
    if config is not None:
        refs = ledger.refs() if args.heard_only else None
        listing = webhook_listen.read_events(config, refs)
        expected = webhook_listen.in_window(listing.events, ledger, started)
        ids = {str(r.get("event_id")) for r in expected}

        def arrived(seen: Any) -> bool:
            return ids <= {a.body_event_id for a in seen.arrivals()}

        if not listing.error and not arrived(ledger) and args.settle > 0:
            print(
                f"(waiting up to {args.settle:g} s for listed events not yet arrived)", flush=True
            )
            ledger.wait_for(arrived, args.settle)
    results = webhook_listen.judge(ledger, listing, expected)
    verdict = webhook_listen.decide(results)
    print(report.scorecard(results, verdict, with_verdict=False, heading="Webhook scorecard"))
    duration = round(time.monotonic() - t0, 2)
    paths = report.write_all(
        results,
        verdict=verdict,
        report_dir=args.report_dir,
        target=config.base_url if config else f"webhooks on port {settings.port}",
        started_at=started.isoformat(timespec="seconds"),
        duration_s=duration,
        title="paysuite webhook report",
        suite_name="paysuite-webhooks",
        extra={"mode": "webhooks listen"},
    )
    print(f"reports: {', '.join(str(p) for p in paths)}")
    print(report.verdict_line(verdict, results), flush=True)
    return verdict.exit_code
