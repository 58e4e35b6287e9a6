"""The language server's state: a pygls LanguageServer holding one core `Agent` per workspace.

`initialize` picks the workspace root and the settings and wires the core to the editor:
buffers as the DocumentSource, workspace/applyEdit as the EditApplier, agent/event and
$/progress as the EventSink. Handlers are module-level routes (server/rpc.py): the standard LSP
methods in server/lifecycle.py, the agent/* methods in server/*_methods.py, which take this
class; server/app.py assembles them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import FeatureNotificationError, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from lsp_agent._startup import memory
from lsp_agent._version import __version__
from lsp_agent.app.runtime import make_provider, mcp_manager, model_facts, open_environment
from lsp_agent.app.toolset import default_registry
from lsp_agent.app.trust_wire import trust_state
from lsp_agent.core.agent import Agent, Started
from lsp_agent.core.errors import AgentError
from lsp_agent.core.session import ModelChoice
from lsp_agent.domain.events import InvalidatedBy, VerificationStatus
from lsp_agent.domain.ports import Provider, ProviderError, ProviderErrorKind
from lsp_agent.domain.verification import Verification, derive
from lsp_agent.protocol.editor_query_models import declared_kinds
from lsp_agent.protocol.errors import UNAVAILABLE, ProtocolError, from_core
from lsp_agent.protocol.methods import CONFIG_SECTION
from lsp_agent.protocol.models import RunParams
from lsp_agent.protocol.trust_models import AGENT_WORKSPACE_TRUST_CHANGED
from lsp_agent.protocol.verification_models import AGENT_VERIFICATION_CHANGED, VerificationChangedParams
from lsp_agent.providers.scripted import Script, ScriptedError, ScriptedProvider, ScriptedReply
from lsp_agent.server import settings as layered
from lsp_agent.server.approval import EditorApprover
from lsp_agent.server.client_version import mismatch_message, server_version, split_client_version
from lsp_agent.server.convert import make_converter, to_plain
from lsp_agent.server.diagnostics import DiagnosticsPublisher
from lsp_agent.server.documents import BufferDocuments
from lsp_agent.server.editor_queries import LspEditorQueries
from lsp_agent.server.edits import EditorCaps, LspApplier
from lsp_agent.server.line_document import LineDocument, LineWorkspace
from lsp_agent.server.notify import LspEventSink
from lsp_agent.server.watch import OwnWrites, Watcher
from lsp_agent.settings.config import Settings, inspect_workspace
from lsp_agent.settings.modes import EDITOR_MODES, Intent, by_id
from lsp_agent.settings.modes import apply as apply_mode
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.settings.workspace_trust import HOW_TO_TRUST, WorkspaceView, ignored_line
from lsp_agent.store.db import Store

if TYPE_CHECKING:
    from lsp_agent.mcp.manager import McpManager  # the SDK is imported only when servers are configured

log = logging.getLogger(__name__)




# How parts of the server take part in its life without touching pygls' feature table: a
# participant is started after `initialized` and stopped at `shutdown`; a code-action source adds
# actions to the one `textDocument/codeAction` handler (server/lifecycle.py calls them).
CodeActionSource = Callable[["AgentServer", types.CodeActionParams], Awaitable[list[types.CodeAction]]]


class Participant(Protocol):
    def started(self, ls: AgentServer) -> None: ...

    def stopping(self, ls: AgentServer) -> None: ...


@dataclass
class Lifecycle:
    participants: list[Participant] = field(default_factory=list)
    code_actions: list[CodeActionSource] = field(default_factory=list)


class AgentProtocol(LanguageServerProtocol):
    #: the id of the `initialize` server/boot.py answered: its response here is not sent again
    _held: Any = None
    _line_workspace: LineWorkspace | None = None

    # pygls builds its Workspace inside `initialize` and stores it here; ours keeps each open
    # buffer as lines, so a didChange costs the size of the change, not of the document.
    @property
    def _workspace(self) -> Workspace | None:
        return self._line_workspace

    @_workspace.setter
    def _workspace(self, workspace: Workspace | None) -> None:
        if workspace is None or isinstance(workspace, LineWorkspace):
            self._line_workspace = workspace
        else:
            self._line_workspace = LineWorkspace.replacing(workspace)

    # server/did_change_fast_path.py applies a plain didChange here, past pygls's dispatch: only to an
    # open LineDocument of a running server, so everything else (a change before the runtime, after
    # shutdown, of a document never opened) gets the general path's answer.
    def line_document(self, uri: str) -> LineDocument | None:
        server = self._server
        if self._shutdown or self._line_workspace is None or not isinstance(server, AgentServer) \
                or server.rt is None:
            return None
        document = self._line_workspace.text_documents.get(unquote(uri))
        return document if isinstance(document, LineDocument) else None

    def document_changed(self, uri: str) -> None:
        assert isinstance(self._server, AgentServer)
        self._server.document_changed(uri)

    def change_failed(self, error: Exception) -> None:
        self._server._report_server_error(error, FeatureNotificationError)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        # One runtime per server: a second initialize would replace it under a running generation.
        if isinstance(self._server, AgentServer) and self._server.initialized_once:
            raise JsonRpcInvalidRequest("initialize: the server is already initialized")
        # Edit plans carry UTF-16 positions (the LSP default); never negotiate another encoding.
        if params.capabilities.general is not None:
            params.capabilities.general.position_encodings = [types.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))

    def hold_response(self, msg_id: Any) -> None:
        self._held = msg_id

    def _handle_response(self, msg_id: Any, result: Any | None = None,
                         error: types.ResponseError | None = None) -> None:
        # The editor may answer a request the server stopped waiting for (an approval that timed out,
        # a run cancelled while the dialog was open). pygls would set the result of that cancelled
        # future, and the InvalidStateError would end the server; the late answer means nothing now.
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            del self._request_futures[msg_id]
            log.info("a late answer to request %s was ignored: the server had stopped waiting", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def early_failed(self, problem: str) -> None:
        """The client was told `initialize` succeeded (server/boot.py) but the server could not
        follow: say so once, and every request that needs the runtime is refused with it."""
        log.error("the server could not start: %s", problem)
        if isinstance(self._server, AgentServer):
            self._server.startup_problem = problem
            self._server.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"lsp-agent could not start: {problem}"))

    def _send_response(self, msg_id: Any, result: Any | None = None,
                       error: types.ResponseError | None = None) -> None:
        if self._held is not None and msg_id == self._held:
            self._held = None  # answered already, with the same capabilities
            if error is not None:
                self.early_failed(error.message)
            return
        # pygls puts a traceback (with file paths) into `data` of internal errors: it goes to the
        # log, the client gets the error class only.
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            log.error("internal error answering %r: %s\n%s", msg_id, error.message, "".join(error.data["traceback"]))
            error = types.ResponseError(code=error.code, message="internal error (details in the server log)")
        super()._send_response(msg_id, result, error)


def unconfigured(problem: str) -> Provider:
    """Stands in for a provider the settings could not build: agent/run refuses before it is used,
    and if anything did ask it, it fails with the problem (the scripted double keeps it a Provider)."""
    failure = ScriptedError(kind=ProviderErrorKind.CONFIG, message=problem, status=None)
    return ScriptedProvider(Script(label="unconfigured", replies=[ScriptedReply(error=failure)], repeat_last=True))


@dataclass
class Runtime:
    root: Path
    agent: Agent
    documents: BufferDocuments
    applier: LspApplier
    sink: LspEventSink
    diagnostics: DiagnosticsPublisher
    watcher: Watcher
    #: the sqlite store behind the agent's storage port (the skills service runs its own SQL on it)
    store: Store
    provider_problem: str | None = None


EDITOR_MODES_BY_ID = by_id(EDITOR_MODES)

#: how often a server whose store could not be opened tries again (on a request that needs it)
STORE_RETRY_S = 1.0


class AgentServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("lsp-agent", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=AgentProtocol, converter_factory=make_converter)
        self.rt: Runtime | None = None
        #: the editor queries the client declared it answers (`experimental.lspAgent.editorQueries`)
        self.editor_kinds: tuple[str, ...] = ()
        #: set when the runtime could not be built after boot.py answered `initialize`
        self.startup_problem: str | None = None
        #: the classified refusal behind it, when there is one (the store unavailable): every request that
        #: needs the runtime answers with it, so the editor sees `store_unavailable` and its reason
        self.startup_error: ProtocolError | None = None
        #: the initialize params the store refused, to start again once it can be used
        self._store_retry: types.InitializeParams | None = None
        self._store_retried_at = 0.0
        self.reporter = layered.OnceReporter()
        self.init_options: Any = None
        self.client_section: Any = None
        self._initialized = False
        self._untold: list[str] = []
        #: the workspace's own config as last inspected: what of it applies, what is gated
        self.trust_view: WorkspaceView | None = None
        #: the editor said it does not trust the folder (`editorTrusted: false` at initialize)
        self.editor_distrusts = False
        #: the editor extension's version (`clientVersion` at initialize), compared with ours once
        self.client_version: str | None = None
        self._background: set[asyncio.Future[None]] = set()
        self.lifecycle = Lifecycle()
        #: the editor's mode (agent/mode), laid over the settings every time they are resolved
        self.mode: Intent = "agent"

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def initialized_once(self) -> bool:
        return self.rt is not None or self.startup_problem is not None

    def document_changed(self, uri: str) -> None:
        """After any didChange is applied (pygls's route or the fast path): a read waiting for it goes on."""
        self.runtime().documents.changed(uri)

    def runtime(self) -> Runtime:
        if self.rt is None and self._store_retry is not None:
            self._start_when_the_store_can_be_used()
        if self.rt is None:
            if self.startup_error is not None:
                raise self.startup_error
            if self.startup_problem is not None:
                raise ProtocolError(UNAVAILABLE, f"the server could not start: {self.startup_problem}",
                                    kind="not_initialized")
            raise ProtocolError(UNAVAILABLE, "the server is not initialized yet", kind="not_initialized")
        return self.rt

    def setup(self, params: types.InitializeParams) -> None:
        try:
            self._setup(params)
        except ProtocolError:
            raise
        except AgentError as exc:  # the store cannot be used: its classified error, not an internal one
            log.error("initialize failed: %s", exc.message)
            self.startup_error = from_core(exc)
            self._store_retry = params
            raise self.startup_error from None
        except Exception as exc:  # the store, the workspace: say what, not only "internal error"
            log.exception("initialize failed")
            raise ProtocolError(UNAVAILABLE, f"{type(exc).__name__}: {exc}", kind="not_initialized") from None

    def _start_when_the_store_can_be_used(self) -> None:
        """A store that could not be opened at start (a full disk, a read-only directory) is tried again
        when a request needs the runtime — at most once a second, so a keystroke flood does not retry on
        every change — and the server starts once the cause is gone, without a restart."""
        params = self._store_retry
        now = time.monotonic()
        if params is None or now - self._store_retried_at < STORE_RETRY_S:
            return
        self._store_retried_at = now
        try:
            self.setup(params)
        except ProtocolError:
            return  # still refused: startup_error says why
        self._store_retry = None
        self.startup_error = self.startup_problem = None
        log.info("the session store can be used again: the server started")
        if self._initialized:
            self.initialized()
            for participant in self.lifecycle.participants:
                participant.started(self)
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Info, message="lsp-agent started: the session store can be used again"))

    def _setup(self, params: types.InitializeParams) -> None:
        root = _root_of(params)
        self.client_version, options = split_client_version(to_plain(params.initialization_options))
        self.editor_distrusts, options = _editor_trust(options)
        self.init_options = _with_absolute_script(options, root)
        self.trust_view = self.inspect_trust(root)
        settings, problems = layered.resolve(root, self.init_options, None, self.trust_view)
        settings = self.in_mode(settings)
        provider, problem = self._provider(settings)
        caps = EditorCaps.of(params.capabilities)
        window = params.capabilities.window
        own = OwnWrites()
        documents = BufferDocuments(self.workspace, root)
        applier = LspApplier(self, root, documents, own, caps)
        diagnostics = DiagnosticsPublisher(self, root, documents)
        sink = LspEventSink(self, diagnostics.update, server_progress=bool(window and window.work_done_progress),
                            steer_chars=lambda: self.runtime().agent.queue.steer_chars())
        store = Store(workspace_dir(root) / "store.db", settings.limits.store_busy_ms)
        env = open_environment(root, settings, provider, sink, store=store, watched=True)
        env = dataclasses.replace(env, documents=documents, applier=applier,
                                  approver=EditorApprover(self))  # agent/requestApproval (server/approval.py)
        self.editor_kinds = tuple(declared_kinds(to_plain(params.capabilities.experimental)))
        if self.editor_kinds:  # agent/editorQuery (server/editor_queries.py): the client answers some kinds
            editor = LspEditorQueries(self, root, documents, self.editor_kinds,
                                      lambda: self.runtime().agent.env.settings.editor_queries)
            env = dataclasses.replace(env, editor=editor, registry=default_registry(settings, self.editor_kinds))
        self._watch_mcp(cast("McpManager | None", env.mcp))
        agent = Agent(env)
        watcher = Watcher(root, own, self.note_external_change, ignore_paths=[workspace_dir(root)])
        self.rt = Runtime(root.resolve(), agent, documents, applier, sink, diagnostics, watcher, store, problem)
        memory.settle_startup()
        self.tell([*problems, *([problem] if problem else [])])
        log.info("workspace %s, model %s, applyEdit %s", root, settings.model, caps.apply_edit)

    def initialized(self) -> None:
        self._initialized = True
        mismatch = mismatch_message(self.client_version, server_version())
        if mismatch:  # first, and even when the runtime could not start: it may be why
            log.warning("%s", mismatch)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=mismatch))
        self.tell([])
        if self.rt is None:
            return  # it could not start: said once already (AgentProtocol.early_failed)
        rt = self.rt
        rt.watcher.start()
        workspace = self.client_capabilities.workspace
        if workspace is not None and workspace.configuration:
            task = asyncio.ensure_future(self.pull_configuration())
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        for notice in rt.store.notices:  # a damaged store moved aside: where it went
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=notice))
        told = asyncio.ensure_future(self.tell_sandbox())
        self._background.add(told)
        told.add_done_callback(self._background.discard)
        self.tell_trust()

    def tell_trust(self) -> None:
        """When the workspace's own config is (partly) ignored for want of trust: the editor is asked to
        ask the user (agent/workspaceTrustChanged; the server never waits) and the user is told what."""
        view = self.trust_view
        if view is None or not self._initialized:
            return
        if view.ignored:
            self.protocol.notify(AGENT_WORKSPACE_TRUST_CHANGED, trust_state(view).wire())
        line = ignored_line(view, HOW_TO_TRUST["editor"])
        if line:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=line))

    async def tell_sandbox(self) -> None:
        """Say once, as a warning the editor shows, when commands cannot be sandboxed."""
        from lsp_agent.sandbox import startup_notice

        notice = await asyncio.to_thread(startup_notice, self.runtime().agent.env.settings.sandbox_mode)
        if notice:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=notice))

    async def shutdown_runtime(self) -> None:
        if self.rt is None:
            return
        await self.rt.agent.shutdown()
        await self.rt.watcher.stop()
        close = getattr(self.rt.agent.env.provider, "aclose", None)
        if close is not None:
            await close()
        if self.rt.agent.env.mcp is not None:  # MCP servers stop with the server
            await self.rt.agent.env.mcp.aclose()

    # --- MCP servers (lsp_agent/mcp; agent/mcp/list in server/mcp_methods.py) --------------------

    def _watch_mcp(self, manager: McpManager | None) -> None:
        """A server that fails to start or dies is shown once in the editor (and logged)."""
        if manager is None:
            return

        def report(text: str) -> None:
            log.warning("%s", text)
            if self._initialized:
                self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                                 message=f"lsp-agent: {text}"))

        manager.report = report

    def _replace_mcp(self, settings: Settings) -> dict[str, Any]:
        """Changed `mcp` settings: the old servers stop (in the background), new ones start on need."""
        rt = self.runtime()
        old = cast("McpManager | None", rt.agent.env.mcp)
        if old is not None and old.settings == settings.mcp:
            return {}
        fresh = mcp_manager(settings, rt.root)
        self._watch_mcp(fresh)
        if old is not None:
            task = asyncio.ensure_future(old.aclose())
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        return {"mcp": fresh}

    # --- settings -------------------------------------------------------------------------------

    def _provider(self, settings: Settings) -> tuple[Provider, str | None]:
        try:
            return make_provider(settings), None
        except ProviderError as exc:
            from lsp_agent.providers.registry import NoModel

            problem = (exc.message if isinstance(exc, NoModel)
                       else f"model {settings.model!r} cannot be used: {exc.message}")
            return unconfigured(problem), problem

    def in_mode(self, settings: Settings) -> Settings:
        return apply_mode(settings, EDITOR_MODES_BY_ID[self.mode])

    def change_settings(self, section: Any) -> None:
        """A new `lspAgent` section: applies to generations started from now on."""
        rt = self.runtime()
        self.client_section = _with_absolute_script(section, rt.root)
        self.reload_settings()

    def inspect_trust(self, root: Path) -> WorkspaceView:
        return inspect_workspace(root, editor_distrusts=self.editor_distrusts)

    def recheck_trust(self) -> WorkspaceView:
        """The workspace's config inspected again; when its content or the user's trust changed
        (a file edited, pulled or planted by a command), the settings reload and the editor is told."""
        view = self.inspect_trust(self.runtime().root)
        known = self.trust_view
        if known is None or (view.hash, view.state) != (known.hash, known.state):
            self.reload_settings(view)
            self.tell_trust()
        return view

    def reload_settings(self, view: WorkspaceView | None = None) -> WorkspaceView:
        """Settings from the files (the workspace's as `view` says, default: inspected now) and the
        editor's layers; the next generations use them, MCP servers follow."""
        rt = self.runtime()
        self.trust_view = view = view or self.inspect_trust(rt.root)
        settings, problems = layered.resolve(rt.root, self.init_options, self.client_section, view)
        settings = self.in_mode(settings)
        provider, problem = self._provider(settings)
        rt.provider_problem = problem
        rt.agent.reconfigure(settings=settings, provider=provider,
                             registry=default_registry(settings, self.editor_kinds),
                             model=model_facts(settings), **self._replace_mcp(settings))
        self.tell([*problems, *([problem] if problem else [])])
        return view

    async def pull_configuration(self) -> None:
        rt = self.runtime()
        try:
            items = [types.ConfigurationItem(section=CONFIG_SECTION, scope_uri=rt.root.as_uri())]
            answer = await self.workspace_configuration_async(types.ConfigurationParams(items=items))
        except Exception as exc:  # an editor without this section simply has no settings for us
            log.info("workspace/configuration failed: %s", exc)
            return
        section = to_plain(answer[0]) if answer else None
        if section:
            self.change_settings(section)

    def tell(self, problems: list[str]) -> None:
        """Show each new settings problem once (after `initialized`, as LSP asks)."""
        self._untold += self.reporter.fresh(problems)
        if not self._initialized or not self._untold:
            return
        from lsp_agent.providers.registry import NO_MODEL

        lines, self._untold = self._untold, []
        texts = [f"lsp-agent: {NO_MODEL}"] if NO_MODEL in lines else []  # not a setting that fell back
        lines = [line for line in lines if line != NO_MODEL]
        if lines:
            texts.insert(0, "lsp-agent: settings problems (defaults used instead): " + "; ".join(lines))
        for text in texts:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))

    # --- the core, for the handlers -------------------------------------------------------------

    def start_run(self, params: RunParams) -> Started:
        rt = self.runtime()
        self.recheck_trust()  # a config changed since (or planted by the last run) is gated before it is used
        base = rt.agent.env
        settings, provider = base.settings, base.provider
        if params.model and params.model != settings.model:
            settings = settings.model_copy(update={"model": params.model})
            try:
                provider = make_provider(settings)
            except ProviderError as exc:
                raise ProtocolError(UNAVAILABLE, f"model {params.model!r} cannot be used: {exc.message}",
                                    kind="config") from None
        elif rt.provider_problem:
            raise ProtocolError(UNAVAILABLE, rt.provider_problem, kind="config")
        choice = None if provider is base.provider else ModelChoice(settings, provider, model_facts(settings))
        started = rt.agent.start(params.prompt, params.session_id, params.max_steps, model=choice,
                                 attachments=params.attachments)
        if params.work_done_token is not None:
            rt.sink.use_token(started.generation, params.work_done_token)
        return started

    def note_external_change(self, paths: list[str]) -> None:
        """From the watcher: tell each session about the changes that concern it — files it read,
        or any file when it has a check standing (the check no longer describes the sources)."""
        rt = self.runtime()
        for session in list(rt.agent.sessions.values()):
            before = derive(session.history)
            standing = before.status is not VerificationStatus.NOT_RUN
            relevant = paths if standing else [p for p in paths if p in session.files.read_steps]
            if relevant:
                session.note_external_change(relevant)
                self._tell_verification(session.id, before, derive(session.history))

    def _tell_verification(self, session_id: str, before: Verification, after: Verification) -> None:
        """An idle session's check went stale (its note was recorded): the editor's footer and status
        item change with it. A running generation's run_finish says it instead."""
        if after.status is before.status and after.invalidated_by == before.invalidated_by:
            return
        stale = after.invalidated_by
        params = VerificationChangedParams(
            session_id=session_id, verification=after.status,
            verification_reason=stale.reason() if stale else None,
            invalidated_by=InvalidatedBy(paths=list(stale.paths), by=stale.by, step=stale.step,
                                         tool=stale.tool) if stale else None)
        self.protocol.notify(AGENT_VERIFICATION_CHANGED, params.wire())


def _root_of(params: types.InitializeParams) -> Path:
    candidates: list[str | None] = [params.root_uri]
    candidates += [f.uri for f in params.workspace_folders or []]
    for uri in candidates:
        if uri:
            path = to_fs_path(uri)
            if path and Path(path).is_dir():
                return Path(path)
    if params.root_path and Path(params.root_path).is_dir():
        return Path(params.root_path)
    log.warning("no usable workspace root from the client; using the current directory")
    return Path.cwd()


def _editor_trust(options: Any) -> tuple[bool, Any]:
    """(whether the editor distrusts the folder, the settings layer without that fact).

    `editorTrusted` is not a setting: it is what the editor knows about the folder (VS Code's
    Restricted Mode), and only `false` changes anything, so an editor that does not send it keeps
    the trust the user stored."""
    if not isinstance(options, dict) or "editorTrusted" not in options:
        return False, options
    rest = {k: v for k, v in options.items() if k != "editorTrusted"}
    return options["editorTrusted"] is False, rest


def _with_absolute_script(layer: Any, root: Path) -> Any:
    """A relative `script` path in editor settings means: relative to the workspace root."""
    if isinstance(layer, dict) and isinstance(layer.get("script"), str) and not os.path.isabs(layer["script"]):
        return {**layer, "script": str(root / layer["script"])}
    return layer
