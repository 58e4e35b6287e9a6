"""DocumentSource over the file system, for headless runs (and the server's fallback)."""

from __future__ import annotations

import asyncio
import codecs
from pathlib import Path
from typing import BinaryIO

from lsp_agent.core.ports import Document

#: files are read and decoded in pieces of this many bytes
READ_PIECE = 1 << 16


class DiskDocuments:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    async def read(self, path: str) -> Document | None:
        return await asyncio.to_thread(self.read_sync, path)

    def read_sync(self, path: str) -> Document | None:
        target = self.root / path
        if not target.is_file():
            return None
        with target.open("rb", buffering=0) as stream:
            return Document(text=read_text(stream), version=None, source="disk")


def read_text(stream: BinaryIO) -> str:
    """A file's text: UTF-8, undecodable bytes kept as surrogates (they encode back to themselves),
    read as bytes so CRLF and a missing final newline survive unchanged. Decoded a piece at a time:
    the file's whole bytes are never held beside its text (a multi-megabyte copy costs more in page
    faults than the read itself)."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    pieces = []
    while piece := stream.read(READ_PIECE):
        pieces.append(decoder.decode(piece))
    if tail := decoder.decode(b"", final=True):
        pieces.append(tail)
    return pieces[0] if len(pieces) == 1 else "".join(pieces)
