"""The agent/* requests and the fix command: one core call each, protocol model in and out.

`routes` (server/rpc.py) parses the params, serialises the result and maps every failure onto the
documented JSON-RPC errors; nothing a client sends can take the server down.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from lsp_agent.domain.history import Message
from lsp_agent.protocol import methods as m
from lsp_agent.protocol.errors import NOT_FOUND, ProtocolError
from lsp_agent.protocol.models import (
    CancelParams,
    CancelResult,
    FixDiagnosticArgs,
    MessageOut,
    PartOut,
    RunParams,
    RunResult,
    SessionInfo,
    SessionOwner,
    SessionParams,
    SessionResult,
    SessionsParams,
    SessionsResult,
    StatusParams,
    StatusResult,
)
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.code_actions import fix_prompt
from lsp_agent.server.documents import relative_path
from lsp_agent.server.rpc import Routes

_PART = TypeAdapter[Any](PartOut)
routes = Routes()


def _message_out(message: Message) -> MessageOut:
    parts = [_PART.validate_python(p.model_dump(mode="json")) for p in message.parts]
    return MessageOut(id=message.id, role=message.role.value, generation=message.generation, step=message.step,
                      parts=parts)


def _known_session(ls: AgentServer, session_id: str) -> None:
    rt = ls.runtime()
    if not rt.agent.knows_session(session_id):
        raise ProtocolError(NOT_FOUND, f"no session {session_id!r} in this workspace", kind="unknown_session")


@routes.rpc(m.AGENT_RUN, RunParams)
def agent_run(ls: AgentServer, params: RunParams) -> RunResult:
    started = ls.start_run(params)
    return RunResult(session_id=started.session_id, generation=started.generation,
                     message_id=started.message_id)


@routes.rpc(m.AGENT_CANCEL, CancelParams)
def agent_cancel(ls: AgentServer, params: CancelParams) -> CancelResult:
    _known_session(ls, params.session_id)
    generation = ls.runtime().agent.cancel(params.session_id)
    return CancelResult(cancelled=generation is not None, generation=generation)


@routes.rpc(m.AGENT_SESSIONS, SessionsParams)
def agent_sessions(ls: AgentServer, params: SessionsParams) -> SessionsResult:
    infos = [SessionInfo(session_id=s.record.id, title=s.record.title, model=s.record.model,
                         created_at=s.record.created_at, updated_at=s.record.updated_at, state=s.state,
                         generation=s.generation,
                         owner=SessionOwner(pid=s.elsewhere.pid, host=s.elsewhere.host) if s.elsewhere else None)
             for s in ls.runtime().agent.list_sessions(params.limit)]
    return SessionsResult(sessions=infos)


@routes.rpc(m.AGENT_SESSION, SessionParams)
def agent_session(ls: AgentServer, params: SessionParams) -> SessionResult:
    page = ls.runtime().agent.session_page(params.session_id, params.after, params.limit)
    return SessionResult(session_id=params.session_id, title=page.record.title,
                         messages=[_message_out(msg) for msg in page.messages], next=page.next)


@routes.rpc(m.AGENT_STATUS, StatusParams)
def agent_status(ls: AgentServer, params: StatusParams) -> StatusResult:
    agent = ls.runtime().agent
    status = agent.status(params.session_id)
    session_id = params.session_id or next((s.id for s in agent.sessions.values() if s.active), None)
    return StatusResult(session_id=session_id, state=status.state, generation=status.generation,
                        verification=status.verification, step=status.step, max_steps=status.max_steps,
                        mcp_unavailable=(agent.env.mcp.unavailable() or None) if agent.env.mcp else None)


@routes.command(m.COMMAND_FIX_DIAGNOSTIC, FixDiagnosticArgs)
def fix_diagnostic(ls: AgentServer, args: FixDiagnosticArgs) -> RunResult:
    rt = ls.runtime()
    rel = relative_path(rt.root, args.uri) or args.uri
    session_id = args.session_id
    live = rt.agent.sessions.get(session_id) if session_id else None
    busy = live is not None and live.active is not None
    unknown = live is None and session_id is not None and not rt.agent.knows_session(session_id)
    if busy or unknown:
        session_id = None  # busy or unknown: a fresh session
    started = ls.start_run(RunParams(prompt=fix_prompt(args, rel), session_id=session_id))
    return RunResult(session_id=started.session_id, generation=started.generation,
                     message_id=started.message_id)
