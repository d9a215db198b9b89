"""``paysuite webhooks listen|trigger|resend``: the receiving side of webhooks.

``listen``: a merchant's side of the integration, on loopback. Point a target's endpoint (the
stub's ``webhooks: {development: URL}``) at the listener and every delivery prints one line,
verified (and in which signature format: the timestamped ``Paysuite-Signature``, the live
service's ``X-Paypack-Signature``, or both) or why not (stale, bad signature, malformed, a
duplicate acknowledged once). With ``--forward-to URL`` (as ``stripe listen`` does) each
verified delivery goes on, byte for byte with its headers, to the developer's own handler, and
the sender gets the handler's answer. At the end, with ``--config``, the deliveries are compared
with the events list (``paysuite.webhooks.listen``) and the verdict is written as ``paysuite
conform`` writes its own: junit.xml, conformance.json and report.html in ``--report-dir``. Exit
status: 0 pass, 1 a rule failed, 2 no verdict (nothing arrived, the list could not be read) or
a usage error.

It stops after ``--duration``, after ``--max-events`` distinct events, or on Ctrl-C / SIGTERM.
The ``--config`` file is re-read when it changes (a stub restarted on a new port rewrites it).

``trigger`` (as ``stripe trigger``) makes the deliveries a handler needs: a cashin or cashout,
confirmed or cancelled through the configuration's customer driver. ``resend EVENT_ID`` asks
the stub to deliver an event again (``POST /_sandbox/webhooks/deliveries/{event_id}/resend``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from paysuite_core.cli_flags import (
    TLS,
    Failure,
    Flag,
    UsageError,
    add_command,
    add_group,
    target_config,
    tls_settings,
)
from paysuite_core.tls import explain

if TYPE_CHECKING:
    from paysuite_core.target_config import TargetConfig
    from paysuite_core.webhooks.ledger import Arrival, Ledger
    from paysuite_core.webhooks.receiver import WebhookReceiver

SECRET_ENV = "PAYSUITE_WEBHOOK_SECRET"
#: After the stop, how long deliveries still missing from the comparison are waited for.
DEFAULT_SETTLE_S = 5.0


LISTEN_FLAGS = (
    Flag("--port", "port to bind (default: the config's listen)", type=int),
    Flag("--host", "loopback address to bind (default 127.0.0.1)"),
    Flag("--secret", f"the endpoint's signing secret (default ${SECRET_ENV}, or the config's)"),
    Flag("--config", "target configuration: compare with its events list", "FILE"),
    Flag("--report-dir", "(default reports/webhooks)", "DIR", default="reports/webhooks"),
    Flag("--duration", "stop after S seconds", "S", type=float),
    Flag("--max-events", "stop after N distinct verified events", "N", type=int),
    Flag("--tolerance", "signature age accepted (default 300)", "S", type=float),
    Flag(
        "--settle",
        f"after the stop, wait up to S s for listed events missing ({DEFAULT_SETTLE_S:g})",
        "S",
        type=float,
        default=DEFAULT_SETTLE_S,
    ),
    Flag(
        "--fail-first",
        "answer 503 to each event's first attempt, to see the target retry (WEBHOOK-005)",
        switch=True,
    ),
    Flag(
        "--heard-only",
        "compare only transactions a delivery named (other modes' traffic meanwhile)",
        switch=True,
    ),
    Flag(
        "--strict",
        "a warning (WEBHOOK-006: deliveries signed only the live way) fails the run too",
        switch=True,
    ),
    Flag(
        "--forward-to",
        "pass each verified delivery on to your own handler, byte for byte, and answer the "
        "sender with the handler's status",
        "URL",
    ),
    Flag(
        "--events",
        "forward only these event kinds (comma-separated, e.g. transaction:processed)",
        "KINDS",
        extra={"action": "append"},
    ),
    Flag(
        "--forward-timeout", "how long the handler may take to answer (default 10)", "S", type=float
    ),
    *TLS,  # an https:// --forward-to handler, and the events list read
)
TRIGGER_FLAGS = (
    Flag("--config", "target configuration", "FILE", extra={"required": True}),
    Flag("--kind", choices=("cashin", "cashout"), default="cashin"),
    Flag(
        "--outcome",
        "what the customer does (none: leave it pending, one created event)",
        choices=("confirm", "cancel", "none"),
        default="confirm",
    ),
    Flag("--mode", "X-Webhook-Mode to send"),
    Flag("--amount", "amount (default: one the target accepts)", type=int),
    Flag("--number", "customer number (default: one the target accepts)"),
    Flag("--count", "how many transactions (1)", type=int, default=1),
    *TLS,
)
RESEND_FLAGS = (
    Flag("event_id", metavar="EVENT_ID"),
    Flag("--config", "the stub's credentials file", "FILE"),
    Flag("--stub", "the stub's root URL (instead of --config)", "URL"),
    *TLS,
)


def register(subparsers: Any) -> None:
    commands = add_group(
        subparsers,
        "webhooks",
        "COMMAND",
        help="receive and verify a target's webhook deliveries (paysuite webhooks listen)",
        description="The receiving side of webhooks: a receiver that verifies each signed "
        "delivery, deduplicates by event_id and judges what arrived (docs/webhooks.md in the "
        "source repository).",
    )
    add_command(
        commands,
        "listen",
        run_listen,
        LISTEN_FLAGS,
        help="receive deliveries, verify each, compare with the events list at the end",
        description=__doc__.split("\n\n")[1].replace("``", "") if __doc__ else None,
    )
    add_command(
        commands,
        "trigger",
        run_trigger,
        TRIGGER_FLAGS,
        help="create a transaction and confirm or cancel it: the deliveries a handler needs",
        description="Create a cashin (or cashout) on the --config target with X-Webhook-Mode "
        "(default: the config's webhooks mode, else development), then have the customer "
        "confirm or cancel it through the configuration's customer driver, so that the target "
        "delivers a transaction:created and a transaction:processed event.",
    )
    add_command(
        commands,
        "resend",
        run_resend,
        RESEND_FLAGS,
        help="deliver an event again (the stub's sandbox)",
        description="Ask the bundled stub to deliver EVENT_ID again, under the same event_id "
        "(a delivered or abandoned one too): how a handler's deduplication is tried.",
    )


@dataclass
class ListenSettings:
    """The listener's options resolved: flags first, then the environment, then the config.

    The ``--config`` file is re-read when it changes (``poll``): a stub restarted on a new port
    rewrites it (new ``base_url``), ``paysuite stub webhooks rotate`` then a restart writes a new
    secret. The receiver then accepts the new secret beside the old ones (deliveries already
    signed with the old one are still the target's)."""

    config: TargetConfig | None
    secret: str
    host: str
    port: int
    tolerance_s: float
    config_path: str | None = None

    def __post_init__(self) -> None:
        self._stamp = self._read_stamp()

    def _read_stamp(self) -> tuple[int, int] | None:
        if self.config_path is None:
            return None
        try:
            st = os.stat(self.config_path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def poll(self, receiver: WebhookReceiver) -> None:
        """Re-read the file if it changed since the last look (a bad file is kept out)."""
        stamp = self._read_stamp()
        if stamp is None or stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            config = target_config(self.config_path)
        except UsageError as exc:
            print(f"(configuration not re-read: {exc})", flush=True)
            return
        assert config is not None  # a file that has a stamp
        old = self.config
        self.config = config
        secrets = [receiver.secret] if isinstance(receiver.secret, str) else list(receiver.secret)
        if config.webhooks is not None and config.webhooks.secret not in secrets:
            receiver.secret = [config.webhooks.secret, *secrets]
        if old is None or old.base_url != config.base_url:
            print(f"(configuration re-read: the target is now {config.base_url})", flush=True)


def _settings(args: argparse.Namespace) -> ListenSettings:
    from paysuite_core.webhooks.signature import DEFAULT_TOLERANCE_S

    config = target_config(args.config)
    hooks = config.webhooks if config else None
    secret = args.secret or os.environ.get(SECRET_ENV) or (hooks.secret if hooks else None)
    if not secret:
        raise UsageError(
            f"no signing secret: pass --secret, set ${SECRET_ENV} or give a --config with a "
            "webhooks section"
        )
    port = args.port if args.port is not None else (hooks.listen_port if hooks else None)
    if port is None:
        raise UsageError("no port: pass --port, or a --config whose webhooks section has listen")
    if not 0 <= port < 65536:
        raise UsageError(f"--port {port}: not a port number")
    if args.events and not args.forward_to:
        raise UsageError("--events filters what --forward-to forwards: give --forward-to URL")
    if args.forward_to:
        from urllib.parse import urlsplit

        parts = urlsplit(args.forward_to)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--forward-to {args.forward_to!r}: expected an http(s) URL")
    for name in ("duration", "max_events", "tolerance", "forward_timeout"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')}: must be greater than 0, got {value}")
    return ListenSettings(
        config=config,
        secret=secret,
        host=args.host or (hooks.listen_host if hooks else "127.0.0.1"),
        port=port,
        tolerance_s=args.tolerance or (hooks.tolerance_s if hooks else DEFAULT_TOLERANCE_S),
        config_path=args.config,
    )


def run_listen(args: argparse.Namespace) -> int:
    from paysuite_core.webhooks.receiver import WebhookReceiver, running

    settings = _settings(args)

    def show(arrival: Arrival) -> None:
        print(arrival.line(), flush=True)

    from paysuite_core.webhooks.receiver import FORWARD_TIMEOUT_S, Forwarder

    forward = None
    if args.forward_to:
        kinds = frozenset(k.strip() for group in args.events or [] for k in group.split(",") if k)
        timeout_s = args.forward_timeout or FORWARD_TIMEOUT_S
        forward = Forwarder(args.forward_to, kinds, timeout_s, tls_settings(args, settings.config))
    receiver = WebhookReceiver(
        settings.secret, tolerance_s=settings.tolerance_s, on_arrival=show, forward=forward
    )
    if args.fail_first:
        refused: set[str] = set()

        def first_attempt(record: dict[str, Any]) -> bool:
            event_id = str(record.get("event_id"))
            first = event_id not in refused
            refused.add(event_id)
            return first

        receiver.refuse(first_attempt, times=sys.maxsize)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    started = datetime.now(UTC)
    t0 = time.monotonic()
    try:
        with running(receiver, settings.host, settings.port) as served:
            print(f"paysuite webhooks listening on {served.url} (Ctrl-C to stop)", flush=True)
            if forward is not None:
                only = f" ({', '.join(sorted(forward.events))} only)" if forward.events else ""
                print(f"forwarding verified deliveries to {forward.url}{only}", flush=True)
            _wait(served.ledger, args, stop, lambda: settings.poll(receiver))
            settings.poll(receiver)
            return _finish(served.ledger, settings, args, started, t0)
    finally:
        signal.signal(signal.SIGTERM, previous)


def done_events(ledger: Ledger, forwarding: bool) -> int:
    """Distinct events done with: verified; with --forward-to, the handler acknowledged one of
    its deliveries (2xx) or it was not forwarded (--events), so that a handler failing an
    attempt keeps the listener for the retry."""
    if not forwarding:
        return len(ledger.accepted())
    done = {
        a.body_event_id
        for a in ledger.arrivals()
        if a.verdict in ("verified", "duplicate")
        and (a.handler is None or 200 <= a.handler.status < 300)
    }
    return len(done)


def _wait(
    ledger: Ledger, args: argparse.Namespace, stop: threading.Event, poll: Callable[[], None]
) -> None:
    """Until --duration, --max-events, SIGTERM or Ctrl-C; the config is re-read meanwhile."""
    limit = args.duration if args.duration is not None else float("inf")
    deadline = time.monotonic() + limit
    forwarding = bool(args.forward_to)

    def enough(seen: Ledger) -> bool:
        return args.max_events is not None and done_events(seen, forwarding) >= args.max_events

    try:
        while not stop.is_set() and time.monotonic() < deadline:
            poll()
            if enough(ledger):
                return
            ledger.wait_for(enough, min(0.5, max(0.0, deadline - time.monotonic())), stop=stop)
    except KeyboardInterrupt:
        print("(interrupted: judging what arrived)", flush=True)


def _finish(
    ledger: Ledger, settings: ListenSettings, args: argparse.Namespace, started: datetime, t0: float
) -> int:
    from paysuite.webhooks import listen as webhook_listen
    from paysuite_core.report_engine import reports as report

    counts = ledger.counts()
    formats = Counter(arrival.signature for arrival in ledger.arrivals() if arrival.signature)
    seen = ", ".join(f"{name} x{n}" for name, n in sorted(formats.items())) or "none verified"
    print(
        f"{len(ledger.accepted())} events received: {counts['verified']} verified, "
        f"{counts['duplicate']} duplicates acknowledged, {counts['rejected']} rejected; "
        f"signatures: {seen}",
        flush=True,
    )
    forwarded = forward_report(ledger) if args.forward_to else []
    if forwarded:
        print(f"\nForwarded to {args.forward_to}:")
        for row in forwarded:
            print(f"  {row['line']}")
    config = settings.config
    listing, expected = None, []
    if config is not None:
        refs = ledger.refs() if args.heard_only else None
        listing = webhook_listen.read_events(config, refs, tls_settings(args, config))
        expected = webhook_listen.in_window(listing.events, ledger, started)
        ids = {str(r.get("event_id")) for r in webhook_listen.awaited(expected, started)}

        def arrived(seen: Ledger) -> bool:
            return ids <= {a.body_event_id for a in seen.arrivals()}

        if not listing.error and not arrived(ledger) and args.settle > 0:
            print(
                f"(waiting up to {args.settle:g} s for listed events not yet arrived)", flush=True
            )
            ledger.wait_for(arrived, args.settle)
    results = webhook_listen.judge(ledger, listing, expected, started)
    verdict = webhook_listen.decide(results, strict=args.strict)
    findings = webhook_listen.findings(ledger, listing)
    print(report.scorecard(results, verdict, with_verdict=False, heading="Webhook scorecard"))
    for finding in findings:
        print(f"finding: {finding}")
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
        extra={
            "mode": "webhooks listen",
            "signatures": formats,
            "findings": findings,
            "forwarded": [{k: v for k, v in row.items() if k != "line"} for row in forwarded],
        },
    )
    print(f"reports: {', '.join(str(p) for p in paths)}")
    print(report.verdict_line(verdict, results), flush=True)
    return verdict.exit_code


def forward_report(ledger: Ledger) -> list[dict[str, Any]]:
    """Per event, in order of first arrival: its deliveries, whether each verified, and what
    the handler answered (status and time, or why there was no answer)."""
    rows: dict[str, dict[str, Any]] = {}
    said: dict[str, list[str]] = {}
    for arrival in ledger.arrivals():
        key = arrival.body_event_id or f"(delivery {arrival.seq})"
        row = rows.setdefault(
            key,
            {"event_id": key, "kind": arrival.kind, "ref": arrival.ref, "deliveries": []},
        )
        handler = arrival.handler
        row["deliveries"].append(
            {
                "attempt": arrival.attempt,
                "verdict": arrival.verdict,
                "answered_sender": arrival.status,
                "handler_status": handler.status if handler else None,
                "handler_ms": handler.elapsed_ms if handler else None,
                "handler_error": handler.error if handler else "",
                "forwarded": handler is not None,
            }
        )
        if handler is not None:
            what = handler.error or f"handler {handler.status} in {handler.elapsed_ms:g} ms"
        elif arrival.verdict in ("verified", "duplicate"):
            what = "not forwarded (--events)"
        else:
            what = f"{arrival.verdict}, answered {arrival.status}"
        said.setdefault(key, []).append(f"#{arrival.attempt or '?'} {arrival.verdict}: {what}")
    for key, row in rows.items():
        row["handler_acknowledged"] = any(
            d["forwarded"] and 200 <= d["handler_status"] < 300 for d in row["deliveries"]
        )
        row["line"] = (
            f"{row['kind'] or '?'} {row['event_id']} ref={row['ref'] or '?'}: "
            f"{len(row['deliveries'])} deliveries; " + "; ".join(said[key])
        )
    return list(rows.values())


def run_trigger(args: argparse.Namespace) -> int:
    """Create, then confirm or cancel, ``--count`` transactions: their deliveries follow."""
    from paysuite_core.driver.customer import DriverUnavailable
    from paysuite_core.driver.http import TargetUnreachable
    from paysuite_core.driver.target import Target
    from paysuite_core.results.outcome import CouldNotCheck

    config = target_config(args.config)
    assert config is not None  # --config is required
    if args.count < 1:
        raise UsageError("--count must be at least 1")
    mode = args.mode or (config.webhooks.mode if config.webhooks else "development")
    target = Target(config, config.base_url, tls=tls_settings(args, config))
    app = target.writer(args.kind.upper())
    if app is None:
        raise UsageError(f"no application of {args.config} may {args.kind}")
    customer = target.customer
    if args.outcome != "none" and customer is not None and customer.unavailable_reason():
        raise UsageError(f"cannot {args.outcome}: {customer.unavailable_reason()}")
    try:
        for _ in range(args.count):
            number = args.number or target.number()
            if args.outcome != "none" and customer is not None:
                number = customer.number_for(args.outcome, number)
            reply = target.create(
                args.kind.upper(), app, amount=args.amount, number=number, webhook_mode=mode
            )
            ref = reply.get("ref") if reply.ok else None
            if not isinstance(ref, str):
                said = f"{reply.status} {reply.text[:300]}"
                raise Failure(f"{args.prog}: the {args.kind} was refused: {said}")
            print(f"created {args.kind} {ref} (X-Webhook-Mode: {mode})", flush=True)
            if args.outcome == "none":
                continue
            target.resolve(ref, args.outcome)
            found = target.wait_processed(ref, app)
            status = found.get("status") if found.ok else f"find answered {found.status}"
            print(f"{args.outcome}ed {ref}: status {status}", flush=True)
    except (DriverUnavailable, CouldNotCheck) as exc:
        raise Failure(f"{args.prog}: {exc}") from None
    except TargetUnreachable as exc:
        said = explain(exc, config.base_url) or f"the target did not answer: {exc}"
        raise UsageError(said) from None
    finally:
        target.close()
    return 0


def run_resend(args: argparse.Namespace) -> int:
    """``POST {stub}/_sandbox/webhooks/deliveries/{event_id}/resend``, through the bounded reader
    (conform's limits: an endless answer is cut at 1 MiB), EVENT_ID refused unless it has the
    shape of an id and sent as one path segment; an answer that is not what the stub answers is
    one line, exit status 2."""
    import httpx

    from paysuite_core import guarded_json
    from paysuite_core.bounded_http import CONFORM_LIMITS, BoundedClient, no_answer
    from paysuite_core.url_paths import id_segment

    root = args.stub
    config = target_config(args.config)
    if root is None and config is not None:
        root = config.base_url.removesuffix("/").removesuffix("/api")
    if root is None:
        raise UsageError("give --config (the stub's credentials file) or --stub URL")
    event = id_segment(args.event_id, "EVENT_ID")  # not an id: NotAnId, a UsageError
    url = f"{root.rstrip('/')}/_sandbox/webhooks/deliveries/{event}/resend"
    try:
        with BoundedClient(
            CONFORM_LIMITS, tls=tls_settings(args, config), trust_env=False
        ) as client:
            answer = client.send(client.build_request("POST", url))
    except httpx.InvalidURL as exc:
        raise UsageError(f"--stub {root!r}: not a URL ({exc})") from None
    except Exception as exc:  # every transport failure is one line
        raise UsageError(explain(exc, url) or f"{url}: {no_answer(exc)}") from None
    text = " ".join(answer.body[:200].decode("utf-8", "replace").split())
    if answer.status != 200:
        raise Failure(f"{args.prog}: {answer.status} {text}")
    try:
        rows = guarded_json.loads(answer.body, what="the stub's answer").get("deliveries")
    except (ValueError, AttributeError):
        rows = None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise UsageError(f"{url}: the answer is not the stub's list of deliveries: {text[:80]!r}")
    for row in rows:  # one line per delivery the stub resends
        print(
            f"resending {row.get('event_kind')} {row.get('event_id')} ref={row.get('ref')} "
            f"to {row.get('url')}"
        )
    return 0
