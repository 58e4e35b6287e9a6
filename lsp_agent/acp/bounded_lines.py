"""The ACP client's lines, bounded before the SDK parses them.

The ACP SDK reads one JSON-RPC message per line and parses it with `json.loads`. A line nested a few
hundred levels deep parses, then breaks later recursion (validation, copies); 100,000 levels raise
inside the parser. Each complete line is checked here first (lsp_agent/domain/bounded_json.py): one
over a bound is answered with a JSON-RPC error (to its `id`, read by a bounded scan) and replaced by
an empty line, which the SDK skips. The session goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from lsp_agent.domain import bounded_json

log = logging.getLogger(__name__)

INVALID_REQUEST = -32600


class BoundedLineReader(asyncio.StreamReader):
    #: where refusals are answered (set once the pipe's writer exists)
    writer: asyncio.StreamWriter | None = None

    async def readuntil(self, separator: Any = b"\n") -> bytes:
        line = await super().readuntil(separator)
        try:
            bounded_json.check(line)
        except bounded_json.JsonTooLarge as exc:
            log.warning("refused a message from the ACP client: %s", exc.reason)
            if self.writer is not None:
                msg_id = bounded_json.top_level_scalar(line, "id")
                if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
                    msg_id = None
                error = {"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": INVALID_REQUEST, "message": f"Invalid Request: the message is refused: "
                                                                       f"{exc.reason}"}}
                self.writer.write(json.dumps(error).encode("utf-8") + b"\n")
            return b"\n"
        return line
