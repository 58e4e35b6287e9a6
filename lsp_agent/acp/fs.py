"""Files through the ACP client when it offers `fs/read_text_file` / `fs/write_text_file` (its unsaved
buffers, as the language server uses WorkspaceEdits), else the disk — with the same checks either way.

ACP's fs methods take a session ID although they describe the client's file system: the bridge uses the
latest ACP session opened on its workspace. A plan with deletes or renames (no ACP method) goes to disk.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Protocol

from lsp_agent.acp.updates import Diff
from lsp_agent.core.paths import PathDenied, check_writable, normalize
from lsp_agent.disk.applier import DiskApplier
from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.edits import ApplyFailure, ApplyResult, CreateFile, EditPlan, UpdateFile, unmade
from lsp_agent.domain.ports import Document

log = logging.getLogger(__name__)


class FsClient(Protocol):
    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kwargs: Any) -> Any: ...

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any: ...


class ClientFs:
    """What one workspace may ask of the client's file system (capabilities from `initialize`)."""

    def __init__(self, client: FsClient, root: Path, can_read: bool, can_write: bool) -> None:
        self.client = client
        self.root = root.resolve()
        self.can_read = can_read
        self.can_write = can_write
        self.session_id: str | None = None
        #: diffs of applied edits not yet shown on their tool call (path → Diff)
        self.diffs: dict[str, Diff] = {}

    def take_diffs(self, paths: list[str]) -> list[Diff]:
        return [self.diffs.pop(p) for p in paths if p in self.diffs]

    def absolute(self, rel: str) -> str:
        return str(self.root / normalize(rel))


class ClientDocuments:
    """DocumentSource: the client's view of a file (its buffer when open), else the disk."""

    def __init__(self, fs: ClientFs) -> None:
        self.fs = fs
        self.disk = DiskDocuments(fs.root)

    async def read(self, path: str) -> Document | None:
        session = self.fs.session_id
        on_disk = await self.disk.read(path)
        if not self.fs.can_read or session is None or on_disk is None:
            # A file the disk lacks is absent: a client may report an unsaved new buffer, but the
            # tools' checks (existence, reads before writes) stay those of the disk.
            return on_disk
        try:
            answer = await self.fs.client.read_text_file(session, self.fs.absolute(path))
        except Exception as exc:  # the client refused or failed: the disk is the truth then
            log.info("fs/read_text_file %s failed (%s); reading the disk", path, exc)
            return on_disk
        return Document(text=str(answer.content), version=None, source="buffer")


class ClientApplier:
    """EditApplier: creates and updates through `fs/write_text_file`, after checking every op against
    the client's current text (as the disk applier does against the disk); the rest on disk."""

    def __init__(self, fs: ClientFs, documents: ClientDocuments) -> None:
        self.fs = fs
        self.documents = documents
        self.disk = DiskApplier(fs.root)
        self._lock = asyncio.Lock()  # one plan at a time per workspace

    async def apply(self, plan: EditPlan) -> ApplyResult:
        async with self._lock:
            befores = {p: await self.documents.read(p) for p in plan.touched_paths()}
            if self._through_client(plan):
                result = await self._apply_client(plan, befores)
            else:
                result = await self.disk.apply(plan)
            if result.ok:
                for op in plan.ops:
                    if isinstance(op, CreateFile | UpdateFile):
                        before = befores.get(op.path)
                        text = op.text if isinstance(op, CreateFile) else op.new_text
                        self.fs.diffs[op.path] = Diff(op.path, before.text if before else None, text)
            return result

    async def flush(self, paths: list[str]) -> ApplyResult:
        # ACP's fs/write_text_file writes the client's file system: nothing waits in a buffer.
        return ApplyResult(ok=True)

    def _through_client(self, plan: EditPlan) -> bool:
        return (self.fs.can_write and self.fs.session_id is not None
                and all(isinstance(op, CreateFile | UpdateFile) for op in plan.ops))

    async def _apply_client(self, plan: EditPlan, befores: dict[str, Document | None]) -> ApplyResult:
        session = self.fs.session_id
        assert session is not None
        current = dict(befores)
        for op in plan.ops:  # every op checked before the first write
            try:
                check_writable(self.fs.root, op.path)
            except PathDenied as exc:
                return ApplyResult(ok=False, failure=ApplyFailure.REFUSED, message=str(exc))
            have = current.get(op.path)
            if isinstance(op, CreateFile):
                if have is not None:
                    return ApplyResult(ok=False, failure=ApplyFailure.CONFLICT, message=f"{op.path} already exists")
                current[op.path] = Document(text=op.text)
            elif isinstance(op, UpdateFile):
                if have is None or have.text != op.base_text:
                    return ApplyResult(ok=False, failure=ApplyFailure.CONFLICT,
                                       message=f"{op.path} changed since the edit was planned; read it again")
                # the client is sent new_text, never the edits: that they make it is checked here
                if (problem := unmade(have.text, op)) is not None:
                    return ApplyResult(ok=False, failure=ApplyFailure.CONFLICT, message=problem)
                current[op.path] = Document(text=op.new_text)
        written: list[str] = []
        for path, doc in current.items():
            if path not in plan.touched_paths() or doc is None:
                continue
            try:
                await self.fs.client.write_text_file(session, self.fs.absolute(path), doc.text)
            except Exception as exc:
                await self._roll_back(session, written, befores)
                return ApplyResult(ok=False, failure=ApplyFailure.IO_ERROR,
                                   message=f"the client could not write {path}: {exc}")
            written.append(path)
        return ApplyResult(ok=True)

    async def _roll_back(self, session: str, written: list[str], befores: dict[str, Document | None]) -> None:
        """Best effort, like the disk applier: earlier files of the plan get their old text back
        (a created file is removed from disk: ACP has no delete)."""
        for path in reversed(written):
            before = befores.get(path)
            try:
                if before is None:
                    await asyncio.to_thread((self.fs.root / path).unlink, True)
                else:
                    await self.fs.client.write_text_file(session, self.fs.absolute(path), before.text)
            except Exception:
                log.exception("could not roll back %s", path)
