"""One language server the harness started: its process, pygls' LSP client over its stdio, the
documents it was sent, and the diagnostics it published.

The process is started here rather than by pygls' `start_io`, which uses asyncio's subprocess
transport: a loop shutting down while that transport connects its pipes waits for ever (see
tools/spawn.py). pygls still does all of the protocol: framing, requests, answers, and the types.

The server sees the files as they are on disk at each query: every document sent before is
compared with the disk and re-sent whole when it changed (or closed when it is gone), so answers
after the agent's edits are about the edited text. Diagnostics are the last ones the server
published for a document after the latest change sent; a query waits for them (`diagnostics`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from lsprotocol import types
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

from lsp_agent._version import __version__
from lsp_agent.core.cancel import cancel_signal
from lsp_agent.domain.ports import DocumentSource
from lsp_agent.langserver.program import missing_reason, resolve_program
from lsp_agent.sandbox.env import command_env
from lsp_agent.settings.config import LanguageServerSettings
from lsp_agent.tools.spawn import watch_exit

log = logging.getLogger(__name__)

#: How long `shutdown` and then `exit` may take before the process is killed.
STOP_GRACE_S = 3.0
#: How long a document whose own text did not change may take to be republished after another did.
CROSS_FILE_GRACE_S = 1.0
#: LSP language ids of common extensions (a server entry's `languageId` overrides).
_LANGUAGE_IDS = {".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "typescriptreact",
                 ".js": "javascript", ".jsx": "javascriptreact", ".rs": "rust", ".go": "go", ".c": "c",
                 ".h": "c", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".rb": "ruby", ".lua": "lua"}
#: Notifications some servers send that need no answer (pygls would log each as unknown).
_IGNORED_NOTIFICATIONS = ("window/logMessage", "window/showMessage", "$/progress", "telemetry/event",
                          "pyright/beginProgress", "pyright/reportProgress", "pyright/endProgress")


class ServerUnavailable(Exception):
    """The server is not running (never started, or exited): the reason, in the user's words."""


class QueryTimeout(Exception):
    pass


class QueryCancelled(Exception):
    pass


class _PipeWriter:
    """pygls' writer over the process's stdin (buffered by the loop: never blocks it)."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self.transport = transport

    def write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        self.transport.close()


class LanguageServerConnection:
    def __init__(self, spec: LanguageServerSettings, root: Path, documents: DocumentSource) -> None:
        self.spec = spec
        self.root = root
        self.documents = documents
        self.name = Path(spec.command[0]).name
        self.client = LanguageClient("lsp-agent", __version__)
        self.converter = default_converter()  # type: ignore[no-untyped-call]
        self.capabilities: types.ServerCapabilities | None = None
        #: why the server is not running (None: it runs)
        self.failure: str | None = "not started"
        self.pid: int | None = None
        self._popen: subprocess.Popen[bytes] | None = None
        self._exited: asyncio.Future[int] | None = None
        self._stop_reading = threading.Event()
        self._reader_task: asyncio.Task[None] | None = None
        self._transports: list[asyncio.BaseTransport] = []
        #: workspace path → (version, text) as last sent
        self._sent: dict[str, tuple[int, str]] = {}
        #: how many times a sync changed what the server has; a publish is fresh when received at the latest
        self._stamp = 0
        #: URI → (the stamp when it was received, the version it is about, the diagnostics as plain JSON)
        self._published: dict[str, tuple[int, int | None, list[Any]]] = {}
        self._published_changed = asyncio.Event()
        self._register_handlers()

    # --- start and stop ---------------------------------------------------------------------------

    def _register_handlers(self) -> None:
        feature = cast("Callable[[str], Callable[[Callable[..., Any]], Any]]", self.client.feature)

        # pygls passes a handler its params alone (a first parameter named `ls` would get the client).
        def published(params: types.PublishDiagnosticsParams) -> None:
            self._on_published(params)

        def configuration(params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]  # the server's own defaults (and the project's config files)

        def nothing(_params: Any) -> None:
            return None

        feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(published)
        feature(types.WORKSPACE_CONFIGURATION)(configuration)
        feature(types.CLIENT_REGISTER_CAPABILITY)(nothing)
        feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)(nothing)
        for method in _IGNORED_NOTIFICATIONS:
            feature(method)(nothing)

    async def start(self) -> None:
        """Start the process and `initialize` it; on any failure `failure` says why (never raises)."""
        program = resolve_program(self.spec.command[0], command_env().get("PATH"))
        if program is None:
            self.failure = missing_reason(self.spec.command)
            return
        try:
            await self._spawn([program, *self.spec.command[1:]])
        except OSError as exc:
            self.failure = f"the language server {self.name} could not be started: {exc.strerror or exc}"
            return
        self.failure = None
        try:
            result = await self.request(types.INITIALIZE, self._initialize_params(), self.spec.start_timeout_s)
        except QueryTimeout:
            self.failure = f"the language server {self.name} did not answer `initialize` within " \
                           f"{self.spec.start_timeout_s:g}s"
            await self.close()
            return
        except ServerUnavailable as exc:
            self.failure = str(exc)
            await self.close()
            return
        except Exception as exc:  # an error answer to initialize: the server refused this workspace
            self.failure = f"the language server {self.name} refused to start: {str(exc)[:200]}"
            await self.close()
            return
        self.capabilities = result.capabilities
        self.client.protocol.notify(types.INITIALIZED, types.InitializedParams())

    async def _spawn(self, argv: list[str]) -> None:
        loop = asyncio.get_running_loop()
        # Its own session, so stopping it stops whatever it started; the scrubbed environment: no
        # provider key or other credential reaches it.
        popen = subprocess.Popen(  # noqa: ASYNC220 - quick fork and exec, as asyncio's own does
            argv, cwd=str(self.root), env=command_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True)
        self._popen, self.pid = popen, popen.pid
        self._exited = watch_exit(popen)
        assert popen.stdout is not None and popen.stdin is not None
        reader = asyncio.StreamReader(limit=2**20)
        try:
            read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                             popen.stdout)
            self._transports.append(read_transport)
            write_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, popen.stdin)
            self._transports.append(write_transport)
        except BaseException:
            self._kill()
            raise
        self.client.protocol.set_writer(_PipeWriter(write_transport))
        self._reader_task = asyncio.ensure_future(run_async(
            stop_event=self._stop_reading, reader=reader, protocol=self.client.protocol, logger=log))

    def _initialize_params(self) -> types.InitializeParams:
        caps = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
            workspace=types.WorkspaceClientCapabilities(workspace_folders=True, configuration=True,
                                                        symbol=types.WorkspaceSymbolClientCapabilities()),
            text_document=types.TextDocumentClientCapabilities(
                synchronization=types.TextDocumentSyncClientCapabilities(),
                definition=types.DefinitionClientCapabilities(link_support=True),
                type_definition=types.TypeDefinitionClientCapabilities(link_support=True),
                implementation=types.ImplementationClientCapabilities(link_support=True),
                references=types.ReferenceClientCapabilities(),
                hover=types.HoverClientCapabilities(
                    content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
                document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
                call_hierarchy=types.CallHierarchyClientCapabilities(),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)))
        return types.InitializeParams(
            # its parent's id: a server that watches it exits should the harness die without stopping it
            process_id=os.getpid(), root_uri=self.root.as_uri(), root_path=str(self.root),
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)],
            client_info=types.ClientInfo(name="lsp-agent", version=__version__), capabilities=caps)

    def exit_reason(self) -> str | None:
        exited = self._exited
        if exited is None or not exited.done():
            return None
        code = exited.result()
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return f"the language server {self.name} {how}"

    async def close(self) -> None:
        """`shutdown` and `exit`, then kill what is left after a bound; never leaves the process."""
        if self._popen is None:
            return
        if self.exit_reason() is None and self.failure is None:  # running and answering: ask it to stop
            with contextlib.suppress(Exception):
                await self.request(types.SHUTDOWN, None, STOP_GRACE_S)
                self.client.protocol.notify(types.EXIT, None)
            if self._exited is not None and not self._exited.done():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._exited), STOP_GRACE_S)
        self._kill()  # what is left of it, and whatever it started
        if self._exited is not None and not self._exited.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._exited), STOP_GRACE_S)
        self._stop_reading.set()
        for transport in self._transports:
            transport.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader_task
        self.failure = self.failure or "stopped"
        self._popen = None

    def _kill(self) -> None:
        if self._popen is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._popen.pid, signal.SIGKILL)  # the whole session: its own children too

    # --- requests ---------------------------------------------------------------------------------

    def unavailable(self) -> str | None:
        return self.failure or self.exit_reason()

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """Ask the server; raises ServerUnavailable, QueryTimeout, QueryCancelled, or the server's error."""
        reason = self.unavailable()
        if reason is not None:
            raise ServerUnavailable(reason)
        assert self._exited is not None
        request = asyncio.ensure_future(self.client.protocol.send_request_async(method, params))
        cancel = cancel_signal.get()
        # A cancelled run must not wait for an answer; nor a request for a server that died.
        stoppers: set[asyncio.Future[Any]] = {asyncio.ensure_future(asyncio.shield(self._exited)),
                    *([asyncio.ensure_future(cancel.wait())] if cancel is not None else [])}
        try:
            done, _ = await asyncio.wait({request, *stoppers}, timeout=timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            for stopper in stoppers:
                stopper.cancel()
        if request in done:
            return request.result()
        request.cancel()
        reason = self.exit_reason()
        if reason is not None:
            raise ServerUnavailable(reason)
        if done:
            raise QueryCancelled()
        raise QueryTimeout()

    def plain(self, value: Any) -> Any:
        """An lsprotocol value as the JSON the server sent (camelCase keys)."""
        return self.converter.unstructure(value)

    # --- documents --------------------------------------------------------------------------------

    def uri(self, path: str) -> str:
        return (self.root / path).as_uri()

    def _language_id(self, path: str) -> str:
        suffix = Path(path).suffix
        return self.spec.language_id or _LANGUAGE_IDS.get(suffix.lower(), suffix.lstrip(".") or "plaintext")

    async def _disk_text(self, path: str) -> str | None:
        try:
            document = await self.documents.read(path)
        except (OSError, ValueError):
            return None
        return document.text if document is not None else None

    async def sync(self, path: str | None) -> None:
        """Every document sent before as it is on disk now, and `path` opened when it is new."""
        wanted = sorted({*self._sent, *([path] if path is not None else [])})
        for rel in wanted:
            text = await self._disk_text(rel)
            sent = self._sent.get(rel)
            uri = self.uri(rel)
            if text is None:
                if sent is not None:
                    del self._sent[rel]
                    self._published.pop(uri, None)
                    self._changed()
                    self.client.protocol.notify(types.TEXT_DOCUMENT_DID_CLOSE, types.DidCloseTextDocumentParams(
                        text_document=types.TextDocumentIdentifier(uri=uri)))
                continue
            if sent is None:
                self._sent[rel] = (1, text)
                self._changed()
                self.client.protocol.notify(types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(uri=uri, language_id=self._language_id(rel), version=1,
                                                         text=text)))
            elif sent[1] != text:
                version = sent[0] + 1
                self._sent[rel] = (version, text)
                self._changed()
                self.client.protocol.notify(types.TEXT_DOCUMENT_DID_CHANGE, types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def _changed(self) -> None:
        self._stamp += 1

    def opened(self) -> list[str]:
        return sorted(self._sent)

    # --- diagnostics ------------------------------------------------------------------------------

    def _on_published(self, params: types.PublishDiagnosticsParams) -> None:
        sent = next((v for rel, (v, _) in self._sent.items() if self.uri(rel) == params.uri), None)
        if params.version is not None and sent is not None and params.version < sent:
            return  # about a text the server has since been sent a newer version of
        # the version it is about: the one stated, else the one sent last (a server that states none)
        version = params.version if params.version is not None else sent
        self._published[params.uri] = (self._stamp, version, [self.plain(d) for d in params.diagnostics])
        self._published_changed.set()
        self._published_changed = asyncio.Event()

    def _own_pending(self) -> list[str]:
        """The documents sent in a version the server has published nothing about yet."""
        pending = []
        for rel, (version, _) in self._sent.items():
            published = self._published.get(self.uri(rel))
            if published is None or (published[1] is not None and published[1] < version):
                pending.append(rel)
        return pending

    async def diagnostics(self, paths: list[str], timeout_s: float) -> dict[str, list[Any]]:
        """URI → its diagnostics as published after the latest sync.

        A server publishes a document's diagnostics after each version it is sent, so first every
        document sent in a new version is waited for (bounded by `timeout_s`). A document whose own
        text did not change may still have new errors through one that did (an import); servers
        republish those in the same pass, so it is waited for a moment more, then its last
        diagnostics stand. Raises QueryTimeout when an asked document has none at all."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        uris = [self.uri(p) for p in paths]

        def stale() -> bool:
            return any(self._published.get(u, (-1,))[0] != self._stamp for u in uris)

        while stale() and self._own_pending() and await self._published_wait(deadline - loop.time()):
            pass
        grace_end = min(deadline, loop.time() + CROSS_FILE_GRACE_S)
        while stale() and await self._published_wait(grace_end - loop.time()):
            pass
        if any(u not in self._published for u in uris):
            raise QueryTimeout()
        return {u: self._published[u][2] for u in uris}

    async def _published_wait(self, left: float) -> bool:
        """Until the next publish (True), or `left` seconds pass (False); raises when the server
        exits or the run is cancelled meanwhile."""
        reason = self.unavailable()
        if reason is not None:
            raise ServerUnavailable(reason)
        if left <= 0:
            return False
        assert self._exited is not None
        waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._published_changed.wait()),
                                             asyncio.ensure_future(asyncio.shield(self._exited))}
        cancel = cancel_signal.get()
        if cancel is not None:
            waiters.add(asyncio.ensure_future(cancel.wait()))
        try:
            done, _ = await asyncio.wait(waiters, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        if cancel is not None and cancel.is_set():
            raise QueryCancelled()
        reason = self.unavailable()
        if reason is not None:
            raise ServerUnavailable(reason)
        return bool(done)
