"""An in-memory implementation of the core's storage port: nothing survives the process.

For tests (the queue and steering suites run against it as well as sqlite, so the port, not
sqlite, carries the rules) and for throwaway sessions. Each named operation checks its
guards before it changes anything, which makes it all-or-nothing like a transaction.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lsp_agent.core.queue_model import WAITING, QueueItem, QueueStatus
from lsp_agent.core.storage import (
    CorrectionExists,
    PendingCorrection,
    RowChanged,
    SessionLease,
    SessionRecord,
    StaleGeneration,
)
from lsp_agent.core.storage import Store as StorePort
from lsp_agent.domain.history import Message, Part

_COLUMNS = frozenset({"status", "text", "position", "sent_at", "message_id", "steered_into", "steered_at",
                      "steered_applied_at", "steer_owner", "cancelled_at", "error"})


def _now() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class _Row:
    item: QueueItem
    steer_owner: str | None = None


@dataclass
class _Session:
    record: SessionRecord
    messages: list[Message] = field(default_factory=list)


class MemoryStore:
    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._seq: dict[str, tuple[str, int]] = {}  # message id → (session, seq)
        self._events: list[tuple[str, str, dict[str, Any]]] = []
        self._queue: dict[str, _Row] = {}
        self._corrections: dict[tuple[str, str], PendingCorrection] = {}
        self._leases: dict[str, SessionLease] = {}

    def close(self) -> None:
        pass

    def release_memory(self) -> None:
        pass  # the records are the store: nothing to drop

    # --- sessions ---------------------------------------------------------------------------

    def create_session(self, session_id: str, workspace: str, model: str, title: str = "",
                       parent_id: str | None = None) -> None:
        if session_id in self._sessions:
            raise ValueError(f"session {session_id} exists")
        ts = _now()
        self._sessions[session_id] = _Session(SessionRecord(session_id, workspace, model, title, parent_id, ts, ts))

    def create_fork(self, session_id: str, workspace: str, model: str, title: str, parent_id: str,
                    messages: list[Message]) -> None:
        self.create_session(session_id, workspace, model, title, parent_id)
        for message in messages:
            self._insert(session_id, message)

    def session(self, session_id: str) -> SessionRecord | None:
        found = self._sessions.get(session_id)
        return found.record if found is not None else None

    def sessions(self, limit: int = 100) -> list[SessionRecord]:
        records = sorted((s.record for s in self._sessions.values()), key=lambda r: (r.updated_at, r.id),
                         reverse=True)
        return records[:limit]

    def set_active_generation(self, session_id: str, generation: str | None) -> None:
        found = self._sessions[session_id]
        found.record = replace(found.record, active_generation=generation)

    # --- messages ---------------------------------------------------------------------------

    def _insert(self, session_id: str, message: Message) -> None:
        found = self._sessions[session_id]  # a KeyError, like a foreign-key failure, before any change
        stored = message.model_copy(deep=True)
        found.messages.append(stored)
        self._seq[stored.id] = (session_id, len(found.messages))
        found.record = replace(found.record, updated_at=_now())

    def append_message(self, session_id: str, message: Message) -> None:
        self._insert(session_id, message)

    def messages(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Message]:
        found = self._sessions.get(session_id)
        if found is None:
            return []
        page = found.messages[after_seq:]
        if limit is not None:
            page = page[:limit]
        return [m.model_copy(deep=True) for m in page]

    def message_seq(self, message_id: str) -> int | None:
        found = self._seq.get(message_id)
        return found[1] if found else None

    def part(self, part_id: str) -> tuple[str, str, Part] | None:
        for session_id, stored in self._sessions.items():
            for message in stored.messages:
                for part in message.parts:
                    if part.id == part_id:
                        return session_id, message.id, part.model_copy(deep=True)
        return None

    # --- generations ------------------------------------------------------------------------

    def begin_generation(self, session_id: str, generation: str, prompt: Message,
                         claim_item: str | None = None) -> None:
        if session_id not in self._sessions:
            raise KeyError(session_id)
        row = self._queue.get(claim_item) if claim_item is not None else None
        if claim_item is not None and (row is None or row.item.status is not QueueStatus.QUEUED):
            raise RowChanged(f"queued item {claim_item} was changed before it could be sent")
        if row is not None:
            self._touch(row, status=QueueStatus.SENT, sent_at=_now(), message_id=prompt.id)
        self.set_active_generation(session_id, generation)
        self._insert(session_id, prompt)

    def end_generation(self, session_id: str, generation: str) -> None:
        self.set_active_generation(session_id, None)

    def apply_correction(self, correction: PendingCorrection, message: Message) -> None:
        record = self.session(correction.session_id)
        if record is None or record.active_generation != correction.generation:
            raise StaleGeneration(f"session {correction.session_id} no longer runs {correction.generation}")
        row = self._queue.get(correction.queue_item) if correction.queue_item is not None else None
        if correction.queue_item is not None and (row is None or row.item.status is not QueueStatus.CANCELLED
                                                   or row.item.steered_applied_at is not None):
            raise RowChanged(f"queued item {correction.queue_item} is no longer waiting for this correction")
        if row is not None:
            self._touch(row, steered_applied_at=_now(), message_id=message.id)
        self._insert(correction.session_id, message)
        self._corrections.pop((correction.session_id, correction.client_id), None)

    # --- pending corrections ----------------------------------------------------------------

    def save_correction(self, correction: PendingCorrection) -> None:
        key = (correction.session_id, correction.client_id)
        if key in self._corrections:
            raise CorrectionExists(f"correction {key} is already pending")
        self._corrections[key] = correction

    def drop_correction(self, session_id: str, client_id: str) -> None:
        self._corrections.pop((session_id, client_id), None)

    def pending_corrections(self) -> list[PendingCorrection]:
        return sorted(self._corrections.values(), key=lambda c: c.created_at)

    def surface_correction(self, correction: PendingCorrection, item: QueueItem) -> None:
        if correction.queue_item is not None:
            self.queue_requeue_steered(correction.queue_item, item.status)
        else:
            self._queue_insert(item)
        self._corrections.pop((correction.session_id, correction.client_id), None)

    # --- session leases -----------------------------------------------------------------------

    def acquire_lease(self, session_id: str, owner: str, now: int, expires_at: int,
                      holder_live: Callable[[SessionLease], bool]) -> tuple[bool, SessionLease | None]:
        found = self._leases.get(session_id)
        if found is not None and found.owner != owner and holder_live(found):
            return False, found
        acquired = found.acquired_at if found is not None and found.owner == owner else now
        self._leases[session_id] = SessionLease(session_id, owner, acquired, now, expires_at)
        return True, found

    def renew_lease(self, session_id: str, owner: str, now: int, expires_at: int) -> bool:
        found = self._leases.get(session_id)
        if found is None or found.owner != owner:
            return False
        self._leases[session_id] = replace(found, heartbeat_at=now, expires_at=expires_at)
        return True

    def release_lease(self, session_id: str, owner: str) -> None:
        found = self._leases.get(session_id)
        if found is not None and found.owner == owner:
            del self._leases[session_id]

    def lease(self, session_id: str) -> SessionLease | None:
        return self._leases.get(session_id)

    def leases(self) -> list[SessionLease]:
        return [self._leases[key] for key in sorted(self._leases)]

    # --- replay events ----------------------------------------------------------------------

    def record_event(self, session_id: str, kind: str, data: dict[str, Any]) -> None:
        self._events.append((session_id, kind, copy.deepcopy(data)))

    def events(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [{"kind": k, **copy.deepcopy(d)} for s, k, d in self._events
                if s == session_id and (kind is None or k == kind)]

    # --- the queue --------------------------------------------------------------------------

    def _touch(self, row: _Row, **changes: Any) -> None:
        owner = changes.pop("steer_owner", row.steer_owner)
        updated = max(_now(), row.item.updated_at + 1)  # always forward, as in the sqlite store
        row.item = row.item.model_copy(update={**changes, "updated_at": updated})
        row.steer_owner = owner

    def queue_get(self, item_id: str) -> QueueItem | None:
        row = self._queue.get(item_id)
        return row.item.model_copy() if row is not None else None

    def _of(self, session_id: str) -> list[QueueItem]:
        return [r.item for r in self._queue.values() if r.item.session_id == session_id]

    def queue_waiting(self, session_id: str) -> list[QueueItem]:
        return sorted((i for i in self._of(session_id) if i.status in WAITING),
                      key=lambda i: (i.position, i.created_at))

    def queue_settled(self, session_id: str) -> list[QueueItem]:
        return sorted((i for i in self._of(session_id) if i.status not in WAITING),
                      key=lambda i: (i.updated_at, i.id), reverse=True)

    def queue_next(self, session_id: str) -> QueueItem | None:
        return next((i for i in self.queue_waiting(session_id) if i.status is QueueStatus.QUEUED), None)

    def _queue_insert(self, item: QueueItem) -> None:
        position = max((i.position for i in self._of(item.session_id)), default=0) + 1
        self._queue[item.id] = _Row(item.model_copy(update={"position": position}))

    def queue_add(self, item: QueueItem) -> QueueItem:
        self._queue_insert(item)
        return self._queue[item.id].item.model_copy()

    def queue_update(self, item_id: str, changes: Mapping[str, Any], allowed: tuple[QueueStatus, ...],
                     expected_updated_at: int | None = None, to_front: bool = False) -> bool:
        unknown = set(changes) - _COLUMNS
        if unknown:
            raise ValueError(f"not a queue column: {sorted(unknown)}")
        row = self._queue.get(item_id)
        if row is None or row.item.status not in allowed:
            return False
        if expected_updated_at is not None and row.item.updated_at != expected_updated_at:
            return False
        update = dict(changes)
        if to_front:
            update["position"] = min((i.position for i in self._of(row.item.session_id)), default=1) - 1
        self._touch(row, **update)
        return True

    def queue_pause_waiting(self, session_id: str) -> int:
        rows = [r for r in self._queue.values()
                if r.item.session_id == session_id and r.item.status is QueueStatus.QUEUED]
        for row in rows:
            self._touch(row, status=QueueStatus.PAUSED)
        return len(rows)

    def queue_requeue_steered(self, item_id: str, status: QueueStatus) -> bool:
        row = self._queue.get(item_id)
        if (row is None or row.item.status is not QueueStatus.CANCELLED or row.item.steered_into is None
                or row.item.steered_applied_at is not None):
            return False
        self._touch(row, status=status, steered_into=None, steered_at=None, steer_owner=None, cancelled_at=None)
        return True

    def queue_orphaned_steers(self) -> list[tuple[str, str | None]]:
        return [(r.item.id, r.steer_owner) for r in self._queue.values()
                if r.item.status is QueueStatus.CANCELLED and r.item.steered_into is not None
                and r.item.steered_applied_at is None]

    def set_steer_owner(self, item_id: str, owner: str) -> None:
        """For tests: pretend another process steered the row."""
        self._queue[item_id].steer_owner = owner


def _conforms(store: MemoryStore) -> StorePort:
    return store  # mypy checks the port is implemented in full
