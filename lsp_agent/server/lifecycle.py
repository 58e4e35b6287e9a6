"""The standard LSP methods, each registered once: lifecycle, settings, documents, code actions.

Other parts of the server take part through `ls.lifecycle` (`Lifecycle` in server/agent_server.py):
participants are started after `initialized` and stopped at `shutdown`; code-action sources add to
the one codeAction answer.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from lsp_agent.protocol import methods as m
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.code_actions import fix_actions
from lsp_agent.server.convert import to_plain
from lsp_agent.server.rpc import Routes

log = logging.getLogger(__name__)

routes = Routes()


@routes.lsp(types.INITIALIZE)
def initialize(ls: AgentServer, params: types.InitializeParams) -> None:
    ls.setup(params)


@routes.lsp(types.INITIALIZED)
def initialized(ls: AgentServer, params: types.InitializedParams) -> None:
    ls.initialized()
    if ls.rt is None:
        return  # the runtime could not be built (reported once)
    for participant in ls.lifecycle.participants:
        participant.started(ls)


@routes.lsp(types.SHUTDOWN)
async def shutdown(ls: AgentServer, params: Any) -> None:
    await ls.shutdown_runtime()
    for participant in ls.lifecycle.participants:
        participant.stopping(ls)


@routes.lsp(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: AgentServer, params: types.DidChangeConfigurationParams) -> None:
    settings = to_plain(params.settings)
    if isinstance(settings, dict) and m.CONFIG_SECTION in settings:
        ls.change_settings(settings[m.CONFIG_SECTION])
    else:
        await ls.pull_configuration()


@routes.lsp(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: AgentServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.runtime().documents.opened(params.text_document.uri)


@routes.lsp(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: AgentServer, params: types.DidChangeTextDocumentParams) -> None:
    # Most changes never come here: server/did_change_fast_path.py applies them past pygls and calls
    # the same `document_changed`, so what a change sets off belongs there, not in this route.
    ls.document_changed(params.text_document.uri)


@routes.lsp(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: AgentServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.runtime().applier.saved(params.text_document.uri)


@routes.lsp(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: AgentServer, params: types.DidCloseTextDocumentParams) -> None:
    rt = ls.runtime()
    rt.documents.closed(params.text_document.uri)
    rt.applier.closed(params.text_document.uri)


@routes.lsp(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
async def code_action(ls: AgentServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    actions = fix_actions(params)
    for source in ls.lifecycle.code_actions:
        try:
            actions += await source(ls, params)
        except Exception:  # one source failing must not take the others' actions with it
            log.exception("code actions of %s failed", getattr(source, "__name__", source))
    return actions


@routes.lsp(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def progress_cancel(ls: AgentServer, params: types.WorkDoneProgressCancelParams) -> None:
    rt = ls.runtime()
    session_id = rt.sink.session_of_token(params.token)
    if session_id is not None:
        rt.agent.cancel(session_id)
