"""The ``paysuite`` command: one front door, one subcommand per part of the architecture.

Each part owns its own arguments: ``stub_server.cli``, ``conformance.cli``, ``load.cli``,
``paysuite.demo``, ``paysuite.clients.cli`` and ``paysuite.webhooks.commands`` each expose
``register(subparsers)``, which adds a subparser (``paysuite_core.cli_flags.add_command``: a
table of flags) whose ``func`` takes the parsed arguments and returns the exit status.
Registration imports nothing heavy, so ``paysuite --help`` stays instant; a subcommand imports
its machinery when it runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module

from paysuite import __version__
from paysuite_core.cli_flags import Parser, run_command

#: Modules that contribute a subcommand, in the order ``--help`` lists them.
SUBCOMMAND_MODULES = (
    "stub_server.cli",
    "conformance.cli",
    "load.cli",
    "paysuite.demo",
    "paysuite.clients.cli",
    "paysuite.webhooks.commands",
    "proxy.cli",  # registers `proxy` and `replay`
    "paysuite.schema",
)


def build_parser() -> Parser:
    parser = Parser(
        prog="paysuite",
        description="Conformance verdicts and load profiles for the Payments Transactions Service.",
    )
    parser.add_argument("--version", action="version", version=f"paysuite {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return run_command(args)
    except KeyboardInterrupt:
        print("paysuite: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
