"""watchfiles: outside changes make earlier reads stale and a standing check `not_run`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import PY, Editor, StartEditor, eventually
from tests.helpers import call, reply, verify_config


def record(editor: Editor, method: str) -> list[dict[str, Any]]:
    """Every `method` notification the server sends from now on, as plain dicts, in order."""
    seen: list[dict[str, Any]] = []

    @editor.client.feature(method)  # type: ignore[untyped-decorator]
    def on_notification(ls: Any, params: Any) -> None:
        seen.append(params if isinstance(params, dict) else vars(params))

    return seen


PASS = 'print("Success: no issues found in 1 source file")\n'


def make_workspace(root: Path) -> None:
    (root / "data.txt").write_text("1\n", encoding="utf-8")
    (root / "check.py").write_text(PASS, encoding="utf-8")
    verify_config(root, [PY, "check.py"], kind="typecheck", parser="mypy")


async def external_write_during_step_2(editor: Editor, root: Path) -> None:
    await editor.wait_for_event(lambda e: e["type"] == "step_start" and e["step"] == 2)
    (root / "data.txt").write_text("2\n", encoding="utf-8")


async def status(editor: Editor, session_id: str) -> str:
    answer = await editor.request("agent/status", {"sessionID": session_id})
    return str(answer["verification"])


async def test_external_write_between_read_and_verify_makes_verified_not_run(workspace: Path,
                                                                            start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("read_file", path="data.txt")),
                                            reply(call("verify_project"), delay_ms=1500), reply(text="done")])
    started = await editor.run("check the data")
    await external_write_during_step_2(editor, workspace)
    finish = await editor.finished(started["generation"])

    assert finish["verification"] == "not_run"
    page = await editor.request("agent/session", {"sessionID": started["sessionID"]})
    notes = [p["text"] for m in page["messages"] for p in m["parts"] if p["type"] == "text" and p.get("synthetic")]
    assert any("Changed outside the agent: data.txt" in n for n in notes)


async def test_verifying_again_after_the_external_write_is_verified(workspace: Path,
                                                                    start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("read_file", path="data.txt")),
                                            reply(call("verify_project"), delay_ms=1500),
                                            reply(call("verify_project")), reply(text="done")])
    started = await editor.run("check the data")
    await external_write_during_step_2(editor, workspace)
    finish = await editor.finished(started["generation"])
    assert finish["verification"] == "verified"


async def test_outside_write_after_an_idle_verified_run_turns_it_not_run_but_ignored_files_do_not(
        workspace: Path, start_editor: StartEditor) -> None:
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("verify_project")), reply(text="done")])
    started = await editor.run("verify")
    assert (await editor.finished(started["generation"]))["verification"] == "verified"

    for junk in ("__pycache__/check.cpython-311.pyc", "node_modules/pkg/index.js", ".git/index", "venv/lib/x.py"):
        (workspace / junk).parent.mkdir(parents=True, exist_ok=True)
        (workspace / junk).write_text("junk", encoding="utf-8")
    assert await status(editor, started["sessionID"]) == "verified"

    # The watcher reports changes in order: once the hand edit written after the junk has turned the
    # check not_run, any report of the junk would have come too, so the notes name data.txt alone.
    (workspace / "data.txt").write_text("changed by hand\n", encoding="utf-8")

    async def not_run() -> bool:
        return await status(editor, started["sessionID"]) == "not_run"

    await eventually(not_run, what="verification not_run after the hand edit")
    notes = await editor.outside_change_notes(started["sessionID"])
    assert {path for paths in notes for path in paths} == {"data.txt"}, notes


async def test_a_hand_edit_after_an_idle_verified_run_is_announced_with_who_changed_what(
        workspace: Path, start_editor: StartEditor) -> None:
    """The run's run_finish said verified; a later hand edit (or a revert in the editor) makes the
    check stale, and the editor is told, so its footer stops saying verified."""
    make_workspace(workspace)
    editor = await start_editor(workspace, [reply(call("verify_project")), reply(text="done")])
    changes = record(editor, "agent/verificationChanged")
    started = await editor.run("verify")
    assert (await editor.finished(started["generation"]))["verification"] == "verified"
    assert changes == []

    (workspace / "data.txt").write_text("reverted by hand\n", encoding="utf-8")

    async def announced() -> bool:
        return bool(changes)

    await eventually(announced, what="agent/verificationChanged after the hand edit")
    change = changes[0]
    assert change["sessionID"] == started["sessionID"]
    assert change["verification"] == "not_run"
    assert change["invalidatedBy"]["by"] == "outside_process"
    assert change["invalidatedBy"]["paths"] == ["data.txt"]
    assert "data.txt" in change["verificationReason"]
    assert await status(editor, started["sessionID"]) == "not_run"
