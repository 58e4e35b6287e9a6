"""The ACP client's lines, bounded before the SDK parses them.

The ACP SDK reads one JSON-RPC message per line and parses it with `json.loads`. A line nested a few
hundred levels deep parses, then breaks later recursion (validation, copies); 100,000 levels raise
inside the parser. Each complete line is checked here first (lsp_agent/domain/bounded_json.py): one
over a bound is answered with a JSON-RPC error (to its `id`, read by a bounded scan) and replaced by
an empty line, which the SDK skips. The session goes on.

A line longer than the reader's limit is refused the same way, and dropped as it arrives: the SDK
would join it from pieces past the limit, so junk without a line break grew memory without bound.
What is held is the limit, the most a real line (an image inline) may take.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from lsp_agent.domain import bounded_json

log = logging.getLogger(__name__)

INVALID_REQUEST = -32600
#: the start of an over-long line kept to find its `id` (JSON-RPC puts it near the front)
_HEAD = 4096
_DROP = 64 * 1024


class BoundedLineReader(asyncio.StreamReader):
    #: where refusals are answered (set once the pipe's writer exists)
    writer: asyncio.StreamWriter | None = None

    def __init__(self, limit: int, **kwargs: Any) -> None:
        super().__init__(limit=limit, **kwargs)
        self.line_limit = limit

    async def readuntil(self, separator: Any = b"\n") -> bytes:
        try:
            line = await super().readuntil(separator)
        except asyncio.LimitOverrunError as exc:
            head = await self._drop_line(separator, exc.consumed)
            self._refuse(head, f"the line is longer than {self.line_limit} bytes")
            return b"\n"
        try:
            bounded_json.check(line)
        except bounded_json.JsonTooLarge as exc:
            self._refuse(line, exc.reason)
            return b"\n"
        return line

    async def _drop_line(self, separator: Any, consumed: int) -> bytes:
        """Drop the rest of an over-long line (up to its separator, or EOF) a piece at a time as it
        arrives; its first bytes are returned. Meanwhile the reader's limit is one piece: its next
        search gives up after a piece, and the pipe is paused past two (asyncio's rule), so the
        line's rest is never buffered whole."""
        head = b""
        self._limit = _DROP
        try:
            while True:
                while consumed > 0:
                    piece = await self.read(min(consumed, _DROP))
                    if not piece:
                        return head  # EOF: the SDK sees it on its next read
                    head += piece[:_HEAD - len(head)]
                    consumed -= len(piece)
                try:
                    tail = await super().readuntil(separator)
                except asyncio.LimitOverrunError as exc:
                    consumed = exc.consumed
                    continue
                except asyncio.IncompleteReadError:
                    return head
                return head + tail[:_HEAD - len(head)]
        finally:
            self._limit = self.line_limit

    def _refuse(self, line: bytes, reason: str) -> None:
        log.warning("refused a message from the ACP client: %s", reason)
        if self.writer is None:
            return
        msg_id = bounded_json.top_level_scalar(line, "id")
        if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
            msg_id = None
        error = {"jsonrpc": "2.0", "id": msg_id,
                 "error": {"code": INVALID_REQUEST, "message": f"Invalid Request: the message is refused: {reason}"}}
        self.writer.write(json.dumps(error).encode("utf-8") + b"\n")
