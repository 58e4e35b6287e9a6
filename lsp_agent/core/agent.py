"""The core's front door for long-lived front ends (the language server): sessions,
generations in flight, cancel and status. Knows nothing of LSP.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from typing import Any, Literal

from lsp_agent.core.events import RunFinish, VerificationStatus
from lsp_agent.core.loop import Generation
from lsp_agent.core.session import AgentSession, Environment
from lsp_agent.core.verification import derive

log = logging.getLogger(__name__)


class AgentError(Exception):
    """A request the core refuses; `kind` and `status` travel to the client."""

    def __init__(self, kind: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


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


class Agent:
    def __init__(self, env: Environment) -> None:
        self.env = env
        self.sessions: dict[str, AgentSession] = {}
        self.tasks: dict[str, asyncio.Task[RunFinish]] = {}
        self.results: dict[str, RunFinish] = {}

    def reconfigure(self, **changes: Any) -> None:
        """New settings/provider apply to generations started from now on."""
        self.env = replace(self.env, **changes)
        for session in self.sessions.values():
            if session.active is None:
                session.env = self.env

    def session(self, session_id: str | None, title: str = "") -> AgentSession:
        if session_id is None:
            session = AgentSession(self.env, title=title)
        elif session_id in self.sessions:
            return self.sessions[session_id]
        else:
            try:
                session = AgentSession(self.env, session_id)
            except KeyError:
                raise AgentError("unknown_session", f"no session {session_id!r} in this workspace", 404) from None
        self.sessions[session.id] = session
        return session

    def start(self, prompt: str, session_id: str | None = None, max_steps: int | None = None) -> Started:
        if not prompt.strip():
            raise AgentError("invalid_params", "the prompt is empty")
        session = self.session(session_id, title=prompt[:80])
        if session.active is not None:
            raise AgentError("busy", f"session {session.id} is running generation {session.active.id}; "
                             "queue a follow-up or steer it", 409)
        session.env = self.env
        generation = Generation(session, max_steps)
        session.active = generation  # claimed now, so a second start in the same tick is refused
        task = asyncio.ensure_future(self._run(generation, prompt))
        self.tasks[generation.id] = task
        return Started(session.id, generation.id)

    async def _run(self, generation: Generation, prompt: str) -> RunFinish:
        try:
            result = await generation.run(prompt)
            self.results[generation.session.id] = result
            return result
        except Exception:
            log.exception("generation %s crashed", generation.id)
            raise
        finally:
            self.tasks.pop(generation.id, None)

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
            running = next((s for s in self.sessions.values() if s.active is not None), None)
            session = running
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
