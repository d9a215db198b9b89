"""The ``meta`` table: small named values of the stub itself (a legacy signing key's place)."""

from __future__ import annotations

from stub_server.store.group_commit import GroupCommitDatabase


class Meta(GroupCommitDatabase):
    """Key/value rows; ``erase_meta`` wipes a secret's bytes from the files too."""

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def erase_meta(self, key: str) -> None:
        """Delete a meta row so that its bytes are gone from the files too (a secret): SQLite
        keeps deleted content in free pages and in the WAL unless told otherwise."""
        conn = self.conn
        previous = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
        conn.execute("PRAGMA secure_delete=ON")
        try:
            if conn.execute("DELETE FROM meta WHERE key = ?", (key,)).rowcount:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.execute(f"PRAGMA secure_delete={previous}")  # the build's default otherwise
