"""Rewind over the real server when the editor saves: the agent's own edit, saved from its buffer, is
the agent's change (no conflict), text the user typed before saving is not; and a preview after an
undone rewind shows the same changes the rewind then makes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.e2e.conftest import Editor, StartEditor
from tests.e2e.test_lsp_run import CALC, make_calc_workspace
from tests.helpers import call, reply

FIXED = CALC.replace("a - b", "a + b")
MAKE = "python3 -c \"open('made.txt', 'w').write('made by a command\\n')\""
SCRIPT = [
    reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
    reply(call("run_command", command=MAKE)),
    reply(text="done"),
]


def save(editor: Editor, rel: str) -> None:
    """What an editor's save is: the buffer's bytes on disk, then didSave."""
    (editor.root / rel).write_bytes(editor.text(rel).encode("utf-8"))
    editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=editor.uri(rel))))


def tree(root: Path) -> dict[str, str]:
    """Every workspace file (the server's own state aside) by its content hash."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".lsp-agent" not in p.parts
            and "__pycache__" not in p.parts}


async def one_run(workspace: Path, start_editor: StartEditor) -> tuple[Editor, str, list[dict[str, Any]]]:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, SCRIPT)
    editor.open("calc.py")  # the agent's edit lands in this buffer; the disk keeps the old text
    started = await editor.run("fix add and make a file")
    await editor.finished(started["generation"])
    assert editor.text("calc.py") == FIXED and (workspace / "calc.py").read_text() == CALC
    assert (workspace / "made.txt").exists()
    page = await editor.request("agent/session", {"sessionID": started["sessionID"]})
    return editor, started["sessionID"], list(page["messages"])


def rewind(session_id: str, to: str, **more: Any) -> dict[str, Any]:
    return {"sessionID": session_id, "toMessageID": to, "restore": "code", **more}


async def test_saving_the_agents_own_edit_is_not_a_conflict(workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, history = await one_run(workspace, start_editor)
    save(editor, "calc.py")
    preview = await editor.request("agent/rewind", rewind(session_id, history[0]["id"], dryRun=True))
    assert preview["conflicts"] == [] and "-    return a + b\n+    return a - b\n" in preview["diff"]
    done = await editor.request("agent/rewind", rewind(session_id, history[0]["id"]))
    assert done["status"] == "done" and done["conflicts"] == [] and done["kept"] == []
    assert done["inEditor"] == ["calc.py"] and editor.text("calc.py") == CALC
    assert not (workspace / "made.txt").exists()
    listed = await editor.request("agent/checkpoints", {"sessionID": session_id})
    assert all(c["outside"] == [] for c in listed["checkpoints"])


async def test_a_save_of_what_the_user_typed_after_the_agents_edit_is_a_conflict(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, history = await one_run(workspace, start_editor)
    editor.type("calc.py", 0, 0, "# mine\n")
    save(editor, "calc.py")
    preview = await editor.request("agent/rewind", rewind(session_id, history[0]["id"], dryRun=True))
    assert preview["conflicts"] == ["calc.py"]
    done = await editor.request("agent/rewind", rewind(session_id, history[0]["id"]))
    assert done["status"] == "conflicts" and done["kept"] == ["calc.py"]
    assert editor.text("calc.py") == "# mine\n" + FIXED and (workspace / "calc.py").read_text() == "# mine\n" + FIXED
    assert not (workspace / "made.txt").exists()  # the rest is restored


async def test_a_preview_after_an_undone_rewind_shows_what_the_rewind_does(
        workspace: Path, start_editor: StartEditor) -> None:
    """As VS Code does it: the user saves the agent's edit, restores the code to the prompt, saves the
    restored buffer, takes it back with Undo (saved again), then restores to the command's step."""
    editor, session_id, history = await one_run(workspace, start_editor)
    command_step = [m["id"] for m in history if m["role"] == "assistant"][1]
    save(editor, "calc.py")
    before_the_command = {p: h for p, h in tree(workspace).items() if p != "made.txt"}
    untouched = await editor.request("agent/rewind", rewind(session_id, command_step, dryRun=True))
    assert untouched["diff"] == "--- a/made.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-made by a command\n"

    done = await editor.request("agent/rewind", rewind(session_id, history[0]["id"]))
    assert done["conflicts"] == [] and editor.text("calc.py") == CALC and not (workspace / "made.txt").exists()
    save(editor, "calc.py")  # the client saves the buffers the rewind restored
    undone = await editor.request("agent/rewind", rewind(session_id, done["undo"], confirm=True))
    assert undone["conflicts"] == [] and undone["inEditor"] == ["calc.py"]  # the restore's save is its own
    assert editor.text("calc.py") == FIXED and (workspace / "made.txt").exists()
    save(editor, "calc.py")

    preview = await editor.request("agent/rewind", rewind(session_id, command_step, dryRun=True))
    assert preview["diff"] == untouched["diff"] and preview["conflicts"] == []
    # a tool row names the message its result is stored in: before that step's effects too
    after_step = history[[m["id"] for m in history].index(command_step) + 1:]
    results = next(m["id"] for m in after_step if m["role"] == "tool")
    assert (await editor.request("agent/rewind", rewind(session_id, results, dryRun=True)))["diff"] == preview["diff"]
    step = await editor.request("agent/rewind", rewind(session_id, command_step))
    assert step["status"] == "done" and step["restored"] == ["made.txt"] and step["inEditor"] == []
    assert editor.text("calc.py") == FIXED and tree(workspace) == before_the_command


async def test_undo_puts_back_the_agents_unsaved_edit_in_its_buffer(workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, history = await one_run(workspace, start_editor)  # nothing saved
    done = await editor.request("agent/rewind", rewind(session_id, history[0]["id"]))
    assert done["inEditor"] == ["calc.py"] and editor.text("calc.py") == CALC
    undone = await editor.request("agent/rewind", rewind(session_id, done["undo"]))
    assert undone["conflicts"] == [] and undone["inEditor"] == ["calc.py"]
    assert editor.text("calc.py") == FIXED and (workspace / "made.txt").read_text() == "made by a command\n"


async def test_rewinding_past_a_later_step_keeps_the_earlier_unsaved_edit(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, history = await one_run(workspace, start_editor)  # nothing saved
    command_step = [m["id"] for m in history if m["role"] == "assistant"][1]
    preview = await editor.request("agent/rewind", rewind(session_id, command_step, dryRun=True))
    assert preview["diff"] == "--- a/made.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-made by a command\n"
    applied = len(editor.applied)
    step = await editor.request("agent/rewind", rewind(session_id, command_step))
    assert step["restored"] == ["made.txt"] and step["inEditor"] == [] and len(editor.applied) == applied
    assert editor.text("calc.py") == FIXED and not (workspace / "made.txt").exists()
