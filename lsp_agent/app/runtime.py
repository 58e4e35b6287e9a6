"""The headless front end: the same core on disk ports, for the CLI, eval and CI."""

from __future__ import annotations

import asyncio
import functools
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lsp_agent._startup import memory
from lsp_agent.app.session_tools import session_tools
from lsp_agent.app.toolset import default_registry
from lsp_agent.checkpoints.workspace import WorkspaceCheckpoints
from lsp_agent.context.compaction import touched_files
from lsp_agent.context.handoff import CONTINUE_PROMPT
from lsp_agent.core.errors import AgentError, AgentErrorKind
from lsp_agent.core.lease import holder_text
from lsp_agent.core.loop import Generation
from lsp_agent.core.process_identity import process_owner
from lsp_agent.core.session import AgentSession, Environment, ModelFacts
from lsp_agent.core.storage import StoreUnavailable
from lsp_agent.core.write_detect import IgnoredPaths
from lsp_agent.disk.applier import DiskApplier
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.events import ErrorEvent, ErrorInfo, RunFinish, StopReason, Tokens, VerificationStatus
from lsp_agent.domain.ports import EventSink, Provider, ProviderError
from lsp_agent.settings.config import Settings
from lsp_agent.settings.paths import workspace_dir
from lsp_agent.skills.discovery import WorkspaceSkills
from lsp_agent.store.db import Store
from lsp_agent.store.trace import TraceDir
from lsp_agent.tools.argv_rules import command_refusal
from lsp_agent.tools.list_dir import git_ignored_paths

if TYPE_CHECKING:
    from lsp_agent.mcp.manager import McpManager

if TYPE_CHECKING:
    from lsp_agent.providers.discovery import ServerFacts


def make_provider(settings: Settings, base_url: str | None = None, wire: str | None = None) -> Provider:
    from lsp_agent.providers.registry import build_provider

    return build_provider(settings, settings.model, base_url=base_url, wire=wire)


def _window_declared(settings: Settings, provider: str, model_id: str) -> bool:
    if settings.compaction.context_window is not None:
        return True
    return any(declared is not None and "context_window" in declared.model_fields_set
               for declared in (settings.models.get(model_id), settings.models.get(f"{provider}/{model_id}")))


def model_facts(settings: Settings, wire: str | None = None, server: ServerFacts | None = None) -> ModelFacts:
    """Registry facts with the user's declarations; the server's context window beats the
    registry's (it is what the model runs with) but not the user's own declaration."""
    from lsp_agent.providers.registry import resolve_model

    try:
        resolved = resolve_model(settings, settings.model)
    except ProviderError:
        return ModelFacts(name=settings.model)
    protocol = wire or (resolved.provider_config.wire if resolved.provider_config else "chat")
    info = resolved.info
    if (server is not None and server.context_window is not None
            and not _window_declared(settings, resolved.provider_name, resolved.model_id)):
        info = info.model_copy(update={"context_window": server.context_window})
    return ModelFacts(name=resolved.name, info=info, known=resolved.known, protocol=protocol)


async def discover_server(provider: Provider, settings: Settings) -> ServerFacts | None:
    """The server's own facts (context window, model id), for HTTP providers that allow it."""
    from lsp_agent.providers.discovery import discover
    from lsp_agent.providers.http_base import HttpStreamingProvider

    if not isinstance(provider, HttpStreamingProvider) or not provider.config.discover:
        return None
    return await discover(provider.config, provider.model or settings.model, provider_name=provider.provider_name)


def run_header(env: Environment, server: ServerFacts | None) -> str:
    """One line before the run: model, endpoint, wire, and the context window with its source."""
    from lsp_agent.providers.http_base import HttpStreamingProvider

    provider, facts = env.provider, env.model
    where = f" via {provider.url} ({provider.protocol})" if isinstance(provider, HttpStreamingProvider) else ""
    window = env.settings.compaction.context_window or facts.info.context_window
    if env.settings.compaction.context_window is not None:
        source = "configuration: compaction.context_window"
    elif server is not None and server.context_window is not None and window == server.context_window:
        source = f"from the server: {server.source}"
    elif facts.known:
        source = "registry or configuration"
    else:
        source = "configuration or default: the server did not report it"
    served = f" · server model {server.model_id}" if server is not None and server.model_id else ""
    context = f"{window} tokens" if window is not None else "unknown"
    return f"lsp-agent: {facts.name}{where}{served} · context window {context} ({source})"


def open_environment(root: Path, settings: Settings, provider: Provider, sink: EventSink,
                     state: Path | None = None, wire: str | None = None, store: Store | None = None,
                     server: ServerFacts | None = None, watched: bool = False) -> Environment:
    """`watched`: a watcher of the front end reports outside edits (the language server); without
    one, each run re-checks the workspace after its latest check before declaring the verification."""
    base = state or workspace_dir(root)
    ignored = functools.partial(git_ignored_paths, timeout_s=settings.limits.internal_timeout_s)
    return Environment(
        root=root.resolve(), settings=settings,
        store=store or Store(base / "store.db", settings.limits.store_busy_ms),
        registry=default_registry(settings), provider=provider, documents=DiskDocuments(root),
        applier=DiskApplier(root.resolve()), sink=sink, traces=TraceDir(base / "traces"),
        model=model_facts(settings, wire, server), skills=WorkspaceSkills(root.resolve()),
        mcp=mcp_manager(settings, root), tool_view=session_tools, command_policy=command_refusal,
        ignored_paths=ignored, recheck_outside=not watched,
        checkpoints=open_checkpoints(root, base, settings, ignored),
    )


def open_checkpoints(root: Path, base: Path, settings: Settings,
                     ignored: IgnoredPaths | None = None) -> WorkspaceCheckpoints:
    """The workspace's checkpoint store under its state directory (a restore a killed process left
    half done is finished here, on start)."""
    return WorkspaceCheckpoints(root, base / "checkpoints", lambda: settings.checkpoints, ignored)


class UnknownSession(LookupError):
    """`--session` names no session of this workspace."""


class HeadlessRun:
    """One headless run: a generation, continued in the fresh session after each automatic handoff
    (the step budget, counts and tokens carry over), and cancellable at any point — from a signal
    handler or when the output is closed — so that it always ends with a run_finish."""

    def __init__(self, env: Environment, prompt: str, max_steps: int | None = None,
                 session_id: str | None = None, on_session: Callable[[str], None] | None = None,
                 wait_s: float = 0, on_wait: Callable[[str], None] | None = None) -> None:
        if session_id is not None and env.store.session(session_id) is None:
            raise UnknownSession(f"no session {session_id!r} in workspace {env.root}; run without --session "
                                 "to start a new one")
        self.env = env
        self.prompt = prompt
        self.max_steps = max_steps
        self.session_id = session_id
        #: told the session's ID once it is open (the CLI's header), before the first event
        self.on_session = on_session
        self.current: Generation | None = None
        self.cancelled = False
        #: why the run never began (`session_busy`: another live process runs the session)
        self.refusal: AgentError | None = None
        #: how long to wait for another process to finish with the session before refusing (0: not at all)
        self.wait_s = wait_s
        #: told once why the run waits (the CLI's stderr)
        self.on_wait = on_wait

    def cancel(self) -> None:
        """Safe from a signal handler or a sink: the running generation stops at its earliest safe
        point and still reports; a generation not started yet starts cancelled."""
        self.cancelled = True
        if self.current is not None:
            self.current.cancel()

    def _start(self, generation: Generation) -> Generation:
        self.current = generation
        if self.cancelled:
            generation.cancel()
        return generation

    async def run(self) -> RunFinish:
        session_id = self.session_id or ""
        try:
            session = AgentSession(self.env, self.session_id, title=self.prompt[:80])
            session_id = session.id
            if self.on_session is not None:
                self.on_session(session.id)
            if self.wait_s > 0:
                await self._wait_for(session)
            generation = self._start(Generation(session, self.max_steps))
            memory.settle_startup()
            try:
                result = await generation.run(self.prompt)
            except AgentError as exc:
                if exc.kind is not AgentErrorKind.SESSION_BUSY:
                    raise
                self.refusal = exc  # another process runs the session: reported, nothing written
                return generation.refused(exc)
            while self._continues(result, generation):
                assert generation.handoff_to is not None
                fresh = AgentSession(self.env, generation.handoff_to)
                # The fresh session has seen no file: the old one's files must be read again before an edit.
                fresh.files.reread_required.update(sorted(touched_files(session.history)))
                follow = Generation(fresh, generation.max_steps)
                follow.carry_over(generation)
                session, generation = fresh, self._start(follow)
                session_id = session.id
                result = await generation.run(CONTINUE_PROMPT)
            return result
        except StoreUnavailable as exc:
            # Before a generation began (a generation that began reports its own end): still one end.
            return store_unavailable_finish(self.env.sink, exc, self.env.settings.model,
                                            self.env.provider.scripted, session_id)
        finally:
            close = getattr(self.env.provider, "aclose", None)
            if close is not None:
                await close()
            if self.env.mcp is not None:
                await self.env.mcp.aclose()

    async def _wait_for(self, session: AgentSession) -> None:
        """Until no other live process holds the session (or the wait is over, or the run cancelled).
        Then the run begins as usual — and is refused if the session was taken again meanwhile."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        told = False
        while not self.cancelled and loop.time() < deadline:
            holder = self.env.store.lease(session.id)
            if holder is None or holder.owner == process_owner() or not session.leases.live(holder):
                return
            if not told and self.on_wait is not None:
                told = True
                self.on_wait(f"session {session.id} is being written by "
                             f"{holder_text(holder, session.leases.lease_s())}; waiting up to {self.wait_s:g} s")
            await asyncio.sleep(0.2)

    def _continues(self, result: RunFinish, generation: Generation) -> bool:
        return (result.stop_reason is StopReason.HANDOFF and generation.handoff_to is not None
                and not self.cancelled and generation.steps < generation.max_steps)


def store_unavailable_finish(sink: EventSink, fault: StoreUnavailable, model: str, scripted: bool,
                             session_id: str = "") -> RunFinish:
    """The end of a run the store refused before a generation began (it could not be opened, the
    session not created or loaded, the prompt not written): the classified error and the run's end
    (`error`, nothing done), as every run ends. `generation` is empty: none was started."""
    info = ErrorInfo(kind=fault.kind.value, message=fault.message)
    sink.emit(ErrorEvent(session_id=session_id, generation="", error=info))
    finish = RunFinish(session_id=session_id, generation="", stop_reason=StopReason.ERROR,
                       verification=VerificationStatus.NOT_RUN, steps=0, tool_calls=0, tool_errors=0, tokens=Tokens(),
                       files_changed=[], model=model, scripted=scripted, error=info)
    sink.emit(finish)
    return finish


def mcp_manager(settings: Settings, root: Path) -> McpManager | None:
    """The configured MCP servers (not started: they start when a session first needs them)."""
    if not settings.mcp.servers:
        return None
    from lsp_agent.mcp.manager import McpManager

    return McpManager(settings.mcp, root.resolve())


async def run_once(env: Environment, prompt: str, max_steps: int | None = None,
                   session_id: str | None = None) -> RunFinish:
    return await HeadlessRun(env, prompt, max_steps, session_id).run()


#: Signals that cancel a headless run the way Ctrl-C does.
CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def cancel_on_signals(run: HeadlessRun) -> Iterator[list[int]]:
    """The first SIGINT/SIGTERM cancels the run (it still ends with its stop line and run_finish); the
    handler is then removed, so a second Ctrl-C interrupts at once. Yields the signals received."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def handle(signum: int) -> None:
        received.append(signum)
        for sig in CANCEL_SIGNALS:
            loop.remove_signal_handler(sig)
        name = signal.Signals(signum).name
        try:
            sys.stderr.write(f"lsp-agent: {name}: cancelling the run (again to quit at once)\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        run.cancel()

    for sig in CANCEL_SIGNALS:
        loop.add_signal_handler(sig, handle, int(sig))
    try:
        yield received
    finally:
        for sig in CANCEL_SIGNALS:
            loop.remove_signal_handler(sig)
