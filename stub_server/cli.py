"""``paysuite stub`` (serve) and ``paysuite stub apps create`` (the only way to make applications).

Registration imports nothing heavy: aiohttp, PyJWT and the store load only when a command runs
(``stub_server.fault_catalog``, pure data, is read at registration so that ``--help`` can name the
switches). Precedence: defaults < ``--config`` file < command-line flags.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from stub_server.fault_catalog import FAULTS, VARIANTS, Fault, Variant

if TYPE_CHECKING:
    from stub_server.settings import StubSettings

PRIVILEGE_CHOICES = ("read", "read-write", "cashin", "cashout")
#: ``--help`` lines are cut to this width; ``--list-faults`` and ``--list-variants`` are not.
HELP_WIDTH = 100


def switch_lines(registry: Mapping[str, Fault | Variant], width: int | None = None) -> list[str]:
    """One line per switch: its name, padded to a column, and its description (cut to
    ``width`` characters when given, for ``--help``)."""
    column = max(len(name) for name in registry) + 2
    lines = []
    for name, switch in registry.items():
        line = f"{name:<{column}}{switch.description}"
        if width is not None:
            line = f"{name:<{column}}" + textwrap.shorten(
                switch.description, width - column, placeholder=" ..."
            )
        lines.append(line)
    return lines


class _ListSwitches(argparse.Action):
    """``--list-faults`` / ``--list-variants``: print the registry, one switch a line, and
    exit 0 before anything starts (like ``--version``)."""

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
    """The names ``--fault`` and ``--variant`` take, one line each (``--help``)."""
    parts = [
        f"variants (--variant NAME; conformant alternative choices, {len(VARIANTS)}):",
        *(f"  {line}" for line in switch_lines(VARIANTS, HELP_WIDTH - 2)),
        "",
        f"faults (--fault NAME; deliberate bugs, each tripping named checks, {len(FAULTS)}):",
        *(f"  {line}" for line in switch_lines(FAULTS, HELP_WIDTH - 2)),
        "",
        "--list-variants and --list-faults print them with their whole descriptions.",
    ]
    return "\n".join(parts)


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
        "--db", dest="apps_db", metavar="PATH", help="an existing database file (the stub's)"
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
    rotate.add_argument("--db", dest="keys_db", metavar="PATH", help="database file")
    rotate.set_defaults(func=run_keys_rotate)
    register_webhooks(commands)
    return parser


def register_webhooks(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """``paysuite stub webhooks add|list`` (RC-40)."""
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
    add.add_argument("--db", dest="webhooks_db", metavar="PATH", help="an existing database file")
    add.add_argument("--mode", required=True, help="e.g. development or production")
    add.add_argument("--url", required=True, help="the receiver, e.g. http://127.0.0.1:9911/")
    add.set_defaults(func=run_webhooks_add)
    listing = webhooks_commands.add_parser(
        "list", help="the endpoints: modes and URLs (never the secrets)"
    )
    listing.add_argument(
        "--db", dest="webhooks_db", metavar="PATH", help="an existing database file"
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
    rotate.add_argument(
        "--db", dest="webhooks_db", metavar="PATH", help="an existing database file"
    )
    rotate.add_argument("--mode", default="development", help="(default development)")
    rotate.add_argument(
        "--overlap", default="24h", help="how long the old secret still signs: 24h, 30m, 0 (24h)"
    )
    rotate.set_defaults(func=run_webhooks_rotate)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default 8080; 0 picks a free one)")
    parser.add_argument("--db", metavar="PATH", help="SQLite file (default paysuite-stub.db)")
    parser.add_argument("--credentials", metavar="PATH", help="where to write the credentials")
    parser.add_argument("--config", metavar="FILE", help="stub YAML config (docs/stub.md)")
    parser.add_argument("--access-ttl", type=float, metavar="S", help="access token lifetime")
    parser.add_argument("--refresh-ttl", type=float, metavar="S", help="refresh token lifetime")
    parser.add_argument(
        "--no-sandbox", action="store_true", help="remove the /_sandbox customer endpoints"
    )
    parser.add_argument(
        "--strict-auth",
        action="store_true",
        help="demand 'Authorization: Bearer <token>'; by default a bare token is accepted "
        "too, as the live service does for paypack-js (RC-33)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="enable a fault switch (repeatable; names below, or --list-faults)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME",
        help="enable a variant (repeatable; names below, or --list-variants)",
    )
    parser.add_argument(
        "--list-faults",
        action=_ListSwitches,
        registry=FAULTS,
        help="print the fault names, one a line with its description, and exit",
    )
    parser.add_argument(
        "--list-variants",
        action=_ListSwitches,
        registry=VARIANTS,
        help="print the variant names, one a line with its description, and exit",
    )
    parser.add_argument(
        "--pending-timeout", type=float, metavar="S", help="seconds before pending fails"
    )
    parser.add_argument(
        "--access-log",
        choices=("clf", "json", "none"),
        help="log every request: Common Log Format or JSON lines (default: none)",
    )
    parser.add_argument(
        "--access-log-file", metavar="PATH", help="where the access log goes (default stderr)"
    )


def settings_from_args(args: argparse.Namespace) -> StubSettings:
    """Resolve defaults, the config file and the flags into ``StubSettings``."""
    from stub_server.fault_catalog import UnknownSwitchError, check_names
    from stub_server.settings import StubSettings, load_settings_file, settings_from_mapping

    settings = StubSettings()
    if getattr(args, "config", None):
        settings = load_settings_file(args.config, settings)
    overrides: dict[str, Any] = {}
    for attr, key in (
        ("host", "host"),
        ("port", "port"),
        ("db", "db"),
        ("credentials", "credentials"),
        ("access_ttl", "access_ttl_s"),
        ("refresh_ttl", "refresh_ttl_s"),
        ("pending_timeout", "pending_timeout_s"),
        ("access_log", "access_log"),
        ("access_log_file", "access_log_file"),
    ):
        value = getattr(args, attr, None)
        if value is not None:
            overrides[key] = value
    if getattr(args, "no_sandbox", False):
        overrides["sandbox"] = False
    if getattr(args, "strict_auth", False):
        overrides["strict_auth"] = True
    settings = settings_from_mapping(overrides, settings)
    from dataclasses import replace

    try:
        faults = check_names(getattr(args, "fault", []) or [], FAULTS, "fault")
        variants = check_names(getattr(args, "variant", []) or [], VARIANTS, "variant")
    except UnknownSwitchError as exc:
        from stub_server.settings import SettingsError

        raise SettingsError(str(exc)) from None
    return replace(settings, faults=settings.faults | faults, variants=settings.variants | variants)


def run_stub(args: argparse.Namespace) -> int:
    from stub_server.settings import SettingsError

    try:
        settings = settings_from_args(args)
    except SettingsError as exc:
        print(f"paysuite stub: {exc}", file=sys.stderr)
        return 2
    import sqlite3

    from stub_server.server import run
    from stub_server.store.group_commit import missing_folder

    for what, path in (("database", settings.db), ("access log", settings.access_log_file)):
        folder = missing_folder(path) if path else None
        if folder is not None:
            print(
                f"paysuite stub: the {what}'s folder {folder} does not exist ({what} {path});"
                " create it first",
                file=sys.stderr,
            )
            return 1
    try:
        return run(settings)
    except sqlite3.Error as exc:
        print(f"paysuite stub: cannot open the database {settings.db}: {exc}", file=sys.stderr)
        return 1


def run_apps_create(args: argparse.Namespace) -> int:
    import os
    import sqlite3

    from stub_server import timefmt
    from stub_server.settings import SettingsError
    from stub_server.store import Store
    from stub_server.store.group_commit import missing_folder

    try:
        settings = settings_from_args(args)
    except SettingsError as exc:
        print(f"paysuite stub: {exc}", file=sys.stderr)
        return 2
    db = args.apps_db or settings.db
    if db == ":memory:":
        print("paysuite stub apps create: --db ':memory:' would forget the app", file=sys.stderr)
        return 2
    merchant = args.merchant.strip()
    if not merchant or len(merchant) > 64:
        print("paysuite stub apps create: --merchant must be 1..64 characters", file=sys.stderr)
        return 2
    if not db.startswith("file:") and not os.path.isfile(db):
        if not args.create_db:
            print(
                f"paysuite stub apps create: no database at {db} (start the stub with --db"
                f" {db} first, or add --create-db to make a new one)",
                file=sys.stderr,
            )
            return 1
        folder = missing_folder(db)
        if folder is not None:
            print(
                f"paysuite stub apps create: the database's folder {folder} does not exist",
                file=sys.stderr,
            )
            return 1
    try:
        store = Store(db)
        try:
            client_id, secret = store.create_app(merchant, args.privilege, timefmt.now_us())
        finally:
            store.close()
    except sqlite3.Error as exc:
        print(f"paysuite stub: cannot open the database {db}: {exc}", file=sys.stderr)
        return 1
    print(f"client_id: {client_id}")
    print(f"client_secret: {secret}")
    print(f"privilege: {args.privilege}")
    print(f"merchant: {merchant}")
    print("(the secret is shown only now; the stub keeps a salted hash)", file=sys.stderr)
    return 0


def run_keys_rotate(args: argparse.Namespace) -> int:
    import os
    import sqlite3

    from stub_server import signing_key
    from stub_server.settings import SettingsError

    try:
        settings = settings_from_args(args)
    except SettingsError as exc:
        print(f"paysuite stub: {exc}", file=sys.stderr)
        return 2
    db = args.keys_db or settings.db
    try:
        path = signing_key.rotate(db)
    except signing_key.SigningKeyError as exc:
        print(f"paysuite stub keys rotate: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error) as exc:
        print(f"paysuite stub keys rotate: cannot rotate the key of {db}: {exc}", file=sys.stderr)
        return 1
    print(f"new signing key: {path}")
    print("send SIGHUP to a running stub (or restart it): tokens of the old key are then refused")
    if settings.jwt_key or os.environ.get(signing_key.ENV_VAR):
        print(
            f"warning: the jwt_key setting or {signing_key.ENV_VAR} overrides the key file;"
            " change that value to rotate",
            file=sys.stderr,
        )
    return 0


def _webhooks_store(args: argparse.Namespace, command: str) -> Any:
    """The store of ``--db`` (which must exist), or the exit status and a message on stderr."""
    import os
    import sqlite3

    from stub_server.settings import SettingsError
    from stub_server.store import Store

    try:
        settings = settings_from_args(args)
    except SettingsError as exc:
        print(f"paysuite stub: {exc}", file=sys.stderr)
        return 2
    db = args.webhooks_db or settings.db
    if db == ":memory:" or (not db.startswith("file:") and not os.path.isfile(db)):
        print(
            f"paysuite stub webhooks {command}: no database at {db} (start the stub with --db"
            f" {db} first)",
            file=sys.stderr,
        )
        return 1
    try:
        return Store(db)
    except sqlite3.Error as exc:
        print(f"paysuite stub: cannot open the database {db}: {exc}", file=sys.stderr)
        return 1


def run_webhooks_add(args: argparse.Namespace) -> int:
    from stub_server import timefmt
    from stub_server.webhook_delivery.endpoint_url import EndpointUrlError
    from stub_server.webhook_delivery.endpoints import add_endpoint

    store = _webhooks_store(args, "add")
    if isinstance(store, int):
        return store
    try:
        endpoint = add_endpoint(store, args.mode, args.url, timefmt.now_us())
    except EndpointUrlError as exc:
        print(f"paysuite stub webhooks add: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    print(f"mode: {endpoint.mode}")
    print(f"url: {endpoint.url}")
    print(f"secret: {endpoint.secret}")
    print("(the signing secret is shown only now)", file=sys.stderr)
    _report_ping(endpoint.url)
    return 0


def _report_ping(url: str) -> None:
    """Send the HEAD the live dashboard sends a new webhook URL, and say how it went."""
    from stub_server.webhook_delivery.endpoints import ping

    problem = ping(url)
    if problem is None:
        print(f"HEAD {url}: answered")
    else:
        print(
            f"warning: {url} does not answer a HEAD ({problem}): deliveries will fail until a "
            "receiver answers there",
            file=sys.stderr,
        )


def run_webhooks_rotate(args: argparse.Namespace) -> int:
    from stub_server import timefmt
    from stub_server.webhook_delivery.endpoint_url import EndpointUrlError
    from stub_server.webhook_delivery.endpoints import parse_duration, rotate_endpoint

    try:
        overlap_s = parse_duration(args.overlap)
    except EndpointUrlError as exc:
        print(f"paysuite stub webhooks rotate: --overlap: {exc}", file=sys.stderr)
        return 2
    store = _webhooks_store(args, "rotate")
    if isinstance(store, int):
        return store
    try:
        endpoint = rotate_endpoint(store, args.mode, overlap_s, timefmt.now_us())
    except EndpointUrlError as exc:
        print(f"paysuite stub webhooks rotate: {exc}", file=sys.stderr)
        return 2
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
    sub = parser.add_subparsers(dest="command")
    stub_parser = register(sub)
    args = stub_parser.parse_args(argv)
    return int(args.func(args) or 0)
