"""The local store: sqlite in WAL mode. Sessions, messages and parts are written
as they are created, so a crash loses at most the step in flight.

Writes are single small statements (well under a millisecond in WAL mode), so
they run inline on the event loop.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from lsp_agent.core.history import Message, Part, Role
from lsp_agent.store.migrations import migrate

_PART = TypeAdapter[Part](Part)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Store:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        migrate(self.db)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT: a guarded multi-statement write."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, session_id: str, workspace: str, model: str, title: str = "",
                       parent_id: str | None = None) -> None:
        ts = now_ms()
        self.db.execute(
            "INSERT INTO sessions(id, workspace, model, title, parent_id, created_at, updated_at)"
            " VALUES (?,?,?,?,?,?,?)", (session_id, workspace, model, title, parent_id, ts, ts))

    def session(self, session_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute(
            "SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
        return row

    def sessions(self, limit: int = 100) -> list[sqlite3.Row]:
        return list(self.db.execute(
            "SELECT * FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?", (limit,)))

    def touch_session(self, session_id: str) -> None:
        self.db.execute("UPDATE sessions SET updated_at=? WHERE id=?", (now_ms(), session_id))

    # --- messages and parts -----------------------------------------------------------------

    def append_message(self, session_id: str, message: Message,
                       guard: Callable[[sqlite3.Connection], None] | None = None) -> None:
        """Write a message and its parts in one transaction; `guard` runs first inside it and may
        raise to abort (steering re-checks the generation; a queue row is stamped with it)."""
        with self.transaction() as db:
            if guard is not None:
                guard(db)
            self._insert_message(db, session_id, message)

    def set_active_generation(self, session_id: str, generation: str | None) -> None:
        self.db.execute("UPDATE sessions SET active_generation=? WHERE id=?", (generation, session_id))

    def _insert_message(self, db: sqlite3.Connection, session_id: str, message: Message) -> None:
        ts = now_ms()
        seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id=?",
                         (session_id,)).fetchone()[0]
        db.execute(
            "INSERT INTO messages(id, session_id, seq, role, generation, step, created_at)"
            " VALUES (?,?,?,?,?,?,?)",
            (message.id, session_id, seq, message.role.value, message.generation, message.step, ts))
        for index, part in enumerate(message.parts):
            self._insert_part(db, session_id, message.id, index, part, ts)
        db.execute("UPDATE sessions SET updated_at=? WHERE id=?", (ts, session_id))

    def _insert_part(self, db: sqlite3.Connection, session_id: str, message_id: str, index: int,
                     part: Part, ts: int) -> None:
        db.execute(
            "INSERT INTO parts(id, message_id, session_id, seq, type, data, created_at)"
            " VALUES (?,?,?,?,?,?,?)",
            (part.id, message_id, session_id, index, part.type, part.model_dump_json(), ts))

    def append_part(self, session_id: str, message_id: str, part: Part) -> None:
        with self.transaction() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM parts WHERE message_id=?",
                             (message_id,)).fetchone()[0]
            self._insert_part(db, session_id, message_id, seq, part, now_ms())

    def messages(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        sql = "SELECT * FROM messages WHERE session_id=? AND seq>? ORDER BY seq"
        params: list[Any] = [session_id, after_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = list(self.db.execute(sql, params))
        if not rows:
            return []
        parts: dict[str, list[Part]] = {r["id"]: [] for r in rows}
        marks = ",".join("?" * len(rows))
        for prow in self.db.execute(
                f"SELECT message_id, data FROM parts WHERE message_id IN ({marks}) ORDER BY message_id, seq",
                list(parts)):
            parts[prow["message_id"]].append(_PART.validate_json(prow["data"]))
        return [Message(id=r["id"], role=Role(r["role"]), parts=parts[r["id"]], generation=r["generation"],
                        step=r["step"]) for r in rows]

    def message_seq(self, message_id: str) -> int | None:
        row = self.db.execute("SELECT seq FROM messages WHERE id=?", (message_id,)).fetchone()
        return int(row[0]) if row else None

    def part(self, part_id: str) -> tuple[str, str, Part] | None:
        """(session_id, message_id, part) of a stored part."""
        row = self.db.execute("SELECT session_id, message_id, data FROM parts WHERE id=?",
                              (part_id,)).fetchone()
        if row is None:
            return None
        return row["session_id"], row["message_id"], _PART.validate_json(row["data"])

    # --- replay events ----------------------------------------------------------------------

    def record_event(self, session_id: str, kind: str, data: dict[str, Any]) -> None:
        self.db.execute("INSERT INTO events(session_id, kind, data, created_at) VALUES (?,?,?,?)",
                        (session_id, kind, json.dumps(data, sort_keys=True), now_ms()))

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT kind, data FROM events WHERE session_id=?"
        params: list[Any] = [session_id]
        if kind:
            sql += " AND kind=?"
            params.append(kind)
        return [{"kind": r["kind"], **json.loads(r["data"])} for r in self.db.execute(sql + " ORDER BY id", params)]
