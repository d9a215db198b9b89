"""The ``paysuite`` command: one front door, one subcommand per part of the architecture.

Each part owns its own arguments: ``stub_server.cli``, ``conformance.cli``, ``load.cli``,
``paysuite.demo``, ``paysuite.clients.cli`` and ``paysuite.webhooks.commands`` each expose
``register(subparsers)``, which adds a subparser whose ``func`` takes the parsed arguments and
returns the exit status. Registration imports nothing heavy, so ``paysuite --help`` stays
instant; a subcommand imports its machinery when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module

from paysuite import __version__

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

#: Commands that measured paysuite itself and left the installed package for the checkout's
#: benchmarks/: whoever still types one gets the new command, not argparse's usage dump.
MOVED = {"bench": "python -m benchmarks stub", "proxy-bench": "python -m benchmarks proxy"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paysuite",
        description="Conformance verdicts and load profiles for the Payments Transactions Service.",
    )
    parser.add_argument("--version", action="version", version=f"paysuite {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in MOVED:
        print(
            f"paysuite: {argv[0]} moved out of the installed package; from a paysuite checkout run "
            f"`{MOVED[argv[0]]}` (docs/load.md)",
            file=sys.stderr,
        )
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print("paysuite: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
