"""Steering a running generation: corrections land as user messages at the next step
boundary, each with a receipt (`accepted` → `applied` | `rejected`).

A correction is bound to the generation it was addressed to. The generation is checked
when the correction is admitted, again after the admission hook, and once more inside
the store transaction that writes the message, so a successor generation can never
commit its predecessor's text. An accepted correction is written ahead (the store's pending
corrections) before its receipt says `accepted`; on restart one whose generation is gone is
surfaced as a queue row (`recover`). Receipts live in memory (bounded); they are not durable.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from lsp_agent.core.errors import AgentError, AgentErrorKind, conflict, invalid
from lsp_agent.core.process_identity import process_owner
from lsp_agent.core.queue import MAX_STEER_CHARS, Queue, QueueItem, QueueStatus, now_ms
from lsp_agent.core.storage import (
    CorrectionExists,
    PendingCorrection,
    RowChanged,
    SessionStore,
    StaleGeneration,
    StoreUnavailable,
)
from lsp_agent.domain import ids
from lsp_agent.domain.history import Message, Role, TextPart
from lsp_agent.domain.wire import WireModel

log = logging.getLogger(__name__)

CLIENT_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
#: The defaults of `limits.steer_receipts` and `limits.steer_pending`.
MAX_RECEIPTS = 256
MAX_PENDING = 32
MAX_SESSIONS = 256


@dataclass(frozen=True)
class SteeringLimits:
    """The configured bounds (`limits.steer_*`), read once per correction."""

    chars: int = MAX_STEER_CHARS
    pending: int = MAX_PENDING
    receipts: int = MAX_RECEIPTS



class _Running(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def ended(self) -> bool: ...


class SteeredSession(Protocol):
    """What steering needs of a session: which generation runs in it, and where a correction is
    written (core/session.py's `AgentSession`, which holds a `Steering`)."""

    @property
    def id(self) -> str: ...

    @property
    def active(self) -> _Running | None: ...

    def record_correction(self, correction: PendingCorrection, message: Message) -> None: ...


class ReceiptStatus(StrEnum):
    ACCEPTED = "accepted"
    APPLIED = "applied"
    REJECTED = "rejected"


class RejectReason(StrEnum):
    GENERATION_NOT_ACTIVE = "generation_not_active"
    STALE_GENERATION = "stale_generation"
    ADMISSION_REJECTED = "admission_rejected"
    GENERATION_ENDED = "generation_ended_before_application"
    APPLICATION_REJECTED = "application_rejected"
    TOO_LONG = "too_long"
    TOO_MANY_PENDING = "too_many_pending"


class Receipt(WireModel):
    status: ReceiptStatus
    session_id: str
    generation: str | None
    client_id: str
    message_id: str | None = None
    reason: RejectReason | None = None
    detail: str | None = None


class SteeringView(WireModel):
    generation: str | None
    receipts: list[Receipt]


#: (session_id, generation, text) → a veto reason, or None to admit.
AdmissionHook = Callable[[str, str, str], Awaitable[str | None]]
ReceiptListener = Callable[[Receipt], None]


@dataclass
class _SessionState:
    receipts: OrderedDict[str, tuple[str, Receipt]] = field(default_factory=OrderedDict)
    pending: list[PendingCorrection] = field(default_factory=list)


def request_digest(session_id: str, generation: str, client_id: str, text: str) -> str:
    payload = json.dumps([session_id, generation, client_id, text], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


class Steering:
    def __init__(self, queue: Queue, store: SessionStore, hook: AdmissionHook | None = None,
                 listener: ReceiptListener | None = None,
                 limits: Callable[[], SteeringLimits] = SteeringLimits) -> None:
        self.queue = queue
        self.store = store
        self.hook = hook
        self.listener = listener
        #: asked each time: the settings may be reconfigured while the server runs
        self.limits = limits
        self._sessions: OrderedDict[str, _SessionState] = OrderedDict()

    # --- bookkeeping ----------------------------------------------------------------------------

    def _state(self, session_id: str) -> _SessionState:
        state = self._sessions.get(session_id)
        if state is None:
            state = self._sessions[session_id] = _SessionState()
            self._evict_sessions()
        self._sessions.move_to_end(session_id)
        return state

    def _evict_sessions(self) -> None:
        for session_id in list(self._sessions):
            if len(self._sessions) <= MAX_SESSIONS:
                return
            if not self._sessions[session_id].pending:  # idle: only settled receipts to forget
                del self._sessions[session_id]

    def _record(self, state: _SessionState, digest: str, receipt: Receipt) -> Receipt:
        state.receipts[receipt.client_id] = (digest, receipt)
        state.receipts.move_to_end(receipt.client_id)
        while len(state.receipts) > self.limits().receipts:
            oldest = next((cid for cid, (_, r) in state.receipts.items() if r.status is not ReceiptStatus.ACCEPTED),
                          None)
            if oldest is None:
                break
            del state.receipts[oldest]
        if self.listener is not None:
            self.listener(receipt)
        return receipt

    def _settle(self, session_id: str, client_id: str, **changes: object) -> Receipt:
        state = self._state(session_id)
        digest, receipt = state.receipts[client_id]
        return self._record(state, digest, receipt.model_copy(update=changes))

    def view(self, session: SteeredSession) -> SteeringView:
        state = self._sessions.get(session.id)
        receipts = [r for _, r in state.receipts.values()] if state else []
        return SteeringView(generation=session.active.id if session.active else None, receipts=receipts)

    # --- admission ------------------------------------------------------------------------------

    async def steer(self, session: SteeredSession, expected_generation: str, client_id: str, text: str,
                    queue_item: str | None = None) -> Receipt:
        if not CLIENT_ID.fullmatch(client_id):
            raise invalid("clientID must be 1-100 characters of A-Z, a-z, 0-9, '_' or '-'")
        text = text.strip()
        if not text:
            raise invalid("the correction text is empty")
        digest = request_digest(session.id, expected_generation, client_id, text)
        state = self._state(session.id)
        known = state.receipts.get(client_id)
        if known is not None:
            if known[0] == digest:
                return known[1]  # an identical retry gets the same receipt
            raise conflict(f"clientID {client_id!r} was already used for a different correction",
                           AgentErrorKind.STEER_CONFLICT)

        def receipt(status: ReceiptStatus, reason: RejectReason | None = None, detail: str | None = None) -> Receipt:
            return self._record(state, digest, Receipt(status=status, session_id=session.id,
                                                       generation=expected_generation, client_id=client_id,
                                                       reason=reason, detail=detail))

        active = session.active
        limits = self.limits()
        if len(text) > limits.chars:
            return receipt(ReceiptStatus.REJECTED, RejectReason.TOO_LONG,
                           f"{len(text)} characters; at most {limits.chars}")
        if active is None or active.ended:
            return receipt(ReceiptStatus.REJECTED, RejectReason.GENERATION_NOT_ACTIVE)
        if active.id != expected_generation:
            return receipt(ReceiptStatus.REJECTED, RejectReason.STALE_GENERATION,
                           f"the running generation is {active.id}")
        if len(state.pending) >= limits.pending:
            return receipt(ReceiptStatus.REJECTED, RejectReason.TOO_MANY_PENDING, f"{limits.pending} are pending")
        correction = PendingCorrection(session_id=session.id, client_id=client_id, generation=expected_generation,
                                       text=text, queue_item=queue_item, owner=process_owner(), created_at=now_ms())
        # Written ahead: on disk before any receipt says accepted (a crash from here on loses nothing).
        try:
            self.store.save_correction(correction)
        except CorrectionExists:
            raise conflict(f"clientID {client_id!r} was already used for a correction still pending in this "
                           "session", AgentErrorKind.STEER_CONFLICT) from None
        accepted = receipt(ReceiptStatus.ACCEPTED)  # reserves the clientID while the hook runs
        if self.hook is not None:
            veto = await self.hook(session.id, expected_generation, text)
            refusal: dict[str, object] | None = None
            active = session.active
            if veto:
                refusal = {"reason": RejectReason.ADMISSION_REJECTED, "detail": veto}
            elif active is None or active.ended or active.id != expected_generation:
                refusal = {"reason": RejectReason.GENERATION_ENDED}
            elif len(state.pending) >= limits.pending:
                refusal = {"reason": RejectReason.TOO_MANY_PENDING}
            if refusal is not None:
                self.store.drop_correction(session.id, client_id)
                return self._settle(session.id, client_id, status=ReceiptStatus.REJECTED, **refusal)
        state.pending.append(correction)
        return accepted

    # --- at the step boundary and at the end ----------------------------------------------------

    def apply_pending(self, session: SteeredSession, generation: str) -> bool:
        """Write pending corrections as user messages (synchronously: no other coroutine can run
        between this decision and the generation's stop). True if any was applied."""
        state = self._sessions.get(session.id)
        if state is None or not state.pending:
            return False
        corrections, state.pending = state.pending, []
        applied = False
        for correction in corrections:
            message = correction_message(correction, generation)
            try:
                if correction.generation != generation:
                    raise StaleGeneration(f"the correction was for generation {correction.generation}")
                session.record_correction(correction, message)
            except (StaleGeneration, RowChanged, AgentError) as exc:
                self.store.drop_correction(session.id, correction.client_id)
                if correction.queue_item is not None:  # the row first, so listeners see it back
                    self.queue.requeue_steered(correction.queue_item, paused=False)
                self._settle(session.id, correction.client_id, status=ReceiptStatus.REJECTED,
                             reason=RejectReason.APPLICATION_REJECTED, detail=str(exc) or None)
                continue
            applied = True
            self._settle(session.id, correction.client_id, status=ReceiptStatus.APPLIED, message_id=message.id)
        return applied

    def end_generation(self, session: SteeredSession, generation: str, interrupted: bool) -> Callable[[], None]:
        """The generation is over: whatever is still pending is rejected; steered rows go back
        to the queue (paused after an interrupt, so nothing starts by itself). The rejections are
        settled on disk now but announced by the call returned, which the caller makes once it has
        told how the run ended: a client reads "the run ended before it applied" knowing how it ended."""
        state = self._sessions.get(session.id)
        if state is None:
            return lambda: None
        keep = [c for c in state.pending if c.generation != generation]
        ended = [c for c in state.pending if c.generation == generation]
        state.pending = keep
        for correction in ended:
            try:
                self.store.drop_correction(session.id, correction.client_id)
                if correction.queue_item is not None:
                    self.queue.requeue_steered(correction.queue_item, paused=interrupted)
            except StoreUnavailable as exc:
                # Still on disk, written ahead: the next start surfaces it as a queued row.
                log.warning("correction %s stays pending: %s", correction.client_id, exc.message)
        rejected = [correction.client_id for correction in ended]

        def announce() -> None:
            for client_id in rejected:
                self._settle(session.id, client_id, status=ReceiptStatus.REJECTED,
                             reason=RejectReason.GENERATION_ENDED)
        return announce

    def recover(self, owner_alive: Callable[[str | None], bool]) -> list[PendingCorrection]:
        """On start: corrections written ahead by a process that died before applying them (`owner_alive`:
        core/lease.py's check of the process that accepted them). Their generation is gone, so each
        becomes a queued row (or its own row goes back to the queue) in the same transaction that
        forgets it — never lost, never applied twice."""
        surfaced = []
        for correction in self.store.pending_corrections():
            if owner_alive(correction.owner):
                continue  # another live process still holds it
            ts = now_ms()
            item = QueueItem(id=correction.queue_item or ids.new_id("que"), session_id=correction.session_id,
                             kind="follow_up", text=correction.text, status=QueueStatus.QUEUED, position=0,
                             created_at=ts, updated_at=ts)
            self.store.surface_correction(correction, item)
            surfaced.append(correction)
        return surfaced


def correction_message(correction: PendingCorrection, generation: str) -> Message:
    """The user message a correction becomes (its metadata names the clientID and the queue row)."""
    return Message(role=Role.USER, generation=generation, parts=[TextPart(
        text=correction.text, metadata={"steer": {"clientID": correction.client_id,
                                                  "queueItem": correction.queue_item}})])
