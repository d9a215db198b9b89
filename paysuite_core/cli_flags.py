"""paysuite's one command-line convention: flags declared in tables, one usage error.

A command declares its options as a table of ``Flag`` records, which ``add_command`` turns into
argparse arguments (``conformance.options`` turns its table into pytest options too), so a flag
is written once. A command that cannot run as asked raises ``UsageError``, printed by ``fail``
(through ``run_command``, the dispatcher's): one line under the command's name, exit status 2,
no traceback; a ``Parser``'s own errors (an unknown or malformed flag) are printed alike.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NoReturn

from paysuite_core.durations import parse_duration
from paysuite_core.usage import Failure as Failure
from paysuite_core.usage import SetupError as SetupError
from paysuite_core.usage import UsageError as UsageError

if TYPE_CHECKING:
    from paysuite_core.bounded_http import Limits
    from paysuite_core.target_config import TargetConfig
    from paysuite_core.tls import TLSSettings


def fail(prog: str, reason: object) -> int:
    """The one place a usage error is printed: one line on stderr under ``prog``; status 2."""
    print(f"{prog}: {' '.join(str(reason).split())}", file=sys.stderr, flush=True)
    return 2


class Parser(argparse.ArgumentParser):
    """A bad flag is one line naming it (not argparse's usage dump), exit status 2; subparsers
    are of the parent's class, so every subcommand's too."""

    def error(self, message: str) -> NoReturn:
        sys.exit(fail(self.prog, message))

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        """An unknown argument is named by the (sub)command it was given to."""
        parsed, extras = super().parse_known_args(*args, **kwargs)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


@dataclass(frozen=True)
class Flag:
    """One option (or, named without a dash, one positional argument) of a command.

    ``pytest_name`` replaces a name pytest owns (its ``--strict``) and is a second spelling on
    the command line, ``short`` (``-v``) is the command line's only, ``cli_only`` is no pytest
    option; ``extra``: argparse's other keywords (``required``, ``action``, ``dest``...)."""

    name: str
    help: str | None = None
    metavar: str | None = None
    switch: bool = False
    choices: tuple[str, ...] | None = None
    default: Any = None
    type: Callable[[str], Any] | None = None
    group: str = ""
    pytest_name: str | None = None
    short: str | None = None
    cli_only: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return str(self.extra.get("dest") or self.name.removeprefix("--").replace("-", "_"))

    def add_to(self, add: Callable[..., object], *, pytest_prefix: str | None = None) -> None:
        """Declare the flag through ``add`` (argparse's ``add_argument``, or pytest's
        ``addoption`` with its ``dest`` prefixed ``pytest_prefix``): one table, so the two
        spellings cannot drift apart."""
        given = {"help": self.help, "choices": self.choices, "type": self.type}
        if self.switch:
            given["action"] = "store_true"
        else:
            given |= {"metavar": self.metavar, "default": self.default}
        kwargs = {key: value for key, value in given.items() if value is not None}
        kwargs.update(self.extra)
        if not self.name.startswith("-"):  # a positional argument: its name is its dest
            add(self.name, **kwargs)
            return
        if pytest_prefix is None:
            names = [n for n in (self.short, self.name, self.pytest_name) if n]
        else:
            names = [self.pytest_name or self.name]
        kwargs["dest"] = f"{pytest_prefix or ''}{self.dest}"
        add(*names, **kwargs)


def add_command(
    subparsers: argparse._SubParsersAction[Any],
    name: str,
    run: Callable[[argparse.Namespace], int],
    flags: Iterable[Flag] = (),
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A subcommand: its parser, its flags (a flag's ``group`` is its help section) and ``run``
    (what ``run_command`` calls)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, **kwargs)
    groups: dict[str, argparse._ActionsContainer] = {"": parser}
    for flag in flags:
        if flag.group not in groups:
            groups[flag.group] = parser.add_argument_group(flag.group)
        flag.add_to(groups[flag.group].add_argument)
    parser.set_defaults(func=run, prog=parser.prog)
    return parser


def add_group(
    subparsers: argparse._SubParsersAction[Any],
    name: str,
    metavar: str | None = None,
    **kwargs: Any,
) -> argparse._SubParsersAction[Any]:
    """A command made of subcommands (``paysuite stub webhooks add|list|rotate``), one of which
    must be given (``metavar``: their name in the usage, else ``{add,list,rotate}``): where they
    are added."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, **kwargs)
    return parser.add_subparsers(metavar=metavar, required=True)


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command; its ``UsageError`` is one line under its name, exit status 2; its
    ``Failure`` is its line, exit status 1."""
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        return fail(getattr(args, "prog", "paysuite"), exc)
    except Failure as exc:
        print(exc, file=sys.stderr, flush=True)
        return 1


#: The TLS flags every command that reaches a target takes (``paysuite_core.tls`` resolves them).
TLS = tuple(
    Flag(name, text, metavar, switch=metavar is None, group="TLS (HTTPS targets)")
    for name, metavar, text in (
        (
            "--ca-bundle",
            "PEM",
            "trust the CAs of this PEM file (default: tls.ca_bundle of the configuration, "
            "$SSL_CERT_FILE, $REQUESTS_CA_BUNDLE, then the default CAs)",
        ),
        (
            "--client-cert",
            "PEM",
            "present this client certificate (a gateway asking for mutual TLS)",
        ),
        ("--client-key", "PEM", "the client certificate's private key, if not in --client-cert"),
        ("--insecure", None, "do not verify the target's certificate (said in every verdict)"),
    )
)


def target_config(path: str | None) -> TargetConfig | None:
    """The ``--config`` file's target configuration (``None``: none given); a bad one is a
    ``UsageError``. Read when the command runs: registering one does not load yaml."""
    if not path:
        return None
    from paysuite_core.target_config import load_target_config

    return load_target_config(path)


def tls_settings(args: argparse.Namespace, config: TargetConfig | None) -> TLSSettings:
    """The command's TLS settings (its ``TLS`` flags, the configuration's ``tls:``, the
    environment); an insecure run says so first, under the command's name."""
    from paysuite_core.tls import TLSSettings

    tls = TLSSettings.from_args(args, config)
    if tls.insecure:
        print(f"{args.prog}: {tls.describe()}", file=sys.stderr, flush=True)
    return tls


# --- the request limits of conform and clients ----------------------------------------------
#: The request limits' command-line names (``--connect-timeout``, ...).
LIMIT_OPTIONS = ("connect_timeout", "read_timeout", "total_timeout", "max_response_bytes")


def limit_flags(group: str) -> tuple[Flag, ...]:
    """The request limits' flags, in their help section ``group``."""
    return (
        Flag("--connect-timeout", "seconds to connect (10)", "S", group=group),
        Flag("--read-timeout", "seconds between two bytes (30)", "S", group=group),
        Flag("--total-timeout", "seconds for a whole answer (60)", "S", group=group),
        Flag(
            "--max-response-bytes",
            "an answer's body past this is abandoned (1 MiB)",
            "N",
            group=group,
        ),
    )


def parse_seconds(
    text: str | float | None, flag: str, default: float, *, zero_is_off: bool = False
) -> float:
    """``--check-timeout 90``, ``90s``, ``1m30s``: seconds, the way Locust users write them;
    ``0`` only where it turns the thing off (``zero_is_off``)."""
    if text is None:
        return default
    if zero_is_off and str(text).strip() in ("0", "0s"):
        return 0.0
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if value <= 0:
        raise UsageError(f"{flag}: {text!r} is not a positive duration")
    return value


def parse_limits(values: Mapping[str, str | None], base: Limits) -> Limits:
    """``base`` (conform's ``CONFORM_LIMITS``) with the command line's values (``None``: kept)."""
    connect, read, total = (
        parse_seconds(values.get(name), f"--{name.replace('_', '-')}", default)
        for name, default in (
            ("connect_timeout", base.connect_s),
            ("read_timeout", base.read_s),
            ("total_timeout", base.total_s),
        )
    )
    raw = values.get("max_response_bytes")
    size = base.max_body_bytes
    if raw is not None:
        text = str(raw).strip()
        if not text.isdigit() or int(text) < 1024:
            raise UsageError(f"--max-response-bytes: expected a byte count >= 1024, got {text!r}")
        size = int(text)
    return replace(base, connect_s=connect, read_s=read, total_s=total, max_body_bytes=size)
