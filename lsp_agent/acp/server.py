"""The ACP agent: thin handlers that map Agent Client Protocol calls onto the core `Agent` (one per
workspace root, each with the sqlite store, settings, tools, sandbox and approvals the CLI and the
language server use). Protocol → core mapping is documented in docs/acp.md."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.core import AgentSideConnection
from acp.helpers import update_agent_message_text, update_current_mode
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionForkCapabilities,
    SessionListCapabilities,
    SetSessionModeResponse,
)

from lsp_agent._startup import memory
from lsp_agent._version import __version__
from lsp_agent.acp import modes, sessions
from lsp_agent.acp.bounded_lines import BoundedLineReader
from lsp_agent.acp.fs import ClientApplier, ClientDocuments, ClientFs
from lsp_agent.acp.mcp import client_servers
from lsp_agent.acp.permission import AcpApprover
from lsp_agent.acp.prompt import prompt_text
from lsp_agent.acp.trust import ask_trust
from lsp_agent.acp.updates import UpdateSink, replay
from lsp_agent.app.runtime import make_provider, mcp_manager, model_facts, open_environment
from lsp_agent.app.toolset import default_registry
from lsp_agent.core.agent import Agent
from lsp_agent.core.errors import AgentError, AgentErrorKind, not_found
from lsp_agent.core.queue import QueueStatus
from lsp_agent.domain.events import RunFinish, StopReason
from lsp_agent.domain.ports import Provider, ProviderError, ProviderErrorKind
from lsp_agent.protocol.errors import INTERNAL, INVALID_PARAMS, UNAVAILABLE, from_core
from lsp_agent.providers.scripted import Script, ScriptedError, ScriptedProvider, ScriptedReply
from lsp_agent.settings.config import ConfigError, Settings, inspect_workspace, load_settings
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.settings.workspace_trust import HOW_TO_TRUST, TrustChanged, WorkspaceView, ignored_line, trust

log = logging.getLogger(__name__)

#: our stop reasons as ACP's (an `error` is a JSON-RPC error instead, with the record in `data`)
STOP_REASONS = {
    StopReason.FINAL: "end_turn",
    StopReason.STEP_LIMIT: "max_turn_requests",
    StopReason.CANCELLED: "cancelled",
    StopReason.LOOP: "refusal",  # the loop guard refused to go on: the model repeated itself
    StopReason.HANDOFF: "end_turn",  # the work goes on in `handoffTo` (see docs/acp.md)
}
PROVIDER_KINDS = frozenset(k.value for k in ProviderErrorKind)
STEER = "lsp_agent/steer"
REPLAY_PAGE = 200




def error(code: Any, message: str, kind: str, **data: Any) -> RequestError:
    return RequestError(code.code, message, {"kind": kind, "status": code.status, **data})


@contextmanager
def core_errors() -> Iterator[None]:
    """Core refusals as the documented JSON-RPC errors (the same codes the language server uses)."""
    try:
        yield
    except AgentError as exc:
        problem = from_core(exc)
        raise RequestError(problem.code, problem.message, problem.wire_data()) from None


@dataclasses.dataclass
class Workspace:
    root: Path
    agent: Agent
    fs: ClientFs
    #: the MCP servers the client passed last (the `mcp.servers` layer they make)
    client_mcp: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: the workspace's own config as the settings were last made from it
    trust_view: WorkspaceView | None = None
    #: the config contents the user was already asked about on this connection (asked once each)
    trust_asked: set[str] = dataclasses.field(default_factory=set)
    #: the trust question in flight: a prompt waits for its answer before it runs
    trust_question: asyncio.Future[None] | None = None


class LspAgentAcp:
    """`acp.Agent`: one per connection."""

    def __init__(self, layer: dict[str, Any] | None = None) -> None:
        self.layer = layer or {}
        self.conn: AgentSideConnection | None = None
        self.sink: UpdateSink | None = None
        self.caps = ClientCapabilities()
        self.workspaces: dict[Path, Workspace] = {}
        self.session_roots: dict[str, Path] = {}
        self._background: set[asyncio.Future[None]] = set()

    def on_connect(self, conn: AgentSideConnection) -> None:
        self.conn = conn
        self.sink = UpdateSink(conn, self._take_diffs)

    def _take_diffs(self, paths: list[str]) -> list[Any]:
        return [d for ws in self.workspaces.values() for d in ws.fs.take_diffs(paths)]

    # --- initialize -----------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        self.caps = client_capabilities or ClientCapabilities()
        # The client's version when we speak it, else ours (the client then decides).
        negotiated = protocol_version if 1 <= protocol_version <= PROTOCOL_VERSION else PROTOCOL_VERSION
        return InitializeResponse(
            protocol_version=negotiated,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                session_capabilities=SessionCapabilities(list=SessionListCapabilities(),
                                                         fork=SessionForkCapabilities()),
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=False, sse=False)),
            agent_info=Implementation(name="lsp-agent", title="lsp-agent", version=__version__),
            auth_methods=[])

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        # No auth methods are offered: provider keys come from the settings and the environment.
        return AuthenticateResponse()

    # --- sessions -------------------------------------------------------------------------------

    def _settings(self, root: Path, client_mcp: dict[str, dict[str, Any]],
                  view: WorkspaceView | None = None) -> Settings:
        layers = [self.layer] + ([{"mcp": {"servers": client_mcp}}] if client_mcp else [])
        try:
            return load_settings(root, *layers, view=view)
        except ConfigError as exc:
            raise error(UNAVAILABLE, f"the settings of {root} cannot be used: {exc}", "config") from None

    def _settings_without_workspace(self, client_mcp: dict[str, dict[str, Any]]) -> Settings:
        layers = [self.layer] + ([{"mcp": {"servers": client_mcp}}] if client_mcp else [])
        try:
            return load_settings(None, *layers)
        except ConfigError:
            return Settings()

    def _workspace(self, cwd: str, mcp_servers: list[Any] | None = None) -> Workspace:
        root = Path(cwd)
        if not root.is_absolute() or not root.is_dir():
            raise error(INVALID_PARAMS, f"cwd {cwd!r} is not an absolute path to a directory", "invalid_params",
                        field="cwd")
        root = root.resolve()
        client_mcp = client_servers(mcp_servers)
        if root in self.workspaces:
            ws = self.workspaces[root]
            if client_mcp != ws.client_mcp:
                self._replace_mcp(ws, client_mcp)
            return ws
        assert self.conn is not None and self.sink is not None
        view = inspect_workspace(root)
        settings = self._settings(root, client_mcp, view)
        try:
            provider = make_provider(settings)
        except ProviderError as exc:
            raise error(UNAVAILABLE, f"model {settings.model!r} cannot be used: {exc.message}", "config") from None
        fs_caps = self.caps.fs
        fs = ClientFs(self.conn, root, bool(fs_caps and fs_caps.read_text_file),
                      bool(fs_caps and fs_caps.write_text_file))
        documents = ClientDocuments(fs)
        env = open_environment(root, settings, provider, self.sink)
        env = dataclasses.replace(env, documents=documents, applier=ClientApplier(fs, documents),
                                  approver=AcpApprover(self.conn, self.sink))
        ws = Workspace(root, Agent(env), fs, client_mcp, view)
        ignored = ignored_line(view, HOW_TO_TRUST["acp"])
        if ignored:
            log.warning("%s", ignored)
        memory.settle_startup()
        self.workspaces[root] = ws
        return ws

    def _replace_mcp(self, ws: Workspace, client_mcp: dict[str, dict[str, Any]]) -> None:
        """Other client MCP servers: new settings (the mode kept), new servers from the next generation on;
        the old servers stop in the background."""
        current = ws.agent.env.settings
        settings = self._settings(ws.root, client_mcp).model_copy(
            update={"approval_policy": current.approval_policy, "sandbox_mode": current.sandbox_mode})
        old = ws.agent.env.mcp
        ws.agent.reconfigure(settings=settings, mcp=mcp_manager(settings, ws.root))
        ws.client_mcp = client_mcp
        if old is not None:
            task = asyncio.ensure_future(old.aclose())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    # --- workspace trust (docs/security.md) --------------------------------------------------------

    def _offer_trust(self, ws: Workspace, session_id: str) -> None:
        """Ask once per config content whether to trust the workspace's gated settings; the answer
        comes in the background (the session is usable at once, with the safe settings)."""
        view = ws.trust_view
        if view is None or not view.ignored or view.hash is None or view.hash in ws.trust_asked:
            return
        if ws.trust_question is not None and not ws.trust_question.done():
            return
        ws.trust_asked.add(view.hash)
        task = asyncio.ensure_future(self._ask_trust(ws, session_id, view))
        ws.trust_question = task
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _ask_trust(self, ws: Workspace, session_id: str, view: WorkspaceView) -> None:
        assert self.conn is not None and self.sink is not None
        await asyncio.sleep(0)  # after the session/new (or load) answer, so the client knows the session
        if not await ask_trust(self.conn, self.sink, session_id, view):
            return
        try:
            trust(inspect_workspace(ws.root), view.hash)  # only the content the user was shown
        except TrustChanged as exc:
            log.warning("workspace trust not stored: %s", exc)
            return
        self._reload(ws)

    def _recheck_trust(self, ws: Workspace, session_id: str) -> None:
        """Before a prompt: a config changed since (edited, pulled, written by a command the model ran)
        has another hash, so it is untrusted again; the settings follow and the user is asked."""
        view = inspect_workspace(ws.root)
        known = ws.trust_view
        if known is None or (view.hash, view.state) != (known.hash, known.state):
            self._reload(ws, view)
        self._offer_trust(ws, session_id)

    def _reload(self, ws: Workspace, view: WorkspaceView | None = None) -> None:
        """Settings made again from the files (the workspace's as trusted now); the mode is kept, the
        provider, tools and MCP servers follow. It fails closed: a workspace config that cannot be used
        is left out, and a model that cannot be built refuses the next prompt (never the old ones)."""
        view = view or inspect_workspace(ws.root)
        current = ws.agent.env.settings
        try:
            settings = self._settings(ws.root, ws.client_mcp, view)
        except RequestError as exc:
            log.warning("%s; the workspace's config is left out", exc)
            settings = self._settings_without_workspace(ws.client_mcp)
        settings = settings.model_copy(
            update={"approval_policy": current.approval_policy, "sandbox_mode": current.sandbox_mode})
        try:
            provider: Provider = make_provider(settings)
        except ProviderError as exc:
            provider = _refusing(f"model {settings.model!r} cannot be used: {exc.message}")
        ws.trust_view = view
        old = ws.agent.env.mcp
        ws.agent.reconfigure(settings=settings, provider=provider, registry=default_registry(settings),
                             model=model_facts(settings), mcp=mcp_manager(settings, ws.root))
        if old is not None:
            task = asyncio.ensure_future(old.aclose())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _bind(self, ws: Workspace, session_id: str) -> None:
        assert self.sink is not None
        self.session_roots[session_id] = ws.root
        self.sink.roots[session_id] = ws.root
        ws.fs.session_id = session_id  # fs/* requests name the latest session of the workspace

    def _of(self, session_id: str) -> Workspace:
        root = self.session_roots.get(session_id)
        if root is None:
            raise RequestError(*_not_found(session_id))
        return self.workspaces[root]

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        with core_errors():  # a store that cannot be opened or written: its classified error
            ws = self._workspace(cwd, mcp_servers)
            session = ws.agent.session(None)
        self._bind(ws, session.id)
        self._offer_trust(ws, session.id)
        return NewSessionResponse(session_id=session.id, modes=modes.state(ws.agent.env.settings))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        with core_errors():
            ws = self._workspace(cwd, mcp_servers)
            known = ws.agent.knows_session(session_id)
        if not known:
            raise RequestError(*_not_found(session_id))
        self._bind(ws, session_id)
        await self._replay(ws, session_id)  # the transcript arrives before the answer, as ACP asks
        self._offer_trust(ws, session_id)
        return LoadSessionResponse(modes=modes.state(ws.agent.env.settings))

    async def _replay(self, ws: Workspace, session_id: str) -> None:
        assert self.sink is not None
        sink = self.sink
        after: str | None = None
        while True:
            with core_errors():
                page = ws.agent.session_page(session_id, after, REPLAY_PAGE)
            for message in page.messages:
                replay(message, lambda update: sink.send(session_id, update),
                       lambda m: m.generation or "stored")
            if page.next is None:
                break
            after = page.next
        await sink.flush()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        """With `cwd`: that workspace's stored sessions; without: those of every workspace this
        connection opened, and of the directory the client started us in when it has sessions (a
        client that lists before it opens anything, as command-line clients do, started us there)."""
        with core_errors():
            if cwd is not None:
                ws = self._workspace(cwd)
                return sessions.list_page({ws.root: ws.agent}, cursor)
            here = Path.cwd().resolve()
            if here not in self.workspaces and (workspace_dir(here) / "store.db").is_file():
                self._workspace(str(here))
            return sessions.list_page({root: ws.agent for root, ws in self.workspaces.items()}, cursor)

    async def fork_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                           mcp_servers: list[Any] | None = None, **kwargs: Any) -> ForkSessionResponse:
        at = sessions.fork_point(kwargs.get("lspAgent"))
        with core_errors():
            ws = self._workspace(cwd, mcp_servers)
            forked = sessions.fork(ws.agent, session_id, at)
        self._bind(ws, forked)
        self._offer_trust(ws, forked)
        return ForkSessionResponse(session_id=forked, modes=modes.state(ws.agent.env.settings),
                                   field_meta={"lspAgent": {"parentId": session_id, "atMessageId": at}})

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        ws = self._of(session_id)
        if mode_id not in modes.BY_ID:
            raise error(INVALID_PARAMS, f"unknown mode {mode_id!r}; one of {', '.join(modes.BY_ID)}",
                        "invalid_params", field="modeId")
        # The mode is the workspace's: every ACP session on this root in this process shares the settings
        # (a follow-up the queue starts later runs with them too).
        ws.agent.reconfigure(settings=modes.apply(ws.agent.env.settings, mode_id))
        assert self.sink is not None
        for sid, root in self.session_roots.items():
            if root == ws.root:
                self.sink.send(sid, update_current_mode(mode_id))
        await self.sink.flush()
        return SetSessionModeResponse()

    # --- prompts --------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        ws = self._of(session_id)
        text = prompt_text(prompt)
        self._recheck_trust(ws, session_id)
        if ws.trust_question is not None and not ws.trust_question.done():
            # The run uses what the user decides; no answer within the approval timeout is "not now".
            await asyncio.wait([ws.trust_question], timeout=ws.agent.env.settings.approval_timeout_s)
        with core_errors():
            session = ws.agent.session(session_id)
            if session.active is None and not session.context.compacting:
                generation: str | None = ws.agent.start(text, session_id).generation
            else:  # our follow-up queue: it starts when the running generation ends
                item, _ = ws.agent.follow_ups.add(session_id, text)
                generation = None
        if generation is not None:
            result = await ws.agent.wait(generation)
        else:
            with core_errors():  # withdrawing or sending the row writes to the store too
                result = await self._wait_queued(ws, session_id, item.id)
        answer = await self._answer(session_id, result)
        if result is not None and answer.field_meta is not None:
            answer.field_meta["lspAgent"]["promptMessageId"] = sessions.prompt_message(
                ws.agent, session_id, result.generation)
        return answer

    async def _wait_queued(self, ws: Workspace, session_id: str, item_id: str) -> RunFinish | None:
        """Wait for the generation that sends queue row `item_id`, then for its end. A row the queue
        paused (the run before it was cancelled or failed) is withdrawn: its prompt ends `cancelled`."""
        agent = ws.agent
        while True:
            item = agent.queue.get(item_id)
            session = agent.sessions.get(session_id)
            active = session.active if session is not None else None
            if item.status is QueueStatus.SENT:
                # Sent in the same step that launched its generation, which is the active one now.
                return await agent.wait(active.id) if active is not None else None
            if item.status is QueueStatus.PAUSED:
                agent.follow_ups.cancel(item_id)
                return None
            if item.status is not QueueStatus.QUEUED:
                return None
            if active is None:
                with core_errors():
                    agent.follow_ups.send_now(item_id)
                continue
            await agent.wait(active.id)
            await asyncio.sleep(0)

    async def _answer(self, session_id: str, result: RunFinish | None) -> PromptResponse:
        assert self.sink is not None
        if result is None:
            await self.sink.flush()
            return PromptResponse(stop_reason="cancelled", field_meta={"lspAgent": {"queued": "withdrawn"}})
        record = result.wire()
        line = f"\n\n— lsp-agent: {result.stop_reason.value} · verification {result.verification.value}"
        if result.verification_reason:
            line += f" ({result.verification_reason})"
        self.sink.send(session_id, update_agent_message_text(line + "\n"))
        await self.sink.flush()
        if result.stop_reason is StopReason.ERROR:
            info = result.error
            kind = info.kind if info is not None else "internal"
            message = info.message if info is not None else "the generation failed"
            # The model server failed (after its retries): unavailable, as the language server says it.
            code = UNAVAILABLE.code if kind in PROVIDER_KINDS or kind in UNAVAILABLE.kinds else INTERNAL.code
            raise RequestError(code, f"the generation failed ({kind}): {message}", {"kind": kind, "lspAgent": record})
        return PromptResponse(stop_reason=STOP_REASONS[result.stop_reason],
                              field_meta={"lspAgent": record})

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        root = self.session_roots.get(session_id)
        if root is not None:
            self.workspaces[root].agent.cancel(session_id)

    # --- extensions -----------------------------------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == sessions.CHECKPOINTS:
            listing = sessions.parse_checkpoints(params)
            return sessions.checkpoints(self._of(listing.session_id).agent, listing)
        if method == sessions.REWIND:
            return await self._rewind(sessions.parse_rewind(params))
        if method != STEER:
            raise RequestError.method_not_found(f"_{method}")
        session_id, text = params.get("sessionId"), params.get("text")
        if not isinstance(session_id, str) or not isinstance(text, str):
            raise error(INVALID_PARAMS, "_lsp_agent/steer takes {sessionId: string, text: string, "
                        "clientId?: string, expectedGeneration?: string}", "invalid_params")
        ws = self._of(session_id)
        session = ws.agent.sessions.get(session_id)
        expected = params.get("expectedGeneration")
        if not isinstance(expected, str):
            if session is None or session.active is None:
                raise RequestError(*_conflict(f"session {session_id} runs no generation to steer"))
            expected = session.active.id
        client_id = params.get("clientId")
        client_id = client_id if isinstance(client_id, str) else f"acp_{uuid.uuid4().hex[:12]}"
        with core_errors():
            receipt = await ws.agent.corrections.steer(session_id, expected, client_id, text)
        return {"receipt": receipt.wire()}

    async def _rewind(self, params: Any) -> dict[str, Any]:
        """A conversation (or both) rewind continues in the fork: it is registered here and its
        history replayed as `session/update`s, as `session/load` would."""
        ws = self._of(params.session_id)
        with core_errors():
            result = await sessions.rewind(ws.agent, params)
        forked = result.get("sessionID")
        if isinstance(forked, str):
            self._bind(ws, forked)
            await self._replay(ws, forked)
        return result

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("ignored extension notification _%s", method)

    # --- end ------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        for ws in self.workspaces.values():
            env = ws.agent.env
            await ws.agent.shutdown()
            close = getattr(env.provider, "aclose", None)
            if close is not None:
                await close()
            if env.mcp is not None:
                await env.mcp.aclose()
            env.store.close()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.sink is not None:
            await self.sink.aclose()


def _refusing(problem: str) -> Provider:
    """A provider that fails every request with `problem` (a prompt then ends with that error)."""
    failure = ScriptedError(kind=ProviderErrorKind.CONFIG, message=problem, status=None)
    return ScriptedProvider(Script(label="unconfigured", replies=[ScriptedReply(error=failure)], repeat_last=True))


def _not_found(session_id: str) -> tuple[int, str, dict[str, Any]]:
    problem = from_core(not_found(f"no session {session_id!r}: create one with session/new or load it with "
                                  "session/load first", AgentErrorKind.UNKNOWN_SESSION))
    return problem.code, problem.message, problem.wire_data()


def _conflict(message: str) -> tuple[int, str, dict[str, Any]]:
    problem = from_core(AgentError(AgentErrorKind.CONFLICT, message))
    return problem.code, problem.message, problem.wire_data()


#: the largest JSON-RPC line read from the client (ACP's SDK default: images travel inline)
LINE_LIMIT = 50 * 1024 * 1024


async def _stdio(out: Any) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = BoundedLineReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    reader.writer = writer
    return reader, writer


async def _serve(layer: dict[str, Any], out: Any) -> None:
    reader, writer = await _stdio(out)
    agent = LspAgentAcp(layer)
    # session/fork is in the SDK's unstable set: without the flag it answers "method not found"
    conn = AgentSideConnection(cast("Any", agent), writer, reader, listening=False, use_unstable_protocol=True)
    try:
        await conn.listen()  # returns when the client closes our stdin
    finally:
        await agent.aclose()
        await conn.close()


def serve(layer: dict[str, Any] | None = None) -> int:
    # The protocol keeps the real stdout; fd 1 then points at stderr, so a stray print or a child
    # process that inherits stdout can never corrupt the stream.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    asyncio.run(_serve(layer or {}, out))
    return 0
