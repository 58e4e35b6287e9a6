"""The editor's Plan and Ask modes, over stdio against the real server: the server enforces them, whatever
the model asks. Ask refuses every edit and every command; Plan lets commands run only in the read-only
sandbox (a write fails there) and never asks for an approval that could lift it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import Editor, StartEditor, start_editor, workspace
from tests.helpers import call, reply
from tests.security.conftest import needs_bwrap

__all__ = ["start_editor", "workspace"]  # fixtures, imported to be found


def _tool_states(editor: Editor, generation: str) -> list[dict[str, Any]]:
    return [e["event"]["part"]["state"] for e in editor.events
            if e["generation"] == generation and e["event"]["type"] == "tool_use"
            and e["event"]["part"]["state"].get("status") in ("completed", "error")]


async def _run(editor: Editor, prompt: str) -> list[dict[str, Any]]:
    started = await editor.run(prompt)
    assert (await editor.finished(started["generation"]))["stopReason"] == "final"
    return _tool_states(editor, started["generation"])


async def test_ask_mode_refuses_an_edit_and_a_command_and_the_session_goes_on(workspace: Path,
                                                                             start_editor: StartEditor) -> None:
    asked: list[Any] = []
    editor = await start_editor(workspace, [
        reply(call("write_file", path="planted.txt", content="canary")),
        reply(call("run_command", command="python3 -c \"open('ran.txt', 'w')\"")),
        reply(text="I can only describe the change."),
    ])
    editor.client.feature("agent/requestApproval")(lambda ls, params: asked.append(params) or {"decision": "allow"})
    state = await editor.request("agent/mode", {"mode": "ask"})
    assert state["mode"] == "ask" and [m["id"] for m in state["modes"]] == ["agent", "plan", "ask"]
    write, command = await _run(editor, "add planted.txt")
    assert write["errorKind"] == "denied" and "Ask mode" in write["output"]
    assert command["errorKind"] == "denied" and "Ask mode: no command runs" in command["output"]
    assert not (workspace / "planted.txt").exists() and not (workspace / "ran.txt").exists()
    assert asked == []  # refused outright: no approval prompt that a click could turn into a write
    assert (await editor.request("agent/mode", {}))["mode"] == "ask"  # it stays until switched


@needs_bwrap
async def test_plan_mode_runs_read_only_commands_and_a_write_fails(workspace: Path,
                                                                  start_editor: StartEditor) -> None:
    (workspace / "notes.txt").write_text("hello\n", encoding="utf-8")
    editor = await start_editor(workspace, [
        reply(call("run_command", command="cat notes.txt")),
        reply(call("run_command", command="python3 -c \"open('planted.txt', 'w').write('canary')\"")),
        reply(call("write_file", path="planted.txt", content="canary")),
        reply(text="## Plan\n1. add planted.txt"),
    ])
    await editor.request("agent/mode", {"mode": "plan"})
    read, write_command, write = await _run(editor, "plan the change")
    assert read["status"] == "completed" and "hello" in read["output"]
    assert "Read-only file system" in write_command["output"]
    assert write["errorKind"] == "denied" and "Plan mode" in write["output"]
    assert not (workspace / "planted.txt").exists()


async def test_agent_mode_again_lets_the_agent_edit(workspace: Path, start_editor: StartEditor) -> None:
    editor = await start_editor(workspace, [reply(call("write_file", path="made.txt", content="x")),
                                            reply(text="done")], repeat_last=True)
    await editor.request("agent/mode", {"mode": "plan"})
    await editor.request("agent/mode", {"mode": "agent"})
    (write,) = await _run(editor, "make it")
    assert write["status"] == "completed" and (workspace / "made.txt").read_text(encoding="utf-8") == "x"
