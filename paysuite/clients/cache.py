"""Where the published SDKs come from: the current environment, else a cache folder.

paypack-js is installed with ``npm`` into ``<cache>/paypack-js-0.2`` on first use; paypack-py
is used from the running interpreter when it is the pinned version, else installed with
``pip --target`` into ``<cache>/paypack-py-1.0.5`` (``--no-deps``: its ``requests~=2.26`` pin
would downgrade the ``requests`` Locust needs; any ``requests`` 2.x works). Each install goes to
a temporary sibling folder first and is renamed into place, so an interrupted or concurrent
install never leaves a half-filled cache behind. A failed install is a skip reason, not a crash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PAYPACK_PY_VERSION = "1.0.5"
PAYPACK_JS_RANGE = "0.2"  # npm resolves the newest 0.2.x
INSTALL_TIMEOUT_S = 300


@dataclass(frozen=True)
class Installed:
    """An SDK ready to run (``path``: what to put on the module search path, or None for the
    current environment), or the reason it cannot run (``skip``)."""

    path: Path | None = None
    skip: str | None = None


def default_cache_dir() -> Path:
    """``$PAYSUITE_CACHE_DIR``, else ``$XDG_CACHE_HOME/paysuite``, else ``~/.cache/paysuite``."""
    explicit = os.environ.get("PAYSUITE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "paysuite"


def _install_into(final: Path, command: list[str], what: str) -> Installed:
    """Run ``command`` with ``{dir}`` replaced by a temporary folder, then rename it to
    ``final``; another process that won the race is fine."""
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        argv = [part.replace("{dir}", str(work)) for part in command]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Installed(skip=f"{what} could not be installed: {exc}")
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return Installed(skip=f"{what} could not be installed: {' / '.join(tail)}")
        try:
            work.rename(final)
        except OSError:
            if not final.exists():
                raise
        return Installed(path=final)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def paypack_js(cache_dir: Path) -> Installed:
    """paypack-js under ``cache_dir``, installed with npm when missing; a skip without node."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if not path)
        return Installed(skip=f"{missing} not found on PATH")
    final = cache_dir / f"paypack-js-{PAYPACK_JS_RANGE}"
    if (final / "node_modules" / "paypack-js" / "package.json").is_file():
        return Installed(path=final / "node_modules")
    command = [npm, "install", "--prefix", "{dir}", f"paypack-js@{PAYPACK_JS_RANGE}",
               "--no-audit", "--no-fund", "--silent"]  # fmt: skip
    result = _install_into(final, command, f"paypack-js@{PAYPACK_JS_RANGE} (npm)")
    return Installed(path=final / "node_modules") if result.path else result


def paypack_py(cache_dir: Path) -> Installed:
    """paypack-py from this interpreter when it is the pinned version, else from the cache."""
    try:
        if metadata.version("paypack-py") == PAYPACK_PY_VERSION:
            return Installed()
    except metadata.PackageNotFoundError:
        pass
    final = cache_dir / f"paypack-py-{PAYPACK_PY_VERSION}"
    if (final / "paypack" / "client.py").is_file():
        return Installed(path=final)
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", "{dir}",
               f"paypack-py=={PAYPACK_PY_VERSION}"]  # fmt: skip
    return _install_into(final, command, f"paypack-py=={PAYPACK_PY_VERSION} (pip)")
