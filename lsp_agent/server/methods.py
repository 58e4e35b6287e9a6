"""Thin handlers: parse the protocol model, make one core call, return the protocol model.

Errors leave as JSON-RPC errors with the documented codes and `data: {kind, status, field?}`;
nothing a client sends can take the server down.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types
from pydantic import TypeAdapter
from pygls.exceptions import JsonRpcException

from lsp_agent.core.agent import AgentError
from lsp_agent.core.history import Message
from lsp_agent.protocol import methods as m
from lsp_agent.protocol.errors import INTERNAL, NOT_FOUND, ProtocolError, from_core
from lsp_agent.protocol.models import (
    CancelParams,
    CancelResult,
    FixDiagnosticArgs,
    MessageOut,
    PartOut,
    RunParams,
    RunResult,
    SessionInfo,
    SessionParams,
    SessionResult,
    SessionsParams,
    SessionsResult,
    StatusParams,
    StatusResult,
)
from lsp_agent.server.app import AgentServer
from lsp_agent.server.code_actions import command_argument, fix_actions, fix_prompt
from lsp_agent.server.convert import parse, to_plain
from lsp_agent.server.documents import relative_path

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
_PART = TypeAdapter[Any](PartOut)


def answers(method: str) -> Callable[[F], F]:
    """Turn every failure of a handler into a JSON-RPC error the client can act on."""

    def translate(exc: Exception) -> JsonRpcException:
        if isinstance(exc, ProtocolError):
            return JsonRpcException(exc.message, exc.code, exc.wire_data())
        if isinstance(exc, AgentError):
            error = from_core(exc)
            return JsonRpcException(error.message, error.code, error.wire_data())
        log.error("%s failed", method, exc_info=exc)
        error = ProtocolError(INTERNAL, f"{method}: internal error ({type(exc).__name__}: {exc})")
        return JsonRpcException(error.message, error.code, error.wire_data())

    def decorate(handler: F) -> F:
        # pygls awaits coroutine handlers, so an async handler needs an async wrapper.
        if inspect.iscoroutinefunction(handler):
            @functools.wraps(handler)
            async def async_wrapper(*args: Any) -> Any:
                try:
                    return await handler(*args)
                except Exception as exc:
                    raise translate(exc) from None

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(handler)
        def wrapper(*args: Any) -> Any:
            try:
                return handler(*args)
            except Exception as exc:
                raise translate(exc) from None

        return wrapper  # type: ignore[return-value]

    return decorate


def _message_out(message: Message) -> MessageOut:
    parts = [_PART.validate_python(p.model_dump(mode="json")) for p in message.parts]
    return MessageOut(id=message.id, role=message.role.value, generation=message.generation, step=message.step,
                      parts=parts)


def _known_session(ls: AgentServer, session_id: str) -> None:
    rt = ls.runtime()
    if not rt.agent.knows_session(session_id):
        raise ProtocolError(NOT_FOUND, f"no session {session_id!r} in this workspace", kind="unknown_session")


def register(server: AgentServer) -> None:
    # Handlers are plain functions (no awaits needed): pygls answers them in the same loop turn,
    # which keeps agent/status fast while a run streams.

    @server.feature(m.AGENT_RUN)
    @answers(m.AGENT_RUN)
    def agent_run(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(RunParams, raw, m.AGENT_RUN)
        started = ls.start_run(params)
        return RunResult(session_id=started.session_id, generation=started.generation).wire()

    @server.feature(m.AGENT_CANCEL)
    @answers(m.AGENT_CANCEL)
    def agent_cancel(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(CancelParams, raw, m.AGENT_CANCEL)
        _known_session(ls, params.session_id)
        generation = ls.runtime().agent.cancel(params.session_id)
        return CancelResult(cancelled=generation is not None, generation=generation).wire()

    @server.feature(m.AGENT_SESSIONS)
    @answers(m.AGENT_SESSIONS)
    def agent_sessions(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(SessionsParams, raw, m.AGENT_SESSIONS)
        infos = [SessionInfo(session_id=s.record.id, title=s.record.title, model=s.record.model,
                             created_at=s.record.created_at, updated_at=s.record.updated_at, state=s.state,
                             generation=s.generation)
                 for s in ls.runtime().agent.list_sessions(params.limit)]
        return SessionsResult(sessions=infos).wire()

    @server.feature(m.AGENT_SESSION)
    @answers(m.AGENT_SESSION)
    def agent_session(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(SessionParams, raw, m.AGENT_SESSION)
        page = ls.runtime().agent.session_page(params.session_id, params.after, params.limit)
        return SessionResult(session_id=params.session_id, title=page.record.title,
                             messages=[_message_out(msg) for msg in page.messages], next=page.next).wire()

    @server.feature(m.AGENT_STATUS)
    @answers(m.AGENT_STATUS)
    def agent_status(ls: AgentServer, raw: Any) -> dict[str, object]:
        params = parse(StatusParams, raw, m.AGENT_STATUS)
        agent = ls.runtime().agent
        status = agent.status(params.session_id)
        session_id = params.session_id or next((s.id for s in agent.sessions.values() if s.active), None)
        return StatusResult(session_id=session_id, state=status.state, generation=status.generation,
                            verification=status.verification, step=status.step,
                            max_steps=status.max_steps,
                            mcp_unavailable=(agent.env.mcp.unavailable() or None) if agent.env.mcp else None).wire()

    @server.command(m.COMMAND_FIX_DIAGNOSTIC)
    @answers(m.COMMAND_FIX_DIAGNOSTIC)
    def fix_diagnostic(ls: AgentServer, *arguments: Any) -> dict[str, object]:
        args = parse(FixDiagnosticArgs, command_argument(arguments), m.COMMAND_FIX_DIAGNOSTIC)
        rt = ls.runtime()
        rel = relative_path(rt.root, args.uri) or args.uri
        session_id = args.session_id
        live = rt.agent.sessions.get(session_id) if session_id else None
        busy = live is not None and live.active is not None
        unknown = live is None and session_id is not None and not rt.agent.knows_session(session_id)
        if busy or unknown:
            session_id = None  # busy or unknown: a fresh session
        started = ls.start_run(RunParams(prompt=fix_prompt(args, rel), session_id=session_id))
        return RunResult(session_id=started.session_id, generation=started.generation).wire()

    # --- LSP lifecycle and documents ------------------------------------------------------------

    @server.feature(types.INITIALIZE)
    def initialize(ls: AgentServer, params: types.InitializeParams) -> None:
        ls.setup(params)

    @server.feature(types.INITIALIZED)
    def initialized(ls: AgentServer, params: types.InitializedParams) -> None:
        ls.initialized()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: AgentServer, params: Any) -> None:
        await ls.shutdown_runtime()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: AgentServer, params: types.DidChangeConfigurationParams) -> None:
        settings = to_plain(params.settings)
        if isinstance(settings, dict) and m.CONFIG_SECTION in settings:
            ls.change_settings(settings[m.CONFIG_SECTION])
        else:
            await ls.pull_configuration()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AgentServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.runtime().documents.opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AgentServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.runtime().documents.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AgentServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.runtime().applier.saved(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AgentServer, params: types.DidCloseTextDocumentParams) -> None:
        rt = ls.runtime()
        rt.documents.closed(params.text_document.uri)
        rt.applier.closed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: AgentServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return fix_actions(params)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: AgentServer, params: types.WorkDoneProgressCancelParams) -> None:
        rt = ls.runtime()
        session_id = rt.sink.session_of_token(params.token)
        if session_id is not None:
            rt.agent.cancel(session_id)
