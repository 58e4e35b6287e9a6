"""DocumentSource over the file system, for headless runs (and the server's fallback)."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path

from lsp_agent.domain.ports import Document
from lsp_agent.osfiles.regular import NotRegularFile, open_regular

#: A file is read into a buffer that an earlier read left behind, when one is large enough: fresh
#: memory costs a page fault per 4 KiB touched (≈ 700 for a 2.9 MB file, ≈ 3 ms on a VM), and with
#: no new whole-file copy beside the text, the allocator also recycles the memory of the texts a
#: read and an edit make. At most SPARE_BUFFERS buffers of at most KEEP_BUFFER_BYTES stay held.
KEEP_BUFFER_BYTES = 4 << 20
SPARE_BUFFERS = 2
_spares: list[bytearray] = []  # list.pop and list.append are atomic: reads in threads share them


class DiskDocuments:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    async def read(self, path: str) -> Document | None:
        return await asyncio.to_thread(self.read_sync, path)

    def read_sync(self, path: str) -> Document | None:
        """The file's text; None when it does not exist (or is a directory). Raises NotRegularFile
        for a FIFO, socket or device, which is never opened: reading one could block forever."""
        target = self.root / path
        try:
            fd = open_regular(target)
        except NotRegularFile as exc:
            if exc.kind == "a directory":
                return None
            raise
        except (FileNotFoundError, NotADirectoryError):
            return None
        with open(fd, "rb", buffering=0) as stream:
            return Document(text=read_text(stream), version=None, source="disk")


def read_text(stream: io.FileIO) -> str:
    """A file's text: UTF-8, undecodable bytes kept as surrogates (they encode back to themselves),
    read as bytes so CRLF and a missing final newline survive unchanged. Read to its end whatever
    its size said (a file may grow while it is read, and /proc files say 0)."""
    buffer = _take(os.fstat(stream.fileno()).st_size + 1)  # one byte more: the end is seen without growing
    filled = 0
    try:
        while True:
            with memoryview(buffer) as view:
                while filled < len(buffer) and (got := stream.readinto(view[filled:])):
                    filled += got
                if filled < len(buffer):
                    return str(view[:filled], "utf-8", "surrogateescape")
            buffer += bytes(len(buffer))  # filled to the brim: the file grew; no view is held now
    finally:
        _give_back(buffer)


def _take(size: int) -> bytearray:
    try:
        buffer = _spares.pop()
    except IndexError:
        return bytearray(size)
    return buffer if len(buffer) >= size else bytearray(size)


def _give_back(buffer: bytearray) -> None:
    if len(buffer) <= KEEP_BUFFER_BYTES and len(_spares) < SPARE_BUFFERS:
        _spares.append(buffer)
