"""The editor's own save of the agent's edit is the agent's write, whatever the
auto-save setting: the real server, a client that applies the edit and then saves the buffer itself
(disk write + didSave), at the moments an auto-saving editor would."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.conftest import PY, TIMEOUT, Editor, StartEditor, _path, eventually
from tests.helpers import call, reply, verify_config, wait_for

CHECK = "import pathlib, sys\nsys.exit(0 if pathlib.Path('data.txt').read_text() == '2\\n' else 1)\n"

#: mode → when the editor saves by itself: 0.0 at once, before it even answers applyEdit (focus moves
#: right after the edit); 1.0 one second after the edit, before the verify step (which starts 1.5 s
#: after it); CHECKED once the check has stood. A save timed in seconds for that last moment lands
#: inside the check when the machine is loaded, so it waits for the check's result instead. A second
#: save of unchanged content (afterDelay, onFocusChange) stands for the watcher reporting the first one
#: only after the check passed, which under load it does: by then no save request of the agent's
#: announced it, so it must be known as own from the edit on.
CHECKED = "checked"
MODES: dict[str, list[float | str]] = {"off": [], "afterDelay": [1.0, CHECKED], "onFocusChange": [0.0, CHECKED],
                                       "onWindowChange": [CHECKED]}


def save_buffer(editor: Editor, uri: str) -> None:
    """What an editor's save is: the buffer's bytes on disk, then didSave."""
    Path(_path(uri)).write_bytes(editor.buffers[uri].text.encode("utf-8"))
    editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


def auto_save(editor: Editor, moments: list[float | str]) -> list[str]:
    """Returns the uris saved so far, one entry per save, for a test to wait until the last has run."""
    apply, on_event = editor.on_apply_edit, editor.on_event
    pending: list[asyncio.TimerHandle] = []
    after_check: list[str] = []
    saved: list[str] = []

    def save(uri: str) -> None:
        save_buffer(editor, uri)
        saved.append(uri)

    def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        answer = apply(params)
        uris = [c.text_document.uri for c in params.edit.document_changes or []
                if isinstance(c, types.TextDocumentEdit)]
        for uri in uris:
            for moment in moments:
                if moment == CHECKED:
                    after_check.append(uri)
                elif moment == 0.0:
                    save(uri)
                else:
                    pending.append(asyncio.get_running_loop().call_later(float(moment), save, uri))
        return answer

    def on_event_then_save(params: Any) -> None:
        on_event(params)
        event = params["event"]
        if (event["type"] == "tool_use" and event["part"]["tool"] == "verify_project"
                and event["part"]["state"]["status"] != "running"):
            while after_check:
                save(after_check.pop(0))

    editor.on_apply_edit = on_apply_edit  # type: ignore[method-assign]
    editor.on_event = on_event_then_save  # type: ignore[method-assign]
    return saved


async def run_edit_and_verify(workspace: Path, start_editor: StartEditor, mode: str,
                              typed: str | None = None) -> tuple[Editor, dict[str, Any], str, list[str]]:
    (workspace / "data.txt").write_text("1\n", encoding="utf-8")
    (workspace / "check.py").write_text(CHECK, encoding="utf-8")
    verify_config(workspace, [PY, "check.py"])
    editor = await start_editor(workspace, [
        reply(call("apply_patch", path="data.txt", old_text="1", new_text="2")),
        reply(call("verify_project"), delay_ms=1500), reply(text="done", delay_ms=1500)])
    editor.open("data.txt")
    saved = auto_save(editor, MODES[mode])
    if typed is not None:
        editor.keystroke_on_apply = ("data.txt", typed)
    started = await editor.run("set data to 2")
    finish = await editor.finished(started["generation"])
    return editor, finish, started["sessionID"], saved


@pytest.mark.parametrize("mode", list(MODES))
async def test_a_correct_run_ends_verified_whatever_the_auto_save_mode(
        workspace: Path, start_editor: StartEditor, mode: str) -> None:
    editor, finish, session_id, saved = await run_edit_and_verify(workspace, start_editor, mode)
    assert (workspace / "data.txt").read_text() == "2\n"
    assert (finish["stopReason"], finish["verification"]) == ("final", "verified"), finish.get("verificationReason")
    # Every save the editor makes, some after the run (onWindowChange), has been judged by the watcher
    # (a marker written after them has been): none of them counts as a change outside the agent.
    await wait_for(lambda: len(saved) == len(MODES[mode]), timeout=TIMEOUT)
    status = await editor.request("agent/status", {"sessionID": session_id})
    assert status["verification"] == "verified"
    assert await editor.outside_changes_after_a_marker(session_id) == []


async def test_the_users_own_typing_saved_by_auto_save_still_counts_as_outside(
        workspace: Path, start_editor: StartEditor) -> None:
    """The control: content the agent did not produce is not its write, even when auto-saved."""
    editor, finish, session_id, _ = await run_edit_and_verify(workspace, start_editor, "off")
    assert finish["verification"] == "verified"
    editor.type("data.txt", 0, 0, "9")
    save_buffer(editor, editor.uri("data.txt"))

    async def not_run() -> bool:
        status = await editor.request("agent/status", {"sessionID": session_id})
        return bool(status["verification"] == "not_run")

    await eventually(not_run, what="verification not_run after the user's save")
