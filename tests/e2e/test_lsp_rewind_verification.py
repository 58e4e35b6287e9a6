"""Verification after a rewind, through the real server: a check stands again only when the files
are put back to exactly the tree it passed on; the restore's own writes are not outside changes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Editor, StartEditor
from tests.e2e.test_lsp_run import CALC, make_calc_workspace
from tests.helpers import call, reply

FIXED = CALC.replace("a - b", "a + b")
SCRIPT = [
    # run 1: fix, check (passes)
    reply(call("apply_patch", path="calc.py", old_text="    return a - b\n", new_text="    return a + b\n")),
    reply(call("verify_project")),
    reply(text="fixed and verified"),
    # run 2: a read, more edits, no check
    reply(call("read_file", path="extra.txt")),
    reply(call("write_file", path="notes.txt", content="second run\n")),
    reply(call("apply_patch", path="calc.py", old_text="def add", new_text="def add_numbers")),
    reply(text="renamed"),
]


async def two_runs(workspace: Path, start_editor: StartEditor) -> tuple[Editor, str, list[str]]:
    """The session's user prompts, after a verified run and a second, unverified one."""
    make_calc_workspace(workspace)
    (workspace / "extra.txt").write_text("there from the start\n")
    editor = await start_editor(workspace, SCRIPT)
    first = await editor.run("fix add")
    assert (await editor.finished(first["generation"]))["verification"] == "verified"
    session_id = first["sessionID"]
    second = await editor.run("rename it", sessionID=session_id)
    assert (await editor.finished(second["generation"]))["verification"] == "not_run"
    page = await editor.request("agent/session", {"sessionID": session_id})
    prompts = [m["id"] for m in page["messages"] if m["role"] == "user" and not _synthetic(m)]
    assert len(prompts) == 2
    return editor, session_id, prompts


def _synthetic(message: dict[str, Any]) -> bool:
    return all(p.get("synthetic") for p in message["parts"])


async def status(editor: Editor, session_id: str) -> str:
    return str((await editor.request("agent/status", {"sessionID": session_id}))["verification"])


async def test_rewinding_the_code_to_a_tree_a_passing_check_saw_is_verified(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, prompts = await two_runs(workspace, start_editor)
    done = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": prompts[1],
                                                 "restore": "code"})
    assert done["status"] == "done" and sorted(done["restored"]) == ["calc.py", "notes.txt"]
    assert (workspace / "calc.py").read_text() == FIXED and not (workspace / "notes.txt").exists()
    assert await status(editor, session_id) == "verified"
    # The restore's own writes reach the watcher too: they must not count as changes outside the agent.
    assert await editor.outside_changes_after_a_marker(session_id) == []


async def test_rewinding_the_code_to_a_tree_no_check_saw_is_not_verified(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, prompts = await two_runs(workspace, start_editor)
    done = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": prompts[0],
                                                 "restore": "code"})
    assert done["status"] == "done" and (workspace / "calc.py").read_text() == CALC
    assert await status(editor, session_id) == "not_run"


async def test_a_file_changed_outside_since_the_last_checkpoint_keeps_it_unverified(
        workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, prompts = await two_runs(workspace, start_editor)
    (workspace / "extra.txt").write_text("changed by hand, after the last checkpoint\n")
    # the session read it, so the watcher notes the change in its history: wait for that note,
    # so the rewind comes after it (no checkpoint has seen the change)
    deadline = asyncio.get_running_loop().time() + 60
    while ["extra.txt"] not in await editor.outside_change_notes(session_id):
        assert asyncio.get_running_loop().time() < deadline, "the watcher never reported extra.txt"
        await asyncio.sleep(0.05)
    done = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": prompts[1],
                                                 "restore": "code"})
    assert done["status"] == "done" and "extra.txt" not in done["restored"]  # not the agent's: left alone
    assert await status(editor, session_id) == "not_run"


async def test_a_fork_keeps_its_check_only_over_the_tree_it_saw(workspace: Path, start_editor: StartEditor) -> None:
    editor, session_id, prompts = await two_runs(workspace, start_editor)
    both = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": prompts[1],
                                                 "restore": "both"})
    assert await status(editor, both["sessionID"]) == "verified"
    # The same fork, but a file differs from what the check saw: the check no longer stands.
    (workspace / "calc.py").write_text(FIXED + "# edited by hand\n")
    kept = await editor.request("agent/rewind", {"sessionID": session_id, "toMessageID": prompts[1],
                                                 "restore": "both"})
    assert kept["kept"] == ["calc.py"]
    assert await status(editor, kept["sessionID"]) == "not_run"
