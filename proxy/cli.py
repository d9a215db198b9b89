"""``paysuite proxy`` and ``paysuite replay``: their arguments, and the commands that run them
(nothing heavy imported at registration).

Exit status: ``EXIT_STATUS`` and ``REPLAY_EXIT_STATUS``, their ``--help`` epilogs.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from paysuite_core.cli_flags import TLS, Flag, UsageError, add_command, target_config, tls_settings

if TYPE_CHECKING:
    from paysuite_core.tls import TLSSettings

EXIT_STATUS = (
    "exit status: 0 every exchange followed the document; 1 a violation by the target (the live "
    "line and the reports name the check ID and the exchanges); 2 usage or configuration error, "
    "a --listen address that is not loopback or cannot be bound, a target that does not answer, "
    "or no exchange that reached a route of the API; 3 a violation by the client (a request the "
    "document forbids) when --judge client or both gates it and the target broke nothing; 130 "
    "interrupted (a second Ctrl-C, a SIGTERM) before the end of the session settled, with no "
    "violation: the reports say what was not settled."
)
REPLAY_EXIT_STATUS = (
    "exit status: 0 the replayed session followed the document; 1 a violation by the target; 2 "
    "a file or configuration that cannot be used, an application of the recording that maps to "
    "none of the configuration's, a target that does not answer, nothing replayable, or (with no "
    "violation) a session not replayed whole; 3 a violation by the client, when --judge gates "
    "it; 130 interrupted before the end settled."
)
JUDGE_HELP = (
    "whose violations gate the exit status: server (default: the target's; the client's are "
    "reported in their own section), client (exit 3 on the client's), or both"
)


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8081")
    host = host.strip("[]") or "127.0.0.1"
    if int(port) > 65535:
        raise UsageError(f"--listen {value!r}: port {port} is out of range (0-65535)")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(f"--listen {value!r}: the proxy listens on loopback addresses only")
    return host, int(port)


def _check_target(url: str, tls: TLSSettings, timeout_s: float = 5.0) -> None:
    """A TCP connection to the target opens (and, over HTTPS, one HEAD of its root is answered
    over a connection made with the run's TLS settings: a gateway that demands a client
    certificate says so only after the handshake), else a ``UsageError`` saying why (a
    certificate problem in ``paysuite_core.tls.explain``'s one line), before any client is
    pointed at the proxy."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--target {url!r}: expected an http(s) URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise UsageError(f"the target {url} does not answer: {exc}") from None
    if parts.scheme == "https":
        import httpx

        from paysuite_core.bounded_http import in_words
        from paysuite_core.http_clients import httpx_client
        from paysuite_core.tls import explain

        try:
            with httpx_client(tls, timeout=timeout_s) as client:
                client.head(f"{parts.scheme}://{parts.netloc}/")
        except httpx.HTTPError as exc:
            said = explain(exc, url) or f"the target {url} does not answer: {in_words(exc)}"
            raise UsageError(said) from None


def _proxy(args: argparse.Namespace) -> int:
    from proxy.judge import Judge
    from proxy.server import ProxySettings
    from proxy.session import SessionLimits, run_session

    host, port = _listen(args.listen)
    if args.max_exchanges is not None and args.max_exchanges < 1:
        raise UsageError("--max-exchanges: expected a positive count")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration: expected a positive number of seconds")
    config = target_config(args.config)
    tls = tls_settings(args, config)
    _check_target(args.target, tls)
    judge = Judge(
        config,
        profile=args.profile,
        base_url=config.base_url if config else None,
        judge=args.judge,
        tls=tls,
    )
    settings = ProxySettings(
        target=args.target,
        max_body_bytes=args.max_body_bytes,
        upstream_timeout_s=args.upstream_timeout,
        tls=tls,
    )
    # The session handles SIGINT and SIGTERM itself while it serves and settles, and restores
    # these when it returns: ignored, so that a signal after the last report was written cannot
    # turn the exit status into a kill. They stay ignored: the command is the process's last
    # act. (A caller that goes on, such as a test, starts its later children with the signal
    # reset, as the launcher's ``end_with_parent`` does for the signal that stops a child.)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    return run_session(  # an address it cannot bind: ListenError, a UsageError
        judge,
        settings,
        host=host,
        port=port,
        limits=SessionLimits(args.max_exchanges, args.duration),
        report_dir=args.report_dir,
        har_path=args.har,
    )


def _replay(args: argparse.Namespace) -> int:
    from proxy.replay import run_replay

    return int(run_replay(args))


_JUDGE = Flag("--judge", JUDGE_HELP, choices=("server", "client", "both"), default="server")
PROXY_FLAGS = (
    Flag(
        "--target",
        "where to forward: the target's root (http://127.0.0.1:8080) or its base URL as the "
        "configuration writes it (http://127.0.0.1:8080/api); the client's path (/api/...) is "
        "appended as sent, never doubling the base URL's path",
        extra={"required": True},
    ),
    Flag(
        "--config",
        "target configuration YAML: credentials for the judge's own confirmations (a rejected "
        "key reuse is reproduced on a number of its own with an application that may create; "
        "without one it is noted unconfirmed), and refresh_rotation (AUTH-012 is judged only "
        "when it is declared)",
    ),
    Flag("--listen", "loopback HOST:PORT (default 127.0.0.1:8081)", default="127.0.0.1:8081"),
    Flag(
        "--profile",
        "the spec's view answers are judged by (default seed: what the document mandates)",
        choices=("seed", "reference"),
        default="seed",
    ),
    _JUDGE,
    Flag("--report-dir", "default reports/proxy", default="reports/proxy"),
    Flag("--har", "the session's HAR file (default: session.har in --report-dir)"),
    Flag("--max-exchanges", "stop after this many exchanges", type=int),
    Flag("--duration", "stop after this many seconds", type=float),
    Flag(
        "--upstream-timeout",
        "seconds the target has to answer one exchange before the client gets a 502",
        type=float,
        default=30.0,
    ),
    Flag(
        "--max-body-bytes",
        "largest request body forwarded (default 1 MiB; larger: 413)",
        type=int,
        default=1 << 20,
    ),
    *TLS,
)
REPLAY_FLAGS = (
    Flag("har_file", metavar="FILE.har"),
    Flag("--target", "base URL to replay against", extra={"required": True}),
    Flag("--config", "target configuration YAML (secrets to fill in)"),
    Flag("--report-dir", "default reports/replay", default="reports/replay"),
    Flag("--profile", choices=("seed", "reference"), default="seed"),
    _JUDGE,
    Flag(
        "--map",
        "send the requests of the recording's application RECORDED_CLIENT_ID as the "
        "configuration's application CLIENT_ID (repeatable); without it each recorded "
        "application is mapped onto one of --config's by privilege and merchant",
        "RECORDED_CLIENT_ID=CLIENT_ID",
        default=[],
        extra={"action": "append"},
    ),
    Flag(
        "--keep-timing",
        "wait the recorded gaps between requests (each at most 60 s): needed to judge a "
        "token's expiry again",
        switch=True,
    ),
    Flag(
        "--keep-keys",
        "send the recorded Idempotency-Keys as they were (default: renewed, consistently)",
        switch=True,
    ),
    *TLS,
)


def register(subparsers: Any) -> None:
    add_command(
        subparsers,
        "proxy",
        _proxy,
        PROXY_FLAGS,
        help="forward a real client's traffic to a target and judge every exchange",
        description=(
            "A forwarding proxy: point your client at it, it passes every request to --target "
            "unchanged and every answer back unchanged, and judges each exchange against the "
            "document (the spec's seed view) and across exchanges (idempotency, token expiry, "
            "refresh rotation, the lifecycle). A violation prints a live line; on exit (Ctrl-C, "
            "--max-exchanges, --duration) the reports are written in the formats of "
            "`paysuite conform` and a HAR file of the session."
        ),
        epilog=EXIT_STATUS,
    )
    add_command(
        subparsers,
        "replay",
        _replay,
        REPLAY_FLAGS,
        help="re-send a recorded HAR session to a target and judge it again",
        description="Re-send the exchanges of a `paysuite proxy` HAR file, in order, to "
        "--target, and judge them as the proxy does.",
        epilog=REPLAY_EXIT_STATUS,
    )
