"""The follow-up queue's SQL: guarded single-statement writes (`UPDATE … WHERE status IN (…)`).

Every write moves `updated_at` forward, even two in the same millisecond (optimistic edits rely
on it). The functions taking a connection run inside a transaction the store already holds.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from lsp_agent.core.queue_model import QueueItem, QueueStatus
from lsp_agent.core.storage import RowChanged

_TOUCH = "updated_at=MAX(?, updated_at + 1)"
#: the columns a guarded write may set (the names are never taken from outside the core)
_COLUMNS = frozenset({"status", "text", "position", "sent_at", "message_id", "steered_into", "steered_at",
                      "steered_applied_at", "steer_owner", "cancelled_at", "error"})


def _now() -> int:
    return time.time_ns() // 1_000_000


def _item(row: sqlite3.Row) -> QueueItem:
    data = dict(row)
    data.pop("steer_owner", None)
    data["attachments"] = json.loads(data["attachments"])
    return QueueItem.model_validate(data)


def _value(value: Any) -> Any:
    return value.value if isinstance(value, QueueStatus) else value


def claim_for_send(db: sqlite3.Connection, item_id: str, message_id: str) -> None:
    """queued → sent, inside the transaction that writes the prompt message."""
    cursor = db.execute(f"UPDATE queue SET status='sent', sent_at=?, message_id=?, {_TOUCH} "
                        "WHERE id=? AND status='queued'", (_now(), message_id, _now(), item_id))
    if cursor.rowcount != 1:
        raise RowChanged(f"queued item {item_id} was changed before it could be sent")


def stamp_applied(db: sqlite3.Connection, item_id: str, message_id: str) -> None:
    cursor = db.execute(f"UPDATE queue SET steered_applied_at=?, message_id=?, {_TOUCH} "
                        "WHERE id=? AND status='cancelled' AND steered_applied_at IS NULL",
                        (_now(), message_id, _now(), item_id))
    if cursor.rowcount != 1:
        raise RowChanged(f"queued item {item_id} is no longer waiting for this correction")


def requeue_steered(db: sqlite3.Connection, item_id: str, status: QueueStatus) -> bool:
    cursor = db.execute("UPDATE queue SET status=?, steered_into=NULL, steered_at=NULL, steer_owner=NULL, "
                        f"cancelled_at=NULL, {_TOUCH} WHERE id=? AND status='cancelled' "
                        "AND steered_into IS NOT NULL AND steered_applied_at IS NULL",
                        (status.value, _now(), item_id))
    return cursor.rowcount == 1


class QueueTables:
    """The queue half of the sqlite store (mixed into `Store`)."""

    db: sqlite3.Connection

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def queue_get(self, item_id: str) -> QueueItem | None:
        row = self.db.execute("SELECT * FROM queue WHERE id=?", (item_id,)).fetchone()
        return _item(row) if row is not None else None

    def queue_waiting(self, session_id: str) -> list[QueueItem]:
        return [_item(r) for r in self.db.execute(
            "SELECT * FROM queue WHERE session_id=? AND status IN ('queued','paused') ORDER BY position, created_at",
            (session_id,))]

    def queue_settled(self, session_id: str) -> list[QueueItem]:
        return [_item(r) for r in self.db.execute(
            "SELECT * FROM queue WHERE session_id=? AND status NOT IN ('queued','paused') "
            "ORDER BY updated_at DESC, id DESC", (session_id,))]

    def queue_next(self, session_id: str) -> QueueItem | None:
        row = self.db.execute("SELECT * FROM queue WHERE session_id=? AND status='queued' "
                              "ORDER BY position, created_at LIMIT 1", (session_id,)).fetchone()
        return _item(row) if row is not None else None

    def _queue_insert(self, db: sqlite3.Connection, item: QueueItem) -> None:
        position = db.execute("SELECT COALESCE(MAX(position), 0) + 1 FROM queue WHERE session_id=?",
                              (item.session_id,)).fetchone()[0]
        db.execute("INSERT INTO queue(id, session_id, kind, text, attachments, status, position, created_at,"
                   " updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                   (item.id, item.session_id, item.kind, item.text, json.dumps(item.attachments),
                    item.status.value, position, item.created_at, item.updated_at))

    def queue_add(self, item: QueueItem) -> QueueItem:
        with self.transaction() as db:
            self._queue_insert(db, item)
        added = self.queue_get(item.id)
        assert added is not None
        return added

    def queue_update(self, item_id: str, changes: Mapping[str, Any], allowed: tuple[QueueStatus, ...],
                     expected_updated_at: int | None = None, to_front: bool = False) -> bool:
        unknown = set(changes) - _COLUMNS
        if unknown:
            raise ValueError(f"not a queue column: {sorted(unknown)}")
        sets = [f"{name}=?" for name in changes]
        values: list[Any] = [_value(v) for v in changes.values()]
        if to_front:
            sets.append("position=(SELECT COALESCE(MIN(q.position), 1) - 1 FROM queue q "
                        "WHERE q.session_id=queue.session_id)")
        marks = ",".join("?" * len(allowed))
        sql = f"UPDATE queue SET {', '.join(sets)}, {_TOUCH} WHERE id=? AND status IN ({marks})"
        values += [_now(), item_id, *[s.value for s in allowed]]
        if expected_updated_at is not None:
            sql += " AND updated_at=?"
            values.append(expected_updated_at)
        return self.db.execute(sql, values).rowcount == 1

    def queue_pause_waiting(self, session_id: str) -> int:
        return self.db.execute(f"UPDATE queue SET status='paused', {_TOUCH} WHERE session_id=? AND status='queued'",
                               (_now(), session_id)).rowcount

    def queue_requeue_steered(self, item_id: str, status: QueueStatus) -> bool:
        return requeue_steered(self.db, item_id, status)

    def queue_orphaned_steers(self) -> list[tuple[str, str | None]]:
        return [(r["id"], r["steer_owner"]) for r in self.db.execute(
            "SELECT id, steer_owner FROM queue WHERE status='cancelled' "
            "AND steered_into IS NOT NULL AND steered_applied_at IS NULL")]


__all__ = ["QueueTables", "claim_for_send", "requeue_steered", "stamp_applied"]
