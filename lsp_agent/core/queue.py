"""The follow-up queue: messages typed while a generation runs, persisted, FIFO per session.

Every status change is one guarded write (`UPDATE … WHERE status IN (…)`); a write that
finds the row changed under it is a 409 conflict. Nothing a user typed is dropped: a row
is `queued`/`paused` (visible, waiting), `sent` (it became a generation's prompt, its
attachments after its text), `failed` (it could not be sent as it is: `error` says why), or
`cancelled` — by the user, or because it was steered into a running generation
(`steeredInto`), in which case `steeredAppliedAt` is stamped in the same transaction as
the message it became. A steered row whose correction is rejected goes back to the queue.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lsp_agent.core.errors import AgentError, AgentErrorKind, conflict, invalid, not_found
from lsp_agent.core.process_identity import process_owner
from lsp_agent.core.queue_model import WAITING, QueueItem, QueueStatus
from lsp_agent.core.storage import QueueStore
from lsp_agent.domain import ids

__all__ = ["MAX_STEER_CHARS", "WAITING", "Queue", "QueueItem", "QueueStatus", "process_owner", "steer_refusal"]

#: The default of `limits.steer_chars`: longest follow-up agent/queue/steer admits.
MAX_STEER_CHARS = 16_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def steer_refusal(item: QueueItem, max_chars: int = MAX_STEER_CHARS) -> AgentError | None:
    """Why `item` cannot be steered into a running generation, or None when it can (`max_chars`:
    `limits.steer_chars`). The one statement of the rule: agent/queue/steer enforces it, and the
    protocol shows it on every row."""
    if item.steered_into is not None:  # another client steered it first
        return conflict(f"queued item {item.id} was already steered into generation {item.steered_into}")
    if item.status not in WAITING:
        problem = f"queued item {item.id} is {item.status.value}; only waiting rows can be steered"
    elif item.kind != "follow_up":
        problem = f"only text follow-ups can be steered, not {item.kind!r}"
    elif item.attachments:
        problem = "a follow-up with attachments cannot be steered; send it as a new message"
    elif len(item.text.strip()) > max_chars:
        problem = f"the text is {len(item.text.strip())} characters; at most {max_chars} can be steered"
    else:
        return None
    return invalid(problem, AgentErrorKind.NOT_STEERABLE)


class Queue:
    def __init__(self, store: QueueStore, steer_chars: Callable[[], int] = lambda: MAX_STEER_CHARS) -> None:
        self.store = store
        #: `limits.steer_chars`, asked each time: the settings may be reconfigured while the queue lives
        self.steer_chars = steer_chars

    # --- reads ----------------------------------------------------------------------------------

    def get(self, item_id: str) -> QueueItem:
        item = self.store.queue_get(item_id)
        if item is None:
            raise not_found(f"no queued item {item_id!r}")
        return item

    def items(self, session_id: str, include_settled: bool = True) -> list[QueueItem]:
        """Waiting rows in FIFO order first, then the history (settled rows, newest first)."""
        waiting = self.store.queue_waiting(session_id)
        return waiting + self.store.queue_settled(session_id) if include_settled else waiting

    def next_queued(self, session_id: str) -> QueueItem | None:
        return self.store.queue_next(session_id)

    # --- writes ---------------------------------------------------------------------------------

    def add(self, session_id: str, text: str, kind: str = "follow_up", attachments: list[Any] | None = None,
            paused: bool = False) -> QueueItem:
        if not text.strip() and not attachments:
            raise invalid("a queued message needs text or attachments")
        ts = now_ms()
        return self.store.queue_add(QueueItem(
            id=ids.new_id("que"), session_id=session_id, kind=kind, text=text, attachments=attachments or [],
            status=QueueStatus.PAUSED if paused else QueueStatus.QUEUED, position=0, created_at=ts, updated_at=ts))

    def _guarded(self, item_id: str, changes: dict[str, Any], allowed: tuple[QueueStatus, ...],
                 expected_updated_at: int | None = None, to_front: bool = False) -> QueueItem:
        """One guarded write; a row in another status (or changed since read) is a conflict."""
        if not self.store.queue_update(item_id, changes, allowed, expected_updated_at, to_front):
            current = self.get(item_id)  # raises 404 when missing
            raise conflict(f"queued item {item_id} changed: it is {current.status.value} now "
                           f"(updated {current.updated_at}); refresh and retry")
        return self.get(item_id)

    def cancel(self, item_id: str) -> QueueItem:
        return self._guarded(item_id, {"status": QueueStatus.CANCELLED, "cancelled_at": now_ms()}, WAITING)

    def edit(self, item_id: str, text: str, expected_updated_at: int) -> QueueItem:
        if not text.strip():
            raise invalid("the new text is empty")
        return self._guarded(item_id, {"text": text}, WAITING, expected_updated_at)

    def send_now(self, item_id: str) -> QueueItem:
        """Move to the front (and un-pause); it still waits for the running generation to end."""
        self.get(item_id)
        return self._guarded(item_id, {"status": QueueStatus.QUEUED}, WAITING, to_front=True)

    def fail(self, item_id: str, reason: str) -> QueueItem:
        """A queued row that cannot be sent as it is: settled `failed`, its text and attachments kept."""
        return self._guarded(item_id, {"status": QueueStatus.FAILED, "error": reason}, (QueueStatus.QUEUED,))

    def pause_waiting(self, session_id: str) -> int:
        """After an interrupt, nothing starts by itself."""
        return self.store.queue_pause_waiting(session_id)

    # --- steering -------------------------------------------------------------------------------

    def check_steerable(self, item: QueueItem) -> None:
        refusal = steer_refusal(item, self.steer_chars())
        if refusal is not None:
            raise refusal

    def is_steerable(self, item: QueueItem) -> bool:
        try:
            self.check_steerable(item)
        except Exception:
            return False
        return True

    def mark_steered(self, item: QueueItem, generation: str) -> QueueItem:
        ts = now_ms()
        return self._guarded(item.id, {"status": QueueStatus.CANCELLED, "steered_into": generation,
                                       "steered_at": ts, "steer_owner": process_owner(), "cancelled_at": ts},
                             WAITING, item.updated_at)

    def requeue_steered(self, item_id: str, paused: bool) -> None:
        """A steered correction that did not land goes back to the queue, at its old place."""
        self.store.queue_requeue_steered(item_id, QueueStatus.PAUSED if paused else QueueStatus.QUEUED)

    def orphaned_steers(self) -> list[tuple[str, str | None]]:
        """(row, steering process) of rows steered into a generation whose correction never applied."""
        return self.store.queue_orphaned_steers()

    def recover(self, owner_alive: Callable[[str | None], bool]) -> list[str]:
        """On start: rows steered by a process that died before the correction applied are requeued
        (`owner_alive`: core/lease.py's check of the process that steered them)."""
        recovered = [item_id for item_id, owner in self.store.queue_orphaned_steers() if not owner_alive(owner)]
        for item_id in recovered:
            self.requeue_steered(item_id, paused=False)
        return recovered
