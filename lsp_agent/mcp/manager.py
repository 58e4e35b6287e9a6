"""The configured MCP servers: one connection each (mcp/connection.py), their tools as one catalog,
failures reported once. A server that fails to start or dies loses its tools; the run goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_agent.mcp.connection import Connection, McpToolInfo, ServerState
from lsp_agent.mcp.tool import McpTool, make_tool
from lsp_agent.settings.mcp_servers import McpSettings

log = logging.getLogger(__name__)


class McpManager:
    """The workspace's MCP servers: started on first need, stopped with the server."""

    def __init__(self, settings: McpSettings, root: Path, report: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.connections = {name: Connection(name, cfg, root, on_failure=self.report_failures)
                            for name, cfg in settings.enabled().items()}
        self.disabled = sorted(n for n, cfg in settings.servers.items() if not cfg.enabled)
        self.report = report or (lambda text: log.warning("%s", text))
        self._reported: set[tuple[str, str]] = set()
        self._starting: asyncio.Future[None] | None = None
        self._catalog: tuple[tuple[str, ...], list[Any]] = ((), [])

    async def start(self) -> None:
        """Start every enabled server (concurrently; idempotent). Failures are reported once."""
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start_all())
        await asyncio.shield(self._starting)
        self.report_failures()

    async def _start_all(self) -> None:
        await asyncio.gather(*(c.start() for c in self.connections.values()))

    def report_failures(self) -> list[str]:
        """Report each failure once: the editor's message, the CLI's stderr (the default: a warning log)."""
        fresh = []
        for conn in self.connections.values():
            if conn.state is ServerState.FAILED and conn.error and (conn.name, conn.error) not in self._reported:
                self._reported.add((conn.name, conn.error))
                text = f"MCP server {conn.name!r} is unavailable (its tools are not offered): {conn.error}"
                fresh.append(text)
                self.report(text)
        return fresh

    def unavailable(self) -> list[str]:
        """`name: error` of each failed server (agent/status)."""
        return [f"{name}: {conn.error}" for name, conn in sorted(self.connections.items())
                if conn.state is ServerState.FAILED and conn.error]

    def tools(self) -> list[McpToolInfo]:
        """Tools of the connected servers, sorted by server then name (the order is cached prefix)."""
        return [t for name in sorted(self.connections) for t in self.connections[name].tools
                if self.connections[name].state is ServerState.READY]

    def catalog(self) -> list[McpTool]:
        """The connected servers' tools as Tools, rebuilt only when the set of tools changes."""
        infos = self.tools()
        key = tuple(t.qualified for t in infos)
        if key != self._catalog[0]:
            self._catalog = (key, [make_tool(info, self.connections[info.server]) for info in infos])
        return list(self._catalog[1])

    def connection(self, server: str) -> Connection | None:
        return self.connections.get(server)

    async def aclose(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()), return_exceptions=True)
