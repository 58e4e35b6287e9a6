"""DocumentSource over the editor's open buffers (didOpen/didChange, incremental sync applied
by pygls), with the disk as fallback for files the editor does not have open.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import unquote

from pygls.uris import from_fs_path
from pygls.workspace import TextDocument, Workspace

from lsp_agent.disk.documents import DiskDocuments
from lsp_agent.domain.ports import Document
from lsp_agent.langserver.answers import relative_path as relative_path  # where the other modules find it

#: How long a read waits for the didChange that follows an edit the editor accepted.
CHANGE_WAIT_S = 2.0


class BufferDocuments:
    def __init__(self, workspace: Workspace, root: Path) -> None:
        self.workspace = workspace
        self.root = root
        self.disk = DiskDocuments(root)
        self._open: dict[str, str] = {}  # relative path → the URI the client opened it as
        # URI → the version an accepted edit was sent against; cleared by the next didChange.
        self._awaiting: dict[str, int | None] = {}
        self._changed = asyncio.Event()

    # --- client notifications -------------------------------------------------------------------

    def opened(self, uri: str) -> None:
        rel = relative_path(self.root, uri)
        if rel is not None:
            self._open[rel] = uri

    def closed(self, uri: str) -> None:
        rel = relative_path(self.root, uri)
        if rel is not None and self._open.get(rel) == uri:
            del self._open[rel]
        self._awaiting.pop(uri, None)

    def changed(self, uri: str) -> None:
        if uri in self._awaiting:
            del self._awaiting[uri]
            self._changed.set()

    def await_change(self, uri: str, sent_version: int | None) -> None:
        """The editor accepted an edit of `uri`; reads wait (briefly) for its didChange, since
        some clients answer applyEdit before they send the change."""
        self._awaiting[uri] = sent_version

    # --- lookups --------------------------------------------------------------------------------

    def open_paths(self) -> dict[str, str]:
        return dict(self._open)

    def document(self, rel: str) -> TextDocument | None:
        uri = self._open.get(rel)
        if uri is None:
            return None
        doc: TextDocument | None = self.workspace.text_documents.get(unquote(uri))
        return doc

    def uri_for(self, rel: str) -> str:
        """The URI the editor knows the file by (as opened), else the canonical file URI."""
        uri = self._open.get(rel)
        if uri is not None:
            return uri
        made = from_fs_path(str(self.root / rel))
        return made if made is not None else (self.root / rel).as_uri()

    def buffer_text(self, rel: str) -> tuple[str, int | None] | None:
        doc = self.document(rel)
        if doc is None:
            return None
        return doc.source, doc.version

    # --- DocumentSource -------------------------------------------------------------------------

    async def read(self, path: str) -> Document | None:
        uri = self._open.get(path)
        if uri is not None and uri in self._awaiting:
            await self._wait_for_change(uri)
        current = self.buffer_text(path)
        if current is None:
            return await self.disk.read(path)
        text, version = current
        return Document(text=text, version=version, source="buffer")

    async def _wait_for_change(self, uri: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CHANGE_WAIT_S
        while uri in self._awaiting:
            remaining = deadline - loop.time()
            if remaining <= 0:
                self._awaiting.pop(uri, None)
                return
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                continue
