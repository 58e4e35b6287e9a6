"""The follow-up queue as the front ends work it: add, edit, cancel, send now, steer a row into
the running generation, and the ctrl+s prefix rule. Every change is announced (`QueueChangedEvent`),
and the next waiting row starts by itself when its session is free. The rows themselves (statuses,
guarded writes, recovery after a crash) are `core.queue`'s."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsp_agent.core.agent_results import QueueSteerResult, Started
from lsp_agent.core.attachments import AttachmentRefused, prompt_with_attachments
from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.core.queue import Queue
from lsp_agent.core.queue_model import QueueItem, QueueStatus
from lsp_agent.core.steering import ReceiptStatus, Steering
from lsp_agent.core.storage import StoreUnavailable
from lsp_agent.domain.events import QueueChangedEvent, SinkEvent, StopReason

if TYPE_CHECKING:
    from lsp_agent.core.session import AgentSession

log = logging.getLogger(__name__)

__all__ = ["CONTINUE_AFTER", "QUEUE_CLIENT", "FollowUps", "queue_changed"]

#: clientID prefix of corrections that come from queue rows (`queue_<taskID>`)
QUEUE_CLIENT = "queue_"
#: Stop reasons after which the next queued follow-up starts by itself; after the others
#: (an interrupt, an error, a loop) waiting rows are paused and wait for the user.
CONTINUE_AFTER = (StopReason.FINAL, StopReason.STEP_LIMIT)

#: A loaded session by ID (an unknown one is a not-found AgentError).
SessionLookup = Callable[[str], "AgentSession"]
#: Starts a generation on an idle session: (session, prompt, max steps, the queue row it claims).
Launch = Callable[["AgentSession", str, int | None, str | None], Started]
Emit = Callable[[SinkEvent], None]


def queue_changed(queue: Queue, session_id: str) -> QueueChangedEvent:
    """The session's whole queue as it is now: front ends replace their list with it."""
    return QueueChangedEvent(session_id=session_id, items=[i.wire() for i in queue.items(session_id)])


class FollowUps:
    def __init__(self, queue: Queue, steering: Steering, session: SessionLookup, launch: Launch,
                 emit: Emit, max_prompt_chars: int) -> None:
        self.max_prompt_chars = max_prompt_chars
        self.queue = queue
        self.steering = steering
        self.session = session
        self.launch = launch
        self.emit = emit

    def changed(self, session_id: str) -> None:
        self.emit(queue_changed(self.queue, session_id))

    def items(self, session_id: str) -> list[QueueItem]:
        self.session(session_id)
        return self.queue.items(session_id)

    def add(self, session_id: str, text: str, kind: str = "follow_up",
            attachments: list[Any] | None = None) -> tuple[QueueItem, Started | None]:
        """Queue a message; an idle session with nothing queued ahead starts it right away."""
        session = self.session(session_id)
        item = self.queue.add(session.id, text, kind, attachments)
        started = self.start_next(session) if session.active is None else None
        self.changed(session.id)
        return self.queue.get(item.id), started

    def cancel(self, item_id: str) -> QueueItem:
        item = self.queue.cancel(item_id)
        self.changed(item.session_id)
        return item

    def edit(self, item_id: str, text: str, expected_updated_at: int) -> QueueItem:
        item = self.queue.edit(item_id, text, expected_updated_at)
        self.changed(item.session_id)
        return item

    def send_now(self, item_id: str) -> tuple[QueueItem, Started | None]:
        """Front of the queue; it still waits for the running generation to end."""
        item = self.queue.send_now(item_id)
        session = self.session(item.session_id)
        started = self.start_next(session) if session.active is None else None
        self.changed(item.session_id)
        return self.queue.get(item_id), started

    async def steer(self, item_id: str) -> QueueSteerResult:
        """Turn a waiting row into a correction of the running generation; a rejected one goes back."""
        item = self.queue.get(item_id)
        self.queue.check_steerable(item)
        session = self.session(item.session_id)
        active = session.active
        if active is None or active.ended:
            return QueueSteerResult(item, None, "generation_not_active")
        self.queue.mark_steered(item, active.id)  # a lost race is a 409 here
        try:
            receipt = await self.steering.steer(session, active.id, f"{QUEUE_CLIENT}{item.id}", item.text, item.id)
        except AgentError:
            self.queue.requeue_steered(item.id, paused=False)
            self.changed(item.session_id)
            raise
        if receipt.status is ReceiptStatus.REJECTED:
            self.queue.requeue_steered(item.id, paused=False)
        self.changed(item.session_id)
        return QueueSteerResult(self.queue.get(item.id), receipt, receipt.reason.value if receipt.reason else None)

    async def steer_prefix(self, session_id: str) -> list[QueueSteerResult]:
        """The ctrl+s rule: steer the steerable FIFO prefix one row at a time and stop at the first
        row that cannot be steered; if the generation is gone, sendNow the first row and stop (sending
        every row to the front would reverse their order)."""
        session = self.session(session_id)
        results: list[QueueSteerResult] = []
        for item in self.queue.items(session.id, include_settled=False):
            if not self.queue.is_steerable(item):
                break
            active = session.active
            if active is None or active.ended:
                moved, started = self.send_now(item.id)
                results.append(QueueSteerResult(moved, None, "generation_not_active", started))
                break
            result = await self.steer(item.id)
            results.append(result)
            if result.receipt is None or result.receipt.status is ReceiptStatus.REJECTED:
                if result.item.status in (QueueStatus.QUEUED, QueueStatus.PAUSED) and session.active is None:
                    moved, started = self.send_now(item.id)
                    results[-1] = QueueSteerResult(moved, result.receipt, result.reason, started)
                break
        return results

    def start_next(self, session: AgentSession) -> Started | None:
        """The next queued follow-up becomes the next generation (its row is marked sent in the
        same transaction as the prompt message, so it can never be sent twice). A row that cannot be
        sent as it is (an attachment the model cannot take) is marked `failed` with the reason, kept
        visible, and the row after it is tried."""
        if session.active is not None or session.context.compacting:
            return None  # a compaction in flight starts it when done
        while (item := self.queue.next_queued(session.id)) is not None:
            try:
                prompt = prompt_with_attachments(item.text, item.attachments, self.max_prompt_chars)
            except AttachmentRefused as exc:
                with contextlib.suppress(AgentError):  # changed meanwhile (cancelled): it is not queued either
                    self.queue.fail(item.id, f"not sent: {exc}")
                self.changed(session.id)
                continue
            try:
                started = self.launch(session, prompt, None, item.id)  # a row changed under us raises 409
            except AgentError as exc:
                if exc.kind is not AgentErrorKind.SESSION_BUSY:
                    raise
                return None  # another process runs the session: the row waits, queued and visible
            self.changed(session.id)
            return started
        return None

    def after_generation(self, session: AgentSession, reason: StopReason | None) -> None:
        """A finished run hands over to the next row; one that was stopped pauses the waiting rows.
        A store that refuses either leaves the rows as they are (queued, on disk): the run's end was
        reported already, and the next request or restart finds them."""
        try:
            if reason in CONTINUE_AFTER:
                self.start_next(session)
            elif reason is not None and self.queue.pause_waiting(session.id):
                self.changed(session.id)
        except StoreUnavailable as exc:
            log.warning("session %s: the follow-up queue waits: %s", session.id, exc.message)
