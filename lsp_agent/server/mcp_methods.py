"""`agent/mcp/list`: a thin handler over the workspace's McpManager (servers, state, tools)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from lsp_agent.protocol.mcp_models import (
    AGENT_MCP_LIST,
    McpListParams,
    McpListResult,
    McpServerOut,
    McpSkippedOut,
    McpToolOut,
)
from lsp_agent.server.agent_server import AgentServer
from lsp_agent.server.rpc import Routes

if TYPE_CHECKING:
    from lsp_agent.mcp.manager import McpManager

routes = Routes()


def describe(manager: McpManager | None, discovery: bool) -> McpListResult:
    servers: list[McpServerOut] = []
    if manager is not None:
        tools = {t.name: t for t in manager.catalog()}
        for name in sorted(manager.connections):
            conn = manager.connections[name]
            servers.append(McpServerOut(
                name=name, transport="stdio" if conn.transport == "stdio" else "http", state=conn.state.value,
                error=conn.error, trusted=conn.config.trusted, server=conn.server_version,
                tools=[McpToolOut(name=t.qualified, tool=t.name, description=t.description,
                                  read_only=bool(tools[t.qualified].read_only) if t.qualified in tools else False)
                       for t in conn.tools],
                skipped=[McpSkippedOut(tool=s.name, reason=s.reason) for s in conn.skipped]))
        for name in manager.disabled:
            cfg = manager.settings.servers[name]
            servers.append(McpServerOut(name=name, transport="stdio" if cfg.command else "http", state="disabled",
                                        trusted=cfg.trusted))
    return McpListResult(servers=sorted(servers, key=lambda s: s.name), discovery=discovery)


@routes.rpc(AGENT_MCP_LIST, McpListParams)
async def agent_mcp_list(ls: AgentServer, params: McpListParams) -> McpListResult:
    env = ls.runtime().agent.env
    if params.start and env.mcp is not None:
        await env.mcp.start()
    return describe(cast("McpManager | None", env.mcp), env.settings.experimental.mcp_tool_discovery)
