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
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from paysuite_core.durations import duration_argument
from stub_server.fault_catalog import FAULTS, VARIANTS, Fault, Variant

if TYPE_CHECKING:
    from stub_server.settings import StubSettings
    from stub_server.store import Store

PRIVILEGE_CHOICES = ("read", "read-write", "cashin", "cashout")
#: ``--help`` lines are cut to this width; ``--list-faults`` and ``--list-variants`` are not.
HELP_WIDTH = 100
#: Serve flags and the setting each overrides (when given).
_FLAG_SETTINGS = {
    "host": "host",
    "port": "port",
    "db": "db",
    "credentials": "credentials",
    "access_ttl": "access_ttl_s",
    "refresh_ttl": "refresh_ttl_s",
    "pending_timeout": "pending_timeout_s",
    "latency": "latency_s",
    "access_log": "access_log",
    "access_log_file": "access_log_file",
}


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


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "stub",
        help="serve the bundled reference stub of the Payments Transactions Service",
        description="Serve the reference stub. Prints 'paysuite stub listening on URL'\n"
        "and the path of the credentials file (a target configuration).",
        epilog=_stub_epilog(),
        # the epilog's lines are one switch each: keep them as written
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_serve_arguments(parser)
    parser.set_defaults(func=run_stub)
    commands = parser.add_subparsers(dest="stub_command", metavar="{apps,keys,webhooks}")
    apps = commands.add_parser("apps", help="manage applications")
    apps_commands = apps.add_subparsers(dest="apps_command", metavar="{create}", required=True)
    create = apps_commands.add_parser(
        "create", help="create an application and print its client_id and client_secret once"
    )
    create.add_argument("--merchant", required=True, help="merchant code, e.g. DEMO01")
    create.add_argument("--privilege", required=True, choices=PRIVILEGE_CHOICES)
    create.add_argument(
        "--db", dest="command_db", metavar="PATH", help="an existing database file (the stub's)"
    )
    create.add_argument(
        "--create-db",
        action="store_true",
        help="create the database file when it does not exist (its folder must exist)",
    )
    create.set_defaults(func=run_apps_create)
    keys = commands.add_parser("keys", help="manage the JWT signing key")
    keys_commands = keys.add_subparsers(dest="keys_command", metavar="{rotate}", required=True)
    rotate = keys_commands.add_parser(
        "rotate",
        help="write a new signing key beside the database; tokens of the old key are refused",
        description="Write a new JWT signing key to DB.jwt-key (mode 0600). A running stub "
        "picks it up on SIGHUP or its next start; from then on every token signed with the "
        "old key is refused (401 invalid_token) and clients authorize again.",
    )
    rotate.add_argument("--db", dest="command_db", metavar="PATH", help="database file")
    rotate.set_defaults(func=run_keys_rotate)
    _register_webhooks(commands)
    return parser


def _register_webhooks(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``paysuite stub webhooks add|list|rotate`` (RC-40)."""
    webhooks = commands.add_parser("webhooks", help="manage webhook endpoints")
    webhooks_commands = webhooks.add_subparsers(
        dest="webhooks_command", metavar="{add,list,rotate}", required=True
    )
    add = webhooks_commands.add_parser(
        "add",
        help="point a mode's deliveries at a URL; prints its signing secret once",
        description="Add (or replace) the webhook endpoint of a mode (the X-Webhook-Mode of a "
        "transaction; none means development). Prints the new signing secret once, on a line "
        "'secret: whsec_...'. A running stub picks the endpoint up within a second. The URL "
        "must be loopback unless PAYSUITE_ALLOW_REMOTE_WEBHOOKS=1. The URL is sent a HEAD, as "
        "the live dashboard does; one that does not answer it is reported (and still added).",
    )
    add.add_argument("--mode", required=True, help="e.g. development or production")
    add.add_argument("--url", required=True, help="the receiver, e.g. http://127.0.0.1:9911/")
    add.set_defaults(func=run_webhooks_add)
    listing = webhooks_commands.add_parser(
        "list", help="the endpoints: modes and URLs (never the secrets)"
    )
    listing.set_defaults(func=run_webhooks_list)
    rotate = webhooks_commands.add_parser(
        "rotate",
        help="a new signing secret; the old one keeps signing for --overlap",
        description="Give a mode's endpoint a new signing secret, printed once. Until the "
        "overlap ends, deliveries are signed with both: Paysuite-Signature carries a v1= per "
        "secret (the new first), X-Paypack-Signature (one value) keeps the old one. A running "
        "stub picks it up within a second.",
    )
    rotate.add_argument("--mode", default="development", help="(default development)")
    rotate.add_argument(
        "--overlap",
        default="24h",
        help="how long the old secret still signs, from 0 (at once) to 7d: 24h, 30m (24h)",
    )
    rotate.set_defaults(func=run_webhooks_rotate)
    for command in (add, listing, rotate):
        command.add_argument(
            "--db", dest="command_db", metavar="PATH", help="an existing database file"
        )


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--host", help="interface to bind (default 127.0.0.1)")
    add("--port", type=int, help="port (default 8080; 0 picks a free one)")
    add("--db", metavar="PATH", help="SQLite file (default paysuite-stub.db)")
    add("--credentials", metavar="PATH", help="where to write the credentials")
    add("--config", metavar="FILE", help="stub YAML config (docs/stub.md)")
    add("--access-ttl", type=float, metavar="S", help="access token lifetime")
    add("--refresh-ttl", type=float, metavar="S", help="refresh token lifetime")
    add("--no-sandbox", action="store_true", help="remove the /_sandbox customer endpoints")
    add(
        "--strict-auth",
        action="store_true",
        help="demand 'Authorization: Bearer <token>'; by default a bare token is accepted "
        "too, as the live service does for paypack-js (RC-33)",
    )
    for kind, registry in (("fault", FAULTS), ("variant", VARIANTS)):
        verb = "enable a fault switch" if kind == "fault" else "enable a variant"
        add(
            f"--{kind}",
            action="append",
            default=[],
            metavar="NAME",
            help=f"{verb} (repeatable; names below, or --list-{kind}s)",
        )
        add(
            f"--list-{kind}s",
            action=_ListSwitches,
            registry=registry,
            help=f"print the {kind} names, one a line with its description, and exit",
        )
    add("--pending-timeout", type=float, metavar="S", help="seconds before pending fails")
    add(
        "--access-log",
        choices=("clf", "json", "none"),
        help="log every request: Common Log Format or JSON lines (default: none)",
    )
    add("--access-log-file", metavar="PATH", help="where the access log goes (default stderr)")
    add(
        "--latency",
        type=duration_argument,
        metavar="DURATION",
        help="hold every answer back this long, like a service one region away (80ms, 0.2s)",
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
        key: getattr(args, attr)
        for attr, key in _FLAG_SETTINGS.items()
        if getattr(args, attr, None) is not None
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


def _fail(message: str, status: int) -> int:
    print(message, file=sys.stderr)
    return status


def _settings_or_status(args: argparse.Namespace) -> StubSettings | int:
    """The settings, or 2 (a usage error, reported) when they cannot be resolved."""
    from stub_server.settings import SettingsError

    try:
        return settings_from_args(args)
    except SettingsError as exc:
        return _fail(f"paysuite stub: {exc}", 2)


def _cannot_open(db: str, exc: sqlite3.Error) -> int:
    return _fail(f"paysuite stub: cannot open the database {db}: {exc}", 1)


def run_stub(args: argparse.Namespace) -> int:
    settings = _settings_or_status(args)
    if isinstance(settings, int):
        return settings
    from stub_server.server import run
    from stub_server.store.group_commit import missing_folder

    for what, path in (("database", settings.db), ("access log", settings.access_log_file)):
        folder = missing_folder(path) if path else None
        if folder is not None:
            return _fail(
                f"paysuite stub: the {what}'s folder {folder} does not exist ({what} {path});"
                " create it first",
                1,
            )
    try:
        return run(settings)
    except sqlite3.Error as exc:
        return _cannot_open(settings.db, exc)


def _new_db_problem(db: str, create_db: bool) -> str | None:
    """Why ``apps create`` may not use ``db``, a file that does not exist yet."""
    from stub_server.store.group_commit import missing_folder

    if not create_db:
        return (
            f"no database at {db} (start the stub with --db {db} first, or add --create-db to"
            " make a new one)"
        )
    folder = missing_folder(db)
    return None if folder is None else f"the database's folder {folder} does not exist"


def run_apps_create(args: argparse.Namespace) -> int:
    from stub_server import timefmt
    from stub_server.store import Store

    settings = _settings_or_status(args)
    if isinstance(settings, int):
        return settings
    db = args.command_db or settings.db
    if db == ":memory:":
        return _fail("paysuite stub apps create: --db ':memory:' would forget the app", 2)
    merchant = args.merchant.strip()
    if not merchant or len(merchant) > 64:
        return _fail("paysuite stub apps create: --merchant must be 1..64 characters", 2)
    if not db.startswith("file:") and not os.path.isfile(db):
        problem = _new_db_problem(db, args.create_db)
        if problem is not None:
            return _fail(f"paysuite stub apps create: {problem}", 1)
    try:
        store = Store(db)
        try:
            client_id, secret = store.create_app(merchant, args.privilege, timefmt.now_us())
        finally:
            store.close()
    except sqlite3.Error as exc:
        return _cannot_open(db, exc)
    print(f"client_id: {client_id}")
    print(f"client_secret: {secret}")
    print(f"privilege: {args.privilege}")
    print(f"merchant: {merchant}")
    print("(the secret is shown only now; the stub keeps a salted hash)", file=sys.stderr)
    return 0


def run_keys_rotate(args: argparse.Namespace) -> int:
    from stub_server import signing_key

    settings = _settings_or_status(args)
    if isinstance(settings, int):
        return settings
    db = args.command_db or settings.db
    try:
        path = signing_key.rotate(db)
    except signing_key.SigningKeyError as exc:
        return _fail(f"paysuite stub keys rotate: {exc}", 2)
    except (OSError, sqlite3.Error) as exc:
        return _fail(f"paysuite stub keys rotate: cannot rotate the key of {db}: {exc}", 1)
    print(f"new signing key: {path}")
    print("send SIGHUP to a running stub (or restart it): tokens of the old key are then refused")
    if settings.jwt_key or os.environ.get(signing_key.ENV_VAR):
        print(
            f"warning: the jwt_key setting or {signing_key.ENV_VAR} overrides the key file;"
            " change that value to rotate",
            file=sys.stderr,
        )
    return 0


def _webhooks_store(args: argparse.Namespace, command: str) -> Store | int:
    """The store of ``--db`` (which must exist), or the exit status and a message on stderr."""
    from stub_server.store import Store

    settings = _settings_or_status(args)
    if isinstance(settings, int):
        return settings
    db = args.command_db or settings.db
    if db == ":memory:" or (not db.startswith("file:") and not os.path.isfile(db)):
        return _fail(
            f"paysuite stub webhooks {command}: no database at {db} (start the stub with --db"
            f" {db} first)",
            1,
        )
    try:
        return Store(db)
    except sqlite3.Error as exc:
        return _cannot_open(db, exc)


def run_webhooks_add(args: argparse.Namespace) -> int:
    from stub_server import timefmt
    from stub_server.webhook_delivery.endpoint_url import EndpointUrlError
    from stub_server.webhook_delivery.endpoints import add_endpoint, ping

    store = _webhooks_store(args, "add")
    if isinstance(store, int):
        return store
    try:
        endpoint = add_endpoint(store, args.mode, args.url, timefmt.now_us())
    except EndpointUrlError as exc:
        return _fail(f"paysuite stub webhooks add: {exc}", 2)
    finally:
        store.close()
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
    from stub_server.webhook_delivery.endpoint_url import EndpointUrlError
    from stub_server.webhook_delivery.endpoints import rotate_endpoint

    try:
        overlap_s = parse_duration(args.overlap)
    except ValueError as exc:
        return _fail(f"paysuite stub webhooks rotate: --overlap: expected a duration: {exc}", 2)
    try:
        check_overlap(overlap_s)
    except ValueError as exc:
        return _fail(f"paysuite stub webhooks rotate: --overlap {args.overlap}: {exc}", 2)
    store = _webhooks_store(args, "rotate")
    if isinstance(store, int):
        return store
    try:
        endpoint = rotate_endpoint(store, args.mode, overlap_s, timefmt.now_us())
    except EndpointUrlError as exc:
        return _fail(f"paysuite stub webhooks rotate: {exc}", 2)
    finally:
        store.close()
    print(f"mode: {endpoint.mode}")
    print(f"secret: {endpoint.secret}")
    if endpoint.previous_until_us is not None:
        until = timefmt.utc_text(endpoint.previous_until_us)
        print(f"the previous secret also signs until {until}")
    print("(the new signing secret is shown only now)", file=sys.stderr)
    return 0


def run_webhooks_list(args: argparse.Namespace) -> int:
    store = _webhooks_store(args, "list")
    if isinstance(store, int):
        return store
    try:
        endpoints = store.webhook_endpoints()
    finally:
        store.close()
    for endpoint in endpoints:
        print(f"{endpoint.mode}\t{endpoint.url}")
    if not endpoints:
        print("(no webhook endpoints)", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m stub_server`` is ``paysuite stub``."""
    parser = argparse.ArgumentParser(prog="python -m stub_server")
    args = register(parser.add_subparsers(dest="command")).parse_args(argv)
    return int(args.func(args) or 0)
