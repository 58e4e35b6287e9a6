"""Session history over ACP: `session/list`, `session/fork`, and the extension methods
`_lsp_agent/checkpoints` and `_lsp_agent/rewind` (the shared rewind service of app/).

The ACP client may own the files (fs/* capabilities), but a rewind restores them on disk through the
checkpoint store: ACP has no way to edit a client's buffer as an undoable change, so a client that
keeps the file open sees it change on disk (docs/acp.md says so).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import ListSessionsResponse, SessionInfo
from pydantic import ValidationError

from lsp_agent.app.rewind_service import RewindError, RewindPorts, SessionRewind
from lsp_agent.core.agent import Agent
from lsp_agent.core.session_fork import ForkRefused, fork_session
from lsp_agent.core.storage import SessionRecord
from lsp_agent.domain.history import Role, TextPart
from lsp_agent.protocol.checkpoint_models import CheckpointsParams, RewindParams
from lsp_agent.protocol.errors import CONFLICT, INVALID_PARAMS, NOT_FOUND, UNAVAILABLE, ErrorCode, ProtocolError

CHECKPOINTS = "lsp_agent/checkpoints"
REWIND = "lsp_agent/rewind"
#: sessions per `session/list` page
LIST_PAGE = 50
#: the most sessions of one workspace `session/list` walks through
LIST_LIMIT = 10_000

_CODES: dict[str, ErrorCode] = {"unknown_session": NOT_FOUND, "unknown_message": NOT_FOUND,
                                "checkpoint_folded": NOT_FOUND, "busy": CONFLICT,
                                "checkpoint_unavailable": UNAVAILABLE}


def request_error(code: ErrorCode, message: str, kind: str, field: str | None = None) -> RequestError:
    problem = ProtocolError(code, message, kind=kind, field=field)
    return RequestError(problem.code, problem.message, problem.wire_data())


def _refused(exc: RewindError) -> RequestError:
    return request_error(_CODES[exc.kind], exc.message, exc.kind)


# --- session/list ---------------------------------------------------------------------------------

def _order(root: Path, record: SessionRecord) -> tuple[int, str, str]:
    """Newest first, then by workspace and id: a total order, so a cursor never skips or repeats."""
    return (-record.updated_at, str(root), record.id)


def _encode_cursor(key: tuple[int, str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _decode_cursor(cursor: str) -> tuple[int, str, str]:
    try:
        updated, root, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return int(updated), str(root), str(session_id)
    except (ValueError, TypeError, binascii.Error):
        raise request_error(INVALID_PARAMS, "cursor is not one this agent returned (pass a nextCursor back "
                                            "unchanged)", "invalid_params", field="cursor") from None


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def list_page(agents: dict[Path, Agent], cursor: str | None) -> ListSessionsResponse:
    """One page of the stored sessions of `agents`' workspaces, newest first."""
    after = _decode_cursor(cursor) if cursor else None
    rows = sorted(((_order(root, record), root, record) for root, agent in agents.items()
                   for record in agent.env.store.sessions(LIST_LIMIT)), key=lambda row: row[0])
    if after is not None:
        rows = [row for row in rows if row[0] > after]
    page = rows[:LIST_PAGE]
    sessions = [SessionInfo(session_id=record.id, cwd=str(root), title=record.title or None,
                            updated_at=_iso(record.updated_at),
                            field_meta={"lspAgent": {"parentId": record.parent_id, "model": record.model,
                                                     "state": _state(agents[root], record)}})
                for _, root, record in page]
    more = len(rows) > LIST_PAGE
    return ListSessionsResponse(sessions=sessions, next_cursor=_encode_cursor(page[-1][0]) if more else None)


def _state(agent: Agent, record: SessionRecord) -> str:
    live = agent.sessions.get(record.id)
    return "running" if (live is not None and live.active is not None) or record.active_generation else "idle"


def prompt_message(agent: Agent, session_id: str, generation: str) -> str | None:
    """The id of the user message that started `generation`: what a client names to rewind before it."""
    session = agent.sessions.get(session_id)
    for message in reversed(session.history if session is not None else []):
        if message.generation == generation and message.role is Role.USER and any(
                isinstance(p, TextPart) and not p.synthetic for p in message.parts):
            return message.id
    return None


# --- session/fork ---------------------------------------------------------------------------------

def fork_point(meta: Any) -> str | None:
    """`_meta.lspAgent.atMessageId`: fork before that message (absent: after the last one)."""
    if meta is None:
        return None
    at = meta.get("atMessageId") if isinstance(meta, dict) else None
    if not isinstance(at, str) or not at:
        raise request_error(INVALID_PARAMS, "_meta.lspAgent takes {atMessageId: string}", "invalid_params",
                            field="_meta.lspAgent.atMessageId")
    return at


def fork(agent: Agent, session_id: str, at: str | None) -> str:
    try:
        return fork_session(agent.env.store, session_id, at)
    except ForkRefused as exc:
        raise request_error(NOT_FOUND, str(exc), exc.kind) from None


# --- _lsp_agent/checkpoints and _lsp_agent/rewind ------------------------------------------------

def _params(model: type[CheckpointsParams] | type[RewindParams], raw: dict[str, Any]) -> Any:
    # ACP spells identifiers `sessionId`; the language server's models `sessionID`: both are taken.
    named = {re.sub(r"Id$", "ID", key): value for key, value in raw.items()}
    try:
        return model.model_validate(named)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise request_error(INVALID_PARAMS, f"{where}: {first['msg']}", "invalid_params", field=where) from None


def parse_checkpoints(raw: dict[str, Any]) -> CheckpointsParams:
    parsed: CheckpointsParams = _params(CheckpointsParams, raw)
    return parsed


def parse_rewind(raw: dict[str, Any]) -> RewindParams:
    parsed: RewindParams = _params(RewindParams, raw)
    return parsed


def checkpoints(agent: Agent, params: CheckpointsParams) -> dict[str, Any]:
    try:
        return SessionRewind(RewindPorts.of(agent.env)).checkpoints(params.session_id).wire()
    except RewindError as exc:
        raise _refused(exc) from None


async def rewind(agent: Agent, params: RewindParams) -> dict[str, Any]:
    """Files on disk (no buffers: `open_text` is None); a session's check stands again only where the
    restored files are exactly the tree it passed on, as in the other front ends."""
    session = agent.sessions.get(params.session_id)
    if session is not None and session.active is not None:
        raise request_error(CONFLICT, f"session {params.session_id} is running; cancel it or wait, then rewind",
                            "busy")
    try:
        result = await SessionRewind(RewindPorts.of(agent.env)).rewind(
            params, None, lambda sid, paths: agent.session(sid).note_external_change(paths),
            lambda sid, paths, check: agent.session(sid).note_external_change(paths, check))
    except RewindError as exc:
        raise _refused(exc) from None
    return result.wire()
