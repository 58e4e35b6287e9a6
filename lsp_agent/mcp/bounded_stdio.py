"""A stdio MCP server's answers, where the SDK cannot read them, turned into an error for the call.

The SDK parses each line with pydantic-core, which refuses a document nested past its own recursion
limit (200 levels in all: a structured result 199 deep): it logs the failure and drops the message,
so the call that waits for it ends only at `toolTimeoutMs`, as a misleading "did not answer". Here
the read stream is wrapped: a line the SDK could not parse that is over our bounds
(lsp_agent/domain/bounded_json.py) becomes a JSON-RPC error for the request it answers (its `id`
read by a bounded scan), so the call fails at once with the reason. Results the SDK did read are
bounded again where they are converted (results.py: nesting deeper than `bounded_json.MAX_DEPTH` is
refused).
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any

import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from lsp_agent.domain import bounded_json

log = logging.getLogger(__name__)

INVALID_REQUEST = -32600


def readable(item: Any) -> Any:
    """The item, or, for a line refused for its size or depth, an error answer to its request."""
    if not isinstance(item, ValidationError):
        return item
    line = next((e.get("input") for e in item.errors() if e.get("type") == "json_invalid"), None)
    if not isinstance(line, str):
        return item
    try:
        bounded_json.check(line)
        return item  # invalid for another reason: the SDK reports it as it does
    except bounded_json.JsonTooLarge as exc:
        reason = exc.reason
    msg_id = bounded_json.top_level_scalar(line, "id")
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
        log.warning("an MCP server sent a message that was refused (%s); it answered no known request", reason)
        return item
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg_id, error=types.ErrorData(
        code=INVALID_REQUEST, message=f"the server's answer was refused: {reason}")))


class _ReadableStream:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:  # e.g. the SDK's `last_context`
        return getattr(self.inner, name)

    async def receive(self) -> Any:
        return readable(await self.inner.receive())

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> _ReadableStream:
        return self

    async def __anext__(self) -> Any:
        return readable(await self.inner.__anext__())

    async def __aenter__(self) -> _ReadableStream:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        return bool(await self.inner.__aexit__(exc_type, exc, tb))


class BoundedStdio:
    """The SDK's stdio transport with its read stream wrapped (an MCP `Transport`)."""

    def __init__(self, params: StdioServerParameters) -> None:
        self._inner = stdio_client(params)

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return _ReadableStream(read), write

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)
