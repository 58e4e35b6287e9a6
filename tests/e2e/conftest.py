"""End-to-end fixtures: the real server (`python -m lsp_agent serve`) over stdio, driven by a
pytest-lsp client that models a small editor: open buffers with versions, incremental didChange,
`workspace/applyEdit` applied to those buffers, `agent/saveDocuments` writing them to disk, and a
record of every notification the server sent.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Union

import attrs
import cattrs
import pytest
import pytest_asyncio
from lsprotocol import converters, types
from pygls.exceptions import JsonRpcMethodNotFound
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from lsp_agent.providers.scripted import Script, ScriptedReply
from lsp_agent.server.convert import make_converter

PY = sys.executable
SERVER = [PY, "-m", "lsp_agent", "serve"]
TIMEOUT = 30.0
#: how the server's note on files changed outside the agent starts, before the list of paths
OUTSIDE_NOTE = "Changed outside the agent: "


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = TIMEOUT,
                     what: str = "the condition") -> None:
    """Poll `check` until it holds. A loaded machine can be ten times slower than a quiet one, so the
    bound is generous; a test that passes never waits for it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise TimeoutError(f"{what} did not hold within {timeout:.0f} s")
        await asyncio.sleep(0.05)


def raw_converter() -> cattrs.Converter:
    """The server's converter (unknown methods keep their JSON), plus one client-side fix."""
    converter = make_converter()

    # lsprotocol takes any code action with a `command` for a bare Command; a Command's
    # `command` is a string, a CodeAction's is an object.
    def code_action(obj: Any, _: type) -> Any:
        kind = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
        return converter.structure(obj, kind)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], code_action)  # noqa: UP007
    return converter


def plain(obj: Any) -> Any:
    """JSON values of an lsprotocol object, as they travelled on the wire."""
    return json.loads(json.dumps(converters.get_converter().unstructure(obj)))


def full_capabilities(*, apply_edit: bool = True, resource_ops: bool = True,
                      progress: bool = True) -> types.ClientCapabilities:
    kinds = [types.ResourceOperationKind.Create, types.ResourceOperationKind.Rename,
             types.ResourceOperationKind.Delete] if resource_ops else []
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            apply_edit=apply_edit,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True, resource_operations=kinds),
            configuration=True,
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(dynamic_registration=False)),
        window=types.WindowClientCapabilities(work_done_progress=progress),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(related_information=True),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(value_set=["quickfix"])))))


# --- a tiny editor model ------------------------------------------------------------------------


def _offset(text: str, pos: dict[str, int]) -> int:
    """Code-point offset of an LSP position (characters counted in UTF-16 units)."""
    lines = text.splitlines(keepends=True)
    if pos["line"] >= len(lines):
        return len(text)
    base = sum(len(line) for line in lines[:pos["line"]])
    content = lines[pos["line"]].rstrip("\r\n")
    units = 0
    for index, ch in enumerate(content):
        if units >= pos["character"]:
            return base + index
        units += 2 if ord(ch) > 0xFFFF else 1
    return base + len(content)


def apply_text_edits(text: str, edits: list[dict[str, Any]]) -> str:
    spans = sorted(((_offset(text, e["range"]["start"]), _offset(text, e["range"]["end"]), e["newText"])
                    for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@attrs.define
class Buffer:
    uri: str
    text: str
    version: int


class Editor:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.buffers: dict[str, Buffer] = {}
        self.events: list[dict[str, Any]] = []
        self.applied: list[dict[str, Any]] = []  # every applyEdit params the server sent
        self.save_requests: list[list[str]] = []
        self.diagnostics: list[tuple[str, list[dict[str, Any]]]] = []  # every publish, in order
        self.trust_changes: list[dict[str, Any]] = []  # every agent/workspaceTrustChanged, in order
        self.refuse: str | None = None  # refuse applyEdit with this reason
        self.keystroke_on_apply: tuple[str, str] | None = None  # (path, text typed before applying)
        self.save_mode = "save"  # save | fail | unsupported
        #: answers agent/editorQuery (a stand-in for the editor's language servers); None: not implemented
        self.answer_query: Callable[[dict[str, Any]], Awaitable[Any]] | None = None
        self.queries: list[dict[str, Any]] = []  # every agent/editorQuery params, in order
        self._finished: dict[str, asyncio.Future[dict[str, Any]]] = {}

    # --- what the user does -------------------------------------------------------------------

    def uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    def open(self, rel: str, text: str | None = None, version: int = 1) -> str:
        uri = self.uri(rel)
        body = (self.root / rel).read_text(encoding="utf-8") if text is None else text
        self.buffers[uri] = Buffer(uri, body, version)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=body)))
        return uri

    def type(self, rel: str, line: int, character: int, text: str) -> None:
        """An incremental change, as an editor sends it while the user types."""
        buf = self.buffers[self.uri(rel)]
        edit = {"range": {"start": {"line": line, "character": character},
                          "end": {"line": line, "character": character}}, "newText": text}
        self._change(buf, [edit])

    def text(self, rel: str) -> str:
        return self.buffers[self.uri(rel)].text

    # --- requests -------------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None) -> Any:
        result = await asyncio.wait_for(self.client.protocol.send_request_async(method, params), TIMEOUT)
        return result

    async def run(self, prompt: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("agent/run", {"prompt": prompt, **params})
        self._finished.setdefault(result["generation"], asyncio.get_running_loop().create_future())
        return result

    async def finished(self, generation: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        future = self._finished.setdefault(generation, asyncio.get_running_loop().create_future())
        return await asyncio.wait_for(future, timeout)

    def event_types(self, generation: str) -> list[str]:
        return [e["event"]["type"] for e in self.events if e["generation"] == generation]

    async def wait_for_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not any(predicate(e["event"]) for e in self.events):
            if loop.time() > deadline:
                raise TimeoutError("the expected agent/event did not arrive")
            await asyncio.sleep(0.02)

    async def outside_changes_after_a_marker(self, session_id: str, timeout: float = TIMEOUT) -> list[list[str]]:
        """Every change the watcher has counted as outside the agent in this session, once it has
        caught up with everything written before this call.

        Whether the watcher took a write for the agent's own shows only as nothing happening, and no
        fixed wait is long enough on a loaded machine. So write a file of our own, which the watcher
        must report as outside, and wait for its note: the watcher handles changes in order, so by
        then it has judged every earlier write too. The marker itself makes a standing check
        `not_run`; callers look at which paths were reported, not at the status.
        """
        marker = f"watcher-marker-{len(self.events)}.txt"
        (self.root / marker).write_text("written outside the agent\n", encoding="utf-8")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            reported = await self.outside_change_notes(session_id)
            if any(marker in paths for paths in reported):
                return [[path for path in paths if path != marker] for paths in reported if paths != [marker]]
            if loop.time() > deadline:
                raise TimeoutError("the watcher never reported the marker file")
            await asyncio.sleep(0.05)

    async def outside_change_notes(self, session_id: str) -> list[list[str]]:
        """The paths of each "changed outside the agent" note in the session, in order."""
        notes: list[list[str]] = []
        after = None
        while True:
            page = await self.request("agent/session", {"sessionID": session_id, **({"after": after} if after else {})})
            for message in page["messages"]:
                for part in message["parts"]:
                    text = part.get("text") or ""
                    if part["type"] == "text" and part.get("synthetic") and OUTSIDE_NOTE in text:
                        notes.append(text.split(OUTSIDE_NOTE, 1)[1].split(". [stale", 1)[0].split(", "))
            after = page.get("next")
            if after is None:
                return notes

    # --- what the server asks -------------------------------------------------------------------

    def _change(self, buf: Buffer, edits: list[dict[str, Any]]) -> None:
        buf.text = apply_text_edits(buf.text, edits)
        buf.version += 1
        # Edits of one TextDocumentEdit all refer to the old text; applied last-first as
        # incremental changes they stay valid.
        ordered = sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                         reverse=True)
        changes = [types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(**e["range"]["start"]), end=types.Position(**e["range"]["end"])),
            text=e["newText"]) for e in ordered]
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=buf.uri, version=buf.version),
            content_changes=changes))

    def on_apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        raw = plain(params)
        self.applied.append(raw)
        if self.keystroke_on_apply is not None:
            path, typed = self.keystroke_on_apply
            self.keystroke_on_apply = None
            self.type(path, 0, 0, typed)
        if self.refuse is not None:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason=self.refuse)
        changes = raw["edit"].get("documentChanges") or []
        versions = {uri: buf.version for uri, buf in self.buffers.items()}
        for change in changes:  # check everything first: all or nothing
            kind = change.get("kind")
            if kind == "rename":
                versions[change["newUri"]] = versions.pop(change["oldUri"])
            elif kind == "delete":
                versions.pop(change["uri"], None)
            elif kind is None:
                uri = change["textDocument"]["uri"]
                if uri not in versions:
                    return types.ApplyWorkspaceEditResult(applied=False, failure_reason="document not open")
                expected = change["textDocument"].get("version")
                if expected is not None and expected != versions[uri]:
                    return types.ApplyWorkspaceEditResult(
                        applied=False, failure_reason=f"version {expected} != buffer version {versions[uri]}")
        for change in changes:
            kind = change.get("kind")
            if kind is None:
                self._change(self.buffers[change["textDocument"]["uri"]], change["edits"])
            elif kind == "rename":
                old, new = change["oldUri"], change["newUri"]
                Path(_path(old)).rename(_path(new))
                buf = self.buffers.pop(old)
                self.client.text_document_did_close(types.DidCloseTextDocumentParams(
                    text_document=types.TextDocumentIdentifier(uri=old)))
                self.buffers[new] = Buffer(new, buf.text, 1)
                self.client.text_document_did_open(types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(uri=new, language_id="python", version=1, text=buf.text)))
            elif kind == "delete":
                Path(_path(change["uri"])).unlink()
                self.buffers.pop(change["uri"], None)
                self.client.text_document_did_close(types.DidCloseTextDocumentParams(
                    text_document=types.TextDocumentIdentifier(uri=change["uri"])))
        return types.ApplyWorkspaceEditResult(applied=True)

    def on_save_documents(self, params: Any) -> dict[str, Any]:
        uris = list(params["uris"])
        self.save_requests.append(uris)
        if self.save_mode == "unsupported":
            raise JsonRpcMethodNotFound.of("agent/saveDocuments")
        saved, failed = [], []
        for uri in uris:
            buf = self.buffers.get(uri)
            if buf is None or self.save_mode == "fail":
                failed.append({"uri": uri, "reason": "disk full" if buf else "not open"})
                continue
            Path(_path(uri)).write_bytes(buf.text.encode("utf-8"))
            saved.append(uri)
        return {"saved": saved, "failed": failed}

    def on_event(self, params: Any) -> None:
        self.events.append(params)
        if params["event"]["type"] == "run_finish":
            future = self._finished.setdefault(params["generation"], asyncio.get_running_loop().create_future())
            if not future.done():
                future.set_result(params["event"])

    def on_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.diagnostics.append((params.uri, plain(params)["diagnostics"]))


def _path(uri: str) -> str:
    from pygls.uris import to_fs_path

    fs = to_fs_path(uri)
    assert fs is not None
    return fs


def make_client(editor_ref: list[Editor]) -> LanguageClient:
    client = LanguageClient(converter_factory=raw_converter)
    features = {k: v for k, v in DEFAULT_CLIENT_FEATURES.items() if k != types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS}
    register_lsp_features(client, features)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        return editor_ref[0].on_apply_edit(params)

    @client.feature("agent/saveDocuments")
    def save_documents(ls: LanguageClient, params: Any) -> dict[str, Any]:
        return editor_ref[0].on_save_documents(params)

    @client.feature("agent/editorQuery")
    async def editor_query(ls: LanguageClient, params: Any) -> Any:
        editor = editor_ref[0]
        editor.queries.append(plain(params))
        if editor.answer_query is None:
            raise JsonRpcMethodNotFound.of("agent/editorQuery")
        return await editor.answer_query(plain(params))

    @client.feature("agent/event")
    def agent_event(ls: LanguageClient, params: Any) -> None:
        editor_ref[0].on_event(params)

    @client.feature("agent/workspaceTrustChanged")
    def trust_changed(ls: LanguageClient, params: Any) -> None:
        editor_ref[0].trust_changes.append(plain(params))

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        editor_ref[0].on_diagnostics(params)

    return client


def write_script(path: Path, replies: list[ScriptedReply], repeat_last: bool = False) -> Path:
    path.write_text(Script(label="test", replies=replies, repeat_last=repeat_last).model_dump_json(),
                    encoding="utf-8")
    return path


StartEditor = Callable[..., Awaitable[Editor]]


@pytest_asyncio.fixture
async def start_editor(isolated_state: Path, tmp_path: Path) -> AsyncIterator[StartEditor]:
    """Start the server for a workspace; returns the connected editor model."""
    editors: list[Editor] = []

    async def start(root: Path, replies: list[ScriptedReply] | None = None, *,
                    capabilities: types.ClientCapabilities | None = None,
                    init_options: dict[str, Any] | None = None, repeat_last: bool = False) -> Editor:
        options = dict(init_options or {})
        if replies is not None:
            script = write_script(tmp_path / f"script-{len(editors)}.json", replies, repeat_last)
            options = {"model": "scripted/test", "script": str(script), **options}
        ref: list[Editor] = []
        client = make_client(ref)
        await client.start_io(*SERVER)
        editor = Editor(client, root)
        ref.append(editor)
        editors.append(editor)
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities or full_capabilities(), root_uri=root.as_uri(),
            initialization_options=options)), TIMEOUT)
        return editor

    yield start
    for editor in editors:
        try:
            await asyncio.wait_for(editor.client.shutdown_session(), TIMEOUT)
        except (TimeoutError, RuntimeError):
            pass
        await editor.client.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root
