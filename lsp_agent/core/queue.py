"""The follow-up queue: messages typed while a generation runs, persisted, FIFO per session.

Every status change is one guarded write (`UPDATE … WHERE status IN (…)`); a write that
finds the row changed under it is a 409 conflict. Nothing a user typed is dropped: a row
is `queued`/`paused` (visible, waiting), `sent` (it became a generation's prompt), or
`cancelled` — by the user, or because it was steered into a running generation
(`steeredInto`), in which case `steeredAppliedAt` is stamped in the same transaction as
the message it became. A steered row whose correction is rejected goes back to the queue.
"""

from __future__ import annotations

import json
import os
import sqlite3
from enum import StrEnum
from typing import Any

from pydantic import Field

from lsp_agent.core import ids
from lsp_agent.core.errors import AgentError, conflict, invalid, not_found
from lsp_agent.core.wire import WireModel
from lsp_agent.store.db import Store, now_ms

MAX_STEER_CHARS = 16_000
#: Every write moves `updated_at` forward, even two in the same millisecond (optimistic edits rely on it).
_TOUCH = "updated_at=MAX(?, updated_at + 1)"


class QueueStatus(StrEnum):
    QUEUED = "queued"
    PAUSED = "paused"
    SENT = "sent"
    CANCELLED = "cancelled"
    FAILED = "failed"


WAITING = (QueueStatus.QUEUED, QueueStatus.PAUSED)


class QueueItem(WireModel):
    id: str
    session_id: str
    kind: str
    text: str
    attachments: list[Any] = Field(default_factory=list)
    status: QueueStatus
    position: int
    created_at: int
    updated_at: int
    sent_at: int | None = None
    message_id: str | None = None
    steered_into: str | None = None
    steered_at: int | None = None
    steered_applied_at: int | None = None
    cancelled_at: int | None = None
    error: str | None = None


def steer_refusal(item: QueueItem) -> AgentError | None:
    """Why `item` cannot be steered into a running generation (SPEC 4), or None when it can. The one
    statement of the rule: agent/queue/steer enforces it, and the protocol shows it on every row."""
    if item.steered_into is not None:  # another client steered it first
        return conflict(f"queued item {item.id} was already steered into generation {item.steered_into}")
    if item.status not in WAITING:
        return invalid(f"queued item {item.id} is {item.status.value}; only waiting rows can be steered",
                       "not_steerable")
    if item.kind != "follow_up":
        return invalid(f"only text follow-ups can be steered, not {item.kind!r}", "not_steerable")
    if item.attachments:
        return invalid("a follow-up with attachments cannot be steered; send it as a new message", "not_steerable")
    if len(item.text.strip()) > MAX_STEER_CHARS:
        return invalid(f"the text is {len(item.text.strip())} characters; at most {MAX_STEER_CHARS} can be steered",
                       "not_steerable")
    return None


def _item(row: sqlite3.Row) -> QueueItem:
    data = dict(row)
    data.pop("steer_owner", None)
    data["attachments"] = json.loads(data["attachments"])
    return QueueItem.model_validate(data)


def process_owner() -> str:
    return f"pid:{os.getpid()}"


def _owner_alive(owner: str | None) -> bool:
    if not owner or not owner.startswith("pid:"):
        return False
    try:
        os.kill(int(owner[4:]), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True


class Queue:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db

    # --- reads ----------------------------------------------------------------------------------

    def get(self, item_id: str) -> QueueItem:
        row = self.db.execute("SELECT * FROM queue WHERE id=?", (item_id,)).fetchone()
        if row is None:
            raise not_found(f"no queued item {item_id!r}")
        return _item(row)

    def items(self, session_id: str, include_settled: bool = True) -> list[QueueItem]:
        """Waiting rows in FIFO order first, then the history (settled rows, newest first)."""
        waiting = [_item(r) for r in self.db.execute(
            "SELECT * FROM queue WHERE session_id=? AND status IN ('queued','paused') ORDER BY position, created_at",
            (session_id,))]
        if not include_settled:
            return waiting
        settled = [_item(r) for r in self.db.execute(
            "SELECT * FROM queue WHERE session_id=? AND status NOT IN ('queued','paused') "
            "ORDER BY updated_at DESC, id DESC", (session_id,))]
        return waiting + settled

    def next_queued(self, session_id: str) -> QueueItem | None:
        row = self.db.execute("SELECT * FROM queue WHERE session_id=? AND status='queued' "
                              "ORDER BY position, created_at LIMIT 1", (session_id,)).fetchone()
        return _item(row) if row is not None else None

    # --- writes ---------------------------------------------------------------------------------

    def add(self, session_id: str, text: str, kind: str = "follow_up", attachments: list[Any] | None = None,
            paused: bool = False) -> QueueItem:
        if not text.strip() and not attachments:
            raise invalid("a queued message needs text or attachments")
        ts = now_ms()
        item_id = ids.new_id("que")
        with self.store.transaction() as db:
            position = db.execute("SELECT COALESCE(MAX(position), 0) + 1 FROM queue WHERE session_id=?",
                                  (session_id,)).fetchone()[0]
            db.execute("INSERT INTO queue(id, session_id, kind, text, attachments, status, position, created_at,"
                       " updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                       (item_id, session_id, kind, text, json.dumps(attachments or []),
                        (QueueStatus.PAUSED if paused else QueueStatus.QUEUED).value, position, ts, ts))
        return self.get(item_id)

    def _guarded(self, item_id: str, sets: str, params: tuple[Any, ...], allowed: tuple[QueueStatus, ...],
                 expected_updated_at: int | None = None, db: sqlite3.Connection | None = None) -> QueueItem:
        """One guarded write; a row in another status (or changed since read) is a conflict."""
        marks = ",".join("?" * len(allowed))
        sql = f"UPDATE queue SET {sets}, {_TOUCH} WHERE id=? AND status IN ({marks})"
        values: list[Any] = [*params, now_ms(), item_id, *[s.value for s in allowed]]
        if expected_updated_at is not None:
            sql += " AND updated_at=?"
            values.append(expected_updated_at)
        cursor = (db or self.db).execute(sql, values)
        if cursor.rowcount != 1:
            current = self.get(item_id)  # raises 404 when missing
            raise conflict(f"queued item {item_id} changed: it is {current.status.value} now "
                           f"(updated {current.updated_at}); refresh and retry")
        return self.get(item_id)

    def cancel(self, item_id: str) -> QueueItem:
        return self._guarded(item_id, "status='cancelled', cancelled_at=?", (now_ms(),), WAITING)

    def edit(self, item_id: str, text: str, expected_updated_at: int) -> QueueItem:
        if not text.strip():
            raise invalid("the new text is empty")
        return self._guarded(item_id, "text=?", (text,), WAITING, expected_updated_at)

    def send_now(self, item_id: str) -> QueueItem:
        """Move to the front (and un-pause); it still waits for the running generation to end."""
        item = self.get(item_id)
        front = self.db.execute("SELECT COALESCE(MIN(position), 1) - 1 FROM queue WHERE session_id=?",
                                (item.session_id,)).fetchone()[0]
        return self._guarded(item_id, "status='queued', position=?", (front,), WAITING)

    def pause_waiting(self, session_id: str) -> int:
        """After an interrupt, nothing starts by itself."""
        return self.db.execute(f"UPDATE queue SET status='paused', {_TOUCH} WHERE session_id=? AND status='queued'",
                               (now_ms(), session_id)).rowcount

    # --- steering and sending (called by the core, inside its transactions) ---------------------

    def check_steerable(self, item: QueueItem) -> None:
        refusal = steer_refusal(item)
        if refusal is not None:
            raise refusal

    def is_steerable(self, item: QueueItem) -> bool:
        try:
            self.check_steerable(item)
        except Exception:
            return False
        return True

    def mark_steered(self, item: QueueItem, generation: str) -> QueueItem:
        return self._guarded(item.id, "status='cancelled', steered_into=?, steered_at=?, steer_owner=?, "
                             "cancelled_at=?", (generation, now_ms(), process_owner(), now_ms()), WAITING,
                             item.updated_at)

    def stamp_applied(self, db: sqlite3.Connection, item_id: str, message_id: str) -> None:
        cursor = db.execute(f"UPDATE queue SET steered_applied_at=?, message_id=?, {_TOUCH} "
                            "WHERE id=? AND status='cancelled' AND steered_applied_at IS NULL",
                            (now_ms(), message_id, now_ms(), item_id))
        if cursor.rowcount != 1:
            raise conflict(f"queued item {item_id} is no longer waiting for this correction")

    def requeue_steered(self, item_id: str, paused: bool) -> None:
        """A steered correction that did not land goes back to the queue, at its old place."""
        status = QueueStatus.PAUSED if paused else QueueStatus.QUEUED
        self.db.execute("UPDATE queue SET status=?, steered_into=NULL, steered_at=NULL, steer_owner=NULL, "
                        f"cancelled_at=NULL, {_TOUCH} WHERE id=? AND status='cancelled' "
                        "AND steered_into IS NOT NULL AND steered_applied_at IS NULL",
                        (status.value, now_ms(), item_id))

    def claim_for_send(self, db: sqlite3.Connection, item_id: str, message_id: str) -> None:
        """Inside the transaction that writes the prompt message: queued → sent, or conflict."""
        cursor = db.execute(f"UPDATE queue SET status='sent', sent_at=?, message_id=?, {_TOUCH} "
                            "WHERE id=? AND status='queued'", (now_ms(), message_id, now_ms(), item_id))
        if cursor.rowcount != 1:
            raise conflict(f"queued item {item_id} was changed before it could be sent")

    def recover(self) -> list[str]:
        """On start: rows steered by a process that died before the correction applied are requeued."""
        rows = self.db.execute("SELECT id, steer_owner FROM queue WHERE status='cancelled' "
                               "AND steered_into IS NOT NULL AND steered_applied_at IS NULL").fetchall()
        recovered = [r["id"] for r in rows if not _owner_alive(r["steer_owner"])]
        for item_id in recovered:
            self.requeue_steered(item_id, paused=False)
        return recovered
