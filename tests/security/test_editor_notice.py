"""The editor is told once, as a warning, when commands cannot be sandboxed (real server over stdio)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import TIMEOUT, StartEditor, start_editor
from tests.helpers import call, reply, wait_for

__all__ = ["start_editor"]  # the e2e fixture, reused here


async def test_no_bwrap_is_shown_once_in_the_editor(start_editor: StartEditor, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSP_AGENT_BWRAP", "/nonexistent/bwrap")  # inherited by the server process
    root = tmp_path / "ws"
    root.mkdir()
    editor = await start_editor(root, [reply(call("run_command", command="ls")), reply(text="done")])
    await wait_for(lambda: any("NOT sandboxed" in m.message for m in editor.client.messages), timeout=TIMEOUT)
    # No fixed wait shows that a second notice never comes. Instead the server does everything that
    # could repeat it: a whole run whose command is refused for want of a sandbox, then a request.
    # Both end after the startup notice's own task would have sent a duplicate, and a notice sent on
    # the refusal travels before the run's end on the same stream.
    started = await editor.run("run a command")
    finish = await editor.finished(started["generation"])
    assert finish["stopReason"] == "final"
    refused = [e for e in editor.events if e["event"]["type"] == "tool_use"]
    assert len(refused) == 1 and "cannot be sandboxed" in refused[0]["event"]["part"]["state"]["output"], refused
    await editor.request("agent/status", {"sessionID": started["sessionID"]})
    shown = [m.message for m in editor.client.messages if "NOT sandboxed" in m.message]
    assert len(shown) == 1 and "bubblewrap (bwrap) is not installed" in shown[0]
