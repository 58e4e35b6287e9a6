"""MCP servers the ACP client passes in `session/new` / `session/load`, as entries of our `mcp.servers`
setting: the core's MCP client (lsp_agent/mcp) starts them on need, with the same schema checks,
timeouts and approvals as configured servers. Only stdio servers (what every ACP agent must support)."""

from __future__ import annotations

import logging
from typing import Any

from acp import RequestError
from acp.schema import McpServerStdio

from lsp_agent.settings.mcp_servers import SERVER_NAME, SERVER_NAME_MAX

log = logging.getLogger(__name__)


def client_servers(servers: list[Any] | None) -> dict[str, dict[str, Any]]:
    """The `mcp.servers` layer of the client's servers (a name the settings also use is replaced
    by the client's: it is what the user chose for this session)."""
    out: dict[str, dict[str, Any]] = {}
    for server in servers or []:
        if not isinstance(server, McpServerStdio):  # http/sse are not advertised in mcpCapabilities
            log.warning("MCP server %r: only stdio servers are supported over ACP; ignored",
                        getattr(server, "name", "?"))
            continue
        if len(server.name) > SERVER_NAME_MAX or not SERVER_NAME.match(server.name):
            raise RequestError.invalid_params({
                "kind": "invalid_params", "field": "mcpServers.name",
                "message": f"MCP server name {server.name!r}: use letters, digits, '-' and single '_', at most "
                           f"{SERVER_NAME_MAX} characters"})
        out[server.name] = {"command": server.command, "args": list(server.args),
                            "env": {v.name: v.value for v in server.env}}
    return out
