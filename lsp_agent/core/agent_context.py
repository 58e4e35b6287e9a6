"""Context work a user asks for outside a run: compact a session now, or hand it off to a fresh
session seeded with a checked note. Each asks the model once with the session's own request
(instructions, tools, model view), so the summary sees what a run would see."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsp_agent.context.compaction import touched_files
from lsp_agent.context.handoff import CONTINUE_PROMPT, prepare_handoff
from lsp_agent.context.manager import CompactionOutcome, ContextManager
from lsp_agent.core.agent_queue import FollowUps, Launch, SessionLookup
from lsp_agent.core.agent_results import Started
from lsp_agent.core.errors import AgentError, AgentErrorKind, conflict
from lsp_agent.core.loop import ask_once, make_request, resolve_for
from lsp_agent.domain.ports import AssistantReply, ModelRequest, ProviderError

if TYPE_CHECKING:
    from lsp_agent.core.session import AgentSession, Environment

__all__ = ["ContextRequests"]

log = logging.getLogger(__name__)


class ContextRequests:
    def __init__(self, environment: Callable[[], Environment], session: SessionLookup, launch: Launch,
                 follow_ups: FollowUps) -> None:
        #: the Agent's environment as it is now (reconfigure replaces it)
        self.environment = environment
        self.session = session
        self.launch = launch
        self.follow_ups = follow_ups

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
        session.env = self.environment()
        session.repair_after_fault()  # the summary request sends the history: every call with its result
        try:
            with session.writing():  # another process running the session refuses it (session_busy)
                return await ContextManager(session, self._ask).compact(self._base_request(session), "manual")
        except ProviderError as exc:
            raise AgentError(AgentErrorKind.PROVIDER_ERROR, f"the summary request failed: {exc.describe()}") from None
        finally:
            if self.follow_ups.start_next(session) is not None:  # a follow-up queued while it compacted
                self.follow_ups.changed(session.id)

    async def handoff(self, session_id: str, reason: str = "requested by the user") -> Started:
        """Start a fresh session seeded with a checked handoff note (the six items), linked to this one."""
        session = self.session(session_id)
        if session.active is not None or session.context.compacting:
            what = f"running generation {session.active.id}" if session.active else "being compacted"
            raise conflict(f"session {session.id} is {what}; cancel it or wait before handing off", AgentErrorKind.BUSY)
        session.env = self.environment()
        session.repair_after_fault()
        try:
            with session.writing():
                handoff = await prepare_handoff(session, self._base_request(session), self._ask, reason)
        except ProviderError as exc:
            raise AgentError(AgentErrorKind.PROVIDER_ERROR,
                             f"the handoff note request failed: {exc.describe()}") from None
        return self._start_handoff(handoff.session_id, handoff.files)

    def continue_handoff(self, session_id: str, parent: AgentSession) -> None:
        """After an automatic handoff: the fresh session's generation starts by itself."""
        try:
            self._start_handoff(session_id, sorted(touched_files(parent.history)))
        except AgentError:
            log.exception("could not start the handoff session %s", session_id)

    def _start_handoff(self, session_id: str, files: list[str]) -> Started:
        fresh = self.session(session_id)
        fresh.files.reread_required.update(files)
        return self.launch(fresh, CONTINUE_PROMPT, None, None)

    async def _ask(self, request: ModelRequest, purpose: str) -> AssistantReply:
        return await ask_once(self.environment(), request)

    def _base_request(self, session: AgentSession) -> ModelRequest:
        env = self.environment()
        return make_request(env, resolve_for(env, session.history), session.context_view())
