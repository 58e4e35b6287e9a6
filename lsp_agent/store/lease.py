"""The session leases' SQL: one row per session some process writes now (core/lease.py decides who
may take one; here each take is one guarded transaction, so two processes racing for a session
cannot both win)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from lsp_agent.core.storage import SessionLease


def _lease(row: sqlite3.Row) -> SessionLease:
    return SessionLease(session_id=row["session_id"], owner=row["owner"], acquired_at=row["acquired_at"],
                        heartbeat_at=row["heartbeat_at"], expires_at=row["expires_at"])


class LeaseTables:
    """The lease half of the sqlite store (mixed into `Store`)."""

    db: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def acquire_lease(self, session_id: str, owner: str, now: int, expires_at: int,
                      holder_live: Callable[[SessionLease], bool]) -> tuple[bool, SessionLease | None]:
        with self.transaction() as db:
            row = db.execute("SELECT * FROM session_leases WHERE session_id=?", (session_id,)).fetchone()
            found = _lease(row) if row is not None else None
            if found is not None and found.owner != owner and holder_live(found):
                return False, found
            acquired = found.acquired_at if found is not None and found.owner == owner else now
            db.execute("INSERT OR REPLACE INTO session_leases(session_id, owner, acquired_at, heartbeat_at, "
                       "expires_at) VALUES (?,?,?,?,?)", (session_id, owner, acquired, now, expires_at))
        return True, found

    def renew_lease(self, session_id: str, owner: str, now: int, expires_at: int) -> bool:
        return self.db.execute("UPDATE session_leases SET heartbeat_at=?, expires_at=? WHERE session_id=? "
                               "AND owner=?", (now, expires_at, session_id, owner)).rowcount == 1

    def release_lease(self, session_id: str, owner: str) -> None:
        self.db.execute("DELETE FROM session_leases WHERE session_id=? AND owner=?", (session_id, owner))

    def lease(self, session_id: str) -> SessionLease | None:
        row = self.db.execute("SELECT * FROM session_leases WHERE session_id=?", (session_id,)).fetchone()
        return _lease(row) if row is not None else None

    def leases(self) -> list[SessionLease]:
        return [_lease(r) for r in self.db.execute("SELECT * FROM session_leases ORDER BY session_id")]


__all__ = ["LeaseTables"]
