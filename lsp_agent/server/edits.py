"""EditApplier over `workspace/applyEdit`: an open file is edited in its buffer, with undo and never over
text the user changed meanwhile; other files on disk.

Where each change goes:
- A file open in the editor is changed in its buffer: a TextDocumentEdit versioned with the
  buffer's version and carrying the plan's own ranges, so it lands with undo and never replaces
  text the plan was not computed from. RenameFile/DeleteFile of an open file are sent when the
  client lists them in `workspace.workspaceEdit.resourceOperations`; otherwise the edit is refused
  with a message (the server will not move a file out from under an open buffer).
- Files that are not open, and new files, are written by the server's disk applier. An editor that
  applies an edit to an unopened file keeps it in a hidden, unsaved buffer and may never tell the
  server about it (Neovim loads such buffers without a didOpen), so the next read would see stale
  disk text. One owner per file avoids that: open → the editor, closed → the disk.
- A client without `workspace.applyEdit` gets everything written to disk.

Buffers the agent changed are saved through `agent/saveDocuments` in `flush`, which
verify_project calls before it runs anything.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from lsp_agent.core.cancel import cancel_signal
from lsp_agent.disk.applier import DiskApplier
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import (
    ApplyFailure,
    ApplyResult,
    CreateFile,
    DeleteFile,
    EditPlan,
    FileOp,
    Position,
    RenameFile,
    TextEdit,
    UpdateFile,
    digest,
    position_at,
    unmade,
)
from lsp_agent.protocol.methods import AGENT_SAVE_DOCUMENTS
from lsp_agent.protocol.models import SaveDocumentsResult
from lsp_agent.server.convert import to_plain
from lsp_agent.server.documents import BufferDocuments, relative_path
from lsp_agent.server.watch import OwnWrites, file_digest

log = logging.getLogger(__name__)

#: The editor may ask the user before applying or saving; after this the edit counts as refused.
EDIT_TIMEOUT_S = 120.0
SAVE_TIMEOUT_S = 120.0

T = TypeVar("T")


@dataclass(frozen=True)
class EditorCaps:
    apply_edit: bool = False
    document_changes: bool = False
    resource_ops: frozenset[str] = frozenset()

    @classmethod
    def of(cls, caps: types.ClientCapabilities | None) -> EditorCaps:
        workspace = caps.workspace if caps is not None else None
        if workspace is None:
            return cls()
        edit = workspace.workspace_edit
        ops = frozenset(str(getattr(k, "value", k)) for k in (edit.resource_operations or [])) if edit else frozenset()
        return cls(apply_edit=bool(workspace.apply_edit),
                   document_changes=bool(edit and edit.document_changes), resource_ops=ops)


@dataclass
class _BufferOp:
    op: FileOp
    uri: str
    version: int | None  # the buffer's version the op was checked against (None: a renamed target)
    new_uri: str = ""


@dataclass
class _Dirty:
    rel: str
    expected: str  # digest of the text the agent left in the buffer


@dataclass
class _Split:
    buffer: list[_BufferOp] = field(default_factory=list)
    disk: list[FileOp] = field(default_factory=list)


def _refused(failure: ApplyFailure, message: str) -> ApplyResult:
    return ApplyResult(ok=False, failure=failure, message=message)


def _lsp_edit(edit: TextEdit) -> types.TextEdit:
    return types.TextEdit(range=types.Range(start=types.Position(line=edit.start.line, character=edit.start.character),
                                            end=types.Position(line=edit.end.line, character=edit.end.character)),
                          new_text=edit.new_text)


class _RunCancelled(Exception):
    pass


async def _answer(request: Awaitable[T], limit_s: float) -> T:
    """The editor's answer to a request; TimeoutError after `limit_s`, _RunCancelled as soon as
    the run is cancelled (a cancel must not wait for an editor that never answers)."""
    task = asyncio.ensure_future(request)
    cancel = cancel_signal.get()
    stopper = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    waiters: set[asyncio.Future[Any]] = {task, *([stopper] if stopper else [])}
    try:
        done, _ = await asyncio.wait(waiters, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if stopper is not None:
            stopper.cancel()
    if task in done:
        return task.result()
    task.cancel()
    if stopper is not None and stopper in done:
        raise _RunCancelled
    raise TimeoutError


def _whole(old: str, new: str) -> list[TextEdit]:
    end = position_at(old, len(old))
    return [TextEdit(start=Position(line=0, character=0), end=end, new_text=new)]


class LspApplier:
    def __init__(self, ls: LanguageServer, root: Path, documents: BufferDocuments, own: OwnWrites,
                 caps: EditorCaps) -> None:
        self.ls = ls
        self.root = root.resolve()
        self.documents = documents
        self.own = own
        self.caps = caps
        self.disk = DiskApplier(self.root)
        self._disk_docs = DiskDocuments(self.root)
        self._dirty: dict[str, _Dirty] = {}  # URI → a buffer the agent edited and the editor has not saved
        self._lost: dict[str, str] = {}  # URI → why an edited buffer can no longer be saved
        self._lock = asyncio.Lock()

    # --- EditApplier ----------------------------------------------------------------------------

    async def apply(self, plan: EditPlan) -> ApplyResult:
        async with self._lock:
            if not self.caps.apply_edit:
                return await self._apply_on_disk(plan.ops)
            split = self._split(plan)
            if isinstance(split, ApplyResult):
                return split
            before = await self._snapshot(split.disk) if split.buffer and split.disk else {}
            if split.disk:
                written = await self._apply_on_disk(split.disk)
                if not written.ok:
                    return written
            if not split.buffer:
                return ApplyResult(ok=True)
            result = await self._apply_in_editor(split.buffer)
            if not result.ok and split.disk:
                undone = await self._undo(split.disk, before)
                result.message += (" The files this edit had written to disk were restored." if undone.ok
                                   else f" Restoring the files written to disk failed: {undone.message}")
            return result

    async def flush(self, paths: list[str]) -> ApplyResult:
        """Ask the editor to save the buffers the agent edited (`paths` narrows; empty = all)."""
        async with self._lock:
            problems = [f"{self._rel(uri)} ({reason})" for uri, reason in self._lost.items()]
            self._lost.clear()
            wanted = {uri: d for uri, d in self._dirty.items() if not paths or d.rel in paths}
            if wanted:
                problems += await self._save(wanted)
            if problems:
                return _refused(ApplyFailure.REFUSED, "; ".join(problems))
            return ApplyResult(ok=True)

    # --- editor notifications -------------------------------------------------------------------

    def saved(self, uri: str) -> None:
        dirty = self._dirty.get(uri)
        if dirty is not None and self._disk_has_edit(dirty):
            del self._dirty[uri]

    def closed(self, uri: str) -> None:
        dirty = self._dirty.pop(uri, None)
        if dirty is not None and file_digest(self.root / dirty.rel) != dirty.expected:
            self._lost[uri] = "closed in the editor without saving the agent's edit"

    # --- planning -------------------------------------------------------------------------------

    def _split(self, plan: EditPlan) -> _Split | ApplyResult:
        """Route each op to the editor (open buffers) or the disk, checking buffers first."""
        split = _Split()
        buffers: dict[str, tuple[str, TextDocument, bool]] = {}  # rel → (uri, doc, renamed)
        for rel in self.documents.open_paths():
            doc = self.documents.document(rel)
            if doc is not None:
                buffers[rel] = (self.documents.uri_for(rel), doc, False)
        for op in plan.ops:
            target = buffers.get(op.path)
            if isinstance(op, CreateFile) or target is None:
                split.disk.append(op)
                continue
            uri, doc, renamed = target
            if isinstance(op, RenameFile):
                if problem := self._resource_problem("rename", op.path):
                    return problem
                new_uri = self.documents.uri_for(op.new_path)
                split.buffer.append(_BufferOp(op, uri, doc.version, new_uri=new_uri))
                del buffers[op.path]
                buffers[op.new_path] = (new_uri, doc, True)
                continue
            current = doc.source
            if current != op.base_text or (
                    not renamed and isinstance(op, UpdateFile) and op.base_version is not None
                    and op.base_version != doc.version):
                return _refused(ApplyFailure.VERSION_MISMATCH,
                                f"{op.path} changed in the editor since it was read (buffer version {doc.version}); "
                                "the user's text was left as it is")
            if isinstance(op, DeleteFile):
                if problem := self._resource_problem("delete", op.path):
                    return problem
                del buffers[op.path]
            elif (unmet := unmade(current, op)) is not None:
                return _refused(ApplyFailure.CONFLICT, unmet)
            split.buffer.append(_BufferOp(op, uri, None if renamed else doc.version))
        return split

    def _resource_problem(self, kind: str, path: str) -> ApplyResult | None:
        if self.caps.document_changes and kind in self.caps.resource_ops:
            return None
        verb = "rename" if kind == "rename" else "delete"
        return _refused(ApplyFailure.REFUSED,
                        f"{path} is open in the editor, which cannot {verb} files through LSP (no '{kind}' in "
                        f"workspace.workspaceEdit.resourceOperations); ask the user to close it first")

    # --- the editor side ------------------------------------------------------------------------

    def _workspace_edit(self, ops: list[_BufferOp]) -> types.WorkspaceEdit:
        if not self.caps.document_changes:
            changes: dict[str, list[types.TextEdit]] = {}
            for item in ops:
                assert isinstance(item.op, UpdateFile)  # _split refuses resource ops without documentChanges
                changes.setdefault(item.uri, []).extend(_lsp_edit(e) for e in item.op.edits)
            return types.WorkspaceEdit(changes=changes)
        document_changes: list[Any] = []
        for item in ops:
            op = item.op
            if isinstance(op, RenameFile):
                document_changes.append(types.RenameFile(
                    old_uri=item.uri, new_uri=item.new_uri,
                    options=types.RenameFileOptions(overwrite=False, ignore_if_exists=False)))
            elif isinstance(op, DeleteFile):
                document_changes.append(types.DeleteFile(
                    uri=item.uri, options=types.DeleteFileOptions(recursive=False, ignore_if_not_exists=False)))
            elif isinstance(op, UpdateFile):
                document_changes.append(types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=item.uri, version=item.version),
                    edits=[_lsp_edit(e) for e in op.edits]))
        return types.WorkspaceEdit(document_changes=document_changes)

    async def _apply_in_editor(self, ops: list[_BufferOp]) -> ApplyResult:
        moved_content = {item.op.path: self._buffer_digest(item.op.path) for item in ops
                         if isinstance(item.op, RenameFile)}
        self._expect_saves(ops)
        params = types.ApplyWorkspaceEditParams(edit=self._workspace_edit(ops), label="lsp-agent")
        try:
            reply = await _answer(self.ls.workspace_apply_edit_async(params), EDIT_TIMEOUT_S)
        except _RunCancelled:
            return _refused(ApplyFailure.REFUSED, "the run was cancelled while the editor was asked to apply the "
                                                  "edit; the editor may still apply it")
        except TimeoutError:
            return _refused(ApplyFailure.REFUSED, f"the editor did not answer workspace/applyEdit within "
                                                  f"{EDIT_TIMEOUT_S:.0f}s")
        except (JsonRpcException, RuntimeError, ValueError) as exc:
            return _refused(ApplyFailure.REFUSED, f"the editor failed workspace/applyEdit: {exc}")
        if not getattr(reply, "applied", False):
            moved = [item.op.path for item in ops if item.version is not None
                     and self._version_of(item.op.path) != item.version]
            if moved:
                return _refused(ApplyFailure.VERSION_MISMATCH,
                                f"{', '.join(moved)} changed in the editor while the edit was on its way; the "
                                "editor kept the user's text")
            reason = getattr(reply, "failure_reason", None) or "no reason given"
            return _refused(ApplyFailure.REFUSED, f"the editor refused the edit: {reason}")
        for item in ops:
            self._accepted(item, moved_content)
        return ApplyResult(ok=True)

    def _expect_saves(self, ops: list[_BufferOp]) -> None:
        """Own from the moment it is applied: the editor may save the edited buffer at any
        time — auto-save after a delay, on focus change, even before it answers applyEdit — so the text
        the edit leaves is announced as the agent's before the request goes out. A save whose content
        matches is then the agent's write, whatever the auto-save setting; anything else still counts
        as a change outside the agent. Added to (not replacing) what is already expected, so a late save
        of an earlier agent edit is recognised too."""
        for item in ops:
            if isinstance(item.op, UpdateFile):
                self.own.expect(item.op.path, digest(item.op.new_text), also=True)

    def _accepted(self, item: _BufferOp, moved_content: dict[str, str | None]) -> None:
        op = item.op
        if isinstance(op, UpdateFile):
            rel = op.path
            self._dirty[item.uri] = _Dirty(rel, digest(op.new_text))
            self.documents.await_change(item.uri, item.version)
        elif isinstance(op, RenameFile):
            # The editor moves the file on disk (and the buffer with it).
            self.own.expect(op.path, None)
            self.own.expect(op.new_path, moved_content.get(op.path))
            self.own.expect(op.new_path, file_digest(self.root / op.path), also=True)
            dirty = self._dirty.pop(item.uri, None)
            if dirty is not None:
                self._dirty[item.new_uri] = _Dirty(op.new_path, dirty.expected)
        elif isinstance(op, DeleteFile):
            self.own.expect(op.path, None)
            self._dirty.pop(item.uri, None)

    async def _save(self, wanted: dict[str, _Dirty]) -> list[str]:
        for dirty in wanted.values():
            # What the save will leave on disk: the planned text, or the buffer as it is now.
            self.own.expect(dirty.rel, dirty.expected)
            self.own.expect(dirty.rel, self._buffer_digest(dirty.rel), also=True)
        names = ", ".join(d.rel for d in wanted.values())
        try:
            raw = await _answer(self.ls.protocol.send_request_async(AGENT_SAVE_DOCUMENTS, {"uris": list(wanted)}),
                                SAVE_TIMEOUT_S)
        except _RunCancelled:
            return [f"{names} (the run was cancelled while the editor was saving)"]
        except JsonRpcMethodNotFound:
            return [f"{names} (the editor does not implement {AGENT_SAVE_DOCUMENTS})"]
        except TimeoutError:
            return [f"{names} (the editor did not answer {AGENT_SAVE_DOCUMENTS} within {SAVE_TIMEOUT_S:.0f}s)"]
        except (JsonRpcException, RuntimeError) as exc:
            return [f"{names} ({AGENT_SAVE_DOCUMENTS} failed: {exc})"]
        try:
            answer = SaveDocumentsResult.model_validate(to_plain(raw) or {})
        except ValidationError as exc:
            return [f"{names} (malformed {AGENT_SAVE_DOCUMENTS} answer: {exc.error_count()} problems)"]
        problems: list[str] = []
        by_rel = {d.rel: uri for uri, d in wanted.items()}
        saved = {relative_path(self.root, uri) for uri in answer.saved}
        failed = {relative_path(self.root, f.uri): f.reason for f in answer.failed}
        for rel, uri in by_rel.items():
            dirty = wanted[uri]
            if rel in failed:
                problems.append(f"{rel} ({failed[rel] or 'not saved'})")
            elif rel not in saved:
                problems.append(f"{rel} (the editor did not report it saved)")
            elif not self._disk_has_edit(dirty):
                problems.append(f"{rel} (reported saved, but the file on disk differs from the buffer)")
            else:
                self._dirty.pop(uri, None)
        return problems

    # --- the disk side --------------------------------------------------------------------------

    async def _apply_on_disk(self, ops: list[FileOp]) -> ApplyResult:
        result = await self.disk.apply(EditPlan(ops=ops))
        if result.ok:
            for rel in EditPlan(ops=ops).touched_paths():
                self.own.expect(rel, await asyncio.to_thread(file_digest, self.root / rel))
        return result

    async def _snapshot(self, ops: list[FileOp]) -> dict[str, str | None]:
        texts: dict[str, str | None] = {}
        for rel in EditPlan(ops=ops).touched_paths():
            doc = await self._disk_docs.read(rel)
            texts[rel] = doc.text if doc is not None else None
        return texts

    async def _undo(self, ops: list[FileOp], before: dict[str, str | None]) -> ApplyResult:
        # Walk the plan forward to know each file's text just before each op, then invert backwards.
        current = dict(before)
        prior: list[str] = []
        for op in ops:
            if isinstance(op, RenameFile):
                current[op.new_path] = current.pop(op.path, None)
                prior.append("")
                continue
            prior.append(current.get(op.path) or "")
            current[op.path] = (op.text if isinstance(op, CreateFile) else
                                op.new_text if isinstance(op, UpdateFile) else None)
        inverse: list[FileOp] = []
        for op, old in zip(reversed(ops), reversed(prior), strict=True):
            if isinstance(op, CreateFile):
                inverse.append(DeleteFile(path=op.path, base_text=op.text))
            elif isinstance(op, RenameFile):
                inverse.append(RenameFile(path=op.new_path, new_path=op.path))
            elif isinstance(op, DeleteFile):
                inverse.append(CreateFile(path=op.path, text=old))
            else:
                inverse.append(UpdateFile(path=op.path, edits=_whole(op.new_text, old),
                                          base_text=op.new_text, new_text=old))
        return await self._apply_on_disk(inverse)

    # --- helpers --------------------------------------------------------------------------------

    def _rel(self, uri: str) -> str:
        return relative_path(self.root, uri) or uri

    def _version_of(self, rel: str) -> int | None:
        doc = self.documents.document(rel)
        return doc.version if doc is not None else None

    def _buffer_digest(self, rel: str) -> str | None:
        current = self.documents.buffer_text(rel)
        return digest(current[0]) if current is not None else None

    def _disk_has_edit(self, dirty: _Dirty) -> bool:
        """Disk holds the buffer as the server knows it, or the text the agent left in it (the
        editor's last didChange may still be on its way)."""
        on_disk = file_digest(self.root / dirty.rel)
        return on_disk in (dirty.expected, self._buffer_digest(dirty.rel))
