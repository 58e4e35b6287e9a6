"""The SDK's client side, driving the real `lsp-agent acp` process over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.core import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from lsp_agent.providers.scripted import Script


@dataclass
class RecordingClient:
    """Answers permission requests with `answer` (an option ID, or None to cancel), serves fs/* from the
    disk, and records everything it receives."""

    answer: str | None = "allow_once"
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[Any] = field(default_factory=list)
    #: each permission request's options by id: the names the client shows
    option_names: list[dict[str, str]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    ext: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    permission_asked: asyncio.Event = field(default_factory=asyncio.Event)
    hold_permission: asyncio.Event | None = None

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append((tool_call, [o.option_id for o in options]))
        self.option_names.append({o.option_id: o.name for o in options})
        self.permission_asked.set()
        if self.hold_permission is not None:
            await self.hold_permission.wait()
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        await asyncio.to_thread(Path(path).write_text, content, "utf-8")
        return WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        return ReadTextFileResponse(content=await asyncio.to_thread(Path(path).read_text, "utf-8"))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext.append((method, params))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u.session_update for s, u in self.updates if session_id in (None, s)]

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))


def write_script(path: Path, script: Script) -> Path:
    path.write_text(script.model_dump_json(), encoding="utf-8")
    return path


@asynccontextmanager
async def acp_agent(client: RecordingClient, script: Path, *config: str, fs: bool = True, cwd: Path | None = None,
                    ) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    args = ["-m", "lsp_agent", "acp", "--model", "scripted/test", "--script", str(script)]
    for pair in config:
        args += ["--config", pair]
    async with spawn_agent_process(client, sys.executable, *args, env=dict(os.environ), cwd=cwd) as (conn, proc):
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps), 30)
        assert init.protocol_version == PROTOCOL_VERSION
        yield conn, proc
