"""The paypack-py walk through ``paysuite proxy`` against the stub with each of its faults: what
docs/proxy.md's fault table is made from. ``python tests/proxy/walk_faults.py [FAULT ...]``
prints one Markdown row per fault (about 3 s each; 26 faults in under two minutes)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from proxykit import config_file, paypack_walk, start_proxy

from paysuite_core.launcher import start_stub, stop_stub
from stub_server.fault_catalog import FAULTS


def walk_against(fault: str) -> tuple[int, list[str]]:
    """The proxy's exit status and failed rules for the walk against a stub with ``fault``."""
    tmp = Path(tempfile.mkdtemp(prefix=f"walk-{fault}-"))
    stub = start_stub(tmp / "stub", faults=(fault,) if fault else (), startup_timeout_s=60)
    try:
        run = start_proxy(stub.root_url, tmp / "reports", config=config_file(stub, tmp))
        paypack_walk(run, stub)
        status = run.stop()
        return status, sorted(run.failed())
    finally:
        stop_stub(stub)


def main(names: list[str]) -> int:
    print("| fault | suite checks it trips | proxy exit | proxy rules failed |")
    print("|---|---|---|---|")
    for name in names or ["", *FAULTS]:
        status, failed = walk_against(name)
        trips = ", ".join(sorted(FAULTS[name].trips)) if name else ""
        shown = ", ".join(failed) or "none"
        print(f"| `{name or '(none)'}` | {trips} | {status} | {shown} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
