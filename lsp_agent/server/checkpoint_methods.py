"""`agent/checkpoints` and `agent/rewind`: thin handlers over the shared rewind service (app/).

Files open in the editor are restored through their buffers (a versioned WorkspaceEdit, so the user
can undo it); the rest on disk by the checkpoint store. Refusals leave as classified JSON-RPC errors.
"""

from __future__ import annotations

from lsp_agent.app.rewind_service import RewindError, RewindPorts, SessionRewind
from lsp_agent.protocol.checkpoint_models import (
    AGENT_CHECKPOINTS,
    AGENT_REWIND,
    CheckpointsParams,
    CheckpointsResult,
    RewindParams,
    RewindResult,
)
from lsp_agent.protocol.errors import CONFLICT, NOT_FOUND, UNAVAILABLE, ErrorCode, ProtocolError
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.rpc import Routes

routes = Routes()

_CODES: dict[str, ErrorCode] = {"unknown_session": NOT_FOUND, "unknown_message": NOT_FOUND,
                                "checkpoint_folded": NOT_FOUND, "busy": CONFLICT,
                                "checkpoint_unavailable": UNAVAILABLE}


def _refused(exc: RewindError) -> ProtocolError:
    return ProtocolError(_CODES[exc.kind], exc.message, kind=exc.kind)


@routes.rpc(AGENT_CHECKPOINTS, CheckpointsParams)
async def agent_checkpoints(ls: AgentServer, params: CheckpointsParams) -> CheckpointsResult:
    try:
        return SessionRewind(RewindPorts.of(ls.runtime().agent.env)).checkpoints(params.session_id)
    except RewindError as exc:
        raise _refused(exc) from exc


@routes.rpc(AGENT_REWIND, RewindParams)
async def agent_rewind(ls: AgentServer, params: RewindParams) -> RewindResult:
    runtime = ls.runtime()
    agent = runtime.agent
    session = agent.sessions.get(params.session_id)
    if session is not None and session.active is not None:
        raise ProtocolError(CONFLICT, f"session {params.session_id} is running; cancel it or wait, then rewind",
                            kind="busy")
    documents = runtime.documents

    def open_text(path: str) -> str | None:
        doc = documents.document(path)
        return doc.source if doc is not None else None
    try:
        return await SessionRewind(RewindPorts.of(agent.env)).rewind(
            params, open_text, lambda sid, paths: agent.session(sid).note_external_change(paths),
            lambda sid, paths, check: agent.session(sid).note_external_change(paths, check),
            announce=runtime.watcher.own.expect)
    except RewindError as exc:
        raise _refused(exc) from exc
