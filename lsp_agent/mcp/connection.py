"""One MCP server's connection, through the official `mcp` SDK: started on need, held by one task,
its tools listed and checked, a failure reported once.

Each server is held by one task (the SDK's transports are anyio context managers: entered and
left in the same task); calls are made from the tool-running tasks.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client, StdioServerParameters

from lsp_agent.mcp.bounded_stdio import BoundedStdio
from lsp_agent.mcp.schema import DESCRIPTION_MAX, SchemaProblem, check_schema, qualified_name
from lsp_agent.settings.mcp_servers import McpServerConfig

log = logging.getLogger(__name__)

#: Pages of tools/list read from one server (a server that pages forever is cut here).
MAX_PAGES = 20


class ServerState(StrEnum):
    STOPPED = "stopped"  # configured, not needed yet
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"  # could not start, or died; its tools are gone


class McpUnavailable(Exception):
    """The server is not (or no longer) connected."""


@dataclass(frozen=True)
class McpToolInfo:
    server: str
    name: str  # the server's own tool name
    qualified: str  # mcp__<server>__<tool>
    description: str
    schema: dict[str, Any]
    read_only_hint: bool


@dataclass
class SkippedTool:
    name: str
    reason: str


def _tool_info(server: str, tool: types.Tool) -> McpToolInfo:
    qualified = qualified_name(server, tool.name)
    schema = check_schema(tool.input_schema)
    description = (tool.description or tool.title or f"{tool.name} (from the MCP server {server})").strip()
    if len(description) > DESCRIPTION_MAX:
        description = description[:DESCRIPTION_MAX] + " [description cut]"
    hint = bool(tool.annotations and tool.annotations.read_only_hint)
    return McpToolInfo(server, tool.name, qualified, description, schema, hint)


@dataclass
class Connection:
    name: str
    config: McpServerConfig
    root: Path
    state: ServerState = ServerState.STOPPED
    error: str | None = None
    tools: list[McpToolInfo] = field(default_factory=list)
    skipped: list[SkippedTool] = field(default_factory=list)
    server_version: str | None = None
    #: told of every failure (the manager reports it once)
    on_failure: Callable[[], object] | None = None
    _client: Client | None = None
    _holder: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def transport(self) -> str:
        return "stdio" if self.config.command is not None else "http"

    def _target(self) -> BoundedStdio | str:
        if self.config.url is not None:
            return self.config.url
        assert self.config.command is not None
        cwd = self.root / self.config.cwd if self.config.cwd else self.root
        return BoundedStdio(StdioServerParameters(command=self.config.command, args=self.config.args,
                                                  env=self.config.env or None, cwd=str(cwd)))

    async def start(self) -> None:
        """Connect and list the tools within the startup timeout (a failure is recorded, not raised)."""
        if self.state is not ServerState.STOPPED:
            return
        self.state = ServerState.STARTING
        self._holder = asyncio.ensure_future(self._hold())
        waiter = asyncio.ensure_future(self._ready.wait())
        timeout = self.config.startup_timeout_ms / 1000
        try:
            await asyncio.wait({waiter, self._holder}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if self.state is ServerState.STARTING:
            self._fail(f"did not start within {self.config.startup_timeout_ms} ms (startupTimeoutMs)")
            await self.stop()

    async def _hold(self) -> None:
        try:
            async with Client(self._target(), client_info=types.Implementation(name="lsp-agent", version="0"),
                              cache=None) as client:
                tools = await self._list(client)
                self._client = client
                self._accept(tools)
                info = client.server_info
                self.server_version = f"{info.name} {info.version}" if info is not None else None
                self.state = ServerState.READY
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # anything the server or transport does is its failure (groups included)
            if self.state in (ServerState.STARTING, ServerState.READY):
                self._fail(f"{type(exc).__name__}: {_message(exc)}")
        finally:
            self._client = None
            self._ready.set()

    async def _list(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def _accept(self, listed: list[types.Tool]) -> None:
        accepted: dict[str, McpToolInfo] = {}
        skipped: list[SkippedTool] = []
        for tool in listed:
            try:
                info = _tool_info(self.name, tool)
            except SchemaProblem as exc:
                skipped.append(SkippedTool(tool.name, str(exc)))
                continue
            if info.qualified in accepted:
                skipped.append(SkippedTool(tool.name, "listed twice"))
                continue
            accepted[info.qualified] = info
        self.tools = sorted(accepted.values(), key=lambda t: t.qualified)  # stable order: cached prefix
        self.skipped = sorted(skipped, key=lambda s: s.name)
        for s in self.skipped:
            log.warning("MCP server %s: tool %r skipped: %s", self.name, s.name, s.reason)

    def _fail(self, error: str) -> None:
        self.state = ServerState.FAILED
        self.error = error
        self.tools = []
        if self.on_failure is not None:
            self.on_failure()

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        client = self._client
        if self.state is not ServerState.READY or client is None:
            raise McpUnavailable(self.error or f"the MCP server {self.name} is {self.state.value}")
        try:
            return await client.call_tool(tool, arguments)
        except (asyncio.CancelledError, TimeoutError):
            raise
        except Exception as exc:
            if (self._holder is not None and self._holder.done()) or _is_transport_failure(exc):
                if self.state is ServerState.READY:
                    self._fail(f"the server stopped during a call ({type(exc).__name__}: {_message(exc)})")
                raise McpUnavailable(self.error or "the server stopped") from exc
            raise

    async def stop(self) -> None:
        self._stop.set()
        holder = self._holder
        if holder is not None and not holder.done():
            try:
                # The SDK bounds its own shutdown (close stdin, terminate, kill); this is a backstop.
                await asyncio.wait_for(asyncio.shield(holder), timeout=10)
            except (TimeoutError, asyncio.CancelledError):
                holder.cancel()
            except Exception:
                log.debug("MCP server %s: error while stopping", self.name, exc_info=True)
        if self.state in (ServerState.READY, ServerState.STARTING):
            self.state = ServerState.STOPPED
            self.tools = []


def _message(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _message(exc.exceptions[0])
    return str(exc) or type(exc).__name__


def _is_transport_failure(exc: BaseException) -> bool:
    import anyio

    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | OSError):
        return True
    text = str(exc).lower()
    return "connection closed" in text or ("closed" in text and "stream" in text)
