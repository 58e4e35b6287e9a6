"""Real server processes (`lsp-agent serve` over stdio) that a test kills with SIGKILL and starts
again on the same workspace; the state directory comes from LSP_AGENT_STATE_DIR (set per test), so
every server a test starts shares it. Used by tests/e2e/test_lsp_crash.py and
tests/reliability/test_kill9.py."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_agent.providers.scripted import Script
from tests.e2e.conftest import SERVER, TIMEOUT, Editor, full_capabilities, make_client


class Servers:
    def __init__(self, scripts: Path, command: list[str] | None = None) -> None:
        self.scripts = scripts  # where each server's scripted model is written
        #: how a server process is started (a wrapper may put it in a pid namespace of its own)
        self.command = command or SERVER
        self.editors: list[Editor] = []
        self._spare: tuple[LanguageClient, list[Editor]] | None = None

    async def _spawn(self) -> tuple[LanguageClient, list[Editor]]:
        ref: list[Editor] = []
        client = make_client(ref)
        await client.start_io(*self.command)
        return client, ref

    async def warm(self) -> None:
        """Start the next server's process now, so its imports overlap the test: it reads the
        workspace, the store and its settings only when `start` initializes it (a restart)."""
        if self._spare is None:
            self._spare = await self._spawn()

    async def start(self, root: Path, script: Script, options: dict[str, Any] | None = None) -> Editor:
        """`options`: more initialization options (a settings layer, e.g. `limits`)."""
        path = self.scripts / f"script-{len(self.editors)}.json"
        path.write_text(script.model_dump_json(), encoding="utf-8")
        client, ref = self._spare or await self._spawn()
        self._spare = None
        editor = Editor(client, root)
        ref.append(editor)
        self.editors.append(editor)
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=full_capabilities(), root_uri=root.as_uri(),
            initialization_options={"model": "scripted/test", "script": str(path), **(options or {})})), TIMEOUT)
        return editor

    @staticmethod
    async def kill(editor: Editor) -> None:
        """SIGKILL: no shutdown, no finally blocks, no flush. Reaped before returning, so the dead
        process's pid no longer answers (the recovery checks whether a steering owner is alive)."""
        process = editor.client._server  # pygls keeps the child process here
        assert process is not None and process.returncode is None
        os.kill(process.pid, signal.SIGKILL)
        assert await asyncio.wait_for(process.wait(), TIMEOUT) == -signal.SIGKILL
        await editor.client.stop()  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        if self._spare is not None:
            spare = self._spare[0]._server
            if spare is not None and spare.returncode is None:
                spare.kill()
            await self._spare[0].stop()  # type: ignore[no-untyped-call]
        for editor in self.editors:
            process = editor.client._server
            if process is None or process.returncode is not None:
                continue
            try:
                await asyncio.wait_for(editor.client.shutdown_session(), TIMEOUT)
            except (TimeoutError, RuntimeError):
                process.kill()
            await editor.client.stop()  # type: ignore[no-untyped-call]
