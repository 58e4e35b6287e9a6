"""Steering as the front ends work it: corrections addressed to a session's running generation,
its receipts, and each receipt change announced (`ReceiptEvent`). Admission, the write-ahead of
accepted corrections and applying them at a step boundary are `core.steering`'s."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsp_agent.core.agent_queue import QUEUE_CLIENT, queue_changed
from lsp_agent.core.lease import SessionLeases
from lsp_agent.core.queue import Queue
from lsp_agent.core.steering import AdmissionHook, Receipt, ReceiptStatus, Steering, SteeringLimits, SteeringView
from lsp_agent.core.storage import SessionStore
from lsp_agent.domain.events import ReceiptEvent, SinkEvent

if TYPE_CHECKING:
    from lsp_agent.core.session import AgentSession

__all__ = ["Corrections"]

log = logging.getLogger(__name__)


class Corrections:
    def __init__(self, queue: Queue, store: SessionStore, admission_hook: AdmissionHook | None,
                 session: Callable[[str], AgentSession], emit: Callable[[SinkEvent], None],
                 limits: Callable[[], SteeringLimits] = SteeringLimits) -> None:
        self.queue = queue
        self.session = session
        self.emit = emit
        self.steering = Steering(queue, store, admission_hook, self._receipt_changed, limits)

    def recover(self, leases: SessionLeases, announce: bool = False) -> float | None:
        """After a crash: corrections accepted but never applied, and rows steered but never
        applied, go back to the queue (nothing a user typed is lost). Those of a process that cannot
        be looked at from here (another pid namespace: a container restarted) wait until its lease
        lapses: the answer is when to ask again, in seconds (None: nothing waits)."""
        changed: set[str] = set()
        for correction in self.steering.recover(leases.owner_alive):
            log.info("correction %s of session %s was accepted but never applied (the process died): queued",
                     correction.client_id, correction.session_id)
            changed.add(correction.session_id)
        for item_id in self.queue.recover(leases.owner_alive):
            log.info("requeued %s: the process that steered it died before it applied", item_id)
            changed.add(self.queue.get(item_id).session_id)
        if announce:  # a late recovery: the front ends' queue views are out of date
            for session_id in sorted(changed):
                self.emit(queue_changed(self.queue, session_id))
        owners: set[str | None] = {c.owner for c in self.steering.store.pending_corrections()}
        owners.update(owner for _, owner in self.queue.orphaned_steers())
        waits = [wait for owner in owners if (wait := leases.lapses_in(owner)) is not None]
        return min(waits) if waits else None

    def view(self, session_id: str) -> SteeringView:
        return self.steering.view(self.session(session_id))

    async def steer(self, session_id: str, expected_generation: str, client_id: str, text: str) -> Receipt:
        return await self.steering.steer(self.session(session_id), expected_generation, client_id, text)

    def _receipt_changed(self, receipt: Receipt) -> None:
        self.emit(ReceiptEvent(session_id=receipt.session_id, receipt=receipt.wire()))
        if receipt.client_id.startswith(QUEUE_CLIENT) and receipt.status is not ReceiptStatus.ACCEPTED:
            # its row was stamped applied, or is back in the queue
            self.emit(queue_changed(self.queue, receipt.session_id))
