"""The JWT signing key, kept out of the database (``store.private_files``): in ``<db>.jwt-key``,
or from outside (the ``jwt_key`` setting, else ``PAYSUITE_STUB_JWT_KEY``).
``rotate`` writes a fresh key: tokens signed with the old one are refused once the stub re-reads
the file (SIGHUP, start).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from stub_server.store.private_files import beside_db, write_private

ENV_VAR = "PAYSUITE_STUB_JWT_KEY"
SUFFIX = ".jwt-key"


class SigningKeyError(RuntimeError):
    """The key file cannot be read or written; the message names it."""


def key_path(db: str) -> Path | None:
    return beside_db(db, SUFFIX)


def new_key() -> str:
    return secrets.token_hex(32)


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


def resolve(configured: str | None, db: str) -> str:
    """The key to sign with: setting, environment, key file, else a new one written to the key
    file (kept in memory only for an in-memory database)."""
    key = configured or os.environ.get(ENV_VAR) or None
    path = key_path(db)
    if key is None and path is not None:
        key = read_key(path)
        if key is None:
            key = new_key()
            write_private(path, key)
    return key or new_key()


def rotate(db: str) -> Path:
    """Write a new key for database ``db``; returns the key file's path."""
    path = key_path(db)
    if path is None:
        raise SigningKeyError(f"database {db!r} has no key file to rotate")
    write_private(path, new_key())
    return path
