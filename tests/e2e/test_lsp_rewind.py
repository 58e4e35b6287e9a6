"""agent/checkpoints and agent/rewind over stdio with the real server: an open buffer is restored
through a versioned WorkspaceEdit (the user can undo it), closed files on disk; the conversation forks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Editor, StartEditor
from tests.e2e.test_lsp_run import CALC, make_calc_workspace
from tests.helpers import call, reply

NOTES = "first note\n"
SCRIPT = [
    reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
    reply(call("apply_patch", path="notes.txt", old_text="first note\n", new_text="second note\n")),
    reply(call("write_file", path="made.txt", content="made by the agent\n")),
    reply(text="done"),
]


async def messages(editor: Editor, session_id: str) -> list[dict[str, Any]]:
    page = await editor.request("agent/session", {"sessionID": session_id})
    assert page.get("next") is None
    return list(page["messages"])


async def ran(workspace: Path, start_editor: StartEditor) -> tuple[Editor, str, list[dict[str, Any]]]:
    make_calc_workspace(workspace)
    (workspace / "notes.txt").write_text(NOTES)
    editor = await start_editor(workspace, SCRIPT)
    editor.open("calc.py")  # open: the agent's edit goes to the buffer; notes.txt is closed: to disk
    started = await editor.run("change things")
    await editor.finished(started["generation"])
    assert editor.text("calc.py") != CALC and (workspace / "notes.txt").read_text() == "second note\n"
    return editor, started["sessionID"], await messages(editor, started["sessionID"])


async def test_rewind_restores_open_buffers_through_a_versioned_edit_and_closed_files_on_disk(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, history = await ran(workspace, start_editor)
    listed = await editor.request("agent/checkpoints", {"sessionID": session_id})
    assert [c["tool"] for c in listed["checkpoints"]][:1] == ["apply_patch"]
    assert any("notes.txt" in c["files"] for c in listed["checkpoints"])

    prompt = history[0]["id"]
    preview = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": prompt,
                                                    "restore": "code", "dryRun": True})
    assert preview["status"] == "dry_run" and "-second note\n+first note\n" in preview["diff"]
    assert (workspace / "notes.txt").read_text() == "second note\n" and (workspace / "made.txt").exists()

    applied_before = len(editor.applied)
    done = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": prompt, "restore": "code"})
    assert done["status"] == "done" and done["inEditor"] == ["calc.py"]
    assert sorted(done["restored"]) == ["made.txt", "notes.txt"]
    assert editor.text("calc.py") == CALC  # the buffer, through the editor
    assert (workspace / "notes.txt").read_text() == NOTES and not (workspace / "made.txt").exists()
    (edit,) = editor.applied[applied_before:]
    (change,) = edit["edit"]["documentChanges"]
    assert change["textDocument"]["uri"].endswith("/calc.py") and change["textDocument"]["version"] is not None

    undone = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": done["undo"],
                                                   "restore": "code"})
    assert undone["status"] == "done" and (workspace / "notes.txt").read_text() == "second note\n"
    assert (workspace / "made.txt").read_text() == "made by the agent\n"


async def test_rewind_the_conversation_forks_the_session_before_the_message(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, history = await ran(workspace, start_editor)
    second_step = [m for m in history if m["role"] == "assistant"][1]["id"]
    forked = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": second_step,
                                                   "restore": "both"})
    fork = forked["sessionID"]
    assert fork and fork != session_id
    prefix = history[:[m["id"] for m in history].index(second_step)]
    copied = await messages(editor, fork)
    assert [(m["role"], [p["type"] for p in m["parts"]]) for m in copied[:len(prefix)]] == \
        [(m["role"], [p["type"] for p in m["parts"]]) for m in prefix]
    assert (workspace / "notes.txt").read_text() == NOTES and editor.text("calc.py") != CALC  # step 1 kept
    assert len(await messages(editor, session_id)) == len(history)  # the original is untouched


@pytest.mark.parametrize("params,code,kind", [
    ({"sessionID": "ses_nope", "toMessageID": "msg_x", "restore": "code"}, -32004, "unknown_session"),
    ({"toMessageID": "msg_nope", "restore": "code"}, -32004, "unknown_message"),
    ({"toMessageID": "ckpt-999", "restore": "code"}, -32004, "unknown_message"),
    ({"toMessageID": "msg_x", "restore": "sideways"}, -32602, "invalid_params"),
])
async def test_rewind_refusals_are_classified(workspace: Path, start_editor: StartEditor,
                                              params: dict[str, Any], code: int, kind: str) -> None:
    editor, session_id, _ = await ran(workspace, start_editor)
    with pytest.raises(JsonRpcException) as caught:
        await editor.request("agent/rewind", {"sessionID": session_id, **params})
    assert (caught.value.code, caught.value.data["kind"]) == (code, kind)
    assert (workspace / "notes.txt").read_text() == "second note\n"  # nothing changed


async def test_the_dry_run_diff_of_an_open_file_starts_from_its_unsaved_buffer(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, history = await ran(workspace, start_editor)
    editor.type("calc.py", 0, 0, "# typed, not saved\n")  # the buffer now differs from the disk
    on_disk = (workspace / "calc.py").read_text()
    preview = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": history[0]["id"],
                                                    "restore": "code", "dryRun": True})
    assert "--- a/calc.py\n" in preview["diff"]  # the agent's edit is unsaved: only the buffer differs
    calc = preview["diff"].split("--- a/calc.py\n", 1)[1].split("--- a/", 1)[0]
    assert "-# typed, not saved\n" in calc and "-    return a + b\n+    return a - b\n" in calc
    assert (workspace / "calc.py").read_text() == on_disk  # a dry run changes nothing
    done = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": history[0]["id"],
                                                 "restore": "code"})
    assert done["inEditor"] == ["calc.py"] and editor.text("calc.py") == CALC  # what the preview showed


async def test_the_run_answer_names_the_prompt_message_so_a_client_can_rewind_to_it_at_once(
        workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    (workspace / "notes.txt").write_text(NOTES)
    editor = await start_editor(workspace, SCRIPT)
    started = await editor.run("change things")
    assert started["messageID"].startswith("msg")
    await editor.finished(started["generation"])
    history = await messages(editor, started["sessionID"])
    assert history[0]["role"] == "user" and history[0]["id"] == started["messageID"]
    done = await editor.request("agent/rewind", {"sessionID": started["sessionID"],
                                                 "toMessageID": started["messageID"], "restore": "code"})
    assert done["status"] == "done" and (workspace / "notes.txt").read_text() == NOTES
