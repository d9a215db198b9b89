"""``paysuite schema NAME``: a configuration's JSON Schema, for an editor to check the file.

With ``# yaml-language-server: $schema=target.schema.json`` as its first line, a file is
completed and checked as it is typed by any editor running the YAML language server (VS Code's
YAML extension, Neovim, Emacs, JetBrains), against the very schema paysuite validates with.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from paysuite_core.config_schema import SCHEMAS, schema_text


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of a configuration file (for an editor)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "name",
        choices=SCHEMAS,
        help="target: --config of conform, load, proxy; stub: paysuite stub --config; "
        "load-plan: what paysuite load hands Locust",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text(args.name))
    return 0
