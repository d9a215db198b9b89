"""Merchant applications (Resources and their fields, Application): who may authorize.

The ``client_secret`` is returned once, at creation, and only its hash is kept (the document:
"displayed only once"); ``stub_server.secrets_hash`` says how it is hashed.
"""

from __future__ import annotations

import secrets
import uuid

from stub_server.secrets_hash import hash_secret
from stub_server.store.group_commit import GroupCommitDatabase
from stub_server.store.records import AppRecord


class Applications(GroupCommitDatabase):
    def create_app(self, merchant: str, privilege: str, now_us: int) -> tuple[str, str]:
        """Create an application; return (client_id, client_secret). The secret is not kept."""
        client_id = str(uuid.uuid4())
        client_secret = secrets.token_hex(32)
        self.conn.execute(
            "INSERT INTO applications (client_id, secret_hash, privilege, merchant, created_us)"
            " VALUES (?, ?, ?, ?, ?)",
            (client_id, hash_secret(client_secret), privilege, merchant, now_us),
        )
        return client_id, client_secret

    def app(self, client_id: str) -> AppRecord | None:
        row = self.conn.execute(
            "SELECT client_id, secret_hash, privilege, merchant FROM applications"
            " WHERE client_id = ?",
            (client_id,),
        ).fetchone()
        return None if row is None else AppRecord(*row)
