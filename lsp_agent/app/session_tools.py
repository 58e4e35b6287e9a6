"""The tools one request offers: the static registry, then (experimental) tool_search and the MCP
tools — all of them up front (sorted by server and name), or with `mcp_tool_discovery` only those
tool_search selected, appended in selection order. Either way each request's tool list extends
the previous one's, so the cached prefix holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from lsp_agent.core.tool_registry import ToolRegistry
from lsp_agent.core.tools import Tool
from lsp_agent.domain.history import Message
from lsp_agent.mcp.tool_search import NAME as TOOL_SEARCH
from lsp_agent.mcp.tool_search import ToolSearch, selected_names

if TYPE_CHECKING:
    from lsp_agent.core.session import Environment
    from lsp_agent.mcp.manager import McpManager


class ToolNameConflict(ValueError):
    pass


def check_names(registry: ToolRegistry, discovery: bool) -> None:
    """A pre-existing tool named tool_search is an error when discovery is on: discovery needs that name,
    and silently shadowing either tool would hide it from the model."""
    if discovery and TOOL_SEARCH in registry.names():
        raise ToolNameConflict(f"a tool named {TOOL_SEARCH!r} already exists; mcp_tool_discovery needs that name")


def session_tools(env: Environment, history: list[Message]) -> ToolRegistry:
    discovery = env.settings.experimental.mcp_tool_discovery
    manager = cast("McpManager | None", env.mcp)  # the only ToolServers there is
    if manager is None and not discovery:
        return env.registry
    check_names(env.registry, discovery)
    tools: list[Tool[Any]] = [t for name in env.registry.names() if (t := env.registry.get(name)) is not None]
    catalog = manager.catalog() if manager is not None else []
    if not discovery:
        return ToolRegistry([*tools, *catalog])
    selected = selected_names(history, env.settings.limits.tool_search_selected)
    by_name = {t.name: t for t in catalog}
    # A selected tool whose server is gone drops out (and comes back with it, in its old place).
    return ToolRegistry([*tools, ToolSearch(catalog, selected), *(by_name[n] for n in selected if n in by_name)])
