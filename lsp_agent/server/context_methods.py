"""`agent/compact` and `agent/handoff`: thin handlers over `Agent.compact` / `Agent.handoff`.

Both may ask the model (a summary, a handoff note), so they are async; refusals (a busy session,
a compaction already running, the provider failing) leave through the routes (server/rpc.py) as JSON-RPC errors.
"""

from __future__ import annotations

from lsp_agent.protocol.context_models import (
    AGENT_COMPACT,
    AGENT_HANDOFF,
    CompactParams,
    CompactResult,
    HandoffParams,
    HandoffResult,
)
from lsp_agent.protocol.errors import NOT_FOUND, ProtocolError
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.rpc import Routes

routes = Routes()


def _known(ls: AgentServer, session_id: str) -> None:
    agent = ls.runtime().agent
    if not agent.knows_session(session_id):
        raise ProtocolError(NOT_FOUND, f"no session {session_id!r} in this workspace", kind="unknown_session")


@routes.rpc(AGENT_COMPACT, CompactParams)
async def agent_compact(ls: AgentServer, params: CompactParams) -> CompactResult:
    _known(ls, params.session_id)
    outcome = await ls.runtime().agent.context_requests.compact(params.session_id)
    return CompactResult.model_validate(outcome.wire())


@routes.rpc(AGENT_HANDOFF, HandoffParams)
async def agent_handoff(ls: AgentServer, params: HandoffParams) -> HandoffResult:
    _known(ls, params.session_id)
    started = await ls.runtime().agent.context_requests.handoff(params.session_id)
    return HandoffResult(session_id=started.session_id, generation=started.generation, parent_id=params.session_id)
