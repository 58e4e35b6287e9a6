"""Edits as WorkspaceEdits: conflicts, refusals, unsaved buffers, files the editor does not have open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import Editor, StartEditor, full_capabilities
from tests.e2e.test_lsp_run import CALC, make_calc_workspace
from tests.helpers import call, reply

EDIT = reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n"))


def tool_uses(editor: Editor, generation: str, tool: str) -> list[dict[str, Any]]:
    return [e["event"]["part"] for e in editor.events if e["generation"] == generation
            and e["event"]["type"] == "tool_use" and e["event"]["part"]["tool"] == tool]


async def test_buffer_changed_while_the_edit_was_in_flight_is_refused_and_model_told_to_reread(
        workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("read_file", path="calc.py")), EDIT, reply(text="stop")])
    editor.open("calc.py")
    editor.keystroke_on_apply = ("calc.py", "# typed by the user\n")  # the user types as the edit arrives
    started = await editor.run("fix add")
    await editor.finished(started["generation"])

    (patch,) = tool_uses(editor, started["generation"], "apply_patch")
    output = patch["state"]["output"]
    assert patch["state"]["status"] == "error" and "version_mismatch" in output and "Re-read calc.py" in output
    assert editor.text("calc.py") == "# typed by the user\n" + CALC  # the user's text is kept, edit not applied
    assert (workspace / "calc.py").read_text(encoding="utf-8") == CALC


async def test_a_second_edit_without_reread_after_a_conflict_is_refused(workspace: Path,
                                                                        start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("read_file", path="calc.py")), EDIT, EDIT,
                                            reply(call("read_file", path="calc.py")), EDIT, reply(text="done")])
    editor.open("calc.py")
    editor.keystroke_on_apply = ("calc.py", "# typed\n")
    started = await editor.run("fix add")
    await editor.finished(started["generation"])

    first, second, third = tool_uses(editor, started["generation"], "apply_patch")
    assert "version_mismatch" in first["state"]["output"]
    assert second["state"]["status"] == "error" and "must be read again" in second["state"]["output"]
    assert third["state"]["status"] == "completed"
    assert editor.text("calc.py") == "# typed\ndef add(a, b):\n    return a + b\n"


async def test_editor_refusing_the_edit_fails_the_tool_with_its_reason(workspace: Path,
                                                                       start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [EDIT, reply(text="ok")])
    editor.open("calc.py")
    editor.refuse = "the user said no"
    started = await editor.run("fix add")
    await editor.finished(started["generation"])

    (patch,) = tool_uses(editor, started["generation"], "apply_patch")
    assert "refused" in patch["state"]["output"] and "the user said no" in patch["state"]["output"]
    assert editor.text("calc.py") == CALC and (workspace / "calc.py").read_text(encoding="utf-8") == CALC


async def test_editor_without_save_documents_makes_verify_report_unsaved_edits(workspace: Path,
                                                                               start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [EDIT, reply(call("verify_project")), reply(text="ok")])
    editor.open("calc.py")
    editor.save_mode = "unsupported"
    started = await editor.run("fix add")
    finish = await editor.finished(started["generation"])

    (verify,) = tool_uses(editor, started["generation"], "verify_project")
    envelope = verify["state"]["metadata"]["envelope"]
    assert envelope["status"] == "error" and envelope["checks"] == []
    assert envelope["error"].startswith("unsaved edits: calc.py") and "agent/saveDocuments" in envelope["error"]
    assert finish["verification"] == "not_run"
    assert (workspace / "calc.py").read_text(encoding="utf-8") == CALC  # nothing stale was tested


async def test_a_failed_save_is_reported_per_document(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [EDIT, reply(call("verify_project")), reply(text="ok")])
    editor.open("calc.py")
    editor.save_mode = "fail"
    started = await editor.run("fix add")
    await editor.finished(started["generation"])

    (verify,) = tool_uses(editor, started["generation"], "verify_project")
    assert verify["state"]["metadata"]["envelope"]["error"] == "unsaved edits: calc.py (disk full)"


async def test_files_not_open_in_the_editor_are_written_to_disk(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    patch = ("*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n"
             "*** Add File: notes.txt\n+added by the agent\n*** End Patch\n")
    editor = await start_editor(workspace, [reply(call("apply_patch", patch=patch)), reply(call("verify_project")),
                                            reply(text="done")])
    started = await editor.run("fix add")
    finish = await editor.finished(started["generation"])

    assert editor.applied == [] and editor.save_requests == []
    assert (workspace / "calc.py").read_text(encoding="utf-8") == CALC.replace("a - b", "a + b")
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "added by the agent\n"
    assert finish["verification"] == "verified"
    status = await editor.request("agent/status", {"sessionID": started["sessionID"]})
    assert status["verification"] == "verified"
    # The watcher saw the server's own writes: they must not count as outside changes.
    assert await editor.outside_changes_after_a_marker(started["sessionID"]) == []


async def test_open_and_closed_files_in_one_patch_go_to_editor_and_disk(workspace: Path,
                                                                        start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    (workspace / "other.py").write_text("x = 1\n", encoding="utf-8")
    patch = ("*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n"
             "*** Update File: other.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n")
    editor = await start_editor(workspace, [reply(call("apply_patch", patch=patch)), reply(text="done")])
    uri = editor.open("calc.py")
    started = await editor.run("edit both")
    await editor.finished(started["generation"])

    (edit,) = editor.applied
    assert [c["textDocument"]["uri"] for c in edit["edit"]["documentChanges"]] == [uri]
    assert (workspace / "other.py").read_text(encoding="utf-8") == "x = 2\n"
    assert (workspace / "calc.py").read_text(encoding="utf-8") == CALC  # unsaved until verify asks


async def test_refused_editor_half_restores_the_disk_half(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    (workspace / "other.py").write_text("x = 1\n", encoding="utf-8")
    patch = ("*** Begin Patch\n*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n"
             "*** Update File: other.py\n@@\n-x = 1\n+x = 2\n*** Add File: new.py\n+y = 3\n*** End Patch\n")
    editor = await start_editor(workspace, [reply(call("apply_patch", patch=patch)), reply(text="done")])
    editor.open("calc.py")
    editor.refuse = "not now"
    started = await editor.run("edit both")
    await editor.finished(started["generation"])

    (patch_use,) = tool_uses(editor, started["generation"], "apply_patch")
    assert "not now" in patch_use["state"]["output"] and "restored" in patch_use["state"]["output"]
    assert (workspace / "other.py").read_text(encoding="utf-8") == "x = 1\n"
    assert not (workspace / "new.py").exists()


async def test_moving_an_open_file_uses_the_editors_rename(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    patch = ("*** Begin Patch\n*** Update File: calc.py\n*** Move to: calc2.py\n@@\n-    return a - b\n"
             "+    return a + b\n*** End Patch\n")
    editor = await start_editor(workspace, [reply(call("apply_patch", patch=patch)), reply(text="done")])
    old = editor.open("calc.py")
    started = await editor.run("move it")
    await editor.finished(started["generation"])

    rename, update = editor.applied[0]["edit"]["documentChanges"]
    assert rename["kind"] == "rename" and rename["oldUri"] == old and rename["newUri"].endswith("/calc2.py")
    assert update["textDocument"] == {"uri": rename["newUri"], "version": None}
    assert not (workspace / "calc.py").exists()
    assert editor.text("calc2.py") == CALC.replace("a - b", "a + b")


async def test_moving_an_open_file_without_resource_operations_is_refused(workspace: Path,
                                                                          start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    patch = "*** Begin Patch\n*** Update File: calc.py\n*** Move to: calc2.py\n*** End Patch\n"
    editor = await start_editor(workspace, [reply(call("apply_patch", patch=patch)), reply(text="done")],
                                capabilities=full_capabilities(resource_ops=False))
    editor.open("calc.py")
    started = await editor.run("move it")
    await editor.finished(started["generation"])

    (use,) = tool_uses(editor, started["generation"], "apply_patch")
    assert "cannot rename files" in use["state"]["output"] and editor.applied == []
    assert (workspace / "calc.py").exists() and not (workspace / "calc2.py").exists()


async def test_client_without_apply_edit_gets_the_disk_applier(workspace: Path, start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    editor = await start_editor(workspace, [EDIT, reply(call("verify_project")), reply(text="done")],
                                capabilities=full_capabilities(apply_edit=False))
    editor.open("calc.py")
    started = await editor.run("fix add")
    finish = await editor.finished(started["generation"])

    assert editor.applied == [] and editor.save_requests == []
    assert (workspace / "calc.py").read_text(encoding="utf-8") == CALC.replace("a - b", "a + b")
    assert finish["verification"] == "verified"


async def test_the_servers_own_disk_writes_are_not_taken_for_outside_changes(workspace: Path,
                                                                             start_editor: StartEditor) -> None:
    make_calc_workspace(workspace)
    second = reply(call("apply_patch", path="calc.py", old_text="def add(a, b):\n", new_text="def add(a, b):  # ok\n"),
                   delay_ms=1000)  # time for the watcher to see the first write
    editor = await start_editor(workspace, [reply(call("read_file", path="calc.py")), EDIT, second,
                                            reply(text="done")])
    started = await editor.run("two edits")
    await editor.finished(started["generation"])

    first, again = tool_uses(editor, started["generation"], "apply_patch")
    assert first["state"]["status"] == "completed"
    assert again["state"]["status"] == "completed", again["state"]["output"]  # no "read it again" demanded
    page = await editor.request("agent/session", {"sessionID": started["sessionID"]})
    assert not any((p.get("metadata") or {}).get("external_change") for m in page["messages"] for p in m["parts"])
