"""``paysuite stub`` (serve) and its ``apps``, ``keys`` and ``webhooks`` commands.

Registration imports nothing heavy: aiohttp, PyJWT and the store load only when a command runs
(``fault_catalog``, pure data, is read at registration so that ``--help`` can name the
switches). Precedence: defaults < ``--config`` file < command-line flags.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from paysuite_core.cli_flags import (
    Failure,
    Flag,
    Parser,
    UsageError,
    add_command,
    add_group,
    run_command,
)
from paysuite_core.durations import duration_argument
from stub_server.fault_catalog import FAULTS, VARIANTS, Fault, Variant

if TYPE_CHECKING:
    from stub_server.settings import StubSettings
    from stub_server.store import Store

PRIVILEGE_CHOICES = ("read", "read-write", "cashin", "cashout")
#: ``--help`` lines are cut to this width; ``--list-faults`` and ``--list-variants`` are not.
HELP_WIDTH = 100
#: The serve flags that override a setting of the same name (when given).
_SETTINGS = (
    "host port db credentials access_ttl_s refresh_ttl_s pending_timeout_s latency_s access_log "
    "access_log_file"
).split()


def switch_lines(registry: Mapping[str, Fault | Variant], width: int | None = None) -> list[str]:
    """One line per switch: its name, padded to a column, and its description (cut to
    ``width`` characters when given, for ``--help``)."""
    column = max(len(name) for name in registry) + 2
    return [
        f"{name:<{column}}"
        + (
            switch.description
            if width is None
            else textwrap.shorten(switch.description, width - column, placeholder=" ...")
        )
        for name, switch in registry.items()
    ]


class _ListSwitches(argparse.Action):
    """Prints the registry and exits 0 before anything starts (like ``--version``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        self.registry: Mapping[str, Fault | Variant] = kwargs.pop("registry")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        print("\n".join(switch_lines(self.registry)))
        parser.exit(0)


def _stub_epilog() -> str:
    return "\n".join(
        [
            f"variants (--variant NAME; conformant alternative choices, {len(VARIANTS)}):",
            *(f"  {line}" for line in switch_lines(VARIANTS, HELP_WIDTH - 2)),
            "",
            f"faults (--fault NAME; deliberate bugs, each tripping named checks, {len(FAULTS)}):",
            *(f"  {line}" for line in switch_lines(FAULTS, HELP_WIDTH - 2)),
            "",
            "--list-variants and --list-faults print them with their whole descriptions.",
        ]
    )


def _db(help: str) -> Flag:
    """A subcommand's ``--db`` (its own dest: the stub's ``--db`` is a serve flag)."""
    return Flag("--db", help, "PATH", extra={"dest": "command_db"})


SERVE_FLAGS = (
    Flag("--host", "interface to bind (default 127.0.0.1)"),
    Flag("--port", "port (default 8080; 0 picks a free one)", type=int),
    Flag("--db", "SQLite file (default paysuite-stub.db)", "PATH"),
    Flag("--credentials", "where to write the credentials", "PATH"),
    Flag("--config", "stub YAML config (docs/stub.md)", "FILE"),
    Flag("--access-ttl", "access token lifetime", "S", type=float, extra={"dest": "access_ttl_s"}),
    Flag(
        "--refresh-ttl", "refresh token lifetime", "S", type=float, extra={"dest": "refresh_ttl_s"}
    ),
    Flag("--no-sandbox", "remove the /_sandbox customer endpoints", switch=True),
    Flag(
        "--strict-auth",
        "demand 'Authorization: Bearer <token>'; by default a bare token is accepted too, as "
        "the live service does for paypack-js (RC-33)",
        switch=True,
    ),
    *(
        flag
        for kind, verb, registry in (
            ("fault", "enable a fault switch", FAULTS),
            ("variant", "enable a variant", VARIANTS),
        )
        for flag in (
            Flag(
                f"--{kind}",
                f"{verb} (repeatable; names below, or --list-{kind}s)",
                "NAME",
                default=[],
                extra={"action": "append"},
            ),
            Flag(
                f"--list-{kind}s",
                f"print the {kind} names, one a line with its description, and exit",
                extra={"action": _ListSwitches, "registry": registry},
            ),
        )
    ),
    Flag(
        "--pending-timeout",
        "seconds before pending fails",
        "S",
        type=float,
        extra={"dest": "pending_timeout_s"},
    ),
    Flag(
        "--access-log",
        "log every request: Common Log Format or JSON lines (default: none)",
        choices=("clf", "json", "none"),
    ),
    Flag("--access-log-file", "where the access log goes (default stderr)", "PATH"),
    Flag(
        "--latency",
        "hold every answer back this long, like a service one region away (80ms, 0.2s)",
        "DURATION",
        type=duration_argument,
        extra={"dest": "latency_s"},
    ),
)


def register(subparsers: argparse._SubParsersAction[Any]) -> argparse.ArgumentParser:
    parser = add_command(
        subparsers,
        "stub",
        run_stub,
        SERVE_FLAGS,
        help="serve the bundled reference stub of the Payments Transactions Service",
        description="Serve the reference stub. Prints 'paysuite stub listening on URL'\n"
        "and the path of the credentials file (a target configuration).",
        epilog=_stub_epilog(),
        # the epilog's lines are one switch each: keep them as written
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="stub_command", metavar="{apps,keys,webhooks}")
    add_command(
        add_group(commands, "apps", help="manage applications"),
        "create",
        run_apps_create,
        (
            Flag("--merchant", "merchant code, e.g. DEMO01", extra={"required": True}),
            Flag("--privilege", choices=PRIVILEGE_CHOICES, extra={"required": True}),
            _db("an existing database file (the stub's)"),
            Flag(
                "--create-db",
                "create the database file when it does not exist (its folder must exist)",
                switch=True,
            ),
        ),
        help="create an application and print its client_id and client_secret once",
    )
    add_command(
        add_group(commands, "keys", help="manage the JWT signing key"),
        "rotate",
        run_keys_rotate,
        (_db("database file"),),
        help="write a new signing key beside the database; tokens of the old key are refused",
        description="Write a new JWT signing key to DB.jwt-key (mode 0600). A running stub "
        "picks it up on SIGHUP or its next start; from then on every token signed with the "
        "old key is refused (401 invalid_token) and clients authorize again.",
    )
    _register_webhooks(commands)
    return parser


def _register_webhooks(commands: argparse._SubParsersAction[Any]) -> None:
    """``paysuite stub webhooks add|list|rotate`` (RC-40)."""
    webhooks_commands = add_group(commands, "webhooks", help="manage webhook endpoints")
    db = _db("an existing database file")
    add_command(
        webhooks_commands,
        "add",
        run_webhooks_add,
        (
            Flag("--mode", "e.g. development or production", extra={"required": True}),
            Flag("--url", "the receiver, e.g. http://127.0.0.1:9911/", extra={"required": True}),
            db,
        ),
        help="point a mode's deliveries at a URL; prints its signing secret once",
        description="Add (or replace) the webhook endpoint of a mode (the X-Webhook-Mode of a "
        "transaction; none means development). Prints the new signing secret once, on a line "
        "'secret: whsec_...'. A running stub picks the endpoint up within a second. The URL "
        "must be loopback unless PAYSUITE_ALLOW_REMOTE_WEBHOOKS=1. The URL is sent a HEAD, as "
        "the live dashboard does; one that does not answer it is reported (and still added).",
    )
    add_command(
        webhooks_commands,
        "list",
        run_webhooks_list,
        (db,),
        help="the endpoints: modes and URLs (never the secrets)",
    )
    add_command(
        webhooks_commands,
        "rotate",
        run_webhooks_rotate,
        (
            Flag("--mode", "(default development)", default="development"),
            Flag(
                "--overlap",
                "how long the old secret still signs, from 0 (at once) to 7d: 24h, 30m (24h)",
                default="24h",
            ),
            db,
        ),
        help="a new signing secret; the old one keeps signing for --overlap",
        description="Give a mode's endpoint a new signing secret, printed once. Until the "
        "overlap ends, deliveries are signed with both: Paysuite-Signature carries a v1= per "
        "secret (the new first), X-Paypack-Signature (one value) keeps the old one. A running "
        "stub picks it up within a second.",
    )


def settings_from_args(args: argparse.Namespace) -> StubSettings:
    """Resolve defaults, the config file and the flags into ``StubSettings``."""
    from stub_server.fault_catalog import UnknownSwitchError, check_names
    from stub_server.settings import (
        SettingsError,
        StubSettings,
        load_settings_file,
        settings_from_mapping,
    )

    settings = StubSettings()
    if getattr(args, "config", None):
        settings = load_settings_file(args.config, settings)
    overrides: dict[str, object] = {
        key: getattr(args, key) for key in _SETTINGS if getattr(args, key, None) is not None
    }
    if getattr(args, "no_sandbox", False):
        overrides["sandbox"] = False
    if getattr(args, "strict_auth", False):
        overrides["strict_auth"] = True
    settings = settings_from_mapping(overrides, settings)
    try:
        faults = check_names(getattr(args, "fault", []) or [], FAULTS, "fault")
        variants = check_names(getattr(args, "variant", []) or [], VARIANTS, "variant")
    except UnknownSwitchError as exc:
        raise SettingsError(str(exc)) from None
    return replace(settings, faults=settings.faults | faults, variants=settings.variants | variants)


def run_stub(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    from stub_server.server import run
    from stub_server.store.group_commit import missing_folder

    for what, path in (("database", settings.db), ("access log", settings.access_log_file)):
        folder = missing_folder(path) if path else None
        if folder is not None:
            raise Failure(
                f"paysuite stub: the {what}'s folder {folder} does not exist ({what} {path});"
                " create it first"
            )
    try:
        return run(settings)
    except sqlite3.Error as exc:
        raise _cannot_open(settings.db, exc) from None


def _cannot_open(db: str, exc: sqlite3.Error) -> Failure:
    return Failure(f"paysuite stub: cannot open the database {db}: {exc}")


@contextmanager
def _open_store(args: argparse.Namespace, create: bool | None = None) -> Iterator[Store]:
    """The store of ``--db`` (else the configuration's), closed afterwards. It must exist, but
    ``create`` (``apps create --create-db``) makes a new one; ``None``: a command that never
    does. A database missing or that cannot be opened is one line, exit status 1; a webhook
    endpoint the command names wrongly (``EndpointUrlError``) is a usage error."""
    from stub_server.store import Store
    from stub_server.store.group_commit import missing_folder

    db = args.command_db or settings_from_args(args).db
    if create is not None and db == ":memory:":
        raise UsageError("--db ':memory:' would forget the app")
    if db == ":memory:" or (not db.startswith("file:") and not os.path.isfile(db)):
        start = f"no database at {db} (start the stub with --db {db} first"
        if create is None:
            raise Failure(f"{args.prog}: {start})")
        if not create:
            raise Failure(f"{args.prog}: {start}, or add --create-db to make a new one)")
        if (folder := missing_folder(db)) is not None:
            raise Failure(f"{args.prog}: the database's folder {folder} does not exist")
    try:
        store = Store(db)
        try:
            yield store
        finally:
            store.close()
    except sqlite3.Error as exc:
        raise _cannot_open(db, exc) from None


def run_apps_create(args: argparse.Namespace) -> int:
    from stub_server import timefmt

    merchant = args.merchant.strip()
    if not merchant or len(merchant) > 64:
        raise UsageError("--merchant must be 1..64 characters")
    with _open_store(args, create=args.create_db) as store:
        client_id, secret = store.create_app(merchant, args.privilege, timefmt.now_us())
    print(f"client_id: {client_id}")
    print(f"client_secret: {secret}")
    print(f"privilege: {args.privilege}")
    print(f"merchant: {merchant}")
    print("(the secret is shown only now; the stub keeps a salted hash)", file=sys.stderr)
    return 0


def run_keys_rotate(args: argparse.Namespace) -> int:
    from stub_server import signing_key

    settings = settings_from_args(args)
    db = args.command_db or settings.db
    try:
        path = signing_key.rotate(db)
    except signing_key.SigningKeyError as exc:
        raise UsageError(str(exc)) from None
    except (OSError, sqlite3.Error) as exc:
        raise Failure(f"{args.prog}: cannot rotate the key of {db}: {exc}") from None
    print(f"new signing key: {path}")
    print("send SIGHUP to a running stub (or restart it): tokens of the old key are then refused")
    if settings.jwt_key or os.environ.get(signing_key.ENV_VAR):
        print(
            f"warning: the jwt_key setting or {signing_key.ENV_VAR} overrides the key file;"
            " change that value to rotate",
            file=sys.stderr,
        )
    return 0


def run_webhooks_add(args: argparse.Namespace) -> int:
    from stub_server import timefmt
    from stub_server.webhook_delivery.endpoints import add_endpoint, ping

    with _open_store(args) as store:
        endpoint = add_endpoint(store, args.mode, args.url, timefmt.now_us())
    print(f"mode: {endpoint.mode}")
    print(f"url: {endpoint.url}")
    print(f"secret: {endpoint.secret}")
    print("(the signing secret is shown only now)", file=sys.stderr)
    # the HEAD the live dashboard sends a new webhook URL
    problem = asyncio.run(ping(endpoint.url))
    if problem is None:
        print(f"HEAD {endpoint.url}: answered")
    else:
        print(
            f"warning: {endpoint.url} does not answer a HEAD ({problem}): deliveries will fail "
            "until a receiver answers there",
            file=sys.stderr,
        )
    return 0


def run_webhooks_rotate(args: argparse.Namespace) -> int:
    from paysuite_core.durations import parse_duration
    from stub_server import timefmt
    from stub_server.store.webhook_secrets import check_overlap
    from stub_server.webhook_delivery.endpoints import rotate_endpoint

    try:
        overlap_s = parse_duration(args.overlap)
    except ValueError as exc:
        raise UsageError(f"--overlap: expected a duration: {exc}") from None
    try:
        check_overlap(overlap_s)
    except ValueError as exc:
        raise UsageError(f"--overlap {args.overlap}: {exc}") from None
    with _open_store(args) as store:
        endpoint = rotate_endpoint(store, args.mode, overlap_s, timefmt.now_us())
    print(f"mode: {endpoint.mode}")
    print(f"secret: {endpoint.secret}")
    if endpoint.previous_until_us is not None:
        until = timefmt.utc_text(endpoint.previous_until_us)
        print(f"the previous secret also signs until {until}")
    print("(the new signing secret is shown only now)", file=sys.stderr)
    return 0


def run_webhooks_list(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        endpoints = store.webhook_endpoints()
    for endpoint in endpoints:
        print(f"{endpoint.mode}\t{endpoint.url}")
    if not endpoints:
        print("(no webhook endpoints)", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m stub_server`` is ``paysuite stub``."""
    parser = Parser(prog="python -m stub_server")
    return run_command(register(parser.add_subparsers(dest="command")).parse_args(argv))
