"""The core's front door for long-lived front ends (the language server): sessions,
generations in flight, cancel and status. Steering (`agent_steering`), the follow-up queue
(`agent_queue`) and compaction or handoff on request (`agent_context`) are objects of their
own; the Agent keeps their entry points so a front end has one thing to talk to.
Knows nothing of LSP.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from lsp_agent._startup import memory
from lsp_agent.core.agent_context import ContextRequests
from lsp_agent.core.agent_queue import FollowUps
from lsp_agent.core.agent_results import QueueSteerResult, SessionPage, SessionSummary, Started, Status
from lsp_agent.core.agent_steering import Corrections
from lsp_agent.core.attachments import AttachmentRefused, prompt_with_attachments
from lsp_agent.core.errors import AgentError, AgentErrorKind, conflict, invalid, not_found
from lsp_agent.core.lease import SessionLeases
from lsp_agent.core.loop import Generation
from lsp_agent.core.queue import Queue
from lsp_agent.core.session import AgentSession, Environment, ModelChoice
from lsp_agent.core.steering import AdmissionHook, SteeringLimits
from lsp_agent.core.storage import RowChanged
from lsp_agent.domain.events import RunFinish, SinkEvent, VerificationStatus
from lsp_agent.domain.verification import derive

__all__ = ["Agent", "AgentError", "ModelChoice", "QueueSteerResult", "SessionPage", "SessionSummary", "Started",
           "Status"]

log = logging.getLogger(__name__)

MAX_PROMPT_CHARS = 200_000


class Agent:
    def __init__(self, env: Environment, admission_hook: AdmissionHook | None = None) -> None:
        #: the stored rows; `follow_ups` works them for the front ends (announcing, auto-starting)
        # The limits are looked up on each use: `reconfigure` may replace the settings.
        self.queue = Queue(env.store, lambda: self.env.settings.limits.steer_chars)
        self.corrections = Corrections(self.queue, env.store, admission_hook, self.session, self._emit,
                                       self._steering_limits)
        self.steering = self.corrections.steering
        self.follow_ups = FollowUps(self.queue, self.steering, self.session, self._launch, self._emit,
                                    MAX_PROMPT_CHARS)
        self.context_requests = ContextRequests(lambda: self.env, self.session, self._launch, self.follow_ups)
        self.env = replace(env, steering=self.steering)
        #: loaded sessions, least recently used first; idle ones beyond `limits.sessions_in_memory` are dropped
        self.sessions: OrderedDict[str, AgentSession] = OrderedDict()
        self.tasks: dict[str, asyncio.Task[RunFinish]] = {}
        #: one writer per session across processes (the setting is looked up on each use)
        self.leases = SessionLeases(env.store, lambda: self.env.settings.limits.session_lease_s)
        self._recheck: asyncio.TimerHandle | None = None
        self._recover(announce=False)

    def _recover(self, announce: bool = True) -> None:
        """Requeue what dead processes left half-steered. What a process in another pid namespace left
        is looked at again when its lease lapses (a restarted container cannot see its predecessor)."""
        self._recheck = None
        retry = self.corrections.recover(self.leases, announce)
        if retry is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # built outside an event loop (a test): the next start recovers
            return
        self._recheck = loop.call_later(retry + 0.05, self._recover)

    def reconfigure(self, **changes: Any) -> None:
        """New settings/provider apply to generations started from now on."""
        self.env = replace(self.env, **changes)
        for session in self.sessions.values():
            if session.active is None:
                session.env = self.env

    def _steering_limits(self) -> SteeringLimits:
        limits = self.env.settings.limits
        return SteeringLimits(chars=limits.steer_chars, pending=limits.steer_pending, receipts=limits.steer_receipts)

    def _emit(self, event: SinkEvent) -> None:
        self.env.sink.emit(event)  # looked up each time: reconfigure may replace the environment

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
        """Stored sessions, most recently updated first, with whether each runs now — here, or in another
        lsp-agent process (another editor window, a CLI run), which holds the session's lease meanwhile."""
        elsewhere = self.leases.held_elsewhere()
        out = []
        for record in self.env.store.sessions(limit):
            live = self.sessions.get(record.id)
            active = live.active if live is not None else None
            if active is not None:
                out.append(SessionSummary(record, "running", active.id))
            elif record.id in elsewhere:
                out.append(SessionSummary(record, "running", None, elsewhere[record.id]))
            else:
                out.append(SessionSummary(record, "idle", None))
        return out

    def session_page(self, session_id: str, after: str | None = None, limit: int = 100) -> SessionPage:
        """Up to `limit` stored messages after message `after` (from the start when None)."""
        # Loaded (and so repaired and bounded) first: the pages show the history a run would see.
        bounded = self.session(session_id).bounded_on_load
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
        page = [bounded.get(message.id, message) for message in page[:limit]]
        return SessionPage(record, page, page[-1].id if more and page else None)

    # --- generations ------------------------------------------------------------------------------

    def start(self, prompt: str, session_id: str | None = None, max_steps: int | None = None,
              model: ModelChoice | None = None, attachments: list[Any] | None = None) -> Started:
        """Start a generation. `model` overrides the model (settings, provider, facts) for this run only;
        the Agent's own environment is unchanged. `attachments` go after the prompt exactly as a queued
        message's do, so the stored prompt (and a replay of it) shows them."""
        if not prompt.strip():
            raise invalid("the prompt is empty")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise invalid(f"the prompt is {len(prompt)} characters; at most {MAX_PROMPT_CHARS}")
        try:  # before any session exists: a refused attachment starts nothing
            sent = prompt_with_attachments(prompt, attachments or [], MAX_PROMPT_CHARS)
        except AttachmentRefused as exc:
            raise invalid(f"not started: {exc}", AgentErrorKind.ATTACHMENT_REFUSED) from None
        session = self.session(session_id, title=prompt[:80])
        return self._launch(session, sent, max_steps, model=model)

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
        return Started(session.id, generation.id, generation.prompt_id)

    async def _run(self, generation: Generation) -> RunFinish:
        session = generation.session
        try:
            return await generation.run()
        except Exception:
            log.exception("generation %s crashed", generation.id)
            raise
        finally:
            self.tasks.pop(generation.id, None)
            self.follow_ups.after_generation(session, generation.stop_reason)
            self._evict()  # it may be idle now
            memory.release_soon()  # the run's request bodies and stream buffers are garbage now
            if generation.handoff_to is not None:
                self.context_requests.continue_handoff(generation.handoff_to, session)

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
        if self._recheck is not None:
            self._recheck.cancel()
        for session in self.sessions.values():
            if session.active is not None:
                session.active.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=10)
        if self.env.checkpoints is not None:
            await self.env.checkpoints.close()
