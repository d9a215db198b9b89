#!/usr/bin/env python3
"""A server that is not this API at all: ``python -m http.server`` serving a scratch directory.

Why it exists: pointing the suite at the wrong port (a dev web server, a static site) must end in
failures that say so, never in passes or in a crash of the suite. This answers what the standard
library's server answers: an HTML directory listing on ``GET /``, HTML 404 pages elsewhere, 501 on
POST.

Run: ``python tests/foreign/not_api.py --port 0 --config-out FILE``; prints
``listening on http://127.0.0.1:PORT`` once the (plausible-looking) target configuration has been
written. SIGTERM ends it at once.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

import yaml


def target_config(root: str) -> dict[str, Any]:
    """A config that looks right, so the suite gets as far as talking to the server."""
    return {
        "base_url": f"{root}/api",
        "applications": [
            {
                "client_id": "web-rw",
                "client_secret": "x",
                "privilege": "read-write",
                "merchant": "M1",
            },
            {
                "client_id": "web-m2",
                "client_secret": "x",
                "privilege": "read-write",
                "merchant": "M2",
            },
        ],
        "customer": {
            "driver": "sandbox",
            "confirm": f"POST {root}/sim/{{ref}}/confirm",
            "cancel": f"POST {root}/sim/{{ref}}/cancel",
            "timeout_s": 10,
        },
        "access_token_ttl_s": 900,
        "max_wait_s": 30,
        "number_pattern": "^07[2389][0-9]{7}$",
        "amount": {"min": 1, "max": 1_000_000},
    }


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)  # unwinds serve_forever and runs the clean-up below


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A static file server, not the payments API.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--config-out", type=Path, required=True)
    args = parser.parse_args(argv)

    directory = tempfile.mkdtemp(prefix="not-api-")
    Path(directory, "notes.txt").write_text("nothing to see here\n", encoding="utf-8")
    Path(directory, "assets").mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=directory)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    server.daemon_threads = True
    root = f"http://127.0.0.1:{server.server_address[1]}"

    args.config_out.parent.mkdir(parents=True, exist_ok=True)
    temporary = args.config_out.with_name(f".{args.config_out.name}.{os.getpid()}.tmp")
    temporary.write_text(yaml.safe_dump(target_config(root), sort_keys=False), encoding="utf-8")
    os.replace(temporary, args.config_out)

    signal.signal(signal.SIGTERM, _terminate)
    print(f"listening on {root}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        shutil.rmtree(directory, ignore_errors=True)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
