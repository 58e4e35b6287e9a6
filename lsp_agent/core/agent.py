"""The core's front door for long-lived front ends (the language server): sessions,
generations in flight, steering, the follow-up queue, cancel and status. Knows nothing of LSP.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Literal

from lsp_agent._startup import memory
from lsp_agent.context.compaction import touched_files
from lsp_agent.context.handoff import CONTINUE_PROMPT, prepare_handoff
from lsp_agent.context.manager import CompactionOutcome, ContextManager
from lsp_agent.core.errors import AgentError, AgentErrorKind, conflict, invalid, not_found
from lsp_agent.core.loop import Generation, ask_once, make_request, resolve_for
from lsp_agent.core.queue import Queue, QueueItem, QueueStatus
from lsp_agent.core.session import AgentSession, Environment, ModelChoice
from lsp_agent.core.steering import AdmissionHook, Receipt, ReceiptStatus, Steering, SteeringView
from lsp_agent.core.storage import RowChanged, SessionRecord
from lsp_agent.domain.events import QueueChangedEvent, ReceiptEvent, RunFinish, StopReason, VerificationStatus
from lsp_agent.domain.history import Message
from lsp_agent.domain.ports import AssistantReply, ModelRequest, ProviderError
from lsp_agent.domain.verification import derive

__all__ = ["Agent", "AgentError", "ModelChoice", "QueueSteerResult", "SessionPage", "SessionSummary", "Started",
           "Status"]

log = logging.getLogger(__name__)

MAX_PROMPT_CHARS = 200_000
#: clientID prefix of corrections that come from queue rows (`queue_<taskID>`)
QUEUE_CLIENT = "queue_"
#: Stop reasons after which the next queued follow-up starts by itself; after the others
#: (an interrupt, an error, a loop) waiting rows are paused and wait for the user.
CONTINUE_AFTER = (StopReason.FINAL, StopReason.STEP_LIMIT)


@dataclass(frozen=True)
class Started:
    session_id: str
    generation: str


@dataclass(frozen=True)
class Status:
    state: Literal["idle", "running"]
    generation: str | None
    verification: VerificationStatus
    step: int
    max_steps: int | None


@dataclass(frozen=True)
class SessionSummary:
    record: SessionRecord
    state: Literal["idle", "running"]
    generation: str | None


@dataclass(frozen=True)
class SessionPage:
    record: SessionRecord
    messages: list[Message]
    #: the last message's ID when more follow (pass it as `after`)
    next: str | None


@dataclass(frozen=True)
class QueueSteerResult:
    item: QueueItem
    receipt: Receipt | None
    reason: str | None = None
    started: Started | None = None


class Agent:
    def __init__(self, env: Environment, admission_hook: AdmissionHook | None = None) -> None:
        self.queue = Queue(env.store)
        self.steering = Steering(self.queue, env.store, admission_hook, self._receipt_changed)
        self.env = replace(env, steering=self.steering)
        #: loaded sessions, least recently used first; idle ones beyond `limits.sessions_in_memory` are dropped
        self.sessions: OrderedDict[str, AgentSession] = OrderedDict()
        self.tasks: dict[str, asyncio.Task[RunFinish]] = {}
        for correction in self.steering.recover():
            log.info("correction %s of session %s was accepted but never applied (the process died): queued",
                     correction.client_id, correction.session_id)
        for item_id in self.queue.recover():
            log.info("requeued %s: the process that steered it died before it applied", item_id)

    def reconfigure(self, **changes: Any) -> None:
        """New settings/provider apply to generations started from now on."""
        self.env = replace(self.env, **changes)
        for session in self.sessions.values():
            if session.active is None:
                session.env = self.env

    # --- sessions and generations ---------------------------------------------------------------

    def session(self, session_id: str | None, title: str = "") -> AgentSession:
        if session_id is None:
            session = AgentSession(self.env, title=title)
        elif session_id in self.sessions:
            self.sessions.move_to_end(session_id)
            return self.sessions[session_id]
        else:
            try:
                session = AgentSession(self.env, session_id)
            except KeyError:
                raise not_found(f"no session {session_id!r} in this workspace",
                                AgentErrorKind.UNKNOWN_SESSION) from None
        self.sessions[session.id] = session
        self._evict(keep=session.id)
        return session

    def _evict(self, keep: str | None = None) -> None:
        """Bounded memory: drop the least recently used idle sessions beyond the setting. Their record is
        in the store and reloads on demand; a session that runs, compacts or holds unsent notes stays."""
        excess = len(self.sessions) - self.env.settings.limits.sessions_in_memory
        if excess <= 0:
            return
        idle = [sid for sid, s in self.sessions.items()
                if sid != keep and s.active is None and not s.context.compacting and not s.pending_notes]
        for sid in idle[:excess]:
            del self.sessions[sid]
        if idle[:excess]:
            self.env.store.release_memory()
            memory.release_soon()  # the dropped histories' pages go back to the OS

    # --- reading sessions (live or stored) -------------------------------------------------------

    def knows_session(self, session_id: str) -> bool:
        return session_id in self.sessions or self.env.store.session(session_id) is not None

    def list_sessions(self, limit: int = 100) -> list[SessionSummary]:
        """Stored sessions, most recently updated first, with whether each runs now."""
        out = []
        for record in self.env.store.sessions(limit):
            live = self.sessions.get(record.id)
            active = live.active if live is not None else None
            out.append(SessionSummary(record, "running" if active else "idle", active.id if active else None))
        return out

    def session_page(self, session_id: str, after: str | None = None, limit: int = 100) -> SessionPage:
        """Up to `limit` stored messages after message `after` (from the start when None)."""
        self.session(session_id)  # loaded (and so repaired) first: the pages show the history a run would see
        record = self.env.store.session(session_id)
        if record is None:
            raise not_found(f"no session {session_id!r} in this workspace", AgentErrorKind.UNKNOWN_SESSION)
        seq = 0
        if after is not None:
            found = self.env.store.message_seq(after)
            if found is None:
                raise not_found(f"no message {after!r}", AgentErrorKind.UNKNOWN_MESSAGE)
            seq = found
        page = self.env.store.messages(session_id, after_seq=seq, limit=limit + 1)
        more = len(page) > limit
        page = page[:limit]
        return SessionPage(record, page, page[-1].id if more and page else None)

    # --- generations ------------------------------------------------------------------------------

    def start(self, prompt: str, session_id: str | None = None, max_steps: int | None = None,
              model: ModelChoice | None = None) -> Started:
        """Start a generation. `model` overrides the model (settings, provider, facts) for this run only;
        the Agent's own environment is unchanged."""
        if not prompt.strip():
            raise invalid("the prompt is empty")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise invalid(f"the prompt is {len(prompt)} characters; at most {MAX_PROMPT_CHARS}")
        session = self.session(session_id, title=prompt[:80])
        return self._launch(session, prompt, max_steps, model=model)

    def _launch(self, session: AgentSession, prompt: str, max_steps: int | None,
                claim_item: str | None = None, model: ModelChoice | None = None) -> Started:
        if session.active is not None:
            raise conflict(f"session {session.id} is running generation {session.active.id}; "
                           "queue a follow-up or steer it", AgentErrorKind.BUSY)
        if session.context.compacting:
            raise conflict(f"session {session.id} is being compacted; start the run when it finishes",
                           AgentErrorKind.BUSY)
        session.env = self.env if model is None else replace(self.env, settings=model.settings,
                                                             provider=model.provider, model=model.facts)
        generation = Generation(session, max_steps)
        try:  # synchronous: the prompt is stored and the session busy now
            generation.begin(prompt, claim_item)
        except RowChanged as exc:
            raise conflict(str(exc)) from None
        self.tasks[generation.id] = asyncio.ensure_future(self._run(generation))
        return Started(session.id, generation.id)

    async def _run(self, generation: Generation) -> RunFinish:
        session = generation.session
        try:
            return await generation.run()
        except Exception:
            log.exception("generation %s crashed", generation.id)
            raise
        finally:
            self.tasks.pop(generation.id, None)
            self._after_generation(session, generation.stop_reason)
            memory.release_soon()  # the run's request bodies and stream buffers are garbage now
            if generation.handoff_to is not None:
                self._continue_handoff(generation.handoff_to, session)

    def _after_generation(self, session: AgentSession, reason: StopReason | None) -> None:
        if reason in CONTINUE_AFTER:
            self._start_next(session)
        elif reason is not None and self.queue.pause_waiting(session.id):
            self._queue_changed(session.id)
        self._evict()  # it may be idle now

    def _start_next(self, session: AgentSession) -> Started | None:
        """The next queued follow-up becomes the next generation (its row is marked sent in the
        same transaction as the prompt message, so it can never be sent twice)."""
        if session.active is not None or session.context.compacting:
            return None  # a compaction in flight starts it when done
        item = self.queue.next_queued(session.id)
        if item is None:
            return None
        started = self._launch(session, item.text, None, item.id)  # a row changed under us raises 409
        self._queue_changed(session.id)
        return started

    async def wait(self, generation_id: str) -> RunFinish | None:
        task = self.tasks.get(generation_id)
        return await task if task is not None else None

    def cancel(self, session_id: str) -> str | None:
        session = self.sessions.get(session_id)
        if session is None or session.active is None:
            return None
        session.active.cancel()
        return session.active.id

    def status(self, session_id: str | None) -> Status:
        session = self.sessions.get(session_id) if session_id else None
        if session_id and session is None:
            session = self.session(session_id)
        if session is None:
            session = next((s for s in self.sessions.values() if s.active is not None), None)
        if session is None:
            return Status("idle", None, VerificationStatus.NOT_RUN, 0, None)
        check = derive(session.history).status
        active = session.active
        if active is None:
            return Status("idle", None, check, 0, None)
        return Status("running", active.id, check, active.steps, active.max_steps)

    async def shutdown(self) -> None:
        for session in self.sessions.values():
            if session.active is not None:
                session.active.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=10)

    # --- context: compaction and handoff ---------------------------------------------------------

    async def _ask(self, request: ModelRequest, purpose: str) -> AssistantReply:
        return await ask_once(self.env, request)

    def _base_request(self, session: AgentSession) -> ModelRequest:
        return make_request(self.env, resolve_for(self.env, session.history), session.context_view())

    async def compact(self, session_id: str) -> CompactionOutcome:
        """Compact now (idle session) or at the running generation's next step boundary. One compaction
        per session at a time: a second request while one runs is a 409."""
        session = self.session(session_id)
        if session.context.compacting:
            raise conflict(f"a compaction of session {session.id} is already running",
                           AgentErrorKind.COMPACTION_IN_PROGRESS)
        if session.active is not None:
            session.context.compact_requested = True
            return CompactionOutcome("in_progress", "the running generation compacts before its next model request")
        session.env = self.env
        try:
            return await ContextManager(session, self._ask).compact(self._base_request(session), "manual")
        except ProviderError as exc:
            raise AgentError(AgentErrorKind.PROVIDER_ERROR, f"the summary request failed: {exc.describe()}") from None
        finally:
            if self._start_next(session) is not None:  # a follow-up queued while it compacted
                self._queue_changed(session.id)

    async def handoff(self, session_id: str, reason: str = "requested by the user") -> Started:
        """Start a fresh session seeded with a checked handoff note (the six items), linked to this one."""
        session = self.session(session_id)
        if session.active is not None or session.context.compacting:
            what = f"running generation {session.active.id}" if session.active else "being compacted"
            raise conflict(f"session {session.id} is {what}; cancel it or wait before handing off", AgentErrorKind.BUSY)
        session.env = self.env
        try:
            handoff = await prepare_handoff(session, self._base_request(session), self._ask, reason)
        except ProviderError as exc:
            raise AgentError(AgentErrorKind.PROVIDER_ERROR,
                             f"the handoff note request failed: {exc.describe()}") from None
        return self._start_handoff(handoff.session_id, handoff.files)

    def _start_handoff(self, session_id: str, files: list[str]) -> Started:
        fresh = self.session(session_id)
        fresh.files.reread_required.update(files)
        return self._launch(fresh, CONTINUE_PROMPT, None)

    def _continue_handoff(self, session_id: str, parent: AgentSession) -> None:
        """After an automatic handoff: the fresh session's generation starts by itself."""
        try:
            self._start_handoff(session_id, sorted(touched_files(parent.history)))
        except AgentError:
            log.exception("could not start the handoff session %s", session_id)

    # --- steering -------------------------------------------------------------------------------

    def steering_view(self, session_id: str) -> SteeringView:
        return self.steering.view(self.session(session_id))

    async def steer(self, session_id: str, expected_generation: str, client_id: str, text: str) -> Receipt:
        return await self.steering.steer(self.session(session_id), expected_generation, client_id, text)

    def _receipt_changed(self, receipt: Receipt) -> None:
        self.env.sink.emit(ReceiptEvent(session_id=receipt.session_id, receipt=receipt.wire()))
        if receipt.client_id.startswith(QUEUE_CLIENT) and receipt.status is not ReceiptStatus.ACCEPTED:
            self._queue_changed(receipt.session_id)  # its row was stamped applied, or is back in the queue

    # --- the follow-up queue --------------------------------------------------------------------

    def _queue_changed(self, session_id: str) -> None:
        items = [i.wire() for i in self.queue.items(session_id)]
        self.env.sink.emit(QueueChangedEvent(session_id=session_id, items=items))

    def queue_items(self, session_id: str) -> list[QueueItem]:
        self.session(session_id)
        return self.queue.items(session_id)

    def queue_add(self, session_id: str, text: str, kind: str = "follow_up",
                  attachments: list[Any] | None = None) -> tuple[QueueItem, Started | None]:
        """Queue a message; an idle session with nothing queued ahead starts it right away."""
        session = self.session(session_id)
        item = self.queue.add(session.id, text, kind, attachments)
        started = self._start_next(session) if session.active is None else None
        self._queue_changed(session.id)
        return self.queue.get(item.id), started

    def queue_cancel(self, item_id: str) -> QueueItem:
        item = self.queue.cancel(item_id)
        self._queue_changed(item.session_id)
        return item

    def queue_edit(self, item_id: str, text: str, expected_updated_at: int) -> QueueItem:
        item = self.queue.edit(item_id, text, expected_updated_at)
        self._queue_changed(item.session_id)
        return item

    def queue_send_now(self, item_id: str) -> tuple[QueueItem, Started | None]:
        """Front of the queue; it still waits for the running generation to end."""
        item = self.queue.send_now(item_id)
        session = self.session(item.session_id)
        started = self._start_next(session) if session.active is None else None
        self._queue_changed(item.session_id)
        return self.queue.get(item_id), started

    async def queue_steer(self, item_id: str) -> QueueSteerResult:
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
            self._queue_changed(item.session_id)
            raise
        if receipt.status is ReceiptStatus.REJECTED:
            self.queue.requeue_steered(item.id, paused=False)
        self._queue_changed(item.session_id)
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
                moved, started = self.queue_send_now(item.id)
                results.append(QueueSteerResult(moved, None, "generation_not_active", started))
                break
            result = await self.queue_steer(item.id)
            results.append(result)
            if result.receipt is None or result.receipt.status is ReceiptStatus.REJECTED:
                if result.item.status in (QueueStatus.QUEUED, QueueStatus.PAUSED) and session.active is None:
                    moved, started = self.queue_send_now(item.id)
                    results[-1] = QueueSteerResult(moved, result.receipt, result.reason, started)
                break
        return results
