"""DocumentSource over the file system, for headless runs (and the server's fallback)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_agent.core.ports import Document


class DiskDocuments:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    async def read(self, path: str) -> Document | None:
        return await asyncio.to_thread(self.read_sync, path)

    def read_sync(self, path: str) -> Document | None:
        target = self.root / path
        if not target.is_file():
            return None
        # Bytes, not text mode: CRLF and a missing final newline must survive unchanged.
        data = target.read_bytes()
        return Document(text=data.decode("utf-8", errors="surrogateescape"), version=None, source="disk")
