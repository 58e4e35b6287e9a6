"""Skill candidate handlers: agent/skill/* requests, their workspace/executeCommand
commands, the "Propose / Validate / Promote skill candidate NAME" code actions, and live refresh of
the skills list (watchfiles) reported as `agent/skill/changed`.

Handlers stay thin: the protocol model in, one SkillService call, the protocol model out. The
code actions are a source of the one codeAction handler (`skill_actions`, awaited: promotion is
offered only when the evidence checks pass right now) and the watcher is a lifecycle participant
(`SkillWatch`, started once the workspace is known); server/agent_server.py `Lifecycle`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_agent.app.skill_wire import candidate_out, skill_out, skill_result
from lsp_agent.domain.skill_records import MAX_PROPOSAL_BYTES, Citation, State
from lsp_agent.domain.skill_rules import RuleFailed, check_name
from lsp_agent.osfiles.regular import read_regular_bytes
from lsp_agent.protocol.errors import INVALID_PARAMS, ProtocolError
from lsp_agent.protocol.skill_models import (
    AGENT_SKILL_CHANGED,
    AGENT_SKILL_LIST,
    AGENT_SKILL_PROMOTE,
    AGENT_SKILL_PROPOSE,
    AGENT_SKILL_RETIRE,
    AGENT_SKILL_SHOW,
    AGENT_SKILL_VALIDATE,
    CANDIDATE_VIEW_SCHEME,
    COMMAND_SKILL_DRAFT,
    COMMAND_SKILL_PROMOTE,
    COMMAND_SKILL_PROPOSE,
    COMMAND_SKILL_VALIDATE,
    DraftParams,
    DraftResult,
    ListParams,
    NameParams,
    ProposeParams,
    SkillChangedParams,
    SkillListResult,
    SkillResult,
    ValidateParams,
)
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.code_actions import (
    PROMOTE_TITLE,
    PROPOSE_TITLE,
    VALIDATE_TITLE,
    SkillDocument,
    skill_action,
    skill_document,
)
from lsp_agent.server.rpc import Routes
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.skills.discovery import SkillInfo, index_for
from lsp_agent.skills.service import Outcome, SkillService
from lsp_agent.skills.watch import SkillWatcher

log = logging.getLogger(__name__)

#: Where "Propose skill from this verification" puts its drafts: the state directory, outside the
#: worktree, so a draft never makes the tree dirty.
DRAFTS_DIR = "skill-drafts"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _service(ls: AgentServer) -> SkillService:
    rt = ls.runtime()
    return SkillService(rt.store, rt.root)


def _read_file(path: Path) -> bytes:
    return read_regular_bytes(path, MAX_PROPOSAL_BYTES)  # never blocks on a FIFO; one byte over says "too large"


async def _proposal_text(ls: AgentServer, params: ProposeParams, method: str) -> str | bytes:
    """The proposal: inline, the open document's text, or the file (bounded read)."""
    if params.text is not None:
        return params.text
    assert params.uri is not None
    doc = ls.workspace.text_documents.get(unquote(params.uri))
    if doc is not None:
        return str(doc.source)
    fs = to_fs_path(params.uri)
    if fs is None:
        raise ProtocolError(INVALID_PARAMS, f"{method}: `uri` is not a file URI", field="uri")
    try:
        return await asyncio.to_thread(_read_file, Path(fs))
    except OSError as exc:
        raise ProtocolError(INVALID_PARAMS, f"{method}: cannot read {fs}: {exc.strerror or exc}",
                            field="uri") from None


def _result(ls: AgentServer, outcome: Outcome, *, view: bool = False) -> SkillResult:
    return skill_result(outcome, ls.runtime().root, view=view)


def _tell(ls: AgentServer, outcome: Outcome) -> None:
    """A command run from a code action has no other way to show a refusal."""
    if not outcome.ok:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                       message=f"lsp-agent: {outcome.line()}"))


def _can_show_documents(ls: AgentServer) -> bool:
    window = ls.client_capabilities.window
    return bool(window and window.show_document and window.show_document.support)


async def _show(ls: AgentServer, uri: str) -> None:
    if not _can_show_documents(ls):
        return
    try:
        await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))
    except Exception as exc:  # the file exists either way; the client just did not open it
        log.info("window/showDocument %s failed: %s", uri, exc)


# --- code actions -------------------------------------------------------------------------------


async def skill_actions(ls: AgentServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    doc = ls.workspace.text_documents.get(unquote(uri))
    found = skill_document(uri, str(doc.source) if doc is not None else None, CANDIDATE_VIEW_SCHEME)
    if found is None or found.name is None:
        return []
    try:
        name = check_name(found.name)
    except RuleFailed:
        return []
    return await _offer(_service(ls), found, name, uri)


async def _offer(service: SkillService, doc: SkillDocument, name: str, uri: str) -> list[types.CodeAction]:
    candidate = service.records.get(name)
    view = uri.startswith(f"{CANDIDATE_VIEW_SCHEME}:")
    if candidate is None or candidate.state is State.RETIRED:
        if doc.full and not view:
            return [skill_action(PROPOSE_TITLE.format(name=name), COMMAND_SKILL_PROPOSE, {"uri": uri})]
        return []
    if candidate.state is not State.PENDING:
        return []
    if candidate.validation is None:
        independent = doc.session_id is not None and doc.session_id != candidate.source.session_id
        if independent and not view:
            return [skill_action(VALIDATE_TITLE.format(name=name), COMMAND_SKILL_VALIDATE,
                                 {"name": name, "uri": uri})]
        return []
    # Offered only while promotion would succeed: the same checks, without the write.
    if (await service.check_promotable(name)).ok:
        return [skill_action(PROMOTE_TITLE.format(name=name), COMMAND_SKILL_PROMOTE, {"name": name})]
    return []


class SkillWatch:
    """Live refresh of the skills list while the workspace is open (a lifecycle participant)."""

    def __init__(self) -> None:
        self.watcher: SkillWatcher | None = None

    def started(self, ls: AgentServer) -> None:
        if ls.rt is None or self.watcher is not None:
            return

        def changed(skills: list[SkillInfo]) -> None:
            ls.protocol.notify(AGENT_SKILL_CHANGED, SkillChangedParams(skills=[skill_out(s) for s in skills]).wire())

        self.watcher = SkillWatcher(index_for(ls.rt.root), changed)
        self.watcher.start()

    def stopping(self, ls: AgentServer) -> None:
        if self.watcher is not None:
            self.watcher.stop_soon()
            self.watcher = None


# --- requests -----------------------------------------------------------------------------------

routes = Routes()


@routes.rpc(AGENT_SKILL_PROPOSE, ProposeParams)
async def skill_propose(ls: AgentServer, params: ProposeParams) -> SkillResult:
    text = await _proposal_text(ls, params, AGENT_SKILL_PROPOSE)
    return _result(ls, await _service(ls).propose(text))


@routes.rpc(AGENT_SKILL_SHOW, NameParams)
def skill_show(ls: AgentServer, params: NameParams) -> SkillResult:
    return _result(ls, _service(ls).show(params.name), view=True)


@routes.rpc(AGENT_SKILL_VALIDATE, ValidateParams)
async def skill_validate(ls: AgentServer, params: ValidateParams) -> SkillResult:
    text = await _proposal_text(ls, params, AGENT_SKILL_VALIDATE)
    return _result(ls, await _service(ls).validate(params.name, text))


@routes.rpc(AGENT_SKILL_PROMOTE, NameParams)
async def skill_promote(ls: AgentServer, params: NameParams) -> SkillResult:
    return _result(ls, await _service(ls).promote(params.name))


@routes.rpc(AGENT_SKILL_RETIRE, NameParams)
async def skill_retire(ls: AgentServer, params: NameParams) -> SkillResult:
    return _result(ls, await _service(ls).retire(params.name))


@routes.rpc(AGENT_SKILL_LIST, ListParams)
async def skill_list(ls: AgentServer, params: ListParams) -> SkillListResult:
    index = index_for(ls.runtime().root)
    await asyncio.to_thread(index.refresh)
    return SkillListResult(candidates=[candidate_out(c) for c in _service(ls).list()],
                           skills=[skill_out(s) for s in index.skills()])


# --- commands (code actions and the client's palette) -------------------------------------------


@routes.command(COMMAND_SKILL_PROPOSE, ProposeParams)
async def command_propose(ls: AgentServer, params: ProposeParams) -> SkillResult:
    outcome = await _service(ls).propose(await _proposal_text(ls, params, COMMAND_SKILL_PROPOSE))
    _tell(ls, outcome)
    return _result(ls, outcome)


@routes.command(COMMAND_SKILL_VALIDATE, ValidateParams)
async def command_validate(ls: AgentServer, params: ValidateParams) -> SkillResult:
    text = await _proposal_text(ls, params, COMMAND_SKILL_VALIDATE)
    outcome = await _service(ls).validate(params.name, text)
    _tell(ls, outcome)
    return _result(ls, outcome)


@routes.command(COMMAND_SKILL_PROMOTE, NameParams)
async def command_promote(ls: AgentServer, params: NameParams) -> SkillResult:
    result = _result(ls, await _service(ls).promote(params.name))
    if result.ok and result.uri is not None:
        await _show(ls, result.uri)
    elif not result.ok:
        ls.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Warning, message=f"lsp-agent: ERROR: {result.rule}: {result.message}"))
    return result


@routes.command(COMMAND_SKILL_DRAFT, DraftParams)
async def command_draft(ls: AgentServer, params: DraftParams) -> DraftResult:
    citation = Citation(session_id=params.session_id, message_id=params.message_id, part_id=params.part_id)
    outcome = await _service(ls).draft(citation, params.name)
    if not outcome.ok:
        _tell(ls, outcome)
        return DraftResult(ok=False, rule=outcome.rule, message=outcome.message)
    stem = _UNSAFE.sub("_", params.part_id)
    if params.name is not None:
        stem = f"{params.name}-validation-{stem}"
    path = workspace_dir(ls.runtime().root) / DRAFTS_DIR / f"{stem}.json"
    await asyncio.to_thread(_write_draft, path, outcome.message)
    await _show(ls, path.as_uri())
    return DraftResult(ok=True, message=f"draft written to {path}", path=str(path), uri=path.as_uri())


def _write_draft(path: Path, text: str) -> None:
    """A new draft; an existing one (perhaps half filled in) is kept as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        pass
