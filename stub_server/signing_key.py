"""The JWT signing key, kept out of the database (issue 13).

Why: whoever holds the key mints tokens the stub accepts (any merchant, any lifetime). A copy of
the database (a backup, a test artifact, a bug report) must not carry it, so the key lives in its
own file beside the database, ``<db>.jwt-key``, created mode 0600, or comes from outside: the
``jwt_key`` setting, else the ``PAYSUITE_STUB_JWT_KEY`` environment variable.

Earlier versions kept the key in the ``meta`` table; on start the stub moves it into the key file
(so tokens issued before the upgrade stay valid) and deletes the row. ``rotate`` writes a fresh
key: tokens signed with the old one are refused once the stub runs with the new one (it re-reads
the file on SIGHUP and at start).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from stub_server.store import Store

ENV_VAR = "PAYSUITE_STUB_JWT_KEY"
SUFFIX = ".jwt-key"
_META_KEY = "jwt_key"


class SigningKeyError(RuntimeError):
    """The key file cannot be read or written; the message names it."""


def key_path(db: str) -> Path | None:
    """Where the key of database ``db`` lives; None for ``:memory:`` and ``file:`` URIs."""
    if db == ":memory:" or db.startswith("file:"):
        return None
    return Path(db + SUFFIX)


def new_key() -> str:
    return secrets.token_hex(32)


def write_key(path: Path, key: str) -> None:
    """Replace the key file atomically; the new file is 0600 from its first byte."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(key + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_key(path: Path) -> str | None:
    """The key in ``path`` (its mode tightened to 0600), or None when there is no file."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SigningKeyError(f"cannot read the signing key file {path}: {exc}") from None
    if not text:
        raise SigningKeyError(f"the signing key file {path} is empty")
    os.chmod(path, 0o600)
    return text


def resolve(configured: str | None, store: Store, db: str) -> str:
    """The key to sign with: setting, environment, key file (migrating a key found in ``meta``),
    else a new one written to the key file. Any key left in ``meta`` is deleted."""
    legacy = store.meta(_META_KEY)
    key = configured or os.environ.get(ENV_VAR) or None
    path = key_path(db)
    if key is None and path is not None:
        key = read_key(path)
        if key is None:
            key = legacy or new_key()
            write_key(path, key)
    if key is None:  # an in-memory database: the key lives as long as the process
        key = legacy or new_key()
    if legacy is not None:
        store.erase_meta(_META_KEY)
    return key


def rotate(db: str) -> Path:
    """Write a new key for database ``db``; returns the key file's path."""
    path = key_path(db)
    if path is None:
        raise SigningKeyError(f"database {db!r} has no key file to rotate")
    if Path(db).exists():
        store = Store(db)
        try:
            store.erase_meta(_META_KEY)  # an un-migrated key must not come back
        finally:
            store.close()
    write_key(path, new_key())
    return path
