"""The editor is told once, as a warning, when commands cannot be sandboxed (real server over stdio)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.conftest import StartEditor, start_editor

__all__ = ["start_editor"]  # the e2e fixture, reused here


async def _messages(editor: object, timeout: float = 20.0) -> list[str]:
    client = editor.client  # type: ignore[attr-defined]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not client.messages and loop.time() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # a second notice would arrive by now
    return [m.message for m in client.messages]


async def test_no_bwrap_is_shown_once_in_the_editor(start_editor: StartEditor, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSP_AGENT_BWRAP", "/nonexistent/bwrap")  # inherited by the server process
    root = tmp_path / "ws"
    root.mkdir()
    editor = await start_editor(root, [])
    shown = [m for m in await _messages(editor) if "NOT sandboxed" in m]
    assert len(shown) == 1 and "bubblewrap (bwrap) is not installed" in shown[0]
