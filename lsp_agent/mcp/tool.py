"""One MCP server tool as an lsp-agent Tool: the controller validates its arguments against the
server's JSON Schema; the call is bounded (toolTimeoutMs, maxResultChars) and cancellable.

Access (the parallel gate): exclusive unless the tool is annotated read-only *and* the user
trusts its server (`trusted = true`). `needs_approval` feeds the approval policy (`approval`): it
is true for every tool that is not read-only by that same rule.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

from lsp_agent.core.approval import ApprovalSubject
from lsp_agent.core.cancel import cancel_signal
from lsp_agent.core.tools import Access, StrictArgs, Tool, ToolContext, ToolResult
from lsp_agent.domain.history import ErrorKind
from lsp_agent.mcp.connection import Connection, McpToolInfo, McpUnavailable
from lsp_agent.mcp.results import to_tool_result
from lsp_agent.mcp.schema import args_model_for


class McpTool(Tool[StrictArgs]):
    info: ClassVar[McpToolInfo]
    read_only: ClassVar[bool]
    #: the approval policy asks before running a tool with this set (see the module docstring)
    needs_approval: ClassVar[bool]

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    @property
    def description(self) -> str:
        return self.info.description  # passed through: the server wrote it for models

    @property
    def input_schema(self) -> dict[str, Any]:
        """Passed through unchanged (the registry emits it instead of a generated schema)."""
        return self.info.schema

    def approval(self, args: StrictArgs, ctx: ToolContext) -> ApprovalSubject | None:
        if not self.needs_approval:
            return None
        shown = json.dumps(args.model_dump(exclude_unset=True), ensure_ascii=False, sort_keys=True)
        return ApprovalSubject(kind="mcp", what=f"{self.name} {shown}", program=self.name)

    async def run(self, args: StrictArgs, ctx: ToolContext) -> ToolResult:
        arguments = args.model_dump(exclude_unset=True)
        config = self.connection.config
        call = asyncio.ensure_future(self.connection.call(self.info.name, arguments))
        watchers: set[asyncio.Future[Any]] = {call}
        cancel = cancel_signal.get()
        if cancel is not None:
            watchers.add(asyncio.ensure_future(cancel.wait()))
        try:
            done, _ = await asyncio.wait(watchers, timeout=config.tool_timeout_ms / 1000,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in watchers:
                if w is not call:
                    w.cancel()
        if call not in done:
            call.cancel()  # the SDK tells the server (notifications/cancelled)
            await asyncio.gather(call, return_exceptions=True)
            if cancel is not None and cancel.is_set():
                return ToolResult.failure(ErrorKind.CANCELLED,
                                          f"cancelled: the run was cancelled while {self.name} ran.")
            return ToolResult.failure(
                ErrorKind.TIMEOUT,
                f"timeout: {self.name} did not answer within {config.tool_timeout_ms} ms (toolTimeoutMs); "
                "the call was cancelled. Try smaller input, or another way.")
        try:
            result = call.result()
        except McpUnavailable as exc:
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"tool_failure: the MCP server {self.info.server!r} is not available ({exc}); its tools are "
                "gone for now. Continue without them.")
        except Exception as exc:  # the server answered with a JSON-RPC error, or a malformed result
            return ToolResult.failure(
                ErrorKind.TOOL_FAILURE,
                f"tool_failure: {self.name} failed: {type(exc).__name__}: {exc}. Check the arguments against "
                "the tool's description, or continue without it.")
        return to_tool_result(self.name, result, config.max_result_chars)


def make_tool(info: McpToolInfo, connection: Connection) -> McpTool:
    read_only = info.read_only_hint and connection.config.trusted
    cls = type(f"McpTool_{info.qualified}", (McpTool,), {
        "name": info.qualified, "info": info, "read_only": read_only, "needs_approval": not read_only,
        "access": Access.READ if read_only else Access.EXEC,
        "args_model": args_model_for(info.schema),
        "summary": info.description, "use_when": "", "avoid_when": "",
    })
    tool: McpTool = cls(connection)
    return tool

