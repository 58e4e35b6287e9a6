"""Params and result of `agent/mcp/list`: the configured MCP servers, their state and tools."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lsp_agent.protocol.models import Params, Result

#: client → server request
AGENT_MCP_LIST = "agent/mcp/list"


class McpListParams(Params):
    start: bool = Field(False, description="Start the servers not started yet (they start on first need anyway).")


class McpToolOut(Result):
    name: str = Field(description="The name the model calls: `mcp__<server>__<tool>`.")
    tool: str = Field(description="The server's own name for it.")
    description: str
    read_only: bool = Field(description="Shares the parallel lane: annotated read-only and the server is trusted.")


class McpSkippedOut(Result):
    tool: str
    reason: str


class McpServerOut(Result):
    name: str
    transport: Literal["stdio", "http"]
    state: Literal["stopped", "starting", "ready", "failed", "disabled"]
    error: str | None = None
    trusted: bool
    server: str | None = Field(None, description="The server's own name and version, once connected.")
    tools: list[McpToolOut] = Field(default_factory=list)
    skipped: list[McpSkippedOut] = Field(default_factory=list, description="Tools not offered, and why.")


class McpListResult(Result):
    servers: list[McpServerOut]
    discovery: bool = Field(description="`mcp_tool_discovery` is on: tools are offered only after tool_search.")


NESTED_MODELS: list[type[Result]] = [McpToolOut, McpSkippedOut, McpServerOut]
